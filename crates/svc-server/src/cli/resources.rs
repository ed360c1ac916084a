//! The resources `svc admin list|get|apply` know: every paged collection of the management API
//! (§3), by its path segment, with how it takes a resource set, its list's items key, what
//! `apply` matches on and how it writes. A unit test compares the table with the operation table
//! of `GET /api/openapi.json` both ways, so a new collection cannot be missed here.

use std::fmt::Write as _;

use super::Failure;

/// How an entry belongs to a resource set (§1.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// `X-Svc-ResourceSet` selects the set (rule 2).
    Header,
    /// No header: the body's `resourceSet`; lists cover every readable set (rule 5).
    Body,
    /// A global entity (rule 8).
    Global,
}

/// How `apply` writes an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writes {
    /// Read-only (events, audit entries, drafts).
    No,
    /// POST and PUT at the collection path (§1.5), `externalId` in the PUT body.
    Collection,
    /// POST at the collection path, PUT at `<path>/<id>` (users).
    ById,
}

/// The columns of a table of this resource's entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// externalId, name (users: email), type/provider when the entries have one, isActive, modifiedAt.
    Entity,
    Audit,
    AuthorizationEvent,
    WorkloadEvent,
}

#[derive(Debug)]
pub struct Resource {
    /// The path segment: `client-workloads`.
    pub name: &'static str,
    /// `v1`, `v2` or `alpha`.
    pub version: &'static str,
    /// The version a bare `name` means: the newest, unless it is not the one §3 describes first.
    pub preferred: bool,
    pub scope: Scope,
    /// The list wrapper's items key (§1.6).
    pub items: &'static str,
    /// What `apply` matches an item on when it has no `externalId`.
    pub key: &'static str,
    pub writes: Writes,
    pub shape: Shape,
}

impl Resource {
    pub fn path(&self) -> String {
        format!("/api/{}/{}", self.version, self.name)
    }

    /// `v1/credential-providers`, or the bare name for the preferred version.
    pub fn label(&self) -> String {
        if self.preferred {
            self.name.to_string()
        } else {
            format!("{}/{}", self.version, self.name)
        }
    }

    const fn matched_by(self, key: &'static str) -> Resource {
        Resource { key, ..self }
    }

    const fn shaped(self, shape: Shape) -> Resource {
        Resource { shape, ..self }
    }

    /// v2 access policies: their reads name the credential providers only (`GetPolicyDTO`), the
    /// mappings a body gives are read from `<id>/credential-mappings`.
    pub fn reads_mappings_apart(&self) -> bool {
        self.name == "access-policies" && self.version == "v2"
    }
}

const fn r(
    name: &'static str,
    version: &'static str,
    preferred: bool,
    scope: Scope,
    items: &'static str,
    writes: Writes,
) -> Resource {
    Resource {
        name,
        version,
        preferred,
        scope,
        items,
        key: "name",
        writes,
        shape: Shape::Entity,
    }
}

use Scope::{Body, Global, Header};
use Writes::{ById, Collection, No};

/// Every paged collection of the router, in the order of §3. Where §3 marks a version
/// deprecated (credential providers and access policies v1) or adds a v2 (integrations, access
/// conditions), the bare name is the v2 and `v1/<name>` the older view.
#[rustfmt::skip]
pub const RESOURCES: &[Resource] = &[
    r("trust-providers",         "v1",    true,  Header, "trustProviders",       Collection),
    r("client-workloads",        "v1",    true,  Header, "clientWorkloads",      Collection),
    r("server-workloads",        "v1",    true,  Header, "serverWorkloads",      Collection),
    r("credential-providers",    "v2",    true,  Header, "credentialProviders",  Collection),
    r("credential-providers",    "v1",    false, Header, "credentialProviders",  Collection),
    r("credential-integrations", "v1",    true,  Header, "entities",             Collection),
    r("access-policies",         "v2",    true,  Body,   "entities",             Collection),
    r("access-policies",         "v1",    false, Header, "accessPolicies",       Collection),
    r("access-conditions",       "v2",    true,  Header, "accessConditions",     Collection),
    r("access-conditions",       "v1",    false, Header, "accessConditions",     Collection),
    r("integrations",            "v2",    true,  Header, "integrations",         Collection),
    r("integrations",            "v1",    false, Header, "integrations",         Collection),
    r("discovery-integrations",  "v1",    true,  Body,   "integrations",         Collection),
    r("server-workload-drafts",  "alpha", true,  Body,   "serverWorkloadDrafts", No),
    r("content-security",        "v1",    true,  Body,   "entities",             Collection),
    r("resource-sets",           "v1",    true,  Global, "entities",             Collection),
    r("roles",                   "v1",    true,  Global, "roles",                Collection),
    r("routings",                "v1",    true,  Global, "entities",             Collection),
    r("users",                   "v1",    true,  Global, "users",                ById).matched_by("email"),
    r("sso-idps",                "v1",    true,  Global, "entities",             Collection),
    r("agent-controllers",       "v1",    true,  Global, "agentControllers",     Collection),
    r("log-streams",             "v1",    true,  Global, "logStreams",           Collection),
    r("audit-logs",              "v1",    true,  Header, "auditLogs",            No).shaped(Shape::Audit),
    r("authorization-events",    "v1",    true,  Header, "authorizationEvents",  No).shaped(Shape::AuthorizationEvent),
    r("workload-events",         "v1",    true,  Header, "workloadEvents",       No).shaped(Shape::WorkloadEvent),
];

/// The resource a command-line name means: `client-workloads`, `v1/credential-providers`
/// (also with a leading `/api/`). Unknown → exit 2 with every known name.
pub fn find(name: &str) -> Result<&'static Resource, Failure> {
    let n = name.trim().trim_start_matches('/');
    let n = n.strip_prefix("api/").unwrap_or(n).trim_end_matches('/');
    let found = match n.split_once('/') {
        Some((version, seg)) => RESOURCES.iter().find(|r| r.version == version && r.name == seg),
        None => RESOURCES.iter().find(|r| r.name == n && r.preferred),
    };
    found.ok_or_else(|| Failure::usage(format!("unknown resource {name:?}; known resources: {}", known())))
}

/// Every name `find` accepts, comma-separated.
pub fn known() -> String {
    let mut s = String::new();
    for (i, r) in RESOURCES.iter().enumerate() {
        let _ = write!(s, "{}{}", if i > 0 { ", " } else { "" }, r.label());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paged collections of the OpenAPI document: `(path, items key, takes the RS header,
    /// has POST)`.
    fn collections() -> Vec<(String, String, bool, bool)> {
        let doc = svc_server::http::openapi::document();
        let mut out = Vec::new();
        for (path, ops) in doc["paths"].as_object().unwrap() {
            let Some(get) = ops.get("get") else { continue };
            let params = get["parameters"].as_array().cloned().unwrap_or_default();
            let named = |n: &str| params.iter().any(|p| p["name"] == n);
            if path.contains('{') || !named("per-page") {
                continue;
            }
            // The wrapper's one array property holds the items.
            let wrapper = &get["responses"]["200"]["content"]["application/json"]["schema"];
            let items = wrapper["properties"]
                .as_object()
                .and_then(|p| p.iter().find(|(_, v)| v["type"] == "array").map(|(k, _)| k.clone()))
                .unwrap_or_default();
            out.push((
                path.clone(),
                items,
                named("X-Svc-ResourceSet"),
                ops.get("post").is_some(),
            ));
        }
        out
    }

    #[test]
    fn every_paged_collection_of_the_router_is_known_and_no_other() {
        let doc = collections();
        assert!(doc.len() > 20, "{doc:?}");
        for (path, items, header, post) in &doc {
            let r = RESOURCES
                .iter()
                .find(|r| &r.path() == path)
                .unwrap_or_else(|| panic!("{path} is not in cli::resources::RESOURCES"));
            assert_eq!(&r.items, items, "{path}: items key");
            assert_eq!(r.scope == Scope::Header, *header, "{path}: X-Svc-ResourceSet");
            assert_eq!(r.writes != Writes::No, *post, "{path}: POST");
        }
        for r in RESOURCES {
            assert!(
                doc.iter().any(|(p, ..)| *p == r.path()),
                "{} is not a paged collection of the OpenAPI document",
                r.path()
            );
        }
    }

    #[test]
    fn each_name_means_one_resource() {
        for r in RESOURCES {
            let found = find(&r.label()).unwrap();
            assert_eq!(found.path(), r.path());
            assert_eq!(find(&format!("{}/{}", r.version, r.name)).unwrap().path(), r.path());
        }
        assert_eq!(find("/api/v1/credential-providers/").unwrap().version, "v1");
        let e = find("workloads").unwrap_err();
        assert_eq!(e.code, 2);
        assert!(
            e.message.contains("client-workloads, server-workloads"),
            "{}",
            e.message
        );
    }
}

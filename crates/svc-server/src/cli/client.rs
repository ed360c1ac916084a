//! The management API client of `svc admin list|get|apply|explain`: the server's URL and a
//! token (flags, else `SVC_URL` / `SVC_TOKEN`), the resource set by id or name, one request at a
//! time, paging, and an error answer turned into its §1.8 message (exit 1). Its own HTTP client,
//! not `upstream.rs`'s: this one talks to our own API, follows no redirect either, and has no
//! 1 MiB cap (a page of 1,000 entries can be larger).

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;

use super::{Conn, Failure};

/// `SVC_PUBLIC_URL`'s default: where a server started with no configuration answers.
fn default_url() -> String {
    svc_server::config::KEYS
        .iter()
        .find(|(k, _)| *k == "SVC_PUBLIC_URL")
        .and_then(|(_, d)| *d)
        .unwrap_or("http://localhost:8080")
        .to_string()
}

/// The bearer token in what was given: a bare token (`Bearer ` allowed), or the login response
/// JSON `svc admin token` and `POST /api/v1/login` print (its `accessToken`).
fn access_token(given: &str) -> Result<String, Failure> {
    let t = given.trim();
    if t.starts_with('{') {
        let v: Value = serde_json::from_str(t)
            .map_err(|_| Failure::usage("--token / SVC_TOKEN: neither a token nor a login response JSON"))?;
        return v["accessToken"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| Failure::usage("--token / SVC_TOKEN: the JSON has no accessToken"));
    }
    let t = t.strip_prefix("Bearer ").unwrap_or(t).trim();
    if t.is_empty() || t.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(Failure::usage("--token / SVC_TOKEN: not a token"));
    }
    Ok(t.to_string())
}

/// A successful answer: its JSON body (`Null` when empty) and `Location`.
pub struct Answer {
    pub body: Value,
    pub location: Option<String>,
}

impl Answer {
    /// The `externalId` of what a create made: from the body, else the `Location` path's last
    /// segment (the 204 answer of client and server workloads, §1.5).
    pub fn created_id(&self) -> Option<String> {
        self.body["externalId"]
            .as_str()
            .map(str::to_string)
            .or_else(|| Some(self.location.as_deref()?.rsplit('/').next()?.to_string()))
    }
}

/// One page of a list, and its `recordsTotal`.
pub struct Page {
    pub items: Vec<Value>,
    pub total: Option<u64>,
}

pub struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
    /// `--resource-set`, resolved to its id.
    pub rs: Option<Uuid>,
}

impl Api {
    /// The client of `conn`: its URL and token checked, its resource set looked up by name when
    /// it is not an id.
    pub async fn connect(conn: &Conn) -> Result<Api, Failure> {
        let base = conn
            .url
            .clone()
            .or_else(|| svc_server::config::client_env("SVC_URL"))
            .unwrap_or_else(default_url);
        match url::Url::parse(&base) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {}
            _ => return Err(Failure::usage(format!("--url / SVC_URL: not an http(s) URL: {base:?}"))),
        }
        let token = conn
            .token
            .clone()
            .or_else(|| svc_server::config::client_env("SVC_TOKEN"))
            .ok_or_else(|| {
                Failure::usage(
                    "no token: give --token or set SVC_TOKEN (a sign-in's accessToken, or what `svc admin token` prints)",
                )
            })?;
        let http = reqwest::Client::builder()
            .user_agent(concat!("svc/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(60))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("HTTP client");
        let mut api = Api {
            http,
            base: base.trim_end_matches('/').to_string(),
            token: access_token(&token)?,
            rs: None,
        };
        if let Some(rs) = &conn.resource_set {
            api.rs = Some(api.resource_set(rs).await?);
        }
        Ok(api)
    }

    /// A resource set by id, or by its name (exactly one set of that name).
    async fn resource_set(&self, given: &str) -> Result<Uuid, Failure> {
        if let Ok(id) = Uuid::parse_str(given.trim()) {
            return Ok(id);
        }
        let query = [("filter".to_string(), format!("name:{given}"))];
        let sets = self.every("/api/v1/resource-sets", "entities", &query, None).await?;
        let named: Vec<&Value> = sets.iter().filter(|s| s["name"] == given).collect();
        match named.as_slice() {
            [one] => one["externalId"]
                .as_str()
                .and_then(|s| Uuid::parse_str(s).ok())
                .ok_or_else(|| Failure::failed(format!("resource set {given:?} has no externalId"))),
            [] => Err(Failure::usage(format!(
                "--resource-set: no resource set named {given:?}"
            ))),
            many => Err(Failure::usage(format!(
                "--resource-set: {} resource sets are named {given:?}; give its id",
                many.len()
            ))),
        }
    }

    /// One request. `rs`: the `X-Svc-ResourceSet` header. A status of 400 or more is a failure
    /// (exit 1) with the server's message, and the status.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        query: &[(String, String)],
        rs: Option<Uuid>,
        body: Option<&Value>,
    ) -> Result<Answer, Failure> {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if !query.is_empty() {
            req = req.query(query);
        }
        if let Some(rs) = rs {
            req = req.header(svc_server::http::guard::RS_HEADER, rs.to_string());
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| Failure::failed(format!("cannot reach {}: {}", self.base, innermost(&e))))?;
        let status = resp.status().as_u16();
        if let Some(w) = resp
            .headers()
            .get(svc_server::http::COMPLIANCE_HEADER)
            .and_then(|v| v.to_str().ok())
        {
            for line in compliance_warnings(&method, path, w) {
                eprintln!("{line}");
            }
        }
        let location = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let text = resp
            .text()
            .await
            .map_err(|e| Failure::failed(format!("{method} {path}: reading the answer: {}", innermost(&e))))?;
        let body: Value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        if status >= 400 {
            return Err(refusal(&method, path, status, &body));
        }
        Ok(Answer { body, location })
    }

    /// A GET that may find nothing: `None` for the 204 (or 404) of a missing id (§1.7).
    pub async fn find(&self, path: &str, rs: Option<Uuid>) -> Result<Option<Value>, Failure> {
        match self.call(Method::GET, path, &[], rs, None).await {
            Ok(a) if a.body.is_object() => Ok(Some(a.body)),
            Ok(_) => Ok(None),
            Err(e) if e.status == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// One page of a list (§1.6).
    pub async fn page(
        &self,
        path: &str,
        items_key: &str,
        query: &[(String, String)],
        rs: Option<Uuid>,
    ) -> Result<Page, Failure> {
        let a = self.call(Method::GET, path, query, rs, None).await?;
        let items = a.body[items_key]
            .as_array()
            .cloned()
            .ok_or_else(|| Failure::failed(format!("GET {path}: the answer has no {items_key:?} list")))?;
        Ok(Page {
            items,
            total: a.body["recordsTotal"].as_u64(),
        })
    }

    /// Every entry of a list, 1,000 a page, from the first page on.
    pub async fn every(
        &self,
        path: &str,
        items_key: &str,
        query: &[(String, String)],
        rs: Option<Uuid>,
    ) -> Result<Vec<Value>, Failure> {
        self.pages(path, items_key, query, rs, 1, 1000).await
    }

    /// The entries of the pages from `first` on, `per_page` a page.
    pub async fn pages(
        &self,
        path: &str,
        items_key: &str,
        query: &[(String, String)],
        rs: Option<Uuid>,
        first: u32,
        per_page: u32,
    ) -> Result<Vec<Value>, Failure> {
        let mut all = Vec::new();
        let mut n = first;
        loop {
            let mut q = query.to_vec();
            q.push(("page".into(), n.to_string()));
            q.push(("per-page".into(), per_page.to_string()));
            let p = self.page(path, items_key, &q, rs).await?;
            let got = p.items.len();
            all.extend(p.items);
            let skipped = (u64::from(first) - 1) * u64::from(per_page);
            if got < per_page as usize || p.total.is_some_and(|t| skipped + all.len() as u64 >= t) {
                return Ok(all);
            }
            n += 1;
        }
    }
}

/// What a compliance setting a write did not meet means (§3.22; docs/API-CONVENTIONS.md).
fn compliance_meaning(setting: &str) -> Option<&'static str> {
    Some(match setting {
        "ap_trust_prov_governance" => {
            "the access policy lists no trust provider, so it accepts an edge token from any trust provider of its resource set: the evidence of any of them whose facts match the client workload's identities"
        }
        "ap_access_cond_governance" => "the access policy has no access condition",
        "edge_trust_prov_governance" => "the agent controller names no trust provider (trustProviderId)",
        "edge_tls_hostname_governance" => "the agent controller allows any TLS host name (allowedTlsHostname)",
        _ => return None,
    })
}

/// The lines `svc` prints on standard error for a write's `X-Svc-Compliance-Warning` (the
/// `Recommended` compliance settings it did not meet; the write was made): one per setting.
fn compliance_warnings(method: &Method, path: &str, header: &str) -> Vec<String> {
    header
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|setting| {
            let meaning = compliance_meaning(setting).unwrap_or("a Recommended compliance setting is not met");
            format!("svc: warning: {method} {path}: compliance setting {setting}: {meaning}")
        })
        .collect()
}

/// An error answer as a failure: `PUT /api/v1/roles: 400 name: is required` (§1.8's message).
fn refusal(method: &Method, path: &str, status: u16, body: &Value) -> Failure {
    let message = match body {
        Value::Object(o) => o.get("message").and_then(Value::as_str).unwrap_or_default().to_string(),
        Value::String(s) => s.chars().take(200).collect(),
        _ => String::new(),
    };
    Failure {
        status: Some(status),
        ..Failure::failed(format!("{method} {path}: {status} {message}").trim_end())
    }
}

/// The innermost cause of a reqwest error (its own text names the URL, already in the message).
fn innermost(e: &reqwest::Error) -> String {
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(e);
    let mut last = e.to_string();
    while let Some(s) = source {
        last = s.to_string();
        source = s.source();
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_compliance_warning_is_one_line_saying_what_it_means() {
        let lines = compliance_warnings(
            &Method::POST,
            "/api/v2/access-policies",
            "ap_trust_prov_governance, ap_access_cond_governance, future_setting",
        );
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(
            lines[0].starts_with(
                "svc: warning: POST /api/v2/access-policies: compliance setting ap_trust_prov_governance: the access policy lists no trust provider"
            ),
            "{lines:?}"
        );
        assert!(lines[0].contains("any trust provider of its resource set"));
        assert!(lines[1].ends_with("the access policy has no access condition"));
        assert!(lines[2].ends_with("future_setting: a Recommended compliance setting is not met"));
        assert!(compliance_warnings(&Method::PUT, "/x", " ").is_empty());
    }

    #[test]
    fn a_token_is_taken_from_a_login_response_or_as_given() {
        assert_eq!(
            access_token(r#"{"accessToken":"abc.def.ghi","tokenType":"Bearer","expiresIn":600}"#).unwrap(),
            "abc.def.ghi"
        );
        assert_eq!(access_token(" Bearer abc.def \n").unwrap(), "abc.def");
        assert_eq!(access_token("{\"tokenType\":\"Bearer\"}").unwrap_err().code, 2);
        assert_eq!(access_token("a b").unwrap_err().code, 2);
    }
}

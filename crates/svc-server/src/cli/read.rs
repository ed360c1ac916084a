//! `svc admin list <resource>` and `svc admin get <resource> <id>`: a resource's entries over the
//! management API, as JSON or as a table of their key columns.

use serde_json::Value;
use uuid::Uuid;

use super::client::Api;
use super::resources::{self, Resource, Scope, Shape};
use super::table;
use super::{Failure, GetArgs, ListArgs, Output};

/// How a list reads in `--resource-set`: the header of a resource that takes one, none for a
/// global one (a usage error), and for one without the header (§1.4 rule 5) a client-side
/// filter on the entries' `resourceSet` over every page (not every such list has the server's
/// `resourceSet:` filter key).
enum InSet {
    Header(Option<Uuid>),
    Filtered(Uuid),
}

fn list_scope(r: &Resource, api: &Api, paged: bool) -> Result<InSet, Failure> {
    match (r.scope, api.rs) {
        (Scope::Header, rs) => Ok(InSet::Header(rs)),
        (_, None) => Ok(InSet::Header(None)),
        (Scope::Body, Some(_)) if paged => Err(Failure::usage(format!(
            "{}: --resource-set reads every page of this list; --page does not apply",
            r.label()
        ))),
        (Scope::Body, Some(rs)) => Ok(InSet::Filtered(rs)),
        (Scope::Global, Some(_)) => Err(Failure::usage(format!("{} belong to no resource set", r.label()))),
    }
}

pub async fn list(a: ListArgs) -> Result<(), Failure> {
    let r = resources::find(&a.resource)?;
    let mut query: Vec<(String, String)> = Vec::new();
    for p in &a.params {
        match p.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => query.push((k.trim().to_string(), v.to_string())),
            _ => return Err(Failure::usage(format!("--param {p:?}: expected KEY=VALUE"))),
        }
    }
    let api = Api::connect(&a.conn).await?;
    let in_set = list_scope(r, &api, a.page.is_some())?;
    if let Some(f) = a.filter {
        query.push(("filter".into(), f));
    }
    if let Some(o) = a.order {
        query.push(("order".into(), o));
    }
    let items = match in_set {
        InSet::Filtered(rs) => {
            let rs = rs.to_string();
            let all = api
                .pages(&r.path(), r.items, &query, None, 1, a.per_page.unwrap_or(1000))
                .await?;
            all.into_iter().filter(|e| e["resourceSet"] == rs.as_str()).collect()
        }
        InSet::Header(rs) if a.all => {
            let per_page = a.per_page.unwrap_or(1000);
            api.pages(&r.path(), r.items, &query, rs, a.page.unwrap_or(1), per_page)
                .await?
        }
        InSet::Header(rs) => {
            if let Some(p) = a.page {
                query.push(("page".into(), p.to_string()));
            }
            if let Some(p) = a.per_page {
                query.push(("per-page".into(), p.to_string()));
            }
            let page = api.page(&r.path(), r.items, &query, rs).await?;
            let before = u64::from(a.page.unwrap_or(1) - 1) * u64::from(a.per_page.unwrap_or(100));
            if let Some(total) = page.total.filter(|t| *t > before + page.items.len() as u64) {
                eprintln!(
                    "svc: {} of {total} entries shown (page {}); --all lists every page",
                    page.items.len(),
                    a.page.unwrap_or(1)
                );
            }
            page.items
        }
    };
    print(r, &items, a.output, false);
    Ok(())
}

pub async fn get(a: GetArgs) -> Result<(), Failure> {
    let r = resources::find(&a.resource)?;
    let api = Api::connect(&a.conn).await?;
    // Ids are unique across resource sets: only a resource that takes the header reads in one.
    let rs = match (r.scope, api.rs) {
        (Scope::Global, Some(_)) => {
            return Err(Failure::usage(format!("{} belong to no resource set", r.label())));
        }
        (Scope::Header, rs) => rs,
        _ => None,
    };
    let id = a.id.trim();
    let path = format!("{}/{}", r.path(), id);
    let Some(entry) = api.find(&path, rs).await? else {
        return Err(Failure::failed(format!("{}: no entry {id}", r.label())));
    };
    print(r, std::slice::from_ref(&entry), a.output, true);
    Ok(())
}

fn print(r: &Resource, items: &[Value], output: Output, single: bool) {
    match output {
        Output::Json => {
            // `get` prints its entry, `list` an array (of one, too).
            let v = match items {
                [one] if single => one.clone(),
                _ => Value::Array(items.to_vec()),
            };
            println!("{}", serde_json::to_string_pretty(&v).expect("a JSON value serialises"));
        }
        Output::Table => {
            let cols = columns(r, items);
            let headers: Vec<&str> = cols.iter().map(|(h, _)| *h).collect();
            let rows: Vec<Vec<String>> = items
                .iter()
                .map(|i| cols.iter().map(|(_, p)| table::cell(i, p)).collect())
                .collect();
            print!("{}", table::render(&headers, &rows));
        }
    }
}

/// The key columns of a resource's table: `(header, dotted path)`.
fn columns(r: &Resource, items: &[Value]) -> Vec<(&'static str, &'static str)> {
    match r.shape {
        Shape::Entity => {
            let mut c = vec![("externalId", "externalId"), (r.key, r.key)];
            // The discriminator, when the entries have one (§3: `type`, trust providers'
            // `provider`, integrations' and conditions' `integrationType`).
            if let Some(k) = ["type", "provider", "integrationType"]
                .into_iter()
                .find(|k| items.iter().any(|i| i[*k].is_string()))
            {
                c.push((k, k));
            }
            c.extend([("isActive", "isActive"), ("modifiedAt", "modifiedAt")]);
            c
        }
        Shape::Audit => vec![
            ("externalId", "externalId"),
            ("createdAt", "createdAt"),
            ("category", "category"),
            ("activity", "activity"),
            ("target", "target"),
            ("result", "outcome.result"),
        ],
        Shape::AuthorizationEvent => vec![
            ("eventId", "meta.eventId"),
            ("timestamp", "meta.timestamp"),
            ("eventType", "meta.eventType"),
            ("result", "outcome.result"),
            ("reason", "outcome.reason"),
        ],
        Shape::WorkloadEvent => vec![
            ("eventId", "meta.eventId"),
            ("timestamp", "meta.timestamp"),
            ("action", "meta.action"),
            ("result", "outcome.result"),
        ],
    }
}

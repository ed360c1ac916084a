//! The audit log's list query (contract §3.23, §3.26) at a million entries (issue 34): the
//! same results, order, ties and totals as the other event lists' query builder
//! (`events::Store::query_events`), read through the indexes of migration 0009 — a trigram index
//! for `search`, and one index per sortable field and direction for `order`.

use sqlx::Row;

use super::events::{BindValue, EXACT_TOTAL, EventQuery, EventTable, QueryPage, escape_like};
use super::{Dialect, Result, Store};

/// Body fields kept in a column of their own with the same value (`AuditEntry::to_row`): an
/// `order` on the field sorts on the column (strings or null either way, so in the same order).
const BODY_COLUMNS: &[(&[&str], &str)] = &[
    (&["externalId"], "id"),
    (&["resourceSetId"], "rs"),
    (&["category"], "category"),
    (&["activity"], "activity"),
    (&["target"], "target"),
    (&["severity"], "severity"),
    (&["actor", "type"], "actor_type"),
    (&["actor", "email"], "actor_email"),
    (&["actor", "displayName"], "actor_name"),
    (&["outcome", "result"], "result"),
    (&["client", "ipAddress"], "ip"),
];

/// The text columns with an order index of their own (`audit_logs_by_<column>[_desc]`).
const ORDER_COLUMNS: &[&str] = &[
    "category",
    "activity",
    "target",
    "severity",
    "actor_type",
    "actor_email",
    "actor_name",
    "result",
    "ip",
];

/// Body fields without a column, each a string or null in every entry, with the name of its
/// order indexes (`audit_logs_by_<name>[_desc]`, on the expression [`body_text`] writes).
const ORDER_PATHS: &[(&[&str], &str)] = &[
    (&["actor", "userName"], "user_name"),
    (&["actor", "credentialProviderId"], "cp_id"),
    (&["actor", "accessPolicyId"], "ap_id"),
    (&["client", "userAgent", "browser"], "browser"),
    (&["client", "userAgent", "operatingSystem"], "os"),
    (&["client", "userAgent", "raw"], "user_agent"),
    (&["outcome", "reason"], "reason"),
];

/// A body field's value as migration 0009 indexes it: SQLite's `json_extract` (text or null,
/// the expression the generic body order writes too), PostgreSQL's text (`#>>`; a JSON null is
/// SQL NULL).
fn body_text(dialect: Dialect, path: &[&str]) -> String {
    match dialect {
        Dialect::Sqlite => {
            let p: Vec<String> = path.iter().map(|k| format!("\"{k}\"")).collect();
            format!("json_extract(body, '$.{}')", p.join("."))
        }
        Dialect::Postgres => format!("(body::jsonb #>> '{{{}}}')", path.join(",")),
    }
}

/// What the list orders on.
enum Key {
    /// `created_at`: the `(rs, created_at)` index.
    Time,
    /// `externalId`: unique, and lowercase (UUIDs) so that case-insensitive order is byte order:
    /// `(rs, id)`.
    Id,
    /// Text (a column or an indexed body field's expression), with its index name when it has one.
    Text(String, Option<String>),
    /// Any other body field (the generic JSON order).
    Body(Vec<&'static str>),
}

impl Store {
    /// The audit list: as `query_events` for the other event lists, through migration 0009's
    /// indexes. SQLite first asks the trigram index how many entries may match a search of three
    /// characters or more; with at most [`EXACT_TOTAL`] it reads only those (and checks each with
    /// the list's `LIKE`), else the window in order, where matches are dense. A list whose total
    /// is estimated (more than [`EXACT_TOTAL`] match) is read off the order's index; one with
    /// fewer is sorted (an index walk would cross every entry outside a narrow window).
    /// PostgreSQL's planner makes the same choices from its statistics.
    pub(super) async fn query_audit_now(&self, q: &EventQuery) -> Result<QueryPage> {
        let dialect = self.dialect();
        let empty = || QueryPage {
            bodies: vec![],
            columns: vec![],
            total: 0,
            estimated: false,
        };
        if q.rs.is_empty() {
            return Ok(empty());
        }
        let mut binds: Vec<BindValue> = Vec::new();
        let next = |binds: &mut Vec<BindValue>, v: BindValue| {
            binds.push(v);
            format!("${}", binds.len())
        };
        let search = q.search.as_deref().filter(|s| !s.is_empty());
        // The trigram path: only the entries the index names (SQLite).
        let trigrams = match (dialect, search) {
            (Dialect::Sqlite, Some(s)) => self.few_trigram_matches(s).await?,
            _ => None,
        };
        // `+`: no index on these columns, so SQLite reads the entries the trigram index names.
        let plus = if trigrams.is_some() { "+" } else { "" };
        let mut conds: Vec<String> = Vec::new();
        let list: Vec<String> =
            q.rs.iter()
                .map(|r| next(&mut binds, BindValue::Text(r.clone())))
                .collect();
        conds.push(format!("{plus}rs IN ({})", list.join(", ")));
        if let Some(from) = q.from {
            let p = next(&mut binds, BindValue::Int(from));
            conds.push(format!("{plus}created_at >= {p}"));
        }
        if let Some(to) = q.to {
            let p = next(&mut binds, BindValue::Int(to));
            conds.push(format!("{plus}created_at < {p}"));
        }
        for (col, v) in &q.eq {
            let p = next(&mut binds, BindValue::Text(v.to_lowercase()));
            conds.push(format!("LOWER({col}) = {p}"));
        }
        for (col, vs) in &q.any_of {
            if vs.is_empty() {
                conds.push("1 = 0".into());
                continue;
            }
            let ps: Vec<String> = vs
                .iter()
                .map(|v| next(&mut binds, BindValue::Text(v.clone())))
                .collect();
            conds.push(format!("{col} IN ({})", ps.join(", ")));
        }
        if let Some(s) = search {
            if let Some(m) = &trigrams {
                let p = next(&mut binds, BindValue::Text(m.clone()));
                conds.push(format!(
                    "seq IN (SELECT rowid FROM audit_search WHERE audit_search MATCH {p})"
                ));
            }
            let p = next(&mut binds, BindValue::Text(escape_like(s)));
            conds.push(format!("search LIKE {p} ESCAPE '\\'"));
        }
        let where_ = conds.join(" AND ");
        // The total: as `query_events` counts it (the first `EXACT_TOTAL + 1` matches in time
        // order, an estimate beyond).
        let cap = EXACT_TOTAL + 1;
        let oldest = if q.rs.len() == 1 {
            format!(" ORDER BY {plus}created_at")
        } else {
            String::new()
        };
        let count_sql = format!(
            "SELECT COUNT(*), COUNT(*), MIN(seq), MAX(seq) FROM \
             (SELECT seq FROM audit_logs WHERE {where_}{oldest} LIMIT {cap}) AS sample"
        );
        let mut count = sqlx::query(sqlx::AssertSqlSafe(count_sql));
        for b in &binds {
            count = b.bind(count);
        }
        let sample = count.fetch_one(self.pool()).await?;
        let (rows_seen, counted): (i64, i64) = (sample.get(0), sample.get(1));
        let (total, estimated) = if rows_seen >= cap {
            let span = (sample.get::<Option<i64>, _>(2), sample.get::<Option<i64>, _>(3));
            (
                self.estimate_total(EventTable::Audit, q, counted, span)
                    .await?
                    .max(EXACT_TOTAL + 1),
                true,
            )
        } else {
            (counted, false)
        };
        if total == 0 && q.offset == 0 {
            return Ok(empty());
        }
        let (keys, index) = order_keys(dialect, q);
        // Few matches are sorted (`+`: not off an order index); many are read off the order's
        // index (SQLite's planner, without statistics, is told which).
        let (keys, from) = match (dialect, index) {
            (Dialect::Sqlite, Some(i)) if estimated && trigrams.is_none() => {
                (keys.join(", "), format!("audit_logs INDEXED BY {i}"))
            }
            (Dialect::Sqlite, _) if !estimated => (
                keys.iter().map(|k| format!("+{k}")).collect::<Vec<_>>().join(", "),
                "audit_logs".to_string(),
            ),
            _ => (keys.join(", "), "audit_logs".to_string()),
        };
        let page_sql = format!(
            "SELECT body FROM {from} WHERE {where_} ORDER BY {keys} LIMIT {} OFFSET {}",
            q.limit, q.offset
        );
        let mut page = sqlx::query(sqlx::AssertSqlSafe(page_sql));
        for b in &binds {
            page = b.bind(page);
        }
        let rows = page.fetch_all(self.pool()).await?;
        let bodies: Vec<String> = rows.iter().map(|r| r.get::<String, _>(0)).collect();
        Ok(QueryPage {
            columns: bodies.iter().map(|_| Default::default()).collect(),
            bodies,
            total,
            estimated,
        })
    }

    /// The trigram index's query for `search` (SQLite, migration 0009) when it names at most
    /// [`EXACT_TOTAL`] entries, the superset of the matches the list then reads; `None` when
    /// the search is shorter than a trigram or the index names more (the matches are then
    /// dense enough to be found by reading the window in order).
    async fn few_trigram_matches(&self, search: &str) -> Result<Option<String>> {
        let Some(m) = trigram_query(search) else {
            return Ok(None);
        };
        let n: i64 = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*) FROM (SELECT rowid FROM audit_search WHERE audit_search MATCH $1 LIMIT {})",
            EXACT_TOTAL + 1
        )))
        .bind(m.as_str())
        .fetch_one(self.pool())
        .await?
        .get(0);
        Ok((n <= EXACT_TOTAL).then_some(m))
    }
}

/// An FTS5 query that every entry whose search text holds `search` (lowercased, as the stored
/// text is) matches: each of its trigrams (the index keeps no positions), quoted. `None` below
/// three characters.
fn trigram_query(search: &str) -> Option<String> {
    let chars: Vec<char> = search.to_lowercase().chars().collect();
    if chars.len() < 3 {
        return None;
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut terms = Vec::new();
    for w in chars.windows(3) {
        let t: String = w.iter().collect();
        if seen.insert(t.clone()) {
            terms.push(format!("\"{}\"", t.replace('"', "\"\"")));
        }
    }
    Some(terms.join(" AND "))
}

/// The `ORDER BY` terms of the list (ties included) and, for SQLite, the index that holds them
/// (docs/API-CONVENTIONS.md, Lists: null < numbers < strings, strings case-insensitively first,
/// then exactly; ties on `externalId` ascending in both directions).
fn order_keys(dialect: Dialect, q: &EventQuery) -> (Vec<String>, Option<String>) {
    let dir = if q.desc { "DESC" } else { "ASC" };
    let nulls = match (dialect, q.desc) {
        (Dialect::Sqlite, _) => "",
        (Dialect::Postgres, false) => " NULLS FIRST",
        (Dialect::Postgres, true) => " NULLS LAST",
    };
    let desc = if q.desc { "_desc" } else { "" };
    let column = |c: &str| match c {
        "created_at" => Key::Time,
        "id" => Key::Id,
        // One resource set: every entry ties, in `externalId` order.
        "rs" if q.rs.len() == 1 => Key::Id,
        c => Key::Text(
            c.to_string(),
            ORDER_COLUMNS.contains(&c).then(|| format!("audit_logs_by_{c}{desc}")),
        ),
    };
    let key = match &q.order_json {
        None => column(q.order_col),
        Some(path) => match BODY_COLUMNS.iter().find(|(p, _)| p == path) {
            Some((_, c)) => column(c),
            None => match ORDER_PATHS.iter().find(|(p, _)| p == path) {
                Some((p, name)) => Key::Text(body_text(dialect, p), Some(format!("audit_logs_by_{name}{desc}"))),
                None => Key::Body(path.clone()),
            },
        },
    };
    match key {
        Key::Time => (vec![format!("created_at {dir}"), "id ASC".into()], None),
        // With one resource set ordered on it, ascending whatever the direction.
        Key::Id if q.order_col == "rs" || q.order_json.as_deref() == Some(&["resourceSetId"]) => {
            (vec!["id ASC".into()], Some("audit_logs_rs_id".into()))
        }
        Key::Id => (vec![format!("id {dir}")], Some("audit_logs_rs_id".into())),
        Key::Text(v, index) => {
            let keys = match dialect {
                Dialect::Sqlite => vec![format!("{v} COLLATE NOCASE {dir}"), format!("{v} {dir}")],
                // "Exactly" is byte order, as SQLite's: not the database's locale.
                Dialect::Postgres => vec![
                    format!("LOWER({v}) {dir}{nulls}"),
                    format!("{v} COLLATE \"C\" {dir}{nulls}"),
                ],
            };
            (keys.into_iter().chain(["id ASC".to_string()]).collect(), index)
        }
        Key::Body(path) => {
            let keys = match dialect {
                Dialect::Sqlite => {
                    // json_extract gives SQL NULL, integers (booleans as 0/1), reals or text,
                    // which SQLite orders NULL < numbers < text; the collation applies to text.
                    let v = body_text(dialect, &path);
                    vec![format!("{v} COLLATE NOCASE {dir}"), format!("{v} {dir}")]
                }
                Dialect::Postgres => {
                    let v = format!("(body::jsonb #> '{{{}}}')", path.join(","));
                    vec![
                        format!(
                            "CASE jsonb_typeof({v}) WHEN 'boolean' THEN 1 WHEN 'number' THEN 2 WHEN 'string' THEN 3 ELSE 0 END {dir}"
                        ),
                        format!("CASE WHEN jsonb_typeof({v}) = 'string' THEN LOWER({v} #>> '{{}}') END {dir}{nulls}"),
                        format!(
                            "CASE WHEN jsonb_typeof({v}) = 'string' THEN ({v} #>> '{{}}') END COLLATE \"C\" {dir}{nulls}"
                        ),
                        format!("{v} {dir}{nulls}"),
                    ]
                }
            };
            (keys.into_iter().chain(["id ASC".to_string()]).collect(), None)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_search_becomes_its_trigrams_quoted() {
        assert_eq!(super::trigram_query("ab"), None);
        assert_eq!(
            super::trigram_query("Agent"),
            Some("\"age\" AND \"gen\" AND \"ent\"".into())
        );
        assert_eq!(
            super::trigram_query("a\"bab\"b").unwrap(),
            "\"a\"\"b\" AND \"\"\"ba\" AND \"bab\" AND \"ab\"\"\" AND \"b\"\"b\""
        );
        assert_eq!(super::trigram_query("aaaa"), Some("\"aaa\"".into()));
        assert_eq!(super::trigram_query("%_x"), Some("\"%_x\"".into()));
    }
}

//! The store conformance suite: the same assertions over the storage API on SQLite and, in the
//! PostgreSQL pass, on PostgreSQL.

use svc_server::config::DatabaseUrl;
use svc_server::store::{AuditRow, EntityRow, EventQuery, EventRow, EventTable, KeyRow, QueryPage, Store};

async fn open() -> (Store, crate::support::harness::TempDir) {
    let (s, _, dir) = open_at().await;
    (s, dir)
}

/// [`open`], with the fresh database's URL (for raw SQL on it, or to open it again).
async fn open_at() -> (Store, String, crate::support::harness::TempDir) {
    let dir = crate::support::harness::temp_dir();
    let url = crate::support::harness::fresh_database(&dir).await;
    (Store::open(&database_url(&url)).await.expect("open store"), url, dir)
}

/// The store's configuration for a test database's URL.
fn database_url(url: &str) -> DatabaseUrl {
    match url.strip_prefix("sqlite://") {
        Some(p) => DatabaseUrl::Sqlite(p.into()),
        None => DatabaseUrl::Postgres(url.to_string()),
    }
}

fn row(kind: &str, id: &str, body: &str) -> EntityRow {
    EntityRow {
        kind: kind.into(),
        id: id.into(),
        seq: 1,
        rs: None,
        body: body.into(),
        secrets: Some("v1:k:sealed".into()),
        updated_at: 1,
    }
}

#[tokio::test]
async fn entities_upsert_delete_and_change_log() {
    let (s, dir) = open().await;
    assert_eq!(s.last_change().await.unwrap(), 0);
    let mut tx = s.begin().await.unwrap();
    assert_eq!(tx.next_seq("role").await.unwrap(), 1);
    assert_eq!(tx.next_seq("role").await.unwrap(), 2);
    assert_eq!(tx.next_seq("user").await.unwrap(), 1);
    tx.upsert_entity(&row("role", "a", "{\"v\":1}")).await.unwrap();
    tx.upsert_entity(&row("role", "b", "{}")).await.unwrap();
    tx.commit().await.unwrap();
    let mut tx = s.begin().await.unwrap();
    tx.upsert_entity(&row("role", "a", "{\"v\":2}")).await.unwrap();
    tx.delete_entity("role", "b", 5).await.unwrap();
    tx.commit().await.unwrap();
    let all = all_entities(&s).await;
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].body, "{\"v\":2}");
    assert_eq!(all[0].secrets.as_deref(), Some("v1:k:sealed"));
    assert!(s.load_entity("role", "b").await.unwrap().is_none());
    let changes = s.changes_since(0).await.unwrap();
    assert_eq!(
        changes.iter().map(|c| c.2.as_str()).collect::<Vec<_>>(),
        ["a", "b", "a", "b"]
    );
    assert_eq!(s.changes_since(changes[1].0).await.unwrap().len(), 2);
    // A rolled-back transaction leaves nothing behind.
    let mut tx = s.begin().await.unwrap();
    tx.upsert_entity(&row("role", "c", "{}")).await.unwrap();
    drop(tx);
    assert!(s.load_entity("role", "c").await.unwrap().is_none());
    s.close().await;
    let _ = std::fs::remove_dir_all(dir);
}

async fn all_entities(s: &Store) -> Vec<EntityRow> {
    let mut all = Vec::new();
    s.each_entity(|r| {
        all.push(r);
        Ok(())
    })
    .await
    .unwrap();
    all
}

/// Start-up reads the entities in one pass (on SQLite in chunks of rowids): every row arrives
/// once, whatever its kind, however many chunks, and with its NULLs kept; an error of the
/// callback stops the read and is returned.
#[tokio::test]
async fn each_entity_hands_over_every_row_once_across_chunks() {
    let (s, dir) = open().await;
    let kinds = ["role", "user", "access_policy"];
    let mut expected = std::collections::BTreeMap::new();
    let mut tx = s.begin().await.unwrap();
    for i in 0..2_345 {
        let mut r = row(kinds[i % 3], &format!("id-{i}"), &format!("{{\"n\":{i},\"t\":\"é\"}}"));
        r.seq = i as i64;
        r.rs = (i % 2 == 0).then(|| "rs-1".to_string());
        r.secrets = (i % 5 == 0).then(|| format!("sealed-{i}"));
        tx.upsert_entity(&r).await.unwrap();
        expected.insert((r.kind.clone(), r.id.clone()), r);
    }
    tx.commit().await.unwrap();
    // Updated and deleted rows: read as they are now.
    let mut tx = s.begin().await.unwrap();
    for i in (0..2_345).step_by(7) {
        let k = (kinds[i % 3].to_string(), format!("id-{i}"));
        if i % 2 == 0 {
            tx.delete_entity(&k.0, &k.1, 9_000).await.unwrap();
            expected.remove(&k);
        } else {
            let r = expected.get_mut(&k).unwrap();
            r.body = "{\"updated\":true}".into();
            tx.upsert_entity(r).await.unwrap();
        }
    }
    tx.commit().await.unwrap();
    let mut got = std::collections::BTreeMap::new();
    for r in all_entities(&s).await {
        let k = (r.kind.clone(), r.id.clone());
        assert!(got.insert(k, r).is_none(), "a row handed over twice");
    }
    assert_eq!(got.len(), expected.len());
    assert!(got == expected, "rows differ from those stored");
    let mut seen = 0;
    let err = s
        .each_entity(|_| {
            seen += 1;
            if seen == 1_500 { Err("stop here".into()) } else { Ok(()) }
        })
        .await
        .unwrap_err();
    assert_eq!((seen, err.message.as_str()), (1_500, "stop here"));
    s.close().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn meta_first_writer_wins_and_keys_round_trip() {
    let (s, dir) = open().await;
    assert_eq!(s.meta_init("k", "first").await.unwrap(), "first");
    assert_eq!(s.meta_init("k", "second").await.unwrap(), "first");
    let k = KeyRow {
        kid: "x".into(),
        alg: "HS256".into(),
        created_at: 1,
        active_at: 2,
        retire_at: None,
        material: "sealed".into(),
    };
    s.save_keys(std::slice::from_ref(&k), &[], &[]).await.unwrap();
    s.save_keys(&[], &[("x".into(), 99)], &[]).await.unwrap();
    let keys = s.load_keys().await.unwrap();
    assert_eq!(keys[0].retire_at, Some(99));
    s.save_keys(&[], &[], &["x".into()]).await.unwrap();
    assert!(s.load_keys().await.unwrap().is_empty());
    // Pending values are single use and expire.
    s.put_pending("st1", "oauth", "data", 1000).await.unwrap();
    assert_eq!(s.take_pending("st1", "other", 10).await.unwrap(), None);
    s.put_pending("st2", "oauth", "data2", 1000).await.unwrap();
    assert_eq!(
        s.take_pending("st2", "oauth", 10).await.unwrap().as_deref(),
        Some("data2")
    );
    assert_eq!(s.take_pending("st2", "oauth", 10).await.unwrap(), None);
    s.put_pending("st3", "oauth", "data3", 5).await.unwrap();
    assert_eq!(s.take_pending("st3", "oauth", 10).await.unwrap(), None);
    s.close().await;
    let _ = std::fs::remove_dir_all(dir);
}

fn audit(id: &str, rs: &str, at: i64, cat: &str, search: &str) -> AuditRow {
    AuditRow {
        id: id.into(),
        rs: rs.into(),
        created_at: at,
        category: cat.into(),
        activity: "Created".into(),
        target: None,
        severity: "Info".into(),
        actor_type: "User".into(),
        actor_email: None,
        actor_name: None,
        result: "Success".into(),
        ip: None,
        search: search.into(),
        body: format!("{{\"id\":\"{id}\"}}"),
    }
}

#[tokio::test]
async fn event_queries_filter_order_and_page() {
    let (s, dir) = open().await;
    s.insert_audit_now(&[
        audit("a1", "rs1", 100, "Roles", "alpha 100%"),
        audit("a2", "rs1", 200, "Users", "beta_x"),
        audit("a3", "rs2", 300, "Roles", "gamma"),
    ])
    .await
    .unwrap();
    let q = |f: &dyn Fn(&mut EventQuery)| {
        let mut q = EventQuery {
            rs: vec!["rs1".into()],
            order_col: "created_at",
            desc: true,
            limit: 10,
            ..Default::default()
        };
        f(&mut q);
        q
    };
    let page = s.query_events(EventTable::Audit, &q(&|_| {})).await.unwrap();
    assert_eq!(
        (page.total, page.bodies.clone()),
        (2, vec!["{\"id\":\"a2\"}".to_string(), "{\"id\":\"a1\"}".to_string()])
    );
    assert_eq!(
        s.query_events(EventTable::Audit, &q(&|q| q.eq.push(("category", "ROLES".into()))))
            .await
            .unwrap()
            .total,
        1
    );
    assert_eq!(
        s.query_events(EventTable::Audit, &q(&|q| q.from = Some(150)))
            .await
            .unwrap()
            .total,
        1
    );
    assert_eq!(
        s.query_events(EventTable::Audit, &q(&|q| q.to = Some(150)))
            .await
            .unwrap()
            .total,
        1
    );
    // LIKE wildcards in the search text are literal.
    assert_eq!(
        s.query_events(EventTable::Audit, &q(&|q| q.search = Some("100%".into())))
            .await
            .unwrap()
            .total,
        1
    );
    assert_eq!(
        s.query_events(EventTable::Audit, &q(&|q| q.search = Some("a_x".into())))
            .await
            .unwrap()
            .total,
        1
    );
    assert_eq!(
        s.query_events(EventTable::Audit, &q(&|q| q.search = Some("%".into())))
            .await
            .unwrap()
            .total,
        1
    );
    let p2 = s
        .query_events(
            EventTable::Audit,
            &q(&|q| {
                q.limit = 1;
                q.offset = 1;
                q.desc = false;
            }),
        )
        .await
        .unwrap();
    assert_eq!(p2.bodies, vec!["{\"id\":\"a2\"}".to_string()]);
    assert_eq!(
        s.get_event(EventTable::Audit, "a3", &["rs1".into()]).await.unwrap(),
        None
    );
    assert!(
        s.get_event(EventTable::Audit, "a3", &["rs2".into()])
            .await
            .unwrap()
            .is_some()
    );

    let rs1 = uuid::Uuid::from_u128(0x51);
    let (cw, sw) = (uuid::Uuid::from_u128(0xc1), uuid::Uuid::from_u128(0x51d));
    let ev = |table: EventTable| EventRow {
        table,
        id: uuid::Uuid::new_v4(),
        rs: rs1,
        ts: 500,
        event_type: "access.request",
        severity: "Info",
        result: Some("Received"),
        client_ip: Some("10.0.0.1".into()),
        client_workload: Some(cw),
        server_workload: Some(sw),
        app_protocol: Some("HTTP".into()),
        user_id: None,
        search: Some("access.request".into()),
        body: "{}".into(),
    };
    s.insert_events(&[ev(EventTable::Authorization), ev(EventTable::Workload)])
        .await
        .unwrap();
    let mut wq = EventQuery {
        rs: vec![rs1.to_string()],
        order_col: "ts",
        desc: true,
        limit: 10,
        ..Default::default()
    };
    wq.any_of
        .push(("client_workload", vec![cw.to_string(), "other".into()]));
    assert_eq!(s.query_events(EventTable::Workload, &wq).await.unwrap().total, 1);
    wq.any_of = vec![("server_workload", vec!["nope".into()])];
    assert_eq!(s.query_events(EventTable::Workload, &wq).await.unwrap().total, 0);
    // The audit entries and one edge request (the two events share its row).
    assert_eq!(s.purge_events(10_000).await.unwrap(), 4);

    // Retention purges from the head in chunks: more old rows than one chunk all go, the newer
    // rows behind them stay; audit entries too (in chunks of their own size on SQLite).
    let old_audit: Vec<AuditRow> = (0..svc_server::store::PURGE_CHUNK + 7)
        .map(|i| audit(&format!("old{i}"), "rs1", 1_000 + i as i64, "Roles", ""))
        .chain([audit("new", "rs1", 20_000, "Roles", "")])
        .collect();
    s.insert_audit_now(&old_audit).await.unwrap();
    // (Each its own request: a time of its own.)
    let old_rows: Vec<EventRow> = (0..svc_server::store::PURGE_CHUNK + 150)
        .map(|i| EventRow {
            ts: i as i64,
            ..ev(EventTable::Authorization)
        })
        .collect();
    s.insert_events(&old_rows).await.unwrap();
    let new_rows: Vec<EventRow> = (0..3)
        .map(|_| EventRow {
            ts: 20_000,
            ..ev(EventTable::Authorization)
        })
        .collect();
    s.insert_events(&new_rows).await.unwrap();
    assert_eq!(
        s.purge_events(10_000).await.unwrap(),
        (2 * svc_server::store::PURGE_CHUNK + 157) as u64
    );
    let all = EventQuery {
        rs: vec![rs1.to_string()],
        order_col: "ts",
        limit: 10,
        ..Default::default()
    };
    assert_eq!(s.query_events(EventTable::Authorization, &all).await.unwrap().total, 3);
    let audit_left = EventQuery {
        rs: vec!["rs1".into()],
        order_col: "created_at",
        limit: 10,
        ..Default::default()
    };
    assert_eq!(s.query_events(EventTable::Audit, &audit_left).await.unwrap().total, 1);
    s.close().await;
    let _ = std::fs::remove_dir_all(dir);
}

/// A transaction that reads before it writes (taking an OAuth state) never fails with "database
/// is locked" while the event writer commits batch after batch on another connection: write
/// transactions take the lock up front (`BEGIN IMMEDIATE` on SQLite) and wait for it.
#[tokio::test]
async fn read_then_write_transactions_wait_for_concurrent_event_batches() {
    let (s, dir) = open().await;
    let writer = {
        let s = s.clone();
        tokio::spawn(async move {
            for _ in 0..150 {
                let rows: Vec<EventRow> = (0..20)
                    .map(|_| EventRow {
                        table: EventTable::Authorization,
                        id: uuid::Uuid::new_v4(),
                        rs: uuid::Uuid::from_u128(0x51),
                        ts: 1,
                        event_type: "access.request",
                        severity: "Info",
                        result: None,
                        client_ip: None,
                        client_workload: None,
                        server_workload: None,
                        app_protocol: None,
                        user_id: None,
                        search: None,
                        body: "{}".into(),
                    })
                    .collect();
                s.insert_events(&rows).await.unwrap();
            }
        })
    };
    let mut taken = 0;
    while !writer.is_finished() {
        let state = format!("st-{taken}");
        s.put_pending(&state, "p", "data", i64::MAX).await.unwrap();
        let got = s.take_pending(&state, "p", 0).await.expect("no 'database is locked'");
        assert_eq!(got.as_deref(), Some("data"));
        taken += 1;
    }
    writer.await.unwrap();
    assert!(taken > 0);
    s.close().await;
    let _ = std::fs::remove_dir_all(dir);
}

/// A stored body as JSON: an edge event's comes back from the views as the database writes JSON
/// (PostgreSQL's `jsonb` text has its own spacing), not as the text it was written as.
fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap()
}

fn jsons(bodies: &[String]) -> Vec<serde_json::Value> {
    bodies.iter().map(|b| json(b)).collect()
}

fn edge_event(table: EventTable, id: uuid::Uuid, rs: uuid::Uuid, ts: i64, search: Option<&str>) -> EventRow {
    let workload = table == EventTable::Workload;
    EventRow {
        table,
        id,
        rs,
        ts,
        event_type: if workload {
            "workload.credential"
        } else {
            "access.authorization"
        },
        severity: "Info",
        result: Some(if workload { "CredentialIssued" } else { "Authorized" }),
        client_ip: Some("10.9.8.7".into()),
        client_workload: None,
        server_workload: workload.then(|| uuid::Uuid::from_u128(0x51d)),
        app_protocol: workload.then(|| "HTTP".into()),
        user_id: None,
        search: search.map(Into::into),
        body: format!("{{\"n\":\"{id}\"}}").into(),
    }
}

/// The event tables have no index on `id`: an edge event's time-ordered (v7) id carries its
/// `ts`, and the single read finds it through `(rs, ts)`; an id of another version names no
/// edge event and is not looked for (that would scan the table). The list's search looks at the event type and client IP
/// (authorization) or action (workload) columns besides the `search` text, which holds only
/// the entity names (authorization) or the client IP (workload).
#[tokio::test]
async fn edge_events_are_read_by_v7_id_and_searched_by_columns_and_names() {
    let (s, _dir) = open().await;
    let (rs1, rs2) = (uuid::Uuid::from_u128(0x51), uuid::Uuid::from_u128(0x52));
    let now = 1_700_000_000_123;
    let (v7, v4, w7) = (
        svc_server::util::uuid_v7(now),
        uuid::Uuid::new_v4(),
        svc_server::util::uuid_v7(now + 1),
    );
    s.insert_events(&[
        edge_event(EventTable::Authorization, v7, rs1, now, Some("build-job\npartner-api")),
        edge_event(EventTable::Authorization, v4, rs1, now - 5, None),
        edge_event(EventTable::Workload, w7, rs1, now + 1, Some("10.9.8.7")),
    ])
    .await
    .unwrap();
    let get = |t, id: String, rs: uuid::Uuid| {
        let s = s.clone();
        async move { s.get_event(t, &id, &[rs.to_string()]).await.unwrap().map(|b| json(&b)) }
    };
    let body = |id: uuid::Uuid| Some(serde_json::json!({ "n": id }));
    assert_eq!(get(EventTable::Authorization, v7.to_string(), rs1).await, body(v7));
    assert_eq!(
        get(EventTable::Authorization, v7.to_string().to_uppercase(), rs1).await,
        None
    );
    assert_eq!(get(EventTable::Authorization, v7.to_string(), rs2).await, None);
    assert_eq!(get(EventTable::Authorization, v4.to_string(), rs1).await, None);
    assert_eq!(get(EventTable::Workload, w7.to_string(), rs1).await, body(w7));
    assert_eq!(get(EventTable::Authorization, w7.to_string(), rs1).await, None);
    // Same millisecond, another id; and no UUID at all.
    let other = svc_server::util::uuid_v7(now).to_string();
    assert_eq!(get(EventTable::Authorization, other, rs1).await, None);
    assert_eq!(get(EventTable::Authorization, "e1".into(), rs1).await, None);

    let found = |t, text: &str| {
        let (s, q) = (
            s.clone(),
            EventQuery {
                rs: vec![rs1.to_string()],
                order_col: "ts",
                limit: 10,
                search: Some(text.into()),
                ..Default::default()
            },
        );
        async move { s.query_events(t, &q).await.unwrap().total }
    };
    for (text, n) in [
        ("ACCESS.Author", 2),
        ("10.9.8", 2),
        ("Build-JOB", 1),
        ("partner-api", 1),
        ("nobody", 0),
    ] {
        assert_eq!(
            found(EventTable::Authorization, text).await,
            n,
            "authorization search {text:?}"
        );
    }
    for (text, n) in [
        ("credentialissued", 1),
        ("Workload.Cred", 1),
        ("10.9.8.7", 1),
        ("build", 0),
    ] {
        assert_eq!(found(EventTable::Workload, text).await, n, "workload search {text:?}");
    }
}

/// One page of `table` in resource set `rs`, ordered by the column `col` or, with `json`, by the
/// body key `k`.
async fn ordered(s: &Store, table: EventTable, rs: &str, col: &'static str, json: bool, desc: bool) -> QueryPage {
    let q = EventQuery {
        rs: vec![rs.into()],
        order_col: col,
        order_json: json.then(|| vec!["k"]),
        desc,
        limit: 10,
        ..Default::default()
    };
    s.query_events(table, &q).await.unwrap()
}

/// Both databases put a missing value (SQL NULL: a column, or a body key that is absent) first
/// when ascending and last when descending (docs/API-CONVENTIONS.md: null sorts lowest);
/// PostgreSQL does the opposite by default.
#[tokio::test]
async fn event_lists_sort_missing_values_lowest_on_both_databases() {
    let (s, _dir) = open().await;
    let rs = uuid::Uuid::from_u128(0x53);
    let now = 1_700_000_100_000;
    let mut rows = Vec::new();
    for (i, ip) in [Some("10.0.0.2"), None, Some("10.0.0.1")].into_iter().enumerate() {
        let ts = now + i as i64;
        let mut e = edge_event(EventTable::Authorization, svc_server::util::uuid_v7(ts), rs, ts, None);
        e.client_ip = ip.map(Into::into);
        e.body = match ip {
            Some(ip) => format!("{{\"k\":\"{ip}\"}}"),
            None => "{}".to_string(),
        }
        .into();
        rows.push(e);
    }
    s.insert_events(&rows).await.unwrap();
    let order = |col: &'static str, json: bool, desc: bool| {
        let (s, rs) = (s.clone(), rs.to_string());
        async move {
            let page = ordered(&s, EventTable::Authorization, &rs, col, json, desc).await;
            page.columns
                .iter()
                .map(|c| c["client_ip"].as_str().map(str::to_string))
                .collect::<Vec<_>>()
        }
    };
    let ip = |v: &str| Some(v.to_string());
    for json in [false, true] {
        assert_eq!(
            order("client_ip", json, false).await,
            [None, ip("10.0.0.1"), ip("10.0.0.2")],
            "ascending (body key: {json})"
        );
        assert_eq!(
            order("client_ip", json, true).await,
            [ip("10.0.0.2"), ip("10.0.0.1"), None],
            "descending (body key: {json})"
        );
    }
}

/// Both databases order strings case-insensitively first, then exactly (byte order), and a
/// body key's values null < numbers < strings (docs/API-CONVENTIONS.md, Lists).
#[tokio::test]
async fn event_lists_order_strings_case_insensitively_then_exactly_on_both_databases() {
    let (s, _dir) = open().await;
    let mut rows = Vec::new();
    for (i, target) in ["gamma", "alpha", "Beta", "Alpha"].into_iter().enumerate() {
        let mut a = audit(&format!("t{i}"), "rs9", 500 + i as i64, "Roles", "");
        a.target = Some(target.into());
        a.body = format!("{{\"id\":\"t{i}\",\"k\":\"{target}\"}}");
        rows.push(a);
    }
    let mut n = audit("t9", "rs9", 600, "Roles", "");
    n.target = Some("beta".into());
    n.body = "{\"id\":\"t9\",\"k\":7}".into();
    rows.push(n);
    s.insert_audit_now(&rows).await.unwrap();
    let order = |json: bool, desc: bool| {
        let s = s.clone();
        async move {
            let page = ordered(&s, EventTable::Audit, "rs9", "target", json, desc).await;
            page.bodies
                .iter()
                .map(|b| {
                    serde_json::from_str::<serde_json::Value>(b).unwrap()["id"]
                        .as_str()
                        .unwrap()
                        .to_string()
                })
                .collect::<Vec<_>>()
        }
    };
    // By the column: Alpha, alpha, Beta, beta, gamma.
    assert_eq!(order(false, false).await, ["t3", "t1", "t2", "t9", "t0"]);
    assert_eq!(order(false, true).await, ["t0", "t9", "t2", "t1", "t3"]);
    // By a body key: the number first, then the strings as above.
    assert_eq!(order(true, false).await, ["t9", "t3", "t1", "t2", "t0"]);
    assert_eq!(order(true, true).await, ["t0", "t2", "t1", "t3", "t9"]);
}

/// A database made before migration 2 keeps its events: on SQLite the event tables are rebuilt
/// without the `id` index (rows and `seq` kept), on PostgreSQL the constraint is dropped; the
/// old rows (full search text) are still listed and searched, new rows with no `search` follow
/// them in `seq` order, and an id no longer has to be unique.
#[tokio::test]
async fn migration_2_keeps_the_events_stored_before_it() {
    let dir = crate::support::harness::temp_dir();
    let url = crate::support::harness::fresh_database(&dir).await;
    let sqlite = url.starts_with("sqlite:");
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&if sqlite { format!("{url}?mode=rwc") } else { url.clone() })
        .await
        .unwrap();
    let init = if sqlite {
        include_str!("../../../migrations/sqlite/0001_init.sql")
    } else {
        include_str!("../../../migrations/postgres/0001_init.sql")
    };
    sqlx::raw_sql(init).execute(&pool).await.unwrap();
    sqlx::raw_sql(
        "CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL);
         INSERT INTO schema_migrations (version, name, applied_at) VALUES (1, 'init', 0);
         INSERT INTO authorization_events (id, rs, ts, event_type, severity, result, client_ip, search, body)
             VALUES ('old-1', '00000000-0000-0000-0000-000000000051', 10, 'access.request', 'Info', 'Received', '10.0.0.1', 'access.request\n10.0.0.1\nlegacy-job', '{\"n\":1}');
         INSERT INTO workload_events (id, rs, ts, event_type, action, severity, search, body)
             VALUES ('old-w', '00000000-0000-0000-0000-000000000051', 10, 'workload.credential', 'CredentialIssued', 'Info', 'workload.credential', '{\"n\":2}');",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
    let db = database_url(&url);
    let s = Store::open(&db).await.expect("migrates");
    let rs1 = uuid::Uuid::from_u128(0x51);
    let rs = [rs1.to_string()];
    let workload = s
        .query_events(
            EventTable::Workload,
            &EventQuery {
                rs: rs.to_vec(),
                order_col: "ts",
                limit: 10,
                search: Some("CredentialIssued".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(jsons(&workload.bodies), [serde_json::json!({"n": 2})]);
    let new = svc_server::util::uuid_v7(10);
    s.insert_events(&[edge_event(EventTable::Authorization, new, rs1, 10, None)])
        .await
        .unwrap();
    let twice = svc_server::util::uuid_v7(20);
    let row = edge_event(EventTable::Workload, twice, rs1, 20, None);
    s.insert_events(&[row.clone(), row])
        .await
        .expect("no unique index on id");
    let q = EventQuery {
        rs: rs.to_vec(),
        order_col: "ts",
        limit: 10,
        search: Some("LEGACY".into()),
        ..Default::default()
    };
    assert_eq!(s.query_events(EventTable::Authorization, &q).await.unwrap().total, 1);
    // Same `ts`: the tie is broken by `seq`, the old row first.
    let all = EventQuery { search: None, ..q };
    let page = s.query_events(EventTable::Authorization, &all).await.unwrap();
    assert_eq!(
        jsons(&page.bodies),
        [serde_json::json!({"n": 1}), serde_json::json!({ "n": new })]
    );
    s.close().await;
}

/// Migration 4 (one stored row per edge request, issue 19 part 2) keeps the events stored before
/// it: each becomes a request row of its own, the event views list them with their columns, the
/// log streams' cursors point at the same records (the next record delivered is the one after
/// the old cursor), and new requests come after every old record, even where retention deleted
/// the newest ones.
#[tokio::test]
async fn migration_4_keeps_the_events_and_the_stream_cursors() {
    let dir = crate::support::harness::temp_dir();
    let url = crate::support::harness::fresh_database(&dir).await;
    let sqlite = url.starts_with("sqlite:");
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&if sqlite { format!("{url}?mode=rwc") } else { url.clone() })
        .await
        .unwrap();
    let before: [&str; 3] = if sqlite {
        [
            include_str!("../../../migrations/sqlite/0001_init.sql"),
            include_str!("../../../migrations/sqlite/0002_event_rows.sql"),
            include_str!("../../../migrations/sqlite/0003_log_streams.sql"),
        ]
    } else {
        [
            include_str!("../../../migrations/postgres/0001_init.sql"),
            include_str!("../../../migrations/postgres/0002_event_rows.sql"),
            include_str!("../../../migrations/postgres/0003_log_streams.sql"),
        ]
    };
    for sql in before {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&pool).await.unwrap();
    }
    let rs = "00000000-0000-0000-0000-000000000051";
    let (a_stream, w_stream) = (uuid::Uuid::from_u128(0xa), uuid::Uuid::from_u128(0xb));
    let mut setup = String::from(
        "CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL);
         INSERT INTO schema_migrations (version, name, applied_at) VALUES (1, 'init', 0), (2, 'event_rows', 0), (3, 'log_streams', 0);",
    );
    for i in 1..=4 {
        setup.push_str(&format!(
            "INSERT INTO authorization_events (id, rs, ts, event_type, severity, result, client_ip, search, body)
                 VALUES ('a-{i}', '{rs}', {i}0, 'access.request', 'Info', 'Received', '10.0.0.{i}', 'job-{i}', '{{\"n\":{i},\"outcome\":{{\"reason\":null}}}}');"
        ));
    }
    for i in 1..=2 {
        setup.push_str(&format!(
            "INSERT INTO workload_events (id, rs, ts, event_type, action, severity, client_workload, server_workload, app_protocol, search, body)
                 VALUES ('w-{i}', '{rs}', {i}5, 'workload.credential', 'CredentialIssued', 'Info', 'cw-{i}', 'sw-{i}', 'HTTP', '10.0.0.{i}', '{{\"w\":{i}}}');"
        ));
    }
    setup.push_str(&format!(
        "INSERT INTO log_stream_cursors (stream, data_type, delivered, updated_at) VALUES
             ('{a_stream}', 'AccessAuthorizationEvents', 2, 0), ('{w_stream}', 'WorkloadEvents', 1, 0);
         DELETE FROM authorization_events WHERE id = 'a-4';"
    ));
    sqlx::raw_sql(sqlx::AssertSqlSafe(setup)).execute(&pool).await.unwrap();
    pool.close().await;
    let db = database_url(&url);
    let s = Store::open(&db).await.expect("migrates");

    let all = |table| {
        let s = s.clone();
        async move {
            s.query_events(
                table,
                &EventQuery {
                    rs: vec![rs.to_string()],
                    order_col: "ts",
                    limit: 10,
                    ..Default::default()
                },
            )
            .await
            .unwrap()
        }
    };
    let authz = all(EventTable::Authorization).await;
    assert_eq!(authz.total, 3);
    assert_eq!(
        jsons(&authz.bodies),
        [1, 2, 3].map(|i| serde_json::json!({"n": i, "outcome": {"reason": null}}))
    );
    assert_eq!(authz.columns[1]["id"], "a-2");
    assert_eq!(authz.columns[1]["client_ip"], "10.0.0.2");
    assert_eq!(authz.columns[1]["result"], "Received");
    assert_eq!(authz.columns[1]["ts"], 20);
    let workload = all(EventTable::Workload).await;
    assert_eq!(jsons(&workload.bodies), [1, 2].map(|i| serde_json::json!({ "w": i })));
    assert_eq!(workload.columns[0]["action"], "CredentialIssued");
    assert_eq!(workload.columns[0]["client_workload"], "cw-1");
    assert_eq!(workload.columns[0]["app_protocol"], "HTTP");
    // Searched as before: the old rows' search text.
    let q = EventQuery {
        rs: vec![rs.to_string()],
        order_col: "ts",
        limit: 10,
        search: Some("JOB-3".into()),
        ..Default::default()
    };
    assert_eq!(s.query_events(EventTable::Authorization, &q).await.unwrap().total, 1);

    // The cursors: the authorization stream delivered a-1, a-2; the workload stream w-1.
    let cursor = |id| {
        let s = s.clone();
        async move { s.stream_cursor(id).await.unwrap().unwrap().delivered }
    };
    let (a_at, w_at) = (cursor(a_stream).await, cursor(w_stream).await);
    let next = s
        .records_after(EventTable::Authorization, a_at, None, 10)
        .await
        .unwrap();
    assert_eq!(
        next.iter()
            .map(|r| r.body_json().unwrap()["n"].clone())
            .collect::<Vec<_>>(),
        [3]
    );
    let next = s.records_after(EventTable::Workload, w_at, None, 10).await.unwrap();
    assert_eq!(
        next.iter()
            .map(|r| r.body_json().unwrap()["w"].clone())
            .collect::<Vec<_>>(),
        [2]
    );

    // A new request (two events in one row) comes after everything, a-4 (deleted) included.
    let rs1 = uuid::Uuid::from_u128(0x51);
    let new = svc_server::util::uuid_v7(100);
    let new_w = svc_server::util::uuid_v7(100);
    s.insert_events(&[
        edge_event(EventTable::Authorization, new, rs1, 100, None),
        edge_event(EventTable::Workload, new_w, rs1, 100, None),
    ])
    .await
    .unwrap();
    let next = s
        .records_after(EventTable::Authorization, a_at, None, 10)
        .await
        .unwrap();
    assert_eq!(next.len(), 2);
    assert_eq!(next[1].body_json().unwrap(), serde_json::json!({ "n": new }));
    assert!(next[1].seq > 4 * 32, "after the deleted a-4's place: {}", next[1].seq);
    let next = s.records_after(EventTable::Workload, w_at, None, 10).await.unwrap();
    assert_eq!(next.len(), 2);
    assert_eq!(next[1].columns["id"], new_w.to_string());
    s.close().await;
}

/// The events of one request share its row and its time: a list in time order keeps them in the
/// order they were written, newest first when descending, and its pages cut through a request
/// without losing or repeating an event (the one-set read goes straight off the index and
/// reverses each request's run, issue 19 part 2). Counted without and with an event filter.
#[tokio::test]
async fn pages_of_edge_events_cut_through_requests_in_written_order() {
    let (s, _dir) = open().await;
    let rs1 = uuid::Uuid::from_u128(0x51);
    let mut written = vec![];
    for r in 0..4i64 {
        // Two requests share a millisecond; each request's events are written in order.
        let ts = 1_000 + r / 2;
        let events: Vec<EventRow> = (0..3)
            .map(|i| {
                let id = svc_server::util::uuid_v7(ts);
                written.push(id.to_string());
                EventRow {
                    event_type: if i == 2 { "access.credential" } else { "access.request" },
                    ..edge_event(EventTable::Authorization, id, rs1, ts, None)
                }
            })
            .collect();
        s.insert_events(&events).await.unwrap();
    }
    for rs in [vec![rs1.to_string()], vec![rs1.to_string(), "other".into()]] {
        for desc in [true, false] {
            for per_page in [1, 2, 5, 12] {
                let mut seen = vec![];
                let mut offset = 0;
                loop {
                    let page = s
                        .query_events(
                            EventTable::Authorization,
                            &EventQuery {
                                rs: rs.clone(),
                                order_col: "ts",
                                desc,
                                limit: per_page,
                                offset,
                                ..Default::default()
                            },
                        )
                        .await
                        .unwrap();
                    assert_eq!(page.total, 12);
                    if page.bodies.is_empty() {
                        break;
                    }
                    seen.extend(page.columns.iter().map(|c| c["id"].as_str().unwrap().to_string()));
                    offset += per_page;
                }
                let mut expected = written.clone();
                if desc {
                    expected.reverse();
                }
                assert_eq!(seen, expected, "desc {desc}, {per_page} per page, sets {rs:?}");
            }
        }
    }
    let credentials = EventQuery {
        rs: vec![rs1.to_string()],
        order_col: "ts",
        desc: true,
        limit: 10,
        eq: vec![("event_type", "access.credential".into())],
        ..Default::default()
    };
    let page = s.query_events(EventTable::Authorization, &credentials).await.unwrap();
    assert_eq!(page.total, 4);
    let ids: Vec<&str> = page.columns.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [&written[11], &written[8], &written[5], &written[2]]);
}

/// Retention deletes a stored edge request only once every one of its events is at or below the
/// floor of its table (what the active log streams delivered, §3.14): a cursor in the middle of
/// a request keeps the whole request, the lowest floor of either event kind holds, and a request
/// goes once the streams of both kinds have moved past it. (A cursor on a request's last event
/// keeps that request until the stream moves on: without reading the row, its index does not say
/// that no later event of the kind is in it.)
#[tokio::test]
async fn retention_keeps_a_request_a_stream_has_delivered_only_in_part() {
    let (s, _dir) = open().await;
    let rs1 = uuid::Uuid::from_u128(0x51);
    let request = |ts: i64, authorization: usize| -> Vec<EventRow> {
        (0..authorization)
            .map(|_| edge_event(EventTable::Authorization, svc_server::util::uuid_v7(ts), rs1, ts, None))
            .chain([edge_event(
                EventTable::Workload,
                svc_server::util::uuid_v7(ts),
                rs1,
                ts,
                None,
            )])
            .collect()
    };
    s.insert_events(&request(100, 3)).await.unwrap();
    s.insert_events(&request(101, 1)).await.unwrap();
    let seqs = |table| {
        let s = s.clone();
        async move {
            s.records_after(table, 0, None, 10)
                .await
                .unwrap()
                .iter()
                .map(|r| r.seq)
                .collect::<Vec<i64>>()
        }
    };
    let (a, w) = (seqs(EventTable::Authorization).await, seqs(EventTable::Workload).await);
    assert_eq!((a.len(), w.len()), (4, 2));
    let purge = |floors: Vec<(EventTable, i64)>| {
        let s = s.clone();
        async move { s.purge_events_through(1_000, &floors).await.unwrap() }
    };
    // Delivered up to the first, then the second of the first request's authorization events.
    assert_eq!(purge(vec![(EventTable::Authorization, a[0])]).await, 0);
    assert_eq!(purge(vec![(EventTable::Authorization, a[1])]).await, 0);
    // Past the first request for authorization events, not for its workload event.
    assert_eq!(
        purge(vec![
            (EventTable::Authorization, a[3]),
            (EventTable::Workload, w[0] - 1)
        ])
        .await,
        0
    );
    // Both streams past the first request: it goes, the second (on their cursors) stays.
    assert_eq!(
        purge(vec![(EventTable::Authorization, a[3]), (EventTable::Workload, w[1])]).await,
        1
    );
    assert_eq!(seqs(EventTable::Authorization).await, [a[3]]);
    assert_eq!(seqs(EventTable::Workload).await, [w[1]]);
}

/// A request row stores what its events cannot derive from each other and from the row
/// (migration 0005): one event id (the others are the first's with their index in its last hex
/// digit), no `k` for authorization events, no `Info` severity, no workload search text equal to
/// the client IP, no authorization search text when every name is ASCII (the view reads the body's
/// names), no workload `connectionId` or `clientWorkloadIP`. The lists, the single reads and the
/// log streams' reads give every value back.
#[tokio::test]
async fn request_rows_leave_out_what_the_views_derive_and_read_it_back() {
    use svc_server::store::{RequestRow, nth_event_id};
    let (s, url, _dir) = open_at().await;
    let rs = uuid::Uuid::from_u128(0x55);
    let now = 1_700_000_000_555;
    let first = svc_server::util::uuid_v7(now);
    let ids: Vec<uuid::Uuid> = (0..4).map(|n| nth_event_id(first, n)).collect();
    assert_eq!(ids[0], first);
    for id in &ids[1..] {
        assert_ne!(*id, first);
        assert_eq!(id.get_version_num(), 7);
        assert_eq!(
            id.to_string()[..35],
            first.to_string()[..35],
            "only the last hex digit differs"
        );
    }
    let context = uuid::Uuid::from_u128(0xc0);
    let mut events = vec![
        edge_event(EventTable::Authorization, ids[0], rs, now, None),
        edge_event(EventTable::Authorization, ids[1], rs, now, Some("ünïcode-job")),
        edge_event(EventTable::Workload, ids[2], rs, now, Some("10.9.8.7")),
    ];
    events[0].body =
        r#"{"clientWorkload":{"id":"x","name":"Build-JOB"},"trustProviders":[{"name":"Issuer-A"}]}"#.into();
    events[1].severity = "Warning";
    events[1].body = r#"{"clientWorkload":{"name":"Ünïcode-Job"}}"#.into();
    events[2].body = r#"{"network":{"clientWorkloadPort":1},"outcome":{"result":"Success"}}"#.into();
    let shared: std::sync::Arc<str> = format!(r#"{{"meta":{{"contextId":"{context}"}}}}"#).into();
    s.insert_requests(&RequestRow::group(&events, Some(&shared), None))
        .await
        .unwrap();

    // What is stored: the row's first id, its template's elements and bodies (migration 0007).
    sqlx::any::install_default_drivers();
    let raw = sqlx::AnyPool::connect(&url).await.unwrap();
    let (meta, bodies, eid): (String, String, String) = sqlx::query_as(
        "SELECT t.meta, t.bodies, r.eid FROM edge_requests AS r JOIN edge_templates AS t ON t.id = r.tpl",
    )
    .fetch_one(&raw)
    .await
    .unwrap();
    raw.close().await;
    assert_eq!(meta.matches("\"id\"").count(), 0, "{meta}");
    assert_eq!(eid, first.to_string());
    for left_out in ["\"k\":\"a\"", "\"Info\"", "10.9.8.7", "build-job"] {
        assert!(!meta.contains(left_out), "{left_out} in {meta}");
    }
    assert!(meta.contains("ünïcode-job") && meta.contains("\"Warning\""), "{meta}");
    assert!(!bodies.contains("connectionId") && !bodies.contains("clientWorkloadIP"));

    // The lists and the single reads.
    let list = |table, search: Option<&str>| {
        let q = EventQuery {
            rs: vec![rs.to_string()],
            order_col: "ts",
            limit: 10,
            search: search.map(Into::into),
            ..Default::default()
        };
        let s = s.clone();
        async move { s.query_events(table, &q).await.unwrap() }
    };
    let a = list(EventTable::Authorization, None).await;
    assert_eq!(a.total, 2);
    let col = |p: &QueryPage, i: usize, c: &str| p.columns[i][c].as_str().map(str::to_string);
    let mut read: Vec<(String, String)> = (0..2)
        .map(|i| (col(&a, i, "id").unwrap(), col(&a, i, "severity").unwrap()))
        .collect();
    read.sort();
    let mut want = vec![
        (ids[0].to_string(), "Info".to_string()),
        (ids[1].to_string(), "Warning".to_string()),
    ];
    want.sort();
    assert_eq!(read, want);
    let w = list(EventTable::Workload, None).await;
    assert_eq!(w.total, 1);
    assert_eq!(col(&w, 0, "id"), Some(ids[2].to_string()));
    assert_eq!(col(&w, 0, "severity").as_deref(), Some("Info"));
    assert_eq!(col(&w, 0, "client_ip").as_deref(), Some("10.9.8.7"));
    assert_eq!(col(&w, 0, "context_id"), Some(context.to_string()));
    for (t, id) in [
        (EventTable::Authorization, ids[0]),
        (EventTable::Authorization, ids[1]),
        (EventTable::Workload, ids[2]),
    ] {
        assert!(
            s.get_event(t, &id.to_string(), &[rs.to_string()])
                .await
                .unwrap()
                .is_some(),
            "{id} found by its derived id"
        );
    }
    assert_eq!(
        s.get_event(EventTable::Authorization, &ids[3].to_string(), &[rs.to_string()])
            .await
            .unwrap(),
        None,
        "no fourth event"
    );
    // Searched by the body's names (ASCII: the view lowers them), the stored text, the IP.
    for (text, n) in [
        ("BUILD-job", 1),
        ("issuer-a", 1),
        ("ÜNÏCODE", 1),
        ("nobody", 0),
        // In the body, but not a name.
        ("clientworkload", 0),
        ("\"x\"", 0),
    ] {
        assert_eq!(
            list(EventTable::Authorization, Some(text)).await.total,
            n,
            "authorization search {text:?}"
        );
    }
    assert_eq!(list(EventTable::Workload, Some("10.9.8")).await.total, 1);

    // The log streams' read of the rows gives the same ids and columns.
    let a_stream = s.records_after(EventTable::Authorization, -1, None, 10).await.unwrap();
    let mut stream_ids: Vec<String> = a_stream
        .iter()
        .map(|r| r.columns["id"].as_str().unwrap().to_string())
        .collect();
    stream_ids.sort();
    let mut want_ids = vec![ids[0].to_string(), ids[1].to_string()];
    want_ids.sort();
    assert_eq!(stream_ids, want_ids);
    assert!(a_stream.iter().any(|r| r.columns["severity"] == "Warning"));
    let w_stream = s.records_after(EventTable::Workload, -1, None, 10).await.unwrap();
    assert_eq!(w_stream.len(), 1);
    assert_eq!(w_stream[0].columns["id"], ids[2].to_string());
    assert_eq!(w_stream[0].columns["severity"], "Info");
    assert_eq!(w_stream[0].columns["client_ip"], "10.9.8.7");
    assert_eq!(w_stream[0].columns["context_id"], context.to_string());

    // A row stored before (every element with its `k`) and no search text had no names: other
    // `name` values of its body (a process name) are not searched.
    let old_id = svc_server::util::uuid_v7(now + 7);
    let raw = sqlx::AnyPool::connect(&url).await.unwrap();
    sqlx::query(
        "INSERT INTO edge_requests (rs, ts, na, nw, client_ip, meta, shared, bodies) VALUES ($1, $2, 1, 0, '10.9.8.7', $3, NULL, $4)",
    )
    .bind(rs.to_string())
    .bind(now + 7)
    .bind(format!(
        r#"[{{"k":"a","id":"{old_id}","t":"access.request","s":"Info","r":"Received"}}]"#
    ))
    .bind(r#"[{"environment":{"process":{"name":"python3"}}}]"#)
    .execute(&raw)
    .await
    .unwrap();
    raw.close().await;
    assert_eq!(list(EventTable::Authorization, Some("python")).await.total, 0);
    assert_eq!(list(EventTable::Authorization, Some("ACCESS.REQUEST")).await.total, 1);
    assert!(
        s.get_event(EventTable::Authorization, &old_id.to_string(), &[rs.to_string()])
            .await
            .unwrap()
            .is_some()
    );
}

/// Issue 34: an event list counts its total exactly up to 10,000 matches; past that it counts the
/// first 10,001 and estimates the rest (`estimated`), from the rows the window holds. With one
/// resource set written in order the estimate is the exact figure.
#[tokio::test]
async fn totals_are_exact_up_to_ten_thousand_then_estimated() {
    let (s, _dir) = open().await;
    let rs = uuid::Uuid::from_u128(0x34);
    let t0 = 1_700_000_000_000i64;
    // 11,000 requests of one authorization event each, one per millisecond.
    let rows: Vec<EventRow> = (0..11_000)
        .map(|i| {
            let mut e = edge_event(
                EventTable::Authorization,
                svc_server::util::uuid_v7(t0 + i),
                rs,
                t0 + i,
                None,
            );
            if i % 100 == 0 {
                e.search = Some("rare-name".into());
            }
            e
        })
        .collect();
    for chunk in rows.chunks(500) {
        // Each event its own request (different times): one row each.
        s.insert_events(chunk).await.unwrap();
    }
    let q = EventQuery {
        rs: vec![rs.to_string()],
        order_col: "ts",
        desc: true,
        limit: 5,
        ..Default::default()
    };
    let all = s.query_events(EventTable::Authorization, &q).await.unwrap();
    assert!(all.estimated, "11,000 matches: estimated");
    // One set written in order: the estimate is the true total.
    let near = |total: i64, truth: i64| total == truth;
    assert!(near(all.total, 11_000), "{}", all.total);
    assert_eq!(all.bodies.len(), 5);
    let typed = EventQuery {
        eq: vec![("event_type", "ACCESS.authorization".into())],
        ..q.clone()
    };
    let page = s.query_events(EventTable::Authorization, &typed).await.unwrap();
    assert!(page.estimated);
    assert!(near(page.total, 11_000), "{}", page.total);
    let rare = EventQuery {
        search: Some("RARE-".into()),
        ..q.clone()
    };
    let page = s.query_events(EventTable::Authorization, &rare).await.unwrap();
    assert!(!page.estimated, "110 matches: exact");
    assert_eq!(page.total, 110);
    // Read through their templates' rows, newest first.
    let times: Vec<i64> = page.columns.iter().map(|c| c["ts"].as_i64().unwrap()).collect();
    assert_eq!(times, [10_900, 10_800, 10_700, 10_600, 10_500].map(|d| t0 + d));
    let oldest = EventQuery {
        desc: false,
        ..rare.clone()
    };
    let page = s.query_events(EventTable::Authorization, &oldest).await.unwrap();
    let times: Vec<i64> = page.columns.iter().map(|c| c["ts"].as_i64().unwrap()).collect();
    assert_eq!(times, [0, 100, 200, 300, 400].map(|d| t0 + d));
    let window = EventQuery {
        from: Some(t0 + 1_000),
        to: Some(t0 + 11_000),
        ..q.clone()
    };
    let page = s.query_events(EventTable::Authorization, &window).await.unwrap();
    assert!(!page.estimated, "exactly 10,000: exact");
    assert_eq!(page.total, 10_000);

    // Audit entries alike.
    let entries: Vec<AuditRow> = (0..10_500)
        .map(|i| audit(&format!("e{i:05}"), "rs34", t0 + i, "Roles", "x"))
        .collect();
    s.insert_audit_now(&entries).await.unwrap();
    let audit_q = EventQuery {
        rs: vec!["rs34".into()],
        order_col: "created_at",
        desc: true,
        limit: 3,
        ..Default::default()
    };
    let page = s.query_events(EventTable::Audit, &audit_q).await.unwrap();
    assert!(page.estimated);
    assert!(near(page.total, 10_500), "{}", page.total);
    let one = EventQuery {
        eq: vec![("category", "roles".into())],
        from: Some(t0 + 10_000),
        ..audit_q
    };
    let page = s.query_events(EventTable::Audit, &one).await.unwrap();
    assert!(!page.estimated);
    assert_eq!(page.total, 500);
}

/// Issue 34: a database written by the build before request templates (migrations 1–5, request
/// rows holding their texts) migrates to 7 with nothing lost: its rows read as before (the same
/// expanded events, ids, `contextId`, ports), beside new rows that keep their texts in templates;
/// both sort, filter and search together, a log stream's cursor goes on from where it was, and a
/// single read finds either.
#[tokio::test]
async fn a_database_of_the_build_before_templates_migrates_with_nothing_lost() {
    use svc_server::events::shape::{AUTHORIZATION_EVENT, WORKLOAD_EVENT, expand};
    use svc_server::store::{RequestContext, RequestRow};
    let dir = crate::support::harness::temp_dir();
    let url = crate::support::harness::fresh_database(&dir).await;
    let sqlite = url.starts_with("sqlite:");
    sqlx::any::install_default_drivers();
    let pool = sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(&if sqlite { format!("{url}?mode=rwc") } else { url.clone() })
        .await
        .unwrap();
    let before: [&str; 5] = if sqlite {
        [
            include_str!("../../../migrations/sqlite/0001_init.sql"),
            include_str!("../../../migrations/sqlite/0002_event_rows.sql"),
            include_str!("../../../migrations/sqlite/0003_log_streams.sql"),
            include_str!("../../../migrations/sqlite/0004_edge_requests.sql"),
            include_str!("../../../migrations/sqlite/0005_request_rows_compact.sql"),
        ]
    } else {
        [
            include_str!("../../../migrations/postgres/0001_init.sql"),
            include_str!("../../../migrations/postgres/0002_event_rows.sql"),
            include_str!("../../../migrations/postgres/0003_log_streams.sql"),
            include_str!("../../../migrations/postgres/0004_edge_requests.sql"),
            include_str!("../../../migrations/postgres/0005_request_rows_compact.sql"),
        ]
    };
    // Each in a transaction of its own, as `store::migrate` applies them.
    // On one connection, statement by statement (comments dropped): SQLite's schema changes
    // through a pool of several connections did not take here.
    for (i, sql) in before.into_iter().enumerate() {
        let text: String = sql
            .lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .collect::<Vec<_>>()
            .join("\n");
        for stmt in text.split(";\n").map(str::trim).filter(|s| !s.is_empty()) {
            sqlx::raw_sql(sqlx::AssertSqlSafe(stmt.trim_end_matches(';').to_string()))
                .execute(&pool)
                .await
                .unwrap_or_else(|e| panic!("migration {}: {stmt}: {e}", i + 1));
        }
    }
    sqlx::raw_sql(
        "CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL);
         INSERT INTO schema_migrations (version, name, applied_at) VALUES
             (1, 'init', 0), (2, 'event_rows', 0), (3, 'log_streams', 0), (4, 'edge_requests', 0), (5, 'request_rows_compact', 0);",
    )
    .execute(&pool)
    .await
    .unwrap();
    let rs = uuid::Uuid::from_u128(0x77);
    let (cw, sw) = (uuid::Uuid::from_u128(0xc1), uuid::Uuid::from_u128(0x51));
    let t0 = 1_700_000_100_000i64;
    // A `/credentials` request as the build before stored it: ids, `contextId` and the client
    // port inside its texts.
    let old_first = svc_server::util::uuid_v7(t0);
    let old_ctx = uuid::Uuid::from_u128(0x0c);
    let meta = |first: Option<uuid::Uuid>| {
        let id = first.map(|f| format!(r#""id":"{f}","#)).unwrap_or_default();
        format!(
            r#"[{{{id}"t":"access.request","r":"Received"}},{{"t":"access.authorization","r":"Authorized"}},{{"t":"access.credential","r":"Authorized"}},{{"k":"w","t":"workload.credential","r":"CredentialIssued","cw":"{cw}","sw":"{sw}","p":"HTTP"}}]"#
        )
    };
    let bodies = |port: Option<u16>| {
        let port = port
            .map(|p| format!(r#""clientWorkloadPort":{p},"#))
            .unwrap_or_default();
        format!(
            r#"[{{}},{{"clientWorkload":{{"id":"{cw}","name":"Legacy-Job","result":"Identified"}}}},{{"credentialProvider":{{"id":"{sw}","name":"key","result":"Retrieved","type":"apikey"}}}},{{"network":{{{port}"serverWorkloadPort":443}},"outcome":{{"result":"Success"}}}}]"#
        )
    };
    let shared = |ctx: Option<uuid::Uuid>, port: Option<u16>| {
        let meta = ctx
            .map(|c| format!(r#""meta":{{"contextId":"{c}"}},"#))
            .unwrap_or_default();
        let port = port.map(|p| format!(r#""sourcePort":{p},"#)).unwrap_or_default();
        format!(
            r#"{{{meta}"clientRequest":{{"network":{{{port}"targetHost":"api.example","targetPort":443}}}},"environment":{{"oidc":{{"sub":"job"}}}}}}"#
        )
    };
    let stream = uuid::Uuid::from_u128(0x5a);
    let p = |n: usize| if sqlite { "?".to_string() } else { format!("${n}") };
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO edge_requests (rs, ts, na, nw, client_ip, meta, shared, bodies) VALUES ({}, {}, 3, 1, '10.1.1.1', {}, {}, {})",
        p(1),
        p(2),
        p(3),
        p(4),
        p(5)
    )))
    .bind(rs.to_string())
    .bind(t0)
    .bind(meta(Some(old_first)))
    .bind(shared(Some(old_ctx), Some(5001)))
    .bind(bodies(Some(5001)))
    .execute(&pool)
    .await
    .unwrap();
    // A stream that delivered nothing yet.
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO log_stream_cursors (stream, data_type, delivered, updated_at) VALUES ({}, 'AccessAuthorizationEvents', 0, 0)",
        p(1)
    )))
    .bind(stream.to_string())
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;

    let db = database_url(&url);
    let s = Store::open(&db).await.expect("migrates");
    // The same request stored now: its texts in a template, its own values in its row.
    let new_first = svc_server::util::uuid_v7(t0 + 10);
    let new_ctx = uuid::Uuid::from_u128(u128::MAX - 1);
    let row = RequestRow {
        rs,
        ts: t0 + 10,
        client_ip: Some("10.1.1.1".into()),
        shared: Some(shared(None, None).into()),
        meta: meta(None).into(),
        bodies: bodies(None).into(),
        authorization: 3,
        workload: 1,
        first_id: new_first,
        context: Some(RequestContext {
            context_id: new_ctx,
            source_port: 5002,
        }),
    };
    s.insert_requests(std::slice::from_ref(&row)).await.unwrap();

    let list = |table, order: &'static str, desc: bool, search: Option<&str>| {
        let q = EventQuery {
            rs: vec![rs.to_string()],
            order_col: order,
            desc,
            limit: 20,
            search: search.map(Into::into),
            ..Default::default()
        };
        let s = s.clone();
        async move { s.query_events(table, &q).await.unwrap() }
    };
    let expanded = |p: &QueryPage, shape| -> Vec<serde_json::Value> {
        p.bodies
            .iter()
            .zip(&p.columns)
            .map(|(b, c)| expand(serde_json::from_str(b).unwrap(), shape, c))
            .collect()
    };
    let a = list(EventTable::Authorization, "ts", false, None).await;
    assert_eq!(a.total, 6);
    let events = expanded(&a, AUTHORIZATION_EVENT);
    for (i, e) in events.iter().enumerate() {
        let (ctx, port, first) = if i < 3 {
            (old_ctx, 5001, old_first)
        } else {
            (new_ctx, 5002, new_first)
        };
        assert_eq!(e["meta"]["contextId"], ctx.to_string(), "{e}");
        assert_eq!(e["meta"]["directiveId"], ctx.to_string());
        assert_eq!(e["clientRequest"]["network"]["sourcePort"], port);
        assert_eq!(e["clientRequest"]["network"]["targetHost"], "api.example");
        assert_eq!(e["environment"]["oidc"]["sub"], "job");
        assert_eq!(e["meta"]["clientIP"], "10.1.1.1");
        assert_eq!(
            e["meta"]["eventId"],
            svc_server::store::nth_event_id(first, i % 3).to_string()
        );
    }
    // The old and the new request's events are the same but for their own values.
    let strip = |mut e: serde_json::Value| {
        for k in ["contextId", "directiveId", "eventId", "timestamp"] {
            e["meta"][k] = serde_json::Value::Null;
        }
        e["clientRequest"]["network"]["sourcePort"] = serde_json::Value::Null;
        e
    };
    for i in 0..3 {
        assert_eq!(strip(events[i].clone()), strip(events[i + 3].clone()));
    }
    let w = list(EventTable::Workload, "ts", false, None).await;
    let wl = expanded(&w, WORKLOAD_EVENT);
    assert_eq!(wl.len(), 2);
    assert_eq!(wl[0]["meta"]["connectionId"], old_ctx.to_string());
    assert_eq!(wl[0]["network"]["clientWorkloadPort"], 5001);
    assert_eq!(wl[1]["meta"]["connectionId"], new_ctx.to_string());
    assert_eq!(wl[1]["network"]["clientWorkloadPort"], 5002);
    assert_eq!(wl[1]["network"]["clientWorkloadIP"], "10.1.1.1");
    // Sorting on the values a new row holds in columns takes the old rows' from their texts.
    let ctx_desc = list(EventTable::Authorization, "context_id", true, None).await;
    assert_eq!(ctx_desc.columns[0]["context_id"], new_ctx.to_string());
    assert_eq!(ctx_desc.columns[5]["context_id"], old_ctx.to_string());
    let port_desc = list(EventTable::Workload, "source_port", true, None).await;
    assert_eq!(port_desc.columns[0]["source_port"], 5002);
    assert_eq!(port_desc.columns[1]["source_port"], 5001);
    // Filters and search see both.
    assert_eq!(
        list(EventTable::Authorization, "ts", false, Some("LEGACY-job"))
            .await
            .total,
        2
    );
    let typed = EventQuery {
        rs: vec![rs.to_string()],
        order_col: "ts",
        limit: 20,
        eq: vec![("event_type", "access.credential".into())],
        ..Default::default()
    };
    assert_eq!(
        s.query_events(EventTable::Authorization, &typed).await.unwrap().total,
        2
    );
    // The stream's cursor: every record, the old request's first.
    let cursor = s.stream_cursor(stream).await.unwrap().unwrap().delivered;
    let next = s
        .records_after(EventTable::Authorization, cursor, None, 10)
        .await
        .unwrap();
    let ids: Vec<String> = next
        .iter()
        .map(|r| r.columns["id"].as_str().unwrap().to_string())
        .collect();
    let want: Vec<String> = [old_first, new_first]
        .iter()
        .flat_map(|f| (0..3).map(|n| svc_server::store::nth_event_id(*f, n).to_string()))
        .collect();
    assert_eq!(ids, want);
    assert_eq!(next[3].columns["context_id"], new_ctx.to_string());
    assert_eq!(next[3].columns["source_port"], 5002);
    // Single reads.
    for id in [old_first, new_first] {
        let got = s
            .get_event(EventTable::Authorization, &id.to_string(), &[rs.to_string()])
            .await
            .unwrap();
        assert!(got.is_some(), "{id}");
    }
    s.close().await;
}

/// `q`'s page of `table` as the list reads it, and as the one-statement read over the event views
/// does (`EventQuery::one_statement`, the reference of the template reads).
async fn both_reads(s: &Store, table: EventTable, q: &EventQuery) -> (QueryPage, QueryPage) {
    let got = s.query_events(table, q).await.unwrap();
    let reference = EventQuery {
        one_statement: true,
        ..q.clone()
    };
    (got, s.query_events(table, &reference).await.unwrap())
}

/// A page's event ids, in order.
fn page_ids(p: &QueryPage) -> Vec<serde_json::Value> {
    p.columns.iter().map(|c| c["id"].clone()).collect()
}

/// Issue 34: the lists read through the request templates (`store::event_pages`: an `order` on a
/// field a template decides walks the templates in that order; a filter matching a few
/// templates reads only their rows) page exactly as one statement over the event views does
/// (`EventQuery::one_statement`): every sortable column and two body keys (one merged from the
/// request's shared part), both directions, with and without filters, windows and several
/// resource sets, rows written out of time order and ties within a millisecond; each group of
/// rows read through the template index or, over `few_rows`, in time order.
#[tokio::test]
async fn template_reads_page_as_one_statement_over_the_events_does() {
    use svc_server::store::{RequestContext, RequestRow};
    let (s, _dir) = open().await;
    let (rs, other) = (uuid::Uuid::from_u128(0x5e), uuid::Uuid::from_u128(0x5f));
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut rnd = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    // Body values of the key `k` ("" leaves it out): cases, numbers that compare equal, a boolean.
    let keys = [
        r#""alpha""#,
        r#""Alpha""#,
        r#""beta""#,
        "1",
        "1.0",
        "2",
        "true",
        "null",
        "",
    ];
    let ips = [Some("10.0.0.1"), Some("10.0.0.2"), None];
    let types = ["access.request", "access.authorization", "access.credential"];
    let base = 1_700_000_000_000i64;
    for chunk in 0..6 {
        let mut batch = Vec::new();
        for r in chunk * 25..chunk * 25 + 25 {
            // Twelve kinds of request (templates); times that tie and go back now and then.
            let kind = rnd(12) as usize;
            // Half a day between batches: the rows refer to the templates of three days.
            let ts = base + chunk as i64 * 43_200_000 + (r as i64 / 3) * 7 + rnd(3) as i64;
            let set = if rnd(8) == 0 { other } else { rs };
            let ip = ips[kind % 3];
            let first = svc_server::util::uuid_v7(ts);
            let mut events: Vec<EventRow> = (0..3)
                .map(|i| {
                    let k = keys[(kind + i) % keys.len()];
                    EventRow {
                        event_type: types[(kind + i) % 3],
                        severity: ["Info", "Warning"][(kind / 3 + i) % 2],
                        result: [Some("Authorized"), Some("denied"), None][(kind + 2 * i) % 3],
                        client_ip: ip.map(Into::into),
                        // Names (what `search` matches besides the columns) in some: stored
                        // with the template on PostgreSQL (migration 0011).
                        body: match (k.is_empty(), (kind + i) % 3) {
                            (true, _) => "{}".into(),
                            (false, 0) => format!("{{\"k\":{k},\"c\":{{\"name\":\"Alpine-{kind}\"}}}}").into(),
                            (false, _) => format!("{{\"k\":{k}}}").into(),
                        },
                        ..edge_event(
                            EventTable::Authorization,
                            svc_server::store::nth_event_id(first, i),
                            set,
                            ts,
                            None,
                        )
                    }
                })
                .collect();
            let k = keys[(kind + 5) % keys.len()];
            events.push(EventRow {
                severity: ["Info", "Warning"][kind % 2],
                result: [Some("CredentialIssued"), Some("denied"), None][kind % 3],
                client_ip: ip.map(Into::into),
                client_workload: Some(uuid::Uuid::from_u128(0xc0 + (kind % 4) as u128)),
                server_workload: Some(uuid::Uuid::from_u128(0x50 + (kind % 3) as u128)),
                app_protocol: Some(["HTTP", "gRPC"][kind % 2].into()),
                body: if k.is_empty() {
                    "{}".into()
                } else {
                    format!("{{\"k\":{k}}}").into()
                },
                ..edge_event(
                    EventTable::Workload,
                    svc_server::store::nth_event_id(first, 3),
                    set,
                    ts,
                    None,
                )
            });
            let shared = kind
                .is_multiple_of(2)
                .then(|| format!("{{\"environment\":{{\"sub\":\"S{}\"}}}}", kind % 4).into());
            // The request's `contextId` is its first event's id's (migration 0010) but in the
            // other resource set and the second batch, where it is stored as rows before that
            // migration stored it; in the first batch some rows have no client port (nor a
            // stored `contextId`). Windows holding such rows read as before, the others by the
            // request-value orders.
            let stored = set == other || chunk == 1;
            let context = RequestContext {
                context_id: if stored {
                    uuid::Uuid::from_u128(rnd(1000) as u128)
                } else {
                    svc_server::store::context_of(first)
                },
                source_port: 1000 + rnd(5) as u16,
            };
            let context = Some(context).filter(|_| !(chunk == 0 && r % 5 == 0));
            batch.extend(RequestRow::group(&events, shared.as_ref(), context));
        }
        s.insert_requests(&batch).await.unwrap();
    }
    // Each table: its sortable columns and body keys.
    type Sortable = (EventTable, &'static [&'static str], &'static [&'static [&'static str]]);
    let orders: &[Sortable] = &[
        (
            EventTable::Authorization,
            &[
                "event_type",
                "severity",
                "result",
                "client_ip",
                "id",
                "rs",
                "ts",
                "context_id",
                "source_port",
            ],
            &[&["k"], &["environment", "sub"]],
        ),
        (
            EventTable::Workload,
            &[
                "event_type",
                "action",
                "severity",
                "client_workload",
                "server_workload",
                "app_protocol",
                "client_ip",
                "id",
                "ts",
                "context_id",
                "source_port",
            ],
            &[&["k"]],
        ),
    ];
    let day = 86_400_000;
    let sets = [
        (vec![rs.to_string()], None, None),
        (vec![rs.to_string()], Some(base + 150), None),
        (
            vec![rs.to_string()],
            Some(base + day / 2 + 100),
            Some(base + 2 * day + 200),
        ),
        (vec![rs.to_string(), other.to_string()], None, Some(base + day + 300)),
        // Rows without a client port and derived ones only; derived ones only.
        (vec![rs.to_string()], None, Some(base + day / 2)),
        (vec![rs.to_string()], Some(base + day), None),
    ];
    let mut compared = 0;
    for (table, cols, paths) in orders {
        let filters: Vec<EventQuery> = vec![
            EventQuery::default(),
            EventQuery {
                eq: vec![("severity", "warning".into())],
                ..Default::default()
            },
            EventQuery {
                search: Some("ALP".into()),
                ..Default::default()
            },
            EventQuery {
                any_of: vec![("client_workload", vec![uuid::Uuid::from_u128(0xc1).to_string()])],
                ..Default::default()
            },
        ];
        let by: Vec<(&'static str, Option<Vec<&'static str>>)> = cols
            .iter()
            .map(|c| (*c, None))
            .chain(paths.iter().map(|p| ("ts", Some(p.to_vec()))))
            .collect();
        for filter in &filters {
            if *table == EventTable::Authorization && !filter.any_of.is_empty() {
                continue;
            }
            for (col, json) in &by {
                for desc in [false, true] {
                    for (sets, from, to) in &sets {
                        for (offset, limit, few_rows) in
                            [(0, 5, None), (3, 10, Some(0)), (17, 9, None), (0, 1000, Some(2))]
                        {
                            let q = EventQuery {
                                few_rows,
                                rs: sets.clone(),
                                from: *from,
                                to: *to,
                                order_col: col,
                                order_json: json.clone(),
                                desc,
                                offset,
                                limit,
                                ..filter.clone()
                            };
                            let (got, want) = both_reads(&s, *table, &q).await;
                            let what = format!(
                                "{table:?} by {col} {json:?} desc {desc} {offset}+{limit} {sets:?} {from:?}..{to:?} {filter:?}"
                            );
                            assert_eq!(got.bodies, want.bodies, "{what}");
                            assert_eq!(page_ids(&got), page_ids(&want), "{what}");
                            assert_eq!((got.total, got.estimated), (want.total, want.estimated), "{what}");
                            compared += usize::from(!want.bodies.is_empty());
                        }
                    }
                }
            }
        }
    }
    assert!(compared > 500, "only {compared} non-empty pages compared");
}

/// Audit lists at scale (issue 34, migration 0009) answer as the lists always did, on both
/// databases: every sortable field in both directions (few matches sorted, more than 10,000 read
/// off the field's index), body fields with nulls, and searches through the trigram index, of
/// fewer than three characters, and with `%` and `_`.
#[tokio::test]
async fn audit_lists_read_through_their_indexes_answer_as_before() {
    let (s, _dir) = open().await;
    let pick = |vals: &[Option<&'static str>], i: usize| vals[i % vals.len()].map(str::to_string);
    let targets = [
        None,
        Some("alpha"),
        Some("Alpha"),
        Some("beta"),
        Some("ALPHA"),
        Some("b"),
    ];
    let names = [Some("zed"), None, Some("Zed"), Some("amy"), Some("Amy"), Some("bo")];
    let reasons = [None, None, None, Some("Denied"), Some("denied")];
    let agents = [None, Some("curl/8"), Some("Curl/8"), Some("Mozilla/5.0")];
    let mut rows = Vec::new();
    for i in 0..10_050usize {
        let rs = if i % 500 == 7 { "rs-other" } else { "rs-audit" };
        let id = uuid::Uuid::new_v4().to_string();
        let target = pick(&targets, i);
        let user = pick(&names, i / 2);
        let reason = pick(&reasons, i / 3);
        let agent = pick(&agents, i / 5);
        let category = ["Roles", "Users", "AgentControllers"][i % 3];
        let special = if i % 1000 == 0 { " 100%_done" } else { "" };
        let search = format!(
            "patched\n{}\n{}\nentry-{i:05}{special}",
            target.as_deref().unwrap_or(""),
            category
        )
        .to_lowercase();
        let body = serde_json::json!({
            "externalId": id, "resourceSetId": rs, "category": category, "target": target,
            "actor": {"userName": user, "accessPolicyId": null},
            "client": {"userAgent": {"raw": agent}},
            "outcome": {"reason": reason},
        });
        let mut a = audit(&id, rs, 1_000 + (i / 2) as i64, category, &search);
        a.target = target;
        a.actor_email = pick(&[Some("a@x.test"), Some("B@x.test"), None], i / 7);
        a.body = body.to_string();
        rows.push(a);
    }
    for chunk in rows.chunks(2_000) {
        s.insert_audit_now(chunk).await.unwrap();
    }
    let mine: Vec<&AuditRow> = rows.iter().filter(|r| r.rs == "rs-audit").collect();
    let body_of = |r: &AuditRow| serde_json::from_str::<serde_json::Value>(&r.body).unwrap();
    let ids = |p: &QueryPage| -> Vec<String> {
        p.bodies
            .iter()
            .map(|b| json(b)["externalId"].as_str().unwrap().to_string())
            .collect()
    };
    // docs/API-CONVENTIONS.md, Lists: null lowest, strings case-insensitively then exactly,
    // ties on externalId ascending in both directions (ASCII values: both databases agree).
    let expected = |key: &dyn Fn(&AuditRow) -> Option<String>, desc: bool, keep: &dyn Fn(&AuditRow) -> bool| {
        let mut v: Vec<&AuditRow> = mine.iter().copied().filter(|r| keep(r)).collect();
        v.sort_by(|a, b| {
            let (ka, kb) = (key(a), key(b));
            let c = ka
                .as_ref()
                .map(|s| s.to_ascii_lowercase())
                .cmp(&kb.as_ref().map(|s| s.to_ascii_lowercase()))
                .then(ka.cmp(&kb));
            (if desc { c.reverse() } else { c }).then(a.id.cmp(&b.id))
        });
        v.into_iter().map(|r| r.id.clone()).collect::<Vec<_>>()
    };
    type KeyFn = Box<dyn Fn(&AuditRow) -> Option<String>>;
    let path = |p: &'static [&'static str]| -> KeyFn {
        Box::new(move |r: &AuditRow| {
            let mut v = body_of(r);
            for k in p {
                v = v[*k].take();
            }
            v.as_str().map(str::to_string)
        })
    };
    let fields: Vec<(&'static str, Option<Vec<&'static str>>, KeyFn)> = vec![
        ("target", None, Box::new(|r: &AuditRow| r.target.clone())),
        ("actor_email", None, Box::new(|r: &AuditRow| r.actor_email.clone())),
        ("category", None, Box::new(|r: &AuditRow| Some(r.category.clone()))),
        ("id", None, Box::new(|r: &AuditRow| Some(r.id.clone()))),
        ("rs", None, Box::new(|r: &AuditRow| Some(r.rs.clone()))),
        (
            "created_at",
            None,
            Box::new(|r: &AuditRow| Some(format!("{:020}", r.created_at))),
        ),
        (
            "created_at",
            Some(vec!["actor", "userName"]),
            path(&["actor", "userName"]),
        ),
        (
            "created_at",
            Some(vec!["outcome", "reason"]),
            path(&["outcome", "reason"]),
        ),
        (
            "created_at",
            Some(vec!["client", "userAgent", "raw"]),
            path(&["client", "userAgent", "raw"]),
        ),
        (
            "created_at",
            Some(vec!["actor", "accessPolicyId"]),
            path(&["actor", "accessPolicyId"]),
        ),
        (
            "created_at",
            Some(vec!["target"]),
            Box::new(|r: &AuditRow| r.target.clone()),
        ),
    ];
    let base = EventQuery {
        rs: vec!["rs-audit".into()],
        order_col: "created_at",
        desc: true,
        limit: 30,
        ..Default::default()
    };
    for (col, json_path, key) in &fields {
        for desc in [false, true] {
            // Unfiltered (more than 10,000: estimated) and one category (a third: exact).
            for category in [None, Some("ROLES")] {
                let keep = |r: &AuditRow| category.is_none_or(|c| r.category.eq_ignore_ascii_case(c));
                let want = expected(key.as_ref(), desc, &keep);
                for offset in [0usize, 3_000] {
                    let q = EventQuery {
                        order_col: col,
                        order_json: json_path.clone(),
                        desc,
                        offset: offset as i64,
                        eq: category.map(|c| vec![("category", c.to_string())]).unwrap_or_default(),
                        ..base.clone()
                    };
                    let page = s.query_events(EventTable::Audit, &q).await.unwrap();
                    let end = (offset + 30).min(want.len());
                    assert_eq!(
                        ids(&page),
                        want[offset.min(end)..end].to_vec(),
                        "{col} {json_path:?} desc {desc} category {category:?} offset {offset}"
                    );
                    assert_eq!(page.estimated, category.is_none(), "{col} {json_path:?}");
                    if category.is_some() {
                        assert_eq!(page.total, want.len() as i64);
                    }
                }
            }
        }
    }
    // Searches: through the trigram index (few candidates), without it (fewer than three
    // characters; more than 10,000 candidates), with LIKE's wildcards taken literally.
    for (search, estimated) in [
        ("entry-0042", false),
        ("ENTRY-0004", false),
        ("%_d", false),
        ("0%_", false),
        ("%", false),
        ("_", false),
        ("y-", true),
        ("entry", true),
        ("zz-nothing", false),
        ("ha\nro", false),
        ("alpha\nroles\nentry-0", false),
    ] {
        let want: Vec<&AuditRow> = mine
            .iter()
            .copied()
            .filter(|r| r.search.contains(&search.to_lowercase()))
            .collect();
        let q = EventQuery {
            search: Some(search.into()),
            limit: 20,
            ..base.clone()
        };
        let page = s.query_events(EventTable::Audit, &q).await.unwrap();
        assert_eq!(page.estimated, estimated, "{search:?}");
        if !estimated {
            assert_eq!(page.total, want.len() as i64, "{search:?}");
        }
        let mut newest: Vec<&AuditRow> = want.clone();
        newest.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
        let want_ids: Vec<String> = newest.iter().take(20).map(|r| r.id.clone()).collect();
        assert_eq!(ids(&page), want_ids, "{search:?}");
    }
    // A search with an order: the few matches sorted on the field.
    let q = EventQuery {
        search: Some("entry-0042".into()),
        order_col: "target",
        desc: true,
        ..base.clone()
    };
    let page = s.query_events(EventTable::Audit, &q).await.unwrap();
    let want = expected(&|r: &AuditRow| r.target.clone(), true, &|r: &AuditRow| {
        r.search.contains("entry-0042")
    });
    assert_eq!(ids(&page), want);
    // Retention keeps the trigram index in step: a purged entry is found no more.
    assert!(s.purge_events(1_000 + 100).await.unwrap() > 0);
    let q = EventQuery {
        search: Some("entry-00042".into()),
        ..base.clone()
    };
    assert_eq!(s.query_events(EventTable::Audit, &q).await.unwrap().total, 0);
    let q = EventQuery {
        search: Some("entry-00420".into()),
        ..base.clone()
    };
    assert_eq!(s.query_events(EventTable::Audit, &q).await.unwrap().total, 1);
}

/// A request's `contextId` is its first event's id with one hex digit changed (migration 0010,
/// `store::context_of`), not stored in its row: the lists, one event and the log streams' records
/// read the same value for its authorization and workload events, and a request's second row
/// (past the events a row holds, with ids of its own) keeps the request's.
#[tokio::test]
async fn a_context_id_derived_from_the_first_event_id_reads_alike_everywhere() {
    use svc_server::store::{EVENTS_PER_REQUEST, RequestContext, RequestRow, context_of, nth_event_id};
    let (s, _dir) = open().await;
    let rs = uuid::Uuid::from_u128(0x7c);
    let ts = 1_700_000_200_000i64;
    let first = svc_server::util::uuid_v7(ts);
    let ctx = context_of(first);
    assert_eq!(ctx.get_version_num(), 7);
    assert_eq!(ctx.as_bytes()[..6], first.as_bytes()[..6], "the time it carries");
    assert!((0..EVENTS_PER_REQUEST).all(|n| nth_event_id(first, n) != ctx));
    // One more event than a row holds: the last goes to a second row, whose first id is new.
    let second = svc_server::util::uuid_v7(ts);
    let events: Vec<EventRow> = (0..=EVENTS_PER_REQUEST)
        .map(|i| {
            let (table, id) = match i {
                i if i == EVENTS_PER_REQUEST => (EventTable::Workload, second),
                i => (EventTable::Authorization, nth_event_id(first, i)),
            };
            edge_event(table, id, rs, ts, None)
        })
        .collect();
    let context = RequestContext {
        context_id: ctx,
        source_port: 40_123,
    };
    s.insert_requests(&RequestRow::group(&events, None, Some(context)))
        .await
        .unwrap();
    let want = serde_json::Value::String(ctx.to_string());
    for table in [EventTable::Authorization, EventTable::Workload] {
        let q = EventQuery {
            rs: vec![rs.to_string()],
            order_col: "context_id",
            limit: 50,
            ..Default::default()
        };
        let page = s.query_events(table, &q).await.unwrap();
        assert!(!page.columns.is_empty());
        for c in &page.columns {
            assert_eq!(c["context_id"], want, "{table:?}");
            assert_eq!(c["source_port"], 40_123, "{table:?}");
        }
        let records = s.records_after(table, -1, None, 50).await.unwrap();
        assert_eq!(records.len(), page.columns.len(), "{table:?}");
        for r in &records {
            assert_eq!(r.columns["context_id"], want, "{table:?} stream record");
        }
    }
}

/// The templates sorted for an `order` are kept (`event_pages::OrderCache`) until the templates
/// of the window's days change: a list read after new kinds of request were stored, and after
/// retention dropped a day, still answers as the one-statement read does; a sort used lately is
/// made again in the background when its days gain a template, and the next list uses it.
#[tokio::test]
async fn sorted_templates_are_read_again_when_templates_are_added_or_purged() {
    use svc_server::store::{RequestContext, RequestRow, context_of};
    let (s, _dir) = open().await;
    let rs = uuid::Uuid::from_u128(0x7d);
    let day = 86_400_000i64;
    let base = 1_700_006_400_000i64 - 1_700_006_400_000i64 % day;
    // One request with one event of `table` whose body's `k` is `k`.
    let store_in = |table: EventTable, ts: i64, k: &'static str| {
        let s = s.clone();
        async move {
            let first = svc_server::util::uuid_v7(ts);
            let e = EventRow {
                body: format!("{{\"k\":\"{k}\"}}").into(),
                ..edge_event(table, first, rs, ts, None)
            };
            let context = RequestContext {
                context_id: context_of(first),
                source_port: 1000,
            };
            s.insert_requests(&RequestRow::group(&[e], None, Some(context)))
                .await
                .unwrap();
        }
    };
    let store = |ts: i64, k: &'static str| store_in(EventTable::Authorization, ts, k);
    let compare = |what: &'static str| {
        let s = s.clone();
        async move {
            for desc in [false, true] {
                let q = EventQuery {
                    rs: vec![rs.to_string()],
                    order_col: "ts",
                    order_json: Some(vec!["k"]),
                    desc,
                    limit: 50,
                    ..Default::default()
                };
                let (got, want) = both_reads(&s, EventTable::Authorization, &q).await;
                assert_eq!(got.bodies, want.bodies, "{what}, desc {desc}");
                assert!(!want.bodies.is_empty(), "{what}");
            }
        }
    };
    store(base + 10, "m").await;
    store(base + 20, "c").await;
    compare("first read").await;
    // Read again with nothing changed: the sorts are kept.
    let sorts = s.template_sorts();
    compare("read again").await;
    assert_eq!(s.template_sorts(), sorts, "a list read again sorted again");
    // Everything dropped, then as many templates of other content (on SQLite, with the same ids),
    // which sort the other way round.
    s.purge_events(base + 10 * day).await.unwrap();
    store(base + 30, "a0").await;
    store(base + 40, "z0").await;
    compare("templates of other content under the same ids").await;
    // New kinds of request: templates before and after the others in the order.
    store(base + 30, "a").await;
    store(base + 40, "z").await;
    compare("after new templates").await;
    // Another: the sort is made again in the background, and the next list finds it.
    store(base + 50, "n").await;
    // The sorts of both directions.
    assert_eq!(s.refresh_template_sorts().await.unwrap(), 2, "the sorts used lately");
    assert_eq!(s.refresh_template_sorts().await.unwrap(), 0, "nothing new since");
    let sorts = s.template_sorts();
    compare("after a new template sorted in the background").await;
    assert_eq!(s.template_sorts(), sorts, "a list sorted what the background had");
    // Sorted again only once a list has used the sort since: the lists above did, no list since.
    store(base + 60, "o").await;
    assert_eq!(s.refresh_template_sorts().await.unwrap(), 2, "used by the lists since");
    store(base + 70, "p").await;
    assert_eq!(s.refresh_template_sorts().await.unwrap(), 0, "no list since");
    compare("after a template no background sort has").await;
    // The next day's requests, then the first day dropped by retention.
    store(base + day + 10, "b").await;
    compare("a second day").await;
    s.purge_events(base + day).await.unwrap();
    compare("after the purge").await;
    store(base + day + 20, "y").await;
    compare("after the purge and a new template").await;
    // Workload events: their sort keeps too, though most of the window's templates (these
    // requests') have no workload event.
    store_in(EventTable::Workload, base + day + 30, "w").await;
    let q = EventQuery {
        rs: vec![rs.to_string()],
        order_col: "ts",
        order_json: Some(vec!["k"]),
        limit: 50,
        ..Default::default()
    };
    assert_eq!(s.query_events(EventTable::Workload, &q).await.unwrap().bodies.len(), 1);
    let sorts = s.template_sorts();
    assert_eq!(s.query_events(EventTable::Workload, &q).await.unwrap().bodies.len(), 1);
    assert_eq!(s.template_sorts(), sorts, "a workload list read again sorted again");
}

/// A filter matching more than `EXACT_TOTAL` rows tells the page read its matches are dense
/// (read in order off the window rather than through `(rs, tpl, ts)` and sorted): every order
/// that read serves answers as the one-statement read does, with the total estimated.
#[tokio::test]
async fn a_filter_matching_more_than_ten_thousand_rows_pages_as_the_one_statement_read() {
    use svc_server::store::{EXACT_TOTAL, RequestContext, RequestRow, context_of};
    let (s, _dir) = open().await;
    let rs = uuid::Uuid::from_u128(0x7e);
    let base = 1_700_010_000_000i64;
    let mut batch = Vec::new();
    let rows = EXACT_TOTAL as usize + 1_500;
    for r in 0..rows {
        // Two requests a millisecond; every tenth of another kind (a template of its own).
        let ts = base + (r / 2) as i64;
        let first = svc_server::util::uuid_v7(ts);
        let e = EventRow {
            severity: if r % 10 == 0 { "Info" } else { "Warning" },
            ..edge_event(EventTable::Authorization, first, rs, ts, None)
        };
        let context = RequestContext {
            context_id: context_of(first),
            source_port: 2000 + (r * 7 % 13) as u16,
        };
        batch.extend(RequestRow::group(&[e], None, Some(context)));
        if batch.len() == 1_000 {
            s.insert_requests(&batch).await.unwrap();
            batch.clear();
        }
    }
    s.insert_requests(&batch).await.unwrap();
    for order in ["ts", "id", "context_id", "source_port"] {
        for desc in [false, true] {
            for offset in [0, 37, EXACT_TOTAL - 5] {
                let q = EventQuery {
                    rs: vec![rs.to_string()],
                    order_col: order,
                    desc,
                    offset,
                    limit: 25,
                    eq: vec![("severity", "warning".into())],
                    ..Default::default()
                };
                let (got, want) = both_reads(&s, EventTable::Authorization, &q).await;
                let what = format!("by {order} desc {desc} from {offset}");
                assert_eq!(got.bodies.len(), 25, "{what}");
                assert_eq!(got.bodies, want.bodies, "{what}");
                assert_eq!(page_ids(&got), page_ids(&want), "{what}");
                assert!(got.estimated && got.total > EXACT_TOTAL, "{what}: {}", got.total);
            }
        }
    }
}

/// A list ordered on the client port (PostgreSQL: read per resource set through its index,
/// migration 0012; SQLite: the window's rows sorted, or read through the rows kept by port,
/// `store::ports`) pages as the one-statement read does: both event tables, both directions,
/// offsets, windows over three days and two resource sets, rows written late, ports that tie and
/// rows of one time and port, before and after a purge, rows deleted behind the store's back, a
/// batch rolled back whose row ids the next batch takes (the same rows in the other set), and a
/// row written late into a day retention passed.
#[tokio::test]
async fn a_list_ordered_on_the_client_port_pages_as_the_one_statement_read() {
    // Without the rows kept by port (PostgreSQL's only way: its index); then on SQLite keeping
    // 30 rows at each end of a day (a first page of 7 or 25 rows reads them, sorting a day's
    // rows where they do not reach) read back in stretches of 40 rows, keeping 1,000 (every day
    // whole), and keeping 1,000 in 2 parts at most (the oldest days' stop keeping); keeping 8
    // read back in stretches of 20 (a stretch's two ends leave rows of it out).
    if lists_ordered_on_the_client_port(None).await {
        for sizes in [
            (8, 1_024, 20),
            (30, 1_024, 40),
            (1_000, 1_024, 250_000),
            (1_000, 2, 250_000),
        ] {
            lists_ordered_on_the_client_port(Some(sizes)).await;
        }
    }
}

/// One run of `a_list_ordered_on_the_client_port_pages_as_the_one_statement_read`, with the rows
/// kept by port of `sizes` (kept, parts, stretch) on SQLite; returns whether it was SQLite.
async fn lists_ordered_on_the_client_port(sizes: Option<(usize, usize, usize)>) -> bool {
    use svc_server::store::{RequestContext, RequestRow, context_of};
    let (s, url, _dir) = open_at().await;
    let sqlite = url.starts_with("sqlite:");
    let sketch = sizes.is_some() && sqlite;
    let (a, b) = (uuid::Uuid::from_u128(0x9a), uuid::Uuid::from_u128(0x9b));
    let day = 86_400_000;
    // The start of a UTC day, and rows every ~20 minutes for three days; some written late.
    let base = 19_700 * day;
    // Request `r`'s rows (in the other set when `swap`).
    let write = |from: usize, to: usize, swap: bool| {
        let mut batch = Vec::new();
        for r in from..to {
            let back = if r % 11 == 0 { 3_600_000 } else { 0 };
            let ts = base + r as i64 * 1_200_000 - back;
            let first = svc_server::util::uuid_v7(ts);
            let set = if (r % 3 == 0) != swap { b } else { a };
            // Four kinds of request (templates).
            let body: std::sync::Arc<str> = format!("{{\"k\":{}}}", r % 4).into();
            let events = [
                EventRow {
                    body: body.clone(),
                    ..edge_event(EventTable::Authorization, first, set, ts, None)
                },
                EventRow {
                    body: body.clone(),
                    ..edge_event(
                        EventTable::Workload,
                        svc_server::store::nth_event_id(first, 1),
                        set,
                        ts,
                        None,
                    )
                },
            ];
            let context = RequestContext {
                context_id: context_of(first),
                // Ports tie across rows and days.
                source_port: 40_000 + (r * 7 % 17) as u16,
            };
            batch.extend(RequestRow::group(&events, None, Some(context)));
            // Every ninth request has a twin of the same time and port in each set: only the
            // order written tells them apart.
            if r % 9 == 0 {
                for set in [a, b] {
                    let twin = svc_server::util::uuid_v7(ts);
                    let events = [EventRow {
                        body: body.clone(),
                        ..edge_event(EventTable::Authorization, twin, set, ts, None)
                    }];
                    let context = RequestContext {
                        context_id: context_of(twin),
                        ..context
                    };
                    batch.extend(RequestRow::group(&events, None, Some(context)));
                }
            }
        }
        batch
    };
    // Some rows before the rows by port are read from the database, the rest fed as written.
    s.insert_requests(&write(0, 90, false)).await.unwrap();
    if let (Some((keep, parts, stretch)), true) = (sizes, sketch) {
        s.size_port_sketch(keep, parts, stretch);
        assert!(s.build_port_sketch().await.unwrap());
    }
    s.insert_requests(&write(90, 216, false)).await.unwrap();
    port_pages(&s, (a, b), base, "written").await;
    let (read, sorted) = s.port_sketch_reads();
    assert_eq!(read > 0, sketch, "{sizes:?}: lists read through the rows kept by port");
    // Keeping 8, a page that reads the sketch (7 rows) may or may not sort a day.
    if !matches!(sizes, Some((8, _, _))) {
        let some_sorted = matches!(sizes, Some((30, _, _) | (_, 2, _)));
        assert_eq!(sorted > 0, some_sorted && sketch, "{sizes:?}: days sorted");
    }
    // Retention deletes the rows before noon of the second day.
    s.purge_events(base + day + day / 2).await.unwrap();
    port_pages(&s, (a, b), base, "after a purge").await;
    // Rows gone behind the store's back (every fifth of the third day's, those the ends keep
    // among them): a list does not show them, and finds the rows after them.
    let raw = sqlx::AnyPool::connect(&url).await.unwrap();
    sqlx::query("DELETE FROM edge_requests WHERE ts >= $1 AND seq % 5 = 0")
        .bind(base + 2 * day)
        .execute(&raw)
        .await
        .unwrap();
    port_pages(&s, (a, b), base, "rows deleted").await;
    if sqlite {
        // A batch fed, then rolled back (its rows gone, `AUTOINCREMENT` set back), and the next
        // batch takes its row ids: the same requests in the other resource set (same time, port
        // and template). The kept rows of the first are not shown, in either set.
        let last: i64 = sqlx::query_scalar("SELECT MAX(seq) FROM edge_requests")
            .fetch_one(&raw)
            .await
            .unwrap();
        s.insert_requests(&write(216, 228, false)).await.unwrap();
        for table in ["edge_requests", "edge_request_tpls"] {
            sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM {table} WHERE seq > $1")))
                .bind(last)
                .execute(&raw)
                .await
                .unwrap();
        }
        sqlx::query("UPDATE sqlite_sequence SET seq = $1 WHERE name = 'edge_requests'")
            .bind(last)
            .execute(&raw)
            .await
            .unwrap();
        s.insert_requests(&write(216, 228, true)).await.unwrap();
        port_pages(&s, (a, b), base, "a batch rolled back, its ids taken").await;
    }
    // A row written late into the first day, which retention passed (the list sorts those days).
    s.insert_requests(&write(5, 6, false)).await.unwrap();
    port_pages(&s, (a, b), base, "a row late into a day retention passed").await;
    assert!(s.port_sketch_reads().0 > read || !sketch);
    sqlite
}

/// Pages ordered on the client port, read as the lists do and as the one-statement read does
/// (see `a_list_ordered_on_the_client_port_pages_as_the_one_statement_read`).
async fn port_pages(s: &Store, (a, b): (uuid::Uuid, uuid::Uuid), base: i64, what: &str) {
    let day = 86_400_000;
    let sets = [
        (vec![a.to_string()], None, None),
        (vec![a.to_string(), b.to_string()], None, None),
        (vec![b.to_string()], Some(base + day / 2), Some(base + 2 * day + 7)),
        (vec![a.to_string(), b.to_string()], Some(base + day), None),
        (vec![a.to_string()], None, Some(base + day)),
    ];
    let mut compared = 0;
    for table in [EventTable::Authorization, EventTable::Workload] {
        for desc in [false, true] {
            for (rs, from, to) in &sets {
                for (offset, limit) in [(0, 7), (5, 20), (60, 30), (0, 500)] {
                    let q = EventQuery {
                        few_rows: Some(0),
                        rs: rs.clone(),
                        from: *from,
                        to: *to,
                        order_col: "source_port",
                        desc,
                        offset,
                        limit,
                        ..Default::default()
                    };
                    let (got, want) = both_reads(s, table, &q).await;
                    let at = format!("{what}: {table:?} desc {desc} {offset}+{limit} {rs:?} {from:?}..{to:?}");
                    assert_eq!(page_ids(&got), page_ids(&want), "{at}");
                    assert_eq!(got.bodies, want.bodies, "{at}");
                    compared += usize::from(!want.bodies.is_empty());
                }
            }
        }
    }
    assert!(compared > 30, "{what}: only {compared} non-empty pages");
}

/// Migration 0012 builds PostgreSQL's port index concurrently, outside a transaction, and
/// records itself after: a run cut short after the build (the index there, the migration not
/// recorded) runs again at the next start and ends with one valid index.
#[tokio::test]
async fn a_port_index_migration_cut_short_runs_again() {
    let dir = crate::support::harness::temp_dir();
    let url = crate::support::harness::fresh_database(&dir).await;
    let db = database_url(&url);
    let s = Store::open_through(&db, 12).await.expect("open store at 12");
    let raw = sqlx::AnyPool::connect(&url).await.unwrap();
    sqlx::query("DELETE FROM schema_migrations WHERE version = 12")
        .execute(&raw)
        .await
        .unwrap();
    drop(s);
    let s = Store::open(&db).await.expect("open store again");
    let versions: Vec<i64> = sqlx::query_scalar("SELECT version FROM schema_migrations WHERE version = 12")
        .fetch_all(&raw)
        .await
        .unwrap();
    assert_eq!(versions, [12]);
    if s.keeps_port_index() {
        let valid: Vec<bool> = sqlx::query_scalar(
            "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             WHERE c.relname = 'edge_requests_port'",
        )
        .fetch_all(&raw)
        .await
        .unwrap();
        assert_eq!(valid, [true]);
    }
}

/// Retention deletes a request row's entry in the templates' rows (SQLite's `edge_request_tpls`,
/// migration 0013, purged in its own order) with the row, and no other: after a purge held back
/// by a log stream's floor, after a purge cut short between the two tables (the next one deletes
/// what it left), and after one of every old row, each entry is exactly a templated row's
/// (template, time, resource set), more than a chunk of them gone each time. The lists read
/// through them page as the one-statement read.
#[tokio::test]
async fn retention_deletes_each_template_row_with_its_request_row() {
    let (s, url, _dir) = open_at().await;
    let raw = sqlx::AnyPool::connect(&url).await.unwrap();
    let (a, b) = (uuid::Uuid::from_u128(0x7a), uuid::Uuid::from_u128(0x7b));
    let day = 86_400_000;
    let base = 19_800 * day;
    // 6,000 requests over three days, a minute apart in each set, every 13th written an hour
    // late; one kind of request a day in set a (a template of ~1,500 rows, over SQLite's purge
    // chunk), five in set b (templates).
    for chunk in 0..12 {
        let mut batch = Vec::new();
        for r in chunk * 500..chunk * 500 + 500 {
            let back = if r % 13 == 0 { 3_600_000 } else { 0 };
            let ts = base + r as i64 * 43_200 - back;
            let set = if r % 4 == 0 { b } else { a };
            batch.push(EventRow {
                body: format!("{{\"k\":{}}}", if set == a { 0 } else { r % 5 }).into(),
                ..edge_event(EventTable::Authorization, svc_server::util::uuid_v7(ts), set, ts, None)
            });
        }
        s.insert_events(&batch).await.unwrap();
    }
    let sqlite = url.starts_with("sqlite:");
    // The templated rows' count; on SQLite every entry is one of theirs, with its values
    // (PostgreSQL reads the rows themselves).
    let pool = &raw;
    let entries = || async move {
        let rows = "SELECT seq, tpl, ts, rs FROM edge_requests WHERE tpl IS NOT NULL ORDER BY seq";
        let entries = if sqlite {
            "SELECT seq, tpl, ts, rs FROM edge_request_tpls ORDER BY seq"
        } else {
            rows
        };
        let read = |sql: &'static str| async move {
            sqlx::query(sql)
                .fetch_all(pool)
                .await
                .unwrap()
                .iter()
                .map(|r| {
                    use sqlx::Row;
                    (
                        r.get::<i64, _>(0),
                        r.get::<i64, _>(1),
                        r.get::<i64, _>(2),
                        r.get::<String, _>(3),
                    )
                })
                .collect::<Vec<_>>()
        };
        let (rows, entries) = (read(rows).await, read(entries).await);
        let odd = rows.iter().zip(&entries).find(|(r, e)| r != e);
        assert!(
            rows == entries,
            "{} rows, {} entries, first odd {odd:?}",
            rows.len(),
            entries.len()
        );
        rows.len()
    };
    let lists = |what: &'static str| {
        let s = s.clone();
        async move {
            for rs in [vec![a.to_string()], vec![a.to_string(), b.to_string()]] {
                for (from, to) in [(None, None), (Some(base + day), Some(base + 2 * day))] {
                    for q in [
                        EventQuery {
                            eq: vec![("event_type", "access.credential".into())],
                            ..Default::default()
                        },
                        EventQuery {
                            order_col: "event_type",
                            ..Default::default()
                        },
                    ] {
                        let q = EventQuery {
                            rs: rs.clone(),
                            from,
                            to,
                            limit: 50,
                            few_rows: Some(100_000),
                            ..q
                        };
                        let (got, want) = both_reads(&s, EventTable::Authorization, &q).await;
                        assert_eq!(page_ids(&got), page_ids(&want), "{what}: {rs:?} {from:?}..{to:?}");
                        assert_eq!(got.total, want.total, "{what}: {rs:?} {from:?}..{to:?}");
                    }
                }
            }
        }
    };
    assert_eq!(entries().await, 6_000);
    lists("written").await;
    // Noon of the second day is after the first 3,000 requests (and 7 written late). A stream
    // has delivered up to the 2,500th: the purge stops there.
    let noon = base + day + day / 2;
    let floor: i64 = sqlx::query_scalar("SELECT seq FROM edge_requests ORDER BY seq LIMIT 1 OFFSET 2499")
        .fetch_one(&raw)
        .await
        .unwrap();
    let floors = [(EventTable::Authorization, floor * 16 + 15)];
    assert_eq!(s.purge_events_through(noon, &floors).await.unwrap(), 2_500);
    assert_eq!(entries().await, 3_500);
    lists("purged to a stream's floor").await;
    // A purge cut short between the tables: the next 300 rows gone from `edge_requests` only.
    sqlx::query("DELETE FROM edge_requests WHERE seq IN (SELECT seq FROM edge_requests ORDER BY seq LIMIT 300)")
        .execute(&raw)
        .await
        .unwrap();
    assert_eq!(s.purge_events(noon).await.unwrap(), 207);
    assert_eq!(entries().await, 2_993);
    lists("after a purge cut short").await;
    // Every row of the first two days, 7 of them written late into the third.
    assert_eq!(s.purge_events(base + 2 * day).await.unwrap(), 1_000);
    assert_eq!(entries().await, 1_993);
    lists("purged to the third day").await;
}

/// The names of `edge_requests`' partitions (PostgreSQL; none on SQLite) and of the day tables
/// left detached.
async fn request_days(raw: &sqlx::AnyPool, pg: bool) -> (Vec<String>, Vec<String>) {
    if !pg {
        return (Vec::new(), Vec::new());
    }
    let attached = sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid \
         WHERE i.inhparent = 'edge_requests'::regclass ORDER BY 1",
    )
    .fetch_all(raw)
    .await
    .unwrap();
    let detached = sqlx::query_scalar(
        "SELECT relname::text FROM pg_class WHERE relkind = 'r' AND NOT relispartition \
         AND relname LIKE 'edge_requests_p%' ORDER BY 1",
    )
    .fetch_all(raw)
    .await
    .unwrap();
    (attached, detached)
}

/// Retention by the day (issue 34, migration 0014): on PostgreSQL `edge_requests` holds a
/// partition per UTC day, made ahead at start and by the event writer for a day it has not seen,
/// and a purge drops a day wholly before its cutoff (detached concurrently); rows a log stream
/// holds back, and a cutoff inside a day, are deleted as rows; a detach cut short is finished
/// first (another day old too), and a day cut short that is not old is attached again; a day's
/// table left detached goes once its day is old; a row written late into a dropped day gets its
/// partition again, also after another node dropped it. Each purge's count, and every list, is
/// the same on SQLite, which deletes rows.
#[tokio::test]
async fn retention_drops_each_day_whole_and_deletes_what_a_day_cannot_lose() {
    let (s, url, _dir) = open_at().await;
    let raw = sqlx::AnyPool::connect(&url).await.unwrap();
    let pg = !url.starts_with("sqlite:");
    let rs = uuid::Uuid::from_u128(0x7d);
    let day = 86_400_000;
    let today = svc_server::clock::now_millis() / day * day;
    // Days after those made ahead at start (today and the next two).
    let base = today + 3 * day;
    let name = |at: i64| {
        let t = time::OffsetDateTime::from_unix_timestamp(at / 1000).unwrap();
        format!("edge_requests_p{:04}{:02}{:02}", t.year(), u8::from(t.month()), t.day())
    };
    let days = |d: i64| name(base + d * day);
    let event = |ts: i64| edge_event(EventTable::Authorization, svc_server::util::uuid_v7(ts), rs, ts, None);
    // The partitions of the test's days (those made ahead aside), and the day tables detached.
    let ours = || async {
        let (attached, left) = request_days(&raw, pg).await;
        let ours: Vec<String> = attached.into_iter().filter(|n| (0..8).any(|d| *n == days(d))).collect();
        (ours, left)
    };
    if pg {
        let (attached, _) = request_days(&raw, pg).await;
        assert!(
            !attached.contains(&"edge_requests_legacy".to_string()),
            "a new database has none: {attached:?}"
        );
        for d in 0..3 {
            assert!(attached.contains(&name(today + d * day)), "made ahead: {attached:?}");
        }
    }
    // 400 requests a day over four days, 216 s apart.
    let batch: Vec<EventRow> = (0..1_600i64).map(|r| event(base + r * 216_000)).collect();
    for chunk in batch.chunks(400) {
        s.insert_events(chunk).await.unwrap();
    }
    // The newest `limit` events of the set, and their total.
    let newest = |limit: i64| {
        let s = s.clone();
        async move {
            let q = EventQuery {
                rs: vec![rs.to_string()],
                limit,
                order_col: "ts",
                desc: true,
                ..Default::default()
            };
            s.query_events(EventTable::Authorization, &q).await.unwrap()
        }
    };
    let total = || async { newest(10).await.total };
    assert_eq!(total().await, 1_600);
    let (attached, _) = ours().await;
    if pg {
        assert_eq!(attached, (0..4).map(days).collect::<Vec<_>>());
        assert_eq!(s.retention_cutoff(base + day / 2), base);
    } else {
        assert_eq!(s.retention_cutoff(base + day / 2), base + day / 2);
    }

    // While another node drops days (it holds their lock), the rows are left to it.
    if pg {
        use sqlx::Connection;
        let mut other = sqlx::AnyConnection::connect(&url).await.unwrap();
        // `request_days::DAYS_LOCK` ("svcdays").
        sqlx::raw_sql("SELECT pg_advisory_lock(32499791579674995)")
            .execute(&mut other)
            .await
            .unwrap();
        assert_eq!(s.purge_events(base + day / 2).await.unwrap(), 0);
        assert_eq!(total().await, 1_600);
        other.close().await.unwrap();
    }

    // A cutoff inside the first day: its first 200 rows, as rows.
    assert_eq!(s.purge_events(base + day / 2).await.unwrap(), 200);
    assert_eq!(total().await, 1_400);
    assert_eq!(ours().await.0, attached);

    // The first day is old, but a stream holds back its last 10 rows: the day stays, the rows
    // below the floor go.
    let floor: i64 =
        sqlx::query_scalar("SELECT seq FROM edge_requests WHERE ts < $1 ORDER BY seq DESC LIMIT 1 OFFSET 10")
            .bind(base + day)
            .fetch_one(&raw)
            .await
            .unwrap();
    let floors = [(EventTable::Authorization, floor * 16 + 15)];
    assert_eq!(s.purge_events_through(base + day, &floors).await.unwrap(), 190);
    assert_eq!(total().await, 1_210);
    assert_eq!(ours().await.0, attached);

    // Delivered: the day goes whole.
    assert_eq!(s.purge_events(base + day).await.unwrap(), 10);
    assert_eq!(total().await, 1_200);
    if pg {
        assert_eq!(ours().await, ((1..4).map(days).collect(), vec![]));
    }

    // A detach cut short: a reader holds the table while the detach waits, and the detach is
    // cancelled; the partition is left pending (PostgreSQL then refuses any other detach).
    let cut_short = |partition: String| {
        let url = url.clone();
        async move {
            use sqlx::Connection;
            let mut reader = sqlx::AnyConnection::connect(&url).await.unwrap();
            sqlx::raw_sql("BEGIN; SELECT COUNT(*) FROM edge_requests")
                .execute(&mut reader)
                .await
                .unwrap();
            let mut detacher = sqlx::AnyConnection::connect(&url).await.unwrap();
            sqlx::raw_sql("SET statement_timeout = 500")
                .execute(&mut detacher)
                .await
                .unwrap();
            let cut = sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                "ALTER TABLE edge_requests DETACH PARTITION {partition} CONCURRENTLY"
            )))
            .execute(&mut detacher)
            .await
            .expect_err("the detach waits for the reader")
            .to_string();
            assert!(cut.contains("statement timeout"), "{cut}");
            sqlx::raw_sql("COMMIT").execute(&mut reader).await.unwrap();
            let pending: Vec<bool> =
                sqlx::query_scalar("SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = $1::regclass")
                    .bind(partition)
                    .fetch_all(&mut detacher)
                    .await
                    .unwrap();
            assert_eq!(pending, [true]);
        }
    };
    // The third day's detach cut short, the second day old too: both go.
    if pg {
        cut_short(days(2)).await;
    }
    assert_eq!(s.purge_events(base + 3 * day).await.unwrap(), 800);
    assert_eq!(total().await, 400);
    if pg {
        assert_eq!(ours().await, (vec![days(3)], vec![]));
    }

    // A row written late into a dropped day finds a partition again, and goes with its day.
    let late = base + 2 * day + 5;
    s.insert_events(&[event(late)]).await.unwrap();
    assert_eq!(total().await, 401);
    if pg {
        assert_eq!(ours().await.0, vec![days(2), days(3)]);
    }
    assert_eq!(s.purge_events(base + 3 * day).await.unwrap(), 1);
    assert_eq!(total().await, 400);

    // Another node drops the fourth day, which this one wrote: this node's next row of it fails
    // once (the day known, its partition gone), then finds a partition again.
    s.insert_events(&[event(base + 3 * day + 1)]).await.unwrap();
    let other = Store::open(&database_url(&url)).await.unwrap();
    assert_eq!(other.purge_events(base + 4 * day).await.unwrap(), 401);
    let late = base + 3 * day + 5;
    if pg {
        s.insert_events(&[event(late)])
            .await
            .expect_err("the partition is gone");
    }
    s.insert_events(&[event(late)]).await.unwrap();
    assert_eq!(total().await, 1);
    assert_eq!(s.purge_events(base + 4 * day).await.unwrap(), 1);

    // The sixth day's detach cut short when it is not old (the retention raised): attached again.
    let sixth: Vec<EventRow> = (0..20).map(|i| event(base + 5 * day + i)).collect();
    s.insert_events(&sixth).await.unwrap();
    if pg {
        cut_short(days(5)).await;
        assert_eq!(total().await, 0, "rows of a partition pending detach are not read");
    }
    assert_eq!(s.purge_events(base + 4 * day).await.unwrap(), 0);
    assert_eq!(total().await, 20);
    // Detached by an operator to keep: it stays until its day is old, then goes.
    if pg {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "ALTER TABLE edge_requests DETACH PARTITION {}",
            days(5)
        )))
        .execute(&raw)
        .await
        .unwrap();
        assert_eq!(s.purge_events(base + 5 * day).await.unwrap(), 0);
        assert_eq!(ours().await, (vec![], vec![days(5)]));
        assert_eq!(s.purge_events(base + 6 * day).await.unwrap(), 20);
        assert_eq!(ours().await, (vec![], vec![]));
    } else {
        assert_eq!(s.purge_events(base + 6 * day).await.unwrap(), 20);
    }
    assert!(newest(400).await.bodies.is_empty());
}

/// Migration 0014 on a database holding request rows (PostgreSQL): the table becomes the
/// partition `edge_requests_legacy` of every time before the second day after its newest row and
/// after now (the rows checked first, then the swap), new days get partitions of their own,
/// retention deletes the old partition's rows as rows until the whole of it is before the cutoff,
/// and then drops it. The counts are SQLite's too.
#[tokio::test]
async fn the_rows_stored_before_the_day_partitions_go_as_rows_then_with_their_partition() {
    let dir = crate::support::harness::temp_dir();
    let url = crate::support::harness::fresh_database(&dir).await;
    let db = database_url(&url);
    let pg = !url.starts_with("sqlite:");
    let day = 86_400_000;
    let now = svc_server::clock::now_millis();
    let s = Store::open_through(&db, 13).await.expect("open store at 13");
    let raw = sqlx::AnyPool::connect(&url).await.unwrap();
    // 110 rows over the twelve to two days before now (as the binary before wrote them).
    for r in 0..110i64 {
        let ts = now - 12 * day + r.min(100) * day / 10;
        let id = svc_server::util::uuid_v7(ts);
        sqlx::query(
            "INSERT INTO edge_requests (rs, ts, na, nw, meta, bodies) VALUES ('x', $1, 1, 0, $2, '[{\"n\":1}]')",
        )
        .bind(ts)
        .bind(format!(
            "[{{\"k\":\"a\",\"id\":\"{id}\",\"t\":\"access.authorization\"}}]"
        ))
        .execute(&raw)
        .await
        .unwrap();
    }
    drop(s);
    let s = Store::open(&db).await.expect("open store");
    let count = || async {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM edge_requests")
            .fetch_one(&raw)
            .await
            .unwrap()
    };
    assert_eq!(count().await, 110);
    // The second UTC day after now (a midnight during the test: the third).
    let mut end = (now / day + 2) * day;
    if pg {
        let bound: String = sqlx::query_scalar(
            "SELECT pg_get_expr(c.relpartbound, c.oid) FROM pg_class AS c WHERE c.relname = 'edge_requests_legacy'",
        )
        .fetch_one(&raw)
        .await
        .unwrap();
        if bound != format!("FOR VALUES FROM (MINVALUE) TO ('{end}')") {
            end += day;
            assert_eq!(bound, format!("FOR VALUES FROM (MINVALUE) TO ('{end}')"));
        }
    }
    // Ten requests after it: a partition of their day.
    let rs = uuid::Uuid::from_u128(0x7e);
    let later = end + 1_000;
    let batch: Vec<EventRow> = (0..10)
        .map(|i| {
            edge_event(
                EventTable::Authorization,
                svc_server::util::uuid_v7(later + i),
                rs,
                later + i,
                None,
            )
        })
        .collect();
    s.insert_events(&batch).await.unwrap();
    assert_eq!(count().await, 120);
    // A cutoff seven days back: the older rows go as rows, the partition stays.
    assert_eq!(s.purge_events(now - 7 * day).await.unwrap(), 50);
    assert_eq!(count().await, 70);
    let (attached, _) = request_days(&raw, pg).await;
    assert_eq!(
        attached.contains(&"edge_requests_legacy".to_string()),
        pg,
        "{attached:?}"
    );
    // A cutoff at its end: the rest of it goes whole.
    assert_eq!(s.purge_events(end).await.unwrap(), 60);
    assert_eq!(count().await, 10);
    let (attached, _) = request_days(&raw, pg).await;
    assert!(!attached.contains(&"edge_requests_legacy".to_string()), "{attached:?}");
}

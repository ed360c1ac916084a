//! The store conformance suite: the same assertions over the storage API on SQLite and, in the
//! PostgreSQL pass, on PostgreSQL.

use svc_server::config::DatabaseUrl;
use svc_server::store::{AuditRow, EntityRow, EventQuery, EventRow, EventTable, KeyRow, Store};

async fn open() -> (Store, crate::harness::TempDir) {
    let dir = crate::harness::temp_dir();
    let url = crate::harness::fresh_database(&dir).await;
    let db = if let Some(p) = url.strip_prefix("sqlite://") {
        DatabaseUrl::Sqlite(p.into())
    } else {
        DatabaseUrl::Postgres(url)
    };
    (Store::open(&db).await.expect("open store"), dir)
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
    let all = s.load_entities().await.unwrap();
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

    let ev = |id: &str, table: EventTable| EventRow {
        table,
        id: id.into(),
        rs: "rs1".into(),
        ts: 500,
        event_type: "access.request".into(),
        severity: "Info".into(),
        result: Some("Received".into()),
        client_ip: Some("10.0.0.1".into()),
        client_workload: Some("cw".into()),
        server_workload: Some("sw".into()),
        app_protocol: Some("HTTP".into()),
        user_id: None,
        search: "access.request".into(),
        body: "{}".into(),
    };
    s.insert_events(&[ev("e1", EventTable::Authorization), ev("w1", EventTable::Workload)])
        .await
        .unwrap();
    let mut wq = EventQuery {
        rs: vec!["rs1".into()],
        order_col: "ts",
        desc: true,
        limit: 10,
        ..Default::default()
    };
    wq.any_of.push(("client_workload", vec!["cw".into(), "other".into()]));
    assert_eq!(s.query_events(EventTable::Workload, &wq).await.unwrap().total, 1);
    wq.any_of = vec![("server_workload", vec!["nope".into()])];
    assert_eq!(s.query_events(EventTable::Workload, &wq).await.unwrap().total, 0);
    assert_eq!(s.purge_events(10_000).await.unwrap(), 5);

    // Retention purges from the head in chunks: more old rows than one chunk all go, the newer
    // rows behind them stay.
    let old_rows: Vec<EventRow> = (0..svc_server::store::PURGE_CHUNK + 150)
        .map(|i| ev(&format!("old{i}"), EventTable::Authorization))
        .collect();
    s.insert_events(&old_rows).await.unwrap();
    let new_rows: Vec<EventRow> = (0..3)
        .map(|i| EventRow {
            ts: 20_000,
            ..ev(&format!("new{i}"), EventTable::Authorization)
        })
        .collect();
    s.insert_events(&new_rows).await.unwrap();
    assert_eq!(
        s.purge_events(10_000).await.unwrap(),
        (svc_server::store::PURGE_CHUNK + 150) as u64
    );
    let all = EventQuery {
        rs: vec!["rs1".into()],
        order_col: "ts",
        limit: 10,
        ..Default::default()
    };
    assert_eq!(s.query_events(EventTable::Authorization, &all).await.unwrap().total, 3);
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
            for b in 0..150 {
                let rows: Vec<EventRow> = (0..20)
                    .map(|i| EventRow {
                        table: EventTable::Authorization,
                        id: format!("busy-{b}-{i}"),
                        rs: "rs1".into(),
                        ts: 1,
                        event_type: "access.request".into(),
                        severity: "Info".into(),
                        result: None,
                        client_ip: None,
                        client_workload: None,
                        server_workload: None,
                        app_protocol: None,
                        user_id: None,
                        search: "".into(),
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

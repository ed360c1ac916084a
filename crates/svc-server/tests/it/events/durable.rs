//! Durable edge events: an edge answer leaves only after its events are committed (fail
//! closed), unless `SVC_EVENTS_FAIL_OPEN` says otherwise.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::edge::*;
use crate::support::harness::{TestApp, use_postgres};

const KEY: &str = "pk_live_durable";
const UNAVAILABLE: &str = "Service temporarily unavailable. Please try again later.";

/// The worked example configured, and a valid edge token and `/credentials` body for it.
async fn configured(t: &TestApp) -> (String, serde_json::Value) {
    let oidc = peer("SVC_TEST_OAUTH2_MOCK_URL");
    let ex = worked_example(t, &oidc, KEY).await;
    let id_token = mock_id_token(&[("sub", "system:job:build"), ("aud", &t.base)]).await;
    let token = auth_oidc(t, &ex.client_id, &id_token).await;
    (token, example_body(&id_token))
}

/// Starts the built `svc` binary on `t`'s database, with `t`'s configuration.
fn spawn_binary(env: &BTreeMap<String, String>, port: u16) -> tokio::process::Child {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"));
    cmd.arg("serve").env_clear().envs(env);
    cmd.env("SVC_LISTEN_ADDR", format!("127.0.0.1:{port}"))
        .env("SVC_METRICS_LISTEN_ADDR", "")
        .env("SVC_LOG", "error")
        .kill_on_drop(true);
    cmd.spawn().expect("svc binary")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[derive(Default)]
struct Answered {
    ok: AtomicU64,
    unauthorized: AtomicU64,
}

/// Edge load on `base` until the server dies: valid `/credentials` requests (200, four events)
/// and requests without a token (401, one event), counting the answers received.
async fn load_until_killed(base: String, token: String, body: serde_json::Value, answered: Arc<Answered>) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let mut tasks = Vec::new();
    for worker in 0..8 {
        let (client, base, token, body, answered) = (
            client.clone(),
            base.clone(),
            token.clone(),
            body.clone(),
            answered.clone(),
        );
        tasks.push(tokio::spawn(async move {
            for i in 0u64.. {
                let anonymous = (i + worker) % 3 == 0;
                let mut req = client.post(format!("{base}/edge/v1/credentials")).json(&body);
                if !anonymous {
                    req = req.bearer_auth(&token);
                }
                let Ok(r) = req.send().await else { return };
                let status = r.status().as_u16();
                // An answer counts once its body arrived whole.
                let Ok(text) = r.text().await else { return };
                match status {
                    200 => {
                        assert!(text.contains(KEY), "{text}");
                        answered.ok.fetch_add(1, Ordering::SeqCst);
                    }
                    401 => {
                        answered.unauthorized.fetch_add(1, Ordering::SeqCst);
                    }
                    other => panic!("unexpected {other}: {text}"),
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

/// kill -9 under edge load, three times: after each, every answered request's events are stored
/// (the stored counts are at least the answers; requests in flight may add more).
#[tokio::test]
async fn every_answered_edge_request_has_its_events_stored_after_kill_9() {
    let mut t = TestApp::start().await;
    let (token, body) = configured(&t).await;
    let env = t.env.clone();
    t.shutdown().await;
    let answered = Arc::new(Answered::default());
    for run in 0..3 {
        let port = free_port();
        let mut child = spawn_binary(&env, port);
        let base = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        loop {
            if reqwest::get(format!("{base}/api/v1/health")).await.is_ok() {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "the binary did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let load = tokio::spawn(load_until_killed(base, token.clone(), body.clone(), answered.clone()));
        tokio::time::sleep(Duration::from_millis(1500)).await;
        child.start_kill().unwrap();
        child.wait().await.unwrap();
        load.await.expect("no unexpected answer");
        assert!(
            answered.ok.load(Ordering::SeqCst) > 0,
            "run {run}: no credential was issued"
        );
    }
    let t = t.restart().await;
    let (ok, unauthorized) = (
        answered.ok.load(Ordering::SeqCst),
        answered.unauthorized.load(Ordering::SeqCst),
    );
    // Counted in the database: past 10,000 matches a list's `recordsTotal` is an estimate
    // (`recordsTotalEstimated`), and three runs of load answer more than that.
    let issued = stored(&t, "authorization_events WHERE event_type = 'access.credential'").await;
    let requests = stored(&t, "authorization_events WHERE event_type = 'access.request'").await;
    let workload = stored(&t, "workload_events").await;
    assert!(
        issued >= ok,
        "{issued} access.credential events for {ok} credentials answered"
    );
    assert!(
        workload >= ok,
        "{workload} workload events for {ok} credentials answered"
    );
    assert!(
        requests >= ok + unauthorized,
        "{requests} access.request events for {} answers",
        ok + unauthorized
    );
}

/// `SELECT COUNT(*) FROM <from>` on the service's database: how many events are stored.
async fn stored(t: &TestApp, from: &str) -> u64 {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&t.db_url).await.unwrap();
    let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {from}")))
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    n as u64
}

/// SQL run on the service's database from outside, as an operator or a failing disk would.
async fn outside(t: &TestApp, statements: &[&str]) {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&t.db_url).await.unwrap();
    for s in statements {
        sqlx::query(sqlx::AssertSqlSafe(s.to_string()))
            .execute(&pool)
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    pool.close().await;
}

/// Makes the database refuse every edge request's events (as a full disk would), or accept them
/// again.
async fn refuse_events(t: &TestApp, refuse: bool) {
    match (use_postgres(), refuse) {
        (false, true) => {
            outside(t, &["CREATE TRIGGER refuse_events BEFORE INSERT ON edge_requests BEGIN SELECT RAISE(ABORT, 'disk full'); END"]).await
        }
        (false, false) => outside(t, &["DROP TRIGGER refuse_events"]).await,
        (true, true) => {
            outside(
                t,
                &[
                    "CREATE FUNCTION refuse_events() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'disk full'; END $$ LANGUAGE plpgsql",
                    "CREATE TRIGGER refuse_events BEFORE INSERT ON edge_requests FOR EACH ROW EXECUTE FUNCTION refuse_events()",
                ],
            )
            .await
        }
        (true, false) => {
            outside(
                t,
                &[
                    "DROP TRIGGER refuse_events ON edge_requests",
                    "DROP FUNCTION refuse_events()",
                ],
            )
            .await
        }
    }
}

#[tokio::test]
async fn events_the_database_refuses_turn_edge_answers_into_503_without_a_credential() {
    let t = TestApp::start().await;
    let (token, body) = configured(&t).await;
    credentials(&t, &token, body.clone()).await.expect(200);
    refuse_events(&t, true).await;
    let r = credentials(&t, &token, body.clone()).await;
    r.expect_error(503, UNAVAILABLE);
    assert!(!r.text.contains(KEY), "no credential in a 503: {}", r.text);
    assert_eq!(r.header("retry-after"), Some("1"));
    // /auth hands out no token either.
    let oidc_token = mock_id_token(&[("sub", "system:job:build"), ("aud", &t.base)]).await;
    let client_id = t.get("/api/v1/trust-providers").await.expect(200)["trustProviders"][0]["edgeSdkClientId"]
        .as_str()
        .unwrap()
        .to_string();
    let r = auth(&t, &client_id, json!({"oidc": {"identityToken": oidc_token}})).await;
    r.expect_error(503, UNAVAILABLE);
    assert!(!r.text.contains("accessToken"), "{}", r.text);
    // Once the database takes events again, so does the edge.
    refuse_events(&t, false).await;
    credentials(&t, &token, body).await.expect(200);
}

#[tokio::test]
async fn a_writer_stuck_past_the_commit_timeout_answers_503() {
    let t = TestApp::start_with(|e| {
        e.insert("SVC_EVENTS_COMMIT_TIMEOUT_MS".into(), "500".into());
    })
    .await;
    let (token, body) = configured(&t).await;
    // Another connection holds the tables' write lock: the event insert waits behind it.
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&t.db_url).await.unwrap();
    let mut hold = pool.begin().await.unwrap();
    let lock = if use_postgres() {
        "LOCK TABLE edge_requests IN EXCLUSIVE MODE"
    } else {
        "INSERT INTO pending_states (state, purpose, data, expires_at) VALUES ('hold', 'test', '', 0)"
    };
    sqlx::query(lock).execute(&mut *hold).await.unwrap();
    let started = Instant::now();
    let r = credentials(&t, &token, body.clone()).await;
    r.expect_error(503, UNAVAILABLE);
    assert!(!r.text.contains(KEY));
    assert!(started.elapsed() >= Duration::from_millis(500), "waited for the bound");
    hold.rollback().await.unwrap();
    pool.close().await;
    credentials(&t, &token, body).await.expect(200);
}

#[tokio::test]
async fn fail_open_answers_before_the_events_are_stored() {
    let t = TestApp::start_with(|e| {
        e.insert("SVC_EVENTS_FAIL_OPEN".into(), "true".into());
    })
    .await;
    let (token, body) = configured(&t).await;
    refuse_events(&t, true).await;
    let r = credentials(&t, &token, body.clone()).await;
    r.expect(200);
    assert!(
        r.text.contains(KEY),
        "the credential leaves although its events are not stored"
    );
    refuse_events(&t, false).await;
}

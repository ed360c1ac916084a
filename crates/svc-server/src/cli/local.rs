//! `svc admin token`, `svc admin keys rotate` and `svc admin keys rotate-encryption`:
//! administration on the server host, straight against the server's existing database (no server
//! needs to run; none is created: issue 32).

use std::path::Path;
use std::process::ExitCode;

use svc_server::App;

use super::fail;
use super::server::load_config;

/// `svc admin keys rotate` (§5.1).
pub fn rotate_keys(config: Option<&Path>) -> ExitCode {
    let cfg = match load_config(config, false) {
        Ok(c) => c,
        Err(code) => return code,
    };
    super::server_runtime().block_on(async move {
        let app = match App::open_existing(cfg).await {
            Ok(a) => a,
            Err(e) => return fail(e),
        };
        match svc_server::issuer::keys::rotate(&app.store, &app.cipher, svc_server::clock::now_millis()).await {
            Ok(()) => {
                println!(
                    "new keys published; they sign from one hour from now, the previous keys verify for 48 hours after that"
                );
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        }
    })
}

/// `svc admin token --role ROLE [--ttl SECS]`: prints the login response JSON of a CLI token.
pub fn token(config: Option<&Path>, role: Option<String>, ttl: Option<i64>) -> ExitCode {
    let cfg = match load_config(config, false) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let Some(role) = role else {
        eprintln!("svc: admin token needs --role (a role name such as SuperAdmin, or a role id)");
        return ExitCode::from(2);
    };
    super::server_runtime().block_on(async move {
        let app = match App::open_existing(cfg).await {
            Ok(a) => a,
            Err(e) => return fail(e),
        };
        let st = app.state();
        // An id names one role; a name is looked up among the system roles first (anyone with
        // `Roles` write can create another role called "SuperAdmin"), and must otherwise be unique.
        let by_id = uuid::Uuid::parse_str(role.trim()).ok().and_then(|id| st.roles.get(&id));
        let named: Vec<_> = st.roles.values().filter(|r| r.meta.name == role).collect();
        let r = match by_id {
            Some(r) => r,
            None => match (named.iter().find(|r| r.system), named.as_slice()) {
                (Some(r), _) | (None, [r]) => r,
                (None, []) => return fail(format!("no role named {role:?}")),
                (None, _) => {
                    return fail(format!(
                        "{} roles are named {role:?}; give the role's id (--role <uuid>)",
                        named.len()
                    ));
                }
            },
        };
        // The server refuses a token for another issuer (`Not authenticated.`): say so here.
        if let Some((url, ago)) = svc_server::service::nodes::other_public_url(&app, &app.cfg.public_url).await {
            eprintln!(
                "svc: warning: this token names the issuer {} (SVC_PUBLIC_URL), but the server was last seen as {url} \
                 ({ago} s ago), which refuses it (401 Not authenticated.); run with SVC_PUBLIC_URL={url}",
                app.cfg.public_url
            );
        }
        let ttl = ttl.unwrap_or(app.cfg.session_ttl_seconds as i64);
        let resp = svc_server::service::auth::mint_cli_token(&app, r.meta.id, ttl);
        println!("{}", serde_json::to_string(&resp).expect("serialises"));
        ExitCode::SUCCESS
    })
}

/// `svc admin keys rotate-encryption`: every stored secret sealed again under a new at-rest key,
/// while the service runs (`service::rekey`; docs/OPERATIONS.md).
pub fn rotate_encryption(config: Option<&Path>, wait: std::time::Duration) -> ExitCode {
    let cfg = match load_config(config, false) {
        Ok(c) => c,
        Err(code) => return code,
    };
    super::server_runtime().block_on(async move {
        let app = match App::open_existing(cfg).await {
            Ok(a) => a,
            Err(e) => return fail(e),
        };
        let started = std::time::Instant::now();
        let say = |line: String| eprintln!("svc: [{:.1} s] {line}", started.elapsed().as_secs_f64());
        match svc_server::service::rekey::rotate(&app, wait, &say).await {
            Ok(r) if r.already => {
                println!("every stored secret is already sealed with key id {}: nothing to do", r.to);
                ExitCode::SUCCESS
            }
            Ok(r) => {
                println!(
                    "rotated: {} sealed values now under key id {} ({} passes, {:.1} s); key id {} is retired",
                    r.rewrapped,
                    r.to,
                    r.passes,
                    r.took.as_secs_f64(),
                    r.from
                );
                if matches!(app.key_source, svc_server::config::KeySource::Environment) {
                    println!(
                        "remove SVC_ENCRYPTION_KEY_PREVIOUS from every node's configuration (the old key opens nothing now)"
                    );
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        }
    })
}

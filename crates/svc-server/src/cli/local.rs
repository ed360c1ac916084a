//! `svc admin token` and `svc admin keys rotate`: administration on the server host, straight
//! against the database (no server needs to run).

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
        let app = match App::open(cfg).await {
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
        let app = match App::open(cfg).await {
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
        let ttl = ttl.unwrap_or(app.cfg.session_ttl_seconds as i64);
        let resp = svc_server::service::auth::mint_cli_token(&app, r.meta.id, ttl);
        println!("{}", serde_json::to_string(&resp).expect("serialises"));
        ExitCode::SUCCESS
    })
}

//! `svc admin backup` and `svc admin restore` on the server host (`service::backup`;
//! docs/OPERATIONS.md "Backup and restore").

use std::path::Path;
use std::process::ExitCode;

use svc_server::service::backup::Refusal;

use super::server::load_config;
use super::{BackupArgs, RestoreArgs};

fn refused(r: Refusal) -> ExitCode {
    eprintln!("svc: {}", r.message);
    ExitCode::from(if r.usage { 2 } else { 1 })
}

/// `svc admin backup --out FILE [--force]` or `--verify FILE [--key-file FILE]`.
pub fn backup(config: Option<&Path>, a: BackupArgs) -> ExitCode {
    let cfg = match load_config(config, false) {
        Ok(c) => c,
        Err(code) => return code,
    };
    super::server_runtime().block_on(async move {
        if let Some(file) = a.verify {
            return match svc_server::service::backup::verify(&cfg, &file, a.key_file.as_deref()).await {
                Ok(v) => {
                    println!("{}", serde_json::to_string_pretty(&v.summary()).expect("serialises"));
                    eprintln!(
                        "svc: {} restores, migrates to schema version {} and its {} sealed values open with key id {}",
                        file.display(),
                        svc_server::store::Store::LATEST_SCHEMA,
                        v.sealed,
                        v.key_id
                    );
                    ExitCode::SUCCESS
                }
                Err(r) => refused(r),
            };
        }
        let out = a.out.expect("clap requires --out or --verify");
        match svc_server::service::backup::backup(&cfg, &out, a.force).await {
            Ok(manifest) => {
                println!("{}", serde_json::to_string_pretty(&manifest).expect("serialises"));
                eprintln!("svc: backup written to {} (mode 0600)", out.display());
                ExitCode::SUCCESS
            }
            Err(r) => refused(r),
        }
    })
}

/// `svc admin restore --in FILE [--force] [--key-file FILE]`.
pub fn restore(config: Option<&Path>, a: RestoreArgs) -> ExitCode {
    let cfg = match load_config(config, false) {
        Ok(c) => c,
        Err(code) => return code,
    };
    super::server_runtime().block_on(async move {
        match svc_server::service::backup::restore(&cfg, &a.input, a.force, a.key_file.as_deref()).await {
            Ok(done) => {
                for line in done {
                    println!("{line}");
                }
                println!("start the service (svc serve): it migrates the restored database if it is older");
                ExitCode::SUCCESS
            }
            Err(r) => refused(r),
        }
    })
}

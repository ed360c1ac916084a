//! `svc config check`: validates the configuration as `serve` would (the files its keys name
//! included) and prints every key's effective value, never a secret.

use std::path::Path;
use std::process::ExitCode;

use svc_server::config::{Config, KEYS, SECRET_KEYS};

pub fn run(config: Option<&Path>) -> ExitCode {
    // The key files are checked with the values (`load_config`), as `serve` does.
    if let Err(code) = super::server::load_config(config, true) {
        return code;
    }
    let given = Config::given_values(config).unwrap_or_default();
    println!("configuration is valid:");
    for (k, default) in KEYS {
        let shown = match given.get(*k).filter(|v| !v.trim().is_empty()) {
            Some(_) if SECRET_KEYS.contains(k) => "(set, hidden)".to_string(),
            Some(v) if *k == "SVC_DATABASE_URL" => without_password(v),
            Some(v) => v.clone(),
            None => match default {
                Some(d) if !d.is_empty() => format!("{d} (default)"),
                _ => "(default)".to_string(),
            },
        };
        println!("  {k} = {shown}");
    }
    ExitCode::SUCCESS
}

/// A database URL with its password replaced by `***`.
fn without_password(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}

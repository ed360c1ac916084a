//! The admin console (docs/console.md): its files, embedded in the binary, served at `/console/`
//! with a strict Content-Security-Policy, and `GET /` with `Accept: text/html` redirected there.
//!
//! Assets live under `/console/assets/<hash>/…`, where `<hash>` covers every embedded file: a
//! build's assets never change under one URL, so they are cached for a year (`immutable`), and
//! the ES modules import each other by relative paths inside that one folder. `index.html` (also
//! the answer for every other path under `/console/`, the console's own routes) is never cached,
//! so a new build is picked up at the next load. The console is static: it calls the public
//! management API with the user's bearer token like any other client, nothing here reads a token.

use std::sync::OnceLock;

use axum::Router;
use axum::extract::{Path, Request};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};

use crate::app::App;
use crate::error::Error;

/// Every file of `assets/console/` (a unit test checks the list against the folder).
const FILES: &[(&str, &[u8])] = &[
    ("app.js", include_bytes!("../../assets/console/app.js")),
    ("api.js", include_bytes!("../../assets/console/api.js")),
    ("families.js", include_bytes!("../../assets/console/families.js")),
    ("forms.js", include_bytes!("../../assets/console/forms.js")),
    ("ui.js", include_bytes!("../../assets/console/ui.js")),
    (
        "pages/entities.js",
        include_bytes!("../../assets/console/pages/entities.js"),
    ),
    (
        "pages/events.js",
        include_bytes!("../../assets/console/pages/events.js"),
    ),
    (
        "pages/explain.js",
        include_bytes!("../../assets/console/pages/explain.js"),
    ),
    (
        "pages/overview.js",
        include_bytes!("../../assets/console/pages/overview.js"),
    ),
    (
        "pages/signin.js",
        include_bytes!("../../assets/console/pages/signin.js"),
    ),
    (
        "pages/settings.js",
        include_bytes!("../../assets/console/pages/settings.js"),
    ),
    ("console.css", include_bytes!("../../assets/console/console.css")),
    ("favicon.svg", include_bytes!("../../assets/console/favicon.svg")),
    (
        "vendor/preact-11.2.0.mjs",
        include_bytes!("../../assets/console/vendor/preact-11.2.0.mjs"),
    ),
    (
        "vendor/preact-hooks-11.2.0.mjs",
        include_bytes!("../../assets/console/vendor/preact-hooks-11.2.0.mjs"),
    ),
    (
        "vendor/htm-3.1.1.mjs",
        include_bytes!("../../assets/console/vendor/htm-3.1.1.mjs"),
    ),
    (
        "vendor/LICENSES.txt",
        include_bytes!("../../assets/console/vendor/LICENSES.txt"),
    ),
];

const INDEX: &str = include_str!("../../assets/console/index.html");

/// The policy of every console answer: only this origin's scripts, styles, images and API; no
/// inline script or style, no `eval`, no framing, no plugin, forms only to this origin.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

struct Built {
    /// `/console/assets/<hash>`
    prefix: String,
    index: String,
}

fn built() -> &'static Built {
    static B: OnceLock<Built> = OnceLock::new();
    B.get_or_init(|| {
        let mut all = Vec::new();
        for (name, bytes) in FILES {
            all.extend_from_slice(name.as_bytes());
            all.push(0);
            all.extend_from_slice(&crate::crypto::sha256(bytes));
        }
        all.extend_from_slice(INDEX.as_bytes());
        let hash = crate::crypto::hex(&crate::crypto::sha256(&all)[..8]);
        let prefix = format!("/console/assets/{hash}");
        Built {
            index: INDEX.replace("{{ASSETS}}", &prefix),
            prefix,
        }
    })
}

pub fn routes() -> Router<App> {
    Router::new()
        .route("/", any(root))
        .route("/console", get(|| async { redirect("/console/") }))
        .route("/console/", get(index))
        .route("/console/assets/{hash}/{*file}", get(asset))
        .route("/console/{*path}", get(index))
}

fn redirect(to: &'static str) -> Response {
    let mut r = StatusCode::FOUND.into_response();
    r.headers_mut().insert(header::LOCATION, HeaderValue::from_static(to));
    secure(&mut r, "no-store");
    r
}

/// `GET /` from a browser opens the console; every other request to `/` is answered as before
/// (the API's 404).
async fn root(req: Request) -> Response {
    let html = req
        .headers()
        .get_all(header::ACCEPT)
        .iter()
        .any(|v| v.to_str().is_ok_and(|s| s.to_ascii_lowercase().contains("text/html")));
    if html && (req.method() == Method::GET || req.method() == Method::HEAD) {
        redirect("/console/")
    } else {
        Error::NotFound.into_response()
    }
}

async fn index() -> Response {
    let mut r = (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        built().index.clone(),
    )
        .into_response();
    secure(&mut r, "no-store");
    r
}

async fn asset(Path((hash, file)): Path<(String, String)>, headers: HeaderMap) -> Response {
    let b = built();
    let current = b.prefix.rsplit('/').next() == Some(hash.as_str());
    let Some((_, bytes)) = FILES.iter().find(|(n, _)| *n == file) else {
        return Error::NotFound.into_response();
    };
    if !current {
        // An older build's page asks for its files: this build's are not them.
        return Error::NotFound.into_response();
    }
    // The hash names the content: a conditional request is always current.
    let etag = format!("\"{hash}\"");
    if headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes())
    {
        let mut r = StatusCode::NOT_MODIFIED.into_response();
        secure(&mut r, "public, max-age=31536000, immutable");
        return r;
    }
    let mut r = (
        [(header::CONTENT_TYPE, HeaderValue::from_static(content_type(&file)))],
        *bytes,
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&etag) {
        r.headers_mut().insert(header::ETAG, v);
    }
    secure(&mut r, "public, max-age=31536000, immutable");
    r
}

fn content_type(file: &str) -> &'static str {
    match file.rsplit('.').next() {
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("html") => "text/html; charset=utf-8",
        _ => "text/plain; charset=utf-8",
    }
}

/// The headers of every console answer (docs/console.md, "Serving").
fn secure(r: &mut Response, cache: &'static str) {
    let h = r.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert("cross-origin-opener-policy", HeaderValue::from_static("same-origin"));
    h.insert("cross-origin-resource-policy", HeaderValue::from_static("same-origin"));
    h.insert(
        "permissions-policy",
        HeaderValue::from_static("camera=(), microphone=(), geolocation=(), payment=(), usb=()"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, base, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().to_string_lossy().replace('\\', "/"));
            }
        }
    }

    #[test]
    fn every_console_file_is_embedded() {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/console");
        let mut on_disk = Vec::new();
        walk(&base, &base, &mut on_disk);
        on_disk.retain(|f| f != "index.html");
        on_disk.sort();
        let mut listed: Vec<String> = FILES.iter().map(|(n, _)| n.to_string()).collect();
        listed.sort();
        assert_eq!(on_disk, listed, "assets/console and console::FILES differ");
    }

    #[test]
    fn the_index_names_this_builds_assets() {
        let b = built();
        assert!(!b.index.contains("{{ASSETS}}"));
        assert!(b.index.contains(&format!("{}/app.js", b.prefix)));
        assert!(b.index.contains(&format!("{}/console.css", b.prefix)));
    }
}

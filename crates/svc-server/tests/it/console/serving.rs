//! `/console/` and `GET /`: headers, caching, and the API's answers left as they were.

use crate::support::harness::TestApp;

async fn raw(t: &TestApp, method: reqwest::Method, path: &str, accept: &str) -> reqwest::Response {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    client
        .request(method, t.url(path))
        .header("accept", accept)
        .send()
        .await
        .unwrap()
}

fn assert_secure(r: &reqwest::Response) {
    let h = r.headers();
    let csp = h["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'self'"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(csp.contains("script-src 'self'"), "{csp}");
    assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"), "{csp}");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["referrer-policy"], "no-referrer");
}

#[tokio::test]
async fn a_browser_asking_for_the_root_is_sent_to_the_console() {
    let t = TestApp::start().await;
    let r = raw(
        &t,
        reqwest::Method::GET,
        "/",
        "text/html,application/xhtml+xml,*/*;q=0.8",
    )
    .await;
    assert_eq!(r.status(), 302);
    assert_eq!(r.headers()["location"], "/console/");
    assert_secure(&r);
    // Every other answer of `/` is the API's, unchanged: 404 with the §1.8 body.
    for (m, accept) in [
        (reqwest::Method::GET, "application/json"),
        (reqwest::Method::GET, "*/*"),
        (reqwest::Method::POST, "text/html"),
        (reqwest::Method::DELETE, "text/html"),
    ] {
        let r = raw(&t, m.clone(), "/", accept).await;
        assert_eq!(r.status(), 404, "{m} / ({accept})");
        assert_eq!(
            r.text().await.unwrap(),
            r#"{"success":false,"message":"Not found.","id":0}"#
        );
    }
    let r = raw(&t, reqwest::Method::GET, "/console", "text/html").await;
    assert_eq!(r.status(), 302);
    assert_eq!(r.headers()["location"], "/console/");
}

#[tokio::test]
async fn the_console_index_is_never_cached_and_its_assets_are_immutable() {
    let t = TestApp::start().await;
    let r = raw(&t, reqwest::Method::GET, "/console/", "text/html").await;
    assert_eq!(r.status(), 200);
    assert_secure(&r);
    assert_eq!(r.headers()["cache-control"], "no-store");
    assert_eq!(r.headers()["content-type"], "text/html; charset=utf-8");
    let html = r.text().await.unwrap();
    // The console's own routes are the same page.
    let deep = raw(&t, reqwest::Method::GET, "/console/access-policies/new", "text/html").await;
    assert_eq!(deep.status(), 200);
    assert_eq!(deep.text().await.unwrap(), html);

    let start = html.find("/console/assets/").expect("an asset path");
    let prefix = &html[start..start + "/console/assets/".len() + 16];
    for (file, ct) in [
        ("app.js", "text/javascript; charset=utf-8"),
        ("console.css", "text/css; charset=utf-8"),
        ("vendor/preact-11.2.0.mjs", "text/javascript; charset=utf-8"),
    ] {
        let r = raw(&t, reqwest::Method::GET, &format!("{prefix}/{file}"), "*/*").await;
        assert_eq!(r.status(), 200, "{file}");
        assert_secure(&r);
        assert_eq!(r.headers()["content-type"], ct, "{file}");
        assert_eq!(r.headers()["cache-control"], "public, max-age=31536000, immutable");
        assert!(r.headers().contains_key("etag"));
    }
    // Another build's folder, or a file no build has, is not served.
    let r = raw(
        &t,
        reqwest::Method::GET,
        "/console/assets/0123456789abcdef/app.js",
        "*/*",
    )
    .await;
    assert_eq!(r.status(), 404);
    // Files are looked up by exact name in the embedded table: nothing else is reachable.
    for f in ["nothing.js", "index.html", "vendor", "vendor/"] {
        let r = raw(&t, reqwest::Method::GET, &format!("{prefix}/{f}"), "*/*").await;
        assert_eq!(r.status(), 404, "{f}");
    }
    // The console is read-only: other methods are 405.
    let r = raw(&t, reqwest::Method::POST, "/console/", "text/html").await;
    assert_eq!(r.status(), 405);
}

#[tokio::test]
async fn the_console_names_no_other_origin() {
    let t = TestApp::start().await;
    let html = raw(&t, reqwest::Method::GET, "/console/", "text/html")
        .await
        .text()
        .await
        .unwrap();
    assert!(!html.contains("http://") && !html.contains("https://"), "{html}");
    assert!(!html.contains("<script>"), "no inline script: {html}");
}

//! The web UI served from the binary: `index.html` for the app's routes, hashed assets cached for good,
//! revalidation by ETag, the security headers, the API's errors left as they were, the host and origin guard
//! in front of it all, paths that try to climb out of the embedded files, and `TRUEFORGE_UI=off`.
//!
//! Nothing here knows which UI build is embedded: asset names are read from the served `index.html`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use reqwest::Method;
use reqwest::header::HeaderMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::TestServer;

const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: \
                   blob:; font-src 'self' data:; connect-src 'self'; frame-src 'none'; object-src 'none'; \
                   frame-ancestors 'none'; base-uri 'none'; form-action 'self'";
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map(|value| value.to_str().unwrap())
            .unwrap_or_else(|| panic!("no {name} header in {:?}", self.headers))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The `error.message` of a JSON error body.
    fn error_message(&self) -> String {
        assert!(
            self.header("content-type").starts_with("application/json"),
            "{:?}",
            self.headers
        );
        let body: serde_json::Value = serde_json::from_slice(&self.body).unwrap();
        body["error"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("not an error body: {body}"))
            .to_owned()
    }
}

async fn request(server: &TestServer, method: Method, path: &str, headers: &[(&str, &str)]) -> Answer {
    let mut request = server.http.request(method, server.url(path));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    Answer {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        body: response.bytes().await.unwrap().to_vec(),
    }
}

async fn get(server: &TestServer, path: &str) -> Answer {
    request(server, Method::GET, path, &[]).await
}

/// Sends `target` as written (an HTTP client would normalise `..` away before sending), on its own
/// connection; the status line and the rest of the answer.
async fn raw_get(server: &TestServer, target: &str) -> (u16, String) {
    let address = server.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = format!("GET {target} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {answer:?}"));
    (status, answer)
}

/// The `/assets/…` files `index.html` refers to (`src="…"` and `href="…"`).
fn referenced_assets(index: &str) -> Vec<String> {
    let mut assets = Vec::new();
    for attribute in ["src=\"", "href=\""] {
        for (start, _) in index.match_indices(attribute) {
            let value = &index[start + attribute.len()..];
            let value = &value[..value.find('"').unwrap()];
            if value.starts_with("/assets/") {
                assets.push(value.to_owned());
            }
        }
    }
    assert!(!assets.is_empty(), "index.html refers to no /assets/ file: {index}");
    assets
}

fn assert_ui_headers(answer: &Answer, path: &str) {
    assert_eq!(answer.header("content-security-policy"), CSP, "{path}");
    assert_eq!(answer.header("x-content-type-options"), "nosniff", "{path}");
    assert_eq!(answer.header("referrer-policy"), "no-referrer", "{path}");
    assert_eq!(answer.header("x-frame-options"), "DENY", "{path}");
}

/// A JavaScript module's name must come with a JavaScript type, or the browser refuses it (`nosniff`).
fn expected_type(asset: &str) -> &'static [&'static str] {
    match asset.rsplit('.').next() {
        Some("js" | "mjs") => &["text/javascript", "application/javascript"],
        Some("css") => &["text/css"],
        Some("svg") => &["image/svg+xml"],
        Some("woff2") => &["font/woff2"],
        Some("png") => &["image/png"],
        _ => &[""],
    }
}

#[tokio::test]
async fn the_root_is_the_app_with_its_security_headers() {
    let server = TestServer::start().await;
    let root = get(&server, "/").await;
    assert_eq!(root.status, 200, "{}", root.text());
    assert_eq!(root.header("content-type"), "text/html; charset=utf-8");
    assert_eq!(root.header("cache-control"), "no-cache");
    assert_ui_headers(&root, "/");
    let etag = root.header("etag");
    assert!(
        etag.starts_with('"') && etag.ends_with('"') && etag.len() == 66,
        "a strong SHA-256 tag: {etag}"
    );
    let html = root.text();
    assert!(html.contains("<script type=\"module\""), "{html}");

    let index = get(&server, "/index.html").await;
    assert_eq!(index.status, 200);
    assert_eq!(index.body, root.body);
    assert_eq!(index.header("etag"), etag);
    server.stop().await;
}

#[tokio::test]
async fn assets_come_with_their_type_and_are_cached_for_good() {
    let server = TestServer::start().await;
    let index = get(&server, "/").await.text();
    for asset in referenced_assets(&index) {
        let answer = get(&server, &asset).await;
        assert_eq!(answer.status, 200, "{asset}: {}", answer.text());
        let content_type = answer.header("content-type");
        assert!(
            expected_type(&asset)
                .iter()
                .any(|expected| content_type.starts_with(expected)),
            "{asset}: {content_type}"
        );
        assert_eq!(answer.header("cache-control"), IMMUTABLE, "{asset}");
        assert_ui_headers(&answer, &asset);
        assert!(answer.header("etag").starts_with('"'), "{asset}");
        assert!(!answer.body.is_empty(), "{asset}");
        assert_ne!(answer.body, index.as_bytes(), "{asset} is not the app's page");
        assert_eq!(
            answer.header("content-length"),
            answer.body.len().to_string(),
            "{asset}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn an_etag_revalidates_to_304_and_anything_else_gets_the_file() {
    let server = TestServer::start().await;
    let root = get(&server, "/").await;
    let etag = root.header("etag").to_owned();
    let asset = referenced_assets(&root.text()).remove(0);
    let asset_etag = get(&server, &asset).await.header("etag").to_owned();
    assert_ne!(etag, asset_etag);

    for (path, tag, cache) in [
        ("/", etag.as_str(), "no-cache"),
        ("/sessions/01ABC", etag.as_str(), "no-cache"),
        (asset.as_str(), asset_etag.as_str(), IMMUTABLE),
    ] {
        for matching in [
            tag.to_owned(),
            format!("W/{tag}"),
            format!("\"other\", {tag}"),
            "*".to_owned(),
        ] {
            let answer = request(&server, Method::GET, path, &[("if-none-match", &matching)]).await;
            assert_eq!(answer.status, 304, "{path} {matching}");
            assert!(answer.body.is_empty(), "{path}");
            assert_eq!(answer.header("etag"), tag, "{path}");
            assert_eq!(answer.header("cache-control"), cache, "{path}");
            assert_ui_headers(&answer, path);
        }
        // Another build's tag, an unquoted tag, garbage: the file itself.
        for stale in [
            "\"0000\"".to_owned(),
            tag.trim_matches('"').to_owned(),
            "not a tag, ,,".to_owned(),
            String::new(),
        ] {
            let answer = request(&server, Method::GET, path, &[("if-none-match", &stale)]).await;
            assert_eq!(answer.status, 200, "{path} {stale:?}");
            assert!(!answer.body.is_empty(), "{path}");
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn the_apps_own_routes_get_its_page() {
    let server = TestServer::start().await;
    let root = get(&server, "/").await;
    for path in [
        "/sessions/01ABC",
        "/agents",
        "/settings/models",
        "/sessions/01ABC?tab=events&x=%20",
        "/apiary",
        "/assets",
        "/favicon-that-is-not-there.ico",
        "/Cargo.toml",
        "/%F0%9F%A6%80",
    ] {
        let answer = get(&server, path).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.text());
        assert_eq!(answer.body, root.body, "{path}");
        assert_eq!(answer.header("cache-control"), "no-cache", "{path}");
        assert_eq!(answer.header("content-type"), "text/html; charset=utf-8", "{path}");
        assert_ui_headers(&answer, path);
    }
    server.stop().await;
}

#[tokio::test]
async fn a_missing_asset_is_a_404_not_the_app() {
    let server = TestServer::start().await;
    for path in [
        "/assets/missing.js",
        "/assets/index-OLDBUILD.css",
        "/assets/",
        "/assets/nested/missing.js",
        "/assets//etc/passwd",
    ] {
        let answer = get(&server, path).await;
        assert_eq!(answer.status, 404, "{path}: {}", answer.text());
        assert!(answer.error_message().contains("not found"), "{path}");
        assert!(
            answer.headers.get("cache-control").is_none(),
            "a 404 is not cached for a year: {path}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn the_api_keeps_its_json_errors_and_its_pages_no_ui_policy() {
    let server = TestServer::start().await;
    for path in [
        "/api/v1/nope",
        "/api",
        "/api/",
        "/api/v1/sessions/x/y/z",
        "/healthz/",
        "/healthz/x",
        "/readyz/",
    ] {
        let answer = get(&server, path).await;
        assert_eq!(answer.status, 404, "{path}");
        assert_eq!(answer.error_message(), format!("Route not found: GET {path}"));
        assert!(answer.headers.get("content-security-policy").is_none(), "{path}");
    }
    // Methods other than GET and HEAD on the UI's paths: the 404 they always got.
    for (method, path) in [
        (Method::POST, "/"),
        (Method::PUT, "/sessions/01ABC"),
        (Method::DELETE, "/assets/missing.js"),
        (Method::PATCH, "/index.html"),
        (Method::OPTIONS, "/"),
    ] {
        let answer = request(&server, method.clone(), path, &[]).await;
        assert_eq!(answer.status, 404, "{method} {path}");
        assert_eq!(answer.error_message(), format!("Route not found: {method} {path}"));
    }
    let asset = referenced_assets(&get(&server, "/").await.text()).remove(0);
    let answer = request(&server, Method::POST, &asset, &[]).await;
    assert_eq!(answer.status, 404, "POST {asset}");
    // An API route without the method: still the API's 405.
    let answer = request(&server, Method::DELETE, "/api/v1/models", &[]).await;
    assert_eq!(answer.status, 405);
    assert!(answer.error_message().contains("Method not allowed"));

    // The API's own pages keep their headers: Swagger UI loads from a CDN, which the UI's policy forbids.
    for path in ["/api/v1/docs", "/api/v1/openapi.json", "/healthz"] {
        let answer = get(&server, path).await;
        assert_eq!(answer.status, 200, "{path}");
        assert!(answer.headers.get("content-security-policy").is_none(), "{path}");
    }
    server.stop().await;
}

#[tokio::test]
async fn the_host_and_origin_guard_covers_the_ui() {
    let server = TestServer::start().await;
    let asset = referenced_assets(&get(&server, "/").await.text()).remove(0);
    let own_origin = server.base.clone();

    // DNS rebinding: the app is not served to a page on a rebound name, nor are its files.
    for path in ["/", "/sessions/01ABC", asset.as_str(), "/assets/missing.js"] {
        let answer = request(&server, Method::GET, path, &[("host", "evil.example:8790")]).await;
        assert_eq!(answer.status, 403, "{path}");
        assert!(answer.error_message().contains("TRUEFORGE_ALLOWED_HOSTS"), "{path}");
        assert!(answer.headers.get("content-security-policy").is_none(), "{path}");
    }
    // Another site reading the page or including its script: refused.
    for (path, headers) in [
        ("/", vec![("origin", "http://evil.example")]),
        ("/", vec![("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "cors")]),
        (
            asset.as_str(),
            vec![("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "no-cors")],
        ),
        (
            asset.as_str(),
            vec![("origin", "http://evil.example"), ("sec-fetch-mode", "cors")],
        ),
    ] {
        let answer = request(&server, Method::GET, path, &headers).await;
        assert_eq!(answer.status, 403, "{path} {headers:?}");
        assert!(answer.error_message().contains("Cross-origin"), "{path}");
    }
    // A link from another site is a top-level navigation: it arrives.
    let answer = request(
        &server,
        Method::GET,
        "/sessions/01ABC",
        &[("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "navigate")],
    )
    .await;
    assert_eq!(answer.status, 200);
    // The page loading its own module script (same origin, CORS mode because of `crossorigin`).
    let answer = request(
        &server,
        Method::GET,
        &asset,
        &[
            ("origin", own_origin.as_str()),
            ("sec-fetch-site", "same-origin"),
            ("sec-fetch-mode", "cors"),
        ],
    )
    .await;
    assert_eq!(answer.status, 200);
    let answer = request(&server, Method::GET, "/", &[("host", "localhost")]).await;
    assert_eq!(answer.status, 200);
    server.stop().await;
}

#[tokio::test]
async fn paths_that_climb_out_serve_nothing_outside_the_embedded_files() {
    let server = TestServer::start().await;
    let index = get(&server, "/").await.text();
    // Sent as written: under `/assets/` nothing but an embedded asset is served.
    for target in [
        "/assets/../Cargo.toml",
        "/assets/../../Cargo.toml",
        "/assets/../../../crates/server/Cargo.toml",
        "/assets/%2e%2e/Cargo.toml",
        "/assets/%2e%2e%2f%2e%2e%2fCargo.toml",
        "/assets/..%2f..%2f..%2fCargo.toml",
        "/assets/..%5c..%5cCargo.toml",
        // hyper accepts a raw backslash, and `rust-embed` would read it as `/`.
        "/assets/..\\..\\Cargo.toml",
        "/assets/./index.html",
        "/assets/%00",
    ] {
        let (status, answer) = raw_get(&server, target).await;
        assert_eq!(status, 404, "{target}: {answer}");
        assert!(!answer.contains("[package]"), "{target}: {answer}");
    }
    // Outside `/assets/`: an unknown path is the app's page, never the file it names.
    let asset = referenced_assets(&index).remove(0);
    let asset_by_backslash = asset.replacen("/assets/", "/assets\\", 1);
    for target in [
        asset_by_backslash.as_str(),
        "/../Cargo.toml",
        "/../../../../etc/passwd",
        "/%2e%2e/%2e%2e/Cargo.toml",
        "/..%2f..%2fCargo.toml",
        "/..%5c..%5cCargo.toml",
        "/..\\..\\Cargo.toml",
        "/./index.html/..",
        "//etc/passwd",
    ] {
        let (status, answer) = raw_get(&server, target).await;
        assert_eq!(status, 200, "{target}: {answer}");
        assert!(answer.ends_with(&index), "{target}: {answer}");
        assert!(!answer.contains("[package]") && !answer.contains("root:"), "{target}");
    }
    server.stop().await;
}

#[tokio::test]
async fn head_answers_the_headers_of_get_without_a_body() {
    let server = TestServer::start().await;
    let root = get(&server, "/").await;
    let asset = referenced_assets(&root.text()).remove(0);
    let asset_get = get(&server, &asset).await;
    for (path, full) in [("/", &root), ("/settings/models", &root), (asset.as_str(), &asset_get)] {
        let head = request(&server, Method::HEAD, path, &[]).await;
        assert_eq!(head.status, 200, "{path}");
        assert!(head.body.is_empty(), "{path}");
        assert_eq!(head.header("content-length"), full.body.len().to_string(), "{path}");
        for name in ["content-type", "etag", "cache-control", "content-security-policy"] {
            assert_eq!(head.header(name), full.header(name), "{path} {name}");
        }
    }
    let head = request(&server, Method::HEAD, "/assets/missing.js", &[]).await;
    assert_eq!(head.status, 404);
    let head = request(&server, Method::HEAD, "/", &[("if-none-match", root.header("etag"))]).await;
    assert_eq!(head.status, 304);
    server.stop().await;
}

/// No deflate crate is in the dependency tree, so nothing is compressed: a client asking for gzip gets the
/// plain file, labelled as such (a `Content-Encoding` without compressed bytes would break the page).
#[tokio::test]
async fn files_are_served_uncompressed_whatever_the_client_accepts() {
    let server = TestServer::start().await;
    let root = get(&server, "/").await;
    let asset = referenced_assets(&root.text()).remove(0);
    let asset_plain = get(&server, &asset).await;
    for (path, plain) in [("/", &root), (asset.as_str(), &asset_plain)] {
        let answer = request(&server, Method::GET, path, &[("accept-encoding", "gzip, deflate, br")]).await;
        assert_eq!(answer.status, 200, "{path}");
        assert!(answer.headers.get("content-encoding").is_none(), "{path}");
        assert_eq!(answer.body, plain.body, "{path}");
    }
    server.stop().await;
}

#[tokio::test]
async fn trueforge_ui_off_leaves_only_the_api() {
    let data = tempfile::tempdir().unwrap();
    let from_env = |value: &str| {
        trueforge_server::ServerConfig::from_vars(&HashMap::from([
            (
                "TRUEFORGE_DATA_DIR".to_owned(),
                data.path().to_string_lossy().into_owned(),
            ),
            ("TRUEFORGE_UI".to_owned(), value.to_owned()),
        ]))
    };
    let error = from_env("maybe").unwrap_err();
    assert_eq!(error.variable, "TRUEFORGE_UI");
    assert!(error.to_string().contains("expected on or off"), "{error}");
    let serve_ui = from_env("off").unwrap().serve_ui;
    assert!(!serve_ui);

    let server = TestServer::start_with(|config| config.serve_ui = serve_ui).await;
    for path in ["/", "/index.html", "/sessions/01ABC", "/assets/index.js"] {
        let answer = get(&server, path).await;
        assert_eq!(answer.status, 404, "{path}");
        assert_eq!(answer.error_message(), format!("Route not found: GET {path}"));
        assert!(answer.headers.get("content-security-policy").is_none(), "{path}");
    }
    let (status, answer) = raw_get(&server, "/assets/../index.html").await;
    assert_eq!(status, 404, "{answer}");
    assert_eq!(get(&server, "/healthz").await.status, 200);
    assert_eq!(get(&server, "/api/v1/docs").await.status, 200);
    server.stop().await;
}

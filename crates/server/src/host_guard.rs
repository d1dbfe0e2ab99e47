//! Which requests the server answers at all, against DNS rebinding and cross-site requests.
//!
//! Local mode has no login, so anything that reaches the port can act as the user, and every web page the
//! user opens is a candidate. Two attacks matter:
//!
//! - **DNS rebinding**: a page at `evil.example` re-points its name to 127.0.0.1 and then talks to this
//!   server as a *same-origin* page, reading answers too. Its requests carry `Host: evil.example`, so the
//!   server answers only hosts it serves: loopback names and addresses, the address it is bound to,
//!   `PUBLIC_BASE_URL`'s host and the operator's `TRUEFORGE_ALLOWED_HOSTS`.
//! - **Cross-site requests**: any page may send a form post or a "simple" `fetch` (no preflight, e.g. a
//!   `text/plain` body) to 127.0.0.1. It cannot read the answer, but the request still acts. Browsers say
//!   where a request comes from (`Origin`, and `Sec-Fetch-Site` / `Sec-Fetch-Mode` in current browsers), so
//!   a request from another origin is refused, except a top-level navigation by a safe method (a link, or
//!   the redirect back from an OAuth authorization server), which is how browsers arrive at a server.
//!
//! Clients that are not browsers (the CLI, the Rust client, SDKs in Node, curl) send none of these
//! headers and are not affected.

use std::net::IpAddr;

use axum::extract::{Request, State};
use axum::http::header::{HOST, ORIGIN};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::config::ServerConfig;
use crate::error::ApiError;

const SEC_FETCH_SITE: &str = "sec-fetch-site";
const SEC_FETCH_MODE: &str = "sec-fetch-mode";

/// One entry of `TRUEFORGE_ALLOWED_HOSTS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedHost {
    /// `agents.example.com`: that name only.
    Exact(String),
    /// `.example.com`: every name under it (not `example.com` itself).
    Subdomains(String),
    /// `*`: any host. For operators behind a proxy that already checks `Host`; turns rebinding protection off.
    Any,
}

impl AllowedHost {
    /// Parses one entry; `None` for an entry that is not a host name pattern.
    pub fn parse(entry: &str) -> Option<Self> {
        // Compared with hosts as `normalise_host` gives them: an IPv6 literal without its brackets.
        let entry = normalise_host(entry.trim());
        if entry == "*" {
            return Some(Self::Any);
        }
        let (pattern, name) = match entry.strip_prefix('.') {
            Some(name) => (Self::Subdomains(format!(".{name}")), name.to_owned()),
            None => (Self::Exact(entry.clone()), entry),
        };
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || b"-.:[]".contains(&byte));
        valid.then_some(pattern)
    }

    fn matches(&self, host: &str) -> bool {
        match self {
            Self::Exact(name) => name == host,
            Self::Subdomains(suffix) => host.ends_with(suffix.as_str()),
            Self::Any => true,
        }
    }
}

/// The hosts and origins this server answers, from its configuration.
#[derive(Debug, Clone)]
pub struct HostGuard {
    bound: IpAddr,
    /// `PUBLIC_BASE_URL`, lowercased (scheme and authority).
    public_origin: Option<String>,
    public_host: Option<String>,
    allowed_hosts: Vec<AllowedHost>,
    /// `TRUEFORGE_ALLOWED_ORIGINS`, lowercased.
    allowed_origins: Vec<String>,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Refusal {
    Host(String),
    CrossOrigin(String),
}

impl Refusal {
    fn into_response(self) -> Response {
        let message = match self {
            Self::Host(host) => format!(
                "Host not allowed: {host}. This server answers loopback names, its bound address and \
                 PUBLIC_BASE_URL's host; add others to TRUEFORGE_ALLOWED_HOSTS"
            ),
            Self::CrossOrigin(origin) => format!(
                "Cross-origin request refused (from {origin}). Browsers may call this server only from its own \
                 origin, PUBLIC_BASE_URL or an origin listed in TRUEFORGE_ALLOWED_ORIGINS"
            ),
        };
        ApiError::new(StatusCode::FORBIDDEN, message).into_response()
    }
}

impl HostGuard {
    pub fn new(config: &ServerConfig) -> Self {
        let public_origin = config.public_base_url.as_deref().map(str::to_ascii_lowercase);
        let public_host = public_origin
            .as_deref()
            .and_then(|origin| origin.parse::<Uri>().ok())
            .and_then(|uri| uri.host().map(normalise_host));
        Self {
            bound: config.host,
            public_origin,
            public_host,
            allowed_hosts: config.allowed_hosts.clone(),
            allowed_origins: config
                .allowed_origins
                .iter()
                .map(|origin| origin.to_ascii_lowercase())
                .collect(),
        }
    }

    fn check(&self, method: &Method, uri: &Uri, headers: &HeaderMap) -> Result<(), Refusal> {
        // HTTP/1.1 puts the authority in `Host`; HTTP/2 in the request URI. Browsers always send one; a
        // request with neither comes from a program, which rebinding cannot forge.
        let authority = headers
            .get(HOST)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
            .or_else(|| uri.authority().map(|authority| authority.as_str().to_owned()));
        if let Some(authority) = &authority
            && !self.host_allowed(authority)
        {
            return Err(Refusal::Host(authority.clone()));
        }
        self.check_origin(method, authority.as_deref(), headers)
    }

    fn host_allowed(&self, authority: &str) -> bool {
        let Some(host) = host_of_authority(authority) else {
            return false;
        };
        let listed = self.public_host.as_deref() == Some(host.as_str())
            || self.allowed_hosts.iter().any(|allowed| allowed.matches(&host));
        if let Ok(address) = host.parse::<IpAddr>() {
            // A name can be rebound to 127.0.0.1, an address literal cannot: a page loaded from one address
            // never becomes same-origin with another. Any address the server is reachable at is fine, which
            // when bound to all interfaces is any address (behind a port forward, the operator lists it).
            return listed || address.is_loopback() || address == self.bound || self.bound.is_unspecified();
        }
        // Browsers resolve `localhost` and `*.localhost` to loopback themselves (RFC 6761), never via DNS.
        listed || host == "localhost" || host.ends_with(".localhost")
    }

    fn check_origin(&self, method: &Method, authority: Option<&str>, headers: &HeaderMap) -> Result<(), Refusal> {
        let text = |name| {
            headers
                .get(name)
                .and_then(|value: &axum::http::HeaderValue| value.to_str().ok())
        };
        let foreign_origin = match text(ORIGIN.as_str()) {
            Some(origin) => (!self.origin_allowed(origin, authority)).then(|| origin.to_owned()),
            // No `Origin`: older browsers omit it on same-origin requests; current ones still tell the site.
            None => match text(SEC_FETCH_SITE) {
                Some(site) if !site.eq_ignore_ascii_case("same-origin") && !site.eq_ignore_ascii_case("none") => {
                    Some(format!("a {site} page"))
                }
                _ => None,
            },
        };
        let Some(origin) = foreign_origin else {
            return Ok(());
        };
        let safe = matches!(*method, Method::GET | Method::HEAD);
        let navigation = text(SEC_FETCH_MODE).is_some_and(|mode| mode.eq_ignore_ascii_case("navigate"));
        if safe && navigation {
            return Ok(());
        }
        Err(Refusal::CrossOrigin(origin))
    }

    /// Whether `origin` is this server's own (the authority the request was sent to), `PUBLIC_BASE_URL`, or
    /// listed. `null` (sandboxed frames, some redirects) is never allowed.
    fn origin_allowed(&self, origin: &str, authority: Option<&str>) -> bool {
        let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
        if self.public_origin.as_deref() == Some(origin.as_str()) || self.allowed_origins.contains(&origin) {
            return true;
        }
        let Ok(uri) = origin.parse::<Uri>() else {
            return false;
        };
        let (Some(scheme), Some(origin_authority), Some(authority)) = (uri.scheme_str(), uri.authority(), authority)
        else {
            return false;
        };
        let default_port = match scheme {
            "http" => 80,
            "https" => 443,
            _ => return false,
        };
        let Ok(request_authority) = authority.to_ascii_lowercase().parse::<axum::http::uri::Authority>() else {
            return false;
        };
        // Behind a TLS-terminating proxy the request arrives as http while the page is https, so the scheme is
        // not compared; host and port are.
        normalise_host(origin_authority.host()) == normalise_host(request_authority.host())
            && origin_authority.port_u16().unwrap_or(default_port)
                == request_authority.port_u16().unwrap_or(default_port)
    }
}

/// The host of a `Host` header value (no port, no IPv6 brackets, lowercase, no trailing dot).
fn host_of_authority(authority: &str) -> Option<String> {
    let parsed = authority.trim().parse::<axum::http::uri::Authority>().ok()?;
    if parsed.as_str().contains('@') {
        return None;
    }
    Some(normalise_host(parsed.host()))
}

fn normalise_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// The middleware: refuses (403, nothing else runs) what [`HostGuard`] does not allow.
pub async fn guard_hosts(State(guard): State<std::sync::Arc<HostGuard>>, request: Request, next: Next) -> Response {
    match guard.check(request.method(), request.uri(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refusal) => {
            // The refused value itself is not logged: it is the client's, and may be long.
            let reason = match refusal {
                Refusal::Host(_) => "foreign host",
                Refusal::CrossOrigin(_) => "cross-origin browser request",
            };
            tracing::warn!(reason, method = %request.method(), "request refused");
            refusal.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(adjust: impl FnOnce(&mut ServerConfig)) -> HostGuard {
        let mut config = ServerConfig::for_data_dir("/tmp/unused").unwrap();
        adjust(&mut config);
        HostGuard::new(&config)
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        map
    }

    fn allowed(guard: &HostGuard, method: Method, pairs: &[(&str, &str)]) -> bool {
        guard
            .check(&method, &Uri::from_static("/api/v1/sessions"), &headers(pairs))
            .is_ok()
    }

    #[test]
    fn loopback_hosts_are_served_and_rebound_names_are_not() {
        let guard = guard(|_| {});
        for host in [
            "127.0.0.1:8790",
            "localhost:8790",
            "LOCALHOST",
            "app.localhost:1",
            "[::1]:8790",
            "127.5.6.7",
        ] {
            assert!(allowed(&guard, Method::GET, &[("host", host)]), "{host}");
        }
        for host in [
            "evil.example:8790",
            "localhost.evil.example",
            "10.0.0.5:8790",
            "user@localhost",
            "",
        ] {
            assert!(!allowed(&guard, Method::GET, &[("host", host)]), "{host}");
        }
    }

    #[test]
    fn the_bound_address_public_host_and_listed_hosts_are_served() {
        let guard = guard(|config| {
            config.host = "192.168.1.7".parse().unwrap();
            config.public_base_url = Some("https://agents.example.com".to_owned());
            config.allowed_hosts = vec![
                AllowedHost::parse("tf.internal").unwrap(),
                AllowedHost::parse(".corp.example").unwrap(),
            ];
        });
        for host in [
            "192.168.1.7:8790",
            "agents.example.com",
            "tf.internal:80",
            "a.b.corp.example",
        ] {
            assert!(allowed(&guard, Method::GET, &[("host", host)]), "{host}");
        }
        for host in ["corp.example", "192.168.1.8", "example.com"] {
            assert!(!allowed(&guard, Method::GET, &[("host", host)]), "{host}");
        }
        let everywhere = super::tests::guard(|config| config.host = "0.0.0.0".parse().unwrap());
        assert!(allowed(&everywhere, Method::GET, &[("host", "10.1.2.3:8790")]));
        assert!(!allowed(&everywhere, Method::GET, &[("host", "evil.example")]));
        // Addresses the server is reached at through a port forward or a proxy, when listed or public.
        let forwarded = super::tests::guard(|config| {
            config.allowed_hosts = vec![
                AllowedHost::parse("10.0.0.5").unwrap(),
                AllowedHost::parse("[FD00::1]").unwrap(),
            ];
            config.public_base_url = Some("http://192.168.9.9:8080".to_owned());
        });
        for host in ["10.0.0.5:8790", "[fd00::1]:8790", "192.168.9.9:8080"] {
            assert!(allowed(&forwarded, Method::GET, &[("host", host)]), "{host}");
        }
        assert!(!allowed(&forwarded, Method::GET, &[("host", "10.0.0.6")]));
        let any = super::tests::guard(|config| config.allowed_hosts = vec![AllowedHost::Any]);
        assert!(allowed(&any, Method::GET, &[("host", "evil.example")]));
    }

    #[test]
    fn browsers_may_change_state_only_from_an_allowed_origin() {
        let guard = guard(|config| config.allowed_origins = vec!["http://localhost:5173".to_owned()]);
        let host = ("host", "127.0.0.1:8790");
        assert!(allowed(&guard, Method::POST, &[host]), "no browser headers: a program");
        assert!(allowed(
            &guard,
            Method::POST,
            &[host, ("origin", "http://127.0.0.1:8790")]
        ));
        assert!(allowed(
            &guard,
            Method::POST,
            &[host, ("origin", "http://localhost:5173")]
        ));
        assert!(allowed(
            &guard,
            Method::POST,
            &[host, ("sec-fetch-site", "same-origin")]
        ));
        for origin in [
            "http://evil.example",
            "null",
            "http://127.0.0.1:9999",
            "http://localhost:8790",
        ] {
            assert!(!allowed(&guard, Method::POST, &[host, ("origin", origin)]), "{origin}");
        }
        assert!(!allowed(
            &guard,
            Method::DELETE,
            &[host, ("sec-fetch-site", "cross-site")]
        ));
        assert!(!allowed(&guard, Method::POST, &[host, ("sec-fetch-site", "same-site")]));
    }

    #[test]
    fn cross_site_reads_are_refused_but_navigations_arrive() {
        let guard = guard(|_| {});
        let host = ("host", "localhost:8790");
        let cross = ("sec-fetch-site", "cross-site");
        assert!(!allowed(
            &guard,
            Method::GET,
            &[host, cross, ("sec-fetch-mode", "no-cors")]
        ));
        assert!(!allowed(
            &guard,
            Method::GET,
            &[host, ("origin", "http://evil.example")]
        ));
        assert!(allowed(
            &guard,
            Method::GET,
            &[host, cross, ("sec-fetch-mode", "navigate")]
        ));
        assert!(!allowed(
            &guard,
            Method::POST,
            &[host, cross, ("sec-fetch-mode", "navigate")]
        ));
    }

    #[test]
    fn allowed_host_entries_parse() {
        assert_eq!(
            AllowedHost::parse(" Agents.Example.com. "),
            Some(AllowedHost::Exact("agents.example.com".into()))
        );
        assert_eq!(
            AllowedHost::parse(".example.com"),
            Some(AllowedHost::Subdomains(".example.com".into()))
        );
        assert_eq!(AllowedHost::parse("*"), Some(AllowedHost::Any));
        assert_eq!(AllowedHost::parse("bad host"), None);
        assert_eq!(AllowedHost::parse("."), None);
    }
}

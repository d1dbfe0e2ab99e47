//! A real OpenID provider for tests, and a browser to log in through it.
//!
//! [`OidcProvider`] runs `oidc/provider.mjs`: the certified `oidc-provider` package from npm (installed by
//! `scripts/test.sh` into `TRUEFORGE_TEST_OIDC_DIR`), with one confidential client ([`CLIENT_ID`]) and the
//! accounts of [`accounts`]. [`Browser`] keeps cookies per origin and follows redirects one at a time, so a
//! test drives the real authorization-code flow with plain HTTP requests.
//!
//! Both panic on failure: they are test support, and a failure is a failed test.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::header::{COOKIE, HeaderMap, LOCATION, SET_COOKIE};
use reqwest::{Method, StatusCode, Url};
use serde_json::{Value, json};

/// The client the provider knows, as the server under test is configured with it.
pub const CLIENT_ID: &str = "trueforge-test";
pub const CLIENT_SECRET: &str = "test-client-secret-123456";

/// The accounts the provider knows: alice administers acme, bob is a user of acme, carol administers globex,
/// nobody has no tenant. Roles are in `groups`, tenants in `tenant`.
pub fn accounts() -> Value {
    json!({
        "alice": {"tenant": "acme", "groups": ["admin", "staff"]},
        "bob": {"tenant": "acme", "groups": ["staff"]},
        "carol": {"tenant": "globex", "groups": "admin"},
        "nobody": {"groups": []},
    })
}

/// A free TCP port on the loopback interface.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .unwrap_or_else(|error| panic!("no free port: {error}"))
}

/// The provider process, on a port fixed for its life (a restart keeps its issuer), stopped when dropped.
pub struct OidcProvider {
    process: Option<Child>,
    port: u16,
    redirect_uri: String,
    keys: tempfile::TempDir,
}

impl OidcProvider {
    /// Starts the provider for a client whose redirect URI is `redirect_uri`, signing with the first key of
    /// `kids` (comma-separated key ids; keys are made once per id and kept for the provider's life).
    pub fn start(redirect_uri: &str, kids: &str) -> Self {
        let mut provider = Self {
            process: None,
            port: free_port(),
            redirect_uri: redirect_uri.to_owned(),
            keys: tempfile::tempdir().unwrap_or_else(|error| panic!("a temp dir: {error}")),
        };
        provider.restart(kids);
        provider
    }

    fn command(&self, mode: &str, kids: &str) -> Command {
        let dir = std::env::var("TRUEFORGE_TEST_OIDC_DIR").unwrap_or_else(|_| {
            panic!("TRUEFORGE_TEST_OIDC_DIR is not set: run the tests through scripts/test.sh, which installs oidc-provider")
        });
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("oidc/provider.mjs");
        let mut command = Command::new("node");
        command
            .arg(script)
            .arg(mode)
            .env("OIDC_PROVIDER_DIR", dir)
            .env("OIDC_PORT", self.port.to_string())
            .env("OIDC_CLIENT_ID", CLIENT_ID)
            .env("OIDC_CLIENT_SECRET", CLIENT_SECRET)
            .env("OIDC_REDIRECT_URI", &self.redirect_uri)
            .env("OIDC_ACCOUNTS", accounts().to_string())
            .env("OIDC_KEY_DIR", self.keys.path())
            .env("OIDC_KIDS", kids);
        command
    }

    /// (Re)starts the provider signing with the first of `kids`; returns once it answers.
    pub fn restart(&mut self, kids: &str) {
        self.stop();
        let process = self
            .command("serve", kids)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("node runs the OpenID provider: {error}"));
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the OpenID provider did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        self.process = Some(process);
    }

    pub fn issuer(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A token signed with the key `kids` names first, with exactly the given claims (for tokens the provider
    /// will not issue, such as an expired one).
    pub fn mint(&self, kids: &str, claims: &Value) -> String {
        let output = self
            .command("mint", kids)
            .env("OIDC_MINT_CLAIMS", claims.to_string())
            .output()
            .unwrap_or_else(|error| panic!("node mints a token: {error}"));
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// An ID token as the provider issues them, for `user` of `tenant`, with the admin role (`groups`
    /// holding `admin`) when `admin`; valid for ten minutes. For tests of what a token may do, not of login.
    pub fn token_for(&self, user: &str, tenant: &str, admin: bool) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs());
        let groups = if admin { json!(["admin"]) } else { json!(["staff"]) };
        let claims = json!({"iss": self.issuer(), "aud": CLIENT_ID, "sub": user, "tenant": tenant, "groups": groups,
            "iat": now, "exp": now + 600});
        self.mint("k1", &claims)
    }

    fn stop(&mut self) {
        if let Some(mut process) = self.process.take() {
            let _ = process.kill();
            let _ = process.wait();
        }
    }
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A browser: cookies per origin (scheme, host and port), redirects followed by hand so each step can be
/// checked.
pub struct Browser {
    http: reqwest::Client,
    cookies: HashMap<String, HashMap<String, String>>,
    /// Origins whose cookies are another's: replicas a test runs on separate ports stand for one address.
    aliases: HashMap<String, String>,
}

impl Default for Browser {
    fn default() -> Self {
        Self::new()
    }
}

impl Browser {
    pub fn new() -> Self {
        Self {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap_or_else(|error| panic!("an HTTP client: {error}")),
            cookies: HashMap::new(),
            aliases: HashMap::new(),
        }
    }

    fn parse(url: &str) -> Url {
        Url::parse(url).unwrap_or_else(|error| panic!("{url}: {error}"))
    }

    fn origin(url: &str) -> String {
        let parsed = Self::parse(url);
        format!(
            "{}://{}:{}",
            parsed.scheme(),
            parsed.host_str().unwrap_or_default(),
            parsed.port_or_known_default().unwrap_or_default()
        )
    }

    /// The cookie jar `url` uses: its origin's, or the one its origin is an alias of.
    fn jar_of(&self, url: &str) -> String {
        let origin = Self::origin(url);
        self.aliases.get(&origin).cloned().unwrap_or(origin)
    }

    /// Makes `alias` share the cookies of `site` (the server's replicas, each on its own port here, stand for
    /// the one address a load balancer would give them).
    pub fn same_site(&mut self, alias: &str, site: &str) {
        self.aliases.insert(Self::origin(alias), Self::origin(site));
    }

    /// The cookie `name` the origin of `url` set, if it is still set.
    pub fn cookie(&self, url: &str, name: &str) -> Option<String> {
        self.cookies.get(&self.jar_of(url))?.get(name).cloned()
    }

    /// One request with the origin's cookies (and a form body, if given); keeps the cookies it sets.
    pub async fn request(
        &mut self,
        method: Method,
        url: &str,
        form: Option<&[(&str, &str)]>,
    ) -> (StatusCode, HeaderMap, String) {
        let origin = self.jar_of(url);
        let mut request = self.http.request(method, url);
        if let Some(jar) = self.cookies.get(&origin).filter(|jar| !jar.is_empty()) {
            let header = jar
                .iter()
                .map(|(name, value)| format!("{name}={value}"))
                .collect::<Vec<_>>()
                .join("; ");
            request = request.header(COOKIE, header);
        }
        if let Some(form) = form {
            request = request.form(form);
        }
        let response = request.send().await.unwrap_or_else(|error| panic!("{url}: {error}"));
        let status = response.status();
        let headers = response.headers().clone();
        for set in headers.get_all(SET_COOKIE) {
            let set = set.to_str().unwrap_or_default();
            let (pair, attributes) = set.split_once(';').unwrap_or((set, ""));
            let Some((name, value)) = pair.split_once('=') else {
                continue;
            };
            let jar = self.cookies.entry(origin.clone()).or_default();
            if value.is_empty() || attributes.contains("Max-Age=0") || attributes.contains("expires=Thu, 01 Jan 1970") {
                jar.remove(name.trim());
            } else {
                jar.insert(name.trim().to_owned(), value.to_owned());
            }
        }
        let body = response.text().await.unwrap_or_default();
        (status, headers, body)
    }

    /// Where a redirect answer to a request for `url` points.
    fn next(url: &str, headers: &HeaderMap) -> Option<String> {
        let location = headers.get(LOCATION)?.to_str().ok()?;
        Some(Self::parse(url).join(location).ok()?.to_string())
    }

    /// Follows redirects from `url`; the last answer and its URL.
    pub async fn follow(&mut self, url: &str) -> (String, StatusCode, HeaderMap, String) {
        let mut url = url.to_owned();
        for _ in 0..10 {
            let (status, headers, body) = self.request(Method::GET, &url, None).await;
            match Self::next(&url, &headers).filter(|_| status.is_redirection()) {
                Some(next) => url = next,
                None => return (url, status, headers, body),
            }
        }
        panic!("too many redirects from {url}");
    }

    /// Logs `account` in from `login_url` (a server's `/api/v1/auth/login?...`): the provider's login form
    /// (any password), then the redirects back; returns where the last one led.
    pub async fn log_in(&mut self, login_url: &str, account: &str) -> String {
        let (url, status, _, page) = self.follow(login_url).await;
        assert_eq!(status, StatusCode::OK, "the provider's login form at {url}: {page}");
        let action = page
            .split("action=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("a form in the login page: {page}"));
        let submit = Self::parse(&url)
            .join(action)
            .unwrap_or_else(|error| panic!("{action}: {error}"))
            .to_string();
        let (status, headers, body) = self
            .request(
                Method::POST,
                &submit,
                Some(&[("prompt", "login"), ("login", account), ("password", "anything")]),
            )
            .await;
        assert!(status.is_redirection(), "{status}: {body}");
        let next = Self::next(&submit, &headers).unwrap_or_else(|| panic!("a redirect after the login form"));
        let (last, _, _, _) = self.follow(&next).await;
        last
    }
}

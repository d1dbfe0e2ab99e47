//! Server configuration from the environment, with the reference's variable names where they exist. Every
//! value is checked at start-up; a bad one stops the server with a message naming the variable.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use trueforge_protocol::ApprovalScope;

use crate::catalogs::CatalogPaths;
use crate::host_guard::AllowedHost;

mod hosted;

pub use hosted::{HostedConfig, OidcConfig};

pub const DEFAULT_PORT: u16 = 8790;
pub const DEFAULT_BODY_LIMIT: usize = 30 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid configuration: {variable}={value:?}: {reason}")]
pub struct ConfigError {
    pub variable: String,
    pub value: String,
    pub reason: String,
}

/// How log lines are written to stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// Everything the server reads from its environment.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub host: IpAddr,
    pub port: u16,
    /// Where local mode keeps its database and secret key (`TRUEFORGE_DATA_DIR`, else the platform's data
    /// directory).
    pub data_dir: PathBuf,
    /// The SQLite file (`SQLITE_PATH`, else `<data_dir>/db/db.sqlite`).
    pub sqlite_path: PathBuf,
    pub body_limit: usize,
    pub execution_timeout: Duration,
    /// How long a turn's live stream is kept from its start, and after its end.
    pub stream_ttl: Duration,
    pub stream_ttl_after_end: Duration,
    pub subscribe_timeout: Duration,
    pub graceful_timeout: Duration,
    /// Seconds between `: ping` comments on idle SSE streams.
    pub heartbeat: Duration,
    /// How long a running turn's lease lasts without renewal; a turn whose lease ran out (its process died)
    /// is resumed by a server that finds it. Renewed every third of it.
    pub lease_ttl: Duration,
    /// How long a paused turn's approvals and questions hold the conversation before a new user message
    /// closes them as unanswered.
    pub approval_timeout: Duration,
    /// The broadest approval scope users may give (`TRUEFORGE_APPROVAL_MAX_SCOPE`, default `agent`).
    pub approval_max_scope: ApprovalScope,
    /// Whether MCP servers of type `stdio` (child processes of this server) may be configured and started
    /// (`TRUEFORGE_MCP_ALLOW_STDIO`). On by default in local mode, where the processes run as the user who
    /// started the server; hosted mode will default it to off.
    pub allow_stdio_mcp: bool,
    /// The origin browsers reach this server at (`PUBLIC_BASE_URL`), for the MCP OAuth callback address;
    /// unset, the address the server listens on. Its host is also served (see `allowed_hosts`).
    pub public_base_url: Option<String>,
    /// Host names served besides loopback, the bound address and `PUBLIC_BASE_URL`'s host
    /// (`TRUEFORGE_ALLOWED_HOSTS`, comma-separated; `.example.com` for every name under it, `*` for any).
    pub allowed_hosts: Vec<AllowedHost>,
    /// Browser origins allowed to call the API besides the server's own and `PUBLIC_BASE_URL`
    /// (`TRUEFORGE_ALLOWED_ORIGINS`, comma-separated, e.g. `http://localhost:5173`).
    pub allowed_origins: Vec<String>,
    /// Whether the web UI is served at `/` (`TRUEFORGE_UI`, `on` by default). `off` for API-only
    /// deployments: every path outside the API is then a JSON 404, as for an unknown API path.
    pub serve_ui: bool,
    /// How long a model response may stay silent (no byte received) before the call fails
    /// (`TRUEFORGE_MODEL_IDLE_TIMEOUT_SECONDS`).
    pub model_idle_timeout: Duration,
    /// The shortest time allowed between two occurrences of a schedule's cron
    /// (`TRUEFORGE_SCHEDULE_MIN_INTERVAL_SECONDS`, one hour by default as in the reference).
    pub schedule_min_interval: Duration,
    /// The `client_name` registered with MCP servers' authorization servers (`MCP_DCR_OAUTH_CLIENT_NAME`).
    pub oauth_client_name: String,
    /// The time limit of each request to an authorization server (`MCP_OAUTH_HTTP_TIMEOUT_MS`).
    pub oauth_timeout: Duration,
    pub log_level: String,
    /// `text` (for a terminal) or `json` (one object per line with the trace id, for log collectors)
    /// (`LOG_FORMAT`).
    pub log_format: LogFormat,
    pub catalogs: CatalogPaths,
    pub sandbox: SandboxConfig,
    /// Provider API keys found in the environment, configured as providers on first start.
    pub provider_keys: ProviderKeys,
    /// Hosted mode (`STANDALONE=false`): many replicas on a shared Postgres and Redis. `None`: local mode.
    pub hosted: Option<HostedConfig>,
    /// `OIDC_*` variables set in local mode, where login does not exist (as in the reference): the server
    /// starts without login and says so loudly, rather than let an operator believe requests are checked.
    pub ignored_login_variables: Vec<&'static str>,
}

/// How this server gives agents sandboxes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxConfig {
    /// Whether the local sandbox (bubblewrap, on this machine) is offered to tenants without a remote
    /// provider (`TRUEFORGE_SANDBOX`: `local`, the default, or `off`).
    pub local: bool,
    /// Whether local sandboxes reach the network (`TRUEFORGE_SANDBOX_NETWORK`, `off` by default).
    pub network: bool,
    /// How long one command may run when the provider sets no limit (`TRUEFORGE_SANDBOX_EXEC_TIMEOUT_SECONDS`).
    pub exec_timeout: Duration,
    /// The largest file downloaded from or uploaded into a sandbox (`SANDBOX_FILE_MAX_BYTES_FOR_DOWNLOAD`).
    pub file_max_bytes: u64,
    /// Whether skills may come from `file://` repositories on this machine (`TRUEFORGE_SKILLS_ALLOW_FILE_URLS`).
    pub skills_allow_file_urls: bool,
    /// A git credential-store file used to fetch skills from private repositories
    /// (`TRUEFORGE_GIT_CREDENTIALS_FILE`); it stays on the host, never in a sandbox.
    pub git_credentials: Option<PathBuf>,
    /// The Daytona API remote sandboxes are made with (`DAYTONA_API_URL`).
    pub daytona_api_url: String,
}

/// API keys of well-known providers given by the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderKeys {
    pub openai: Option<String>,
    pub anthropic: Option<String>,
    pub gemini: Option<String>,
}

/// Reads variables from a map, so tests need not touch the process environment.
struct Vars<'a>(&'a HashMap<String, String>);

impl Vars<'_> {
    /// A set, non-blank value.
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .map(|value| value.trim())
            .filter(|value| !value.is_empty())
    }

    fn error(&self, name: &str, reason: impl Into<String>) -> ConfigError {
        ConfigError {
            variable: name.to_owned(),
            value: self.0.get(name).cloned().unwrap_or_default(),
            reason: reason.into(),
        }
    }

    /// An error about a value that may hold a password: the value is not repeated.
    fn secret_error(&self, name: &str, reason: impl Into<String>) -> ConfigError {
        ConfigError {
            variable: name.to_owned(),
            value: "<redacted>".to_owned(),
            reason: reason.into(),
        }
    }

    fn positive(&self, name: &str, default: u64) -> Result<u64, ConfigError> {
        match self.get(name) {
            None => Ok(default),
            Some(text) => match text.parse::<u64>() {
                Ok(value) if value >= 1 => Ok(value),
                _ => Err(self.error(name, "expected a whole number of at least 1")),
            },
        }
    }

    fn boolean(&self, name: &str, default: bool) -> Result<bool, ConfigError> {
        match self.get(name).map(str::to_ascii_lowercase).as_deref() {
            None => Ok(default),
            Some("true") => Ok(true),
            Some("false") => Ok(false),
            Some(_) => Err(self.error(name, "expected true or false")),
        }
    }

    /// A feature switch: `on` or `off` (`true` and `false` too, like the boolean variables).
    fn switch(&self, name: &str, default: bool) -> Result<bool, ConfigError> {
        match self.get(name).map(str::to_ascii_lowercase).as_deref() {
            None => Ok(default),
            Some("on" | "true") => Ok(true),
            Some("off" | "false") => Ok(false),
            Some(_) => Err(self.error(name, "expected on or off")),
        }
    }

    fn path(&self, name: &str) -> Option<PathBuf> {
        self.get(name).map(PathBuf::from)
    }
}

/// `PUBLIC_BASE_URL`: an http(s) origin (a trailing `/` is dropped); empty counts as unset.
fn public_base_url(vars: &Vars<'_>) -> Result<Option<String>, ConfigError> {
    match vars.get("PUBLIC_BASE_URL").map(str::trim) {
        None | Some("") => Ok(None),
        Some(text) => {
            let origin = text.trim_end_matches('/');
            let scheme_ok = origin.starts_with("http://") || origin.starts_with("https://");
            let host = origin.split_once("://").map_or("", |(_, rest)| rest);
            if !scheme_ok || host.is_empty() || host.contains(['/', '?', '#', ' ']) {
                return Err(vars.error(
                    "PUBLIC_BASE_URL",
                    "expected an origin such as https://agents.example.com (scheme and host, no path)",
                ));
            }
            Ok(Some(origin.to_owned()))
        }
    }
}

/// The entries of a comma-separated list variable (blank entries ignored).
fn list<'a>(vars: &'a Vars<'_>, name: &str) -> Vec<&'a str> {
    vars.get(name)
        .map(|text| {
            text.split(',')
                .map(str::trim)
                .filter(|entry| !entry.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// `TRUEFORGE_ALLOWED_HOSTS`: host names (`agents.example.com`), suffixes (`.example.com`) or `*`.
fn allowed_hosts(vars: &Vars<'_>) -> Result<Vec<AllowedHost>, ConfigError> {
    const NAME: &str = "TRUEFORGE_ALLOWED_HOSTS";
    list(vars, NAME)
        .into_iter()
        .map(|entry| {
            AllowedHost::parse(entry).ok_or_else(|| {
                vars.error(
                    NAME,
                    format!("{entry:?} is not a host name, a .suffix or *; list names without scheme or port"),
                )
            })
        })
        .collect()
}

/// `TRUEFORGE_ALLOWED_ORIGINS`: origins such as `http://localhost:5173` (scheme, host, optional port).
fn allowed_origins(vars: &Vars<'_>) -> Result<Vec<String>, ConfigError> {
    const NAME: &str = "TRUEFORGE_ALLOWED_ORIGINS";
    list(vars, NAME)
        .into_iter()
        .map(|entry| {
            let origin = entry.trim_end_matches('/');
            let host = origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"))
                .unwrap_or_default();
            if host.is_empty() || host.contains(['/', '?', '#', ' ', '*']) {
                return Err(vars.error(
                    NAME,
                    format!("{entry:?} is not an origin such as http://localhost:5173 (scheme and host, no path)"),
                ));
            }
            Ok(origin.to_ascii_lowercase())
        })
        .collect()
}

/// The local sandbox is on by default in local mode only: a hosted turn may resume on another replica,
/// which cannot reach a sandbox on the first one's disk.
fn sandbox_config(vars: &Vars<'_>, hosted: bool) -> Result<SandboxConfig, ConfigError> {
    let local = match vars.get("TRUEFORGE_SANDBOX").map(str::to_ascii_lowercase).as_deref() {
        None => !hosted,
        Some("local") => true,
        Some("off") => false,
        Some(_) => return Err(vars.error("TRUEFORGE_SANDBOX", "expected local or off")),
    };
    let daytona_api_url = vars
        .get("DAYTONA_API_URL")
        .unwrap_or("https://app.daytona.io/api")
        .trim_end_matches('/')
        .to_owned();
    if !(daytona_api_url.starts_with("https://") || daytona_api_url.starts_with("http://")) {
        return Err(vars.error("DAYTONA_API_URL", "expected an http(s) URL"));
    }
    Ok(SandboxConfig {
        local,
        network: vars.switch("TRUEFORGE_SANDBOX_NETWORK", false)?,
        exec_timeout: Duration::from_secs(vars.positive("TRUEFORGE_SANDBOX_EXEC_TIMEOUT_SECONDS", 120)?),
        file_max_bytes: vars.positive("SANDBOX_FILE_MAX_BYTES_FOR_DOWNLOAD", 20 * 1024 * 1024)?,
        skills_allow_file_urls: vars.switch("TRUEFORGE_SKILLS_ALLOW_FILE_URLS", false)?,
        git_credentials: vars.path("TRUEFORGE_GIT_CREDENTIALS_FILE"),
        daytona_api_url,
    })
}

impl ServerConfig {
    /// The configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_vars(&std::env::vars().collect())
    }

    pub fn from_vars(map: &HashMap<String, String>) -> Result<Self, ConfigError> {
        let vars = Vars(map);
        let hosted = if vars.boolean("STANDALONE", true)? {
            None
        } else {
            Some(hosted::hosted_config(&vars)?)
        };
        let port = match vars.get("PORT") {
            None => DEFAULT_PORT,
            Some(text) => text
                .parse::<u16>()
                .ok()
                .filter(|port| *port >= 1)
                .ok_or_else(|| vars.error("PORT", "expected a port number from 1 to 65535"))?,
        };
        let host = match vars.get("HOST") {
            None => IpAddr::from([127, 0, 0, 1]),
            Some("localhost") => IpAddr::from([127, 0, 0, 1]),
            Some(text) => text
                .parse::<IpAddr>()
                .map_err(|_| vars.error("HOST", "expected an IP address such as 127.0.0.1 or 0.0.0.0"))?,
        };
        let data_dir = match vars.path("TRUEFORGE_DATA_DIR") {
            Some(dir) => dir,
            None => platform_data_dir(map).ok_or_else(|| {
                vars.error(
                    "TRUEFORGE_DATA_DIR",
                    "no home directory to put the data in; set TRUEFORGE_DATA_DIR",
                )
            })?,
        };
        let sqlite_path = vars
            .path("SQLITE_PATH")
            .unwrap_or_else(|| data_dir.join("db").join("db.sqlite"));
        let body_limit = vars.positive("MAX_REQUEST_BODY_BYTES", DEFAULT_BODY_LIMIT as u64)?;
        let execution_seconds = vars.positive("SERVER_EXECUTION_TIMEOUT_SECONDS", 600)?;
        let stream_ttl = vars.positive("TURN_STREAM_TTL_SECONDS", execution_seconds + 300)?;
        let log_level = vars.get("LOG_LEVEL").unwrap_or("info").to_ascii_lowercase();
        if !["error", "warn", "info", "debug", "trace"].contains(&log_level.as_str()) {
            return Err(vars.error("LOG_LEVEL", "expected one of error, warn, info, debug, trace"));
        }
        let log_format = match vars.get("LOG_FORMAT").map(str::to_ascii_lowercase).as_deref() {
            None | Some("text") => LogFormat::Text,
            Some("json") => LogFormat::Json,
            Some(_) => return Err(vars.error("LOG_FORMAT", "expected text or json")),
        };
        let approval_max_scope = match vars.get("TRUEFORGE_APPROVAL_MAX_SCOPE") {
            None => ApprovalScope::Agent,
            Some(text) => ApprovalScope::from_wire(&text.to_ascii_lowercase())
                .ok_or_else(|| vars.error("TRUEFORGE_APPROVAL_MAX_SCOPE", "expected one of once, session, agent"))?,
        };
        let key = |name: &str| vars.get(name).map(str::to_owned);
        let sandbox = sandbox_config(&vars, hosted.is_some())?;
        Ok(Self {
            host,
            port,
            data_dir,
            sqlite_path,
            body_limit: usize::try_from(body_limit).unwrap_or(usize::MAX),
            execution_timeout: Duration::from_secs(execution_seconds),
            stream_ttl: Duration::from_secs(stream_ttl),
            stream_ttl_after_end: Duration::from_secs(vars.positive("TURN_STREAM_POST_COMPLETION_TTL_SECONDS", 300)?),
            subscribe_timeout: Duration::from_millis(vars.positive("TURN_SUBSCRIBE_TIMEOUT_MS", 600_000)?),
            graceful_timeout: Duration::from_secs(vars.positive("GRACEFUL_TIMEOUT_SECONDS", 30)?),
            heartbeat: Duration::from_secs(vars.positive("TRUEFORGE_SSE_HEARTBEAT_SECONDS", 15)?),
            lease_ttl: Duration::from_secs(vars.positive("TRUEFORGE_LEASE_TTL_SECONDS", 30)?),
            approval_timeout: Duration::from_secs(vars.positive("TRUEFORGE_APPROVAL_TIMEOUT_SECONDS", 3600)?),
            approval_max_scope,
            // Hosted mode: child processes of a shared server would run as the service for every user.
            allow_stdio_mcp: vars.boolean("TRUEFORGE_MCP_ALLOW_STDIO", hosted.is_none())?,
            public_base_url: public_base_url(&vars)?,
            allowed_hosts: allowed_hosts(&vars)?,
            allowed_origins: allowed_origins(&vars)?,
            serve_ui: vars.switch("TRUEFORGE_UI", true)?,
            model_idle_timeout: Duration::from_secs(vars.positive(
                "TRUEFORGE_MODEL_IDLE_TIMEOUT_SECONDS",
                trueforge_llm::ClientOptions::default().idle_timeout.as_secs(),
            )?),
            schedule_min_interval: Duration::from_secs(vars.positive("TRUEFORGE_SCHEDULE_MIN_INTERVAL_SECONDS", 3600)?),
            oauth_client_name: vars.get("MCP_DCR_OAUTH_CLIENT_NAME").unwrap_or("trueforge").to_owned(),
            oauth_timeout: Duration::from_millis(vars.positive("MCP_OAUTH_HTTP_TIMEOUT_MS", 15_000)?),
            log_level,
            log_format,
            catalogs: CatalogPaths {
                models: vars.path("MODEL_CATALOG_PATH"),
                mcp_servers: vars.path("MCP_CATALOG_PATH"),
                skills: vars.path("SKILL_CATALOG_PATH"),
                sandbox_providers: vars.path("SANDBOX_CATALOG_PATH"),
            },
            sandbox,
            provider_keys: ProviderKeys {
                openai: key("OPENAI_API_KEY"),
                anthropic: key("ANTHROPIC_API_KEY"),
                gemini: key("GEMINI_API_KEY"),
            },
            ignored_login_variables: if hosted.is_none() {
                hosted::LOGIN_VARIABLES
                    .into_iter()
                    .filter(|name| vars.get(name).is_some())
                    .collect()
            } else {
                Vec::new()
            },
            hosted,
        })
    }

    /// Whether the SQLite file's directory belongs to this server (the default `<data_dir>/db`, or any
    /// directory inside the data directory) and may be made private, or is the operator's.
    pub fn database_dir_ownership(&self) -> crate::private_files::Existing {
        match self.sqlite_path.parent() {
            Some(parent) if parent.starts_with(&self.data_dir) => crate::private_files::Existing::Tighten,
            _ => crate::private_files::Existing::Leave,
        }
    }

    /// A configuration for tests and embedding: a data directory, defaults for everything else.
    pub fn for_data_dir(data_dir: impl Into<PathBuf>) -> Result<Self, ConfigError> {
        let data_dir: PathBuf = data_dir.into();
        let vars = HashMap::from([("TRUEFORGE_DATA_DIR".to_owned(), data_dir.to_string_lossy().into_owned())]);
        Self::from_vars(&vars)
    }
}

/// `$XDG_DATA_HOME/trueforge`, else `~/.local/share/trueforge` (Linux); `~/Library/Application
/// Support/trueforge` (macOS).
fn platform_data_dir(vars: &HashMap<String, String>) -> Option<PathBuf> {
    let home = vars.get("HOME").filter(|home| !home.is_empty()).map(PathBuf::from);
    if cfg!(target_os = "macos") {
        return home.map(|home| home.join("Library/Application Support/trueforge"));
    }
    if let Some(xdg) = vars.get("XDG_DATA_HOME").filter(|dir| !dir.is_empty()) {
        return Some(PathBuf::from(xdg).join("trueforge"));
    }
    home.map(|home| home.join(".local/share/trueforge"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn defaults_follow_the_reference() {
        let config = ServerConfig::from_vars(&vars(&[("HOME", "/home/me")])).unwrap();
        assert_eq!(config.port, 8790);
        assert_eq!(config.host, IpAddr::from([127, 0, 0, 1]));
        assert_eq!(config.data_dir, PathBuf::from("/home/me/.local/share/trueforge"));
        assert_eq!(
            config.sqlite_path,
            PathBuf::from("/home/me/.local/share/trueforge/db/db.sqlite")
        );
        assert_eq!(config.body_limit, 31_457_280);
        assert_eq!(config.stream_ttl, Duration::from_secs(900));
        assert_eq!(config.heartbeat, Duration::from_secs(15));
        assert_eq!(config.approval_max_scope, ApprovalScope::Agent);
        assert_eq!(config.schedule_min_interval, Duration::from_secs(3600));
        assert!(config.serve_ui);
    }

    #[test]
    fn the_ui_switch_reads_on_and_off() {
        for (value, serve_ui) in [
            ("off", false),
            ("OFF", false),
            ("false", false),
            (" on ", true),
            ("true", true),
        ] {
            let config = ServerConfig::from_vars(&vars(&[("HOME", "/h"), ("TRUEFORGE_UI", value)])).unwrap();
            assert_eq!(config.serve_ui, serve_ui, "{value}");
        }
        let error = ServerConfig::from_vars(&vars(&[("HOME", "/h"), ("TRUEFORGE_UI", "disabled")])).unwrap_err();
        assert_eq!(error.reason, "expected on or off", "{error}");
    }

    #[test]
    fn data_dir_and_keys_come_from_the_environment() {
        let config = ServerConfig::from_vars(&vars(&[
            ("TRUEFORGE_DATA_DIR", "/srv/tf"),
            ("OPENAI_API_KEY", "sk-1"),
            ("GEMINI_API_KEY", " "),
            ("PORT", "9000"),
        ]))
        .unwrap();
        assert_eq!(config.sqlite_path, PathBuf::from("/srv/tf/db/db.sqlite"));
        assert_eq!(config.provider_keys.openai.as_deref(), Some("sk-1"));
        assert_eq!(config.provider_keys.gemini, None);
        assert_eq!(config.port, 9000);
    }

    #[test]
    fn allowed_hosts_and_origins_are_lists() {
        let config = ServerConfig::from_vars(&vars(&[
            ("HOME", "/h"),
            ("TRUEFORGE_ALLOWED_HOSTS", "Agents.example.com, .corp.example,,"),
            (
                "TRUEFORGE_ALLOWED_ORIGINS",
                "http://localhost:5173/, https://UI.example.com",
            ),
        ]))
        .unwrap();
        assert_eq!(
            config.allowed_hosts,
            vec![
                AllowedHost::Exact("agents.example.com".to_owned()),
                AllowedHost::Subdomains(".corp.example".to_owned())
            ]
        );
        assert_eq!(
            config.allowed_origins,
            vec!["http://localhost:5173".to_owned(), "https://ui.example.com".to_owned()]
        );
        let defaults = ServerConfig::from_vars(&vars(&[("HOME", "/h")])).unwrap();
        assert!(defaults.allowed_hosts.is_empty() && defaults.allowed_origins.is_empty());
        assert_eq!(defaults.model_idle_timeout, Duration::from_secs(120));
    }

    #[test]
    fn approval_max_scope_comes_from_the_environment() {
        for (value, scope) in [
            ("once", ApprovalScope::Once),
            ("Session", ApprovalScope::Session),
            ("agent", ApprovalScope::Agent),
        ] {
            let config =
                ServerConfig::from_vars(&vars(&[("HOME", "/h"), ("TRUEFORGE_APPROVAL_MAX_SCOPE", value)])).unwrap();
            assert_eq!(config.approval_max_scope, scope, "{value}");
        }
    }

    #[test]
    fn login_variables_in_local_mode_are_noted_as_ignored() {
        let config = ServerConfig::from_vars(&vars(&[
            ("HOME", "/h"),
            ("OIDC_ISSUER_URL", "https://login.example"),
            ("OIDC_CLIENT_ID", "tf"),
        ]))
        .unwrap();
        assert!(config.hosted.is_none());
        assert_eq!(config.ignored_login_variables, ["OIDC_ISSUER_URL", "OIDC_CLIENT_ID"]);
        let plain = ServerConfig::from_vars(&vars(&[("HOME", "/h")])).unwrap();
        assert!(plain.ignored_login_variables.is_empty());
    }

    #[test]
    fn a_bad_value_names_its_variable() {
        for (name, value) in [
            ("PORT", "0"),
            ("PORT", "70000"),
            ("HOST", "my host"),
            ("MAX_REQUEST_BODY_BYTES", "-5"),
            ("SERVER_EXECUTION_TIMEOUT_SECONDS", "ten"),
            ("STANDALONE", "yes"),
            ("LOG_LEVEL", "loud"),
            ("LOG_FORMAT", "xml"),
            ("TRUEFORGE_APPROVAL_MAX_SCOPE", "forever"),
            ("TRUEFORGE_ALLOWED_HOSTS", "agents.example.com, http://x"),
            ("TRUEFORGE_ALLOWED_ORIGINS", "localhost:5173"),
            ("TRUEFORGE_ALLOWED_ORIGINS", "http://localhost:5173/app"),
            ("TRUEFORGE_MODEL_IDLE_TIMEOUT_SECONDS", "0"),
            ("TRUEFORGE_UI", "0"),
        ] {
            let error = ServerConfig::from_vars(&vars(&[("HOME", "/h"), (name, value)])).unwrap_err();
            assert_eq!(error.variable, name, "{error}");
            assert!(error.to_string().contains(name), "{error}");
        }
    }
}

//! Building the server (stores, bus, runtime) and serving it with a graceful shutdown.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use trueforge_agent::sandbox::SandboxOptions;
use trueforge_agent::{LeaseTiming, LiveStreams, Runtime, RuntimeOptions, StoredAgentApprovals, StoredAgents};
use trueforge_llm::ClientOptions;
use trueforge_protocol::{
    ConfiguredModel, ModelProviderAuth, ModelProviderManifest, TenantId, WellKnownModelProvider, WellKnownProviderType,
};
use trueforge_sandbox::{LocalConfig, LocalProvider, SkillSources};
use trueforge_store::crypto::SecretCipher;
use trueforge_store::db::{MigrateOnOpen, PostgresDb, PostgresOptions, SqliteDb};
use trueforge_store::session::model::LeaseRequest;
use trueforge_store::settings::{PostgresSettingsStore, SettingsStore, SqliteSettingsStore};
use trueforge_store::{PostgresSessionStore, SessionStore, SqliteSessionStore};

use crate::bus::{EventBus, MemoryBus, RedisBus, RedisCancelRelay};
use crate::catalogs::{CatalogLoadError, Catalogs};
use crate::config::ServerConfig;
use crate::error::ApiError;
use crate::extract::BodyLimit;
use crate::host_guard::{HostGuard, guard_hosts};
use crate::mcp_oauth::McpOAuth;
use crate::mcp_tools::{DEFAULT_CALL_TIMEOUT, SettingsMcpToolSets};
use crate::models::SettingsModels;
use crate::private_files::{Existing, private_database_file, private_dir};
use crate::sandboxes::{HostSandboxes, LocalSandbox};
use crate::state::{AppState, DatabaseProbe, LOCAL_EXECUTOR, LOCAL_TENANT};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot create the data directory {path}: {source}")]
    DataDir { path: String, source: std::io::Error },
    #[error("cannot open the database {path}: {source}")]
    Database {
        path: String,
        source: trueforge_store::StoreError,
    },
    #[error("cannot load the secret key: {0}")]
    SecretKey(#[from] trueforge_store::crypto::SecretError),
    #[error(transparent)]
    Catalog(#[from] CatalogLoadError),
    #[error("cannot build the HTTP client for model providers: {0}")]
    Http(trueforge_llm::LlmError),
    #[error("cannot configure model providers from the environment: {0}")]
    Providers(trueforge_store::StoreError),
    #[error("cannot build the HTTP client for MCP authorization servers: {0}")]
    OAuthHttp(String),
    #[error("another TrueForge server is using the database {path} (its lock file {lock} is held); stop it first")]
    DatabaseInUse { path: String, lock: String },
    #[error("cannot take the lock file {path}: {source}")]
    Lock { path: String, source: std::io::Error },
    #[error("cannot hand the turns of the previous run to this one: {0}")]
    Leases(trueforge_store::StoreError),
    #[error("cannot use Postgres (DATABASE_URL, or POSTGRES_HOST/PORT/USER/PASSWORD/DB): {0}")]
    Postgres(trueforge_store::StoreError),
    #[error("cannot use Redis (REDIS_URL): {0}")]
    Redis(trueforge_bus::BusError),
    #[error("hosted mode needs STANDALONE=false and its configuration")]
    NotHosted,
    #[error("cannot use the OpenID provider (OIDC_ISSUER_URL, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET): {0}")]
    Oidc(crate::auth::oidc::OidcError),
}

struct PostgresProbe(PostgresDb);

#[async_trait::async_trait]
impl DatabaseProbe for PostgresProbe {
    async fn ready(&self) -> Result<(), String> {
        self.0.check_ready().await.map_err(|error| error.to_string())
    }
}

struct SqliteProbe(SqliteDb);

#[async_trait::async_trait]
impl DatabaseProbe for SqliteProbe {
    async fn ready(&self) -> Result<(), String> {
        self.0.check_ready().await.map_err(|error| error.to_string())
    }

    fn sqlite(&self) -> Option<&SqliteDb> {
        Some(&self.0)
    }
}

/// Opens local mode's SQLite database (creating its directory), migrated; the file readable by its owner
/// only.
pub async fn open_database(path: &Path, existing_dir: Existing) -> Result<SqliteDb, StartError> {
    let data_dir_error = |dir: &Path, source| StartError::DataDir {
        path: dir.display().to_string(),
        source,
    };
    if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        private_dir(parent, existing_dir).map_err(|source| data_dir_error(parent, source))?;
    }
    private_database_file(path).map_err(|source| data_dir_error(path, source))?;
    SqliteDb::open(path, MigrateOnOpen::Yes)
        .await
        .map_err(|source| StartError::Database {
            path: path.display().to_string(),
            source,
        })
}

/// Everything the API needs, on local mode's SQLite database.
pub async fn local_state(config: ServerConfig) -> Result<AppState, StartError> {
    if !config.ignored_login_variables.is_empty() {
        tracing::warn!(
            variables = %config.ignored_login_variables.join(", "),
            "login needs hosted mode (STANDALONE=false): these are ignored, there is no login and every request is the local admin"
        );
    }
    private_dir(&config.data_dir, Existing::Tighten).map_err(|source| StartError::DataDir {
        path: config.data_dir.display().to_string(),
        source,
    })?;
    // The lock first: a second server must not even migrate the database under the first one's feet.
    let database_lock = Arc::new(lock_database(&config.sqlite_path, config.database_dir_ownership())?);
    let db = open_database(&config.sqlite_path, config.database_dir_ownership()).await?;
    let cipher = SecretCipher::from_env_or_key_file(&config.data_dir.join("secret.key"))?;
    let settings: Arc<dyn SettingsStore> = Arc::new(SqliteSettingsStore::open(db.clone(), cipher).await.map_err(
        |source| StartError::Database {
            path: config.sqlite_path.display().to_string(),
            source,
        },
    )?);
    let sessions: Arc<dyn SessionStore> = Arc::new(SqliteSessionStore::new(db.clone()));
    let owner = format!("{LOCAL_EXECUTOR}:{}", ulid::Ulid::new().to_string().to_lowercase());
    // This process is the only executor of its database (the lock says so): every turn still leased to
    // another owner was left running by an earlier run that is gone. Ending those leases now lets the
    // first lease sweep (at serve) resume the turns at once rather than after their lease ran out.
    let orphaned = sessions
        .expire_leases_of_others(&owner)
        .await
        .map_err(StartError::Leases)?;
    if orphaned > 0 {
        tracing::info!(turns = orphaned, "turns left running by the previous run will resume");
    }
    assemble(
        config,
        Shared {
            sessions,
            settings,
            bus: Arc::new(MemoryBus::new()),
            cancel_relay: None,
            redis: None,
            executor_id: LOCAL_EXECUTOR.to_owned(),
            owner,
            database: Arc::new(SqliteProbe(db)),
            database_lock: Some(database_lock),
            oidc: None,
        },
    )
    .await
}

/// Everything the API needs in hosted mode: the shared Postgres (migrated at boot; replicas booting
/// together take turns under the migrator's advisory lock) and Redis, and an executor id of this boot.
pub async fn hosted_state(config: ServerConfig) -> Result<AppState, StartError> {
    let hosted = config.hosted.clone().ok_or(StartError::NotHosted)?;
    let options = PostgresOptions {
        max_connections: hosted.pool_max,
        statement_timeout: Some(hosted.statement_timeout),
        idle_in_transaction_timeout: Some(hosted.idle_in_transaction_timeout),
        acquire_timeout: Duration::from_secs(10),
    };
    let db = PostgresDb::connect_with(&hosted.database_url, options, MigrateOnOpen::Yes)
        .await
        .map_err(StartError::Postgres)?;
    let cipher = SecretCipher::from_env_or_key_file(&config.data_dir.join("secret.key"))?;
    let settings: Arc<dyn SettingsStore> = Arc::new(
        PostgresSettingsStore::open(db.clone(), cipher)
            .await
            .map_err(StartError::Postgres)?,
    );
    let sessions: Arc<dyn SessionStore> = Arc::new(PostgresSessionStore::new(db.clone()));
    let executor_id = executor_id();
    let bus = RedisBus::connect(&hosted.redis_url).await.map_err(StartError::Redis)?;
    let relay = RedisCancelRelay::connect(&hosted.redis_url, &executor_id, hosted.cancel_timeout)
        .await
        .map_err(StartError::Redis)?;
    let oidc = match hosted.oidc.clone() {
        Some(config) => {
            let issuer = config.issuer_url.clone();
            let oidc = crate::auth::oidc::Oidc::discover(config)
                .await
                .map_err(StartError::Oidc)?;
            tracing::info!(%issuer, "login with the OpenID provider is on");
            Some(Arc::new(oidc))
        }
        None => {
            tracing::warn!("no OIDC_* configuration: no login, every caller is the admin");
            None
        }
    };
    tracing::info!(executor = %executor_id, "hosted mode: Postgres and Redis connected");
    assemble(
        config,
        Shared {
            sessions,
            settings,
            bus: Arc::new(bus.clone()),
            redis: Some(bus),
            cancel_relay: Some(relay),
            owner: executor_id.clone(),
            executor_id,
            database: Arc::new(PostgresProbe(db)),
            database_lock: None,
            oidc,
        },
    )
    .await
}

/// The state of the server's mode: hosted when `STANDALONE=false`, else local.
pub async fn state_for(config: ServerConfig) -> Result<AppState, StartError> {
    if config.hosted.is_some() {
        hosted_state(config).await
    } else {
        local_state(config).await
    }
}

/// A replica's executor id, new at every boot: six characters of `[0-9a-z]`, the reference's shape (the
/// suffix of the turn ids it mints, and the owner of its turns' leases).
fn executor_id() -> String {
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    // A ULID's 80 random bits (from the OS's generator) are plenty for six base-36 digits.
    let mut random = ulid::Ulid::new().random();
    (0..6)
        .map(|_| {
            let digit = usize::try_from(random % 36).unwrap_or(0);
            random /= 36;
            char::from(ALPHABET[digit])
        })
        .collect()
}

/// What differs between the modes: the stores, the bus, who this process is among the executors.
struct Shared {
    sessions: Arc<dyn SessionStore>,
    settings: Arc<dyn SettingsStore>,
    bus: Arc<dyn EventBus>,
    cancel_relay: Option<RedisCancelRelay>,
    executor_id: String,
    /// The owner of the leases of the turns this process runs.
    owner: String,
    database: Arc<dyn DatabaseProbe>,
    database_lock: Option<Arc<std::fs::File>>,
    oidc: Option<Arc<crate::auth::oidc::Oidc>>,
    redis: Option<RedisBus>,
}

/// The rest of the state, the same in both modes.
async fn assemble(config: ServerConfig, shared: Shared) -> Result<AppState, StartError> {
    let Shared {
        sessions,
        settings,
        bus,
        cancel_relay,
        executor_id,
        owner,
        database,
        database_lock,
        oidc,
        redis,
    } = shared;
    let catalogs = Arc::new(Catalogs::load(&config.catalogs)?);
    configure_providers_from_env(&config, settings.as_ref(), &catalogs)
        .await
        .map_err(StartError::Providers)?;
    let models = Arc::new(
        SettingsModels::new(
            settings.clone(),
            Arc::new(catalogs.model_catalog().clone()),
            ClientOptions {
                idle_timeout: config.model_idle_timeout,
                ..ClientOptions::default()
            },
        )
        .map_err(StartError::Http)?,
    );
    let lease = LeaseTiming::for_ttl(config.lease_ttl);
    let oauth = McpOAuth::new(
        settings.clone(),
        config.oauth_client_name.clone(),
        config.public_base_url.clone(),
        config.oauth_timeout,
    )
    .map_err(|error| StartError::OAuthHttp(error.to_string()))?;
    let mcp = SettingsMcpToolSets::new(
        settings.clone(),
        Arc::new(oauth),
        DEFAULT_CALL_TIMEOUT,
        config.allow_stdio_mcp,
    );
    let sandboxes = Arc::new(host_sandboxes(&config, settings.clone()));
    let mut runtime = Runtime::new(
        sessions.clone(),
        models.clone(),
        Arc::new(StoredAgents(settings.clone())),
        mcp.clone(),
        RuntimeOptions {
            execution_timeout: Some(config.execution_timeout),
            approval_timeout: Some(config.approval_timeout),
            approval_max_scope: config.approval_max_scope,
            lease: Some(LeaseRequest {
                owner,
                ttl_ms: i64::try_from(lease.ttl.as_millis()).unwrap_or(i64::MAX),
            }),
            ..RuntimeOptions::default()
        },
    )
    .with_agent_approvals(Arc::new(StoredAgentApprovals(settings.clone())))
    .with_sandboxes(sandboxes.clone())
    .with_live_streams(LiveStreams {
        bus: bus.clone(),
        ttl: config.stream_ttl,
        ttl_after_end: config.stream_ttl_after_end,
    });
    if let Some(relay) = &cancel_relay {
        runtime = runtime.with_cancel_relay(Arc::new(relay.clone()));
    }
    let runtime = Arc::new(runtime);
    if let Some(relay) = &cancel_relay {
        // Weak: the relay outlives nothing it serves, and the runtime holds the relay.
        let served = Arc::downgrade(&runtime);
        relay.serve(Arc::new(move |key, reason| {
            served.upgrade().is_some_and(|runtime| runtime.cancel_here(key, reason))
        }));
    }
    Ok(AppState {
        config: Arc::new(config),
        sessions,
        settings,
        runtime,
        bus,
        catalogs,
        models,
        mcp,
        sandboxes,
        executor_id,
        database,
        database_lock,
        oidc,
        redis,
    })
}

/// The sandboxes of local mode: the tenant's remote provider when configured, else the local sandbox
/// when the operator leaves it on and it works on this machine (probed once, here; the reason is logged
/// and shown by `/capabilities` when it does not).
fn host_sandboxes(config: &ServerConfig, settings: Arc<dyn SettingsStore>) -> HostSandboxes {
    let sandbox = &config.sandbox;
    let local = if sandbox.local {
        let mut local_config = LocalConfig::new(config.data_dir.join("sandboxes"));
        local_config.network = sandbox.network;
        match LocalProvider::probe(&local_config)
            .and_then(|_| LocalProvider::new(local_config).map_err(|error| error.to_string()))
        {
            Ok(provider) => {
                tracing::info!(network = sandbox.network, "local sandbox available (bubblewrap)");
                LocalSandbox::Available(Arc::new(provider))
            }
            Err(reason) => {
                tracing::warn!(%reason, "local sandbox unavailable");
                LocalSandbox::Unavailable(reason)
            }
        }
    } else {
        LocalSandbox::Unavailable("turned off by TRUEFORGE_SANDBOX=off".to_owned())
    };
    let options = SandboxOptions {
        exec_timeout: sandbox.exec_timeout,
        upload_max_bytes: sandbox.file_max_bytes,
        bridge_dir: config.data_dir.join("run").join("bridges"),
        ..SandboxOptions::default()
    };
    let mut skill_sources = SkillSources::new(config.data_dir.join("cache").join("skills"));
    skill_sources.allow_file_urls = sandbox.skills_allow_file_urls;
    skill_sources.git_credentials = sandbox.git_credentials.clone();
    HostSandboxes::new(settings, local, sandbox.clone(), options, skill_sources)
}

/// Takes the exclusive lock that makes this process the only server of the database at `path`, held as
/// long as the returned file is open (the OS releases it when the process dies, `kill -9` included).
fn lock_database(path: &Path, existing_dir: Existing) -> Result<std::fs::File, StartError> {
    if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        private_dir(parent, existing_dir).map_err(|source| StartError::DataDir {
            path: parent.display().to_string(),
            source,
        })?;
    }
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock_path = std::path::PathBuf::from(lock_path);
    let lock_error = |source| StartError::Lock {
        path: lock_path.display().to_string(),
        source,
    };
    let mut options = std::fs::OpenOptions::new();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(&lock_path).map_err(lock_error)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(StartError::DatabaseInUse {
            path: path.display().to_string(),
            lock: lock_path.display().to_string(),
        }),
        Err(std::fs::TryLockError::Error(source)) => Err(lock_error(source)),
    }
}

/// On first start with a provider's API key in the environment, configures that provider with the
/// catalog's models. An existing provider of that type is left as it is (the settings API owns it).
async fn configure_providers_from_env(
    config: &ServerConfig,
    settings: &dyn SettingsStore,
    catalogs: &Catalogs,
) -> Result<(), trueforge_store::StoreError> {
    let keys = [
        (WellKnownProviderType::OpenAi, config.provider_keys.openai.as_ref()),
        (
            WellKnownProviderType::Anthropic,
            config.provider_keys.anthropic.as_ref(),
        ),
        (
            WellKnownProviderType::GoogleGemini,
            config.provider_keys.gemini.as_ref(),
        ),
    ];
    let tenant = TenantId::from(LOCAL_TENANT);
    for (provider_type, key) in keys {
        let Some(key) = key else { continue };
        let name = provider_type.as_str();
        if settings.get_model_provider(&tenant, name).await?.is_some() {
            continue;
        }
        let models: Vec<ConfiguredModel> = catalogs
            .model_catalog()
            .providers
            .iter()
            .filter(|provider| provider.provider_type == name)
            .flat_map(|provider| &provider.models)
            .map(|model| ConfiguredModel {
                model_id: model.model_id.clone(),
                name: model.name.clone(),
                properties: model.properties.clone(),
            })
            .collect();
        if models.is_empty() {
            tracing::warn!(provider = name, "no catalog models for this provider; not configured");
            continue;
        }
        let manifest = ModelProviderManifest::WellKnown {
            provider: provider_type,
            config: WellKnownModelProvider {
                auth: ModelProviderAuth { api_key: key.clone() },
                models,
                base_url: provider_type.default_base_url().to_owned(),
            },
        };
        settings.create_model_provider(&tenant, manifest).await?;
        tracing::info!(provider = name, "configured a model provider from the environment");
    }
    Ok(())
}

/// Answers 413 before reading a body whose declared length is over the limit, and hands the limit to
/// the body extractors for bodies without a declared length.
async fn body_limit(mut request: Request, next: Next) -> Response {
    let limit = request
        .extensions()
        .get::<BodyLimit>()
        .copied()
        .unwrap_or(BodyLimit(usize::MAX));
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit.0 as u64) {
        return limit.exceeded().into_response();
    }
    // A body without a declared length (chunked) is read here, up to the limit, so the limit holds on
    // every route, also those that never read their body.
    if declared.is_none() && request.headers().contains_key(TRANSFER_ENCODING) {
        let (parts, body) = request.into_parts();
        let bytes = match axum::body::to_bytes(body, limit.0).await {
            Ok(bytes) => bytes,
            Err(error) if crate::extract::is_length_limit(&error) => return limit.exceeded().into_response(),
            Err(error) => {
                return ApiError::bad_request(format!("Could not read the request body: {error}")).into_response();
            }
        };
        request = Request::from_parts(parts, axum::body::Body::from(bytes));
    }
    request.extensions_mut().insert(limit);
    next.run(request).await
}

/// The longest request target (path and query) answered. No route needs more; a longer one is a mistake
/// or an attack, answered with the API's JSON error rather than read further.
pub const MAX_URI_BYTES: usize = 8 * 1024;

async fn uri_limit(request: Request, next: Next) -> Response {
    let length = request.uri().path_and_query().map_or(0, |target| target.as_str().len());
    if length > MAX_URI_BYTES {
        return ApiError::new(
            StatusCode::URI_TOO_LONG,
            format!("The URL is {length} bytes long; the limit is {MAX_URI_BYTES}"),
        )
        .into_response();
    }
    next.run(request).await
}

async fn not_found(request: Request) -> Response {
    ApiError::not_found(format!(
        "Route not found: {} {}",
        request.method(),
        request.uri().path()
    ))
    .into_response()
}

async fn method_not_allowed(request: Request) -> Response {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("Method not allowed: {} {}", request.method(), request.uri().path()),
    )
    .into_response()
}

/// The web UI for a `GET`/`HEAD` outside the API, else the API's JSON 404.
///
/// Other methods on the UI's paths (`POST /`, `DELETE /sessions/x`) stay the 404 they were before the UI:
/// those paths are no resources that take any method, and a 405 would claim they are (and owe an `Allow`
/// header). Only the API's own routes answer 405 for a method they lack, as before.
async fn ui_or_not_found(request: Request) -> Response {
    if crate::ui_assets::answers(request.method(), request.uri().path()) {
        return crate::ui_assets::respond(request.uri().path(), request.headers());
    }
    not_found(request).await
}

/// The HTTP app over a state.
pub fn router(state: AppState) -> Router {
    // Installed before anything is counted (the first server of the process installs it).
    crate::prometheus::recorder();
    let limit = BodyLimit(state.config.body_limit);
    let hosts = Arc::new(HostGuard::new(&state.config));
    let app = crate::routes::api().merge(crate::openapi::routes());
    // The UI is the fallback of the same router, so the layers below (the host and origin guard first of
    // all) cover it as they cover the API: a page on a rebound name must not load either.
    let app = if state.config.serve_ui {
        app.fallback(ui_or_not_found)
    } else {
        app.fallback(not_found)
    };
    app.method_not_allowed_fallback(method_not_allowed)
        .with_state(state.clone())
        .layer(middleware::from_fn_with_state(state, crate::auth::identify))
        .layer(middleware::from_fn(body_limit))
        .layer(axum::Extension(limit))
        // A request from a host or origin that is not ours reaches nothing, not even the body limit.
        .layer(middleware::from_fn_with_state(hosts, guard_hosts))
        .layer(middleware::from_fn(uri_limit))
        // Outermost: every answer is counted, traced and logged, refusals by the layers above included.
        .layer(middleware::from_fn(crate::observe::observe_http))
}

/// Serves the app on `listener` until `shutdown` resolves, then ends running turns (`turn.done` with
/// `abandoned`) within the graceful timeout. Renews leases and resumes orphaned turns meanwhile.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let runtime = state.runtime.clone();
    let mcp = state.mcp.clone();
    if let Ok(address) = listener.local_addr() {
        mcp.oauth().set_listen_address(address);
    }
    let grace = state.config.graceful_timeout;
    let lease_ttl = state.config.lease_ttl;
    let leases = tokio::spawn({
        let runtime = runtime.clone();
        async move {
            let timing = LeaseTiming::for_ttl(lease_ttl);
            let mut tick = tokio::time::interval(timing.renew_every);
            loop {
                tick.tick().await;
                runtime.maintain_leases(timing).await;
            }
        }
    });
    let (stopping, stopped) = tokio::sync::watch::channel(false);
    // Every replica dispatches due schedules; the store's claim lets one run each occurrence.
    let schedules = crate::schedules::dispatch::spawn(state.clone(), stopped.clone());
    let app = router(state);
    // SSE frames are small writes; without TCP_NODELAY, Nagle holds each one until the previous is
    // acknowledged, and a delayed ACK adds ~40 ms per frame.
    let listener = listener.tap_io(|stream| {
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
    });
    let server = axum::serve(listener, app).with_graceful_shutdown({
        let runtime = runtime.clone();
        async move {
            shutdown.await;
            let _ = stopping.send(true);
            // Ending the turns first ends their SSE streams, so open connections can close.
            runtime.shutdown(grace).await;
        }
    });
    let mut stopped_watch = stopped.clone();
    let result = tokio::select! {
        result = server => result,
        () = async move {
            let _ = stopped_watch.wait_for(|stopped| *stopped).await;
            // Subscribers of finished turns and idle keep-alive connections get a bounded time to close.
            tokio::time::sleep(grace + Duration::from_secs(1)).await;
        } => Ok(()),
    };
    drop(stopped);
    leases.abort();
    schedules.abort();
    mcp.close_all().await;
    result
}

//! `trueforge doctor`: checks what local mode needs and says what is wrong, without changing anything.

use std::time::Duration;

use trueforge_sandbox::{LocalConfig, LocalProvider};
use trueforge_server::ServerConfig;
use trueforge_store::crypto::SecretCipher;
use trueforge_store::db::{MigrateOnOpen, SqliteDb};
use trueforge_store::settings::{ModelProviderStore, SqliteSettingsStore};

/// One check's outcome.
enum Outcome {
    Ok(String),
    Warn(String),
    Fail(String),
}

fn report(name: &str, outcome: &Outcome) {
    let (mark, text) = match outcome {
        Outcome::Ok(text) => ("ok  ", text),
        Outcome::Warn(text) => ("warn", text),
        Outcome::Fail(text) => ("FAIL", text),
    };
    println!("[{mark}] {name}: {text}");
}

/// Runs every check; `Err` when any failed (the exit status says so).
pub async fn run() -> Result<(), String> {
    let mut failed = 0;
    let mut check = |name: &str, outcome: Outcome| {
        if matches!(outcome, Outcome::Fail(_)) {
            failed += 1;
        }
        report(name, &outcome);
    };
    let config = match ServerConfig::from_env() {
        Ok(config) => {
            check(
                "configuration",
                Outcome::Ok("environment variables are valid".to_owned()),
            );
            config
        }
        Err(error) => {
            check("configuration", Outcome::Fail(error.to_string()));
            return Err("1 check failed".to_owned());
        }
    };
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .map_err(|error| format!("cannot build an HTTP client: {error}"))?;

    let server_url = format!("http://{}:{}/readyz", config.host, config.port);
    check(
        "server",
        match http.get(&server_url).send().await {
            Ok(response) if response.status().is_success() => Outcome::Ok(format!("{server_url} answers")),
            Ok(response) => Outcome::Warn(format!("{server_url} answered {}", response.status())),
            Err(_) => Outcome::Warn(format!(
                "nothing answers at {server_url} (start it with `trueforge serve`)"
            )),
        },
    );

    if !config.sqlite_path.exists() {
        check(
            "database",
            Outcome::Warn(format!(
                "{} does not exist yet; `trueforge serve` or `trueforge migrate` creates it",
                config.sqlite_path.display()
            )),
        );
    } else {
        match SqliteDb::open(&config.sqlite_path, MigrateOnOpen::No).await {
            Err(error) => check(
                "database",
                Outcome::Fail(format!("{}: {error}", config.sqlite_path.display())),
            ),
            Ok(db) => {
                check(
                    "database",
                    Outcome::Ok(format!("{} opens", config.sqlite_path.display())),
                );
                for (name, outcome) in providers(&config, db, &http).await {
                    check(&name, outcome);
                }
            }
        }
    }

    check("sandbox", sandbox_prerequisites(&config));
    if failed == 0 {
        Ok(())
    } else {
        Err(format!("{failed} check(s) failed"))
    }
}

/// Each configured model provider: can its endpoint be reached at all (any HTTP answer counts).
async fn providers(config: &ServerConfig, db: SqliteDb, http: &reqwest::Client) -> Vec<(String, Outcome)> {
    let key_file = config.data_dir.join("secret.key");
    if !key_file.exists() && std::env::var_os("TRUEFORGE_SECRET_KEY").is_none() {
        return vec![(
            "model providers".to_owned(),
            Outcome::Warn("no secret key yet, so no provider is configured".to_owned()),
        )];
    }
    let cipher = match SecretCipher::from_env_or_key_file(&key_file) {
        Ok(cipher) => cipher,
        Err(error) => return vec![("secret key".to_owned(), Outcome::Fail(error.to_string()))],
    };
    let settings = match SqliteSettingsStore::open(db, cipher).await {
        Ok(settings) => settings,
        Err(error) => return vec![("settings".to_owned(), Outcome::Fail(error.to_string()))],
    };
    let records = match settings
        .list_model_providers(&trueforge_server::state::LOCAL_TENANT.into())
        .await
    {
        Ok(records) => records,
        Err(error) => return vec![("model providers".to_owned(), Outcome::Fail(error.to_string()))],
    };
    if records.is_empty() {
        return vec![(
            "model providers".to_owned(),
            Outcome::Warn(
                "none configured: set OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY, or PUT \
                 /api/v1/settings/model-providers"
                    .to_owned(),
            ),
        )];
    }
    let mut outcomes = Vec::new();
    for record in records {
        let base_url = record.manifest.base_url().to_owned();
        let outcome = match http.get(&base_url).send().await {
            Ok(response) => Outcome::Ok(format!("{base_url} reachable (HTTP {})", response.status().as_u16())),
            Err(error) => Outcome::Fail(format!("{base_url} unreachable: {error}")),
        };
        outcomes.push((format!("provider {}", record.name), outcome));
    }
    outcomes
}

/// The local sandbox: whether it works here with the flags commands get (bubblewrap, python3 inside, what
/// holds the process and memory limits), or why not. A remote provider can still serve turns without it.
fn sandbox_prerequisites(config: &ServerConfig) -> Outcome {
    if !config.sandbox.local {
        return Outcome::Warn("the local sandbox is turned off (TRUEFORGE_SANDBOX=off)".to_owned());
    }
    let mut local = LocalConfig::new(config.data_dir.join("sandboxes"));
    local.network = config.sandbox.network;
    match LocalProvider::probe(&local) {
        Ok(probe) => Outcome::Ok(format!(
            "local sandbox works: {}, {} inside, processes held by {}, memory by {}, network {}",
            probe.bwrap_version,
            probe.python3,
            probe.processes,
            probe.memory,
            if probe.network { "on" } else { "off" }
        )),
        Err(reason) => Outcome::Warn(format!(
            "the local sandbox cannot run here: {reason}. Agents with a sandbox need a remote provider \
             (PUT /api/v1/settings/sandbox-providers) until this is fixed"
        )),
    }
}

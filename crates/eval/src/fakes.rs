//! What the runner serves in its own process and configures on the server under test: the fake enterprise
//! MCP servers (always) and the scripted model (scripted runs), with clocks of their busy time.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use trueforge_testkit::busy::BusyClock;
use trueforge_testkit::enterprise_mcp::{Crm, EnterpriseMcpServer, FileServer, Tracker};
use trueforge_testkit::fake_llm::{Api, FakeLlm};
use trueforge_testkit::mcp_http::ToolServer;

use crate::model::RealModel;
use crate::run::RunError;

/// The spec model name of the scripted model.
pub const SCRIPTED_MODEL: &str = "eval/scripted";

/// The fakes, alive while the runner runs.
pub struct Fakes {
    /// `None` on a real model.
    pub model: Option<FakeLlm>,
    _servers: Vec<EnterpriseMcpServer>,
    /// Busy while any fake MCP server runs a tool.
    tools: Arc<BusyClock>,
    /// Busy while the scripted model answers or any tool runs.
    either: Arc<BusyClock>,
}

/// The fakes' busy time at one moment; two readings subtract to a run's.
#[derive(Debug, Clone, Copy)]
pub struct BusyReading {
    pub model: Duration,
    pub tools: Duration,
    pub either: Duration,
}

impl BusyReading {
    pub fn since(self, earlier: Self) -> Self {
        Self {
            model: self.model.saturating_sub(earlier.model),
            tools: self.tools.saturating_sub(earlier.tools),
            either: self.either.saturating_sub(earlier.either),
        }
    }
}

impl Fakes {
    pub fn busy(&self) -> BusyReading {
        BusyReading {
            model: self.model.as_ref().map_or(Duration::ZERO, |model| model.clock().busy()),
            tools: self.tools.busy(),
            either: self.either.busy(),
        }
    }
}

pub async fn put(http: &reqwest::Client, server: &str, path: &str, body: Value) -> Result<(), RunError> {
    let response = http.put(format!("{server}{path}")).json(&body).send().await?;
    if !response.status().is_success() {
        return Err(RunError::Status {
            status: response.status().as_u16(),
            body: response.text().await.unwrap_or_default(),
        });
    }
    Ok(())
}

/// Starts the fakes and configures them on the server: the three MCP servers, the scripted model when
/// `scripted`, and the real providers of `real` (the model's, the judge's) that the runner has keys for.
pub async fn set_up(
    http: &reqwest::Client,
    server: &str,
    real: &[&RealModel],
    scripted: bool,
) -> Result<Fakes, String> {
    let tools = BusyClock::new();
    let either = BusyClock::new();
    tools.report_to(either.clone());
    let mut servers = Vec::new();
    let configured = [
        ("tracker", Arc::new(Tracker::seeded()) as Arc<dyn ToolServer>),
        ("crm", Arc::new(Crm::seeded())),
        ("files", Arc::new(FileServer::seeded())),
    ];
    for (name, tool_server) in configured {
        let started = EnterpriseMcpServer::start(tool_server)
            .await
            .map_err(|error| format!("cannot start the {name} server: {error}"))?;
        started.clock.report_to(tools.clone());
        put(
            http,
            server,
            "/api/v1/settings/mcp-servers",
            json!({"manifest": {"type": "remote", "name": name, "url": started.url,
                "description": format!("The evaluation's fake {name}.")}}),
        )
        .await
        .map_err(|error| format!("cannot configure the MCP server {name}: {error}"))?;
        servers.push(started);
    }
    configure_real(http, server, real).await?;
    let model = if scripted {
        let model = FakeLlm::start().await;
        model.clock().report_to(either.clone());
        put(
            http,
            server,
            "/api/v1/settings/model-providers",
            json!({"manifest": {"type": "custom", "name": "eval", "base_url": model.base_url(Api::Chat),
                "auth": {"api_key": "eval-scripted"},
                "models": [{"model_id": "scripted", "name": "scripted", "properties": {"context_length": 128000}}]}}),
        )
        .await
        .map_err(|error| format!("cannot configure the scripted model: {error}"))?;
        Some(model)
    } else {
        None
    };
    Ok(Fakes {
        model,
        _servers: servers,
        tools,
        either,
    })
}

/// The names of the model providers the server already has.
async fn configured_providers(http: &reqwest::Client, server: &str) -> Result<Vec<String>, String> {
    let failed = |error: String| format!("cannot list the server's model providers: {error}");
    let response = http
        .get(format!("{server}/api/v1/settings/model-providers"))
        .send()
        .await
        .map_err(|error| failed(error.to_string()))?;
    if !response.status().is_success() {
        return Err(failed(format!("the server answered {}", response.status())));
    }
    let listed: Value = response.json().await.map_err(|error| failed(error.to_string()))?;
    Ok(listed["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|provider| provider["name"].as_str().map(str::to_owned))
        .collect())
}

/// Configures each real provider the runner has a key for, once, with every model of it that is used. A
/// well-known provider the server already has is the operator's (its name is its type, so the runner cannot
/// add one of its own beside it): it is used as it is, never replaced.
async fn configure_real(http: &reqwest::Client, server: &str, real: &[&RealModel]) -> Result<(), String> {
    if real.iter().all(|model| model.provider_manifest().is_none()) {
        return Ok(());
    }
    let existing = configured_providers(http, server).await?;
    let mut manifests: BTreeMap<String, Value> = BTreeMap::new();
    for model in real {
        let Some(body) = model.provider_manifest() else {
            continue;
        };
        if model.provider != "custom" && existing.iter().any(|name| name == model.provider_name()) {
            eprintln!(
                "trueforge-eval: using the server's own {} provider as it is (the runner's key is not used)",
                model.provider_name()
            );
            continue;
        }
        match manifests.get_mut(model.provider_name()) {
            Some(existing) => {
                if existing["manifest"]["base_url"] != body["manifest"]["base_url"] {
                    return Err(format!(
                        "the model and the judge both use {} with different base URLs",
                        model.provider_name()
                    ));
                }
                let models = existing["manifest"]["models"].as_array_mut();
                if let (Some(models), Some(new)) = (models, body["manifest"]["models"].as_array()) {
                    for entry in new {
                        if !models.contains(entry) {
                            models.push(entry.clone());
                        }
                    }
                }
            }
            None => {
                manifests.insert(model.provider_name().to_owned(), body);
            }
        }
    }
    for (name, body) in manifests {
        put(http, server, "/api/v1/settings/model-providers", body)
            .await
            .map_err(|error| format!("cannot configure the provider {name}: {error}"))?;
    }
    Ok(())
}

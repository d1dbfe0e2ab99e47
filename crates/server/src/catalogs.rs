//! The discovery catalogs served at `/api/v1/catalogs/*`: presets of model providers, MCP servers,
//! skills and sandbox providers that the UI copies into settings bodies. Each catalog is a YAML file
//! under `catalog/` compiled into the binary, which the configuration may replace with a file of the
//! same schema (`catalog/README.md`).
//!
//! Catalogs are read once at boot and checked strictly: every entry must be something the settings API
//! would accept once copied, so a bad file stops the server with a message naming the file and the
//! entry rather than serving presets that fail later in the UI. Where an entry has the shape of a
//! settings manifest, the manifest's own rules (`trueforge_protocol`) are applied so that catalog and
//! settings cannot drift apart.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};
use trueforge_llm::{CatalogError, ModelCatalog};
use trueforge_protocol::{
    CUSTOM_PROVIDER_TYPE, ConfiguredModel, McpServerAuth, McpServerManifest, McpServerType, ModelProviderAuth,
    ModelProviderManifest, ProtocolError, ReasoningEffort, SkillManifest, WellKnownModelProvider,
    WellKnownProviderType,
};

const SHIPPED_MCP_SERVERS: &str = include_str!("../../../catalog/mcp-catalog.yaml");
const SHIPPED_SKILLS: &str = include_str!("../../../catalog/skill-catalog.yaml");
const SHIPPED_SANDBOX_PROVIDERS: &str = include_str!("../../../catalog/sandbox-catalog.yaml");

/// What a custom provider may be asked for: every effort, since the catalog cannot know the model
/// behind an arbitrary OpenAI-compatible endpoint.
const CUSTOM_REASONING_EFFORTS: [ReasoningEffort; 7] = [
    ReasoningEffort::None,
    ReasoningEffort::Minimal,
    ReasoningEffort::Low,
    ReasoningEffort::Medium,
    ReasoningEffort::High,
    ReasoningEffort::Xhigh,
    ReasoningEffort::Max,
];

/// Files replacing the shipped catalogs; `None` keeps the shipped one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogPaths {
    pub models: Option<PathBuf>,
    pub mcp_servers: Option<PathBuf>,
    pub skills: Option<PathBuf>,
    pub sandbox_providers: Option<PathBuf>,
}

/// The four catalogs, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalogs {
    model_catalog: ModelCatalog,
    /// Built once at load because the wire list differs from the file: no prices, one extra entry.
    model_providers: Vec<CatalogModelProvider>,
    mcp_servers: Vec<CatalogMcpServer>,
    skills: Vec<CatalogSkill>,
    sandbox_providers: Vec<CatalogSandboxProvider>,
}

impl Catalogs {
    /// Reads and validates every catalog, each from its override file when one is given.
    pub fn load(paths: &CatalogPaths) -> Result<Self, CatalogLoadError> {
        let (origin, model_catalog) = load_model_catalog(paths.models.as_deref())?;
        let model_providers = model_providers(&origin, &model_catalog)?;

        let (origin, file) = parse::<McpCatalogFile>(
            CatalogKind::McpServers,
            paths.mcp_servers.as_deref(),
            SHIPPED_MCP_SERVERS,
        )?;
        let mcp_servers = validate_mcp_servers(&origin, file.mcp_servers)?;

        let (origin, file) = parse::<SkillCatalogFile>(CatalogKind::Skills, paths.skills.as_deref(), SHIPPED_SKILLS)?;
        validate_skills(&origin, &file.skills)?;
        let skills = file.skills;

        let (origin, file) = parse::<SandboxCatalogFile>(
            CatalogKind::SandboxProviders,
            paths.sandbox_providers.as_deref(),
            SHIPPED_SANDBOX_PROVIDERS,
        )?;
        validate_sandbox_providers(&origin, &file.providers)?;
        let sandbox_providers = file.providers;

        Ok(Self {
            model_catalog,
            model_providers,
            mcp_servers,
            skills,
            sandbox_providers,
        })
    }

    /// The catalogs compiled into this build.
    pub fn shipped() -> Result<Self, CatalogLoadError> {
        Self::load(&CatalogPaths::default())
    }

    /// The list of `GET /api/v1/catalogs/model-providers`: every provider of the model catalog without
    /// prices, then the `custom` entry.
    pub fn model_providers(&self) -> &[CatalogModelProvider] {
        &self.model_providers
    }

    pub fn mcp_servers(&self) -> &[CatalogMcpServer] {
        &self.mcp_servers
    }

    pub fn skills(&self) -> &[CatalogSkill] {
        &self.skills
    }

    pub fn sandbox_providers(&self) -> &[CatalogSandboxProvider] {
        &self.sandbox_providers
    }

    /// The model catalog with prices, for context windows and costs.
    pub fn model_catalog(&self) -> &ModelCatalog {
        &self.model_catalog
    }
}

/// Schema `CatalogModelProvider`: a well-known provider's presets, or the `custom` entry that tells the
/// UI which reasoning efforts a custom provider may declare.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum CatalogModelProvider {
    WellKnown(CatalogWellKnownModelProvider),
    Custom(CatalogCustomModelProvider),
}

/// Schema `CatalogWellKnownModelProvider`. Models are `ConfiguredModel`s so that the UI can copy them
/// into a provider manifest unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct CatalogWellKnownModelProvider {
    #[serde(rename = "type")]
    pub provider: WellKnownProviderType,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, format = "uri")]
    pub logo: Option<String>,
    pub models: Vec<ConfiguredModel>,
}

/// Schema `CatalogCustomModelProvider`; its `type` is always `custom`, written by `Serialize`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogCustomModelProvider {
    pub supported_reasoning_efforts: Vec<ReasoningEffort>,
}

impl Serialize for CatalogCustomModelProvider {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut object = serializer.serialize_struct("CatalogCustomModelProvider", 2)?;
        object.serialize_field("type", CUSTOM_PROVIDER_TYPE)?;
        object.serialize_field("supported_reasoning_efforts", &self.supported_reasoning_efforts)?;
        object.end()
    }
}

/// Schema `CatalogMCPServer`: an `MCPServerManifest` plus a logo for the UI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CatalogMCPServer)]
pub struct CatalogMcpServer {
    #[serde(rename = "type")]
    pub kind: McpServerType,
    #[schema(min_length = 2, max_length = 64, pattern = "^[a-z](?:[a-z0-9._-]{0,62}[a-z0-9])$")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, format = "uri")]
    pub logo: Option<String>,
    #[schema(format = "uri")]
    pub url: String,
    /// What the server is for, shown to the model (surrounding whitespace removed at load; never empty).
    #[schema(min_length = 1)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub auth: Option<McpServerAuth>,
}

impl CatalogMcpServer {
    /// The settings manifest this preset becomes when copied.
    pub fn to_manifest(&self) -> McpServerManifest {
        McpServerManifest {
            kind: self.kind,
            name: self.name.clone(),
            url: Some(self.url.clone()),
            description: self.description.clone(),
            auth: self.auth.clone(),
            command: None,
            args: Vec::new(),
            env: Default::default(),
        }
    }
}

/// Schema `CatalogSkill`, which is exactly a `SkillManifest`.
pub type CatalogSkill = SkillManifest;

/// Schema `CatalogSandboxProvider`: the Daytona manifest without its API key, which the user supplies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CatalogSandboxProvider {
    #[serde(rename = "type")]
    pub kind: CatalogSandboxProviderType,
    #[schema(minimum = 1)]
    pub exec_timeout_ms: u64,
    pub auto_stop_interval_in_minutes: u64,
    pub auto_archive_interval_in_minutes: u64,
    pub auto_delete_interval_in_minutes: u64,
}

/// The sandbox provider types with presets. A plain enum field rather than a tagged enum so that
/// parse errors keep the entry's position (serde buffers tagged enums and loses it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(description = "A sandbox provider type with presets.")]
pub enum CatalogSandboxProviderType {
    #[serde(rename = "daytona")]
    Daytona,
}

/// Which catalog a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CatalogKind {
    Models,
    McpServers,
    Skills,
    SandboxProviders,
}

impl fmt::Display for CatalogKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Self::Models => "model",
            Self::McpServers => "MCP server",
            Self::Skills => "skill",
            Self::SandboxProviders => "sandbox provider",
        })
    }
}

/// Where a catalog was read from, as named in error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogOrigin {
    Shipped(CatalogKind),
    File(PathBuf),
}

impl fmt::Display for CatalogOrigin {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Shipped(kind) => write!(formatter, "shipped {kind} catalog"),
            Self::File(path) => write!(formatter, "{}", path.display()),
        }
    }
}

/// Why the catalogs could not be loaded. The server prints it and exits, so every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum CatalogLoadError {
    #[error("cannot read {kind} catalog {}: {source}", path.display())]
    Read {
        kind: CatalogKind,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Not YAML, or not the catalog's shape (unknown key, missing field, wrong type).
    #[error("invalid config in {origin}: {source}")]
    Parse {
        origin: CatalogOrigin,
        #[source]
        source: serde_norway::Error,
    },
    /// The model catalog's parser reports its own error type.
    #[error("invalid config in {origin}: {source}")]
    ModelCatalog {
        origin: CatalogOrigin,
        #[source]
        source: CatalogError,
    },
    /// Well-formed, but an entry breaks a rule; `path` locates it (`mcp_servers[2].name`).
    #[error("invalid config in {origin}: {path}: {message}")]
    Invalid {
        origin: CatalogOrigin,
        path: String,
        message: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct McpCatalogFile {
    mcp_servers: Vec<CatalogMcpServer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SkillCatalogFile {
    skills: Vec<CatalogSkill>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SandboxCatalogFile {
    providers: Vec<CatalogSandboxProvider>,
}

fn read(kind: CatalogKind, path: &Path) -> Result<String, CatalogLoadError> {
    std::fs::read_to_string(path).map_err(|source| CatalogLoadError::Read {
        kind,
        path: path.to_owned(),
        source,
    })
}

fn parse<T: DeserializeOwned>(
    kind: CatalogKind,
    path: Option<&Path>,
    shipped: &str,
) -> Result<(CatalogOrigin, T), CatalogLoadError> {
    let (origin, parsed) = match path {
        Some(path) => (
            CatalogOrigin::File(path.to_owned()),
            serde_norway::from_str(&read(kind, path)?),
        ),
        None => (CatalogOrigin::Shipped(kind), serde_norway::from_str(shipped)),
    };
    match parsed {
        Ok(value) => Ok((origin, value)),
        Err(source) => Err(CatalogLoadError::Parse { origin, source }),
    }
}

fn load_model_catalog(path: Option<&Path>) -> Result<(CatalogOrigin, ModelCatalog), CatalogLoadError> {
    let (origin, parsed) = match path {
        Some(path) => (
            CatalogOrigin::File(path.to_owned()),
            ModelCatalog::from_yaml_str(&read(CatalogKind::Models, path)?),
        ),
        None => (CatalogOrigin::Shipped(CatalogKind::Models), ModelCatalog::shipped()),
    };
    match parsed {
        Ok(catalog) => Ok((origin, catalog)),
        Err(source) => Err(CatalogLoadError::ModelCatalog { origin, source }),
    }
}

fn invalid(origin: &CatalogOrigin, path: impl Into<String>, message: impl Into<String>) -> CatalogLoadError {
    CatalogLoadError::Invalid {
        origin: origin.clone(),
        path: path.into(),
        message: message.into(),
    }
}

/// A manifest rule's violation, located inside the catalog entry at `entry`.
fn rule_violation(origin: &CatalogOrigin, entry: &str, error: ProtocolError) -> CatalogLoadError {
    let ProtocolError::Invalid { path, message } = error;
    invalid(origin, format!("{entry}.{path}"), message)
}

/// Rejects the first value seen twice, naming the later entry: `<list>[i].<field>`.
fn check_unique<'a>(
    origin: &CatalogOrigin,
    list: &str,
    field: &str,
    values: impl IntoIterator<Item = &'a str>,
) -> Result<(), CatalogLoadError> {
    let mut seen = BTreeSet::new();
    for (index, value) in values.into_iter().enumerate() {
        if !seen.insert(value) {
            return Err(invalid(
                origin,
                format!("{list}[{index}].{field}"),
                format!("duplicate {field} {value:?}"),
            ));
        }
    }
    Ok(())
}

/// `http://` or `https://`, a non-empty host, no whitespace. Deliberately shallow: it catches typos in
/// a hand-edited file; whoever fetches the URL parses it fully.
fn is_http_url(value: &str) -> bool {
    let rest = value.strip_prefix("https://").or_else(|| value.strip_prefix("http://"));
    rest.is_some_and(|rest| rest.split(['/', '?', '#']).next().is_some_and(|host| !host.is_empty()))
        && !value.chars().any(char::is_whitespace)
}

fn check_logo(origin: &CatalogOrigin, entry: &str, logo: Option<&str>) -> Result<(), CatalogLoadError> {
    match logo {
        Some(logo) if !is_http_url(logo) => Err(invalid(origin, format!("{entry}.logo"), "must be an http(s) URL")),
        _ => Ok(()),
    }
}

/// Checks the model catalog and builds its wire list. `ModelCatalog` checks only the shape, so the
/// rules of a provider manifest are applied here: known type, unique types, valid model entries.
fn model_providers(
    origin: &CatalogOrigin,
    catalog: &ModelCatalog,
) -> Result<Vec<CatalogModelProvider>, CatalogLoadError> {
    let mut wire = Vec::with_capacity(catalog.providers.len() + 1);
    for (index, provider) in catalog.providers.iter().enumerate() {
        let entry = format!("providers[{index}]");
        let Some(provider_type) = WellKnownProviderType::parse(&provider.provider_type) else {
            let known: Vec<&str> = WellKnownProviderType::ALL.iter().map(|kind| kind.as_str()).collect();
            return Err(invalid(
                origin,
                format!("{entry}.type"),
                format!(
                    "unknown provider type {:?}; expected one of {} (custom providers have no presets)",
                    provider.provider_type,
                    known.join(", ")
                ),
            ));
        };
        check_logo(origin, &entry, provider.logo.as_deref())?;
        for (model_index, model) in provider.models.iter().enumerate() {
            let path = format!("{entry}.models[{model_index}]");
            // Prices inside `properties` would be copied into the settings with the entry, and from then
            // on replace the catalog's for that tenant, however the catalog's prices change.
            if model.properties.pricing.is_some() {
                return Err(invalid(
                    origin,
                    format!("{path}.properties.pricing"),
                    "a catalog gives prices in `pricing`, beside `properties`",
                ));
            }
            if let Some(pricing) = &model.pricing {
                pricing
                    .validate("pricing")
                    .map_err(|error| rule_violation(origin, &path, error))?;
            }
        }
        let models: Vec<ConfiguredModel> = provider
            .models
            .iter()
            .map(|model| ConfiguredModel {
                model_id: model.model_id.clone(),
                name: model.name.clone(),
                properties: model.properties.clone(),
            })
            .collect();
        // The models must be copyable into a provider manifest, so they are checked as one. The key
        // only satisfies the manifest's non-empty rule; catalogs carry no credentials. An empty model
        // list is allowed, as the wire schema sets no minimum (the user adds models), so it is spared
        // the manifest's at-least-one rule.
        if !models.is_empty() {
            let manifest = ModelProviderManifest::WellKnown {
                provider: provider_type,
                config: WellKnownModelProvider {
                    auth: ModelProviderAuth {
                        api_key: "catalog-entry".to_owned(),
                    },
                    models: models.clone(),
                    base_url: provider_type.default_base_url().to_owned(),
                },
            };
            manifest
                .validate()
                .map_err(|error| rule_violation(origin, &entry, error))?;
        }
        wire.push(CatalogModelProvider::WellKnown(CatalogWellKnownModelProvider {
            provider: provider_type,
            logo: provider.logo.clone(),
            models,
        }));
    }
    check_unique(
        origin,
        "providers",
        "type",
        catalog.providers.iter().map(|provider| provider.provider_type.as_str()),
    )?;
    wire.push(CatalogModelProvider::Custom(CatalogCustomModelProvider {
        supported_reasoning_efforts: CUSTOM_REASONING_EFFORTS.to_vec(),
    }));
    Ok(wire)
}

fn validate_mcp_servers(
    origin: &CatalogOrigin,
    mut servers: Vec<CatalogMcpServer>,
) -> Result<Vec<CatalogMcpServer>, CatalogLoadError> {
    for (index, server) in servers.iter_mut().enumerate() {
        let entry = format!("mcp_servers[{index}]");
        // The reference trims descriptions as it reads them, so surrounding blanks never reach the wire
        // and a blank description is empty.
        server.description = server.description.trim().to_owned();
        server
            .to_manifest()
            .validate()
            .map_err(|error| rule_violation(origin, &entry, error))?;
        if !is_http_url(&server.url) {
            return Err(invalid(origin, format!("{entry}.url"), "must be an http(s) URL"));
        }
        check_logo(origin, &entry, server.logo.as_deref())?;
    }
    check_unique(
        origin,
        "mcp_servers",
        "name",
        servers.iter().map(|server| server.name.as_str()),
    )?;
    Ok(servers)
}

fn validate_skills(origin: &CatalogOrigin, skills: &[CatalogSkill]) -> Result<(), CatalogLoadError> {
    for (index, skill) in skills.iter().enumerate() {
        skill
            .validate()
            .map_err(|error| rule_violation(origin, &format!("skills[{index}]"), error))?;
    }
    check_unique(origin, "skills", "name", skills.iter().map(|skill| skill.name.as_str()))
}

fn validate_sandbox_providers(
    origin: &CatalogOrigin,
    providers: &[CatalogSandboxProvider],
) -> Result<(), CatalogLoadError> {
    // Negative intervals cannot get here: the fields are unsigned, so the parser rejects them.
    for (index, provider) in providers.iter().enumerate() {
        if provider.exec_timeout_ms == 0 {
            return Err(invalid(
                origin,
                format!("providers[{index}].exec_timeout_ms"),
                "must be positive",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use serde_json::{Value, json};

    use super::*;

    /// A catalog file on disk, kept alive for the test's duration.
    fn file(text: &str) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        file
    }

    fn load_error(paths: &CatalogPaths) -> String {
        match Catalogs::load(paths) {
            Ok(_) => panic!("the catalogs loaded"),
            Err(error) => error.to_string(),
        }
    }

    fn mcp_error(yaml: &str) -> (String, String) {
        let file = file(yaml);
        let message = load_error(&CatalogPaths {
            mcp_servers: Some(file.path().to_owned()),
            ..CatalogPaths::default()
        });
        (message, file.path().display().to_string())
    }

    fn skill_error(yaml: &str) -> (String, String) {
        let file = file(yaml);
        let message = load_error(&CatalogPaths {
            skills: Some(file.path().to_owned()),
            ..CatalogPaths::default()
        });
        (message, file.path().display().to_string())
    }

    fn model_error(yaml: &str) -> (String, String) {
        let file = file(yaml);
        let message = load_error(&CatalogPaths {
            models: Some(file.path().to_owned()),
            ..CatalogPaths::default()
        });
        (message, file.path().display().to_string())
    }

    fn sandbox_error(yaml: &str) -> (String, String) {
        let file = file(yaml);
        let message = load_error(&CatalogPaths {
            sandbox_providers: Some(file.path().to_owned()),
            ..CatalogPaths::default()
        });
        (message, file.path().display().to_string())
    }

    fn assert_names(message: &str, file: &str, expected: &str) {
        assert!(
            message.starts_with(&format!("invalid config in {file}: ")),
            "message does not name the file: {message}"
        );
        assert!(message.contains(expected), "{message:?} lacks {expected:?}");
    }

    const LINEAR: &str = "  - type: remote
    name: linear
    url: https://mcp.linear.app/mcp
    description: Linear issues.
";

    #[test]
    fn shipped_catalogs_load() {
        let catalogs = Catalogs::shipped().unwrap();
        assert_eq!(catalogs.mcp_servers().len(), 14);
        assert_eq!(catalogs.skills().len(), 13);
        assert_eq!(catalogs.sandbox_providers().len(), 1);
        assert_eq!(
            catalogs.model_providers().len(),
            catalogs.model_catalog().providers.len() + 1
        );
        assert_eq!(catalogs.model_catalog(), &ModelCatalog::shipped().unwrap());
    }

    #[test]
    fn model_providers_have_no_pricing_and_end_with_the_custom_entry() {
        // Prices in the file must not leak: give one model a price and check the wire list.
        let file = file(
            "providers:
  - type: openai
    logo: https://example.com/openai.svg
    models:
      - model_id: gpt-x
        name: gpt-x
        properties: {context_length: 1000}
        pricing: {input_per_mtok: 1.5}
",
        );
        let catalogs = Catalogs::load(&CatalogPaths {
            models: Some(file.path().to_owned()),
            ..CatalogPaths::default()
        })
        .unwrap();
        assert!(catalogs.model_catalog().pricing("openai", "gpt-x").is_some());
        let wire = serde_json::to_value(catalogs.model_providers()).unwrap();
        assert_eq!(
            wire,
            json!([
                {
                    "type": "openai",
                    "logo": "https://example.com/openai.svg",
                    "models": [{"model_id": "gpt-x", "name": "gpt-x", "properties": {"context_length": 1000}}]
                },
                {
                    "type": "custom",
                    "supported_reasoning_efforts": ["none", "minimal", "low", "medium", "high", "xhigh", "max"]
                }
            ])
        );

        let shipped = serde_json::to_value(Catalogs::shipped().unwrap().model_providers()).unwrap();
        fn has_pricing(value: &Value) -> bool {
            match value {
                Value::Object(object) => object.contains_key("pricing") || object.values().any(has_pricing),
                Value::Array(items) => items.iter().any(has_pricing),
                _ => false,
            }
        }
        assert!(!has_pricing(&shipped));
        let list = shipped.as_array().unwrap();
        assert_eq!(
            list.last().unwrap(),
            &json!({"type": "custom", "supported_reasoning_efforts": ["none", "minimal", "low", "medium", "high", "xhigh", "max"]})
        );
        assert!(
            list[..list.len() - 1]
                .iter()
                .all(|provider| provider["models"].is_array())
        );
    }

    #[test]
    fn entries_serialize_with_the_wire_field_names() {
        let catalogs = Catalogs::shipped().unwrap();
        let linear = serde_json::to_value(&catalogs.mcp_servers()[0]).unwrap();
        assert_eq!(
            linear,
            json!({
                "type": "remote",
                "name": "linear",
                "logo": "https://assets.production.truefoundry.com/linear.svg",
                "url": "https://mcp.linear.app/mcp",
                "description": "Search, read, and create Linear issues.",
                "auth": {"type": "dcr"}
            })
        );
        let deepwiki = catalogs
            .mcp_servers()
            .iter()
            .find(|server| server.name == "deepwiki")
            .unwrap();
        assert!(serde_json::to_value(deepwiki).unwrap().get("auth").is_none());
        let skill = serde_json::to_value(&catalogs.skills()[0]).unwrap();
        assert_eq!(
            skill,
            json!({
                "type": "git",
                "name": "algorithmic-art",
                "url": "https://github.com/anthropics/skills",
                "path": "skills/algorithmic-art",
                "ref": "main",
                "description": "Creating algorithmic art using p5.js with seeded randomness and interactive parameter exploration."
            })
        );
        assert_eq!(
            serde_json::to_value(catalogs.sandbox_providers()).unwrap(),
            json!([{
                "type": "daytona",
                "exec_timeout_ms": 60000,
                "auto_stop_interval_in_minutes": 5,
                "auto_archive_interval_in_minutes": 60,
                "auto_delete_interval_in_minutes": 7200
            }])
        );
    }

    #[test]
    fn override_files_replace_only_their_catalog() {
        let mcp = file(&format!("mcp_servers:\n{LINEAR}"));
        let skills = file("skills: []\n");
        let catalogs = Catalogs::load(&CatalogPaths {
            mcp_servers: Some(mcp.path().to_owned()),
            skills: Some(skills.path().to_owned()),
            ..CatalogPaths::default()
        })
        .unwrap();
        assert_eq!(catalogs.mcp_servers().len(), 1);
        assert_eq!(catalogs.mcp_servers()[0].description, "Linear issues.");
        assert!(catalogs.skills().is_empty());
        assert_eq!(catalogs.sandbox_providers().len(), 1);
        assert_eq!(catalogs.model_catalog(), &ModelCatalog::shipped().unwrap());
    }

    #[test]
    fn missing_override_file_is_named() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("absent.yaml");
        let message = load_error(&CatalogPaths {
            skills: Some(path.clone()),
            ..CatalogPaths::default()
        });
        assert!(
            message.starts_with(&format!("cannot read skill catalog {}: ", path.display())),
            "{message}"
        );
    }

    #[test]
    fn unknown_key_is_rejected() {
        let (message, path) = mcp_error(&format!("mcp_servers:\n{LINEAR}    transport: sse\n"));
        assert_names(&message, &path, "mcp_servers[0]: unknown field `transport`");

        let (message, path) = mcp_error(&format!("mcp_servers:\n{LINEAR}extra: 1\n"));
        assert_names(&message, &path, "unknown field `extra`");

        let (message, path) = sandbox_error(
            "providers:
  - type: daytona
    auth: {api_key: secret}
    exec_timeout_ms: 1
    auto_stop_interval_in_minutes: 0
    auto_archive_interval_in_minutes: 0
    auto_delete_interval_in_minutes: 0
",
        );
        assert_names(&message, &path, "providers[0]: unknown field `auth`");

        let (message, path) = model_error(
            "providers:\n  - type: openai\n    models:\n      - {model_id: a, name: ab, properties: {}, price: 1}\n",
        );
        assert_names(&message, &path, "unknown field `price`");
    }

    #[test]
    fn invalid_yaml_is_rejected() {
        let (message, path) = mcp_error("mcp_servers: [\n  - type: remote\n");
        assert_names(&message, &path, "line");
        let (message, path) = skill_error("");
        assert_names(&message, &path, "");
    }

    #[test]
    fn duplicate_names_are_rejected() {
        let (message, path) = mcp_error(&format!("mcp_servers:\n{LINEAR}{LINEAR}"));
        assert_names(&message, &path, "mcp_servers[1].name: duplicate name \"linear\"");

        let skill = "  - {type: git, name: lint, url: 'https://github.com/a/b', ref: main, description: d}\n";
        let (message, path) = skill_error(&format!("skills:\n{skill}{skill}"));
        assert_names(&message, &path, "skills[1].name: duplicate name \"lint\"");
    }

    #[test]
    fn bad_names_are_rejected() {
        let (message, path) = mcp_error(&format!("mcp_servers:\n{}", LINEAR.replace("linear\n", "Linear\n")));
        assert_names(&message, &path, "mcp_servers[0].name: must be 2-64 characters");

        let (message, path) = skill_error(
            "skills:\n  - {type: git, name: x-, url: 'https://github.com/a/b', ref: main, description: d}\n",
        );
        assert_names(&message, &path, "skills[0].name:");

        let (message, path) =
            model_error("providers:\n  - type: openai\n    models:\n      - {model_id: a, name: A, properties: {}}\n");
        assert_names(&message, &path, "providers[0].models[0].name:");
    }

    #[test]
    fn bad_skill_fields_are_rejected() {
        let skill = |field: &str| {
            format!(
                "skills:\n  - {{type: git, name: lint, url: 'https://gitlab.com/g/sub/p.git', ref: main, description: d, {field}}}\n"
            )
        };
        let (message, path) = skill_error(&skill("path: skills/lint").replace("ref: main, ", "ref: '../main', "));
        assert_names(&message, &path, "skills[0].ref: must not contain a '..' segment");

        let (message, path) = skill_error(&skill("path: skills/lint").replace("ref: main, ", "ref: 'a b', "));
        assert_names(&message, &path, "skills[0].ref:");

        let (message, path) = skill_error(&skill("path: ./lint"));
        assert_names(&message, &path, "skills[0].path: must not contain a '.' segment");

        let (message, path) =
            skill_error(&skill("path: lint").replace("https://gitlab.com/g/sub/p.git", "http://github.com/a/b"));
        assert_names(&message, &path, "skills[0].url:");

        let (message, path) =
            skill_error(&skill("path: lint").replace("https://gitlab.com/g/sub/p.git", "https://github.com/a/b/c"));
        assert_names(&message, &path, "skills[0].url:");

        // The GitLab nested-group form with `.git` is valid.
        let file = file(&skill("path: lint"));
        Catalogs::load(&CatalogPaths {
            skills: Some(file.path().to_owned()),
            ..CatalogPaths::default()
        })
        .unwrap();
    }

    #[test]
    fn empty_description_is_rejected() {
        let (message, path) = mcp_error(&format!("mcp_servers:\n{}", LINEAR.replace("Linear issues.", "'   '")));
        assert_names(&message, &path, "mcp_servers[0].description: must not be empty");

        let (message, path) = skill_error(
            "skills:\n  - {type: git, name: lint, url: 'https://github.com/a/b', ref: main, description: ''}\n",
        );
        assert_names(&message, &path, "skills[0].description:");
    }

    #[test]
    fn bad_mcp_urls_and_auth_are_rejected() {
        let (message, path) = mcp_error(&format!(
            "mcp_servers:\n{}",
            LINEAR.replace("https://mcp.linear.app/mcp", "ftp://mcp.linear.app")
        ));
        assert_names(&message, &path, "mcp_servers[0].url: must be an http(s) URL");

        let (message, path) = mcp_error(&format!("mcp_servers:\n{LINEAR}    logo: linear.svg\n"));
        assert_names(&message, &path, "mcp_servers[0].logo: must be an http(s) URL");

        let (message, path) = mcp_error(&format!(
            "mcp_servers:\n{LINEAR}    auth: {{type: header, headers: {{}}}}\n"
        ));
        assert_names(
            &message,
            &path,
            "mcp_servers[0].auth.headers: must contain at least one header",
        );

        let (message, path) = mcp_error(&format!("mcp_servers:\n{LINEAR}    auth: {{type: oauth}}\n"));
        assert_names(&message, &path, "oauth");
    }

    #[test]
    fn bad_model_providers_are_rejected() {
        let provider = |kind: &str, models: &str| format!("  - type: {kind}\n    models:\n{models}");
        let model = "      - {model_id: m-1, name: m-1, properties: {}}\n";

        let (message, path) = model_error(&format!("providers:\n{}", provider("custom", model)));
        assert_names(&message, &path, "providers[0].type: unknown provider type \"custom\"");

        let (message, path) = model_error(&format!(
            "providers:\n{}{}",
            provider("openai", model),
            provider("openai", model)
        ));
        assert_names(&message, &path, "providers[1].type: duplicate type \"openai\"");

        let (message, path) = model_error(&format!(
            "providers:\n{}",
            provider(
                "zai",
                &format!("{model}      - {{model_id: m-1, name: m-2, properties: {{}}}}\n")
            )
        ));
        assert_names(&message, &path, "providers[0].models[].model_id: duplicate value 'm-1'");

        let (message, path) = model_error(&format!(
            "providers:\n{}",
            provider(
                "zai",
                &format!("{model}      - {{model_id: m-2, name: m-1, properties: {{}}}}\n")
            )
        ));
        assert_names(&message, &path, "providers[0].models[].name: duplicate value 'm-1'");

        let (message, path) = model_error(&format!(
            "providers:\n{}",
            provider(
                "zai",
                "      - {model_id: m, name: mm, properties: {context_length: 0}}\n"
            )
        ));
        assert_names(
            &message,
            &path,
            "providers[0].models[0].properties: token limits must be positive",
        );

        let (message, path) = model_error(&format!(
            "providers:\n{}",
            provider(
                "zai",
                "      - {model_id: m, name: mm, properties: {pricing: {input_per_mtok: 1}}}\n"
            )
        ));
        assert_names(
            &message,
            &path,
            "providers[0].models[0].properties.pricing: a catalog gives prices in `pricing`, beside `properties`",
        );

        let (message, path) = model_error(&format!(
            "providers:\n{}",
            provider(
                "zai",
                "      - {model_id: m, name: mm, properties: {}, pricing: {long_context: {above_input_tokens: 0}}}\n"
            )
        ));
        assert_names(
            &message,
            &path,
            "providers[0].models[0].pricing.long_context.above_input_tokens: must be at least 1",
        );

        // A provider without presets is valid, as in the wire schema.
        let file = file("providers:\n  - type: moonshot\n    models: []\n");
        let catalogs = Catalogs::load(&CatalogPaths {
            models: Some(file.path().to_owned()),
            ..CatalogPaths::default()
        })
        .unwrap();
        assert_eq!(
            serde_json::to_value(&catalogs.model_providers()[0]).unwrap(),
            json!({"type": "moonshot", "models": []})
        );
    }

    #[test]
    fn zero_exec_timeout_is_rejected() {
        let (message, path) = sandbox_error(
            "providers:
  - type: daytona
    exec_timeout_ms: 0
    auto_stop_interval_in_minutes: 0
    auto_archive_interval_in_minutes: 0
    auto_delete_interval_in_minutes: 0
",
        );
        assert_names(&message, &path, "providers[0].exec_timeout_ms: must be positive");

        let (message, path) = sandbox_error(
            "providers:
  - type: daytona
    exec_timeout_ms: 1
    auto_stop_interval_in_minutes: -1
    auto_archive_interval_in_minutes: 0
    auto_delete_interval_in_minutes: 0
",
        );
        assert_names(&message, &path, "providers[0].auto_stop_interval_in_minutes");
    }

    #[test]
    fn http_url_check() {
        assert!(is_http_url("https://mcp.example.com/mcp"));
        assert!(is_http_url("http://localhost:8080"));
        assert!(!is_http_url("https://"));
        assert!(!is_http_url("https:///path"));
        assert!(!is_http_url("mcp.example.com"));
        assert!(!is_http_url("https://exa mple.com"));
    }
}

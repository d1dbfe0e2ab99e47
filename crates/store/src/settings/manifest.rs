//! How the stores see the protocol's manifests: where their secrets are, and which name keys them.

use serde::Serialize;
use serde::de::DeserializeOwned;
use trueforge_protocol::{AgentSpec, McpServerManifest, ModelProviderManifest, SandboxProviderManifest, SkillManifest};

/// A manifest kept by a settings store.
pub trait SettingsManifest: Serialize + DeserializeOwned + Clone + Send + Sync + 'static {
    /// Every secret string of the manifest with a stable field path (e.g. `auth.headers.Authorization`).
    /// The stores encrypt exactly these values at rest; redaction masks exactly these on the wire.
    fn secret_fields(&mut self) -> Vec<(String, &mut String)>;
}

/// A manifest that carries the name keying its row.
pub trait NamedManifest: SettingsManifest {
    fn settings_name(&self) -> String;
}

impl SettingsManifest for AgentSpec {
    fn secret_fields(&mut self) -> Vec<(String, &mut String)> {
        Vec::new()
    }
}

impl SettingsManifest for SkillManifest {
    fn secret_fields(&mut self) -> Vec<(String, &mut String)> {
        Vec::new()
    }
}

impl NamedManifest for SkillManifest {
    fn settings_name(&self) -> String {
        self.name().to_owned()
    }
}

impl SettingsManifest for ModelProviderManifest {
    fn secret_fields(&mut self) -> Vec<(String, &mut String)> {
        self.secrets_mut()
    }
}

impl NamedManifest for ModelProviderManifest {
    fn settings_name(&self) -> String {
        self.name().to_owned()
    }
}

impl SettingsManifest for McpServerManifest {
    fn secret_fields(&mut self) -> Vec<(String, &mut String)> {
        self.secrets_mut()
    }
}

impl NamedManifest for McpServerManifest {
    fn settings_name(&self) -> String {
        self.name().to_owned()
    }
}

impl SettingsManifest for SandboxProviderManifest {
    fn secret_fields(&mut self) -> Vec<(String, &mut String)> {
        self.secrets_mut()
    }
}

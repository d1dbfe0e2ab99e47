//! Which model the tasks run on: the scripted fake (deterministic, offline, what CI runs) or a real provider's
//! model, configured on the server under test with a key from the runner's environment.

use serde_json::{Value, json};

/// The provider types a real run may name, with the environment variable their key is read from when
/// `TRUEFORGE_EVAL_API_KEY` is not set.
const PROVIDERS: [(&str, &str); 9] = [
    ("openai", "OPENAI_API_KEY"),
    ("anthropic", "ANTHROPIC_API_KEY"),
    ("google-gemini", "GEMINI_API_KEY"),
    ("fireworks", "FIREWORKS_API_KEY"),
    ("zai", "ZAI_API_KEY"),
    ("moonshot", "MOONSHOT_API_KEY"),
    ("together", "TOGETHER_API_KEY"),
    ("alibaba", "DASHSCOPE_API_KEY"),
    ("custom", "TRUEFORGE_EVAL_API_KEY"),
];

/// A real provider's model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealModel {
    /// A well-known provider type, or `custom`.
    pub provider: String,
    pub model_id: String,
    pub base_url: Option<String>,
    /// `None`: the server's own setting for the provider is used as it is.
    pub api_key: Option<String>,
    /// The name a custom (OpenAI-compatible) provider is configured under: the model and the judge may
    /// each have their own endpoint.
    pub custom_name: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelChoice {
    Scripted,
    Real(RealModel),
}

impl ModelChoice {
    /// Reads `--model` (`scripted` or `PROVIDER/MODEL`) and `--model-base-url`; `env` looks variables up.
    pub fn parse(model: &str, base_url: Option<&str>, env: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        if model == "scripted" {
            if base_url.is_some() {
                return Err("--model-base-url needs a real model (--model PROVIDER/MODEL)".to_owned());
            }
            return Ok(Self::Scripted);
        }
        RealModel::parse(model, base_url, "eval-custom", env).map(Self::Real)
    }
}

impl RealModel {
    /// Reads `PROVIDER/MODEL`; a `custom` provider is configured as `custom_name` at `base_url`.
    pub fn parse(
        model: &str,
        base_url: Option<&str>,
        custom_name: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let Some((provider, model_id)) = model.split_once('/').filter(|(p, m)| !p.is_empty() && !m.is_empty()) else {
            return Err(format!(
                "--model must be `scripted` or PROVIDER/MODEL (such as openai/gpt-5.4-mini), not {model:?}"
            ));
        };
        let Some((_, key_variable)) = PROVIDERS.iter().find(|(name, _)| *name == provider) else {
            let known: Vec<&str> = PROVIDERS.iter().map(|(name, _)| *name).collect();
            return Err(format!(
                "unknown provider {provider:?}: expected one of {}",
                known.join(", ")
            ));
        };
        if provider == "custom" && base_url.is_none() {
            return Err("a custom provider needs its OpenAI-compatible endpoint: --model-base-url, or --judge-base-url for the judge".to_owned());
        }
        let api_key = env("TRUEFORGE_EVAL_API_KEY")
            .or_else(|| env(key_variable))
            .filter(|key| !key.is_empty());
        Ok(Self {
            provider: provider.to_owned(),
            model_id: model_id.to_owned(),
            base_url: base_url.map(str::to_owned),
            api_key,
            custom_name: custom_name.to_owned(),
        })
    }

    /// The provider's name on the server (a well-known provider is named after its type).
    pub fn provider_name(&self) -> &str {
        if self.provider == "custom" {
            &self.custom_name
        } else {
            &self.provider
        }
    }

    /// The agent spec's `model.name`.
    pub fn spec_name(&self) -> String {
        format!("{}/{}", self.provider_name(), self.model_id)
    }

    /// The settings body that configures the provider with the runner's key, or `None` when the runner has no
    /// key and relies on the server's own configuration.
    pub fn provider_manifest(&self) -> Option<Value> {
        let key = self.api_key.as_ref()?;
        let mut manifest = json!({"type": self.provider, "auth": {"api_key": key},
            "models": [{"model_id": self.model_id, "name": self.model_id, "properties": {}}]});
        if self.provider == "custom" {
            manifest["name"] = json!(self.custom_name);
        }
        if let Some(base_url) = &self.base_url {
            manifest["base_url"] = json!(base_url);
        }
        Some(json!({ "manifest": manifest }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        }
    }

    #[test]
    fn a_real_model_takes_its_key_from_the_providers_variable() {
        let choice = ModelChoice::parse(
            "anthropic/claude-haiku-4-5",
            None,
            env_with(&[("ANTHROPIC_API_KEY", "k")]),
        );
        let ModelChoice::Real(model) = choice.unwrap() else {
            panic!("expected a real model")
        };
        assert_eq!(model.spec_name(), "anthropic/claude-haiku-4-5");
        assert_eq!(
            model.provider_manifest().unwrap()["manifest"],
            json!({"type": "anthropic", "auth": {"api_key": "k"},
                "models": [{"model_id": "claude-haiku-4-5", "name": "claude-haiku-4-5", "properties": {}}]})
        );
    }

    #[test]
    fn without_a_key_the_servers_own_setting_is_used() {
        let model = RealModel::parse("openai/gpt-5.4-mini", None, "eval-custom", env_with(&[])).unwrap();
        assert_eq!(model.provider_manifest(), None);
    }

    #[test]
    fn a_custom_endpoint_is_named_and_needs_its_url() {
        let model = RealModel::parse(
            "custom/local-model",
            Some("http://127.0.0.1:9/v1"),
            "eval-custom",
            env_with(&[("TRUEFORGE_EVAL_API_KEY", "x")]),
        )
        .unwrap();
        assert_eq!(model.spec_name(), "eval-custom/local-model");
        assert_eq!(model.provider_manifest().unwrap()["manifest"]["name"], "eval-custom");
        assert!(RealModel::parse("custom/local-model", None, "eval-custom", env_with(&[])).is_err());
    }

    #[test]
    fn bad_model_names_are_refused_with_what_is_expected() {
        for bad in ["gpt-5", "openai/", "/gpt", "nosuch/model"] {
            let error = ModelChoice::parse(bad, None, env_with(&[])).unwrap_err();
            assert!(
                error.contains("--model") || error.contains("unknown provider"),
                "{bad}: {error}"
            );
        }
        assert!(ModelChoice::parse("scripted", Some("http://x"), env_with(&[])).is_err());
    }
}

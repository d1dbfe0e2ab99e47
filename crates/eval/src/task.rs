//! A task on disk (`<task>/prompt.txt`, `criteria.yaml`, and `script.json` for the scripted model) and its
//! deterministic grade.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use trueforge_testkit::fake_llm::Script;

#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid: {detail}")]
    Invalid { path: PathBuf, detail: String },
}

/// What a passing answer must and must not contain (case-insensitive).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Criteria {
    #[serde(default)]
    pub required: Vec<String>,
    #[serde(default)]
    pub forbidden: Vec<String>,
    /// Scripted runs only: facts that must have reached the model (in the last request it was sent). The
    /// scripted answer is fixed, so this is what shows the harness delivered what the answer relies on.
    #[serde(default)]
    pub evidence: Vec<String>,
    /// What a model judge checks (with `--judge`), in words: for what a list of facts cannot express.
    #[serde(default)]
    pub judge: Option<String>,
}

/// How the runner answers a turn that pauses (`answers.yaml`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answers {
    /// The reply to an `ask_user_question`; without one, a question leaves the run `paused`.
    #[serde(default)]
    pub question: Option<String>,
    /// Whether tool calls waiting for approval are allowed (default) or denied.
    #[serde(default = "yes")]
    pub approve: bool,
    /// The reason given with a denial.
    #[serde(default)]
    pub deny_reason: Option<String>,
}

fn yes() -> bool {
    true
}

impl Default for Answers {
    fn default() -> Self {
        Self {
            question: None,
            approve: true,
            deny_reason: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Task {
    pub name: String,
    pub prompt: String,
    pub criteria: Criteria,
    /// The scripted model's trajectory; `None` for tasks only a real model can run.
    pub script: Option<Script>,
    pub answers: Answers,
    /// `spec.json`: agent spec fields that replace the runner's defaults for this task.
    pub spec: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The grade of one answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grade {
    pub passed: bool,
    pub missing: Vec<String>,
    pub forbidden_found: Vec<String>,
}

impl Criteria {
    pub fn grade(&self, answer: &str) -> Grade {
        let answer = answer.to_lowercase();
        let missing: Vec<String> = self
            .required
            .iter()
            .filter(|fact| !answer.contains(&fact.to_lowercase()))
            .cloned()
            .collect();
        let forbidden_found: Vec<String> = self
            .forbidden
            .iter()
            .filter(|fact| answer.contains(&fact.to_lowercase()))
            .cloned()
            .collect();
        Grade {
            passed: missing.is_empty() && forbidden_found.is_empty(),
            missing,
            forbidden_found,
        }
    }
}

fn read(path: &Path) -> Result<String, TaskError> {
    std::fs::read_to_string(path).map_err(|source| TaskError::Read {
        path: path.to_owned(),
        source,
    })
}

impl Task {
    pub fn load(dir: &Path) -> Result<Self, TaskError> {
        let name = dir
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let prompt = read(&dir.join("prompt.txt"))?.trim().to_owned();
        let criteria_path = dir.join("criteria.yaml");
        let criteria: Criteria =
            serde_norway::from_str(&read(&criteria_path)?).map_err(|error| TaskError::Invalid {
                path: criteria_path.clone(),
                detail: error.to_string(),
            })?;
        if criteria.required.is_empty() {
            return Err(TaskError::Invalid {
                path: criteria_path,
                detail: "`required` lists no fact: every answer would pass".to_owned(),
            });
        }
        let script_path = dir.join("script.json");
        let script = if script_path.exists() {
            Some(
                Script::from_json(&read(&script_path)?).map_err(|error| TaskError::Invalid {
                    path: script_path,
                    detail: error.to_string(),
                })?,
            )
        } else {
            None
        };
        let answers_path = dir.join("answers.yaml");
        let answers = if answers_path.exists() {
            serde_norway::from_str(&read(&answers_path)?).map_err(|error| TaskError::Invalid {
                path: answers_path,
                detail: error.to_string(),
            })?
        } else {
            Answers::default()
        };
        let spec_path = dir.join("spec.json");
        let spec = if spec_path.exists() {
            Some(
                serde_json::from_str(&read(&spec_path)?).map_err(|error| TaskError::Invalid {
                    path: spec_path,
                    detail: format!("expected a JSON object of agent spec fields: {error}"),
                })?,
            )
        } else {
            None
        };
        Ok(Self {
            name,
            prompt,
            criteria,
            script,
            answers,
            spec,
        })
    }

    /// Every task directory under `root` (those with a `prompt.txt`), by name.
    pub fn load_all(root: &Path) -> Result<Vec<Self>, TaskError> {
        let entries = std::fs::read_dir(root).map_err(|source| TaskError::Read {
            path: root.to_owned(),
            source,
        })?;
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.join("prompt.txt").is_file())
            .collect();
        dirs.sort();
        dirs.iter().map(|dir| Self::load(dir)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_passes_with_every_required_fact_and_no_forbidden_one() {
        let criteria = Criteria {
            required: vec!["Dev Shah".to_owned(), "blocked".to_owned()],
            forbidden: vec!["I don't know".to_owned()],
            evidence: Vec::new(),
            judge: None,
        };
        assert!(criteria.grade("ISS-0042 is BLOCKED, assigned to dev shah.").passed);
        let grade = criteria.grade("It is assigned to Dev Shah. I don't know its status.");
        assert_eq!(grade.missing, ["blocked"]);
        assert_eq!(grade.forbidden_found, ["I don't know"]);
        assert!(!grade.passed);
    }
}

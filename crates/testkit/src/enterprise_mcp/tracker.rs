//! The project tracker: 12 projects and 3,000 issues. `list_issues` pages (filtered by project, status and
//! assignee), `get_issue` reads one with its description, `export_project` returns every issue of a project
//! with its description in one result (about 100 KB).

use serde::Serialize;
use serde_json::{Value, json};

use super::seed::{PEOPLE, Seed};
use super::{optional, page, paged_schema, required};
use crate::mcp_http::ToolServer;

pub const STATUSES: [&str; 4] = ["open", "in_progress", "blocked", "closed"];
pub const PRIORITIES: [&str; 4] = ["P0", "P1", "P2", "P3"];

#[derive(Debug, Clone, Serialize)]
pub struct Project {
    pub key: String,
    pub name: String,
    pub lead: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Issue {
    pub id: String,
    pub project: String,
    pub title: String,
    pub status: String,
    pub priority: String,
    pub assignee: String,
    pub points: u32,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// The tracker's data and tools.
pub struct Tracker {
    pub projects: Vec<Project>,
    pub issues: Vec<Issue>,
}

impl Default for Tracker {
    fn default() -> Self {
        Self::seeded()
    }
}

impl Tracker {
    /// The same 12 projects and 3,000 issues every time.
    pub fn seeded() -> Self {
        const NAMES: [&str; 12] = [
            "Billing",
            "Checkout",
            "Search",
            "Mobile",
            "Identity",
            "Payments",
            "Reporting",
            "Onboarding",
            "Gateway",
            "Notifications",
            "Storage",
            "Analytics",
        ];
        let mut seed = Seed::new(0x0074_7261_636b_6572);
        let projects: Vec<Project> = NAMES
            .iter()
            .enumerate()
            .map(|(index, name)| Project {
                key: format!("PRJ{:02}", index + 1),
                name: (*name).to_owned(),
                lead: (*seed.pick(&PEOPLE)).to_owned(),
            })
            .collect();
        let issues = (1..=3000)
            .map(|number| {
                let project = seed.pick(&projects).key.clone();
                let subject = seed.prose(4);
                Issue {
                    id: format!("ISS-{number:04}"),
                    project,
                    title: format!("Fix {subject}"),
                    status: (*seed.pick(&STATUSES)).to_owned(),
                    priority: (*seed.pick(&PRIORITIES)).to_owned(),
                    assignee: (*seed.pick(&PEOPLE)).to_owned(),
                    points: u32::try_from(1 + seed.below(8)).unwrap_or(1),
                    description: seed.prose_between(40, 40),
                }
            })
            .collect();
        Self { projects, issues }
    }

    fn summaries(&self, arguments: &Value) -> Vec<Issue> {
        let project = optional(arguments, "project");
        let status = optional(arguments, "status");
        let assignee = optional(arguments, "assignee");
        self.issues
            .iter()
            .filter(|issue| project.is_none_or(|project| issue.project == project))
            .filter(|issue| status.is_none_or(|status| issue.status == status))
            .filter(|issue| assignee.is_none_or(|assignee| issue.assignee == assignee))
            .map(|issue| Issue {
                description: String::new(),
                ..issue.clone()
            })
            .collect()
    }
}

impl ToolServer for Tracker {
    fn name(&self) -> &str {
        "tracker"
    }

    fn tools(&self) -> Vec<Value> {
        vec![
            json!({"name": "list_projects", "description": "Every project: key, name, lead.",
                "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}}),
            json!({"name": "list_issues",
            "description": "Issues without descriptions, paged, filtered by project key, status and assignee.",
            "inputSchema": paged_schema(json!({
                "project": {"type": "string"},
                "status": {"type": "string", "enum": STATUSES},
                "assignee": {"type": "string"},
            }))}),
            json!({"name": "get_issue", "description": "One issue with its description.",
                "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}),
            json!({"name": "export_project", "description": "Every issue of a project, descriptions included.",
                "inputSchema": {"type": "object", "properties": {"project": {"type": "string"}},
                    "required": ["project"]}}),
        ]
    }

    fn call(&self, tool: &str, arguments: &Value) -> Result<String, String> {
        match tool {
            "list_projects" => Ok(json!({"projects": self.projects}).to_string()),
            "list_issues" => page(&self.summaries(arguments), arguments, "issues"),
            "get_issue" => {
                let id = required(arguments, "id")?;
                let issue = self.issues.iter().find(|issue| issue.id == id);
                let issue = issue.ok_or_else(|| format!("no issue {id}"))?;
                Ok(json!(issue).to_string())
            }
            "export_project" => {
                let project = required(arguments, "project")?;
                if !self.projects.iter().any(|known| known.key == project) {
                    return Err(format!("no project {project}"));
                }
                let issues: Vec<&Issue> = self.issues.iter().filter(|issue| issue.project == project).collect();
                Ok(json!({"project": project, "issues": issues}).to_string())
            }
            other => Err(format!("unknown tool {other}")),
        }
    }
}

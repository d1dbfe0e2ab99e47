//! The bundled tasks' answers come from the fake servers' seeded data: this recomputes each from the data
//! (through the servers' own tools) and checks that the task's criteria and scripted answer still say it, so a
//! change to the seed that moves an answer fails here rather than as a puzzling evaluation failure.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use trueforge_testkit::enterprise_mcp::{Crm, FileServer, Tracker};
use trueforge_testkit::mcp_http::ToolServer;

fn task_file(task: &str, file: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../bench/eval/tasks")
        .join(task)
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// Asserts that `task`'s criteria and script both carry every fact.
fn states(task: &str, facts: &[String]) {
    let criteria = task_file(task, "criteria.yaml");
    let script = task_file(task, "script.json");
    for fact in facts {
        assert!(
            criteria.contains(fact.as_str()),
            "{task}'s criteria.yaml lacks {fact:?}"
        );
        assert!(
            script.contains(fact.as_str()),
            "{task}'s scripted answer lacks {fact:?}"
        );
    }
}

fn call(server: &dyn ToolServer, tool: &str, arguments: Value) -> Value {
    serde_json::from_str(&server.call(tool, &arguments).unwrap()).unwrap()
}

/// `2148000` as `2,148,000`.
fn thousands(number: u64) -> String {
    let digits = number.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[test]
fn tracker_answers_match_the_seeded_data() {
    let tracker = Tracker::seeded();

    let issue = call(&tracker, "get_issue", json!({"id": "ISS-0042"}));
    let lookup: Vec<String> = ["assignee", "status", "priority"]
        .iter()
        .map(|key| issue[key].as_str().unwrap().to_owned())
        .collect();
    states("lookup", &lookup);

    let open: Vec<&_> = tracker
        .issues
        .iter()
        .filter(|issue| issue.project == "PRJ03" && issue.status == "open")
        .collect();
    let points: u32 = open.iter().map(|issue| issue.points).sum();
    states("multi-page", &[open.len().to_string(), points.to_string()]);
    assert_eq!(
        open.last().unwrap().id,
        "ISS-2992",
        "multi-page's evidence is the last page's last issue"
    );

    let projects = call(&tracker, "list_projects", json!({}));
    let prj05 = projects["projects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|project| project["key"] == "PRJ05")
        .unwrap();
    states("two-servers", &[prj05["lead"].as_str().unwrap().to_owned()]);

    let export = call(&tracker, "export_project", json!({"project": "PRJ07"}));
    let issues = export["issues"].as_array().unwrap();
    let p0 = issues.iter().filter(|issue| issue["priority"] == "P0").count();
    assert!(
        export.to_string().len() > 100_000,
        "the export must be large enough to be saved"
    );
    let count_line = format!("P0 {p0} of {}", issues.len());
    assert!(task_file("large-export", "criteria.yaml").contains(&count_line));
    states("large-export", &[p0.to_string(), issues.len().to_string()]);

    let recalled = call(&tracker, "get_issue", json!({"id": "ISS-0117"}));
    let prj01 = call(&tracker, "list_issues", json!({"project": "PRJ01", "page_size": 1}));
    let title = recalled["title"].as_str().unwrap().to_owned();
    states(
        "compaction-recall",
        &[
            recalled["assignee"].as_str().unwrap().to_owned(),
            prj01["total"].to_string(),
        ],
    );
    assert!(task_file("compaction-recall", "criteria.yaml").contains(&title));
    // The evidence proves recall only if no page the agent reads after the lookup carries the title.
    assert!(
        !tracker
            .issues
            .iter()
            .any(|issue| issue.project == "PRJ01" && issue.title == title),
        "a PRJ01 page carries ISS-0117's title"
    );
}

#[test]
fn crm_answers_match_the_seeded_data() {
    let crm = Crm::seeded();

    let account = call(&crm, "get_account", json!({"id": "ACC-473"}));
    let deals = call(&crm, "list_deals", json!({"account_id": "ACC-473", "page_size": 25}));
    let deals = deals["deals"].as_array().unwrap();
    let total: u64 = deals.iter().map(|deal| deal["amount"].as_u64().unwrap()).sum();
    let won: u64 = deals
        .iter()
        .filter(|deal| deal["stage"] == "won")
        .map(|deal| deal["amount"].as_u64().unwrap())
        .sum();
    states(
        "account-deals",
        &[
            account["account"]["owner"].as_str().unwrap().to_owned(),
            account["account"]["name"].as_str().unwrap().to_owned(),
            format!("{} deals", deals.len()),
            thousands(total),
            thousands(won),
        ],
    );
    assert!(task_file("account-deals", "criteria.yaml").contains(deals.last().unwrap()["id"].as_str().unwrap()));

    let other = call(&crm, "get_account", json!({"id": "ACC-010"}));
    states(
        "two-servers",
        &[
            other["account"]["owner"].as_str().unwrap().to_owned(),
            other["account"]["name"].as_str().unwrap().to_owned(),
        ],
    );
}

#[test]
fn file_answers_match_the_seeded_data() {
    let files = FileServer::seeded();

    let found = call(&files, "search_files", json!({"query": "document 123"}));
    assert_eq!(
        found["paths"],
        json!(["runbooks/document-123.md"]),
        "the search must find one file"
    );
    let content = files
        .call("read_file", &json!({"path": "runbooks/document-123.md"}))
        .unwrap();
    let first_words: Vec<&str> = content
        .lines()
        .skip(1)
        .flat_map(str::split_whitespace)
        .take(5)
        .collect();
    states("search-then-read", &[first_words.join(" ")]);

    let report = files
        .call("read_file", &json!({"path": FileServer::PLANTED_PATH}))
        .unwrap();
    assert!(report.contains(FileServer::PLANTED_FACT));
    assert!(task_file("large-report", "criteria.yaml").contains(FileServer::PLANTED_FACT));
}

#[test]
fn thousands_are_grouped() {
    assert_eq!(thousands(2_148_000), "2,148,000");
    assert_eq!(thousands(204_000), "204,000");
    assert_eq!(thousands(999), "999");
}

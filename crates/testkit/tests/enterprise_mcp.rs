//! The fake enterprise MCP servers over HTTP, as an MCP client sees them: the handshake, the tool lists,
//! list tools that page through every seeded object exactly once, large results, the planted fact, and bad
//! arguments answered as tool errors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Value, json};
use trueforge_testkit::enterprise_mcp::{Crm, EnterpriseMcpServer, FileServer, Tracker};

async fn rpc(url: &str, method: &str, params: Value) -> Value {
    let answer: Value = reqwest::Client::new()
        .post(url)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["result"].clone()
}

/// A tool's text result, and whether it is a tool error.
async fn call(url: &str, tool: &str, arguments: Value) -> (String, bool) {
    let result = rpc(url, "tools/call", json!({"name": tool, "arguments": arguments})).await;
    (
        result["content"][0]["text"].as_str().unwrap().to_owned(),
        result["isError"].as_bool().unwrap_or(false),
    )
}

#[tokio::test]
async fn the_tracker_pages_through_every_issue_of_a_project_once() {
    let tracker = Arc::new(Tracker::seeded());
    assert_eq!((tracker.projects.len(), tracker.issues.len()), (12, 3000));
    let server = EnterpriseMcpServer::start(tracker.clone()).await.unwrap();
    let init = rpc(&server.url, "initialize", json!({"protocolVersion": "2025-06-18"})).await;
    assert_eq!(init["serverInfo"]["name"], "tracker");
    let tools = rpc(&server.url, "tools/list", json!({})).await;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["list_projects", "list_issues", "get_issue", "export_project"]);

    let expected: HashSet<&str> = tracker
        .issues
        .iter()
        .filter(|issue| issue.project == "PRJ03" && issue.status == "open")
        .map(|issue| issue.id.as_str())
        .collect();
    assert!(expected.len() > 25, "more than one page: {}", expected.len());
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut arguments = json!({"project": "PRJ03", "status": "open", "page_size": 25});
        if let Some(token) = &token {
            arguments["page_token"] = json!(token);
        }
        let (text, error) = call(&server.url, "list_issues", arguments).await;
        assert!(!error, "{text}");
        let page: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(page["total"], expected.len());
        for issue in page["issues"].as_array().unwrap() {
            assert!(issue.get("description").is_none(), "lists leave descriptions out");
            seen.push(issue["id"].as_str().unwrap().to_owned());
        }
        match page["next_page_token"].as_str() {
            Some(next) => token = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen.len(), expected.len(), "no issue twice");
    assert_eq!(seen.iter().map(String::as_str).collect::<HashSet<_>>(), expected);

    let (text, error) = call(&server.url, "export_project", json!({"project": "PRJ03"})).await;
    assert!(!error);
    assert!(text.len() > 50_000, "a large result: {} bytes", text.len());
    let (text, error) = call(&server.url, "get_issue", json!({"id": "ISS-0042"})).await;
    assert!(!error);
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["description"],
        tracker.issues[41].description
    );

    // Bad arguments are tool errors that say what is wrong.
    for (tool, arguments, says) in [
        ("list_issues", json!({"page_size": 500}), "page_size"),
        ("list_issues", json!({"page_token": "banana"}), "page_token"),
        ("get_issue", json!({"id": "ISS-9999"}), "no issue"),
        ("get_issue", json!({}), "`id` is required"),
        ("export_project", json!({"project": "PRJ99"}), "no project"),
    ] {
        let (text, error) = call(&server.url, tool, arguments).await;
        assert!(error && text.contains(says), "{tool}: {text}");
    }
}

#[tokio::test]
async fn the_crm_filters_pages_and_reports() {
    let crm = Arc::new(Crm::seeded());
    assert_eq!(
        (crm.accounts.len(), crm.contacts.len(), crm.deals.len()),
        (500, 2000, 1500)
    );
    let server = EnterpriseMcpServer::start(crm.clone()).await.unwrap();
    let (text, _) = call(&server.url, "list_deals", json!({"stage": "won", "page_size": 100})).await;
    let page: Value = serde_json::from_str(&text).unwrap();
    let won = crm.deals.iter().filter(|deal| deal.stage == "won").count();
    assert_eq!(page["total"], won);
    assert_eq!(page["deals"].as_array().unwrap().len(), 100.min(won));
    let (text, _) = call(&server.url, "get_account", json!({"id": "ACC-007"})).await;
    let account: Value = serde_json::from_str(&text).unwrap();
    let contacts = crm
        .contacts
        .iter()
        .filter(|contact| contact.account_id == "ACC-007")
        .count();
    assert_eq!(account["contacts"].as_array().unwrap().len(), contacts);
    let (text, _) = call(&server.url, "deal_report", json!({})).await;
    assert!(text.len() > 150_000, "a large result: {} bytes", text.len());
}

#[tokio::test]
async fn the_file_server_hides_a_fact_deep_in_a_large_report() {
    let files = Arc::new(FileServer::seeded());
    let server = EnterpriseMcpServer::start(files.clone()).await.unwrap();
    let (text, _) = call(&server.url, "read_file", json!({"path": FileServer::PLANTED_PATH})).await;
    assert!(text.len() > 100_000, "{} bytes", text.len());
    let at = text.find(FileServer::PLANTED_FACT).unwrap();
    assert!(at > text.len() * 8 / 10, "deep inside: at {at} of {}", text.len());
    let (text, _) = call(&server.url, "search_files", json!({"query": "INC-4471 gateway-7"})).await;
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["paths"],
        json!([FileServer::PLANTED_PATH])
    );
    let (text, _) = call(
        &server.url,
        "list_files",
        json!({"folder": "reports", "page_size": 100}),
    )
    .await;
    let page: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(page["total"], 101, "100 seeded plus the planted report");
    // The data is the same on every run: graders can compute answers from it.
    assert_eq!(FileServer::seeded().files[7].content, files.files[7].content);
}

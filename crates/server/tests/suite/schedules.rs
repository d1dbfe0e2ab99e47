//! Schedules over HTTP: create / read / replace / delete with their validation (cron, zone, minimum
//! interval, agent), pause and resume, run now (a normal session and turn of the owner's), the runs list;
//! and the dispatcher: a per-second schedule runs each occurrence once as its own session, a paused one
//! does not run, and occurrences missed while nothing ran become one `missed` run instead of a burst.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use trueforge_protocol::TenantId;
use trueforge_server::schedules::cron::CronSchedule;
use trueforge_store::Timestamp;
use trueforge_store::settings::ScheduleFields;

use crate::support::{MODEL, TestServer};

async fn server_with_minimum(seconds: u64) -> TestServer {
    TestServer::start_with(|config| config.schedule_min_interval = Duration::from_secs(seconds)).await
}

async fn agent(server: &TestServer, name: &str) -> String {
    let (status, body) = server
        .post(
            "/api/v1/agents",
            json!({"name": name, "manifest": {"model": {"name": MODEL}}}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    body["data"]["id"].as_str().unwrap().to_owned()
}

fn body(agent_id: &str, cron: &str) -> Value {
    json!({"name": "digest", "agent_id": agent_id, "manifest": {"task": "Say hello", "cron": cron}})
}

async fn create(server: &TestServer, body: Value) -> Value {
    let (status, answer) = server.post("/api/v1/schedules", body).await;
    assert_eq!(status, 201, "{answer}");
    answer["data"].clone()
}

async fn runs(server: &TestServer, schedule_id: &str) -> Vec<Value> {
    let (status, body) = server.get(&format!("/api/v1/schedules/{schedule_id}/runs")).await;
    assert_eq!(status, 200, "{body}");
    body["data"].as_array().unwrap().clone()
}

/// Waits until `done` holds of the schedule's runs (at most 10 s); returns them.
async fn wait_for_runs(server: &TestServer, schedule_id: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    for _ in 0..100 {
        let runs = runs(server, schedule_id).await;
        if done(&runs) {
            return runs;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "the runs of {schedule_id} did not get there: {:?}",
        runs(server, schedule_id).await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_is_made_read_replaced_paused_resumed_and_deleted() {
    let server = server_with_minimum(3600).await;
    let agent_id = agent(&server, "reporter").await;
    let created = create(
        &server,
        json!({"name": "  morning digest ", "agent_id": agent_id,
            "manifest": {"task": "Summarise the news", "cron": "0 9 * * MON-FRI", "timezone": "Europe/Paris"}}),
    )
    .await;
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("sch_"), "{id}");
    assert_eq!(created["name"], "morning digest");
    assert_eq!(created["state"], "active");
    assert_eq!(created["created_by"], "trueforge-default");
    assert_eq!(created["last_run_at"], Value::Null);
    assert_eq!(
        created["manifest"],
        json!({"task": "Summarise the news", "cron": "0 9 * * MON-FRI", "timezone": "Europe/Paris"})
    );
    let expected_next = CronSchedule::parse("0 9 * * MON-FRI", "Europe/Paris")
        .unwrap()
        .next_after(Timestamp::now())
        .unwrap();
    assert_eq!(created["next_run_at"], expected_next.to_iso().as_str());

    let (status, got) = server.get(&format!("/api/v1/schedules/{id}")).await;
    assert_eq!((status, &got["data"]), (200, &created));
    let (status, listed) = server.get("/api/v1/schedules").await;
    assert_eq!(status, 200);
    assert_eq!(listed["data"], json!([created.clone()]));
    assert_eq!(listed["pagination"]["limit"], 100);

    // The timezone defaults to UTC.
    let (status, replaced) = server
        .send(
            Method::PUT,
            &format!("/api/v1/schedules/{id}"),
            Some(body(&agent_id, "30 7 * * *")),
        )
        .await;
    assert_eq!(status, 200, "{replaced}");
    assert_eq!(replaced["data"]["manifest"]["timezone"], "UTC");
    assert_eq!(replaced["data"]["manifest"]["cron"], "30 7 * * *");
    assert!(
        replaced["data"]["next_run_at"]
            .as_str()
            .unwrap()
            .ends_with("T07:30:00.000Z")
    );

    let (status, paused) = server.post(&format!("/api/v1/schedules/{id}/pause"), json!({})).await;
    assert_eq!(status, 200, "{paused}");
    assert_eq!(
        (&paused["data"]["state"], &paused["data"]["next_run_at"]),
        (&json!("paused"), &Value::Null)
    );
    // Replacing a paused schedule keeps it paused.
    let (_, still) = server
        .send(
            Method::PUT,
            &format!("/api/v1/schedules/{id}"),
            Some(body(&agent_id, "0 8 * * *")),
        )
        .await;
    assert_eq!(
        (&still["data"]["state"], &still["data"]["next_run_at"]),
        (&json!("paused"), &Value::Null)
    );
    let (status, resumed) = server.post(&format!("/api/v1/schedules/{id}/resume"), json!({})).await;
    assert_eq!(status, 200, "{resumed}");
    assert_eq!(resumed["data"]["state"], "active");
    assert!(
        resumed["data"]["next_run_at"]
            .as_str()
            .unwrap()
            .ends_with("T08:00:00.000Z")
    );

    let (status, _) = server
        .send(Method::DELETE, &format!("/api/v1/schedules/{id}"), None)
        .await;
    assert_eq!(status, 200);
    for (method, path) in [
        (Method::GET, format!("/api/v1/schedules/{id}")),
        (Method::DELETE, format!("/api/v1/schedules/{id}")),
        (Method::POST, format!("/api/v1/schedules/{id}/run")),
        (Method::POST, format!("/api/v1/schedules/{id}/pause")),
        (Method::GET, format!("/api/v1/schedules/{id}/runs")),
        (Method::GET, format!("/api/v1/schedules/{}", "x".repeat(65))),
    ] {
        let (status, answer) = server.send(method.clone(), &path, None).await;
        assert_eq!(status, 404, "{method} {path}: {answer}");
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_schedules_are_refused_with_what_is_wrong() {
    let server = server_with_minimum(3600).await;
    let agent_id = agent(&server, "reporter").await;
    let with = |manifest: Value| json!({"name": "n", "agent_id": agent_id, "manifest": manifest});
    for (request, status, message) in [
        (
            with(json!({"task": "t", "cron": "every day"})),
            400,
            "invalid cron expression \"every day\"",
        ),
        (
            with(json!({"task": "t", "cron": "0 * * * *", "timezone": "Mars/Olympus"})),
            400,
            "unknown time zone \"Mars/Olympus\"",
        ),
        (
            with(json!({"task": "t", "cron": "*/5 * * * *"})),
            400,
            "runs 300 s apart at its closest; the minimum interval is 3600 s",
        ),
        (with(json!({"task": "  ", "cron": "0 * * * *"})), 400, "manifest.task"),
        (with(json!({"cron": "0 * * * *"})), 400, "task"),
        (
            json!({"name": "", "agent_id": agent_id, "manifest": {"task": "t", "cron": "0 * * * *"}}),
            400,
            "name must be 1 to 100 characters",
        ),
        (
            json!({"name": "n", "agent_id": agent_id, "manifest": {"task": "t", "cron": "0 * * * *"}, "extra": 1}),
            400,
            "extra",
        ),
        (
            json!({"name": "n", "agent_id": "no-such-agent", "manifest": {"task": "t", "cron": "0 * * * *"}}),
            404,
            "Agent not found: no-such-agent",
        ),
    ] {
        let (answered, body) = server.post("/api/v1/schedules", request.clone()).await;
        assert_eq!(answered, status, "{request}: {body}");
        let text = body["error"]["message"].as_str().unwrap_or_default();
        assert!(text.contains(message), "{request}: {text}");
    }
    let (status, body) = server.get("/api/v1/schedules?limit=0").await;
    assert_eq!(status, 400, "{body}");
    let (status, listed) = server.get("/api/v1/schedules").await;
    assert_eq!(
        (status, listed["data"].as_array().unwrap().len()),
        (200, 0),
        "nothing was made"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_now_starts_a_normal_session_and_turn_even_when_paused() {
    let server = server_with_minimum(3600).await;
    let agent_id = agent(&server, "reporter").await;
    let schedule = create(&server, body(&agent_id, "0 0 1 1 *")).await;
    let id = schedule["id"].as_str().unwrap();
    server.post(&format!("/api/v1/schedules/{id}/pause"), json!({})).await;

    let (status, run) = server.post(&format!("/api/v1/schedules/{id}/run"), json!({})).await;
    assert_eq!(status, 201, "{run}");
    let run = &run["data"];
    assert_eq!((&run["status"], &run["trigger"]), (&json!("started"), &json!("manual")));
    assert_eq!(run["schedule_id"], id);
    let session_id = run["session_id"].as_str().unwrap();
    let turn_id = run["turn_id"].as_str().unwrap();

    // The session is the owner's, of the saved agent, listed and openable like any other; its turn's
    // user message is the task.
    let (status, session) = server.get(&format!("/api/v1/sessions/{session_id}")).await;
    assert_eq!(status, 200, "{session}");
    assert_eq!(session["data"]["agent"]["id"], agent_id.as_str());
    assert_eq!(session["data"]["created_by"], "trueforge-default");
    let (_, sessions) = server.get("/api/v1/sessions").await;
    assert!(
        sessions["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|listed| listed["id"] == session_id),
        "{sessions}"
    );
    let mut turn = Value::Null;
    for _ in 0..100 {
        let (status, got) = server
            .get(&format!("/api/v1/sessions/{session_id}/turns/{turn_id}"))
            .await;
        assert_eq!(status, 200, "{got}");
        turn = got["data"].clone();
        if turn["state"]["status"] == "done" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(turn["state"]["status"], "done", "{turn}");
    let (_, events) = server
        .get(&format!("/api/v1/sessions/{session_id}/turns/{turn_id}/events"))
        .await;
    assert!(events.to_string().contains("Say hello"), "{events}");

    let (_, got) = server.get(&format!("/api/v1/schedules/{id}")).await;
    assert_eq!(got["data"]["last_run_at"], run["due_at"]);
    assert_eq!(got["data"]["state"], "paused");
    assert_eq!(runs(&server, id).await, vec![run.clone()]);

    // A run of a schedule whose agent was deleted fails and says why.
    let (status, _) = server
        .send(Method::DELETE, &format!("/api/v1/agents/{agent_id}"), None)
        .await;
    assert_eq!(status, 200);
    let (status, failed) = server.post(&format!("/api/v1/schedules/{id}/run"), json!({})).await;
    assert_eq!(status, 201, "{failed}");
    assert_eq!(failed["data"]["status"], "failed");
    assert_eq!(failed["data"]["session_id"], Value::Null);
    assert!(
        failed["data"]["error"].as_str().unwrap().contains("Agent not found"),
        "{failed}"
    );
    // Newest first, paged.
    let (_, page) = server.get(&format!("/api/v1/schedules/{id}/runs?limit=1")).await;
    assert_eq!(page["data"][0]["id"], failed["data"]["id"]);
    let token = page["pagination"]["next_page_token"].as_str().unwrap();
    let (_, next) = server
        .get(&format!("/api/v1/schedules/{id}/runs?limit=1&page_token={token}"))
        .await;
    assert_eq!(next["data"][0]["id"], run["id"]);
    assert_eq!(next["pagination"].get("next_page_token"), None, "the last page says so");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_occurrence_runs_once_as_its_own_session_and_a_paused_schedule_does_not_run() {
    let server = server_with_minimum(1).await;
    let agent_id = agent(&server, "ticker").await;
    let schedule = create(&server, body(&agent_id, "* * * * * *")).await;
    let id = schedule["id"].as_str().unwrap();
    let runs = wait_for_runs(&server, id, |runs| {
        runs.len() >= 3 && runs.iter().all(|run| run["status"] == "started")
    })
    .await;
    let (_, paused) = server.post(&format!("/api/v1/schedules/{id}/pause"), json!({})).await;
    assert_eq!(paused["data"]["state"], "paused");
    let mut due: Vec<&str> = runs.iter().map(|run| run["due_at"].as_str().unwrap()).collect();
    let mut sessions: Vec<&str> = runs.iter().map(|run| run["session_id"].as_str().unwrap()).collect();
    let count = runs.len();
    due.dedup();
    sessions.sort_unstable();
    sessions.dedup();
    assert_eq!(
        (due.len(), sessions.len()),
        (count, count),
        "one run and one session per occurrence"
    );
    for run in &runs {
        assert_eq!(run["trigger"], "schedule");
        assert!(
            run["due_at"].as_str().unwrap().ends_with(".000Z"),
            "on the second: {run}"
        );
    }
    // Paused: after the run that may have been claimed as it paused, nothing more.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let settled = self::runs(&server, id).await.len();
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert_eq!(self::runs(&server, id).await.len(), settled, "no run while paused");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn occurrences_missed_while_nothing_ran_are_marked_not_replayed() {
    let server = server_with_minimum(1).await;
    let agent_id = agent(&server, "reporter").await;
    let tenant = TenantId::from("default");
    let now = Timestamp::now();

    // Hourly, last looked at three hours ago (the server was down): every occurrence is past the grace.
    let hourly = create(&server, body(&agent_id, "0 * * * *")).await;
    let hourly_id = hourly["id"].as_str().unwrap();
    let cron = CronSchedule::parse("0 * * * *", "UTC").unwrap();
    let first_missed = cron.next_after(now.plus_millis(-3 * 3_600_000 - 1)).unwrap();
    // Every second, last looked at ten minutes ago: the latest occurrence is within the grace and runs.
    let secondly = create(&server, body(&agent_id, "* * * * * *")).await;
    let secondly_id = secondly["id"].as_str().unwrap();
    server
        .post(&format!("/api/v1/schedules/{secondly_id}/pause"), json!({}))
        .await;
    let ten_minutes_ago = Timestamp((now.millis() / 1000 - 600) * 1000);
    for (id, cron, next_run_at) in [
        (hourly_id, "0 * * * *", first_missed),
        (secondly_id, "* * * * * *", ten_minutes_ago),
    ] {
        let fields = ScheduleFields {
            name: "digest".to_owned(),
            agent_id: agent_id.clone(),
            task: "Say hello".to_owned(),
            cron: cron.to_owned(),
            timezone: "UTC".to_owned(),
            state: trueforge_store::settings::ScheduleState::Active,
            next_run_at: Some(next_run_at),
        };
        server
            .state
            .settings
            .update_schedule(&tenant, id, fields)
            .await
            .unwrap()
            .unwrap();
    }

    let hourly_runs = wait_for_runs(&server, hourly_id, |runs| !runs.is_empty()).await;
    assert_eq!(hourly_runs.len(), 1, "{hourly_runs:?}");
    assert_eq!(hourly_runs[0]["status"], "missed");
    assert_eq!(hourly_runs[0]["missed_occurrences"], 3);
    assert_eq!(hourly_runs[0]["due_at"], first_missed.to_iso().as_str());
    assert_eq!(hourly_runs[0]["session_id"], Value::Null);
    let (_, hourly) = server.get(&format!("/api/v1/schedules/{hourly_id}")).await;
    let next = hourly["data"]["next_run_at"].as_str().unwrap();
    assert!(
        next > Timestamp::now().to_iso().as_str(),
        "the next run is in the future: {next}"
    );

    let secondly_runs = wait_for_runs(&server, secondly_id, |runs| {
        runs.iter().any(|run| run["status"] == "missed") && runs.iter().any(|run| run["status"] == "started")
    })
    .await;
    server
        .post(&format!("/api/v1/schedules/{secondly_id}/pause"), json!({}))
        .await;
    let missed: Vec<&Value> = secondly_runs.iter().filter(|run| run["status"] == "missed").collect();
    assert_eq!(
        missed.len(),
        1,
        "one row for all the missed occurrences: {secondly_runs:?}"
    );
    assert_eq!(missed[0]["due_at"], ten_minutes_ago.to_iso().as_str());
    assert!(missed[0]["missed_occurrences"].as_u64().unwrap() >= 540, "{missed:?}");
    // No burst: the sessions made are the few occurrences since, not hundreds.
    let (_, sessions) = server.get("/api/v1/sessions").await;
    assert!(sessions["data"].as_array().unwrap().len() <= 10, "{sessions}");
    server.stop().await;
}

//! Costs over the HTTP API: a custom provider's manifest prices its model, and the cost of each turn
//! (`turn.done`, `GET …/turns/{id}`) and of the session (`GET /sessions/{id}`, the list) is tokens × prices.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use trueforge_testkit::fake_llm::{Api, ScriptedStream, ScriptedUsage};

use crate::support::TestServer;

const PRICED: &str = "priced/fake-model";

/// USD per million tokens: input, output, cache read, reasoning.
const PRICES: (f64, f64, f64, f64) = (3.0, 15.0, 0.3, 5.0);

fn user(text: &str) -> Value {
    json!([{"type": "user.message", "content": text}])
}

/// The fake model as the custom provider `priced`, its model priced in the manifest.
async fn configure_priced_provider(server: &TestServer) {
    let (input, output, cache_read, reasoning) = PRICES;
    let (status, body) = server
        .send(
            reqwest::Method::PUT,
            "/api/v1/settings/model-providers",
            Some(json!({"manifest": {
                "type": "custom",
                "name": "priced",
                "base_url": server.fake.base_url(Api::Chat),
                "models": [{"model_id": "fake-model", "name": "fake-model", "properties": {
                    "pricing": {
                        "input_per_mtok": input,
                        "output_per_mtok": output,
                        "cache_read_per_mtok": cache_read,
                        "reasoning_per_mtok": reasoning
                    }
                }}],
            }})),
        )
        .await;
    assert!(status == 200 || status == 201, "{status} {body}");
    // The manifest keeps its prices (in the settings and in the model list).
    let (_, models) = server.get("/api/v1/models").await;
    let model = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|model| model["name"] == PRICED)
        .unwrap();
    assert_eq!(model["properties"]["pricing"]["reasoning_per_mtok"], reasoning);
}

async fn session_on(server: &TestServer, model: &str) -> String {
    let (status, body) = server
        .post(
            "/api/v1/sessions",
            json!({"agent": {"spec": {"model": {"name": model}}}}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    // Nothing spent yet.
    assert_eq!(body["data"]["total_cost_in_usd"], 0.0, "{body}");
    body["data"]["id"].as_str().unwrap().to_owned()
}

/// Runs one turn answering with `usage`; returns its id and the `turn.done` cost.
async fn turn(server: &TestServer, session_id: &str, previous: Option<&str>, usage: ScriptedUsage) -> (String, Value) {
    server.fake.push(ScriptedStream::text("Counted.").usage(usage));
    let mut body = json!({"input": user("hello")});
    if let Some(previous) = previous {
        body["previous_turn_id"] = json!(previous);
    }
    let frames = server.stream_turn(session_id, body).await;
    let done = &frames.last().unwrap().1;
    assert_eq!(done["type"], "turn.done");
    assert_eq!(done["state"]["status"], "done", "{done}");
    let turn_id = frames[0].1["turn_id"].as_str().unwrap().to_owned();
    (turn_id, done["state"]["metrics"]["total_cost_in_usd"].clone())
}

fn expected_cost(usage: &ScriptedUsage) -> f64 {
    let (input, output, cache_read, reasoning) = PRICES;
    let uncached = usage.input_tokens - usage.cache_read_tokens;
    let visible_output = usage.output_tokens - usage.reasoning_tokens;
    (uncached as f64 * input
        + visible_output as f64 * output
        + usage.cache_read_tokens as f64 * cache_read
        + usage.reasoning_tokens as f64 * reasoning)
        / 1e6
}

fn assert_cost(actual: &Value, expected: f64) {
    let actual = actual.as_f64().unwrap_or_else(|| panic!("no cost: {actual}"));
    assert!((actual - expected).abs() < 1e-12, "cost {actual}, expected {expected}");
}

#[tokio::test]
async fn turns_and_sessions_cost_their_tokens_at_the_manifests_prices() {
    let server = TestServer::start().await;
    configure_priced_provider(&server).await;
    let session_id = session_on(&server, PRICED).await;

    let first = ScriptedUsage {
        input_tokens: 10_000,
        output_tokens: 2_000,
        cache_read_tokens: 4_000,
        reasoning_tokens: 500,
        ..ScriptedUsage::default()
    };
    let (first_id, done_cost) = turn(&server, &session_id, None, first).await;
    // 6,000 uncached × 3 + 1,500 × 15 + 4,000 × 0.3 + 500 × 5 = 0.0442 USD.
    assert_cost(&done_cost, 0.0442);
    assert_cost(&done_cost, expected_cost(&first));
    let (status, stored) = server
        .get(&format!("/api/v1/sessions/{session_id}/turns/{first_id}"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(stored["data"]["state"]["metrics"]["total_cost_in_usd"], done_cost);
    assert_eq!(stored["data"]["state"]["metrics"]["total_reasoning_tokens"], 500);

    let second = ScriptedUsage {
        input_tokens: 20_000,
        output_tokens: 1_000,
        ..ScriptedUsage::default()
    };
    let (_, second_cost) = turn(&server, &session_id, Some(&first_id), second).await;
    assert_cost(&second_cost, expected_cost(&second));

    let total = expected_cost(&first) + expected_cost(&second);
    let (status, session) = server.get(&format!("/api/v1/sessions/{session_id}")).await;
    assert_eq!(status, 200);
    assert_cost(&session["data"]["total_cost_in_usd"], total);
    let (status, list) = server.get("/api/v1/sessions").await;
    assert_eq!(status, 200);
    let listed = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|listed| listed["id"] == session_id.as_str())
        .unwrap();
    assert_cost(&listed["total_cost_in_usd"], total);
    let (status, renamed) = server
        .send(
            reqwest::Method::PATCH,
            &format!("/api/v1/sessions/{session_id}"),
            Some(json!({"title": "Priced"})),
        )
        .await;
    assert_eq!(status, 200, "{renamed}");
    assert_cost(&renamed["data"]["total_cost_in_usd"], total);
    server.stop().await;
}

#[tokio::test]
async fn a_model_without_prices_leaves_the_cost_unknown() {
    let server = TestServer::start().await;
    configure_priced_provider(&server).await;
    // The test server's own provider has no prices.
    let unpriced = session_on(&server, crate::support::MODEL).await;
    let usage = ScriptedUsage {
        input_tokens: 100,
        output_tokens: 10,
        ..ScriptedUsage::default()
    };
    let (turn_id, done_cost) = turn(&server, &unpriced, None, usage).await;
    assert_eq!(done_cost, Value::Null, "no cost in turn.done");
    let (_, stored) = server
        .get(&format!("/api/v1/sessions/{unpriced}/turns/{turn_id}"))
        .await;
    assert_eq!(stored["data"]["state"]["metrics"]["total_input_tokens"], 100);
    assert!(stored["data"]["state"]["metrics"].get("total_cost_in_usd").is_none());
    let (_, session) = server.get(&format!("/api/v1/sessions/{unpriced}")).await;
    assert_eq!(session["data"]["total_cost_in_usd"], Value::Null, "{session}");

    // A priced session next to it keeps its own cost.
    let priced = session_on(&server, PRICED).await;
    turn(&server, &priced, None, usage).await;
    let (_, list) = server.get("/api/v1/sessions").await;
    let costs: Vec<(&str, &Value)> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|session| (session["id"].as_str().unwrap(), &session["total_cost_in_usd"]))
        .collect();
    assert!(costs.contains(&(unpriced.as_str(), &Value::Null)), "{costs:?}");
    let priced_cost = costs.iter().find(|(id, _)| *id == priced).unwrap().1;
    assert_cost(priced_cost, expected_cost(&usage));
    server.stop().await;
}

#[tokio::test]
async fn prices_in_a_manifest_are_checked() {
    let server = TestServer::start().await;
    let (status, body) = server
        .send(
            reqwest::Method::PUT,
            "/api/v1/settings/model-providers",
            Some(json!({"manifest": {
                "type": "custom",
                "name": "negative",
                "base_url": server.fake.base_url(Api::Chat),
                "models": [{"model_id": "m1", "name": "m1", "properties": {"pricing": {"input_per_mtok": -1.0}}}],
            }})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body.to_string().contains("models[0].properties.pricing.input_per_mtok"),
        "{body}"
    );
    let (status, body) = server
        .send(
            reqwest::Method::PUT,
            "/api/v1/settings/model-providers",
            Some(json!({"manifest": {
                "type": "custom",
                "name": "misspelt",
                "base_url": server.fake.base_url(Api::Chat),
                "models": [{"model_id": "m1", "name": "m1", "properties": {"pricing": {"input_per_token": 1.0}}}],
            }})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    server.stop().await;
}

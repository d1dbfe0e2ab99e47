//! The control plane (`/api/sandbox`, `/api/snapshots`) and what every request passes first: the log, the
//! API key, injected delays and failures.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Request, State as Extract};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::state::State;

/// An error in Daytona's shape (`statusCode`, `message`, `error`).
pub(crate) fn error(status: u16, message: impl Into<String>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = json!({
        "statusCode": status.as_u16(),
        "message": message.into(),
        "error": status.canonical_reason().unwrap_or("Error"),
    });
    (status, Json(body)).into_response()
}

/// Logs the request, checks the key, then applies the injected delay and failure, in that order: a
/// request with a bad key is refused before any fault, as Daytona authenticates first.
pub(crate) async fn gate(Extract(state): Extract<Arc<State>>, request: Request, next: Next) -> Response {
    state.record_request(format!("{} {}", request.method(), request.uri().path()));
    let expected = format!("Bearer {}", state.options.api_key);
    let authorized = request
        .headers()
        .get(header::AUTHORIZATION)
        .is_some_and(|value| value.as_bytes() == expected.as_bytes());
    if !authorized {
        return error(401, "Unauthorized");
    }
    let (fail, delay) = {
        let mut faults = state.faults();
        let fail = faults.fail_next > 0;
        if fail {
            faults.fail_next -= 1;
        }
        let delay = match faults.delay_next {
            Some((count, delay)) if count > 0 => {
                faults.delay_next = (count > 1).then_some((count - 1, delay));
                Some(delay)
            }
            _ => None,
        };
        (fail, delay)
    };
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    if fail {
        return error(500, "Internal server error");
    }
    next.run(request).await
}

pub(crate) async fn not_found(request: Request) -> Response {
    error(404, format!("Cannot {} {}", request.method(), request.uri().path()))
}

/// The fields of Daytona's `CreateSandbox` the fake reads; others are accepted and ignored.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateSandbox {
    name: Option<String>,
    snapshot: Option<String>,
    auto_stop_interval: Option<i64>,
    auto_archive_interval: Option<i64>,
    auto_delete_interval: Option<i64>,
}

pub(crate) async fn create_sandbox(
    Extract(state): Extract<Arc<State>>,
    body: Result<Json<CreateSandbox>, JsonRejection>,
) -> Response {
    let body = match body {
        Ok(Json(body)) => body,
        Err(rejection) => return error(400, rejection.body_text()),
    };
    let intervals = [
        body.auto_stop_interval,
        body.auto_archive_interval,
        body.auto_delete_interval,
    ];
    match state.create_sandbox(body.name, body.snapshot, intervals) {
        Ok(dto) => Json(dto).into_response(),
        Err((status, message)) => error(status, message),
    }
}

pub(crate) async fn get_sandbox(Extract(state): Extract<Arc<State>>, Path(id_or_name): Path<String>) -> Response {
    match state.sandbox_json(&id_or_name) {
        Some(dto) => Json(dto).into_response(),
        None => sandbox_not_found(&id_or_name),
    }
}

pub(crate) async fn delete_sandbox(Extract(state): Extract<Arc<State>>, Path(id_or_name): Path<String>) -> Response {
    match state.remove_sandbox(&id_or_name) {
        Some(_) => StatusCode::OK.into_response(),
        None => sandbox_not_found(&id_or_name),
    }
}

pub(crate) async fn start_sandbox(Extract(state): Extract<Arc<State>>, Path(id_or_name): Path<String>) -> Response {
    // Starting a started sandbox is a no-op in Daytona; a stopped or archived one comes back with its files.
    if !state.set_sandbox_state(&id_or_name, "started") {
        return sandbox_not_found(&id_or_name);
    }
    get_sandbox(Extract(state), Path(id_or_name)).await
}

pub(crate) async fn stop_sandbox(Extract(state): Extract<Arc<State>>, Path(id_or_name): Path<String>) -> Response {
    if state.set_sandbox_state(&id_or_name, "stopped") {
        StatusCode::OK.into_response()
    } else {
        sandbox_not_found(&id_or_name)
    }
}

fn sandbox_not_found(id_or_name: &str) -> Response {
    error(404, format!("Sandbox with ID or name {id_or_name} not found"))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateSnapshot {
    name: String,
    image_name: Option<String>,
}

pub(crate) async fn create_snapshot(
    Extract(state): Extract<Arc<State>>,
    body: Result<Json<CreateSnapshot>, JsonRejection>,
) -> Response {
    let body = match body {
        Ok(Json(body)) => body,
        Err(rejection) => return error(400, rejection.body_text()),
    };
    match state.create_snapshot(body.name, body.image_name) {
        Ok(dto) => Json(dto).into_response(),
        Err((status, message)) => error(status, message),
    }
}

pub(crate) async fn get_snapshot(Extract(state): Extract<Arc<State>>, Path(id_or_name): Path<String>) -> Response {
    match state.snapshot_json(&id_or_name) {
        Some(dto) => Json(dto).into_response(),
        None => error(404, format!("Snapshot {id_or_name} not found")),
    }
}

pub(crate) async fn delete_snapshot(Extract(state): Extract<Arc<State>>, Path(id_or_name): Path<String>) -> Response {
    if state.remove_snapshot(&id_or_name) {
        StatusCode::OK.into_response()
    } else {
        error(404, format!("Snapshot {id_or_name} not found"))
    }
}

pub(crate) async fn activate_snapshot(Extract(state): Extract<Arc<State>>, Path(id_or_name): Path<String>) -> Response {
    match state.activate_snapshot(&id_or_name) {
        Ok(dto) => Json(dto).into_response(),
        Err((status, message)) => error(status, message),
    }
}

//! How the API's bodies become responses: the `{data}` envelope and pages with a status. The bodies are
//! `trueforge_protocol::api`'s, shared with the client; the conversions from the store's records are the
//! store's.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;
use trueforge_protocol::api::{self, Pagination};

// The routes name these through this module, as they did when they were defined here.
pub use trueforge_protocol::api::{Session, Turn};

/// `{"data": …}` with a status (200 unless told).
pub struct Data<T>(pub StatusCode, pub T);

impl<T: Serialize> Data<T> {
    pub fn ok(value: T) -> Self {
        Self(StatusCode::OK, value)
    }

    pub fn created(value: T) -> Self {
        Self(StatusCode::CREATED, value)
    }
}

impl<T: Serialize> IntoResponse for Data<T> {
    fn into_response(self) -> Response {
        (self.0, Json(api::Data::new(self.1))).into_response()
    }
}

/// `{"data": [...], "pagination": {...}}`.
pub struct PageOf<T> {
    pub data: Vec<T>,
    pub limit: u32,
    pub next_page_token: Option<String>,
}

impl<T: Serialize> IntoResponse for PageOf<T> {
    fn into_response(self) -> Response {
        Json(api::Page::new(
            self.data,
            Pagination::new(self.limit, self.next_page_token),
        ))
        .into_response()
    }
}

/// An empty object, the answer of cancel and agent delete.
pub fn empty_object() -> Response {
    Json(Value::Object(serde_json::Map::new())).into_response()
}

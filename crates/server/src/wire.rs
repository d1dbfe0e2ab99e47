//! Response shapes of the API that are not protocol types: the `{data}` envelope, pagination, sessions and
//! turns as the reference writes them.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;
use trueforge_protocol::{SessionAgent, TurnInputItem, TurnState};
use trueforge_store::session::model::{SessionRecord, TurnSummary};

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
        (self.0, Json(serde_json::json!({ "data": self.1 }))).into_response()
    }
}

/// `{"data": [...], "pagination": {...}}`.
pub struct PageOf<T> {
    pub data: Vec<T>,
    pub limit: u32,
    pub next_page_token: Option<String>,
}

#[derive(Serialize)]
struct PageBody<'a, T> {
    data: &'a [T],
    pagination: Pagination<'a>,
}

/// Where a page ends: the token of the next page, absent on the last one.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = TokenPagination)]
pub(crate) struct Pagination<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    next_page_token: Option<&'a str>,
    /// The page size in effect.
    #[schema(minimum = 1)]
    limit: u32,
}

impl<T: Serialize> IntoResponse for PageOf<T> {
    fn into_response(self) -> Response {
        Json(PageBody {
            data: &self.data,
            pagination: Pagination {
                next_page_token: self.next_page_token.as_deref(),
                limit: self.limit,
            },
        })
        .into_response()
    }
}

/// An empty object, the answer of cancel and agent delete.
pub fn empty_object() -> Response {
    Json(Value::Object(serde_json::Map::new())).into_response()
}

/// A conversation with an agent, owned by the user who created it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Session {
    pub id: String,
    pub agent: SessionAgent,
    #[schema(required = true)]
    pub title: Option<String>,
    pub created_by: String,
    pub created_at: String,
    pub updated_at: String,
}

impl From<SessionRecord> for Session {
    fn from(record: SessionRecord) -> Self {
        Self {
            id: record.session_id,
            agent: record.agent,
            title: record.title,
            created_by: record.created_by,
            created_at: record.created_at.to_iso(),
            updated_at: record.updated_at.to_iso(),
        }
    }
}

/// One exchange of a session: its input and where it stands.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Turn {
    pub id: String,
    pub session_id: String,
    /// The turn this one continues; `null` for the first turn of a conversation.
    #[schema(required = true)]
    pub previous_turn_id: Option<String>,
    pub input: Vec<TurnInputItem>,
    pub state: TurnState,
    pub created_at: String,
}

impl From<TurnSummary> for Turn {
    fn from(turn: TurnSummary) -> Self {
        Self {
            id: turn.turn_id,
            session_id: turn.session_id,
            previous_turn_id: turn.previous_turn_id,
            input: turn.input,
            state: turn.state,
            created_at: turn.created_at.to_iso(),
        }
    }
}

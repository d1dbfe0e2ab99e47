//! The API's OpenAPI document, generated from the code with `utoipa`: every handler carries a
//! `#[utoipa::path]` attribute (path, parameters, bodies, statuses) and the wire types derive `ToSchema`, so
//! the document follows the code instead of being written next to it. Served at `/api/v1/openapi.json`,
//! with a small Swagger UI page at `/api/v1/docs` that the browser loads from a CDN (nothing is bundled or
//! downloaded at build time).
//!
//! The paths come from the router itself (`routes::documented`, where each handler is registered together
//! with its operation), so no list of paths is kept here. This module adds what is the document's own: its
//! info, the tags, and the components only query parameters refer to. The schemas are in `schemas`.

use std::sync::OnceLock;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use utoipa::OpenApi;
use utoipa::openapi::Tag;

use crate::schemas::{
    ListSessionsOrder, ListTurnEventsOrder, TAG_AGENTS, TAG_API_KEYS, TAG_AUTH, TAG_CAPABILITIES, TAG_MCP, TAG_MODELS,
    TAG_SANDBOXES, TAG_SCHEDULES, TAG_SESSIONS, TAG_SKILLS,
};
use crate::state::AppState;

/// Where the document and its page are served; neither is part of the document itself.
pub const DOCUMENT_PATH: &str = "/api/v1/openapi.json";
pub const DOCS_PATH: &str = "/api/v1/docs";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "TrueForge API",
        description = "HTTP API of the TrueForge agent server, under `/api/v1`: sessions and their turns \
            (streamed over SSE or answered as JSON), saved agents, the settings of model providers, MCP \
            servers, skills and the sandbox provider, and the catalogs of presets.\n\nIn local mode every \
            request acts as the one local admin; no credentials are needed."
    ),
    // Referenced only from query parameters, which do not register what they refer to.
    components(schemas(ListSessionsOrder, ListTurnEventsOrder)),
)]
struct ApiDoc;

/// Tags in the order the docs page lists them, each with what it groups.
const TAGS: [(&str, &str); 10] = [
    (
        TAG_SESSIONS,
        "Sessions, their turns and events: run an agent and follow it.",
    ),
    (TAG_AGENTS, "Agents saved by name and shared by the tenant's users."),
    (
        TAG_SCHEDULES,
        "Saved agents run on a cron as their owner's sessions, and the runs they made.",
    ),
    (
        TAG_MODELS,
        "Configured models and model providers, and the provider presets.",
    ),
    (TAG_MCP, "MCP servers: what users may connect to, and their settings."),
    (TAG_SKILLS, "Skills fetched from git repositories."),
    (TAG_SANDBOXES, "The remote sandbox provider."),
    (TAG_CAPABILITIES, "What this server can do for the caller."),
    (TAG_AUTH, "Login, logout and the caller's identity."),
    (
        TAG_API_KEYS,
        "Keys users make for automation, sent as `Authorization: Bearer`.",
    ),
];

fn build() -> utoipa::openapi::OpenApi {
    let mut document = ApiDoc::openapi();
    document.merge(crate::routes::documented().into_openapi());
    document.info.version = crate::state::VERSION.to_owned();
    document.tags = Some(
        TAGS.iter()
            .map(|(name, description)| {
                let mut tag = Tag::new(*name);
                tag.description = Some((*description).to_owned());
                tag
            })
            .collect(),
    );
    if let Some(components) = document.components.as_mut() {
        trueforge_protocol::openapi::finish_schemas(&mut components.schemas);
    }
    document
}

/// The document, built once per process.
pub fn document() -> utoipa::openapi::OpenApi {
    cached().0.clone()
}

fn cached() -> &'static (utoipa::openapi::OpenApi, String) {
    static DOCUMENT: OnceLock<(utoipa::openapi::OpenApi, String)> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let document = build();
        // Serializing a tree of strings and maps cannot fail; an empty body would show it if it did.
        let json = serde_json::to_string(&document).unwrap_or_default();
        (document, json)
    })
}

/// The document and its docs page, which the document itself leaves out.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(DOCUMENT_PATH, get(openapi_json))
        .route(DOCS_PATH, get(docs))
}

/// `GET /api/v1/openapi.json`.
pub async fn openapi_json() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        cached().1.as_str(),
    )
        .into_response()
}

/// `GET /api/v1/docs`: Swagger UI from a CDN, pointed at the document.
pub async fn docs() -> Html<&'static str> {
    Html(DOCS_PAGE)
}

const DOCS_PAGE: &str = r##"<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>TrueForge API</title>
  <link rel="stylesheet" href="https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui.css">
</head>
<body>
  <div id="docs"></div>
  <noscript>The interactive reference needs JavaScript; the document itself is at
    <a href="/api/v1/openapi.json">/api/v1/openapi.json</a>.</noscript>
  <script src="https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui-bundle.js" crossorigin></script>
  <script>
    window.onload = function () {
      window.ui = SwaggerUIBundle({ url: "/api/v1/openapi.json", dom_id: "#docs", deepLinking: true });
    };
  </script>
</body>
</html>
"##;

//! The API's OpenAPI document, generated from the code with `utoipa`: every handler carries a
//! `#[utoipa::path]` attribute (path, parameters, bodies, statuses) and the wire types derive `ToSchema`, so
//! the document follows the code instead of being written next to it. Served at `/api/v1/openapi.json`,
//! with a small Swagger UI page at `/api/v1/docs` that the browser loads from a CDN (nothing is bundled or
//! downloaded at build time).
//!
//! Besides assembling the document, this module holds the schemas of answers that handlers write as JSON
//! literals (capabilities, `/auth/me`, the error envelope, ...) and the named `{"data": ...}` envelopes the
//! reference document uses, so clients generated from either document see the same names.

use std::borrow::Cow;
use std::sync::OnceLock;

use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use utoipa::openapi::schema::{
    AdditionalProperties, ArrayBuilder, KnownFormat, ObjectBuilder, Schema, SchemaFormat, Type,
};
use utoipa::openapi::{RefOr, Tag};
use utoipa::{OpenApi, PartialSchema, ToSchema};

use trueforge_protocol::api::{AvailableModel, Pagination, Session, SessionEventItem, Turn};
use trueforge_protocol::openapi::{collect, reference, string_enum};
use trueforge_protocol::{
    McpServerManifest, ModelProviderManifest, ReasoningEffort, SandboxBuildStatus, SandboxProviderManifest,
    SessionEvent, SkillManifest,
};

use crate::catalogs::{CatalogCustomModelProvider, CatalogMcpServer, CatalogModelProvider, CatalogSandboxProvider};
use crate::routes::{agents, mcp, meta, sessions, settings, turns};

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
    paths(
        meta::to_home,
        meta::callback,
        meta::logout,
        meta::me,
        meta::capabilities,
        meta::models,
        meta::catalog_model_providers,
        meta::catalog_mcp_servers,
        meta::catalog_skills,
        meta::catalog_sandbox_providers,
        mcp::list,
        mcp::oauth_callback,
        mcp::tools,
        mcp::authorize,
        mcp::disconnect,
        mcp::skills,
        agents::list,
        agents::create,
        agents::get,
        agents::update,
        agents::delete,
        agents::list_tool_approvals,
        agents::revoke_tool_approvals,
        agents::revoke_tool_approval,
        settings::list_model_providers,
        settings::create_model_provider,
        settings::put_model_provider,
        settings::list_mcp_servers,
        settings::create_mcp_server,
        settings::put_mcp_server,
        settings::get_mcp_server,
        settings::list_skills,
        settings::create_skill,
        settings::put_skill,
        settings::get_sandbox_provider,
        settings::put_sandbox_provider,
        sessions::list,
        sessions::create,
        sessions::get,
        sessions::patch,
        sessions::delete,
        sessions::cancel,
        sessions::events,
        turns::list,
        turns::create,
        turns::get,
        turns::events,
        turns::subscribe,
        turns::download_sandbox_file,
    ),
    // Referenced only from query parameters, which do not register what they refer to.
    components(schemas(ListSessionsOrder, ListTurnEventsOrder)),
)]
struct ApiDoc;

/// Tags in the order the docs page lists them, each with what it groups.
const TAGS: [(&str, &str); 8] = [
    (
        TAG_SESSIONS,
        "Sessions, their turns and events: run an agent and follow it.",
    ),
    (TAG_AGENTS, "Agents saved by name and shared by the tenant's users."),
    (
        TAG_MODELS,
        "Configured models and model providers, and the provider presets.",
    ),
    (TAG_MCP, "MCP servers: what users may connect to, and their settings."),
    (TAG_SKILLS, "Skills fetched from git repositories."),
    (TAG_SANDBOXES, "The remote sandbox provider."),
    (TAG_CAPABILITIES, "What this server can do for the caller."),
    (TAG_AUTH, "Login, logout and the caller's identity."),
];

pub(crate) const TAG_AUTH: &str = "Auth";
pub(crate) const TAG_CAPABILITIES: &str = "Capabilities";
pub(crate) const TAG_MODELS: &str = "Models";
pub(crate) const TAG_MCP: &str = "MCP Servers";
pub(crate) const TAG_SKILLS: &str = "Skills";
pub(crate) const TAG_SANDBOXES: &str = "Sandboxes";
pub(crate) const TAG_AGENTS: &str = "Agents";
pub(crate) const TAG_SESSIONS: &str = "Agent Sessions";

fn build() -> utoipa::openapi::OpenApi {
    let mut document = ApiDoc::openapi();
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

// ---- schemas of answers written as JSON literals ----

/// Declares a documentation-only schema: an uninhabited type whose `ToSchema` is built by `$schema` and
/// which registers the components `$collect` lists.
macro_rules! doc_schema {
    ($(#[$meta:meta])* $name:ident, $schema:expr $(, collect $ty:ty)* $(,)?) => {
        $(#[$meta])*
        pub enum $name {}

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                $schema
            }
        }

        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }

            #[allow(unused_variables, reason = "envelopes without references register nothing")]
            fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
                $(collect::<$ty>(schemas);)*
            }
        }
    };
}

/// `{"data": <T>}`.
fn data_of(data: impl Into<RefOr<Schema>>) -> RefOr<Schema> {
    ObjectBuilder::new()
        .property("data", data)
        .required("data")
        .build()
        .into()
}

/// `{"data": [<T>...]}`.
fn list_of<T: ToSchema>() -> RefOr<Schema> {
    data_of(ArrayBuilder::new().items(reference::<T>()))
}

/// `{"data": [<T>...], "pagination": {...}}`.
fn page_of<T: ToSchema>() -> RefOr<Schema> {
    ObjectBuilder::new()
        .property("data", ArrayBuilder::new().items(reference::<T>()))
        .required("data")
        .property("pagination", reference::<Pagination>())
        .required("pagination")
        .build()
        .into()
}

fn closed(object: ObjectBuilder) -> ObjectBuilder {
    object.additional_properties(Some(AdditionalProperties::<Schema>::FreeForm(false)))
}

fn boolean() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::Boolean)
}

fn string() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String)
}

/// An object with one boolean `enabled` (and, for skills, an optional `reason`).
fn capability(with_reason: bool) -> ObjectBuilder {
    let object = ObjectBuilder::new().property("enabled", boolean()).required("enabled");
    if with_reason {
        object.property(
            "reason",
            string().description(Some("Why the capability is off, when it is.")),
        )
    } else {
        object
    }
}

doc_schema!(
    /// The error answer of every route: `{"error": {"message": ...}}`.
    RequestErrorResponse,
    ObjectBuilder::new()
        .property(
            "error",
            ObjectBuilder::new()
                .property("message", string().description(Some("What went wrong, for people.")))
                .required("message"),
        )
        .required("error")
        .build()
        .into(),
);

doc_schema!(
    /// What the server offers the caller: a sandbox, skills (which need one), the settings routes.
    CapabilitiesData,
    ObjectBuilder::new()
        .property("sandbox", capability(false))
        .required("sandbox")
        .property("skill", capability(true))
        .required("skill")
        .property("settings", capability(false))
        .required("settings")
        .build()
        .into(),
);

doc_schema!(GetCapabilitiesResponse, data_of(reference::<CapabilitiesData>()), collect CapabilitiesData);

doc_schema!(
    /// The caller: in local mode, the local admin.
    GetMeResponse,
    ObjectBuilder::new()
        .property(
            "type",
            string_enum(&["default"]).into_object_description("`default`: the local user (no identity provider)."),
        )
        .required("type")
        .property("email", string())
        .required("email")
        .property("role", string_enum(&["admin", "user"]))
        .required("role")
        .build()
        .into(),
);

doc_schema!(
    /// The tenant's sandbox provider with its key redacted, and where its image build stands.
    ConfiguredSandboxProvider,
    closed(
        ObjectBuilder::new()
            .property("manifest", reference::<SandboxProviderManifest>())
            .required("manifest")
            .property("status", reference::<SandboxBuildStatus>())
            .required("status")
            .property(
                "status_reason",
                ObjectBuilder::new().schema_type(utoipa::openapi::schema::SchemaType::from_iter([
                    Type::String,
                    Type::Null
                ]))
            )
            .required("status_reason"),
    )
    .build()
    .into(),
    collect SandboxProviderManifest,
    collect SandboxBuildStatus,
);

doc_schema!(
    GetSandboxProviderResponse,
    data_of(reference::<ConfiguredSandboxProvider>()),
    collect ConfiguredSandboxProvider,
);

doc_schema!(
    /// An empty object.
    DeleteAgentResponse,
    ObjectBuilder::new().build().into(),
);

doc_schema!(
    /// An empty object.
    CancelSessionResponse,
    ObjectBuilder::new().build().into(),
);

doc_schema!(
    /// Accepted and ignored: cancelling needs nothing but the session.
    CancelSessionRequest,
    ObjectBuilder::new().build().into(),
);

doc_schema!(
    /// The answer of a completed OAuth authorisation.
    OAuthCallbackSuccess,
    ObjectBuilder::new()
        .property("success", boolean().enum_values(Some([true])))
        .required("success")
        .build()
        .into(),
);

doc_schema!(
    /// The tools of an MCP server as it lists them (`tools/list`), passed through.
    ListMCPServerToolsResponse,
    data_of(ArrayBuilder::new().items(
        ObjectBuilder::new().additional_properties(Some(AdditionalProperties::<Schema>::FreeForm(true)))
    )),
);

doc_schema!(
    /// Which authentication a server uses, without its secrets.
    MCPServerAuthPublic,
    RefOr::T(Schema::OneOf(
        utoipa::openapi::schema::OneOfBuilder::new()
            .item(closed(ObjectBuilder::new().property("type", string_enum(&["dcr"])).required("type")))
            .item(closed(ObjectBuilder::new().property("type", string_enum(&["header"])).required("type")))
            .discriminator(Some(utoipa::openapi::schema::Discriminator::new("type")))
            .build()
    )),
);

doc_schema!(
    /// Order of a session list, by creation time.
    ListSessionsOrder,
    string_enum(&["asc", "desc"]).with_default("desc").into(),
);

doc_schema!(
    /// Order of a turn's events.
    ListTurnEventsOrder,
    string_enum(&["asc", "desc"]).with_default("asc").into(),
);

doc_schema!(
    /// The bytes of a file, as stored.
    SandboxFile,
    string()
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
        .build()
        .into(),
);

/// The values of `MCPAuthStatus.status`.
pub(crate) fn auth_status_values() -> Schema {
    string_enum(&["authenticated", "auth_required", "not_required"])
}

doc_schema!(
    /// The `custom` entry of the model provider catalog: which reasoning efforts a custom provider may
    /// declare.
    CatalogCustomModelProviderSchema,
    closed(
        ObjectBuilder::new()
            .property("type", string_enum(&[trueforge_protocol::CUSTOM_PROVIDER_TYPE]))
            .required("type")
            .property(
                "supported_reasoning_efforts",
                ArrayBuilder::new().items(reference::<ReasoningEffort>())
            )
            .required("supported_reasoning_efforts"),
    )
    .build()
    .into(),
    collect ReasoningEffort,
);

impl PartialSchema for CatalogCustomModelProvider {
    fn schema() -> RefOr<Schema> {
        CatalogCustomModelProviderSchema::schema()
    }
}

impl ToSchema for CatalogCustomModelProvider {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("CatalogCustomModelProvider")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        CatalogCustomModelProviderSchema::schemas(schemas);
    }
}

// ---- named envelopes ----

doc_schema!(ListAgentsResponse, list_of::<agents::Agent>(), collect agents::Agent);
doc_schema!(GetAgentResponse, data_of(reference::<agents::Agent>()), collect agents::Agent);
doc_schema!(
    ListAgentToolApprovalsResponse,
    list_of::<agents::AgentToolApproval>(),
    collect agents::AgentToolApproval
);
doc_schema!(ListAvailableModelsResponse, list_of::<AvailableModel>(), collect AvailableModel);
doc_schema!(
    GetModelProviderCatalogResponse,
    list_of::<CatalogModelProvider>(),
    collect CatalogModelProvider
);
doc_schema!(GetMCPServerCatalogResponse, list_of::<CatalogMcpServer>(), collect CatalogMcpServer);
doc_schema!(GetSkillCatalogResponse, list_of::<SkillManifest>(), collect SkillManifest);
doc_schema!(
    GetSandboxProviderCatalogResponse,
    list_of::<CatalogSandboxProvider>(),
    collect CatalogSandboxProvider
);
doc_schema!(
    ListAvailableMCPServersResponse,
    list_of::<mcp::AvailableMcpServer>(),
    collect mcp::AvailableMcpServer
);
doc_schema!(ListAvailableSkillsResponse, list_of::<mcp::SkillSummary>(), collect mcp::SkillSummary);
doc_schema!(
    ListModelProvidersResponse,
    list_of::<settings::ConfiguredModelProvider>(),
    collect settings::ConfiguredModelProvider
);
doc_schema!(
    GetModelProviderResponse,
    data_of(reference::<settings::ConfiguredModelProvider>()),
    collect settings::ConfiguredModelProvider
);
doc_schema!(
    ListMCPServersResponse,
    list_of::<settings::ConfiguredMcpServer>(),
    collect settings::ConfiguredMcpServer
);
doc_schema!(
    GetMCPServerResponse,
    data_of(reference::<settings::ConfiguredMcpServer>()),
    collect settings::ConfiguredMcpServer
);
doc_schema!(ListSkillsResponse, list_of::<settings::ConfiguredSkill>(), collect settings::ConfiguredSkill);
doc_schema!(
    GetSkillResponse,
    data_of(reference::<settings::ConfiguredSkill>()),
    collect settings::ConfiguredSkill
);
doc_schema!(ListSessionsResponse, page_of::<Session>(), collect Session, collect Pagination);
doc_schema!(GetSessionResponse, data_of(reference::<Session>()), collect Session);
doc_schema!(
    ListSessionEventsResponse,
    page_of::<SessionEventItem>(),
    collect SessionEventItem,
    collect Pagination
);
doc_schema!(ListTurnsResponse, page_of::<Turn>(), collect Turn, collect Pagination);
doc_schema!(GetTurnResponse, data_of(reference::<Turn>()), collect Turn);
doc_schema!(ListTurnEventsResponse, page_of::<SessionEvent>(), collect SessionEvent, collect Pagination);

// ---- named request bodies of the settings routes (one generic body type in the code) ----

doc_schema!(
    CreateModelProviderRequest,
    settings::ManifestBody::<ModelProviderManifest>::schema(),
    collect ModelProviderManifest
);
doc_schema!(
    UpdateModelProviderRequest,
    settings::ManifestBody::<ModelProviderManifest>::schema(),
    collect ModelProviderManifest
);
doc_schema!(
    CreateMCPServerRequest,
    settings::ManifestBody::<McpServerManifest>::schema(),
    collect McpServerManifest
);
doc_schema!(
    UpdateMCPServerRequest,
    settings::ManifestBody::<McpServerManifest>::schema(),
    collect McpServerManifest
);
doc_schema!(
    CreateSkillRequest,
    settings::ManifestBody::<SkillManifest>::schema(),
    collect SkillManifest
);
doc_schema!(
    UpdateSkillRequest,
    settings::ManifestBody::<SkillManifest>::schema(),
    collect SkillManifest
);
doc_schema!(
    UpdateSandboxProviderRequest,
    settings::ManifestBody::<SandboxProviderManifest>::schema(),
    collect SandboxProviderManifest
);

/// Small additions to a schema built as an object.
trait ObjectExt {
    fn into_object_description(self, description: &str) -> Schema;
    fn with_default(self, default: &str) -> Schema;
}

impl ObjectExt for Schema {
    fn into_object_description(mut self, description: &str) -> Schema {
        if let Schema::Object(object) = &mut self {
            object.description = Some(description.to_owned());
        }
        self
    }

    fn with_default(mut self, default: &str) -> Schema {
        if let Schema::Object(object) = &mut self {
            object.default = Some(serde_json::Value::String(default.to_owned()));
        }
        self
    }
}

//! Schemas of the OpenAPI document that no type derives: the answers handlers write as JSON literals
//! (capabilities, `/auth/me`, the error envelope, ...), the named `{"data": ...}` envelopes the reference
//! document uses (so clients generated from either document see the same names), and the tags. The routes
//! name these in their `#[utoipa::path]` attributes; envelopes of a type a route module owns are declared
//! there, with [`doc_schema!`].

use std::borrow::Cow;

use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{
    AdditionalProperties, ArrayBuilder, KnownFormat, ObjectBuilder, Schema, SchemaFormat, Type,
};
use utoipa::{PartialSchema, ToSchema};

use trueforge_protocol::api::{AvailableModel, Pagination, Session, SessionEventItem, Turn};
use trueforge_protocol::openapi::{reference, string_enum};
use trueforge_protocol::{ReasoningEffort, SandboxBuildStatus, SandboxProviderManifest, SessionEvent, SkillManifest};

use crate::catalogs::{CatalogCustomModelProvider, CatalogMcpServer, CatalogModelProvider, CatalogSandboxProvider};

pub(crate) const TAG_AUTH: &str = "Auth";
pub(crate) const TAG_API_KEYS: &str = "API Keys";
pub(crate) const TAG_CAPABILITIES: &str = "Capabilities";
pub(crate) const TAG_MODELS: &str = "Models";
pub(crate) const TAG_MCP: &str = "MCP Servers";
pub(crate) const TAG_SKILLS: &str = "Skills";
pub(crate) const TAG_SANDBOXES: &str = "Sandboxes";
pub(crate) const TAG_AGENTS: &str = "Agents";
pub(crate) const TAG_SESSIONS: &str = "Agent Sessions";
pub(crate) const TAG_SCHEDULES: &str = "Schedules";

// ---- schemas of answers written as JSON literals ----

/// Declares a documentation-only schema: an uninhabited type whose `ToSchema` is built by `$schema` and
/// which registers the components `$collect` lists.
// Paths in full: the route modules expand it too, with their own imports.
macro_rules! doc_schema {
    ($(#[$meta:meta])* $name:ident, $schema:expr $(, collect $ty:ty)* $(,)?) => {
        $(#[$meta])*
        pub enum $name {}

        impl ::utoipa::PartialSchema for $name {
            fn schema() -> ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema> {
                $schema
            }
        }

        impl ::utoipa::ToSchema for $name {
            fn name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(stringify!($name))
            }

            #[allow(unused_variables, reason = "envelopes without references register nothing")]
            fn schemas(
                schemas: &mut Vec<(String, ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema>)>,
            ) {
                $(::trueforge_protocol::openapi::collect::<$ty>(schemas);)*
            }
        }
    };
}

pub(crate) use doc_schema;

/// `{"data": <T>}`.
pub(crate) fn data_of(data: impl Into<RefOr<Schema>>) -> RefOr<Schema> {
    ObjectBuilder::new()
        .property("data", data)
        .required("data")
        .build()
        .into()
}

/// `{"data": [<T>...]}`.
pub(crate) fn list_of<T: ToSchema>() -> RefOr<Schema> {
    data_of(ArrayBuilder::new().items(reference::<T>()))
}

/// `{"data": [<T>...], "pagination": {...}}`.
pub(crate) fn page_of<T: ToSchema>() -> RefOr<Schema> {
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

fn integer_at_least(minimum: u64) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
        .minimum(Some(minimum as f64))
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
        .property("sandbox", capability(true))
        .required("sandbox")
        .property("skill", capability(true))
        .required("skill")
        .property("settings", capability(false))
        .required("settings")
        .property(
            "limits",
            ObjectBuilder::new()
                .description(Some(
                    "Our addition: the server's limits a client checks before sending (a file too large for one \
                     request is refused before its upload, not with a 413 after it).",
                ))
                .property(
                    "max_request_body_bytes",
                    integer_at_least(1).description(Some("The largest request body the server accepts.")),
                )
                .required("max_request_body_bytes")
                .property(
                    "max_sandbox_file_bytes",
                    integer_at_least(1)
                        .description(Some("The largest file sent into or downloaded from a sandbox.")),
                )
                .required("max_sandbox_file_bytes"),
        )
        .build()
        .into(),
);

doc_schema!(GetCapabilitiesResponse, data_of(reference::<CapabilitiesData>()), collect CapabilitiesData);

doc_schema!(
    /// The caller: with login, who the ID token or API key says; without, the local admin.
    GetMeResponse,
    ObjectBuilder::new()
        .property(
            "type",
            string_enum(&["default", "oidc-connected"]).into_object_description(
                "`default`: the local admin (no login); `oidc-connected`: a caller identified by the identity provider's ID token or by an API key.",
            ),
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

//! OpenAPI schemas of the wire types (`utoipa`), for the document the server generates.
//!
//! Most types derive `ToSchema` next to their serde derives, so a renamed field or a new variant reaches the
//! document by itself. What a derive cannot see is finished here:
//! - self-tagged structs (see `tagged`) write their discriminator in a hand-written `Serialize`, so their
//!   derived schema lacks it; [`finish_schemas`] adds it, and a discriminator to unions of them;
//! - types whose serde impls are hand-written (`ModelProviderManifest`, the event unions, the provider type
//!   enum) get a `ToSchema` written here with utoipa's builders, describing the JSON those impls produce;
//! - the `state` of `turn.created` / `turn.done`, whose deserializers accept only some states;
//! - the MCP server manifest, its authentication, tool selectors and `ResourceName` (see `mcp`), whose value
//!   rules a derive cannot state.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::Value;
use utoipa::openapi::schema::{
    AdditionalProperties, AnyOfBuilder, ArrayBuilder, Discriminator, ObjectBuilder, OneOfBuilder, Schema, SchemaFormat,
    Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

mod mcp;

pub use mcp::{McpApprovalToolSelector, McpToolSelector, ResourceName};

use crate::{
    AgentInfo, ConfiguredModel, ContextCompactedEvent, DaytonaSandboxProvider, InitialUserMessage,
    McpAuthRequiredEvent, McpInitializeEvent, ModelMessageDeltaEvent, ModelMessageEvent, ModelProviderAuth,
    ModelProviderManifest, PassthroughEvent, SandboxCreatedEvent, SandboxProviderAuth, SandboxProviderManifest,
    SessionEvent, ThreadCreatedEvent, ThreadDoneEvent, ToolApprovalRequiredEvent, ToolResponseEvent,
    ToolResponseRequiredEvent, TurnCreatedEvent, TurnDoneEvent, TurnState, TurnStreamingEvent, UserMessage,
    UserToolApproval, UserToolResponse, WellKnownProviderType,
};

/// A struct that writes its own discriminator (`tagged_struct!`): which key, and its value.
pub trait SelfTagged {
    const KEY: &'static str;
    const TAG: &'static str;
}

/// A self-tagged schema as it is named in the document.
struct TagEntry {
    name: Cow<'static, str>,
    key: &'static str,
    tag: &'static str,
}

fn entry<T: ToSchema + SelfTagged>() -> TagEntry {
    TagEntry {
        name: T::name(),
        key: T::KEY,
        tag: T::TAG,
    }
}

/// Every self-tagged struct that appears in the HTTP API. A struct missing here would be documented
/// without its `type`; the server's comparison with the reference document catches that.
fn self_tagged() -> Vec<TagEntry> {
    vec![
        entry::<InitialUserMessage>(),
        entry::<UserMessage>(),
        entry::<UserToolApproval>(),
        entry::<UserToolResponse>(),
        entry::<AgentInfo>(),
        entry::<TurnCreatedEvent>(),
        entry::<TurnDoneEvent>(),
        entry::<ModelMessageEvent>(),
        entry::<ModelMessageDeltaEvent>(),
        entry::<ToolResponseEvent>(),
        entry::<ThreadCreatedEvent>(),
        entry::<ThreadDoneEvent>(),
        entry::<McpAuthRequiredEvent>(),
        entry::<McpInitializeEvent>(),
        entry::<SandboxCreatedEvent>(),
        entry::<ToolApprovalRequiredEvent>(),
        entry::<ToolResponseRequiredEvent>(),
        entry::<ContextCompactedEvent>(),
    ]
}

const SCHEMA_PREFIX: &str = "#/components/schemas/";

/// Completes the component schemas collected from the derives: each self-tagged struct gets its
/// discriminator property (first, and required), and every `oneOf` whose members are all references to
/// self-tagged schemas with the same key gets a `discriminator` with the mapping from tag to schema.
pub fn finish_schemas(schemas: &mut BTreeMap<String, RefOr<Schema>>) {
    let tagged = self_tagged();
    for entry in &tagged {
        if let Some(RefOr::T(Schema::Object(object))) = schemas.get_mut(entry.name.as_ref()) {
            add_tag(object, entry.key, entry.tag);
        }
    }
    for schema in schemas.values_mut() {
        let RefOr::T(Schema::OneOf(one_of)) = schema else {
            continue;
        };
        if one_of.discriminator.is_some() {
            continue;
        }
        let members: Option<Vec<&TagEntry>> = one_of
            .items
            .iter()
            .map(|item| match item {
                RefOr::Ref(reference) => {
                    let name = reference.ref_location.strip_prefix(SCHEMA_PREFIX)?;
                    tagged.iter().find(|entry| entry.name == name)
                }
                RefOr::T(_) => None,
            })
            .collect();
        let Some(members) = members else {
            continue;
        };
        let Some(first) = members.first() else {
            continue;
        };
        if members.iter().all(|member| member.key == first.key) {
            one_of.discriminator = Some(Discriminator::with_mapping(
                first.key,
                members
                    .iter()
                    .map(|member| (member.tag, format!("{SCHEMA_PREFIX}{}", member.name))),
            ));
        }
    }
}

/// Makes `key` (a string equal to `tag`) the first property of `object`, and required.
fn add_tag(object: &mut utoipa::openapi::schema::Object, key: &str, tag: &str) {
    let rest = std::mem::take(&mut object.properties);
    object.properties.insert(key.to_owned(), string_enum(&[tag]).into());
    object
        .properties
        .extend(rest.into_iter().filter(|(name, _)| name != key));
    object.required.retain(|name| name != key);
    object.required.insert(0, key.to_owned());
}

/// `{"type": "string", "enum": [...]}`.
pub fn string_enum(values: &[&str]) -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.iter().copied()))
        .build()
        .into()
}

/// A `$ref` to `T`'s component.
pub fn reference<T: ToSchema>() -> RefOr<Schema> {
    RefOr::Ref(Ref::from_schema_name(T::name()))
}

/// Registers `T`'s component and everything it refers to, as a derive's `schemas` does.
pub fn collect<T: ToSchema>(schemas: &mut Vec<(String, RefOr<Schema>)>) {
    schemas.push((T::name().into_owned(), T::schema()));
    T::schemas(schemas);
}

impl PartialSchema for WellKnownProviderType {
    fn schema() -> RefOr<Schema> {
        let names: Vec<&str> = Self::ALL.iter().map(|kind| kind.as_str()).collect();
        let mut schema = string_enum(&names);
        if let Schema::Object(object) = &mut schema {
            object.description = Some("A provider type with a built-in default endpoint.".to_owned());
        }
        schema.into()
    }
}

impl ToSchema for WellKnownProviderType {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("CatalogWellKnownModelProviderType")
    }
}

/// The component name of a well-known provider's manifest variant.
fn provider_schema_name(provider: WellKnownProviderType) -> &'static str {
    match provider {
        WellKnownProviderType::OpenAi => "OpenAIModelProvider",
        WellKnownProviderType::Anthropic => "AnthropicModelProvider",
        WellKnownProviderType::GoogleGemini => "GoogleGeminiModelProvider",
        WellKnownProviderType::Fireworks => "FireworksModelProvider",
        WellKnownProviderType::Zai => "ZaiModelProvider",
        WellKnownProviderType::Moonshot => "MoonshotModelProvider",
        WellKnownProviderType::Together => "TogetherAIModelProvider",
        WellKnownProviderType::Alibaba => "AlibabaModelProvider",
    }
}

const CUSTOM_PROVIDER_SCHEMA: &str = "CustomModelProvider";

fn uri() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::Custom("uri".to_owned())))
}

fn models_schema() -> ArrayBuilder {
    ArrayBuilder::new()
        .items(reference::<ConfiguredModel>())
        .min_items(Some(1))
}

/// A well-known provider: its `type`, key and models; `base_url` may be left out on input (the provider's
/// default is filled in) and is always written on output.
fn well_known_provider_schema(provider: WellKnownProviderType) -> Schema {
    ObjectBuilder::new()
        .description(Some(format!(
            "Manifest of the `{}` provider; `base_url` defaults to {}.",
            provider.as_str(),
            provider.default_base_url()
        )))
        .property("type", string_enum(&[provider.as_str()]))
        .required("type")
        .property("auth", reference::<ModelProviderAuth>())
        .required("auth")
        .property("models", models_schema())
        .required("models")
        .property(
            "base_url",
            uri().default(Some(Value::String(provider.default_base_url().to_owned()))),
        )
        .additional_properties(Some(AdditionalProperties::<Schema>::FreeForm(false)))
        .build()
        .into()
}

fn custom_provider_schema() -> Schema {
    ObjectBuilder::new()
        .description(Some(
            "An OpenAI-compatible endpoint under a name of its own; without `auth`, calls carry an empty key.",
        ))
        .property("type", string_enum(&[crate::CUSTOM_PROVIDER_TYPE]))
        .required("type")
        .property("name", reference::<ResourceName>())
        .required("name")
        .property("base_url", uri())
        .required("base_url")
        .property("auth", reference::<ModelProviderAuth>())
        .property("models", models_schema())
        .required("models")
        .additional_properties(Some(AdditionalProperties::<Schema>::FreeForm(false)))
        .build()
        .into()
}

impl PartialSchema for ModelProviderManifest {
    fn schema() -> RefOr<Schema> {
        let mut union = OneOfBuilder::new().description(Some(
            "A configured model provider, by `type`: one of the well-known providers, or `custom`.",
        ));
        let mut mapping = Vec::new();
        for provider in WellKnownProviderType::ALL {
            let name = provider_schema_name(provider);
            union = union.item(Ref::from_schema_name(name));
            mapping.push((provider.as_str(), format!("{SCHEMA_PREFIX}{name}")));
        }
        union = union.item(Ref::from_schema_name(CUSTOM_PROVIDER_SCHEMA));
        mapping.push((
            crate::CUSTOM_PROVIDER_TYPE,
            format!("{SCHEMA_PREFIX}{CUSTOM_PROVIDER_SCHEMA}"),
        ));
        RefOr::T(Schema::OneOf(
            union
                .discriminator(Some(Discriminator::with_mapping("type", mapping)))
                .build(),
        ))
    }
}

impl ToSchema for ModelProviderManifest {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        for provider in WellKnownProviderType::ALL {
            schemas.push((
                provider_schema_name(provider).to_owned(),
                well_known_provider_schema(provider).into(),
            ));
        }
        schemas.push((CUSTOM_PROVIDER_SCHEMA.to_owned(), custom_provider_schema().into()));
        collect::<ResourceName>(schemas);
        collect::<ModelProviderAuth>(schemas);
        collect::<ConfiguredModel>(schemas);
    }
}

// By hand because the derive would describe the internally tagged newtype variant as `allOf` of the closed
// Daytona body and the tag, which no object satisfies; the JSON is one closed object with `type` in it.
impl PartialSchema for SandboxProviderManifest {
    fn schema() -> RefOr<Schema> {
        let mut schema = DaytonaSandboxProvider::schema();
        if let RefOr::T(Schema::Object(object)) = &mut schema {
            add_tag(object, "type", "daytona");
            object.description = Some(
                "The tenant's remote sandbox provider, by `type` (Daytona is the only one); one per tenant.".to_owned(),
            );
        }
        schema
    }
}

impl ToSchema for SandboxProviderManifest {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        collect::<SandboxProviderAuth>(schemas);
    }
}

/// The persisted events `SessionEvent` knows, in the order of [`crate::SESSION_EVENT_TYPES`].
fn session_event_refs() -> Vec<RefOr<Schema>> {
    vec![
        reference::<TurnCreatedEvent>(),
        reference::<TurnDoneEvent>(),
        reference::<ModelMessageEvent>(),
        reference::<ToolResponseEvent>(),
        reference::<ThreadCreatedEvent>(),
        reference::<ThreadDoneEvent>(),
        reference::<McpAuthRequiredEvent>(),
        reference::<McpInitializeEvent>(),
        reference::<SandboxCreatedEvent>(),
        reference::<ToolApprovalRequiredEvent>(),
        reference::<ToolResponseRequiredEvent>(),
        reference::<ContextCompactedEvent>(),
    ]
}

fn collect_session_events(schemas: &mut Vec<(String, RefOr<Schema>)>) {
    collect::<TurnCreatedEvent>(schemas);
    collect::<TurnDoneEvent>(schemas);
    collect::<ModelMessageEvent>(schemas);
    collect::<ToolResponseEvent>(schemas);
    collect::<ThreadCreatedEvent>(schemas);
    collect::<ThreadDoneEvent>(schemas);
    collect::<McpAuthRequiredEvent>(schemas);
    collect::<McpInitializeEvent>(schemas);
    collect::<SandboxCreatedEvent>(schemas);
    collect::<ToolApprovalRequiredEvent>(schemas);
    collect::<ToolResponseRequiredEvent>(schemas);
    collect::<ContextCompactedEvent>(schemas);
    collect::<PassthroughEvent>(schemas);
}

// `anyOf` rather than `oneOf`: a custom event's schema admits any `type`, so it overlaps the others.
impl PartialSchema for SessionEvent {
    fn schema() -> RefOr<Schema> {
        let mut union = AnyOfBuilder::new().description(Some(
            "A persisted turn event, told apart by `type`: one of the contract's events, one of this server's \
             (`context.compacted`), or a custom event a capability registered, passed through as it was emitted.",
        ));
        for item in session_event_refs() {
            union = union.item(item);
        }
        RefOr::T(Schema::AnyOf(union.item(reference::<PassthroughEvent>()).build()))
    }
}

impl ToSchema for SessionEvent {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        collect_session_events(schemas);
    }
}

impl PartialSchema for TurnStreamingEvent {
    fn schema() -> RefOr<Schema> {
        let mut union = AnyOfBuilder::new()
            .description(Some(
                "What a turn's event stream carries, told apart by `type`: every persisted event (this server's \
                 and custom ones included) and the deltas of model messages.",
            ))
            .item(reference::<ModelMessageDeltaEvent>());
        for item in session_event_refs() {
            union = union.item(item);
        }
        RefOr::T(Schema::AnyOf(union.item(reference::<PassthroughEvent>()).build()))
    }
}

impl ToSchema for TurnStreamingEvent {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        collect::<ModelMessageDeltaEvent>(schemas);
        collect_session_events(schemas);
    }
}

/// [`TurnState`]'s schema with only the variants whose `status` passes `keep`.
fn turn_state_variants(keep: impl Fn(&str) -> bool) -> Schema {
    let RefOr::T(Schema::OneOf(mut union)) = TurnState::schema() else {
        return Schema::default();
    };
    union.items.retain(|variant| {
        let RefOr::T(Schema::Object(object)) = variant else {
            return false;
        };
        let status = object.properties.get("status").and_then(|status| match status {
            RefOr::T(Schema::Object(status)) => status.enum_values.as_ref()?.first().cloned(),
            _ => None,
        });
        status.as_ref().and_then(Value::as_str).is_some_and(&keep)
    });
    Schema::OneOf(union)
}

/// The state `turn.created` carries: always `running`.
pub(crate) fn running_state_schema() -> Schema {
    turn_state_variants(|status| status == "running")
}

/// The state `turn.done` carries: a terminal one.
pub(crate) fn terminal_state_schema() -> Schema {
    turn_state_variants(|status| status != "running")
}

//! Schemas of the MCP and naming parts of the API written by hand: the reference's `ResourceName`, the tool
//! selectors of an agent's MCP servers, the MCP server manifest (one flat struct in the code, two closed
//! variants in the document) and its authentication. Each states the value rules the `validate` methods check,
//! so a value the document admits is one the server accepts.

use std::borrow::Cow;

use utoipa::openapi::Ref;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{
    AdditionalProperties, AnyOfBuilder, ArrayBuilder, Discriminator, ObjectBuilder, OneOfBuilder, Schema, Type,
};
use utoipa::{PartialSchema, ToSchema};

use super::{SCHEMA_PREFIX, collect, reference, string_enum, uri};
use crate::{McpServerAuth, McpServerManifest};

/// The reference's `ResourceName`, the key of settings rows and saved agents (checked by `rules::resource_name`).
const RESOURCE_NAME_PATTERN: &str = "^[a-z](?:[a-z0-9._-]{0,62}[a-z0-9])$";

/// Schema `ResourceName`: 2 to 64 characters of `a-z`, `0-9`, `.`, `_`, `-`, a letter first and a letter or
/// digit last. Documentation only: the fields it describes are `String`s, checked by the `validate` methods
/// (and, for names in paths and bodies of the server's own routes, by the server).
pub enum ResourceName {}

impl PartialSchema for ResourceName {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(2))
            .max_length(Some(64))
            .pattern(Some(RESOURCE_NAME_PATTERN))
            .description(Some(
                "2 to 64 characters of a-z, 0-9, '.', '_' and '-', starting with a letter and ending with a letter \
                 or digit.",
            ))
            .into()
    }
}

impl ToSchema for ResourceName {}

/// Schema `MCPServerToolSelector`: a tag or a literal tool name (never empty).
pub enum McpToolSelector {}

impl PartialSchema for McpToolSelector {
    fn schema() -> RefOr<Schema> {
        selector(&[crate::TOOLS_ALL, crate::TOOLS_READ_ONLY])
    }
}

impl ToSchema for McpToolSelector {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("MCPServerToolSelector")
    }
}

/// Schema `MCPServerApprovalToolSelector`: a tag or a literal tool name (never empty).
pub enum McpApprovalToolSelector {}

impl PartialSchema for McpApprovalToolSelector {
    fn schema() -> RefOr<Schema> {
        selector(&[crate::TOOLS_ALL, crate::TOOLS_WRITE, crate::TOOLS_DESTRUCTIVE])
    }
}

impl ToSchema for McpApprovalToolSelector {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("MCPServerApprovalToolSelector")
    }
}

/// A stdio server's environment variable names (checked by `McpServerManifest::validate`).
const ENV_NAME_PATTERN: &str = "^[A-Za-z_][A-Za-z0-9_]*$";
/// Not blank: at least one character that is not whitespace.
const NOT_BLANK_PATTERN: &str = "\\S";
const REMOTE_MANIFEST_SCHEMA: &str = "RemoteMCPServerManifest";
const STDIO_MANIFEST_SCHEMA: &str = "StdioMCPServerManifest";

// By hand because the one flat struct serves two types whose fields exclude each other: the document gives
// each type its closed variant, the remote one exactly the reference's manifest.
impl PartialSchema for McpServerManifest {
    fn schema() -> RefOr<Schema> {
        RefOr::T(Schema::OneOf(
            OneOfBuilder::new()
                .description(Some(
                    "A configured MCP server, by `type`: `remote` (Streamable HTTP), or `stdio`, a local process the \
                     server starts (allowed by the operator's `TRUEFORGE_MCP_ALLOW_STDIO`).",
                ))
                .item(Ref::from_schema_name(REMOTE_MANIFEST_SCHEMA))
                .item(Ref::from_schema_name(STDIO_MANIFEST_SCHEMA))
                .discriminator(Some(Discriminator::with_mapping(
                    "type",
                    [
                        ("remote", format!("{SCHEMA_PREFIX}{REMOTE_MANIFEST_SCHEMA}")),
                        ("stdio", format!("{SCHEMA_PREFIX}{STDIO_MANIFEST_SCHEMA}")),
                    ],
                )))
                .build(),
        ))
    }
}

impl ToSchema for McpServerManifest {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("MCPServerManifest")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        let common = |kind: &str| {
            ObjectBuilder::new()
                .property("type", string_enum(&[kind]))
                .required("type")
                .property("name", reference::<ResourceName>())
                .required("name")
                .property(
                    "description",
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .min_length(Some(1))
                        .description(Some("Shown to the model to decide when the server is useful.")),
                )
                .required("description")
                .additional_properties(Some(AdditionalProperties::<Schema>::FreeForm(false)))
        };
        let remote = common("remote")
            .description(Some("An MCP server reached over Streamable HTTP."))
            .property("url", uri().description(Some("The server's Streamable HTTP endpoint.")))
            .required("url")
            .property("auth", reference::<McpServerAuth>());
        let stdio = common("stdio")
            .description(Some(
                "A local process speaking MCP on stdin and stdout, started by the server.",
            ))
            .property(
                "command",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some(NOT_BLANK_PATTERN))
                    .description(Some("The program to start: a path or a name looked up on `PATH`.")),
            )
            .required("command")
            .property(
                "args",
                ArrayBuilder::new()
                    .items(ObjectBuilder::new().schema_type(Type::String))
                    .description(Some("The program's arguments.")),
            )
            .property(
                "env",
                ObjectBuilder::new()
                    .property_names(Some(
                        ObjectBuilder::new()
                            .schema_type(Type::String)
                            .pattern(Some(ENV_NAME_PATTERN)),
                    ))
                    .additional_properties(Some(ObjectBuilder::new().schema_type(Type::String)))
                    .description(Some(
                        "Variables added to the program's environment. Every value is a secret: encrypted at rest \
                         and redacted in answers, like header values.",
                    )),
            );
        schemas.push((REMOTE_MANIFEST_SCHEMA.to_owned(), remote.into()));
        schemas.push((STDIO_MANIFEST_SCHEMA.to_owned(), stdio.into()));
        collect::<ResourceName>(schemas);
        collect::<McpServerAuth>(schemas);
    }
}

const HEADER_AUTH_SCHEMA: &str = "MCPServerHeaderAuth";
const DCR_AUTH_SCHEMA: &str = "MCPServerDcrAuth";

/// Written after the reference's two named variants; the derive would inline them and leave the `dcr` one
/// open, although unknown keys next to `"type": "dcr"` are refused.
impl PartialSchema for McpServerAuth {
    fn schema() -> RefOr<Schema> {
        RefOr::T(Schema::OneOf(
            OneOfBuilder::new()
                .description(Some(
                    "How the server authenticates us; absent when it needs no credentials.",
                ))
                .item(Ref::from_schema_name(HEADER_AUTH_SCHEMA))
                .item(Ref::from_schema_name(DCR_AUTH_SCHEMA))
                .discriminator(Some(Discriminator::with_mapping(
                    "type",
                    [
                        ("header", format!("{SCHEMA_PREFIX}{HEADER_AUTH_SCHEMA}")),
                        ("dcr", format!("{SCHEMA_PREFIX}{DCR_AUTH_SCHEMA}")),
                    ],
                )))
                .build(),
        ))
    }
}

impl ToSchema for McpServerAuth {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("MCPServerManifestAuth")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        let header = ObjectBuilder::new()
            .property("type", string_enum(&["header"]))
            .required("type")
            .property(
                "headers",
                ObjectBuilder::new()
                    .min_properties(Some(1))
                    .property_names(Some(ObjectBuilder::new().schema_type(Type::String).min_length(Some(1))))
                    .additional_properties(Some(ObjectBuilder::new().schema_type(Type::String).min_length(Some(1))))
                    .description(Some(
                        "Request headers sent to the server, at least one; every value is a secret (redacted in \
                         answers; a redacted value sent back keeps the stored one).",
                    )),
            )
            .required("headers")
            .additional_properties(Some(AdditionalProperties::<Schema>::FreeForm(false)))
            .description(Some("Static request headers."));
        let dcr = ObjectBuilder::new()
            .property("type", string_enum(&["dcr"]))
            .required("type")
            .additional_properties(Some(AdditionalProperties::<Schema>::FreeForm(false)))
            .description(Some(
                "OAuth with dynamic client registration: each user authorizes the server; the client and the \
                 tokens live outside the manifest.",
            ));
        schemas.push((HEADER_AUTH_SCHEMA.to_owned(), header.into()));
        schemas.push((DCR_AUTH_SCHEMA.to_owned(), dcr.into()));
    }
}

/// One of `tags`, or any other non-empty string (a literal tool name).
fn selector(tags: &[&str]) -> RefOr<Schema> {
    RefOr::T(Schema::AnyOf(
        AnyOfBuilder::new()
            .item(string_enum(tags))
            .item(ObjectBuilder::new().schema_type(Type::String).min_length(Some(1)))
            .build(),
    ))
}

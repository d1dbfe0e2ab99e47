//! The client under test for the official MCP conformance suite (`@modelcontextprotocol/conformance
//! client`), run by `tests/suite/conformance.rs`.
//!
//! The suite starts a scenario server, appends its URL as the last argument and names the scenario
//! in `MCP_CONFORMANCE_SCENARIO`. Everything goes through `trueforge-mcp` (`McpConnection` over
//! `McpServerConfig::StreamableHttp`, results through `map_call_result`), so the suite judges our
//! layer and not rmcp on its own. `McpToolSet` is not used: its `ToolContext` needs a session store,
//! which would make `trueforge-store` a dependency of the library for the sake of this binary; the
//! set adds only selectors and naming on top of the same connection calls.
//!
//! A server that demands authorisation (`auth/*`: a 401, or a 403 `insufficient_scope`) gets the
//! OAuth flow of `trueforge_mcp::oauth`, run headlessly: discovery from the challenge, a client
//! (pre-registered from `MCP_CONFORMANCE_CONTEXT`, a client ID metadata document URL, or dynamic
//! registration), PKCE S256 with `state`, the authorisation request followed by hand to read the
//! code from its redirect, the code exchange, then the whole scenario again with the Bearer token.
//!
//! Not handled, on purpose: elicitation, which our layer does not offer yet; see
//! `tests/conformance-expected-failures.txt`.

use std::process::ExitCode;
use std::time::Duration;

use reqwest::Url;
use rmcp::model::Tool;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use trueforge_mcp::oauth::{self, BearerChallenge, ClientCredentials, OAuthError, OAuthHttp, Pkce};
use trueforge_mcp::{McpConnection, McpError, McpServerConfig, map_call_result};

/// Below the suite's 30 s per-scenario timeout: the suite kills a client that outlives it, and a
/// client that stops itself leaves a clearer message in the scenario's `stderr.txt`.
const OVERALL_TIMEOUT: Duration = Duration::from_secs(25);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The protocol our layer speaks (`McpConnection` pins it); the suite must be run for it.
const PROTOCOL_VERSION: &str = "2025-11-25";

/// The scenario whose focal tool's input schema must come back unchanged through a second tool.
const SCHEMA_SCENARIO: &str = "json-schema-2020-12-preservation";
const SCHEMA_TOOL: &str = "json_schema_2020_12_tool";
const SCHEMA_ECHO_TOOL: &str = "json_schema_echo";

/// Where the authorisation server sends the browser back. Nothing listens there: the code is read
/// from the redirect's `Location` without following it.
const REDIRECT_URI: &str = "http://127.0.0.1/callback";
const CLIENT_NAME: &str = "TrueForge MCP conformance client";
/// The `client_id` offered to a server that accepts client ID metadata documents: where this
/// client's document would be published. The suite's authorisation server takes this URL without
/// fetching it (it is the one the suite expects).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// Authorisations one run may go through (first, then step-ups and renewals). The spec asks for a
/// limit so that a server that never accepts a token cannot keep us in a loop.
const MAX_AUTHORIZATIONS: usize = 3;
const OAUTH_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
enum ClientError {
    #[error("usage: mcp-conformance-client <server-url> (with MCP_CONFORMANCE_SCENARIO set)")]
    Usage,
    #[error("the suite asks for protocol {0}, but trueforge-mcp speaks {PROTOCOL_VERSION}")]
    ProtocolVersion(String),
    #[error(transparent)]
    Mcp(#[from] McpError),
    #[error("the server does not list the tool {0}")]
    MissingTool(String),
    #[error("tool {tool} answered with an error: {detail}")]
    ToolFailed { tool: String, detail: String },
    #[error("the scenario did not finish within {}s", OVERALL_TIMEOUT.as_secs())]
    Timeout,
    #[error("MCP_CONFORMANCE_CONTEXT is unusable: {0}")]
    Context(String),
    #[error(transparent)]
    OAuth(#[from] OAuthError),
    #[error("authorization failed: {0}")]
    Authorization(String),
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let url = std::env::args().skip(1).last();
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let outcome = match url {
        None => Err(ClientError::Usage),
        Some(url) => tokio::time::timeout(OVERALL_TIMEOUT, run(&scenario, &url))
            .await
            .unwrap_or(Err(ClientError::Timeout)),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp-conformance-client [{scenario}]: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(scenario: &str, url: &str) -> Result<(), ClientError> {
    if let Ok(version) = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
        && version != PROTOCOL_VERSION
    {
        return Err(ClientError::ProtocolVersion(version));
    }
    let mut authorizer = Authorizer::new(url, preregistered_client()?)?;
    let mut access_token: Option<String> = None;
    // Each refusal is answered with an authorisation and the scenario starts over on a new
    // connection: the refused request was not carried out. The authorizer's limit ends the loop.
    loop {
        match session(scenario, url, access_token.as_deref()).await {
            Err(ClientError::Mcp(McpError::AuthRequired { www_authenticate, .. })) => {
                access_token = Some(authorizer.authorize(www_authenticate.as_deref()).await?);
            }
            outcome => return outcome,
        }
    }
}

async fn session(scenario: &str, url: &str, access_token: Option<&str>) -> Result<(), ClientError> {
    let mut config = McpServerConfig::streamable_http(url);
    if let (Some(token), McpServerConfig::StreamableHttp { headers, .. }) = (access_token, &mut config) {
        headers.insert("Authorization".to_owned(), format!("Bearer {token}"));
    }
    let connection = McpConnection::connect(&config, CONNECT_TIMEOUT).await?;
    let outcome = drive(scenario, &connection).await;
    // Closed either way, so the HTTP session is deleted on the scenario server.
    connection.close().await;
    outcome
}

/// Pre-registered client credentials the suite passes in `MCP_CONFORMANCE_CONTEXT`
/// (`client_id`, `client_secret`, optionally `token_endpoint_auth_method`), if any.
fn preregistered_client() -> Result<Option<ClientCredentials>, ClientError> {
    let Ok(context) = std::env::var("MCP_CONFORMANCE_CONTEXT") else {
        return Ok(None);
    };
    let context: Value = serde_json::from_str(&context).map_err(|error| ClientError::Context(error.to_string()))?;
    let text = |name: &str| context.get(name).and_then(Value::as_str).map(str::to_owned);
    Ok(text("client_id").map(|client_id| ClientCredentials {
        client_id,
        client_secret: text("client_secret"),
        // Usually absent: then RFC 7591's default applies (Basic with a secret).
        token_endpoint_auth_method: text("token_endpoint_auth_method"),
    }))
}

/// Runs the OAuth flow each time the server refuses us, remembering the client and the scope
/// granted so far.
struct Authorizer {
    http: OAuthHttp,
    /// Reads the authorisation endpoint's redirect instead of following it, like a browser that
    /// hands the callback to us.
    browser: reqwest::Client,
    mcp_url: String,
    preregistered: Option<ClientCredentials>,
    /// The client of earlier authorisations, reused so a step-up does not register again.
    client: Option<ClientCredentials>,
    /// The scope of the last authorisation (`None`: none was asked for).
    granted_scope: Option<String>,
    authorizations: usize,
}

impl Authorizer {
    fn new(mcp_url: &str, preregistered: Option<ClientCredentials>) -> Result<Self, ClientError> {
        let browser = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(OAUTH_TIMEOUT)
            .build()
            .map_err(|error| ClientError::Authorization(format!("cannot build an HTTP client: {error}")))?;
        Ok(Self {
            http: OAuthHttp::with_timeout(OAUTH_TIMEOUT)?,
            browser,
            mcp_url: mcp_url.to_owned(),
            preregistered,
            client: None,
            granted_scope: None,
            authorizations: 0,
        })
    }

    /// Answers a refusal (its `WWW-Authenticate`, if it had one) with a new access token.
    async fn authorize(&mut self, www_authenticate: Option<&str>) -> Result<String, ClientError> {
        let challenge = www_authenticate.and_then(BearerChallenge::parse).unwrap_or_default();
        if self.authorizations >= MAX_AUTHORIZATIONS {
            return Err(ClientError::Authorization(format!(
                "the server still refuses after {MAX_AUTHORIZATIONS} authorizations"
            )));
        }
        let info = oauth::discover_with_challenge(&self.http, &self.mcp_url, &challenge).await?;
        // PKCE is mandatory in MCP: a server that does not list S256 must not be used.
        let s256 = info
            .code_challenge_methods_supported
            .as_ref()
            .is_some_and(|methods| methods.iter().any(|method| method == "S256"));
        if !s256 {
            return Err(ClientError::Authorization(
                "the authorization server does not advertise S256 PKCE".to_owned(),
            ));
        }
        let wanted = oauth::select_scope(Some(&challenge), &info);
        let scope = if self.authorizations == 0 {
            oauth::merge_scopes(None, wanted.as_deref())
        } else {
            // Step-up: keep what was granted and add what the server now asks for.
            oauth::merge_scopes(self.granted_scope.as_deref(), wanted.as_deref())
        };
        if challenge.error.as_deref() == Some("insufficient_scope")
            && self.authorizations > 0
            && scope == self.granted_scope
        {
            // Asking again for the same scope would get the same token and the same refusal.
            return Err(ClientError::Authorization(format!(
                "the server wants scope {:?}, which was already granted",
                challenge.scope.unwrap_or_default()
            )));
        }
        let client = self.client(&info).await?;
        let pkce = Pkce::generate()?;
        let state = oauth::new_state()?;
        let url = oauth::authorization_url(&info, &client, REDIRECT_URI, pkce.challenge(), &state, scope.as_deref())?;
        self.authorizations += 1;
        let code = self.authorization_code(&url, &state, info.issuer.as_deref()).await?;
        let tokens = oauth::exchange_code(
            &self.http,
            &info.token_endpoint,
            &client,
            &code,
            pkce.verifier(),
            REDIRECT_URI,
            &info.resource,
        )
        .await?;
        self.client = Some(client);
        self.granted_scope = scope;
        Ok(tokens.access_token)
    }

    /// The client to authorise as, in the order of the MCP spec: pre-registered credentials, a
    /// client ID metadata document when the server accepts them, else dynamic registration.
    async fn client(&self, info: &oauth::AuthServerInfo) -> Result<ClientCredentials, ClientError> {
        if let Some(client) = self.client.as_ref().or(self.preregistered.as_ref()) {
            return Ok(client.clone());
        }
        if info.client_id_metadata_document_supported {
            return Ok(ClientCredentials::from_metadata_document(CLIENT_METADATA_URL)?);
        }
        oauth::check_registration_capable(info)?;
        Ok(oauth::register_client(&self.http, info, CLIENT_NAME, REDIRECT_URI).await?)
    }

    /// Sends the authorisation request and takes the code from the redirect back to us, after
    /// checking that it answers our `state` and, when it names one, comes from our issuer
    /// (RFC 9207).
    async fn authorization_code(&self, url: &str, state: &str, issuer: Option<&str>) -> Result<String, ClientError> {
        let fail = |detail: String| ClientError::Authorization(detail);
        let answer = self
            .browser
            .get(url)
            .send()
            .await
            .map_err(|error| fail(format!("the authorization endpoint failed: {}", error.without_url())))?;
        if !answer.status().is_redirection() {
            return Err(fail(format!(
                "the authorization endpoint answered {} instead of redirecting",
                answer.status()
            )));
        }
        let location = answer
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|location| location.to_str().ok())
            .ok_or_else(|| fail("the authorization redirect has no Location".to_owned()))?;
        let callback = Url::parse(url)
            .and_then(|base| base.join(location))
            .map_err(|error| fail(format!("the authorization redirect is not a URL ({error})")))?;
        if !callback.as_str().starts_with(REDIRECT_URI) {
            return Err(fail(
                "the authorization server redirected elsewhere than our redirect_uri".to_owned(),
            ));
        }
        let param = |name: &str| {
            callback
                .query_pairs()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.into_owned())
        };
        if param("state").as_deref() != Some(state) {
            return Err(fail("the authorization response does not carry our state".to_owned()));
        }
        if let (Some(iss), Some(issuer)) = (param("iss"), issuer)
            && iss != issuer
        {
            return Err(fail(format!(
                "the authorization response comes from issuer {iss}, not {issuer}"
            )));
        }
        if let Some(error) = param("error") {
            return Err(fail(format!("the authorization server answered {error}")));
        }
        param("code").ok_or_else(|| fail("the authorization response has no code".to_owned()))
    }
}

/// What an agent does with a server: list its tools and call them. Scenarios that check something
/// beyond that get their own steps.
async fn drive(scenario: &str, connection: &McpConnection) -> Result<(), ClientError> {
    let tools = connection.list_tools(REQUEST_TIMEOUT).await?;
    if scenario == SCHEMA_SCENARIO {
        return echo_schema(connection, &tools).await;
    }
    for tool in &tools {
        call(connection, &tool.name, arguments_for(tool)).await?;
    }
    Ok(())
}

/// Passes the focal tool's input schema, as our layer received it, back to the server verbatim.
async fn echo_schema(connection: &McpConnection, tools: &[Tool]) -> Result<(), ClientError> {
    let focal = tools
        .iter()
        .find(|tool| tool.name == SCHEMA_TOOL)
        .ok_or_else(|| ClientError::MissingTool(SCHEMA_TOOL.to_owned()))?;
    let schema = Value::Object(focal.input_schema.as_ref().clone());
    call(connection, SCHEMA_ECHO_TOOL, json!({ "schema": schema })).await
}

async fn call(connection: &McpConnection, tool: &str, arguments: Value) -> Result<(), ClientError> {
    let result = connection
        .call_tool(tool, arguments, REQUEST_TIMEOUT, &CancellationToken::new())
        .await?;
    // Mapped the way the agent would see it, so a result our mapping cannot carry shows up here.
    let content = map_call_result(result);
    if content.is_error {
        return Err(ClientError::ToolFailed {
            tool: tool.to_owned(),
            detail: format!("{:?}", content.parts),
        });
    }
    Ok(())
}

/// Arguments for a tool: a plain value of the declared type for each required property (the suite's
/// tools take numbers, strings and flags; what they check is that the call arrives well-typed).
fn arguments_for(tool: &Tool) -> Value {
    let schema = tool.input_schema.as_ref();
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array);
    let mut arguments = Map::new();
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let declared = properties
            .and_then(|properties| properties.get(name))
            .and_then(|property| property.get("type"))
            .and_then(Value::as_str);
        arguments.insert(name.to_owned(), sample_value(declared));
    }
    Value::Object(arguments)
}

fn sample_value(declared_type: Option<&str>) -> Value {
    match declared_type {
        Some("number" | "integer") => json!(1),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => json!({}),
        Some("null") => Value::Null,
        _ => json!("conformance"),
    }
}

//! The OAuth client steps against the testkit's OAuth-protected MCP server, over loopback: a whole
//! authorisation, refresh and the ways it must fail.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::Url;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use trueforge_mcp::oauth::{self, AuthServerInfo, ClientCredentials, OAuthError, OAuthHttp, Pkce, TokenResponse};
use trueforge_mcp::{McpConnection, McpServerConfig};
use trueforge_testkit::{OAuthMcpOptions, OAuthMcpServer};

/// Never contacted: the authorisation answer's `Location` is read, not followed.
const REDIRECT_URI: &str = "http://127.0.0.1:9/oauth/callback";
const TIMEOUT: Duration = Duration::from_secs(20);

struct Authorised {
    info: AuthServerInfo,
    client: ClientCredentials,
    tokens: TokenResponse,
}

fn http() -> OAuthHttp {
    OAuthHttp::new().expect("an HTTP client")
}

/// What the browser would do: GET the authorisation URL and return the redirect's target.
async fn follow_authorization(url: &str) -> Url {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client");
    let answer = browser
        .get(url)
        .send()
        .await
        .expect("the authorisation endpoint answers");
    assert_eq!(answer.status(), reqwest::StatusCode::FOUND);
    let location = answer.headers()[reqwest::header::LOCATION]
        .to_str()
        .expect("a text Location");
    Url::parse(location).expect("Location is a URL")
}

fn query_param(url: &Url, name: &str) -> Option<String> {
    url.query_pairs()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

/// Discovery, registration, PKCE authorisation and code exchange, checking each step's output.
async fn authorise(server: &OAuthMcpServer) -> Authorised {
    let http = http();
    let info = oauth::discover(&http, &server.mcp_url()).await.expect("discovery");
    oauth::check_registration_capable(&info).expect("a capable server");
    let client = oauth::register_client(&http, &info, "TrueForge test", REDIRECT_URI)
        .await
        .expect("registration");
    let pkce = Pkce::generate().expect("randomness");
    let state = oauth::new_state().expect("randomness");
    let url = oauth::authorization_url(&info, &client, REDIRECT_URI, pkce.challenge(), &state, None)
        .expect("an authorisation URL");
    let callback = follow_authorization(&url).await;
    assert!(callback.as_str().starts_with(REDIRECT_URI), "{callback}");
    assert_eq!(query_param(&callback, "state").as_deref(), Some(state.as_str()));
    let code = query_param(&callback, "code").expect("a code in the callback");
    let tokens = oauth::exchange_code(
        &http,
        &info.token_endpoint,
        &client,
        &code,
        pkce.verifier(),
        REDIRECT_URI,
        &info.resource,
    )
    .await
    .expect("the code exchange");
    Authorised { info, client, tokens }
}

fn bearer_config(server: &OAuthMcpServer, access_token: &str) -> McpServerConfig {
    McpServerConfig::StreamableHttp {
        url: server.mcp_url(),
        headers: BTreeMap::from([("Authorization".to_owned(), format!("Bearer {access_token}"))]),
    }
}

async fn call_text(connection: &McpConnection, tool: &str, arguments: Value) -> String {
    let result = connection
        .call_tool(tool, arguments, TIMEOUT, &CancellationToken::new())
        .await
        .expect("the tool answers");
    let result = serde_json::to_value(result).expect("serialisable");
    result["content"][0]["text"].as_str().expect("a text result").to_owned()
}

#[tokio::test]
async fn oauth_full_flow_reaches_the_protected_tools() {
    let server = OAuthMcpServer::start(OAuthMcpOptions {
        user: "bob".to_owned(),
        ..OAuthMcpOptions::default()
    })
    .await;
    let authorised = authorise(&server).await;
    assert_eq!(authorised.info.resource, server.mcp_url());
    assert_eq!(authorised.info.issuer.as_deref(), Some(server.issuer().as_str()));
    assert_eq!(authorised.info.token_endpoint, format!("{}/token", server.issuer()));
    assert!(authorised.client.client_secret.is_some());
    assert_eq!(authorised.tokens.expires_in, Some(3600));
    assert!(authorised.tokens.refresh_token.is_some());

    let connection = McpConnection::connect(&bearer_config(&server, &authorised.tokens.access_token), TIMEOUT)
        .await
        .expect("connects with the bearer token");
    let names: Vec<String> = connection
        .list_tools(TIMEOUT)
        .await
        .expect("tools/list")
        .into_iter()
        .map(|tool| tool.name.to_string())
        .collect();
    assert_eq!(names, ["whoami", "echo"]);
    assert_eq!(call_text(&connection, "whoami", json!({})).await, "bob");
    assert_eq!(call_text(&connection, "echo", json!({ "message": "hi" })).await, "hi");

    let counters = server.counters();
    assert_eq!(counters.registrations, 1);
    assert_eq!(counters.code_exchanges, 1);
    assert_eq!(counters.refreshes, 0);
    // The discovery probe was refused; the connection with the token never was.
    assert_eq!(counters.unauthorized_mcp_requests, 1);
}

#[tokio::test]
async fn oauth_refresh_after_expiry_rotates_the_refresh_token() {
    let server = OAuthMcpServer::start(OAuthMcpOptions::default()).await;
    let Authorised { info, client, tokens } = authorise(&server).await;
    server.expire_access_tokens();
    assert!(
        McpConnection::connect(&bearer_config(&server, &tokens.access_token), TIMEOUT)
            .await
            .is_err(),
        "an expired token must not connect"
    );

    let http = http();
    let old_refresh = tokens.refresh_token.expect("a refresh token");
    let renewed = oauth::refresh(&http, &info.token_endpoint, &client, &old_refresh, &info.resource)
        .await
        .expect("the refresh");
    assert_ne!(renewed.access_token, tokens.access_token);
    let new_refresh = renewed.refresh_token.clone().expect("a rotated refresh token");
    assert_ne!(new_refresh, old_refresh);
    let connection = McpConnection::connect(&bearer_config(&server, &renewed.access_token), TIMEOUT)
        .await
        .expect("the new token connects");
    assert_eq!(call_text(&connection, "whoami", json!({})).await, "alice");

    let reused = oauth::refresh(&http, &info.token_endpoint, &client, &old_refresh, &info.resource).await;
    assert!(matches!(reused, Err(OAuthError::InvalidGrant { .. })), "{reused:?}");

    server.revoke_refresh_tokens();
    let revoked = oauth::refresh(&http, &info.token_endpoint, &client, &new_refresh, &info.resource).await;
    assert!(matches!(revoked, Err(OAuthError::InvalidGrant { .. })), "{revoked:?}");
    assert_eq!(server.counters().refreshes, 1);
}

#[tokio::test]
async fn oauth_wrong_verifier_is_invalid_grant_without_leaking_secrets() {
    let server = OAuthMcpServer::start(OAuthMcpOptions::default()).await;
    let http = http();
    let info = oauth::discover(&http, &server.mcp_url()).await.expect("discovery");
    let client = oauth::register_client(&http, &info, "test", REDIRECT_URI)
        .await
        .expect("registration");
    let pkce = Pkce::generate().expect("randomness");
    let state = oauth::new_state().expect("randomness");
    let url =
        oauth::authorization_url(&info, &client, REDIRECT_URI, pkce.challenge(), &state, Some("mcp")).expect("a URL");
    let code = query_param(&follow_authorization(&url).await, "code").expect("a code");
    let wrong = Pkce::generate().expect("randomness");
    let error = oauth::exchange_code(
        &http,
        &info.token_endpoint,
        &client,
        &code,
        wrong.verifier(),
        REDIRECT_URI,
        &info.resource,
    )
    .await
    .expect_err("a wrong verifier is refused");
    assert!(matches!(error, OAuthError::InvalidGrant { .. }), "{error:?}");
    let shown = format!("{error} {error:?}");
    let secret = client.client_secret.as_deref().expect("a secret");
    for leaked in [code.as_str(), wrong.verifier(), secret] {
        assert!(!shown.contains(leaked), "the error shows a secret: {shown}");
    }
    assert_eq!(server.counters().code_exchanges, 0);
}

#[tokio::test]
async fn oauth_unknown_client_is_invalid_client() {
    let server = OAuthMcpServer::start(OAuthMcpOptions::default()).await;
    let http = http();
    let info = oauth::discover(&http, &server.mcp_url()).await.expect("discovery");
    // No method named: sent with HTTP Basic, RFC 7591's default, which the server reads too.
    let stranger = ClientCredentials {
        client_id: "never-registered".to_owned(),
        client_secret: Some("guess".to_owned()),
        token_endpoint_auth_method: None,
    };
    let exchanged = oauth::exchange_code(
        &http,
        &info.token_endpoint,
        &stranger,
        "code",
        "verifier",
        REDIRECT_URI,
        &info.resource,
    )
    .await;
    assert!(
        matches!(exchanged, Err(OAuthError::InvalidClient { .. })),
        "{exchanged:?}"
    );
    let refreshed = oauth::refresh(&http, &info.token_endpoint, &stranger, "refresh", &info.resource).await;
    assert!(
        matches!(refreshed, Err(OAuthError::InvalidClient { .. })),
        "{refreshed:?}"
    );
}

#[tokio::test]
async fn oauth_server_without_registration_or_s256_is_a_configuration_error() {
    for options in [
        OAuthMcpOptions {
            registration: false,
            ..OAuthMcpOptions::default()
        },
        OAuthMcpOptions {
            s256: false,
            ..OAuthMcpOptions::default()
        },
    ] {
        let server = OAuthMcpServer::start(options.clone()).await;
        let info = oauth::discover(&http(), &server.mcp_url()).await.expect("discovery");
        assert_eq!(info.registration_endpoint.is_some(), options.registration);
        let checked = oauth::check_registration_capable(&info);
        assert!(
            matches!(checked, Err(OAuthError::Configuration(_))),
            "{options:?}: {checked:?}"
        );
    }
}

#[tokio::test]
async fn oauth_registration_retries_without_the_auth_method() {
    let server = OAuthMcpServer::start(OAuthMcpOptions {
        refuse_auth_method: true,
        ..OAuthMcpOptions::default()
    })
    .await;
    let authorised = authorise(&server).await;
    assert_eq!(server.counters().registrations, 1);
    // The server chose the method and said so; that is the one used.
    assert_eq!(
        authorised.client.token_endpoint_auth_method.as_deref(),
        Some(oauth::CLIENT_SECRET_POST)
    );
    let connection = McpConnection::connect(&bearer_config(&server, &authorised.tokens.access_token), TIMEOUT)
        .await
        .expect("connects");
    assert_eq!(call_text(&connection, "whoami", json!({})).await, "alice");
}

#[tokio::test]
async fn oauth_without_resource_metadata_falls_back_to_the_mcp_origin() {
    let server = OAuthMcpServer::start(OAuthMcpOptions {
        resource_metadata: false,
        ..OAuthMcpOptions::default()
    })
    .await;
    let authorised = authorise(&server).await;
    assert_eq!(authorised.info.resource, server.mcp_url());
    assert_eq!(authorised.info.issuer.as_deref(), Some(server.issuer().as_str()));
    let connection = McpConnection::connect(&bearer_config(&server, &authorised.tokens.access_token), TIMEOUT)
        .await
        .expect("connects");
    assert_eq!(call_text(&connection, "whoami", json!({})).await, "alice");
}

#[tokio::test]
async fn oauth_unauthenticated_connect_fails() {
    let server = OAuthMcpServer::start(OAuthMcpOptions::default()).await;
    let connected = McpConnection::connect(&McpServerConfig::streamable_http(server.mcp_url()), TIMEOUT).await;
    assert!(connected.is_err());
    assert_eq!(server.counters().unauthorized_mcp_requests, 1);
}

#[tokio::test]
async fn oauth_denied_authorization_redirects_with_access_denied() {
    let server = OAuthMcpServer::start(OAuthMcpOptions::default()).await;
    let http = http();
    let info = oauth::discover(&http, &server.mcp_url()).await.expect("discovery");
    let client = oauth::register_client(&http, &info, "test", REDIRECT_URI)
        .await
        .expect("registration");
    server.update_options(|options| options.deny = true);
    let pkce = Pkce::generate().expect("randomness");
    let state = oauth::new_state().expect("randomness");
    let url = oauth::authorization_url(&info, &client, REDIRECT_URI, pkce.challenge(), &state, None).expect("a URL");
    let callback = follow_authorization(&url).await;
    assert_eq!(query_param(&callback, "error").as_deref(), Some("access_denied"));
    assert_eq!(query_param(&callback, "state").as_deref(), Some(state.as_str()));
    assert_eq!(query_param(&callback, "code"), None);
}

#[tokio::test]
async fn oauth_discovery_of_an_unreachable_server_fails() {
    // A port that was just free and is closed again: connections are refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let discovered = oauth::discover(&http(), &format!("http://127.0.0.1:{port}/mcp")).await;
    assert!(
        matches!(discovered, Err(OAuthError::Discovery { .. })),
        "{discovered:?}"
    );
}

#[tokio::test]
async fn oauth_requests_time_out_with_a_clear_message() {
    assert_eq!(http().timeout(), Duration::from_secs(15));
    // Accepts connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let port = listener.local_addr().expect("an address").port();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            open.push(stream);
        }
    });
    let http = OAuthHttp::with_timeout(Duration::from_millis(300)).expect("an HTTP client");
    let error = oauth::discover(&http, &format!("http://127.0.0.1:{port}/mcp"))
        .await
        .expect_err("nothing answers");
    assert!(matches!(error, OAuthError::Discovery { .. }), "{error:?}");
    assert!(error.to_string().contains("timed out after 0.3s"), "{error}");
    held.abort();
}

/// The test server registers every client for `method`, whatever it asked for.
async fn server_assigning(method: &str) -> OAuthMcpServer {
    OAuthMcpServer::start(OAuthMcpOptions {
        assign_auth_method: Some(method.to_owned()),
        ..OAuthMcpOptions::default()
    })
    .await
}

#[tokio::test]
async fn oauth_client_secret_basic_when_the_registration_names_it() {
    let server = server_assigning(oauth::CLIENT_SECRET_BASIC).await;
    let authorised = authorise(&server).await;
    assert_eq!(
        authorised.client.token_endpoint_auth_method.as_deref(),
        Some(oauth::CLIENT_SECRET_BASIC)
    );
    assert!(authorised.client.client_secret.is_some());
    // The server refuses a client that authenticates another way than it registered, so the
    // exchange and the refresh got through with Basic.
    let refresh_token = authorised.tokens.refresh_token.expect("a refresh token");
    let refreshed = oauth::refresh(
        &http(),
        &authorised.info.token_endpoint,
        &authorised.client,
        &refresh_token,
        &authorised.info.resource,
    )
    .await
    .expect("the refresh with Basic");
    assert_eq!(server.counters().refreshes, 1);
    let connection = McpConnection::connect(&bearer_config(&server, &refreshed.access_token), TIMEOUT)
        .await
        .expect("connects");
    assert_eq!(call_text(&connection, "whoami", json!({})).await, "alice");
}

#[tokio::test]
async fn oauth_the_registered_method_is_the_only_one_that_works() {
    let server = server_assigning(oauth::CLIENT_SECRET_BASIC).await;
    let authorised = authorise(&server).await;
    let refresh_token = authorised.tokens.refresh_token.clone().expect("a refresh token");
    let refresh_as = |method: Option<&str>| {
        let client = ClientCredentials {
            token_endpoint_auth_method: method.map(str::to_owned),
            ..authorised.client.clone()
        };
        let (info, refresh_token) = (authorised.info.clone(), refresh_token.clone());
        async move { oauth::refresh(&http(), &info.token_endpoint, &client, &refresh_token, &info.resource).await }
    };
    // client_secret_post where Basic was registered is refused before the token is spent…
    let refused = refresh_as(Some(oauth::CLIENT_SECRET_POST)).await;
    assert!(matches!(refused, Err(OAuthError::InvalidClient { .. })), "{refused:?}");
    // …and a client whose method nobody named (pre-registered credentials) uses Basic, RFC 7591's
    // default for a client with a secret.
    refresh_as(None).await.expect("Basic by default");
    assert_eq!(server.counters().refreshes, 1);
}

#[tokio::test]
async fn oauth_public_clients_send_no_secret() {
    let server = server_assigning(oauth::AUTH_METHOD_NONE).await;
    let authorised = authorise(&server).await;
    assert_eq!(authorised.client.client_secret, None);
    assert_eq!(
        authorised.client.token_endpoint_auth_method.as_deref(),
        Some(oauth::AUTH_METHOD_NONE)
    );
    assert_eq!(server.counters().code_exchanges, 1);
}

#[tokio::test]
async fn oauth_discovery_from_a_connect_challenge() {
    let server = OAuthMcpServer::start(OAuthMcpOptions::default()).await;
    let refused = McpConnection::connect(&McpServerConfig::streamable_http(server.mcp_url()), TIMEOUT).await;
    let Err(trueforge_mcp::McpError::AuthRequired {
        www_authenticate: Some(header),
        ..
    }) = refused
    else {
        panic!("expected a challenge, got {refused:?}");
    };
    let challenge = oauth::BearerChallenge::parse(&header).expect("a Bearer challenge");
    let unauthorised_before = server.counters().unauthorized_mcp_requests;
    let info = oauth::discover_with_challenge(&http(), &server.mcp_url(), &challenge)
        .await
        .expect("discovery");
    // No probe of its own: the challenge already said where to look.
    assert_eq!(server.counters().unauthorized_mcp_requests, unauthorised_before);
    assert_eq!(
        info,
        oauth::discover(&http(), &server.mcp_url()).await.expect("discovery")
    );
    assert_eq!(info.resource, server.mcp_url());
    assert!(!info.client_id_metadata_document_supported);
}

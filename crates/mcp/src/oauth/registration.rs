//! Dynamic client registration (RFC 7591), and the other ways to come by a client: pre-registered
//! credentials and client ID metadata documents.

use reqwest::header::ACCEPT;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::discovery::AuthServerInfo;
use super::error::{OAuthError, redact_url};
use super::http::OAuthHttp;

/// The token endpoint authentication methods (RFC 7591 §2) this client can use.
pub const CLIENT_SECRET_BASIC: &str = "client_secret_basic";
pub const CLIENT_SECRET_POST: &str = "client_secret_post";
pub const AUTH_METHOD_NONE: &str = "none";

/// What registration asks for. Unchanged from before the method was recorded, so clients
/// registered earlier (stored without a method) were registered for this one.
const REQUESTED_AUTH_METHOD: &str = CLIENT_SECRET_POST;

/// A client known to the authorisation server. `Debug` hides the secret.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientCredentials {
    pub client_id: String,
    pub client_secret: Option<String>,
    /// How the client authenticates at the token endpoint: `client_secret_basic`,
    /// `client_secret_post` or `none` (RFC 7591 §2). `None` when nobody said: then
    /// `client_secret_basic` with a secret (RFC 7591's default) and `none` without one. Defaulted
    /// when absent so credentials stored before the field existed still load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
}

impl ClientCredentials {
    /// A client whose `client_id` is the HTTPS URL of its client ID metadata document
    /// (draft-ietf-oauth-client-id-metadata-document; MCP 2025-11-25), for an authorisation server
    /// that advertises `client_id_metadata_document_supported`. Such a client is public: the
    /// document cannot carry a shared secret.
    pub fn from_metadata_document(url: &str) -> Result<Self, OAuthError> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|error| OAuthError::Configuration(format!("the client metadata URL is not a URL ({error})")))?;
        // The draft requires https and a path: the document is fetched from there by the server.
        if parsed.scheme() != "https" || parsed.path().len() <= 1 || parsed.fragment().is_some() {
            return Err(OAuthError::Configuration(
                "a client metadata URL must be an https URL with a path and no fragment".to_owned(),
            ));
        }
        Ok(Self {
            client_id: url.to_owned(),
            client_secret: None,
            token_endpoint_auth_method: Some(AUTH_METHOD_NONE.to_owned()),
        })
    }
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<redacted>"))
            .field("token_endpoint_auth_method", &self.token_endpoint_auth_method)
            .finish()
    }
}

/// Registers a client named `client_name` that receives codes at `redirect_uri`.
///
/// Asks for `client_secret_post`; a server that refuses that metadata (`invalid_client_metadata`)
/// is asked once more without naming a method, leaving the choice to it. The method the answer
/// names is the one used at the token endpoint.
pub async fn register_client(
    http: &OAuthHttp,
    info: &AuthServerInfo,
    client_name: &str,
    redirect_uri: &str,
) -> Result<ClientCredentials, OAuthError> {
    let endpoint = info.registration_endpoint.as_deref().ok_or_else(|| {
        OAuthError::Configuration("the authorisation server offers no dynamic client registration".to_owned())
    })?;
    let mut metadata = json!({
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": REQUESTED_AUTH_METHOD,
    });
    match post_registration(http, endpoint, &metadata, Some(REQUESTED_AUTH_METHOD)).await {
        Err(OAuthError::ErrorResponse { error, .. }) if error == "invalid_client_metadata" => {
            if let Some(fields) = metadata.as_object_mut() {
                fields.remove("token_endpoint_auth_method");
            }
            post_registration(http, endpoint, &metadata, None).await
        }
        outcome => outcome,
    }
}

/// `requested`: the method the registration asked for. RFC 7591 §3.2.1 has the server return
/// every registered field; one that leaves the method out is taken to have registered what was
/// asked for, which is what this client has always assumed.
async fn post_registration(
    http: &OAuthHttp,
    endpoint: &str,
    metadata: &Value,
    requested: Option<&str>,
) -> Result<ClientCredentials, OAuthError> {
    let request = http
        .client()
        .post(endpoint)
        .header(ACCEPT, "application/json")
        .json(metadata);
    let answer = http.send(request, endpoint).await?;
    if !answer.status.is_success() {
        return Err(answer.oauth_error(endpoint));
    }
    let object = answer.json_object(endpoint)?;
    let client_id = object
        .get("client_id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .ok_or_else(|| OAuthError::MalformedResponse {
            url: redact_url(endpoint),
            detail: "the registration answer has no client_id".to_owned(),
        })?;
    let client_secret = object
        .get("client_secret")
        .and_then(Value::as_str)
        .filter(|secret| !secret.is_empty())
        .map(str::to_owned);
    let named = object
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
        .filter(|method| !method.is_empty());
    let token_endpoint_auth_method = match named {
        Some(method) => Some(method.to_owned()),
        // Without a secret the client can only be public, whatever was asked for.
        None if client_secret.is_none() => Some(AUTH_METHOD_NONE.to_owned()),
        None => requested.map(str::to_owned),
    };
    Ok(ClientCredentials {
        client_id: client_id.to_owned(),
        client_secret,
        token_endpoint_auth_method,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oauth_client_secret_is_redacted_in_debug() {
        let client = ClientCredentials {
            client_id: "id-1".to_owned(),
            client_secret: Some("very-secret".to_owned()),
            token_endpoint_auth_method: None,
        };
        let shown = format!("{client:?}");
        assert!(shown.contains("id-1"));
        assert!(!shown.contains("very-secret"));
    }

    #[test]
    fn oauth_credentials_stored_without_a_method_still_load() {
        let client: ClientCredentials =
            serde_json::from_value(json!({ "client_id": "id-1", "client_secret": "s" })).unwrap();
        assert_eq!(client.token_endpoint_auth_method, None);
        let stored = serde_json::to_value(&client).unwrap();
        assert_eq!(stored, json!({ "client_id": "id-1", "client_secret": "s" }));
    }

    #[test]
    fn oauth_metadata_document_clients_are_public_https_urls() {
        let client = ClientCredentials::from_metadata_document("https://app.example.com/oauth/client.json").unwrap();
        assert_eq!(client.client_id, "https://app.example.com/oauth/client.json");
        assert_eq!(client.client_secret, None);
        assert_eq!(client.token_endpoint_auth_method.as_deref(), Some(AUTH_METHOD_NONE));
        for bad in [
            "http://app.example.com/client.json",
            "https://app.example.com/",
            "https://a.test/c#x",
            "nope",
        ] {
            assert!(
                matches!(
                    ClientCredentials::from_metadata_document(bad),
                    Err(OAuthError::Configuration(_))
                ),
                "{bad}"
            );
        }
    }
}

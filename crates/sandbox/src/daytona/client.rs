//! The HTTP calls to Daytona: the API (sandboxes, snapshots) and a sandbox's toolbox (execute, files).
//! Every call has a timeout; errors say what was asked and what Daytona answered, never the key.

use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use reqwest::{Method, RequestBuilder, Response, StatusCode, Url};
use serde::de::DeserializeOwned;

use super::wire;

/// How long Daytona itself may wait for a sandbox to start before answering a create or start call.
const DAYTONA_START_WAIT: Duration = Duration::from_secs(30);
/// The largest answer read from a control call or an error; anything bigger is not Daytona's.
const MAX_SMALL_ANSWER: usize = 1024 * 1024;
/// The largest `process/execute` answer read. The daemon buffers a command's whole output in memory and
/// sends it as one JSON string, so it cannot be read in part; past this the command's output is lost.
const MAX_EXECUTE_ANSWER: usize = 64 * 1024 * 1024;

/// A failed call.
#[derive(Debug)]
pub(crate) struct ApiError {
    /// What was asked, for the message (`get sandbox`, `execute`…).
    pub action: &'static str,
    pub kind: ApiErrorKind,
}

#[derive(Debug)]
pub(crate) enum ApiErrorKind {
    /// Daytona answered with an error status.
    Status { status: u16, message: String },
    /// No (whole) answer within the call's timeout.
    Timeout(Duration),
    /// No connection, or it broke.
    Transport(String),
    /// The answer was not what Daytona sends.
    Body(String),
}

impl ApiError {
    pub fn status(&self) -> Option<u16> {
        match self.kind {
            ApiErrorKind::Status { status, .. } => Some(status),
            _ => None,
        }
    }

    /// The key was refused (401: unknown, 403: not allowed).
    pub fn is_rejected_key(&self) -> bool {
        matches!(self.status(), Some(401 | 403))
    }

    /// Daytona did not answer properly: a timeout, no connection or a server error.
    pub fn is_unanswered(&self) -> bool {
        matches!(self.kind, ApiErrorKind::Timeout(_) | ApiErrorKind::Transport(_))
            || self.status().is_some_and(|status| status >= 500)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let action = self.action;
        match &self.kind {
            ApiErrorKind::Status { status, message } => {
                write!(formatter, "Daytona answered {status} to {action}: {message}")
            }
            ApiErrorKind::Timeout(after) => write!(
                formatter,
                "Daytona did not answer {action} within {:.1}s",
                after.as_secs_f64()
            ),
            ApiErrorKind::Transport(error) => write!(formatter, "cannot reach Daytona to {action}: {error}"),
            ApiErrorKind::Body(error) => write!(formatter, "Daytona's answer to {action} was unreadable: {error}"),
        }
    }
}

/// Where one sandbox's toolbox is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Toolbox {
    base: Url,
}

/// What `process/execute` came back with.
pub(crate) enum Executed {
    Done(wire::ExecuteResponse),
    /// The daemon killed the command at the timeout (408); its output is not sent.
    TimedOut,
}

pub(crate) struct Client {
    http: reqwest::Client,
    api: Url,
    authorization: HeaderValue,
    request_timeout: Duration,
}

impl Client {
    /// `Err` says what is wrong with the settings.
    pub fn new(api_url: &str, api_key: &str, request_timeout: Duration) -> Result<Self, String> {
        let api = Url::parse(api_url).map_err(|error| format!("invalid Daytona API URL {api_url:?}: {error}"))?;
        if !matches!(api.scheme(), "http" | "https") || api.cannot_be_a_base() {
            return Err(format!("invalid Daytona API URL {api_url:?}: not an http(s) URL"));
        }
        let mut authorization = HeaderValue::from_str(&format!("Bearer {api_key}"))
            .map_err(|_| "the Daytona API key holds characters a header cannot carry".to_owned())?;
        // Keeps the key out of any header dump.
        authorization.set_sensitive(true);
        let http = reqwest::Client::builder()
            .connect_timeout(request_timeout)
            .user_agent(concat!("trueforge/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| format!("cannot make the HTTP client: {error}"))?;
        Ok(Self {
            http,
            api,
            authorization,
            request_timeout,
        })
    }

    // The API.

    pub async fn get_sandbox(&self, id_or_name: &str) -> Result<wire::Sandbox, ApiError> {
        let url = self.api_url(&["sandbox", id_or_name]);
        let timeout = self.request_timeout;
        self.json("get sandbox", self.request(Method::GET, url, timeout), timeout)
            .await
    }

    pub async fn create_sandbox(&self, body: &wire::CreateSandbox<'_>) -> Result<wire::Sandbox, ApiError> {
        let url = self.api_url(&["sandbox"]);
        let timeout = self.request_timeout + DAYTONA_START_WAIT;
        let request = self.request(Method::POST, url, timeout).json(body);
        self.json("create sandbox", request, timeout).await
    }

    pub async fn start_sandbox(&self, id: &str) -> Result<(), ApiError> {
        let url = self.api_url(&["sandbox", id, "start"]);
        let timeout = self.request_timeout + DAYTONA_START_WAIT;
        self.empty("start sandbox", self.request(Method::POST, url, timeout), timeout)
            .await
    }

    pub async fn get_snapshot(&self, id_or_name: &str) -> Result<wire::Snapshot, ApiError> {
        let url = self.api_url(&["snapshots", id_or_name]);
        let timeout = self.request_timeout;
        self.json("get snapshot", self.request(Method::GET, url, timeout), timeout)
            .await
    }

    pub async fn create_snapshot(&self, body: &wire::CreateSnapshot<'_>) -> Result<wire::Snapshot, ApiError> {
        let url = self.api_url(&["snapshots"]);
        let timeout = self.request_timeout;
        let request = self.request(Method::POST, url, timeout).json(body);
        self.json("register snapshot", request, timeout).await
    }

    pub async fn activate_snapshot(&self, id: &str) -> Result<wire::Snapshot, ApiError> {
        let url = self.api_url(&["snapshots", id, "activate"]);
        let timeout = self.request_timeout;
        self.json("activate snapshot", self.request(Method::POST, url, timeout), timeout)
            .await
    }

    pub async fn delete_snapshot(&self, id: &str) -> Result<(), ApiError> {
        let url = self.api_url(&["snapshots", id]);
        let timeout = self.request_timeout;
        self.empty("delete snapshot", self.request(Method::DELETE, url, timeout), timeout)
            .await
    }

    /// The toolbox of `sandbox`: its `toolboxProxyUrl` when it has one, else the API's own proxy path.
    pub fn toolbox(&self, sandbox: &wire::Sandbox) -> Result<Toolbox, ApiError> {
        let base = match sandbox.toolbox_proxy_url.as_deref().filter(|url| !url.is_empty()) {
            Some(proxy) => {
                let mut url = Url::parse(proxy)
                    .ok()
                    .filter(|url| matches!(url.scheme(), "http" | "https") && !url.cannot_be_a_base())
                    .ok_or_else(|| ApiError {
                        action: "get sandbox",
                        kind: ApiErrorKind::Body(format!("toolboxProxyUrl {proxy:?} is not an http(s) URL")),
                    })?;
                push_segments(&mut url, &[&sandbox.id]);
                url
            }
            None => self.api_url(&["toolbox", &sandbox.id, "toolbox"]),
        };
        Ok(Toolbox { base })
    }

    // The toolbox.

    /// Runs a command; the call may take `timeout` (the command's own plus room for the answer).
    pub async fn execute(
        &self,
        toolbox: &Toolbox,
        body: &wire::ExecuteRequest<'_>,
        timeout: Duration,
    ) -> Result<Executed, ApiError> {
        let action = "execute";
        let url = toolbox.url(&["process", "execute"]);
        let request = self.request(Method::POST, url, timeout).json(body);
        let response = send(action, request, timeout).await?;
        if response.status() == StatusCode::REQUEST_TIMEOUT {
            return Ok(Executed::TimedOut);
        }
        let response = check(action, response, timeout).await?;
        let bytes = read_capped(action, response, MAX_EXECUTE_ANSWER, timeout).await?;
        decode(action, &bytes).map(Executed::Done)
    }

    pub async fn file_info(&self, toolbox: &Toolbox, path: &str) -> Result<wire::FileInfo, ApiError> {
        let url = toolbox.url_with_path(&["files", "info"], path);
        let timeout = self.request_timeout;
        self.json("get file info", self.request(Method::GET, url, timeout), timeout)
            .await
    }

    /// Starts a download and answers once the headers are in: the body is read by the caller, with its own
    /// timeout between chunks (a whole-body timeout would cut large files on slow links).
    pub async fn download(&self, toolbox: &Toolbox, path: &str) -> Result<Response, ApiError> {
        let action = "download file";
        let url = toolbox.url_with_path(&["files", "download"], path);
        let request = self
            .http
            .request(Method::GET, url)
            .header(AUTHORIZATION, &self.authorization);
        let response = match tokio::time::timeout(self.request_timeout, request.send()).await {
            Ok(sent) => sent.map_err(|error| transport(action, &error, self.request_timeout))?,
            Err(_) => {
                return Err(ApiError {
                    action,
                    kind: ApiErrorKind::Timeout(self.request_timeout),
                });
            }
        };
        check(action, response, self.request_timeout).await
    }

    /// Writes a file as `multipart/form-data` (field `file`), the form every daemon version takes.
    pub async fn upload(&self, toolbox: &Toolbox, path: &str, content: Bytes) -> Result<(), ApiError> {
        let url = toolbox.url_with_path(&["files", "upload"], path);
        let boundary = format!("trueforge-{}", ulid::Ulid::new());
        let body = multipart_body(&boundary, &content);
        let content_type = format!("multipart/form-data; boundary={boundary}");
        let timeout = self.request_timeout;
        let request = self
            .request(Method::POST, url, timeout)
            .header(CONTENT_TYPE, content_type)
            .body(body);
        self.empty("upload file", request, timeout).await
    }

    // Plumbing.

    fn api_url(&self, segments: &[&str]) -> Url {
        let mut url = self.api.clone();
        push_segments(&mut url, segments);
        url
    }

    /// A request bearing the key, which may take `timeout` from sending to the end of the answer.
    fn request(&self, method: Method, url: Url, timeout: Duration) -> RequestBuilder {
        self.http
            .request(method, url)
            .header(AUTHORIZATION, &self.authorization)
            .timeout(timeout)
    }

    async fn json<T: DeserializeOwned>(
        &self,
        action: &'static str,
        request: RequestBuilder,
        timeout: Duration,
    ) -> Result<T, ApiError> {
        let response = check(action, send(action, request, timeout).await?, timeout).await?;
        let bytes = read_capped(action, response, MAX_SMALL_ANSWER, timeout).await?;
        decode(action, &bytes)
    }

    async fn empty(&self, action: &'static str, request: RequestBuilder, timeout: Duration) -> Result<(), ApiError> {
        check(action, send(action, request, timeout).await?, timeout).await?;
        Ok(())
    }
}

impl Toolbox {
    fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        push_segments(&mut url, segments);
        url
    }

    fn url_with_path(&self, segments: &[&str], path: &str) -> Url {
        let mut url = self.url(segments);
        url.query_pairs_mut().append_pair("path", path);
        url
    }
}

/// Appends path segments, each percent-encoded (a sandbox name or id is one segment whatever it holds).
fn push_segments(url: &mut Url, segments: &[&str]) {
    // Only cannot-be-a-base URLs refuse segments, and those were refused when the client was made.
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty().extend(segments);
    }
}

async fn send(action: &'static str, request: RequestBuilder, timeout: Duration) -> Result<Response, ApiError> {
    request.send().await.map_err(|error| transport(action, &error, timeout))
}

fn transport(action: &'static str, error: &reqwest::Error, timeout: Duration) -> ApiError {
    let kind = if error.is_timeout() {
        ApiErrorKind::Timeout(timeout)
    } else {
        ApiErrorKind::Transport(error_chain(error))
    };
    ApiError { action, kind }
}

/// An error with its causes (`error sending request for url (…): …: Connection refused`).
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// The response when its status is a success; otherwise the error with Daytona's message.
async fn check(action: &'static str, response: Response, timeout: Duration) -> Result<Response, ApiError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let body = read_capped(action, response, MAX_SMALL_ANSWER, timeout)
        .await
        .unwrap_or_default();
    Err(ApiError {
        action,
        kind: ApiErrorKind::Status {
            status: status.as_u16(),
            message: error_message(status, &body),
        },
    })
}

/// Daytona's `message` (a string, or a list from request validation), else the start of the body.
fn error_message(status: StatusCode, body: &[u8]) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let message = parsed.as_ref().and_then(|value| value.get("message"));
    match message {
        Some(serde_json::Value::String(message)) => message.clone(),
        Some(serde_json::Value::Array(messages)) => messages
            .iter()
            .filter_map(serde_json::Value::as_str)
            .collect::<Vec<_>>()
            .join("; "),
        _ => {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            if text.is_empty() {
                status.canonical_reason().unwrap_or("no message").to_owned()
            } else {
                text.chars().take(300).collect()
            }
        }
    }
}

/// The body, refused past `cap` bytes.
async fn read_capped(
    action: &'static str,
    mut response: Response,
    cap: usize,
    timeout: Duration,
) -> Result<Vec<u8>, ApiError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| transport(action, &error, timeout))?
    {
        if body.len() + chunk.len() > cap {
            return Err(ApiError {
                action,
                kind: ApiErrorKind::Body(format!("larger than {cap} bytes")),
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn decode<T: DeserializeOwned>(action: &'static str, body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|error| ApiError {
        action,
        kind: ApiErrorKind::Body(error.to_string()),
    })
}

/// One part named `file` (RFC 7578). The boundary is random, so it cannot occur in the content by chance.
fn multipart_body(boundary: &str, content: &[u8]) -> Bytes {
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"file\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    );
    let tail = format!("\r\n--{boundary}--\r\n");
    let mut body = Vec::with_capacity(head.len() + content.len() + tail.len());
    body.extend_from_slice(head.as_bytes());
    body.extend_from_slice(content);
    body.extend_from_slice(tail.as_bytes());
    Bytes::from(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_daytonas_error_messages() {
        let nest = br#"{"statusCode":404,"message":"Sandbox with ID or name x not found","error":"Not Found"}"#;
        assert_eq!(
            error_message(StatusCode::NOT_FOUND, nest),
            "Sandbox with ID or name x not found"
        );
        let validation = br#"{"statusCode":400,"message":["name must be a string","snapshot must be a string"]}"#;
        assert_eq!(
            error_message(StatusCode::BAD_REQUEST, validation),
            "name must be a string; snapshot must be a string"
        );
        assert_eq!(error_message(StatusCode::BAD_GATEWAY, b"  "), "Bad Gateway");
        assert_eq!(
            error_message(StatusCode::BAD_GATEWAY, b"upstream down"),
            "upstream down"
        );
    }

    #[test]
    fn builds_urls_with_encoded_segments_and_the_toolbox_of_either_version() {
        let client = Client::new("http://daytona.test/api/", "key", Duration::from_secs(1)).unwrap();
        assert_eq!(
            client.api_url(&["sandbox", "acme.01j/x"]).as_str(),
            "http://daytona.test/api/sandbox/acme.01j%2Fx"
        );
        let mut sandbox = wire::Sandbox {
            id: "abc".to_owned(),
            state: "started".to_owned(),
            error_reason: None,
            toolbox_proxy_url: Some("https://proxy.daytona.test/toolbox".to_owned()),
        };
        let toolbox = client.toolbox(&sandbox).unwrap();
        assert_eq!(
            toolbox.url_with_path(&["files", "info"], "/a b/c&d").as_str(),
            "https://proxy.daytona.test/toolbox/abc/files/info?path=%2Fa+b%2Fc%26d"
        );
        sandbox.toolbox_proxy_url = None;
        assert_eq!(
            client.toolbox(&sandbox).unwrap().url(&["process", "execute"]).as_str(),
            "http://daytona.test/api/toolbox/abc/toolbox/process/execute"
        );
    }

    #[test]
    fn refuses_urls_that_are_not_http() {
        assert!(Client::new("ftp://x/api", "key", Duration::from_secs(1)).is_err());
        assert!(Client::new("not a url", "key", Duration::from_secs(1)).is_err());
        assert!(Client::new("http://x/api", "bad\nkey", Duration::from_secs(1)).is_err());
    }
}

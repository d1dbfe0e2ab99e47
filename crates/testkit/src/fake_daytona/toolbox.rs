//! The toolbox: `process/execute` and `files/{info,download,upload}` on a sandbox's directory, with the
//! daemon's answers (`ExecuteResponse {exitCode, result}`, `FileInfo`, 404 for a missing path, 400 for a
//! directory download, 408 for a command past its timeout).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State as Extract};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use tempfile::TempDir;
use tokio_util::io::ReaderStream;

use super::api::error;
use super::exec::{self, Ran};
use super::state::{State, host_path};

/// The daemon's `ExecuteRequest`: `timeout` in seconds (none or 0: no limit), `cwd` optional.
#[derive(Deserialize)]
pub(crate) struct ExecuteRequest {
    command: Option<String>,
    timeout: Option<u32>,
    cwd: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct PathQuery {
    path: Option<String>,
}

/// A refused request: its status and message, answered in Daytona's error shape.
pub(crate) struct Refusal(u16, String);

impl Refusal {
    fn new(status: u16, message: impl Into<String>) -> Self {
        Self(status, message.into())
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        error(self.0, self.1)
    }
}

/// A started sandbox's directory, or the answer Daytona gives instead.
fn started_sandbox(state: &State, sandbox_id: &str) -> Result<Arc<TempDir>, Refusal> {
    let Some(target) = state.toolbox_target(sandbox_id) else {
        return Err(Refusal::new(404, format!("Sandbox with ID {sandbox_id} not found")));
    };
    if target.state != "started" {
        return Err(Refusal::new(400, format!("Sandbox {sandbox_id} is not started")));
    }
    Ok(target.dir)
}

/// The host path of the `path` query parameter inside `dir`.
fn query_path(dir: &TempDir, query: &PathQuery) -> Result<PathBuf, Refusal> {
    let Some(path) = query.path.as_deref().filter(|path| !path.is_empty()) else {
        return Err(Refusal::new(400, "path is required"));
    };
    host_path(dir.path(), path).ok_or_else(|| Refusal::new(400, format!("invalid path: {path}")))
}

pub(crate) async fn execute(
    Extract(state): Extract<Arc<State>>,
    Path(sandbox_id): Path<String>,
    body: Result<Json<ExecuteRequest>, JsonRejection>,
) -> Result<Response, Refusal> {
    let dir = started_sandbox(&state, &sandbox_id)?;
    let Some(request) = body
        .ok()
        .map(|Json(request)| request)
        .filter(|request| request.command.is_some())
    else {
        return Err(Refusal::new(400, "command is required"));
    };
    let words = exec::split_command(request.command.as_deref().unwrap_or_default());
    if words.is_empty() {
        return Err(Refusal::new(400, "empty command"));
    }
    let Some(home) = host_path(dir.path(), &state.options.home) else {
        return Err(Refusal::new(500, "bad home"));
    };
    let cwd = match request.cwd.as_deref() {
        Some(cwd) => match host_path(dir.path(), cwd) {
            Some(cwd) => cwd,
            None => return Err(Refusal::new(400, format!("invalid cwd: {cwd}"))),
        },
        None => home.clone(),
    };
    let timeout = request.timeout.filter(|seconds| *seconds > 0);
    // The daemon runs the command on even when the client goes away; so does the fake, on its own task,
    // holding the directory until the command is done.
    let running = tokio::spawn(async move {
        let at = exec::Run {
            sandbox_id: &sandbox_id,
            cwd: &cwd,
            home: &home,
            timeout: timeout.map(|seconds| Duration::from_secs(seconds.into())),
        };
        let ran = exec::run(words, at, &state.processes).await;
        drop(dir);
        ran
    });
    match running.await {
        Ok(Ran::Exited { code, output }) => Ok(Json(json!({
            "exitCode": code,
            "result": String::from_utf8_lossy(&output),
        }))
        .into_response()),
        Ok(Ran::TimedOut) => Err(Refusal::new(
            408,
            format!(
                "Command execution timed out after {} seconds. The timeout can be increased by adjusting the timeout parameter in the request.",
                timeout.unwrap_or_default()
            ),
        )),
        Err(join) => Err(Refusal::new(500, join.to_string())),
    }
}

pub(crate) async fn file_info(
    Extract(state): Extract<Arc<State>>,
    Path(sandbox_id): Path<String>,
    Query(query): Query<PathQuery>,
) -> Result<Response, Refusal> {
    let dir = started_sandbox(&state, &sandbox_id)?;
    let path = query_path(&dir, &query)?;
    let metadata = match tokio::fs::metadata(&path).await {
        Ok(metadata) => metadata,
        Err(io) => return Err(io_error(&io)),
    };
    let mode = metadata.permissions().mode();
    let modified = metadata
        .modified()
        .map(chrono::DateTime::<chrono::Utc>::from)
        .map(|time| time.to_rfc3339())
        .unwrap_or_default();
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "/".to_owned());
    Ok(Json(json!({
        "name": name,
        "size": metadata.len(),
        "mode": format!("{}{:o}", if metadata.is_dir() { "d" } else { "-" }, mode & 0o777),
        "modTime": modified,
        "isDir": metadata.is_dir(),
        "owner": metadata.uid().to_string(),
        "group": metadata.gid().to_string(),
        "permissions": format!("{:04o}", mode & 0o7777),
    }))
    .into_response())
}

pub(crate) async fn download(
    Extract(state): Extract<Arc<State>>,
    Path(sandbox_id): Path<String>,
    Query(query): Query<PathQuery>,
) -> Result<Response, Refusal> {
    let dir = started_sandbox(&state, &sandbox_id)?;
    let path = query_path(&dir, &query)?;
    match tokio::fs::metadata(&path).await {
        Ok(metadata) if metadata.is_dir() => return Err(Refusal::new(400, "path must be a file")),
        Ok(_) => {}
        Err(io) => return Err(io_error(&io)),
    }
    let file = match tokio::fs::File::open(&path).await {
        Ok(file) => file,
        Err(io) => return Err(io_error(&io)),
    };
    Ok((
        [(header::CONTENT_TYPE, "application/octet-stream")],
        Body::from_stream(ReaderStream::new(file)),
    )
        .into_response())
}

/// Takes the file as `multipart/form-data` (field `file`) or as the raw body, as the daemon does; makes
/// the parent directories and replaces a file already there.
pub(crate) async fn upload(
    Extract(state): Extract<Arc<State>>,
    Path(sandbox_id): Path<String>,
    Query(query): Query<PathQuery>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Refusal> {
    let dir = started_sandbox(&state, &sandbox_id)?;
    let path = query_path(&dir, &query)?;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let content = if content_type.starts_with("multipart/form-data") {
        match multipart_file(content_type, &body) {
            Some(content) => content,
            None => return Err(Refusal::new(400, "http: no such file")),
        }
    } else {
        &body[..]
    };
    if let Some(parent) = path.parent()
        && let Err(io) = tokio::fs::create_dir_all(parent).await
    {
        return Err(Refusal::new(400, io.to_string()));
    }
    match tokio::fs::write(&path, content).await {
        Ok(()) => Ok(StatusCode::OK.into_response()),
        Err(io) => Err(Refusal::new(400, io.to_string())),
    }
}

fn io_error(io: &std::io::Error) -> Refusal {
    let status = match io.kind() {
        std::io::ErrorKind::NotFound => 404,
        std::io::ErrorKind::PermissionDenied => 403,
        _ => 400,
    };
    Refusal::new(status, io.to_string())
}

/// The content of the part named `file` in a `multipart/form-data` body (RFC 7578), or `None`.
fn multipart_file<'a>(content_type: &str, body: &'a [u8]) -> Option<&'a [u8]> {
    let boundary = content_type
        .split(';')
        .filter_map(|parameter| parameter.trim().strip_prefix("boundary="))
        .next()?
        .trim_matches('"');
    let delimiter = format!("--{boundary}");
    let mut rest = body;
    loop {
        let start = find(rest, delimiter.as_bytes())? + delimiter.len();
        rest = &rest[start..];
        if rest.starts_with(b"--") {
            return None;
        }
        let headers_end = find(rest, b"\r\n\r\n")?;
        let headers = String::from_utf8_lossy(&rest[..headers_end]).to_ascii_lowercase();
        let content = &rest[headers_end + 4..];
        let end = find(content, format!("\r\n{delimiter}").as_bytes())?;
        if headers.contains("name=\"file\"") {
            return Some(&content[..end]);
        }
        rest = &content[end..];
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_file_part() {
        let body = b"--xyz\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nno\r\n--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\nContent-Type: application/octet-stream\r\n\r\nline\r\n--x\r\n--xyz--\r\n";
        assert_eq!(
            multipart_file("multipart/form-data; boundary=xyz", body),
            Some(&b"line\r\n--x"[..])
        );
        assert_eq!(multipart_file("multipart/form-data; boundary=xyz", b"--xyz--"), None);
    }
}

//! Fake enterprise MCP servers for evaluations: a project tracker, a CRM and a file server, each over
//! Streamable HTTP with a few thousand objects seeded deterministically (the same data on every run), paged
//! list tools, and tools whose results are large enough (tens to hundreds of kilobytes) to trigger a
//! harness's large-result handling and compaction. Their data is public, so graders can compute the answers.

mod crm;
mod files;
mod seed;
mod tracker;

use std::sync::Arc;

use serde_json::{Value, json};

pub use crm::{Account, Contact, Crm, Deal};
pub use files::{FileServer, StoredFile};
pub use tracker::{Issue, Project, Tracker};

use crate::busy::BusyClock;
use crate::mcp_http::{ToolServer, serve};

/// Objects per page when a list call names no `page_size`.
pub const DEFAULT_PAGE_SIZE: usize = 25;
/// The largest `page_size` a list call may ask for.
pub const MAX_PAGE_SIZE: usize = 100;

/// A running fake enterprise server; it stops when dropped.
pub struct EnterpriseMcpServer {
    /// `http://127.0.0.1:<port>/mcp`.
    pub url: String,
    /// Busy while a tool call runs (the JSON-RPC transport excluded).
    pub clock: Arc<BusyClock>,
    task: tokio::task::JoinHandle<()>,
}

impl EnterpriseMcpServer {
    /// Serves `server` (a [`Tracker`], [`Crm`] or [`FileServer`]) on a free local port.
    pub async fn start(server: Arc<dyn ToolServer>) -> std::io::Result<Self> {
        let clock = BusyClock::new();
        let (url, task) = serve(server, clock.clone()).await?;
        Ok(Self { url, clock, task })
    }
}

impl Drop for EnterpriseMcpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One page of `items` as a list tool answers it: the items, and `next_page_token` when more follow. The
/// token is the offset of the next item; a token that is not one is a tool error.
pub(crate) fn page<T: serde::Serialize>(items: &[T], arguments: &Value, key: &str) -> Result<String, String> {
    let size = match arguments.get("page_size") {
        None | Some(Value::Null) => DEFAULT_PAGE_SIZE,
        Some(value) => value
            .as_u64()
            .and_then(|size| usize::try_from(size).ok())
            .filter(|size| (1..=MAX_PAGE_SIZE).contains(size))
            .ok_or_else(|| format!("page_size must be a whole number from 1 to {MAX_PAGE_SIZE}"))?,
    };
    let start = match arguments.get("page_token") {
        None | Some(Value::Null) => 0,
        Some(token) => token
            .as_str()
            .and_then(|token| token.parse::<usize>().ok())
            .filter(|start| *start <= items.len())
            .ok_or_else(|| "page_token is not one this server gave".to_owned())?,
    };
    let end = (start + size).min(items.len());
    let mut answer = json!({ key: &items[start..end], "total": items.len() });
    if end < items.len() {
        answer["next_page_token"] = json!(end.to_string());
    }
    Ok(answer.to_string())
}

/// A string argument the tool requires.
pub(crate) fn required<'a>(arguments: &'a Value, name: &str) -> Result<&'a str, String> {
    arguments
        .get(name)
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
        .ok_or_else(|| format!("`{name}` is required (a string)"))
}

/// A string argument that may be left out.
pub(crate) fn optional<'a>(arguments: &'a Value, name: &str) -> Option<&'a str> {
    arguments
        .get(name)
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
}

/// The schema of the paging arguments every list tool takes, merged into `properties`.
pub(crate) fn paged_schema(mut properties: Value) -> Value {
    properties["page_size"] = json!({"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE,
        "description": format!("Default {DEFAULT_PAGE_SIZE}.")});
    properties["page_token"] = json!({"type": "string", "description": "From the previous page."});
    json!({"type": "object", "properties": properties, "additionalProperties": false})
}

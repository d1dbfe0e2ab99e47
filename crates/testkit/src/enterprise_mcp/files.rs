//! The file server: 400 documents in four folders, most a few hundred bytes, every twentieth one large
//! (60–200 KB). `list_files` pages, `read_file` returns a whole file, `search_files` finds files containing
//! every word of a query. One large report carries a fact deep inside:
//! [`FileServer::PLANTED_PATH`] holds [`FileServer::PLANTED_FACT`] after 90 % of its text.

use serde::Serialize;
use serde_json::{Value, json};

use super::seed::Seed;
use super::{optional, page, paged_schema, required};
use crate::mcp_http::ToolServer;

pub const FOLDERS: [&str; 4] = ["docs", "policies", "reports", "runbooks"];

#[derive(Debug, Clone, Serialize)]
pub struct StoredFile {
    pub path: String,
    #[serde(skip)]
    pub content: String,
}

pub struct FileServer {
    pub files: Vec<StoredFile>,
}

impl Default for FileServer {
    fn default() -> Self {
        Self::seeded()
    }
}

impl FileServer {
    pub const PLANTED_PATH: &'static str = "reports/incident-review-2026-q3.md";
    pub const PLANTED_FACT: &'static str =
        "The root cause of incident INC-4471 was an expired TLS certificate on gateway-7.";

    pub fn seeded() -> Self {
        let mut seed = Seed::new(0x0066_696c_6573);
        let mut files: Vec<StoredFile> = (1..=400)
            .map(|number| {
                let folder = FOLDERS[number % FOLDERS.len()];
                let words = if number % 20 == 0 {
                    10_000 + seed.below(20_000)
                } else {
                    40 + seed.below(80)
                };
                StoredFile {
                    path: format!("{folder}/document-{number:03}.md"),
                    content: format!("# Document {number}\n\n{}\n", seed.prose(words)),
                }
            })
            .collect();
        let body = seed.prose(20_000);
        let cut = body.len() * 9 / 10;
        let cut = body[..cut].rfind(' ').unwrap_or(cut);
        files.push(StoredFile {
            path: Self::PLANTED_PATH.to_owned(),
            content: format!(
                "# Incident review, 2026 Q3\n\n{}\n\n{}\n\n{}\n",
                &body[..cut],
                Self::PLANTED_FACT,
                &body[cut..]
            ),
        });
        Self { files }
    }
}

impl ToolServer for FileServer {
    fn name(&self) -> &str {
        "files"
    }

    fn tools(&self) -> Vec<Value> {
        vec![
            json!({"name": "list_files", "description": "File paths with sizes, paged, optionally in one folder.",
                "inputSchema": paged_schema(json!({"folder": {"type": "string", "enum": FOLDERS}}))}),
            json!({"name": "read_file", "description": "A file's whole content.",
                "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}),
            json!({"name": "search_files", "description": "Paths of files containing every word of the query.",
                "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}),
        ]
    }

    fn call(&self, tool: &str, arguments: &Value) -> Result<String, String> {
        match tool {
            "list_files" => {
                let folder = optional(arguments, "folder");
                let listed: Vec<Value> = self
                    .files
                    .iter()
                    .filter(|file| folder.is_none_or(|folder| file.path.starts_with(&format!("{folder}/"))))
                    .map(|file| json!({"path": file.path, "bytes": file.content.len()}))
                    .collect();
                page(&listed, arguments, "files")
            }
            "read_file" => {
                let path = required(arguments, "path")?;
                let file = self.files.iter().find(|file| file.path == path);
                Ok(file.ok_or_else(|| format!("no file {path}"))?.content.clone())
            }
            "search_files" => {
                let query = required(arguments, "query")?.to_lowercase();
                let words: Vec<&str> = query.split_whitespace().collect();
                let paths: Vec<&str> = self
                    .files
                    .iter()
                    .filter(|file| {
                        let content = file.content.to_lowercase();
                        words.iter().all(|word| content.contains(word))
                    })
                    .map(|file| file.path.as_str())
                    .take(50)
                    .collect();
                Ok(json!({"paths": paths}).to_string())
            }
            other => Err(format!("unknown tool {other}")),
        }
    }
}

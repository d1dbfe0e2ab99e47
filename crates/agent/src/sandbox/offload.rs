//! Large tool results kept whole in the sandbox: the model gets the beginning and end (from the
//! large-response limits) and the path of the complete text, which it can read in parts or process with a
//! script. The complete text also stays in the store, so recall works with or without the file.

use bytes::Bytes;
use trueforge_sandbox::join_sandbox_path;

use super::TurnSandbox;
use crate::error::AgentError;

/// The longest part of a file name taken from a tool name or a call id.
const NAME_PART_CHARS: usize = 40;

/// Writes `full` to the sandbox's tool-results directory and returns `shortened` with the file's path at
/// the top. The file is named after the tool and the call, so a resumed turn writes the same file again.
pub async fn offload_large_result(
    sandbox: &TurnSandbox,
    tool_name: &str,
    tool_call_id: &str,
    shortened: &str,
    full: &str,
) -> Result<String, AgentError> {
    let name = format!("{}_{}.txt", file_part(tool_name), file_part(tool_call_id));
    let path = join_sandbox_path(&sandbox.layout().tool_results, &name)?;
    sandbox.upload(&path, Bytes::copy_from_slice(full.as_bytes())).await?;
    Ok(format!(
        "[The complete output is saved in the sandbox at {path} ({} bytes). Read parts of it with exec \
         (grep, sed -n, head -c, jq) or process it with a script instead of printing it whole.]\n{shortened}",
        full.len()
    ))
}

/// A name safe in a file name: letters, digits, `_` and `-`, the rest replaced by `_`.
fn file_part(text: &str) -> String {
    text.chars()
        .take(NAME_PART_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_safe_and_bounded() {
        assert_eq!(file_part("search.docs/v2"), "search_docs_v2");
        assert_eq!(file_part(&"é".repeat(50)).len(), NAME_PART_CHARS);
        assert_eq!(file_part(".."), "__");
    }
}

//! What the agent is told about its sandbox.

use trueforge_sandbox::SandboxLayout;

/// The `sandbox` section of the system prompt. `file_downloads`: the user can download files the agent
/// names in a `sandbox_artifacts` block (the web UI renders them as download buttons).
pub fn sandbox_instructions(layout: &SandboxLayout, file_downloads: bool, provider_notes: Option<&str>) -> String {
    let mut text = format!(
        "You have a sandbox: a Linux machine of your own with bash and Python 3, reached with the exec \
         tool. Its workspace {workspace} keeps its files for the whole conversation. Work there: write \
         scripts to files and run them, keep intermediate results in files, and read large files in parts.\n\
         Files the user sends you are in {uploads}; do not change them, copy them first. Large tool \
         results are saved in {tool_results}.\n\
         Never print, list or reveal environment variables, credentials or tokens.",
        workspace = layout.workspace,
        uploads = layout.uploads,
        tool_results = layout.tool_results,
    );
    if file_downloads {
        text.push_str(
            "\nTo give the user files you made, end your answer with a fenced block of type \
             sandbox_artifacts listing each file as a markdown link with its absolute path, one per line:\n\
             ```sandbox_artifacts\n[Report](/workspace/report.csv)\n```",
        );
    }
    if let Some(notes) = provider_notes {
        text.push('\n');
        text.push_str(notes);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> SandboxLayout {
        SandboxLayout {
            workspace: "/workspace".into(),
            uploads: "/workspace/uploads".into(),
            tool_results: "/workspace/tool-results".into(),
            skills: "/workspace/skills".into(),
        }
    }

    #[test]
    fn names_the_directories_and_the_artifact_block_only_when_downloads_are_on() {
        let with = sandbox_instructions(&layout(), true, Some("No network."));
        assert!(with.contains("/workspace/uploads") && with.contains("/workspace/tool-results"));
        assert!(with.contains("```sandbox_artifacts") && with.ends_with("No network."));
        let without = sandbox_instructions(&layout(), false, None);
        assert!(!without.contains("sandbox_artifacts"));
    }
}

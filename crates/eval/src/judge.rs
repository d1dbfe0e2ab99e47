//! The optional model judge: a model asked, through the server under test like any session, whether an answer
//! meets a task's rubric. It complements the fact check (which stays in force): a rubric can ask for what a
//! list of words cannot, such as "explains why" or "does not invent numbers".

use serde::Serialize;
use serde_json::json;

use crate::run::{RunError, Target, ask_once};

/// What the judge said of one answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub passed: bool,
    /// The judge's reason, or why its reply could not be read.
    pub reason: String,
}

/// The judge's instructions; its reply's first word decides.
fn judge_prompt(task: &str, rubric: &str, answer: &str) -> String {
    format!(
        "You grade one answer of an AI agent. Judge only the answer below against the rubric; do not solve the \
         task yourself and do not give credit for effort.\n\n\
         <task>\n{task}\n</task>\n\n<rubric>\n{rubric}\n</rubric>\n\n<answer>\n{answer}\n</answer>\n\n\
         Reply with PASS or FAIL as the first word, then one sentence saying why."
    )
}

/// Reads a judge's reply: `PASS` or `FAIL` first (any case, punctuation after it allowed), else a failed
/// verdict saying the reply was unreadable.
pub fn read_verdict(reply: &str) -> Verdict {
    let trimmed = reply.trim_start_matches(|c: char| c.is_whitespace() || c == '*' || c == '#');
    let first: String = trimmed.chars().take_while(char::is_ascii_alphabetic).collect();
    let reason = trimmed[first.len()..]
        .trim_start_matches(|c: char| c.is_whitespace() || c.is_ascii_punctuation())
        .trim()
        .to_owned();
    match first.to_ascii_uppercase().as_str() {
        "PASS" => Verdict { passed: true, reason },
        "FAIL" => Verdict { passed: false, reason },
        _ => Verdict {
            passed: false,
            reason: format!(
                "the judge's reply did not start with PASS or FAIL: {:?}",
                reply.chars().take(200).collect::<String>()
            ),
        },
    }
}

/// Asks `judge_model` (an agent spec model name) whether `answer` meets `rubric`. The judge runs without tools
/// or capabilities, so it reads only what it is given.
pub async fn judge(
    target: &Target<'_>,
    judge_model: &str,
    task: &str,
    rubric: &str,
    answer: &str,
) -> Result<Verdict, RunError> {
    let spec = json!({"model": {"name": judge_model}, "config": {
        "ask_user_questions": {"enabled": false},
        "dynamic_sub_agents": {"enabled": false},
        "context_management": {"large_tool_response": {"enabled": false}, "compaction": {"enabled": false}}}});
    let reply = ask_once(target, &spec, &judge_prompt(task, rubric, answer)).await?;
    Ok(read_verdict(&reply))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_are_read_from_the_first_word() {
        assert_eq!(
            read_verdict("PASS. It names both figures."),
            Verdict {
                passed: true,
                reason: "It names both figures.".to_owned()
            }
        );
        assert_eq!(
            read_verdict("**Fail** - the count is wrong").reason,
            "the count is wrong"
        );
        assert!(!read_verdict("**Fail** - the count is wrong").passed);
        let unreadable = read_verdict("I think this passes.");
        assert!(!unreadable.passed);
        assert!(unreadable.reason.contains("did not start with PASS or FAIL"));
        assert!(!read_verdict("").passed);
        assert!(
            !read_verdict("PASSABLE answer").passed,
            "a longer word is not the verdict"
        );
    }
}

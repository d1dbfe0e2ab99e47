//! How far an approval may reach: the operator's maximum scope, and the `agent` scope, which needs a saved
//! agent to remember the tool for and a store to remember it in.

use trueforge_protocol::{ApprovalScope, SessionAgent, TurnInputItem};

use crate::error::{AgentError, InputError};

/// The broadest scope any approval in `input` asks for.
pub fn broadest_scope(input: &[TurnInputItem]) -> Option<ApprovalScope> {
    input
        .iter()
        .filter_map(|item| match item {
            TurnInputItem::ToolApproval(approval) => approval.approval.allowed_scope(),
            _ => None,
        })
        .max()
}

/// Refuses an input whose approvals reach further than `max` allows.
pub fn check_max_scope(input: &[TurnInputItem], max: ApprovalScope) -> Result<(), AgentError> {
    match broadest_scope(input) {
        Some(scope) if scope > max => Err(InputError::ScopeNotAllowed { scope, max }.into()),
        _ => Ok(()),
    }
}

/// The saved agent an `agent`-scope approval is remembered for: refused for an inline agent, which has no
/// identity beyond its session.
pub fn agent_scope_target<'a>(input: &[TurnInputItem], agent: &'a SessionAgent) -> Result<Option<&'a str>, AgentError> {
    if broadest_scope(input) != Some(ApprovalScope::Agent) {
        return Ok(None);
    }
    match agent {
        SessionAgent::Reference { id, .. } => Ok(Some(id.as_str())),
        SessionAgent::Inline { .. } => Err(InputError::AgentScopeOfInlineAgent.into()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use trueforge_protocol::{AgentSpec, ApprovalDecision, UserToolApproval};

    use super::*;

    fn approval(decision: ApprovalDecision) -> TurnInputItem {
        TurnInputItem::ToolApproval(UserToolApproval {
            thread_id: "main".to_owned(),
            tool_call_id: "call_1".to_owned(),
            approval: decision,
        })
    }

    #[test]
    fn approval_scopes_above_the_maximum_are_refused_naming_it() {
        let input = [
            approval(ApprovalDecision::allow()),
            approval(ApprovalDecision::allow_for_agent()),
        ];
        assert_eq!(broadest_scope(&input), Some(ApprovalScope::Agent));
        assert!(check_max_scope(&input, ApprovalScope::Agent).is_ok());
        let error = check_max_scope(&input, ApprovalScope::Session).unwrap_err();
        assert!(error.to_string().contains("'session'"), "{error}");
        let session = [approval(ApprovalDecision::allow_for_session())];
        assert!(check_max_scope(&session, ApprovalScope::Once).is_err());
        let denied = [approval(ApprovalDecision::Deny { reason: None })];
        assert!(
            check_max_scope(&denied, ApprovalScope::Once).is_ok(),
            "a denial reaches nowhere"
        );
    }

    #[test]
    fn approval_for_the_agent_needs_a_saved_agent() {
        let input = [approval(ApprovalDecision::allow_for_agent())];
        let saved = SessionAgent::Reference {
            id: "agent-1".to_owned(),
            name: None,
        };
        assert_eq!(agent_scope_target(&input, &saved).unwrap(), Some("agent-1"));
        let inline = SessionAgent::Inline {
            spec: AgentSpec::for_model("fake/model"),
        };
        let error = agent_scope_target(&input, &inline).unwrap_err();
        assert!(error.to_string().contains("inline"), "{error}");
        let session = [approval(ApprovalDecision::allow_for_session())];
        assert_eq!(agent_scope_target(&session, &inline).unwrap(), None);
    }
}

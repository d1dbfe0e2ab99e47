//! The bodies of the HTTP API that are not domain types: the `{data}` envelope, pages, sessions, turns,
//! models, health, and the requests that create sessions and turns.
//!
//! The server writes and reads these, the client reads and writes them; defining them once here keeps the
//! two from drifting apart. The serde shapes are the server's answers as the reference writes them, and the
//! schemas (`ToSchema`) are what the server's OpenAPI document states, doc comments included: a `///`
//! comment on a field becomes its description in the document, so notes for the code use `//`.
//!
//! The structs are `#[non_exhaustive]` so that a field the server adds later is not a breaking change for
//! the client's users; other crates build them through their constructors.

mod envelope;
mod health;
mod models;
mod schedules;
mod sessions;
mod turns;

pub use envelope::{Data, Page, Pagination, SortOrder};
pub use health::{DatabaseHealth, Health};
pub use models::{AvailableModel, AvailableModelProvider};
pub use schedules::{
    Schedule, ScheduleManifest, ScheduleRequest, ScheduleRun, ScheduleRunStatus, ScheduleRunTrigger, ScheduleState,
};
pub use sessions::{
    CreateSessionAgent, CreateSessionRequest, Session, SessionAgentNameRef, SessionAgentSpecBody, SessionEventItem,
};
pub use turns::{CreateTurnRequest, PreviousTurn, Turn};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn previous_turn_is_its_text_and_any_text_reads() {
        for (value, text) in [
            (PreviousTurn::Auto, "auto"),
            (PreviousTurn::None, "none"),
            (PreviousTurn::Id("t1".into()), "t1"),
        ] {
            assert_eq!(serde_json::to_value(&value).unwrap(), json!(text));
            assert_eq!(serde_json::from_value::<PreviousTurn>(json!(text)).unwrap(), value);
        }
        // The server refuses the empty id itself, with its own message.
        assert_eq!(
            serde_json::from_value::<PreviousTurn>(json!("")).unwrap(),
            PreviousTurn::Id(String::new())
        );
        let error = serde_json::from_value::<PreviousTurn>(json!(5)).unwrap_err();
        assert_eq!(error.to_string(), "invalid type: integer `5`, expected a string");
    }

    #[test]
    fn a_page_leaves_out_absent_tokens_and_reads_the_reference_s() {
        let page = Page::new(vec![1, 2], Pagination::new(2, None));
        assert_eq!(
            serde_json::to_string(&page).unwrap(),
            r#"{"data":[1,2],"pagination":{"limit":2}}"#
        );
        let next = Pagination::new(2, Some("n".into()));
        assert_eq!(
            serde_json::to_string(&next).unwrap(),
            r#"{"next_page_token":"n","limit":2}"#
        );
        let read: Page<u32> = serde_json::from_value(
            json!({"data": [], "pagination": {"limit": 5, "previous_page_token": "p", "other": 1}}),
        )
        .unwrap();
        assert_eq!(read.pagination.previous_page_token.as_deref(), Some("p"));
        assert_eq!(read.pagination.next_page_token, None);
    }

    #[test]
    fn health_is_written_as_the_server_always_wrote_it() {
        let ok = Health::new(
            Health::OK,
            Some("1".into()),
            Some(DatabaseHealth::new(Health::OK, None)),
        );
        assert_eq!(
            serde_json::to_string(&ok).unwrap(),
            r#"{"status":"ok","version":"1","database":{"status":"ok"}}"#
        );
        let down = Health::new(
            Health::UNAVAILABLE,
            Some("1".into()),
            Some(DatabaseHealth::new(Health::UNAVAILABLE, Some("disk full".into()))),
        );
        assert_eq!(
            serde_json::to_string(&down).unwrap(),
            r#"{"status":"unavailable","version":"1","database":{"status":"unavailable","reason":"disk full"}}"#
        );
        // The reference's answer has neither database nor, sometimes, version.
        let reference: Health = serde_json::from_value(json!({"status": "ok"})).unwrap();
        assert!(reference.is_ok());
    }

    #[test]
    fn a_new_session_names_its_agent_or_carries_a_spec() {
        let named: CreateSessionRequest = serde_json::from_value(json!({"agent": {"name": "helper"}})).unwrap();
        assert_eq!(
            named.agent,
            CreateSessionAgent::Named(SessionAgentNameRef::new("helper"))
        );
        assert_eq!(
            serde_json::to_value(&named).unwrap(),
            json!({"agent": {"name": "helper"}})
        );
        // A bad spec is reported as the spec's error, not as "no variant matched".
        let error = serde_json::from_value::<CreateSessionRequest>(json!({"agent": {"spec": {"model": 1}}}))
            .unwrap_err()
            .to_string();
        assert!(!error.contains("did not match any variant"), "{error}");
        assert!(serde_json::from_value::<CreateSessionRequest>(json!({"agent": {"name": "a", "x": 1}})).is_err());
    }

    #[test]
    fn a_turn_request_leaves_out_what_is_not_set() {
        let request = CreateTurnRequest::new(Vec::new(), Some(PreviousTurn::None), Some(false));
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            json!({"input": [], "previous_turn_id": "none", "stream": false})
        );
        assert_eq!(
            serde_json::to_value(CreateTurnRequest::default()).unwrap(),
            json!({"input": []})
        );
        let read: CreateTurnRequest = serde_json::from_value(json!({"previous_turn_id": null})).unwrap();
        assert_eq!(read, CreateTurnRequest::default());
    }
}

//! Sessions: create, update, delete (with everything under them) and the keyset-paged listing.

use std::collections::BTreeMap;

use trueforge_protocol::SessionAgent;

use super::state::State;
use crate::error::{InputError, StoreError, StoreResult};
use crate::session::model::*;
use crate::session::page::{self, Cursor};
use crate::time::Timestamp;

impl State {
    pub(super) fn create_session(&mut self, session: NewSession) -> StoreResult<SessionRecord> {
        if self.sessions.contains_key(&session.session_id) {
            return Err(StoreError::SessionAlreadyExists {
                session_id: session.session_id,
            });
        }
        let now = Timestamp::now();
        let record = SessionRecord {
            tenant_id: session.tenant_id,
            session_id: session.session_id.clone(),
            created_by: session.created_by,
            agent: session.agent,
            title: None,
            last_turn_id: None,
            created_at: now,
            updated_at: now,
            custom: session.custom,
        };
        self.sessions.insert(session.session_id, record.clone());
        Ok(record)
    }

    pub(super) fn session_costs(
        &self,
        tenant_id: &TenantId,
        session_ids: &[SessionId],
    ) -> BTreeMap<SessionId, SessionCost> {
        let mut costs: BTreeMap<SessionId, SessionCost> = BTreeMap::new();
        for row in self.turns.values() {
            let summary = &row.summary;
            if summary.tenant_id != *tenant_id
                || !session_ids.contains(&summary.session_id)
                || !summary.state.is_terminal()
            {
                continue;
            }
            costs
                .entry(summary.session_id.clone())
                .or_default()
                .add_turn(summary.state.metrics());
        }
        costs
    }

    pub(super) fn delete_session(&mut self, tenant_id: &TenantId, session_id: &SessionId) -> StoreResult<()> {
        if self.session(tenant_id, session_id).is_none() {
            return Ok(());
        }
        self.sessions.remove(session_id);
        self.turns.retain(|(session, _), _| session != session_id);
        self.threads.retain(|(session, _, _), _| session != session_id);
        self.events.retain(|(session, _, _), _| session != session_id);
        self.idempotency_keys.retain(|(session, _), _| session != session_id);
        let segments: Vec<i64> = self
            .segments
            .iter()
            .filter(|(_, s)| s.session_id == *session_id)
            .map(|(id, _)| *id)
            .collect();
        for id in segments {
            if let Some(segment) = self.segments.remove(&id) {
                for message in segment.own {
                    self.messages.remove(&message);
                }
            }
        }
        Ok(())
    }

    pub(super) fn update_session(
        &mut self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        update: SessionUpdate,
    ) -> StoreResult<SessionRecord> {
        let record = self
            .sessions
            .get_mut(session_id)
            .filter(|session| session.tenant_id == *tenant_id)
            .ok_or_else(|| StoreError::SessionNotFound {
                session_id: session_id.clone(),
            })?;
        if let Some(spec) = update.agent_spec {
            if !matches!(record.agent, SessionAgent::Inline { .. }) {
                return Err(InputError::NamedAgentReplaced.into());
            }
            record.agent = SessionAgent::Inline { spec };
        }
        if let Some(title) = update.title {
            record.title = title;
        }
        record.updated_at = Timestamp::now().max(record.updated_at.plus_millis(1));
        Ok(record.clone())
    }

    pub(super) fn list_sessions(
        &self,
        tenant_id: &TenantId,
        filter: &SessionFilter,
        page: &PageRequest,
        after: Option<(i64, SessionId)>,
    ) -> StoreResult<Page<SessionRecord>> {
        let mut rows: Vec<&SessionRecord> = self
            .sessions
            .values()
            .filter(|s| s.tenant_id == *tenant_id)
            .filter(|s| filter.created_from.is_none_or(|from| s.created_at >= from))
            .filter(|s| filter.created_to.is_none_or(|to| s.created_at <= to))
            .filter(|s| filter.created_by.as_ref().is_none_or(|by| &s.created_by == by))
            .filter(|s| {
                filter
                    .agent_id
                    .as_ref()
                    .is_none_or(|agent_id| matches!(&s.agent, SessionAgent::Reference { id, .. } if id == agent_id))
            })
            .collect();
        let desc = filter.order == SortOrder::Desc;
        rows.sort_by(|a, b| {
            let ordering =
                (a.updated_at, a.session_id.as_str().as_bytes()).cmp(&(b.updated_at, b.session_id.as_str().as_bytes()));
            if desc { ordering.reverse() } else { ordering }
        });
        let rows: Vec<SessionRecord> = rows
            .into_iter()
            .filter(|s| match &after {
                None => true,
                Some((updated_at, id)) => {
                    let key = (s.updated_at.millis(), s.session_id.as_str().as_bytes());
                    let cursor = (*updated_at, id.as_str().as_bytes());
                    if desc { key < cursor } else { key > cursor }
                }
            })
            .take(page.limit as usize + 1)
            .cloned()
            .collect();
        let (data, next_page_token) = page::finish_page(rows, page.limit, |s| Cursor::Sessions {
            desc,
            updated_at: s.updated_at.millis(),
            session_id: s.session_id.clone(),
        });
        Ok(Page {
            data,
            limit: page.limit,
            next_page_token,
        })
    }
}

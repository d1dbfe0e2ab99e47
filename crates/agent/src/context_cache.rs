//! The contexts of turns that ended here, kept for the turn that continues them.
//!
//! Reading a conversation back from the store costs time in proportion to its length (every body read and
//! parsed), and it was most of what made a trivial turn at the end of a long conversation slow. A turn
//! that ended here already holds its threads' contexts in memory: the runtime keeps them, one entry per
//! session (the latest turn), and the next turn of the session takes them back if the store proves them
//! current (see [`SessionStore::get_turn_reusing`](trueforge_store::SessionStore::get_turn_reusing)).
//!
//! Why a copy can be trusted: only turns that ended `done` by this very run are kept, and a terminal
//! turn's contexts never change again (the store refuses every write to it). The store checks each
//! thread's length; the runtime checks the turn's stored `completed_at` against the one its own terminal
//! write got, which tells this turn from another of the same ids (a session deleted and made again).
//! Debug builds also compare every copy taken with the store's own read.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use trueforge_protocol::sync::lock;
use trueforge_protocol::{ContextMessage, SessionId, TenantId, ThreadId, TurnId};
use trueforge_store::session::model::TurnKey;

use crate::context::ModelMessages;

/// The contexts of one turn's threads, by thread id, as they were when it ended.
pub type ThreadContexts = BTreeMap<ThreadId, Vec<ContextMessage>>;

/// The kept contexts of one session's latest turn that ended here.
#[derive(Debug)]
pub struct KeptContexts {
    /// The store's `completed_at` of the turn, as its terminal write returned it.
    pub completed_at: String,
    pub contexts: ThreadContexts,
    /// The contexts converted into model messages, so the next turn's first model call converts only
    /// what it adds.
    pub model_messages: BTreeMap<ThreadId, ModelMessages>,
}

impl KeptContexts {
    /// Each thread's context length: what the store checks.
    pub fn lengths(&self) -> BTreeMap<ThreadId, usize> {
        self.contexts
            .iter()
            .map(|(thread_id, context)| (thread_id.clone(), context.len()))
            .collect()
    }
}

/// Bounded by the number of messages kept across sessions; the least recently kept session goes first.
#[derive(Debug)]
pub struct ContextCache {
    capacity: usize,
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    /// By (tenant, session).
    by_session: HashMap<(TenantId, SessionId), Entry>,
    messages: usize,
    /// Orders entries for eviction.
    clock: u64,
}

#[derive(Debug)]
struct Entry {
    turn_id: TurnId,
    kept: KeptContexts,
    messages: usize,
    kept_at: u64,
}

impl ContextCache {
    /// A cache of at most `capacity` messages (0: nothing is kept).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Mutex::new(Entries::default()),
        }
    }

    /// Keeps the contexts a turn ended with, replacing what the session had kept. A turn larger than the
    /// whole cache is not kept.
    pub fn keep(&self, key: &TurnKey, kept: KeptContexts) {
        let messages: usize = kept.contexts.values().map(Vec::len).sum();
        let session = (key.tenant_id.clone(), key.session_id.clone());
        // Dropping a long conversation takes a while: done after the lock is released.
        let mut dropped = Vec::new();
        {
            let mut entries = lock(&self.inner);
            if let Some(old) = entries.by_session.remove(&session) {
                entries.messages -= old.messages;
                dropped.push(old);
            }
            if messages <= self.capacity {
                while entries.messages + messages > self.capacity {
                    let Some(oldest) = entries
                        .by_session
                        .iter()
                        .min_by_key(|(_, entry)| entry.kept_at)
                        .map(|(session, _)| session.clone())
                    else {
                        break;
                    };
                    if let Some(old) = entries.by_session.remove(&oldest) {
                        entries.messages -= old.messages;
                        dropped.push(old);
                    }
                }
                entries.clock += 1;
                let kept_at = entries.clock;
                entries.messages += messages;
                entries.by_session.insert(
                    session,
                    Entry {
                        turn_id: key.turn_id.clone(),
                        kept,
                        messages,
                        kept_at,
                    },
                );
            }
        }
        drop(dropped);
    }

    /// Takes the contexts kept for `key`'s turn, if its session's entry is for that turn (a fork from an
    /// earlier turn leaves the entry for the latest one in place).
    pub fn take(&self, key: &TurnKey) -> Option<KeptContexts> {
        let mut entries = lock(&self.inner);
        let session = (key.tenant_id.clone(), key.session_id.clone());
        if entries.by_session.get(&session)?.turn_id != key.turn_id {
            return None;
        }
        let entry = entries.by_session.remove(&session)?;
        entries.messages -= entry.messages;
        Some(entry.kept)
    }

    /// Forgets what a session kept (the session is being deleted).
    pub fn forget(&self, tenant_id: &TenantId, session_id: &SessionId) {
        let session = (tenant_id.clone(), session_id.clone());
        let removed = {
            let mut entries = lock(&self.inner);
            let removed = entries.by_session.remove(&session);
            if let Some(entry) = &removed {
                entries.messages -= entry.messages;
            }
            removed
        };
        drop(removed);
    }

    /// How many messages are kept, across sessions.
    #[cfg(test)]
    fn messages(&self) -> usize {
        lock(&self.inner).messages
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn kept(messages: usize) -> KeptContexts {
        KeptContexts {
            completed_at: "2026-12-02T00:00:00.000Z".to_owned(),
            contexts: BTreeMap::from([(
                ThreadId::main(),
                (0..messages)
                    .map(|n| ContextMessage::user_text(n.to_string()))
                    .collect(),
            )]),
            model_messages: BTreeMap::new(),
        }
    }

    #[test]
    fn a_session_keeps_its_latest_turn_and_gives_it_once() {
        let cache = ContextCache::new(100);
        cache.keep(&TurnKey::new("t", "s", "turn-1"), kept(3));
        cache.keep(&TurnKey::new("t", "s", "turn-2"), kept(4));
        assert_eq!(cache.messages(), 4);
        assert!(
            cache.take(&TurnKey::new("t", "s", "turn-1")).is_none(),
            "replaced by turn-2"
        );
        assert!(
            cache.take(&TurnKey::new("other", "s", "turn-2")).is_none(),
            "another tenant"
        );
        let taken = cache.take(&TurnKey::new("t", "s", "turn-2")).unwrap();
        assert_eq!(taken.lengths(), BTreeMap::from([(ThreadId::main(), 4)]));
        assert!(cache.take(&TurnKey::new("t", "s", "turn-2")).is_none(), "taken once");
        assert_eq!(cache.messages(), 0);
    }

    #[test]
    fn the_least_recently_kept_session_goes_first_and_an_oversized_turn_is_not_kept() {
        let cache = ContextCache::new(10);
        cache.keep(&TurnKey::new("t", "a", "turn-1"), kept(4));
        cache.keep(&TurnKey::new("t", "b", "turn-1"), kept(4));
        cache.keep(&TurnKey::new("t", "c", "turn-1"), kept(4));
        assert_eq!(cache.messages(), 8);
        assert!(cache.take(&TurnKey::new("t", "a", "turn-1")).is_none(), "evicted");
        assert!(cache.take(&TurnKey::new("t", "b", "turn-1")).is_some());
        cache.forget(&"t".into(), &"c".into());
        assert_eq!(cache.messages(), 0);
        cache.keep(&TurnKey::new("t", "c", "turn-1"), kept(4));
        cache.keep(&TurnKey::new("t", "c", "turn-2"), kept(11));
        assert_eq!(
            cache.messages(),
            0,
            "too big to keep, and the session's older turn is gone too"
        );
        assert!(cache.take(&TurnKey::new("t", "c", "turn-1")).is_none());
    }
}

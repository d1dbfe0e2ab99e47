//! Opaque keyset page tokens: base64url of a small JSON cursor naming the list it belongs to, so a token is
//! never valid for another list and pages stay stable under concurrent inserts.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use super::model::{MAX_PAGE_LIMIT, PageRequest, SessionId, SortOrder, TurnId};
use crate::error::{InputError, StoreError, StoreResult};

/// Where the next page of a list starts (exclusive).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "k")]
pub(crate) enum Cursor {
    /// After this `(updated_at, session_id)` in the given order.
    #[serde(rename = "s")]
    Sessions {
        desc: bool,
        updated_at: i64,
        session_id: SessionId,
    },
    /// After this turn insertion ordinal.
    #[serde(rename = "t")]
    Turns { ord: i64 },
    /// After this event seq in the given order.
    #[serde(rename = "e")]
    TurnEvents { desc: bool, seq: u64 },
    /// After event `seq` of the turn `depth` steps above `anchor` on the branch ending at `anchor`.
    #[serde(rename = "f")]
    SessionFeed { anchor: TurnId, depth: i64, seq: u64 },
}

impl Cursor {
    pub(crate) fn encode(&self) -> String {
        // Serialising this enum cannot fail: it holds only strings and integers.
        let json = serde_json::to_vec(self).unwrap_or_default();
        URL_SAFE_NO_PAD.encode(json)
    }

    fn decode(token: &str) -> StoreResult<Self> {
        let bytes = URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|_| StoreError::InvalidPageToken)?;
        serde_json::from_slice(&bytes).map_err(|_| StoreError::InvalidPageToken)
    }
}

/// Validates a page request and decodes its token. `None`: the first page.
pub(crate) fn open_page(page: &PageRequest) -> StoreResult<Option<Cursor>> {
    if page.limit == 0 || page.limit > MAX_PAGE_LIMIT {
        return Err(InputError::PageLimit {
            limit: page.limit,
            max: MAX_PAGE_LIMIT,
        }
        .into());
    }
    match page.page_token.as_deref() {
        None | Some("") => Ok(None),
        Some(token) => Cursor::decode(token).map(Some),
    }
}

pub(crate) fn sessions_cursor(cursor: Option<Cursor>, order: SortOrder) -> StoreResult<Option<(i64, SessionId)>> {
    match cursor {
        None => Ok(None),
        Some(Cursor::Sessions {
            desc,
            updated_at,
            session_id,
        }) if desc == (order == SortOrder::Desc) => Ok(Some((updated_at, session_id))),
        Some(_) => Err(StoreError::InvalidPageToken),
    }
}

pub(crate) fn turns_cursor(cursor: Option<Cursor>) -> StoreResult<Option<i64>> {
    match cursor {
        None => Ok(None),
        Some(Cursor::Turns { ord }) => Ok(Some(ord)),
        Some(_) => Err(StoreError::InvalidPageToken),
    }
}

pub(crate) fn turn_events_cursor(cursor: Option<Cursor>, order: SortOrder) -> StoreResult<Option<u64>> {
    match cursor {
        None => Ok(None),
        Some(Cursor::TurnEvents { desc, seq }) if desc == (order == SortOrder::Desc) => Ok(Some(seq)),
        Some(_) => Err(StoreError::InvalidPageToken),
    }
}

/// The anchor and position of a session-feed cursor.
pub(crate) struct FeedCursor {
    pub anchor: TurnId,
    pub after: Option<(i64, u64)>,
}

pub(crate) fn feed_cursor(cursor: Option<Cursor>) -> StoreResult<Option<FeedCursor>> {
    match cursor {
        None => Ok(None),
        Some(Cursor::SessionFeed { anchor, depth, seq }) => Ok(Some(FeedCursor {
            anchor,
            after: Some((depth, seq)),
        })),
        Some(_) => Err(StoreError::InvalidPageToken),
    }
}

/// Cuts a `limit + 1` fetch down to a page, minting the next token from the last row kept.
pub(crate) fn finish_page<T>(mut rows: Vec<T>, limit: u32, next: impl Fn(&T) -> Cursor) -> (Vec<T>, Option<String>) {
    let limit = limit as usize;
    if rows.len() > limit {
        rows.truncate(limit);
        let token = rows.last().map(|row| next(row).encode());
        (rows, token)
    } else {
        (rows, None)
    }
}

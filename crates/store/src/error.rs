//! The one error type of the store crate. Every constraint a caller can hit has its own variant, so no raw
//! database error ever reaches a caller; unexpected backend failures are `Backend`.

use trueforge_protocol::{SessionId, ThreadId, TurnId, TurnState};

/// Errors of the session store and the settings stores.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    // ---- session store: not found ----
    #[error("session '{session_id}' not found")]
    SessionNotFound { session_id: SessionId },
    #[error("turn '{turn_id}' not found")]
    TurnNotFound { turn_id: TurnId },
    #[error("previous turn '{turn_id}' not found in this session")]
    PreviousTurnNotFound { turn_id: TurnId },
    #[error("thread '{thread_id}' not found on turn '{turn_id}'")]
    ThreadNotFound { turn_id: TurnId, thread_id: ThreadId },

    // ---- session store: conflicts ----
    #[error("session '{session_id}' already exists")]
    SessionAlreadyExists { session_id: SessionId },
    #[error("turn '{turn_id}' already exists")]
    TurnAlreadyExists { turn_id: TurnId },
    #[error("thread '{thread_id}' already exists on turn '{turn_id}'")]
    ThreadAlreadyExists { turn_id: TurnId, thread_id: ThreadId },
    #[error("event '{event_id}' already exists on turn '{turn_id}'")]
    EventAlreadyExists { turn_id: TurnId, event_id: String },
    #[error("event sequence {seq} on turn '{turn_id}' is not after the last stored sequence {last_seq}")]
    EventSequenceConflict { turn_id: TurnId, seq: u64, last_seq: u64 },
    #[error("previous turn '{previous_turn_id}' is still running")]
    PreviousTurnRunning { previous_turn_id: TurnId },
    #[error("turn '{turn_id}' is not running")]
    TurnNotRunning { turn_id: TurnId, state: Box<TurnState> },
    #[error("turn '{turn_id}' is leased by another owner")]
    LeaseHeldByOther { turn_id: TurnId, owner: Option<String> },
    /// A write with a lease's fencing token after another executor took the turn over: the writer lost
    /// its lease (it stalled past it) and must stop.
    #[error("turn '{turn_id}' was taken over (lease epoch {current}); this writer's epoch {epoch} is stale")]
    StaleLease { turn_id: TurnId, epoch: u64, current: u64 },
    /// The session already has a turn created with this idempotency key; `fingerprint` is the one stored
    /// with it, so the caller can tell a retry of that request from another request reusing the key.
    #[error("the idempotency key already created turn '{turn_id}'")]
    IdempotencyKeyUsed { turn_id: TurnId, fingerprint: String },

    // ---- session store: caller misuse ----
    #[error("invalid input: {0}")]
    InvalidInput(#[from] InputError),
    #[error("invalid page token")]
    InvalidPageToken,

    // ---- settings stores ----
    #[error("{kind} '{name}' already exists")]
    NameConflict { kind: &'static str, name: String },
    #[error("{kind} '{name}' not found")]
    NotFound { kind: &'static str, name: String },
    #[error("{0}")]
    MissingStoredSecret(String),
    #[error(transparent)]
    Secret(#[from] crate::crypto::SecretError),

    // ---- anything else the backend reports ----
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("storage backend error: {0}")]
    Backend(String),
    /// The database could not store or read its files: the disk is full, an I/O error, a read-only or
    /// damaged file. Nothing was written; the same call can succeed once the cause is gone.
    #[error("the database cannot store data: {0}")]
    Storage(String),
    /// The database gave up on the write because of a concurrent one (deadlock, serialization failure, a
    /// lock conflict it could not record); nothing was written and the same call may succeed when retried.
    #[error("the write collided with a concurrent one: {0}")]
    Transient(String),
}

impl StoreError {
    /// True for the not-found family (maps to 404 at the HTTP edge).
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            Self::SessionNotFound { .. }
                | Self::TurnNotFound { .. }
                | Self::PreviousTurnNotFound { .. }
                | Self::ThreadNotFound { .. }
                | Self::NotFound { .. }
        )
    }

    /// True for the conflict family (maps to 409 at the HTTP edge).
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            Self::SessionAlreadyExists { .. }
                | Self::TurnAlreadyExists { .. }
                | Self::ThreadAlreadyExists { .. }
                | Self::EventAlreadyExists { .. }
                | Self::EventSequenceConflict { .. }
                | Self::PreviousTurnRunning { .. }
                | Self::TurnNotRunning { .. }
                | Self::LeaseHeldByOther { .. }
                | Self::StaleLease { .. }
                | Self::IdempotencyKeyUsed { .. }
                | Self::NameConflict { .. }
        )
    }

    /// True when the database, not the call, failed (its storage, a collision, anything unexpected): the
    /// same call may succeed later. False for the answers about the data (not found, conflict, bad input).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Storage(_) | Self::Backend(_) | Self::Transient(_))
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        if let sqlx::Error::Database(db) = &error {
            let code = db.code();
            if matches!(
                code.as_deref(),
                Some(UNTRANSLATABLE_CHARACTER | CHARACTER_NOT_IN_REPERTOIRE)
            ) {
                // Postgres stores no NUL character in text or jsonb; the caller's data is what cannot be stored.
                return Self::InvalidInput(InputError::Unstorable(error));
            }
            let transient = matches!(code.as_deref(), Some(SERIALIZATION_FAILURE | DEADLOCK_DETECTED))
                // Postgres 15 can refuse a row lock it cannot record ("new multixact has more than one
                // updating member") when several writers and a foreign-key check meet on one row.
                || (code.as_deref() == Some(INTERNAL_ERROR) && db.message().contains("multixact"));
            if transient {
                return Self::Transient(db.message().to_owned());
            }
            if matches!(code.as_deref(), Some(DISK_FULL | OUT_OF_MEMORY | IO_ERROR)) {
                return Self::Storage(db.to_string());
            }
        }
        Self::Backend(error.to_string())
    }
}

/// Postgres SQLSTATEs of a server that cannot store data. (SQLite's storage failures are classified where
/// its errors are, `crate::sql::sqlite`.)
const DISK_FULL: &str = "53100";
const OUT_OF_MEMORY: &str = "53200";
const IO_ERROR: &str = "58030";

const SERIALIZATION_FAILURE: &str = "40001";
const DEADLOCK_DETECTED: &str = "40P01";
const INTERNAL_ERROR: &str = "XX000";

/// Postgres SQLSTATEs for text it cannot represent (a `\u0000` escape in jsonb, a NUL byte in text).
const UNTRANSLATABLE_CHARACTER: &str = "22P05";
const CHARACTER_NOT_IN_REPERTOIRE: &str = "22021";

impl From<sqlx::migrate::MigrateError> for StoreError {
    fn from(error: sqlx::migrate::MigrateError) -> Self {
        Self::Backend(format!("migration failed: {error}"))
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(error: serde_json::Error) -> Self {
        Self::Corrupt(error.to_string())
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// What was wrong with a call's input ([`StoreError::InvalidInput`]). The messages reach the API's 422
/// answers as they are.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// `kind` names what the id is of (`session`, `turn`, `thread`, `event`).
    #[error("{kind} id must not be empty")]
    EmptyId { kind: &'static str },
    #[error("{kind} id must not contain a NUL character")]
    IdWithNul { kind: &'static str },
    #[error("{kind} id must be at most {max} bytes")]
    IdTooLong { kind: &'static str, max: usize },
    #[error("new thread '{0}' already exists on the previous turn or is listed twice")]
    NewThreadExists(ThreadId),
    #[error("context append names unknown thread '{0}'")]
    AppendToUnknownThread(ThreadId),
    #[error("capability state names unknown thread '{0}'")]
    CapabilityStateOfUnknownThread(ThreadId),
    #[error("capability state for thread '{0}' is listed twice")]
    CapabilityStateListedTwice(ThreadId),
    #[error("capability state for thread '{0}' is missing")]
    CapabilityStateMissing(ThreadId),
    #[error("a terminal write needs a terminal state, not running")]
    RunningIsNotTerminal,
    #[error("sequence number {0} is out of range")]
    SeqOutOfRange(u64),
    #[error("a lease needs a positive time to live")]
    LeaseWithoutTime,
    #[error("limit must be between 1 and {max}, got {limit}")]
    PageLimit { limit: u32, max: u32 },
    #[error("search query has no words")]
    EmptySearchQuery,
    #[error("too many messages")]
    TooManyMessages,
    #[error("the agent of a session bound to a named agent cannot be replaced")]
    NamedAgentReplaced,
    /// An `upsert_*_with` update returned a manifest with another name.
    #[error("{kind} '{name}' cannot be renamed to '{new_name}' by an update")]
    Renamed {
        kind: &'static str,
        name: String,
        new_name: String,
    },
    /// Text Postgres cannot hold (a NUL character); the message is the database's.
    #[error("the data cannot be stored: {}", database_message(.0))]
    Unstorable(#[source] sqlx::Error),
    /// The SQLite writer rolled a read-modify-write back because its caller failed or went away; never the
    /// answer a caller sees.
    #[error("the read-modify-write was abandoned by its caller")]
    Abandoned,
}

/// The database's own message of a refused statement (its `Display` adds the SQLSTATE's wording).
fn database_message(error: &sqlx::Error) -> &str {
    match error {
        sqlx::Error::Database(db) => db.message(),
        _ => "",
    }
}

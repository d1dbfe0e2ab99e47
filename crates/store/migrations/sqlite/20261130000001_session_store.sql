-- Session store. A thread's context is a chain of segments: a segment inherits the first `parent_len`
-- items of its parent's chain and adds its own. Continuation and fork add an empty segment; compaction
-- starts a new root segment that `supersedes` the old one. Bodies are written once and never updated.
-- Times are epoch milliseconds from the store's clock. Ids compare byte-wise (BINARY collation).

CREATE TABLE session (
    session_id   TEXT NOT NULL PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    agent        TEXT NOT NULL,          -- JSON SessionAgent
    agent_id     TEXT,                   -- the named agent's id, for filtering
    title        TEXT,
    last_turn_id TEXT,
    custom       TEXT,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX session_tenant_updated_idx ON session (tenant_id, updated_at, session_id);
CREATE INDEX session_tenant_agent_idx ON session (tenant_id, agent_id) WHERE agent_id IS NOT NULL;

CREATE TABLE turn (
    ord              INTEGER PRIMARY KEY AUTOINCREMENT,   -- insertion order: the keyset of turn listings
    session_id       TEXT NOT NULL REFERENCES session (session_id) ON DELETE CASCADE,
    turn_id          TEXT NOT NULL,
    tenant_id        TEXT NOT NULL,
    first_turn_id    TEXT NOT NULL,
    previous_turn_id TEXT,
    ancestor_ids     TEXT NOT NULL,
    status           TEXT NOT NULL,
    state            TEXT NOT NULL,
    input            TEXT NOT NULL,
    custom           TEXT,
    mcp_servers      TEXT,
    sandbox_info     TEXT,
    last_seq         INTEGER NOT NULL DEFAULT 0,
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    UNIQUE (session_id, turn_id)
) STRICT;
CREATE INDEX turn_session_ord_idx ON turn (session_id, ord);
CREATE INDEX turn_lease_idx ON turn (lease_expires_at) WHERE status = 'running' AND lease_expires_at IS NOT NULL;

CREATE TABLE context_segment (
    segment_id            INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id            TEXT NOT NULL REFERENCES session (session_id) ON DELETE CASCADE,
    turn_id               TEXT NOT NULL,
    thread_id             TEXT NOT NULL,
    parent_segment_id     INTEGER,
    parent_len            INTEGER NOT NULL,
    supersedes_segment_id INTEGER,
    len                   INTEGER NOT NULL
) STRICT;
CREATE INDEX context_segment_session_idx ON context_segment (session_id);

CREATE TABLE context_message (
    message_id INTEGER PRIMARY KEY AUTOINCREMENT,
    segment_id INTEGER NOT NULL REFERENCES context_segment (segment_id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    turn_id    TEXT NOT NULL,
    pos        INTEGER NOT NULL,         -- absolute position in the segment's chain
    body       TEXT NOT NULL,            -- JSON ContextMessage
    index_text TEXT NOT NULL,            -- the store's own word tokens (see search.rs)
    UNIQUE (segment_id, pos)
) STRICT;

CREATE VIRTUAL TABLE context_message_fts USING fts5 (
    index_text,
    content = 'context_message',
    content_rowid = 'message_id',
    -- index_text already holds the store's own tokens separated by spaces: `ascii` splits only on ASCII
    -- separators, so every token stays whole (unicode61 would split words at combining marks).
    tokenize = 'ascii'
);
CREATE TRIGGER context_message_fts_insert AFTER INSERT ON context_message BEGIN
    INSERT INTO context_message_fts (rowid, index_text) VALUES (new.message_id, new.index_text);
END;
CREATE TRIGGER context_message_fts_delete AFTER DELETE ON context_message BEGIN
    INSERT INTO context_message_fts (context_message_fts, rowid, index_text)
    VALUES ('delete', old.message_id, old.index_text);
END;

CREATE TABLE turn_thread (
    session_id       TEXT NOT NULL REFERENCES session (session_id) ON DELETE CASCADE,
    turn_id          TEXT NOT NULL,
    thread_id        TEXT NOT NULL,
    segment_id       INTEGER NOT NULL,
    parent           TEXT,
    agent_info       TEXT,
    completion       TEXT,
    usage            TEXT NOT NULL,
    capability_state TEXT,
    PRIMARY KEY (session_id, turn_id, thread_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE turn_event (
    session_id TEXT NOT NULL REFERENCES session (session_id) ON DELETE CASCADE,
    turn_id    TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    event_id   TEXT NOT NULL,
    event      TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, turn_id, seq),
    UNIQUE (session_id, turn_id, event_id)
) STRICT, WITHOUT ROWID;

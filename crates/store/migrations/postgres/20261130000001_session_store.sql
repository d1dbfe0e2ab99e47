-- Session store. A thread's context is a chain of segments: a segment inherits the first `parent_len`
-- items of its parent's chain and adds its own. Continuation and fork add an empty segment; compaction
-- starts a new root segment that `supersedes` the old one. Bodies are written once and never updated.
-- Times are epoch milliseconds from the database clock. Ids use COLLATE "C": byte-wise comparison.

CREATE TABLE session (
    session_id   text COLLATE "C" NOT NULL PRIMARY KEY,
    tenant_id    text COLLATE "C" NOT NULL,
    created_by   text NOT NULL,
    agent        json NOT NULL,           -- json, not jsonb: the spec keeps its text and key order
    agent_id     text COLLATE "C",
    title        text,
    last_turn_id text COLLATE "C",
    custom       jsonb,
    created_at   bigint NOT NULL,
    updated_at   bigint NOT NULL
) WITH (fillfactor = 85);
CREATE INDEX session_tenant_updated_idx ON session (tenant_id, updated_at, session_id);
CREATE INDEX session_tenant_agent_idx ON session (tenant_id, agent_id) WHERE agent_id IS NOT NULL;

CREATE TABLE turn (
    ord              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id       text COLLATE "C" NOT NULL REFERENCES session (session_id) ON DELETE CASCADE,
    turn_id          text COLLATE "C" NOT NULL,
    tenant_id        text COLLATE "C" NOT NULL,
    first_turn_id    text COLLATE "C" NOT NULL,
    previous_turn_id text COLLATE "C",
    ancestor_ids     jsonb NOT NULL,
    status           text NOT NULL,
    state            jsonb NOT NULL,
    input            jsonb NOT NULL,
    custom           jsonb,
    mcp_servers      jsonb,
    sandbox_info     jsonb,
    last_seq         bigint NOT NULL DEFAULT 0,
    lease_owner      text,
    lease_expires_at bigint,
    created_at       bigint NOT NULL,
    updated_at       bigint NOT NULL,
    UNIQUE (session_id, turn_id)
) WITH (fillfactor = 80);
CREATE INDEX turn_session_ord_idx ON turn (session_id, ord);
CREATE INDEX turn_lease_idx ON turn (lease_expires_at) WHERE status = 'running' AND lease_expires_at IS NOT NULL;

CREATE TABLE context_segment (
    segment_id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id            text COLLATE "C" NOT NULL REFERENCES session (session_id) ON DELETE CASCADE,
    turn_id               text COLLATE "C" NOT NULL,
    thread_id             text COLLATE "C" NOT NULL,
    parent_segment_id     bigint,
    parent_len            bigint NOT NULL,
    supersedes_segment_id bigint,
    len                   bigint NOT NULL
);
CREATE INDEX context_segment_session_idx ON context_segment (session_id);

CREATE TABLE context_message (
    message_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    segment_id bigint NOT NULL REFERENCES context_segment (segment_id) ON DELETE CASCADE,
    session_id text COLLATE "C" NOT NULL,
    turn_id    text COLLATE "C" NOT NULL,
    pos        bigint NOT NULL,
    body       jsonb NOT NULL,
    index_text text NOT NULL,
    UNIQUE (segment_id, pos)
);
-- index_text already holds the store's own tokens separated by spaces; they become lexemes as they are
-- (no text-search parser, which would drop or split some of them).
CREATE INDEX context_message_search_idx ON context_message
    USING gin (array_to_tsvector(string_to_array(index_text, ' ')));

CREATE TABLE turn_thread (
    session_id       text COLLATE "C" NOT NULL REFERENCES session (session_id) ON DELETE CASCADE,
    turn_id          text COLLATE "C" NOT NULL,
    thread_id        text COLLATE "C" NOT NULL,
    segment_id       bigint NOT NULL,
    parent           jsonb,
    agent_info       jsonb,
    completion       jsonb,
    usage            jsonb NOT NULL,
    capability_state jsonb,
    PRIMARY KEY (session_id, turn_id, thread_id)
) WITH (fillfactor = 80);

CREATE TABLE turn_event (
    session_id text COLLATE "C" NOT NULL REFERENCES session (session_id) ON DELETE CASCADE,
    turn_id    text COLLATE "C" NOT NULL,
    seq        bigint NOT NULL,
    event_id   text COLLATE "C" NOT NULL,
    event      jsonb NOT NULL,
    created_at bigint NOT NULL,
    PRIMARY KEY (session_id, turn_id, seq),
    UNIQUE (session_id, turn_id, event_id)
);

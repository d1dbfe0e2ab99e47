-- Scheduled agent runs. A schedule belongs to one user of one tenant (like a session); `next_run_at` is the
-- occurrence the dispatchers wait for, and the compare-and-set on it is how exactly one dispatcher claims an
-- occurrence. A run row records each claimed (or missed) occurrence and each manual run; while a dispatcher
-- starts its session it is `dispatching` with a lease (`lease_until`), so a run whose process died is taken
-- over.
CREATE TABLE schedule (
    tenant_id   TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    user_id     TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    task        TEXT    NOT NULL,
    cron        TEXT    NOT NULL,
    timezone    TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    next_run_at INTEGER,
    last_run_at INTEGER,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX schedule_owner_idx ON schedule (tenant_id, user_id, id);
CREATE INDEX schedule_due_idx ON schedule (next_run_at) WHERE state = 'active';

CREATE TABLE schedule_run (
    tenant_id          TEXT    NOT NULL,
    id                 TEXT    NOT NULL,
    schedule_id        TEXT    NOT NULL,
    due_at             INTEGER NOT NULL,
    status             TEXT    NOT NULL,
    trigger            TEXT    NOT NULL,
    session_id         TEXT,
    turn_id            TEXT,
    error              TEXT,
    missed_occurrences INTEGER NOT NULL,
    lease_until        INTEGER,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, schedule_id) REFERENCES schedule (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX schedule_run_schedule_idx ON schedule_run (tenant_id, schedule_id, id);
CREATE INDEX schedule_run_lease_idx ON schedule_run (lease_until) WHERE status = 'dispatching';

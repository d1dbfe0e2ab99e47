-- Scheduled agent runs. A schedule belongs to one user of one tenant (like a session); `next_run_at` is the
-- occurrence the dispatchers wait for, and the compare-and-set on it is how exactly one replica claims an
-- occurrence. A run row records each claimed (or missed) occurrence and each manual run; while a replica
-- starts its session it is `dispatching` with a lease (`lease_until`), so another replica can take over a
-- run whose replica died.
CREATE TABLE schedule (
    tenant_id   text COLLATE "C" NOT NULL,
    id          text COLLATE "C" NOT NULL,
    user_id     text COLLATE "C" NOT NULL,
    name        text             NOT NULL,
    agent_id    text COLLATE "C" NOT NULL,
    task        text             NOT NULL,
    cron        text             NOT NULL,
    timezone    text             NOT NULL,
    state       text             NOT NULL, -- 'active' or 'paused'
    next_run_at bigint,
    last_run_at bigint,
    created_at  bigint           NOT NULL,
    updated_at  bigint           NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX schedule_owner_idx ON schedule (tenant_id, user_id, id);
CREATE INDEX schedule_due_idx ON schedule (next_run_at) WHERE state = 'active';

CREATE TABLE schedule_run (
    tenant_id          text COLLATE "C" NOT NULL,
    id                 text COLLATE "C" NOT NULL,
    schedule_id        text COLLATE "C" NOT NULL,
    due_at             bigint           NOT NULL,
    status             text             NOT NULL, -- 'dispatching', 'started', 'missed' or 'failed'
    trigger            text             NOT NULL, -- 'schedule' or 'manual'
    session_id         text COLLATE "C",
    turn_id            text COLLATE "C",
    error              text,
    missed_occurrences bigint           NOT NULL,
    lease_until        bigint,
    created_at         bigint           NOT NULL,
    updated_at         bigint           NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, schedule_id) REFERENCES schedule (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX schedule_run_schedule_idx ON schedule_run (tenant_id, schedule_id, id);
CREATE INDEX schedule_run_lease_idx ON schedule_run (lease_until) WHERE status = 'dispatching';

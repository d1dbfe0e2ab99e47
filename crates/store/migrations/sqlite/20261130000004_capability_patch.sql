-- Setting one key of a thread's capability state as one statement: `INSERT INTO capability_patch (...)` runs
-- this trigger, which fences the turn, bumps its activity time and sets the key in place (see
-- 20261130000003_step_commit.sql for why one statement matters). A refused patch aborts with nothing written;
-- the store then replays it statement by statement to report the exact typed error.
CREATE VIEW capability_patch (tenant_id, session_id, turn_id, thread_id, path, state, now) AS
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL;

CREATE TRIGGER capability_patch_apply INSTEAD OF INSERT ON capability_patch BEGIN
    SELECT RAISE(ABORT, 'patch refused: turn not running')
    WHERE NOT EXISTS (
        SELECT 1 FROM turn
        WHERE tenant_id = NEW.tenant_id AND session_id = NEW.session_id AND turn_id = NEW.turn_id
          AND status = 'running'
    );
    SELECT RAISE(ABORT, 'patch refused: no such thread')
    WHERE NOT EXISTS (
        SELECT 1 FROM turn_thread
        WHERE session_id = NEW.session_id AND turn_id = NEW.turn_id AND thread_id = NEW.thread_id
    );
    UPDATE turn SET updated_at = MAX(updated_at, NEW.now)
    WHERE tenant_id = NEW.tenant_id AND session_id = NEW.session_id AND turn_id = NEW.turn_id;
    UPDATE turn_thread
    SET capability_state = json_set(COALESCE(capability_state, '{}'), NEW.path, json(NEW.state))
    WHERE session_id = NEW.session_id AND turn_id = NEW.turn_id AND thread_id = NEW.thread_id;
END;

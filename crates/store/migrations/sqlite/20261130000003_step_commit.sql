-- A thread step's commit as one statement: `INSERT INTO step_commit (payload) VALUES (?)` runs this trigger,
-- which applies the whole step (fence, events, last seq, usage, completion, context rows) atomically. One
-- statement is one round trip to sqlx's SQLite worker thread, where the same step written statement by
-- statement costs seven; on small writes those hand-offs, not SQLite, dominate (docs/performance.md).
-- A refused step aborts with nothing written; the store then replays it statement by statement to report
-- the exact typed error.
CREATE VIEW step_commit (payload) AS SELECT NULL;

CREATE TRIGGER step_commit_apply INSTEAD OF INSERT ON step_commit BEGIN
    SELECT RAISE(ABORT, 'step refused: turn not running or seq not above the last')
    WHERE NOT EXISTS (
        SELECT 1 FROM turn
        WHERE tenant_id = json_extract(NEW.payload, '$.tenant_id')
          AND session_id = json_extract(NEW.payload, '$.session_id')
          AND turn_id = json_extract(NEW.payload, '$.turn_id')
          AND status = 'running'
          AND last_seq < COALESCE(json_extract(NEW.payload, '$.first_seq'), last_seq + 1)
    );
    SELECT RAISE(ABORT, 'step refused: no such thread')
    WHERE NOT EXISTS (
        SELECT 1 FROM turn_thread
        WHERE session_id = json_extract(NEW.payload, '$.session_id')
          AND turn_id = json_extract(NEW.payload, '$.turn_id')
          AND thread_id = json_extract(NEW.payload, '$.thread_id')
    );
    UPDATE turn
    SET updated_at = MAX(updated_at, json_extract(NEW.payload, '$.now')),
        last_seq = COALESCE(json_extract(NEW.payload, '$.last_seq'), last_seq)
    WHERE tenant_id = json_extract(NEW.payload, '$.tenant_id')
      AND session_id = json_extract(NEW.payload, '$.session_id')
      AND turn_id = json_extract(NEW.payload, '$.turn_id');
    UPDATE turn_thread
    SET usage = COALESCE(json_extract(NEW.payload, '$.usage'), usage),
        completion = COALESCE(json_extract(NEW.payload, '$.completion'), completion)
    WHERE session_id = json_extract(NEW.payload, '$.session_id')
      AND turn_id = json_extract(NEW.payload, '$.turn_id')
      AND thread_id = json_extract(NEW.payload, '$.thread_id');
    INSERT INTO turn_event (session_id, turn_id, seq, event_id, event, created_at)
    SELECT json_extract(NEW.payload, '$.session_id'), json_extract(NEW.payload, '$.turn_id'),
           json_extract(e.value, '$.seq'), json_extract(e.value, '$.event_id'), json_extract(e.value, '$.event'),
           json_extract(NEW.payload, '$.now')
    FROM json_each(NEW.payload, '$.events') AS e
    ORDER BY e.key;
    INSERT INTO context_message (segment_id, session_id, turn_id, pos, body, index_text)
    SELECT s.segment_id, json_extract(NEW.payload, '$.session_id'), json_extract(NEW.payload, '$.turn_id'),
           s.len + m.key, json_extract(m.value, '$.body'), json_extract(m.value, '$.index_text')
    FROM turn_thread AS tt
    JOIN context_segment AS s ON s.segment_id = tt.segment_id
    JOIN json_each(NEW.payload, '$.messages') AS m
    WHERE tt.session_id = json_extract(NEW.payload, '$.session_id')
      AND tt.turn_id = json_extract(NEW.payload, '$.turn_id')
      AND tt.thread_id = json_extract(NEW.payload, '$.thread_id')
    ORDER BY m.key;
    UPDATE context_segment
    SET len = len + json_array_length(NEW.payload, '$.messages')
    WHERE segment_id = (
        SELECT segment_id FROM turn_thread
        WHERE session_id = json_extract(NEW.payload, '$.session_id')
          AND turn_id = json_extract(NEW.payload, '$.turn_id')
          AND thread_id = json_extract(NEW.payload, '$.thread_id')
    );
END;

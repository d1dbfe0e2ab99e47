-- How far a running turn's live stream went beyond its stored events (streamed-only items: an answer's
-- placeholder and deltas), written before the stream uses a number, so a run that resumes the turn after a
-- crash numbers on right after it and closes the answers left open. `open_messages` is a JSON array of
-- {id, thread_id, created_at}, NULL when none.
ALTER TABLE turn ADD COLUMN streamed_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turn ADD COLUMN open_messages TEXT;

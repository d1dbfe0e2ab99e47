-- The full-text index of recall is written in batches, not on every context row: a step's commit no longer
-- pays for an FTS5 segment of its own (about a fifth of the pages a step wrote; docs/performance.md).
--
-- `context_message_fts_mark` holds the highest `message_id` indexed. Message ids only grow (AUTOINCREMENT
-- never reuses one), so every row above the mark is unindexed and every row at or below it is indexed (or
-- deleted). A batch indexes every row above the mark in one statement and moves the mark to the highest id.
-- Batches run inside the write that triggers them:
-- - when a turn ends (its status leaves 'running': `update_turn_state` and the freeze of a cancel, both
--   through `write_done` in src/session/sql/ops/turns.rs), so a finished turn's rows are indexed;
-- - when an insert leaves more than 512 rows above the mark, so a long turn (or many turns running at
--   once: the bound is over the whole database) never leaves a longer unindexed tail. Recall scans that
--   tail row by row (`SEARCH_CONDITION` in src/session/sql/sqlite.rs); 512 rows of a few KiB each is a scan
--   of a millisecond or two, and a long turn's index writes come one batch per 512 rows, not one per step.
-- Recall reads both the index and the tail, so it finds every row the moment its write commits.
CREATE TABLE context_message_fts_mark (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_through INTEGER NOT NULL
) STRICT;
-- Every existing row was indexed by the per-row trigger: nothing is indexed again.
INSERT INTO context_message_fts_mark (id, indexed_through)
SELECT 1, COALESCE(MAX(message_id), 0) FROM context_message;

DROP TRIGGER context_message_fts_insert;
DROP TRIGGER context_message_fts_delete;

-- FTS5 'delete' of a row that was never indexed corrupts the index: only indexed rows are deleted from it.
CREATE TRIGGER context_message_fts_delete AFTER DELETE ON context_message
WHEN old.message_id <= (SELECT indexed_through FROM context_message_fts_mark) BEGIN
    INSERT INTO context_message_fts (context_message_fts, rowid, index_text)
    VALUES ('delete', old.message_id, old.index_text);
END;

-- The new row has the highest id, so it is where the mark moves.
CREATE TRIGGER context_message_fts_tail_bound AFTER INSERT ON context_message
WHEN new.message_id > (SELECT indexed_through FROM context_message_fts_mark) + 512 BEGIN
    INSERT INTO context_message_fts (rowid, index_text)
    SELECT message_id, index_text FROM context_message
    WHERE message_id > (SELECT indexed_through FROM context_message_fts_mark);
    UPDATE context_message_fts_mark SET indexed_through = new.message_id;
END;

-- Only a write naming `status` fires it: the per-step fences update other columns of the turn row.
-- The highest id may be below the mark when the newest rows were deleted; the mark never goes down.
CREATE TRIGGER context_message_fts_turn_end AFTER UPDATE OF status ON turn
WHEN old.status = 'running' AND new.status <> 'running' BEGIN
    INSERT INTO context_message_fts (rowid, index_text)
    SELECT message_id, index_text FROM context_message
    WHERE message_id > (SELECT indexed_through FROM context_message_fts_mark);
    UPDATE context_message_fts_mark
    SET indexed_through = MAX(indexed_through, COALESCE((SELECT MAX(message_id) FROM context_message), 0));
END;

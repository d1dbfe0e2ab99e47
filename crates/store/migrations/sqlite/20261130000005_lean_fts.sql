-- Recall only ever asks "does a row contain every one of these words", so the full-text index needs neither
-- token positions nor column sizes: `detail = none` and `columnsize = 0` keep what it writes on every context
-- append small (an index write lands on every agent step; see docs/performance.md).
DROP TRIGGER context_message_fts_insert;
DROP TRIGGER context_message_fts_delete;
DROP TABLE context_message_fts;

CREATE VIRTUAL TABLE context_message_fts USING fts5 (
    index_text,
    content = 'context_message',
    content_rowid = 'message_id',
    -- index_text already holds the store's own tokens separated by spaces: `ascii` splits only on ASCII
    -- separators, so every token stays whole (unicode61 would split words at combining marks).
    tokenize = 'ascii',
    detail = none,
    columnsize = 0
);
CREATE TRIGGER context_message_fts_insert AFTER INSERT ON context_message BEGIN
    INSERT INTO context_message_fts (rowid, index_text) VALUES (new.message_id, new.index_text);
END;
CREATE TRIGGER context_message_fts_delete AFTER DELETE ON context_message BEGIN
    INSERT INTO context_message_fts (context_message_fts, rowid, index_text)
    VALUES ('delete', old.message_id, old.index_text);
END;
INSERT INTO context_message_fts (context_message_fts) VALUES ('rebuild');

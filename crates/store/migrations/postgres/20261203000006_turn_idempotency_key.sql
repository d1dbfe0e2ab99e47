-- The Idempotency-Key a client created a turn with, and the fingerprint of the request that carried it,
-- written with the turn in its transaction. A retry with the same key in the session finds this turn instead
-- of starting another; the unique index settles concurrent retries (session ids are unique across tenants,
-- so the session scopes the key per tenant too).
ALTER TABLE turn ADD COLUMN idempotency_key text COLLATE "C";
ALTER TABLE turn ADD COLUMN request_fingerprint text;
CREATE UNIQUE INDEX turn_idempotency_key_idx ON turn (session_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

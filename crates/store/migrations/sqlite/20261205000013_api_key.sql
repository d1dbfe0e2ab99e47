-- Users' API keys for automation. Only the key's SHA-256 is kept (a leaked table holds no usable key); a
-- presented key is found by its hash. A revoked key's row is deleted.
CREATE TABLE api_key (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT    NOT NULL,
    user_id     TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    prefix      TEXT    NOT NULL,
    is_admin    INTEGER NOT NULL,
    secret_hash TEXT    NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL
);
CREATE INDEX api_key_owner_idx ON api_key (tenant_id, user_id, created_at);

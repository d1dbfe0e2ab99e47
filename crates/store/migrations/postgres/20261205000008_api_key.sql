-- Users' API keys for automation. Only the key's SHA-256 is kept (a leaked table holds no usable key); a
-- presented key is found by its hash. A revoked key's row is deleted.
CREATE TABLE api_key (
    id          text COLLATE "C" PRIMARY KEY,
    tenant_id   text COLLATE "C" NOT NULL,
    user_id     text COLLATE "C" NOT NULL,
    name        text             NOT NULL,
    prefix      text             NOT NULL,
    is_admin    bigint           NOT NULL, -- 1 or 0 (bound like every integer)
    secret_hash text COLLATE "C" NOT NULL UNIQUE,
    created_at  bigint           NOT NULL
);
CREATE INDEX api_key_owner_idx ON api_key (tenant_id, user_id, created_at);

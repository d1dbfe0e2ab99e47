-- Settings stores: agents, model providers, MCP servers (with their OAuth client), per-user OAuth tokens
-- and pending authorizations, the per-tenant sandbox provider, skills; and the secret key check.
-- Timestamps are epoch milliseconds. Secret values inside the JSON columns, `oauth_token.token` and
-- `oauth_pending_authorization.code_verifier` are AES-256-GCM envelopes (`tfenc:v1:…`).
-- Ids and names use SQLite's default BINARY collation: byte-wise comparison and order.

-- Which key the secrets of this database are encrypted with (one row).
CREATE TABLE secret_key_check (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    key_id      TEXT    NOT NULL,
    check_value TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE agent (
    tenant_id  TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    manifest   TEXT    NOT NULL CHECK (json_valid(manifest)),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, name)
) STRICT;

CREATE TABLE model_provider (
    tenant_id  TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    manifest   TEXT    NOT NULL CHECK (json_valid(manifest)),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, name)
) STRICT;

CREATE TABLE skill (
    tenant_id  TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    manifest   TEXT    NOT NULL CHECK (json_valid(manifest)),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, name)
) STRICT;

-- `oauth_client` ({server: RFC 8414 metadata, client: {client_id, client_secret}}) is NULL until the
-- first dynamic client registration; upserting the manifest keeps it.
CREATE TABLE mcp_server (
    tenant_id    TEXT    NOT NULL,
    id           TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    manifest     TEXT    NOT NULL CHECK (json_valid(manifest)),
    oauth_client TEXT    CHECK (oauth_client IS NULL OR json_valid(oauth_client)),
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, name)
) STRICT;

CREATE TABLE oauth_token (
    tenant_id  TEXT    NOT NULL,
    server_id  TEXT    NOT NULL,
    user_id    TEXT    NOT NULL,
    token      TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, server_id, user_id),
    FOREIGN KEY (tenant_id, server_id) REFERENCES mcp_server (tenant_id, id) ON DELETE CASCADE
) STRICT;

-- Keyed by the OAuth `state`; rows older than 10 minutes are dead and swept.
CREATE TABLE oauth_pending_authorization (
    state          TEXT    PRIMARY KEY,
    tenant_id      TEXT    NOT NULL,
    server_id      TEXT    NOT NULL,
    user_id        TEXT    NOT NULL,
    mcp_server_url TEXT    NOT NULL,
    code_verifier  TEXT    NOT NULL,
    return_to      TEXT,
    created_at     INTEGER NOT NULL,
    FOREIGN KEY (tenant_id, server_id) REFERENCES mcp_server (tenant_id, id) ON DELETE CASCADE
) STRICT;

CREATE INDEX oauth_pending_authorization_server_idx ON oauth_pending_authorization (tenant_id, server_id);
CREATE INDEX oauth_pending_authorization_created_idx ON oauth_pending_authorization (created_at);

-- One per tenant. `build_metadata` is an opaque string map (image_uri, build_ref, …).
CREATE TABLE sandbox_provider (
    tenant_id      TEXT    PRIMARY KEY,
    manifest       TEXT    NOT NULL CHECK (json_valid(manifest)),
    status         TEXT    NOT NULL CHECK (status IN ('pending', 'ready', 'failed')),
    status_reason  TEXT,
    build_metadata TEXT    NOT NULL CHECK (json_valid(build_metadata)),
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
) STRICT;

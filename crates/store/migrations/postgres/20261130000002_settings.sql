-- Settings stores: agents, model providers, MCP servers (with their OAuth client), per-user OAuth tokens
-- and pending authorizations, the per-tenant sandbox provider, skills; and the secret key check.
-- JSON columns are `json`, not `jsonb`: a manifest (an agent's response-format schema, say) keeps its text,
-- key order included, as the other backends keep it.
-- Timestamps are epoch milliseconds from the database clock. Secret values inside the json columns,
-- `oauth_token.token` and `oauth_pending_authorization.code_verifier` are AES-256-GCM envelopes
-- (`tfenc:v1:…`). Key columns are COLLATE "C": byte-wise comparison and order, whatever the database
-- collation.

-- Which key the secrets of this database are encrypted with (one row).
CREATE TABLE secret_key_check (
    id          smallint PRIMARY KEY CHECK (id = 1),
    key_id      text     NOT NULL,
    check_value text     NOT NULL,
    created_at  bigint   NOT NULL
);

CREATE TABLE agent (
    tenant_id  text COLLATE "C" NOT NULL,
    id         text COLLATE "C" NOT NULL,
    name       text COLLATE "C" NOT NULL,
    manifest   json            NOT NULL,
    created_at bigint           NOT NULL,
    updated_at bigint           NOT NULL,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT agent_tenant_name_key UNIQUE (tenant_id, name)
);

CREATE TABLE model_provider (
    tenant_id  text COLLATE "C" NOT NULL,
    id         text COLLATE "C" NOT NULL,
    name       text COLLATE "C" NOT NULL,
    manifest   json            NOT NULL,
    created_at bigint           NOT NULL,
    updated_at bigint           NOT NULL,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT model_provider_tenant_name_key UNIQUE (tenant_id, name)
);

CREATE TABLE skill (
    tenant_id  text COLLATE "C" NOT NULL,
    id         text COLLATE "C" NOT NULL,
    name       text COLLATE "C" NOT NULL,
    manifest   json            NOT NULL,
    created_at bigint           NOT NULL,
    updated_at bigint           NOT NULL,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT skill_tenant_name_key UNIQUE (tenant_id, name)
);

-- `oauth_client` ({server: RFC 8414 metadata, client: {client_id, client_secret}}) is NULL until the
-- first dynamic client registration; upserting the manifest keeps it.
CREATE TABLE mcp_server (
    tenant_id    text COLLATE "C" NOT NULL,
    id           text COLLATE "C" NOT NULL,
    name         text COLLATE "C" NOT NULL,
    manifest     json            NOT NULL,
    oauth_client json,
    created_at   bigint           NOT NULL,
    updated_at   bigint           NOT NULL,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT mcp_server_tenant_name_key UNIQUE (tenant_id, name)
);

CREATE TABLE oauth_token (
    tenant_id  text COLLATE "C" NOT NULL,
    server_id  text COLLATE "C" NOT NULL,
    user_id    text COLLATE "C" NOT NULL,
    token      text             NOT NULL,
    created_at bigint           NOT NULL,
    updated_at bigint           NOT NULL,
    PRIMARY KEY (tenant_id, server_id, user_id),
    FOREIGN KEY (tenant_id, server_id) REFERENCES mcp_server (tenant_id, id) ON DELETE CASCADE
);

-- Keyed by the OAuth `state`; rows older than 10 minutes are dead and swept.
CREATE TABLE oauth_pending_authorization (
    state          text COLLATE "C" PRIMARY KEY,
    tenant_id      text COLLATE "C" NOT NULL,
    server_id      text COLLATE "C" NOT NULL,
    user_id        text COLLATE "C" NOT NULL,
    mcp_server_url text             NOT NULL,
    code_verifier  text             NOT NULL,
    return_to      text,
    created_at     bigint           NOT NULL,
    FOREIGN KEY (tenant_id, server_id) REFERENCES mcp_server (tenant_id, id) ON DELETE CASCADE
);

CREATE INDEX oauth_pending_authorization_server_idx ON oauth_pending_authorization (tenant_id, server_id);
CREATE INDEX oauth_pending_authorization_created_idx ON oauth_pending_authorization (created_at);

-- One per tenant. `build_metadata` is an opaque string map (image_uri, build_ref, …).
CREATE TABLE sandbox_provider (
    tenant_id      text COLLATE "C" PRIMARY KEY,
    manifest       json            NOT NULL,
    status         text             NOT NULL CHECK (status IN ('pending', 'ready', 'failed')),
    status_reason  text,
    build_metadata json            NOT NULL,
    created_at     bigint           NOT NULL,
    updated_at     bigint           NOT NULL
);

-- The MCP session (Streamable HTTP `Mcp-Session-Id`) each user's connection to an MCP server last ran on,
-- so a restarted process can resume it. The id is the MCP server's to assign and is no credential (the
-- MCP spec forbids using sessions for authentication), so it is stored as is. The rows go with their
-- server; the server code deletes them itself when a session must not be resumed (e.g. the URL changed).
CREATE TABLE mcp_session (
    tenant_id  text COLLATE "C" NOT NULL,
    server_id  text COLLATE "C" NOT NULL,
    user_id    text COLLATE "C" NOT NULL,
    session_id text             NOT NULL,
    updated_at bigint           NOT NULL,
    PRIMARY KEY (tenant_id, server_id, user_id),
    FOREIGN KEY (tenant_id, server_id) REFERENCES mcp_server (tenant_id, id) ON DELETE CASCADE
);

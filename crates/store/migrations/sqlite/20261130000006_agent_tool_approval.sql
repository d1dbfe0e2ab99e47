-- Tools a user allowed for every session of a saved agent (approval scope `agent`), until revoked.
-- `mcp_server_id` is the id calls record as `tool_info.mcp_server_id` (a configured MCP server's id). It has
-- no foreign key: tool sets built into a host have ids but no `mcp_server` row. The rows go with their agent.
CREATE TABLE agent_tool_approval (
    tenant_id     TEXT    NOT NULL,
    agent_id      TEXT    NOT NULL,
    mcp_server_id TEXT    NOT NULL,
    tool_name     TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, agent_id, mcp_server_id, tool_name),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agent (tenant_id, id) ON DELETE CASCADE
) STRICT;

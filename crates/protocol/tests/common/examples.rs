//! One representative, fully populated example per schema, written by hand from the reference
//! contract. Optional fields are filled wherever the schema has them so round trips exercise them.

use serde_json::{Value, json};

pub fn agent_spec() -> Value {
    json!({
        "model": {
            "name": "openai/gpt-5.2",
            "params": {
                "max_tokens": 4096,
                "temperature": 0.2,
                "top_p": 0.9,
                "top_k": 40,
                "parallel_tool_calls": true,
                "reasoning_effort": "high",
                "service_tier": "flex",
                "thinking": {"type": "enabled", "budget_tokens": 2048}
            }
        },
        "instructions": "You help with invoices.",
        "messages": [{"type": "user.message", "content": "Always answer in French."}],
        "mcp_servers": [mcp_server_ref()],
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "invoice",
                "description": "An invoice summary",
                "schema": {"type": "object", "properties": {"total": {"type": "number"}}},
                "strict": true
            }
        },
        "skills": [{"name": "pdf-tools"}],
        "config": runtime_config()
    })
}

pub fn mcp_server_ref() -> Value {
    json!({
        "name": "github",
        "enable_tools": ["@read-only", "create_issue"],
        "disable_tools": ["delete_repo"],
        "preload_tools": ["search_code"],
        "require_approval_for_tools": ["@destructive"],
        "preload": false
    })
}

pub fn runtime_config() -> Value {
    json!({
        "iteration_limit": 42,
        "sandbox": {"enabled": true, "file_downloads": false},
        "dynamic_sub_agents": {"enabled": false},
        "context_management": {
            "compaction": {"enabled": true, "compaction_threshold_tokens": 80000},
            "large_tool_response": {"enabled": false}
        },
        "generative_ui": {"enabled": false},
        "ask_user_questions": {"enabled": true}
    })
}

/// The `config` block every spec gets when it gives none.
pub fn default_runtime_config() -> Value {
    json!({
        "iteration_limit": 100,
        "sandbox": {"enabled": false, "file_downloads": true},
        "dynamic_sub_agents": {"enabled": true},
        "context_management": {
            "compaction": {"enabled": true},
            "large_tool_response": {"enabled": true}
        },
        "generative_ui": {"enabled": true},
        "ask_user_questions": {"enabled": true}
    })
}

pub fn session_agent_reference() -> Value {
    json!({"type": "reference", "id": "01jabcagent", "name": "invoice-bot"})
}

pub fn session_agent_inline() -> Value {
    json!({"type": "inline", "spec": agent_spec()})
}

pub fn user_message_parts() -> Value {
    json!({
        "type": "user.message",
        "content": [
            {"type": "text", "text": "What is in this file?"},
            {"type": "file", "name": "notes.pdf", "data": "data:application/pdf;base64,JVBERi0x"}
        ]
    })
}

pub fn user_tool_approval() -> Value {
    json!({
        "type": "user.tool_approval",
        "thread_id": "main",
        "tool_call_id": "call_1",
        "approval": {"status": "deny", "reason": "not on production"}
    })
}

pub fn user_tool_response() -> Value {
    json!({
        "type": "user.tool_response",
        "thread_id": "main",
        "tool_call_id": "call_2",
        "content": "{\"answer\":\"blue\"}"
    })
}

pub fn usage() -> Value {
    json!({
        "input_tokens": 1200,
        "output_tokens": 80,
        "cache_read_tokens": 1000,
        "cache_write_tokens": 0,
        "input_tokens_breakdown": {
            "harness": 300, "skills": 50, "instructions": 20, "tool_definitions": 400, "messages": 430
        }
    })
}

pub fn model_message() -> Value {
    json!({
        "type": "model.message",
        "id": "01jaaaaaaaaaaaaaaaaaaaaaaa",
        "thread_id": "main",
        "created_at": "2026-01-02T03:04:05.000Z",
        "content": "Let me look that up.",
        "name": "assistant",
        "refusal": null,
        "reasoning_content": "The user wants the weather.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
                "provider_specific_fields": {"thought_signature": "c2ln"},
                "tool_info": {"type": "mcp", "server_id": "01SRV", "server_name": "weather", "name": "get_weather"}
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "exec", "arguments": "{}"},
                "tool_info": {"type": "truefoundry-system", "name": "exec"}
            }
        ],
        "finish_reason": "tool_calls",
        "usage": usage()
    })
}

pub fn model_message_delta() -> Value {
    json!({
        "type": "model.message.delta",
        "id": "01jaaaaaaaaaaaaaaaaaaaaaaa",
        "thread_id": "main",
        "created_at": "2026-01-02T03:04:05.000Z",
        "content": "Let me",
        "refusal": null,
        "reasoning_content": "thinking",
        "tool_calls": [{
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"ci"},
            "tool_info": {"type": "mcp", "server_id": "01SRV", "server_name": "weather", "name": "get_weather"},
            "provider_specific_fields": {"thought_signature": "c2ln"}
        }],
        "finish_reason": null,
        "usage": usage()
    })
}

pub fn tool_response() -> Value {
    json!({
        "type": "tool.response",
        "id": "01jbbbbbbbbbbbbbbbbbbbbbbb",
        "created_at": "2026-01-02T03:04:06.000Z",
        "thread_id": "main",
        "tool_call_id": "call_1",
        "content": "{\"temp\":21}"
    })
}

pub fn tool_approval_required() -> Value {
    json!({
        "type": "tool.approval_required",
        "id": "01jccccccccccccccccccccccc",
        "created_at": "2026-01-02T03:04:07.000Z",
        "thread_id": "main",
        "tool_calls": [{"id": "call_1", "source_event_id": "01jaaaaaaaaaaaaaaaaaaaaaaa"}]
    })
}

pub fn tool_response_required() -> Value {
    json!({
        "type": "tool.response_required",
        "id": "01jcccccccccccccccccccccc2",
        "created_at": "2026-01-02T03:04:07.000Z",
        "thread_id": "4b6f7a52-0d8e-4b8f-9d8e-2f1c3a4b5c6d",
        "tool_calls": [{"id": "call_2", "source_event_id": "01jaaaaaaaaaaaaaaaaaaaaaaa"}]
    })
}

pub fn mcp_auth_required() -> Value {
    json!({
        "type": "mcp.auth_required",
        "id": "01jdddddddddddddddddddddddd",
        "created_at": "2026-01-02T03:04:08.000Z",
        "thread_id": null,
        "mcp_servers": [{"id": "linear", "name": "linear", "auth_url": "https://linear.app/oauth/authorize?x=1"}]
    })
}

pub fn mcp_initialize() -> Value {
    json!({
        "type": "mcp.initialize",
        "id": "01jeeeeeeeeeeeeeeeeeeeeeee",
        "created_at": "2026-01-02T03:04:03.000Z",
        "thread_id": "main",
        "mcp_servers": [
            {"id": "01SRV", "name": "weather", "session_id": "sess-9", "transport_type": "streamable-http"},
            {"id": "01SRW", "name": "legacy", "transport_type": "sse"}
        ]
    })
}

pub fn sandbox_created() -> Value {
    json!({
        "type": "sandbox.created",
        "id": "01jffffffffffffffffffffffff",
        "created_at": "2026-01-02T03:04:04.000Z",
        "thread_id": null,
        "sandbox_id": "v1:daytona:default.1234"
    })
}

/// Our event (the reference has none): a sub-agent's context summarised.
pub fn context_compacted() -> Value {
    json!({
        "type": "context.compacted",
        "id": "01jkkkkkkkkkkkkkkkkkkkkkkk",
        "created_at": "2026-01-02T03:04:12.000Z",
        "thread_id": "4b6f7a52-0d8e-4b8f-9d8e-2f1c3a4b5c6d",
        "method": "summary",
        "summary": "Goal: the 2025 revenue. Findings: 4.2 M EUR (annual report, p. 12).",
        "replaced_messages": 14,
        "tokens_before": 96000,
        "tokens_after": 180
    })
}

pub fn thread_created() -> Value {
    json!({
        "type": "thread.created",
        "id": "01jggggggggggggggggggggggg",
        "created_at": "2026-01-02T03:04:09.000Z",
        "thread_id": "4b6f7a52-0d8e-4b8f-9d8e-2f1c3a4b5c6d",
        "title": "researcher",
        "parent": {"thread_id": "main", "tool_call_id": "call_3"},
        "agent_info": {"type": "dynamic", "name": "researcher", "input": "Find the 2025 revenue.", "model": "anthropic/opus"}
    })
}

pub fn thread_done() -> Value {
    json!({
        "type": "thread.done",
        "id": "01jhhhhhhhhhhhhhhhhhhhhhhh",
        "created_at": "2026-01-02T03:04:10.000Z",
        "thread_id": "4b6f7a52-0d8e-4b8f-9d8e-2f1c3a4b5c6d",
        "title": "researcher",
        "parent": {"thread_id": "main", "tool_call_id": "call_3"},
        "state": {"status": "error", "error": "max_tokens breached", "output": model_message()}
    })
}

pub fn turn_created() -> Value {
    json!({
        "type": "turn.created",
        "id": "01j0000000000000000000000a",
        "created_at": "2026-01-02T03:04:00.000Z",
        "thread_id": null,
        "turn_id": "turn_2",
        "previous_turn_id": "turn_1",
        "input": [user_tool_approval(), user_tool_response()],
        "state": {"status": "running"}
    })
}

pub fn turn_metrics() -> Value {
    json!({
        "total_input_tokens": 5000,
        "total_output_tokens": 300,
        "total_tokens": 5300,
        "total_cache_read_tokens": 4000,
        "total_cache_write_tokens": 12,
        "total_reasoning_tokens": 120,
        "total_cost_in_usd": 0.0123
    })
}

pub fn turn_state_done() -> Value {
    json!({
        "status": "done",
        "output": model_message(),
        "required_actions": [tool_approval_required(), tool_response_required(), mcp_auth_required()],
        "completed_at": "2026-01-02T03:05:00.000Z",
        "metrics": turn_metrics()
    })
}

pub fn turn_state_cancelled() -> Value {
    json!({
        "status": "cancelled",
        "reason": "cancelled-for-next-turn",
        "completed_at": "2026-01-02T03:05:00.000Z",
        "metrics": {"total_input_tokens": 10}
    })
}

pub fn turn_state_error() -> Value {
    json!({
        "status": "error",
        "message": "You have reached iteration limit of 100, please request again",
        "completed_at": "2026-01-02T03:05:00.000Z",
        "metrics": turn_metrics()
    })
}

pub fn turn_done() -> Value {
    json!({
        "type": "turn.done",
        "id": "01j0000000000000000000000z",
        "created_at": "2026-01-02T03:05:00.000Z",
        "thread_id": null,
        "state": turn_state_done()
    })
}

pub fn passthrough() -> Value {
    json!({
        "type": "acme.progress",
        "id": "01jiiiiiiiiiiiiiiiiiiiiiii",
        "created_at": "2026-01-02T03:04:11.000Z",
        "thread_id": "main",
        "percent": 42,
        "ratio": 0.5,
        "big": 18446744073709551615u64,
        "negative": -3,
        "nested": {"steps": [1, "two", null, true, {"deep": []}]},
        "note": null
    })
}

pub fn context_assistant() -> Value {
    json!({
        "role": "assistant",
        "content": "Checking the weather.",
        "tool_calls": [{
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
            "tool_info": {
                "type": "mcp",
                "mcp_server_id": "01SRV",
                "mcp_server_name": "weather",
                "original_tool_name": "get-weather",
                "is_approval_required": true,
                "is_deferred": false,
                "is_client_side": false,
                "is_thread_creation": false
            },
            "provider_specific_fields": {"thought_signature": "c2ln"}
        }],
        "reasoning_content": "Need the forecast.",
        "thinking_blocks": [
            {"type": "thinking", "thinking": "Need the forecast.", "signature": "EqQBCkgIAR"},
            {"type": "redacted_thinking", "data": "EmwKAhgB"}
        ],
        "source": "anthropic/anthropic/claude-opus",
        "audio": {"id": "aud_1"}
    })
}

pub fn context_user_parts() -> Value {
    json!({
        "role": "user",
        "content": [
            {"type": "text", "text": "Describe this."},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR", "detail": "high"}},
            {"type": "input_audio", "input_audio": {"data": "UklGR", "format": "wav"}},
            {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBER", "filename": "a.pdf"}},
            {"type": "text", "text": "Thanks."}
        ]
    })
}

pub fn context_tool() -> Value {
    json!({"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\":21}"})
}

pub fn context_approval() -> Value {
    json!({"type": "user.tool_approval", "tool_call_id": "call_1", "approval": {"status": "allow"}})
}

pub fn thread_snapshot() -> Value {
    json!({
        "thread_id": "4b6f7a52-0d8e-4b8f-9d8e-2f1c3a4b5c6d",
        "context": [context_user_parts(), context_assistant(), context_approval(), context_tool()],
        "current_context_usage": {"prompt_tokens": 1234, "completion_tokens": 56},
        "parent": {"thread_id": "main", "tool_call_id": "call_3"},
        "agent_info": {"type": "dynamic", "name": "researcher", "input": "Find the 2025 revenue."},
        "completion": {
            "type": "error",
            "output": model_message(),
            "error_message": "max_tokens breached",
            "send_to_parent": {"role": "tool", "tool_call_id": "call_3", "content": "max_tokens breached"}
        },
        "capability_state": {"tfy.todo": {"items": ["a", "b"]}, "counter": 3}
    })
}

pub fn openai_provider() -> Value {
    json!({
        "type": "openai",
        "auth": {"api_key": "sk-test-1234567890"},
        "models": [{
            "model_id": "gpt-5.2-2026-01-01",
            "name": "gpt-5.2",
            "properties": {"context_length": 400000, "max_output_tokens": 128000, "reasoning_efforts": ["low", "medium", "high", "xhigh", "max"]}
        }],
        "base_url": "https://proxy.example.com/v1"
    })
}

pub fn custom_provider() -> Value {
    json!({
        "type": "custom",
        "name": "local-vllm",
        "base_url": "http://127.0.0.1:8000/v1",
        "auth": {"api_key": "token-abc"},
        "models": [
            {"model_id": "Qwen/Qwen3-8B", "name": "qwen3-8b", "properties": {}},
            {"model_id": "meta/llama", "name": "llama", "properties": {"reasoning_efforts": ["none"]}}
        ]
    })
}

pub fn mcp_server_manifest_header() -> Value {
    json!({
        "type": "remote",
        "name": "github",
        "url": "https://api.githubcopilot.com/mcp/",
        "description": "GitHub issues, pull requests and code search.",
        "auth": {"type": "header", "headers": {"Authorization": "Bearer ghp_secret", "X-Org": "acme"}}
    })
}

pub fn mcp_server_manifest_dcr() -> Value {
    json!({
        "type": "remote",
        "name": "linear",
        "url": "https://mcp.linear.app/mcp",
        "description": "Linear issues.",
        "auth": {"type": "dcr"}
    })
}

pub fn skill_manifest() -> Value {
    json!({
        "type": "git",
        "name": "pdf-tools",
        "url": "https://github.com/anthropics/skills",
        "path": "document-skills/pdf",
        "ref": "main",
        "description": "Read, fill and merge PDF files."
    })
}

pub fn sandbox_provider() -> Value {
    json!({
        "type": "daytona",
        "auth": {"api_key": "dtn_secret_key"},
        "exec_timeout_ms": 60000,
        "auto_stop_interval_in_minutes": 5,
        "auto_archive_interval_in_minutes": 60,
        "auto_delete_interval_in_minutes": 7200
    })
}

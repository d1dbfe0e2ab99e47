//! Per-thread counters, summed into the turn's metrics.

use trueforge_llm::Usage;
use trueforge_protocol::TurnMetrics;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadMetrics {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub reasoning_tokens: u64,
    pub cost_usd: Option<f64>,
    /// Model calls of the loop (compaction calls excluded): what the iteration limit counts.
    pub iterations: u32,
}

impl ThreadMetrics {
    pub fn add_usage(&mut self, usage: &Usage) {
        self.input_tokens += usage.input_tokens;
        self.output_tokens += usage.output_tokens;
        self.cache_read_tokens += usage.cache_read_tokens;
        self.cache_write_tokens += usage.cache_write_tokens;
        self.reasoning_tokens += usage.reasoning_tokens;
        if let Some(cost) = usage.cost_usd {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + cost);
        }
    }

    pub fn merge(&mut self, other: &ThreadMetrics) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        if let Some(cost) = other.cost_usd {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + cost);
        }
        self.iterations += other.iterations;
    }

    /// The turn's metrics; tool calls, sub-agents and compactions are counted from the turn's stored events.
    pub fn to_turn_metrics(&self, counts: EventCounts) -> TurnMetrics {
        TurnMetrics {
            total_input_tokens: Some(self.input_tokens),
            total_output_tokens: Some(self.output_tokens),
            total_tokens: Some(self.input_tokens + self.output_tokens),
            total_cache_read_tokens: Some(self.cache_read_tokens),
            total_cache_write_tokens: Some(self.cache_write_tokens),
            total_reasoning_tokens: Some(self.reasoning_tokens),
            total_cost_in_usd: self.cost_usd,
            total_tool_calls: Some(counts.tool_calls),
            total_sub_agents: Some(counts.sub_agents),
            total_summarizations: Some(counts.summarizations),
        }
    }
}

/// Counts taken from a turn's stored events, so they hold across a resume.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventCounts {
    /// `tool.response` events, except those carrying a sub-agent's result to its parent.
    pub tool_calls: u64,
    /// `thread.created` events.
    pub sub_agents: u64,
    /// `context.compacted` events: compactions of any thread, by summary or by truncation.
    pub summarizations: u64,
}

/// Tallies a turn's stored events as they are written (seeded from the store on resume), so the counts need
/// no read of the turn's events at its end.
#[derive(Debug, Clone, Default)]
pub struct EventTally {
    /// Call ids of `tool.response` events.
    responses: Vec<String>,
    /// Call ids that started a sub-agent (`thread.created`).
    delegations: std::collections::HashSet<String>,
    /// `context.compacted` events.
    compactions: u64,
}

impl EventTally {
    pub fn add(&mut self, event: &trueforge_protocol::SessionEvent) {
        use trueforge_protocol::SessionEvent;
        match event {
            SessionEvent::ToolResponse(response) => self.responses.push(response.tool_call_id.clone()),
            SessionEvent::ThreadCreated(created) => {
                self.delegations.insert(created.parent.tool_call_id.clone());
            }
            SessionEvent::ContextCompacted(_) => self.compactions += 1,
            _ => {}
        }
    }

    pub fn counts(&self) -> EventCounts {
        EventCounts {
            tool_calls: self
                .responses
                .iter()
                .filter(|call_id| !self.delegations.contains(*call_id))
                .count() as u64,
            sub_agents: self.delegations.len() as u64,
            summarizations: self.compactions,
        }
    }
}

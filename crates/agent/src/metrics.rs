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
    /// The sum of the calls' known costs; `None` while no call had one.
    pub cost_usd: Option<f64>,
    /// A call used tokens and its cost is unknown (its model has no prices, or not for what it used), or
    /// calls of a run before a crash were not recounted: the turn's cost is then unknown, since the sum
    /// of the known costs would understate it.
    pub cost_unknown: bool,
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
        match usage.cost_usd {
            Some(cost) => self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + cost),
            None if usage.total_tokens() > 0 => self.cost_unknown = true,
            None => {}
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
        self.cost_unknown |= other.cost_unknown;
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
            total_cost_in_usd: if self.cost_unknown { None } else { self.cost_usd },
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

#[cfg(test)]
mod tests {
    use super::*;

    fn call(input_tokens: u64, output_tokens: u64, cost_usd: Option<f64>) -> Usage {
        Usage {
            input_tokens,
            output_tokens,
            cost_usd,
            ..Usage::default()
        }
    }

    fn turn_cost(metrics: &ThreadMetrics) -> Option<f64> {
        metrics.to_turn_metrics(EventCounts::default()).total_cost_in_usd
    }

    #[test]
    fn costs_add_up_over_calls_and_threads() {
        let mut main = ThreadMetrics::default();
        main.add_usage(&call(100, 10, Some(0.25)));
        main.add_usage(&call(200, 20, Some(0.5)));
        let mut child = ThreadMetrics::default();
        child.add_usage(&call(50, 5, Some(0.125)));
        main.merge(&child);
        assert_eq!(turn_cost(&main), Some(0.875));
        assert_eq!(turn_cost(&ThreadMetrics::default()), None, "no call, no cost");
    }

    #[test]
    fn one_call_of_unknown_cost_makes_the_turn_cost_unknown() {
        let mut main = ThreadMetrics::default();
        main.add_usage(&call(100, 10, Some(0.25)));
        main.add_usage(&call(0, 0, None));
        assert_eq!(turn_cost(&main), Some(0.25), "a call that used nothing costs nothing");

        let mut child = ThreadMetrics::default();
        child.add_usage(&call(50, 5, None));
        main.merge(&child);
        assert_eq!(turn_cost(&main), None, "a sub-agent on an unpriced model");
        assert_eq!(main.input_tokens, 150, "the tokens are still counted");
    }
}

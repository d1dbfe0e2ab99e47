//! How long a fake was busy: the time with at least one request in progress (overlapping requests count once),
//! so a caller can subtract the fakes' time from a wall time and keep what the code under test spent.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use trueforge_protocol::sync::lock;

/// Busy time of one fake (or of several, through [`BusyClock::report_to`]).
#[derive(Debug, Default)]
pub struct BusyClock {
    state: Mutex<ClockState>,
    /// A clock that is busy whenever this one is: several fakes reporting to one clock give the time any of
    /// them was busy, without counting their overlaps twice.
    parent: OnceLock<Arc<BusyClock>>,
}

#[derive(Debug, Default)]
struct ClockState {
    in_flight: usize,
    /// When `in_flight` last went from 0 to 1.
    since: Option<Instant>,
    /// Closed busy stretches, summed.
    total: Duration,
}

/// Keeps its clock busy until dropped.
#[must_use = "the clock is busy only while the guard lives"]
pub struct BusyGuard {
    clock: Arc<BusyClock>,
    /// The parent's guard, boxed: a guard cannot hold another by value.
    parent: Option<Box<BusyGuard>>,
}

impl BusyClock {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Makes `parent` busy whenever this clock is, from the next request on. Only the first call counts.
    pub fn report_to(&self, parent: Arc<BusyClock>) {
        let _ = self.parent.set(parent);
    }

    /// Marks one request in progress until the guard drops.
    pub fn enter(self: &Arc<Self>) -> BusyGuard {
        // The parent enters before and leaves after (see `drop`), so its stretch covers this clock's.
        let parent = self.parent.get().map(|parent| Box::new(parent.enter()));
        {
            let mut state = lock(&self.state);
            if state.in_flight == 0 {
                state.since = Some(Instant::now());
            }
            state.in_flight += 1;
        }
        BusyGuard {
            clock: self.clone(),
            parent,
        }
    }

    /// The busy time so far, a stretch still open included.
    pub fn busy(&self) -> Duration {
        let state = lock(&self.state);
        state.total + state.since.map_or(Duration::ZERO, |since| since.elapsed())
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        let mut state = lock(&self.clock.state);
        state.in_flight = state.in_flight.saturating_sub(1);
        if state.in_flight == 0
            && let Some(since) = state.since.take()
        {
            state.total += since.elapsed();
        }
        drop(state);
        // The parent leaves after the child, so its stretch covers the child's.
        drop(self.parent.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_requests_count_once_and_parents_see_every_child() {
        let combined = BusyClock::new();
        let model = BusyClock::new();
        let tools = BusyClock::new();
        model.report_to(combined.clone());
        tools.report_to(combined.clone());

        // Bounds measured around the guards rather than assumed, so a loaded machine's long sleeps do not
        // matter: a clock's time lies inside the span its guards covered, and summing overlapping guards
        // instead would exceed that span by the overlap (at least 30 ms).
        let started = Instant::now();
        let first = model.enter();
        let second = model.enter();
        let tool = tools.enter();
        std::thread::sleep(Duration::from_millis(30));
        drop(first);
        drop(tool);
        let tool_span = started.elapsed();
        std::thread::sleep(Duration::from_millis(30));
        drop(second);
        let model_span = started.elapsed();
        std::thread::sleep(Duration::from_millis(30));

        let model_busy = model.busy();
        assert!(model_busy >= Duration::from_millis(60), "{model_busy:?}");
        assert!(
            model_busy <= model_span,
            "overlaps counted twice: {model_busy:?} in {model_span:?}"
        );
        let tools_busy = tools.busy();
        assert!(
            tools_busy >= Duration::from_millis(30) && tools_busy <= tool_span,
            "{tools_busy:?}"
        );
        let combined_busy = combined.busy();
        assert!(
            combined_busy >= model_busy && combined_busy <= model_span,
            "{combined_busy:?}"
        );
    }

    #[test]
    fn an_open_stretch_counts_until_now() {
        let clock = BusyClock::new();
        let _guard = clock.enter();
        std::thread::sleep(Duration::from_millis(20));
        assert!(clock.busy() >= Duration::from_millis(20));
    }
}

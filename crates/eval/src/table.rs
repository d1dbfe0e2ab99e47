//! The comparison table: per task and configuration, the pass rate, mean input tokens, wall time p50 / p90
//! (with the spread, max − min) over the runs, and the harness's own time (p50; scripted runs only).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::run::RunResult;

fn percentile(sorted: &[f64], fraction: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    // Nearest rank: small run counts keep real observations instead of interpolating between them.
    let rank = (fraction * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

pub fn markdown(results: &[RunResult]) -> String {
    let mut groups: BTreeMap<(&str, &str), Vec<&RunResult>> = BTreeMap::new();
    for result in results {
        groups.entry((&result.task, &result.config)).or_default().push(result);
    }
    let mut table = String::from(
        "| task | configuration | pass | input tokens (mean) | wall p50 ms | wall p90 ms | spread ms | harness p50 ms |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for ((task, config), runs) in groups {
        let passed = runs.iter().filter(|run| run.outcome == "pass").count();
        let tokens = runs.iter().map(|run| run.input_tokens).sum::<u64>() / runs.len().max(1) as u64;
        let mut walls: Vec<f64> = runs.iter().map(|run| run.wall_ms).collect();
        walls.sort_by(f64::total_cmp);
        let spread = walls.last().copied().unwrap_or(0.0) - walls.first().copied().unwrap_or(0.0);
        let mut overheads: Vec<f64> = runs.iter().filter_map(|run| run.overhead_ms).collect();
        overheads.sort_by(f64::total_cmp);
        let overhead = if overheads.is_empty() {
            "–".to_owned()
        } else {
            format!("{:.0}", percentile(&overheads, 0.5))
        };
        let _ = writeln!(
            table,
            "| {task} | {config} | {passed}/{} | {tokens} | {:.0} | {:.0} | {spread:.0} | {overhead} |",
            runs.len(),
            percentile(&walls, 0.5),
            percentile(&walls, 0.9),
        );
    }
    table
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn percentiles_are_observed_values() {
        let walls = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0];
        assert_eq!(percentile(&walls, 0.5), 50.0);
        assert_eq!(percentile(&walls, 0.9), 90.0);
        assert_eq!(percentile(&[7.0], 0.9), 7.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}

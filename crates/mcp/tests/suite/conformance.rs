//! The official MCP conformance suite, client side, against `mcp-conformance-client` (our layer as a
//! client), compared with `conformance-expected-failures.txt`.
//!
//! `scripts/test.sh` installs the pinned suite and the Node 22 it needs into
//! `TRUEFORGE_TEST_CONFORMANCE_DIR`. One run of `--suite all --spec-version 2025-11-25` (the protocol
//! our layer speaks) writes each scenario's `checks.json`; we judge every scenario from those files
//! ourselves rather than trusting the suite's exit code, so that a scenario whose checks are only
//! informational (the client never got far enough to be checked) counts as a failure too.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const ENV_VAR: &str = "TRUEFORGE_TEST_CONFORMANCE_DIR";
const SPEC_VERSION: &str = "2025-11-25";
const EXPECTED_FAILURES: &str = include_str!("../conformance-expected-failures.txt");
/// The suite names each result directory `<scenario>-<ISO timestamp with ':' and '.' as '-'>`,
/// e.g. `tools_call-2026-11-30T10-14-39-301Z`.
const TIMESTAMP_SUFFIX_LEN: usize = "-2026-11-30T10-14-39-301Z".len();

/// One scenario's outcome, from its `checks.json`.
#[derive(Debug)]
struct Outcome {
    passed: bool,
    /// `id: message` of each failing check, to explain an unexpected failure.
    problems: Vec<String>,
    result_dir: PathBuf,
}

/// Where `scripts/test.sh` installed the suite. Missing means the tests were not started by it:
/// fail loudly rather than skip, so a run without the suite never looks green.
fn conformance_dir() -> PathBuf {
    let dir = std::env::var_os(ENV_VAR).unwrap_or_else(|| {
        panic!("{ENV_VAR} is not set: run scripts/test.sh, which installs the MCP conformance suite and sets it")
    });
    PathBuf::from(dir)
}

/// Scenario → reason. Panics on a malformed file: an entry without a reason, or listed twice.
fn expected_failures() -> BTreeMap<String, String> {
    let mut expected = BTreeMap::new();
    for line in EXPECTED_FAILURES.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (scenario, reason) = line
            .split_once(char::is_whitespace)
            .unwrap_or_else(|| panic!("conformance-expected-failures.txt: {line:?} has no reason"));
        let reason = reason.trim();
        assert!(
            !reason.is_empty(),
            "conformance-expected-failures.txt: {line:?} has no reason"
        );
        let previous = expected.insert(scenario.to_owned(), reason.to_owned());
        assert!(
            previous.is_none(),
            "conformance-expected-failures.txt lists {scenario} twice"
        );
    }
    expected
}

/// The scenario a result directory (relative to the output dir, `auth/…` included) belongs to.
fn scenario_of(relative_dir: &str) -> Option<&str> {
    let split = relative_dir.len().checked_sub(TIMESTAMP_SUFFIX_LEN)?;
    let (scenario, suffix) = relative_dir.split_at_checked(split)?;
    let shaped = suffix.starts_with('-')
        && suffix.ends_with('Z')
        && suffix.as_bytes().get(11) == Some(&b'T')
        && suffix[1..suffix.len() - 1]
            .chars()
            .all(|c| c.is_ascii_digit() || c == '-' || c == 'T');
    (shaped && !scenario.is_empty()).then_some(scenario)
}

/// A scenario passes when no check failed or warned and at least one check succeeded.
fn judge(checks: &[Value], result_dir: PathBuf) -> Outcome {
    let mut problems = Vec::new();
    let mut succeeded = false;
    for check in checks {
        let status = check["status"].as_str().unwrap_or("");
        match status {
            "SUCCESS" => succeeded = true,
            "FAILURE" | "WARNING" => {
                let id = check["id"].as_str().unwrap_or("?");
                problems.push(match check["errorMessage"].as_str() {
                    Some(message) if !message.is_empty() => format!("{status} {id}: {message}"),
                    _ => format!("{status} {id}"),
                });
            }
            _ => {}
        }
    }
    if !succeeded && problems.is_empty() {
        problems.push("no check succeeded (the client never did what the scenario checks)".to_owned());
    }
    Outcome {
        passed: problems.is_empty(),
        problems,
        result_dir,
    }
}

fn collect_outcomes(output: &Path) -> BTreeMap<String, Outcome> {
    let mut outcomes = BTreeMap::new();
    let mut pending = vec![output.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read the results").flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.file_name().is_some_and(|name| name == "checks.json") {
                let result_dir = path.parent().expect("a result dir").to_path_buf();
                let relative = result_dir.strip_prefix(output).expect("under the output dir");
                let relative = relative.to_str().expect("UTF-8 scenario names");
                let scenario = scenario_of(relative)
                    .unwrap_or_else(|| panic!("unexpected result directory {relative}"))
                    .to_owned();
                let checks: Vec<Value> =
                    serde_json::from_str(&std::fs::read_to_string(&path).expect("read checks.json"))
                        .expect("checks.json is a JSON array");
                let previous = outcomes.insert(scenario.clone(), judge(&checks, result_dir));
                assert!(previous.is_none(), "two result directories for {scenario}");
            }
        }
    }
    outcomes
}

/// The scenario names of the suite's summary (`✓ name: …` / `✗ name: …`), to check that every
/// scenario it ran left a result.
fn summary_scenarios(stdout: &str) -> BTreeSet<String> {
    stdout
        .lines()
        .filter_map(|line| line.strip_prefix("✓ ").or_else(|| line.strip_prefix("✗ ")))
        .filter_map(|rest| rest.split_once(": ").map(|(name, _)| name.to_owned()))
        .collect()
}

/// The client's own complaint for a failing scenario, when it wrote one.
fn client_stderr(result_dir: &Path) -> String {
    std::fs::read_to_string(result_dir.join("stderr.txt"))
        .unwrap_or_default()
        .lines()
        .filter(|line| line.starts_with("mcp-conformance-client"))
        .collect::<Vec<_>>()
        .join(" | ")
}

#[test]
fn conformance_client_suite_matches_expected_failures() {
    let dir = conformance_dir();
    let bin_dir = dir.join("node_modules/.bin");
    let node = bin_dir.join("node");
    let suite = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        node.exists() && suite.exists(),
        "the conformance suite or its Node is missing under {}: run scripts/test.sh",
        dir.display()
    );
    let output = tempfile::tempdir().expect("a temp dir");
    // Node 22 first on PATH, so nothing the suite starts picks up an older system Node.
    let path = std::env::join_paths(
        std::iter::once(bin_dir).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .expect("a valid PATH");
    // The suite splits the command on spaces: the target dir must not contain any.
    let client = env!("CARGO_BIN_EXE_mcp-conformance-client");
    assert!(!client.contains(' '), "the client's path has a space: {client}");
    let run = Command::new(&node)
        .arg(&suite)
        .args([
            "client",
            "--command",
            client,
            "--suite",
            "all",
            "--spec-version",
            SPEC_VERSION,
        ])
        .arg("-o")
        .arg(output.path())
        .env("PATH", path)
        .output()
        .expect("the conformance suite runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);

    let outcomes = collect_outcomes(output.path());
    let summary = summary_scenarios(&stdout);
    assert!(
        !summary.is_empty(),
        "the suite printed no summary (exit {:?})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        run.status.code()
    );
    let ran: BTreeSet<String> = outcomes.keys().cloned().collect();
    assert_eq!(
        ran, summary,
        "the scenarios with results differ from the suite's summary"
    );

    let expected = expected_failures();
    let mut problems = Vec::new();
    for (scenario, outcome) in &outcomes {
        match (outcome.passed, expected.contains_key(scenario)) {
            (false, false) => {
                let client = client_stderr(&outcome.result_dir);
                let client = if client.is_empty() {
                    String::new()
                } else {
                    format!("; {client}")
                };
                problems.push(format!(
                    "new failure {scenario}: {}{client} ({})",
                    outcome.problems.join("; "),
                    outcome.result_dir.display()
                ));
            }
            (true, true) => problems.push(format!(
                "stale entry {scenario}: it passes now, remove it from conformance-expected-failures.txt"
            )),
            _ => {}
        }
    }
    for scenario in expected.keys().filter(|scenario| !outcomes.contains_key(*scenario)) {
        problems.push(format!(
            "stale entry {scenario}: the suite no longer runs it, remove it from conformance-expected-failures.txt"
        ));
    }
    // Keep the results of a failing run for a look at stdout.txt, stderr.txt and checks.json.
    let kept = if problems.is_empty() { None } else { Some(output.keep()) };
    assert!(
        problems.is_empty(),
        "conformance suite (spec {SPEC_VERSION}) against mcp-conformance-client:\n  {}\nresults kept in {}",
        problems.join("\n  "),
        kept.map(|dir| dir.display().to_string()).unwrap_or_default()
    );
}

#[test]
fn conformance_result_dirs_name_their_scenario() {
    assert_eq!(scenario_of("tools_call-2026-11-30T10-14-39-301Z"), Some("tools_call"));
    assert_eq!(
        scenario_of("auth/metadata-var1-2026-11-30T10-14-39-301Z"),
        Some("auth/metadata-var1")
    );
    assert_eq!(scenario_of("tools_call"), None);
    assert_eq!(scenario_of("-2026-11-30T10-14-39-301Z"), None);
}

#[test]
fn conformance_scenarios_with_only_informational_checks_fail() {
    let info = serde_json::json!([{"id": "incoming-request", "status": "INFO"}]);
    let ok = serde_json::json!([{"id": "a", "status": "SUCCESS"}, {"id": "b", "status": "INFO"}]);
    let warned = serde_json::json!([{"id": "a", "status": "SUCCESS"}, {"id": "b", "status": "WARNING"}]);
    let checks = |value: Value| value.as_array().cloned().unwrap();
    assert!(!judge(&checks(info), PathBuf::new()).passed);
    assert!(judge(&checks(ok), PathBuf::new()).passed);
    assert!(!judge(&checks(warned), PathBuf::new()).passed);
}

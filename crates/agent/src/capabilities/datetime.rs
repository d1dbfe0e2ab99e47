//! The current date and time. Models have no clock and a training cut-off; without this they guess.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::args::no_arguments_schema;
use crate::tools::{LocalTool, LocalToolSet, ToolOutput, ToolSpec};

const DESCRIPTION: &str = "The current UTC date, time and weekday. Call it whenever an answer depends on \
     them; never assume them.";

/// The `current-datetime` set with its one tool, `get_current_datetime`.
pub fn current_datetime_tools() -> LocalToolSet {
    let spec = ToolSpec::new("get_current_datetime", DESCRIPTION, no_arguments_schema());
    let tool = LocalTool::new(spec, |_arguments, _cx| async {
        Ok(ToolOutput::json(&describe(Utc::now())))
    });
    LocalToolSet::system("current-datetime", vec![tool])
}

fn describe(now: DateTime<Utc>) -> Value {
    json!({
        "unix_epoch_ms": now.timestamp_millis(),
        "iso": now.to_rfc3339_opts(SecondsFormat::Millis, true),
        "weekday": now.format("%A").to_string(),
    })
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use serde_json::json;

    use super::*;
    use crate::capabilities::test_support::{call, ok_text};
    use crate::tools::ToolSet;

    #[test]
    fn describes_an_instant() {
        let instant = Utc.timestamp_millis_opt(1_700_000_000_123).unwrap();
        assert_eq!(
            describe(instant),
            json!({"unix_epoch_ms": 1_700_000_000_123_i64, "iso": "2023-11-14T22:13:20.123Z", "weekday": "Tuesday"})
        );
    }

    #[tokio::test]
    async fn the_tool_reports_now() {
        let set = current_datetime_tools();
        assert_eq!(set.name(), "current-datetime");
        let specs = set
            .list_tools(&crate::capabilities::test_support::context())
            .await
            .unwrap();
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].name, "get_current_datetime");
        assert_eq!(specs[0].input_schema, no_arguments_schema());

        let before = Utc::now().timestamp_millis();
        let value: Value =
            serde_json::from_str(&ok_text(&call(&set, "get_current_datetime", json!({})).await)).unwrap();
        let after = Utc::now().timestamp_millis();
        let reported = value["unix_epoch_ms"].as_i64().unwrap();
        assert!((before..=after).contains(&reported));
        let iso = value["iso"].as_str().unwrap();
        assert!(
            iso.ends_with('Z') && iso.len() == "2023-11-14T22:13:20.123Z".len(),
            "{iso}"
        );
        assert_eq!(DateTime::parse_from_rfc3339(iso).unwrap().timestamp_millis(), reported);
        assert!(value["weekday"].as_str().unwrap().ends_with("day"));
    }
}

//! A schedule's cron expression read in its time zone: validation (the expression, the zone, the minimum
//! interval) and the occurrences after a time. Croner parses; occurrences are computed in the zone so that
//! "9:00" stays 9:00 local across daylight-saving changes, and handed to the store as epoch milliseconds.

use std::time::Duration;

use chrono::{DateTime, TimeZone as _};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds};
use trueforge_store::Timestamp;

/// How far ahead the minimum-interval check looks: a year covers every pattern of months and weekdays.
const INTERVAL_CHECK_SPAN_MS: i64 = 366 * 24 * 3600 * 1000;
/// How many consecutive occurrences the check compares at most; a cron whose first gaps are all long
/// enough over this many is accepted (a denser one would have shown a short gap within them).
const INTERVAL_CHECK_OCCURRENCES: usize = 600;

/// Why a cron expression or zone is refused, in words for the API's 400.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    #[error("invalid cron expression {expression:?}: {reason}")]
    Expression { expression: String, reason: String },
    #[error("unknown time zone {0:?} (expected an IANA name such as Europe/Paris or UTC)")]
    Zone(String),
    #[error("cron expression {expression:?} never occurs")]
    Never { expression: String },
    #[error(
        "cron expression {expression:?} runs {gap_seconds} s apart at its closest; the minimum interval is {minimum_seconds} s"
    )]
    TooFrequent {
        expression: String,
        gap_seconds: i64,
        minimum_seconds: u64,
    },
}

/// A parsed cron in its zone.
#[derive(Debug, Clone)]
pub struct CronSchedule {
    cron: Cron,
    zone: Tz,
}

impl CronSchedule {
    /// Parses `expression` (five fields, or six with seconds first) in the IANA zone `timezone`.
    pub fn parse(expression: &str, timezone: &str) -> Result<Self, CronError> {
        let zone: Tz = timezone.parse().map_err(|_| CronError::Zone(timezone.to_owned()))?;
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .build()
            .parse(expression)
            .map_err(|error| CronError::Expression {
                expression: expression.to_owned(),
                reason: error.to_string(),
            })?;
        Ok(Self { cron, zone })
    }

    /// Parses and checks that two consecutive occurrences are never closer than `minimum` (within the next
    /// year), and that there is an occurrence at all.
    pub fn parse_with_minimum(
        expression: &str,
        timezone: &str,
        minimum: Duration,
        now: Timestamp,
    ) -> Result<Self, CronError> {
        let schedule = Self::parse(expression, timezone)?;
        let Some(first) = schedule.next_after(now) else {
            return Err(CronError::Never {
                expression: expression.to_owned(),
            });
        };
        let minimum_ms = i64::try_from(minimum.as_millis()).unwrap_or(i64::MAX);
        let mut previous = first;
        for _ in 0..INTERVAL_CHECK_OCCURRENCES {
            let Some(next) = schedule.next_after(previous) else {
                break;
            };
            let gap = next.millis() - previous.millis();
            if gap < minimum_ms {
                return Err(CronError::TooFrequent {
                    expression: expression.to_owned(),
                    gap_seconds: gap / 1000,
                    minimum_seconds: minimum.as_secs(),
                });
            }
            if next.millis() - first.millis() > INTERVAL_CHECK_SPAN_MS {
                break;
            }
            previous = next;
        }
        Ok(schedule)
    }

    /// The first occurrence strictly after `time`; `None` when there is none (or it is beyond what the
    /// calendar library represents).
    pub fn next_after(&self, time: Timestamp) -> Option<Timestamp> {
        let utc = DateTime::from_timestamp_millis(time.millis())?;
        let local = self.zone.from_utc_datetime(&utc.naive_utc());
        let next = self.cron.find_next_occurrence(&local, false).ok()?;
        Some(Timestamp(next.timestamp_millis()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// 2026-01-05T08:30:00Z, a Monday.
    const MONDAY: Timestamp = Timestamp(1_767_601_800_000);

    #[test]
    fn occurrences_are_read_in_the_zone() {
        let utc = CronSchedule::parse("0 9 * * *", "UTC").unwrap();
        assert_eq!(utc.next_after(MONDAY).unwrap().to_iso(), "2026-01-05T09:00:00.000Z");
        let paris = CronSchedule::parse("0 9 * * *", "Europe/Paris").unwrap();
        assert_eq!(paris.next_after(MONDAY).unwrap().to_iso(), "2026-01-06T08:00:00.000Z");
        let seconds = CronSchedule::parse("*/10 * * * * *", "UTC").unwrap();
        assert_eq!(seconds.next_after(MONDAY).unwrap().to_iso(), "2026-01-05T08:30:10.000Z");
    }

    #[test]
    fn bad_expressions_zones_and_short_intervals_are_refused() {
        let hour = Duration::from_secs(3600);
        assert!(matches!(
            CronSchedule::parse_with_minimum("not a cron", "UTC", hour, MONDAY),
            Err(CronError::Expression { .. })
        ));
        assert_eq!(
            CronSchedule::parse_with_minimum("0 * * * *", "Mars/Olympus", hour, MONDAY).unwrap_err(),
            CronError::Zone("Mars/Olympus".to_owned())
        );
        let error = CronSchedule::parse_with_minimum("*/5 * * * *", "UTC", hour, MONDAY).unwrap_err();
        assert_eq!(
            error.to_string(),
            "cron expression \"*/5 * * * *\" runs 300 s apart at its closest; the minimum interval is 3600 s"
        );
        // Close occurrences once a day are found, not only the first gap.
        assert!(matches!(
            CronSchedule::parse_with_minimum("0,30 9 * * *", "UTC", hour, MONDAY),
            Err(CronError::TooFrequent { gap_seconds: 1800, .. })
        ));
        assert!(CronSchedule::parse_with_minimum("0 * * * *", "UTC", hour, MONDAY).is_ok());
        assert!(CronSchedule::parse_with_minimum("* * * * * *", "UTC", Duration::from_secs(1), MONDAY).is_ok());
    }
}

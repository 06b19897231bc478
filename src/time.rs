//! Durations and timestamps as operators type them, and as the databases store them.

use std::time::Duration;

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, TimeZone, Timelike, Utc};

/// `7d`, `36h`, `90s`, `2w 3d`: humantime's grammar, with a message that says what is expected.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    // Taken by the options, for this message rather than clap's "unexpected argument '-3'".
    if let Some(unsigned) = text.strip_prefix('-') {
        if humantime::parse_duration(unsigned).is_ok_and(|duration| !duration.is_zero()) {
            return Err(format!(
                "'{text}' is negative; expected a duration without a sign, such as 90s, 15m, \
                 12h, 7d or 2w"
            ));
        }
    }
    humantime::parse_duration(text).map_err(|error| {
        // humantime's own words name character positions ("expected number at 0").
        let reason = match error {
            humantime::DurationError::Empty => "the duration is empty".to_string(),
            humantime::DurationError::UnknownUnit { unit, .. } if unit.is_empty() => {
                format!("'{text}' has no unit")
            }
            humantime::DurationError::UnknownUnit { unit, .. } => {
                format!("'{text}' has the unknown unit '{unit}'")
            }
            humantime::DurationError::NumberOverflow => format!("'{text}' is too large"),
            _ => format!("'{text}' is not a duration"),
        };
        format!("{reason}; expected a duration such as 90s, 15m, 12h, 7d or 2w")
    })
}

/// The longest lock wait a migration may be given: PostgreSQL's `lock_timeout` is a 32-bit
/// count of milliseconds (24 days and a bit).
const MAX_LOCK_TIMEOUT: Duration = Duration::from_millis(i32::MAX as u64);

/// `--lock-timeout`: a duration, 0 for no limit, at most [`MAX_LOCK_TIMEOUT`].
pub fn parse_lock_timeout(text: &str) -> Result<Duration, String> {
    match parse_duration(text)? {
        limit if limit > MAX_LOCK_TIMEOUT => Err(format!(
            "'{}' is longer than PostgreSQL takes as a lock timeout; expected at most \
             2147483647ms (24d 20h 31m 23s), or 0 to wait without limit",
            text.trim()
        )),
        limit => Ok(limit),
    }
}

/// A duration that must not be zero: a timeout of nothing fails every call.
pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    parse_more_than_nothing(
        text,
        "a timeout of 0 would fail every call; expected a duration such as 5s or 1m",
    )
}

/// The longest a timeout or a pause may be. Longer is surely a typo (`9999999999w`), and
/// a deadline that far ahead is past what a clock can hold: the wait would end at once.
const MAX_WAIT: Duration = Duration::from_secs(24 * 60 * 60);

/// A duration to wait: at most [`MAX_WAIT`].
pub fn parse_wait(text: &str) -> Result<Duration, String> {
    match parse_duration(text)? {
        long if long > MAX_WAIT => Err(format!(
            "'{}' is longer than a day; expected a duration such as 5s, 1m or 2h",
            text.trim()
        )),
        duration => Ok(duration),
    }
}

/// A duration to wait ([`parse_wait`]), refused with `if_zero` when it is none.
pub fn parse_more_than_nothing(text: &str, if_zero: &str) -> Result<Duration, String> {
    match parse_wait(text)? {
        zero if zero.is_zero() => Err(if_zero.to_string()),
        duration => Ok(duration),
    }
}

/// RFC 3339 (`2026-11-01T00:00:00Z`, any offset), or `YYYY-MM-DD[ HH:MM[:SS[.fff]]]` taken as
/// UTC; in the years 1000 to 9999, which every backend stores and compares as it should.
pub fn parse_timestamp(text: &str) -> Result<DateTime<Utc>, String> {
    let parsed = parse_any_timestamp(text)?;
    // chrono reads a 60th second as a leap second, which no backend stores.
    if parsed.nanosecond() >= 1_000_000_000 {
        return Err(format!(
            "'{}' has a 60th second; expected seconds 00 to 59",
            text.trim()
        ));
    }
    if !(1000..=9999).contains(&parsed.year()) {
        return Err(format!(
            "'{}' is in the year {}; expected a timestamp in the years 1000 to 9999",
            text.trim(),
            parsed.year()
        ));
    }
    Ok(parsed)
}

/// A time as tables and messages show it: UTC, to the millisecond, which every backend
/// stores (`2026-11-01 08:00:00.000 UTC`).
pub fn shown_utc(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string()
}

/// The first Kafka timestamp (milliseconds since the epoch) at or after `at`: Kafka's times
/// are whole milliseconds, so a time between two of them asks for the later one, as "at or
/// after" means.
pub fn kafka_millis_from(at: DateTime<Utc>) -> i64 {
    let within_a_milli = at.timestamp_subsec_nanos() % 1_000_000 != 0;
    at.timestamp_millis() + i64::from(within_a_milli)
}

/// That long before now; `None` when it is before what a timestamp holds (subtracting
/// would panic).
pub fn ago(age: Duration) -> Option<DateTime<Utc>> {
    chrono::Duration::from_std(age)
        .ok()
        .and_then(|age| Utc::now().checked_sub_signed(age))
}

/// A timestamp (as [`parse_timestamp`]) or `-DURATION`, that long before now.
pub fn parse_time_or_ago(text: &str) -> Result<DateTime<Utc>, String> {
    let Some(before) = text.trim().strip_prefix('-') else {
        return parse_timestamp(text)
            .map_err(|error| format!("{error}; or -DURATION for that long ago, e.g. -7d"));
    };
    ago(parse_ago(text)?)
        .filter(|at| at.year() >= 1000)
        .ok_or_else(|| format!("'{before}' ago is before the year 1000"))
}

/// `-DURATION`, a time ago: the duration after the `-`, refused in words that quote all of
/// `text` (`--pruned-before --dry-run` is no `'-dry-run'`).
pub fn parse_ago(text: &str) -> Result<Duration, String> {
    const EXPECTED: &str = "expected -DURATION, e.g. -7d for 7 days ago";
    let text = text.trim();
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    if unsigned.is_empty() || unsigned.starts_with('-') {
        return Err(format!("'{text}' is no time ago; {EXPECTED}"));
    }
    parse_duration(unsigned)
        .map_err(|error| error.replacen(&format!("'{unsigned}'"), &format!("'{text}'"), 1))
}

fn parse_any_timestamp(text: &str) -> Result<DateTime<Utc>, String> {
    let text = text.trim();
    if let Ok(parsed) = DateTime::parse_from_rfc3339(text) {
        return Ok(parsed.with_timezone(&Utc));
    }
    for format in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(text, format) {
            return Ok(Utc.from_utc_datetime(&naive));
        }
    }
    if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(Utc.from_utc_datetime(&date.and_hms_opt(0, 0, 0).expect("midnight exists")));
    }
    Err(format!(
        "'{text}' is not a timestamp; expected RFC 3339 (2026-11-01T08:00:00Z) or YYYY-MM-DD[ HH:MM[:SS[.fff]]] in UTC"
    ))
}

/// Parse a timestamp as a store returns it (always UTC): `YYYY-MM-DD HH:MM:SS[.f]`, with `T`
/// instead of the space, or with a trailing `Z`/offset as applications sometimes write into SQLite;
/// also SQLite's shorter time values, `YYYY-MM-DD HH:MM` and `YYYY-MM-DD`.
pub fn parse_stored_timestamp(text: &str) -> anyhow::Result<DateTime<Utc>> {
    let trimmed = text.trim();
    if let Ok(parsed) = DateTime::parse_from_rfc3339(trimmed) {
        return Ok(parsed.with_timezone(&Utc));
    }
    let without_zone = trimmed.trim_end_matches('Z');
    for format in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(without_zone, format) {
            return Ok(Utc.from_utc_datetime(&naive));
        }
    }
    if let Ok(date) = NaiveDate::parse_from_str(without_zone, "%Y-%m-%d") {
        return Ok(Utc.from_utc_datetime(&date.and_hms_opt(0, 0, 0).expect("midnight exists")));
    }
    anyhow::bail!("unrecognised timestamp '{text}' in processed_at (expected YYYY-MM-DD HH:MM:SS[.fff] in UTC)")
}

/// A `processed_at` as a store returns it: a time, or a value that no time stands for, kept
/// as the store shows it (PostgreSQL's `infinity` and years BC or past 9999, MariaDB's zero
/// date `0000-00-00`, a number in SQLite). Such a row is shown as it is rather than keeping
/// inspect from reporting on all the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredTime {
    At(DateTime<Utc>),
    NotATime(String),
}

impl StoredTime {
    pub fn read(text: &str) -> StoredTime {
        match parse_stored_timestamp(text) {
            Ok(at) => StoredTime::At(at),
            Err(_) => StoredTime::NotATime(text.to_string()),
        }
    }

    pub fn time(&self) -> Option<DateTime<Utc>> {
        match self {
            StoredTime::At(at) => Some(*at),
            StoredTime::NotATime(_) => None,
        }
    }

    /// RFC 3339 for a time, as JSON has it; the stored text otherwise.
    pub fn to_rfc3339(&self) -> String {
        match self {
            StoredTime::At(at) => at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
            StoredTime::NotATime(text) => text.clone(),
        }
    }

    /// Formats a time with `format`; the stored text otherwise.
    pub fn format(&self, format: &str) -> String {
        match self {
            StoredTime::At(at) => at.format(format).to_string(),
            StoredTime::NotATime(text) => text.clone(),
        }
    }
}

impl serde::Serialize for StoredTime {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            StoredTime::At(at) => at.serialize(serializer),
            StoredTime::NotATime(text) => serializer.serialize_str(text),
        }
    }
}

/// Human form of an age, in its two largest units ("41d 5h", "3h 2m", "42s"): enough to
/// read at a glance, unlike humantime's full "1month 11days 5h 26m 24s".
pub fn format_age(age: chrono::Duration) -> String {
    let seconds = age.num_seconds().max(0);
    let (days, hours, minutes) = (seconds / 86_400, seconds / 3600 % 24, seconds / 60 % 60);
    match seconds {
        s if s >= 86_400 && hours > 0 => format!("{days}d {hours}h"),
        s if s >= 86_400 => format!("{days}d"),
        s if s >= 3600 && minutes > 0 => format!("{}h {minutes}m", s / 3600),
        s if s >= 3600 => format!("{}h", s / 3600),
        s if s >= 60 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_operators_type() {
        assert_eq!(
            parse_duration("7d").unwrap(),
            Duration::from_secs(7 * 86_400)
        );
        assert_eq!(
            parse_duration("36h").unwrap(),
            Duration::from_secs(36 * 3600)
        );
        assert_eq!(
            parse_duration("2w 1d").unwrap(),
            Duration::from_secs(15 * 86_400)
        );
        // The case of the unit matters, as the help and the README say.
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert_eq!(
            parse_duration("1M").unwrap(),
            Duration::from_secs(2_630_016)
        );
        assert_eq!(
            parse_duration("1y").unwrap(),
            Duration::from_secs(31_557_600)
        );
    }

    /// Kafka's timestamps are milliseconds: a time within one asks for the next.
    #[test]
    fn kafka_millis_round_up_to_the_next_millisecond() {
        let at = |text: &str| kafka_millis_from(parse_timestamp(text).unwrap());
        assert_eq!(at("2026-01-01T09:00:00Z"), 1_767_258_000_000);
        assert_eq!(at("2026-01-01T09:00:00.001Z"), 1_767_258_000_001);
        assert_eq!(at("2026-01-01T09:00:00.0001Z"), 1_767_258_000_001);
        assert_eq!(at("2026-01-01T09:00:00.000999999Z"), 1_767_258_000_001);
        assert_eq!(at("1969-12-31T23:59:59.9995Z"), 0);
        assert_eq!(at("1969-12-31T23:59:59.999Z"), -1);
    }

    #[test]
    fn a_time_or_a_duration_ago() {
        let before = Utc::now() - chrono::Duration::days(7);
        let ago = parse_time_or_ago("-7d").unwrap();
        let after = Utc::now() - chrono::Duration::days(7);
        assert!(before <= ago && ago <= after, "{ago}");
        assert_eq!(
            parse_time_or_ago("2026-11-01T08:00:00Z").unwrap(),
            Utc.with_ymd_and_hms(2026, 11, 1, 8, 0, 0).unwrap()
        );
        assert!(parse_time_or_ago("7d").unwrap_err().contains("-DURATION"));
        assert_eq!(
            parse_duration("-30m").unwrap_err(),
            "'-30m' is negative; expected a duration without a sign, such as 90s, 15m, 12h, 7d \
             or 2w"
        );
        assert_eq!(
            parse_time_or_ago("-7x").unwrap_err(),
            "'-7x' has the unknown unit 'x'; expected a duration such as 90s, 15m, 12h, 7d or 2w"
        );
        for no_ago in ["--dry-run", "--7d", "-"] {
            assert_eq!(
                parse_time_or_ago(no_ago).unwrap_err(),
                format!("'{no_ago}' is no time ago; expected -DURATION, e.g. -7d for 7 days ago")
            );
        }
        assert!(parse_time_or_ago("-5000y")
            .unwrap_err()
            .contains("before the year 1000"));
    }

    #[test]
    fn a_leap_second_is_refused() {
        for text in ["2026-11-01 08:00:60", "2026-11-01T08:00:60Z"] {
            assert_eq!(
                parse_timestamp(text).unwrap_err(),
                format!("'{text}' has a 60th second; expected seconds 00 to 59")
            );
        }
        assert!(parse_timestamp("2026-11-01 08:00:59.999").is_ok());
    }

    #[test]
    fn timeouts_are_more_than_nothing() {
        assert_eq!(parse_timeout("5s").unwrap(), Duration::from_secs(5));
        for zero in ["0s", "0ms"] {
            assert!(parse_timeout(zero).unwrap_err().contains("a timeout of 0"));
        }
        // At most a day: a deadline far past it is past what a clock holds.
        assert_eq!(parse_timeout("24h").unwrap(), Duration::from_secs(86_400));
        assert_eq!(parse_wait("0s").unwrap(), Duration::ZERO);
        for long in ["24h 1s", "9999999999w"] {
            assert_eq!(
                parse_timeout(long).unwrap_err(),
                format!("'{long}' is longer than a day; expected a duration such as 5s, 1m or 2h")
            );
            assert!(parse_wait(long).is_err());
        }
    }

    #[test]
    fn a_lock_timeout_is_at_most_what_postgresql_takes() {
        assert_eq!(parse_lock_timeout("0").unwrap(), Duration::ZERO);
        assert_eq!(
            parse_lock_timeout("24d").unwrap(),
            Duration::from_secs(24 * 86_400)
        );
        assert_eq!(
            parse_lock_timeout("2147483647ms").unwrap(),
            Duration::from_millis(2_147_483_647)
        );
        for long in ["2147483648ms", "25d", "99999999999d"] {
            assert!(
                parse_lock_timeout(long)
                    .unwrap_err()
                    .contains("expected at most 2147483647ms (24d 20h 31m 23s)"),
                "{long}"
            );
        }
    }

    #[test]
    fn a_minute_without_seconds_may_follow_a_t() {
        for text in [
            "2026-11-07T00:00",
            "2026-11-07 00:00",
            "2026-11-07T00:00:00",
        ] {
            assert_eq!(
                parse_timestamp(text).unwrap(),
                Utc.with_ymd_and_hms(2026, 11, 7, 0, 0, 0).unwrap(),
                "{text}"
            );
        }
    }

    #[test]
    fn bad_durations_say_what_is_expected() {
        let expected = "; expected a duration such as 90s, 15m, 12h, 7d or 2w";
        for (bad, reason) in [
            ("7x", "'7x' has the unknown unit 'x'"),
            ("7", "'7' has no unit"),
            ("--1d", "'--1d' is not a duration"),
            ("", "the duration is empty"),
            ("d7", "'d7' is not a duration"),
            ("abc", "'abc' is not a duration"),
            ("1.5.d", "'1.5.d' is not a duration"),
            (
                "99999999999999999999999s",
                "'99999999999999999999999s' is too large",
            ),
        ] {
            assert_eq!(
                parse_duration(bad).unwrap_err(),
                format!("{reason}{expected}")
            );
        }
    }

    #[test]
    fn timestamps_in_every_accepted_form() {
        let expected = Utc.with_ymd_and_hms(2026, 11, 1, 8, 30, 0).unwrap();
        for text in [
            "2026-11-01T08:30:00Z",
            "2026-11-01T09:30:00+01:00",
            "2026-11-01 08:30:00",
            "2026-11-01T08:30:00",
            "2026-11-01 08:30",
        ] {
            assert_eq!(parse_timestamp(text).unwrap(), expected, "{text}");
        }
        assert_eq!(
            parse_timestamp("2026-11-01").unwrap(),
            Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap()
        );
        assert!(parse_timestamp("yesterday")
            .unwrap_err()
            .contains("RFC 3339"));
    }

    #[test]
    fn timestamps_outside_the_years_databases_store_are_refused() {
        for (text, year) in [("+10000-01-01", 10000), ("0999-12-31", 999)] {
            let message = parse_timestamp(text).unwrap_err();
            assert_eq!(
                message,
                format!("'{text}' is in the year {year}; expected a timestamp in the years 1000 to 9999")
            );
        }
        assert!(parse_timestamp("9999-12-31 23:59:59").is_ok());
        assert!(parse_timestamp("1000-01-01").is_ok());
        // Kafka's times start in 1970; earlier ones find the log start (see kafka.rs).
        assert!(parse_timestamp("1969-12-31").is_ok());
    }

    #[test]
    fn stored_timestamps_from_each_backend() {
        let expected = Utc.with_ymd_and_hms(2026, 11, 1, 8, 30, 0).unwrap()
            + chrono::Duration::microseconds(123_456);
        for text in [
            "2026-11-01 08:30:00.123456",
            "2026-11-01T08:30:00.123456",
            "2026-11-01T08:30:00.123456Z",
        ] {
            assert_eq!(parse_stored_timestamp(text).unwrap(), expected, "{text}");
        }
        assert!(parse_stored_timestamp("1700000000").is_err());
        // SQLite's shorter time values.
        let minute = Utc.with_ymd_and_hms(2026, 11, 1, 8, 30, 0).unwrap();
        for text in ["2026-11-01 08:30", "2026-11-01T08:30", "2026-11-01T08:30Z"] {
            assert_eq!(parse_stored_timestamp(text).unwrap(), minute, "{text}");
        }
        assert_eq!(
            parse_stored_timestamp("2026-11-01").unwrap(),
            Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap()
        );
    }

    #[test]
    fn values_that_are_no_time_are_kept_as_the_store_shows_them() {
        let at = Utc.with_ymd_and_hms(2026, 11, 1, 8, 30, 0).unwrap();
        assert_eq!(
            StoredTime::read("2026-11-01 08:30:00.000000"),
            StoredTime::At(at)
        );
        for text in [
            "-infinity",
            "0000-00-00 00:00:00.000000",
            "12000-01-01 00:00:00",
            "1700000000",
        ] {
            let stored = StoredTime::read(text);
            assert_eq!(stored, StoredTime::NotATime(text.to_string()));
            assert_eq!(stored.format("%Y"), text);
            assert_eq!(serde_json::to_value(&stored).unwrap(), text);
        }
        assert_eq!(
            serde_json::to_value(StoredTime::At(at)).unwrap(),
            serde_json::to_value(at).unwrap()
        );
    }

    #[test]
    fn ages_are_rounded_for_reading() {
        assert_eq!(format_age(chrono::Duration::seconds(42)), "42s");
        assert_eq!(
            format_age(chrono::Duration::seconds(3 * 3600 + 125)),
            "3h 2m"
        );
        assert_eq!(
            format_age(chrono::Duration::seconds(3 * 86_400 + 3700)),
            "3d 1h"
        );
        assert_eq!(
            format_age(chrono::Duration::seconds(41 * 86_400 + 59)),
            "41d"
        );
        assert_eq!(format_age(chrono::Duration::seconds(-5)), "0s");
    }
}

use chrono::{DateTime, NaiveDate, NaiveDateTime, SecondsFormat, Utc};

use crate::Error;

/// Which side of an inclusive range a time bound is on; both sides read a bare date as its
/// first instant (`00:00:00Z`), as the contract says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeBound {
    /// `modified_after`: the time itself is included.
    After,
    /// `modified_before`: the time itself is included.
    Before,
}

/// Parses an ISO 8601 UTC time into Unix milliseconds: a bare date (`2024-01-01` =
/// `00:00:00Z`), RFC 3339 with any offset, or a date-time without offset (read as UTC).
pub fn parse_time(s: &str) -> Result<i64, Error> {
    let t = s.trim();
    if let Ok(d) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        let dt = d
            .and_hms_opt(0, 0, 0)
            .ok_or_else(|| Error::InvalidTime(s.into()))?;
        return Ok(dt.and_utc().timestamp_millis());
    }
    if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
        return Ok(dt.with_timezone(&Utc).timestamp_millis());
    }
    for fmt in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
    ] {
        if let Ok(dt) = NaiveDateTime::parse_from_str(t, fmt) {
            return Ok(dt.and_utc().timestamp_millis());
        }
    }
    Err(Error::InvalidTime(s.to_string()))
}

/// Formats Unix milliseconds as RFC 3339 UTC with seconds and `Z`.
pub fn format_rfc3339(millis: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(millis)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The current time in Unix milliseconds.
pub fn now_millis() -> i64 {
    Utc::now().timestamp_millis()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_forms() {
        assert_eq!(parse_time("1970-01-02").unwrap(), 86_400_000);
        assert_eq!(parse_time("1970-01-01T00:00:01Z").unwrap(), 1000);
        assert_eq!(parse_time("1970-01-01T01:00:00+01:00").unwrap(), 0);
        assert_eq!(parse_time("1970-01-01T00:00:02").unwrap(), 2000);
        assert!(parse_time("yesterday").is_err());
        assert!(parse_time("2024-13-01").is_err());
    }

    #[test]
    fn formats() {
        assert_eq!(format_rfc3339(1_000), "1970-01-01T00:00:01Z");
    }
}

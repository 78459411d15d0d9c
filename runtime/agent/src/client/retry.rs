//! When to try again, and how long to wait first.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{ClientConfig, ClientError};

/// A server may ask for a pause with `Retry-After`; beyond a minute an
/// interactive agent is better off reporting the error.
const RETRY_AFTER_MAX: Duration = Duration::from_secs(60);

/// A failed attempt: the error, and whether another attempt may succeed.
#[derive(Debug)]
pub(crate) struct Failure {
    pub error: ClientError,
    pub retry: bool,
    /// The server's `Retry-After`, when it sent one.
    pub retry_after: Option<Duration>,
    /// The server failed a request that carried tools, in a way that
    /// counts against native tool calls (see [`super::verdict::fails_tools`]).
    pub tools_failure: bool,
}

impl Failure {
    /// A transient failure: connection, timeout, overload, cut stream.
    pub fn transient(error: ClientError) -> Failure {
        Failure {
            error,
            retry: true,
            retry_after: None,
            tools_failure: false,
        }
    }

    /// A failure that repeating the same request cannot fix.
    pub fn fatal(error: ClientError) -> Failure {
        Failure {
            error,
            retry: false,
            retry_after: None,
            tools_failure: false,
        }
    }
}

/// The pause before the attempt after failed attempt number `failed`
/// (1-based): the server's `Retry-After` (capped at a minute) when given,
/// else "full jitter", uniform in `[0, min(max, base · 2^(failed-1))]`, which
/// spreads out clients that failed together.
pub(crate) fn wait(cfg: &ClientConfig, failed: u32, retry_after: Option<Duration>) -> Duration {
    if let Some(d) = retry_after {
        return d.min(RETRY_AFTER_MAX);
    }
    let factor = 1u32 << failed.saturating_sub(1).min(20);
    let cap = cfg.backoff_base.saturating_mul(factor).min(cfg.backoff_max);
    let cap_nanos = u64::try_from(cap.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(rand::random_range(0..=cap_nanos))
}

/// Parses a `Retry-After` value: delay-seconds, or an HTTP date
/// (`Sun, 06 Nov 1994 08:49:37 GMT`) measured from `now`.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e9)));
    }
    let at = UNIX_EPOCH + Duration::from_secs(http_date(value)?);
    // A date in the past means "now".
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Seconds since the epoch of an IMF-fixdate, the only date format HTTP/1.1
/// servers may send.
fn http_date(s: &str) -> Option<u64> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [_weekday, day, month, year, time, zone] = parts.as_slice() else {
        return None;
    };
    if !zone.eq_ignore_ascii_case("GMT") {
        return None;
    }
    let day: u64 = day.parse().ok()?;
    let month = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(month))? as u64 + 1;
    let year: i64 = year.parse().ok()?;
    let mut hms = time.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, sec) = (hms.next()??, hms.next()??, hms.next()??);
    if !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 || year < 1970 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(u64::try_from(days).ok()? * 86_400 + h * 3600 + m * 60 + sec)
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
/// algorithm).
fn days_from_civil(year: i64, month: u64, day: u64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = month as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // 1994-11-06 08:49:37
        assert_eq!(parse_retry_after(" 3 ", now), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:47 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }

    #[test]
    fn backoff_is_capped() {
        let mut cfg = ClientConfig::new("http://x/v1", "m");
        cfg.backoff_base = Duration::from_millis(100);
        cfg.backoff_max = Duration::from_millis(250);
        for failed in 1..40 {
            assert!(wait(&cfg, failed, None) <= Duration::from_millis(250));
        }
        assert!(wait(&cfg, 1, None) <= Duration::from_millis(100));
        let long = Some(Duration::from_secs(600));
        assert_eq!(wait(&cfg, 1, long), RETRY_AFTER_MAX);
    }
}

//! A soft deadline for long searches. The host kills a call at its timeout
//! and the model then gets nothing; stopping a little earlier returns what
//! was found so far. The host tells the call its time limit
//! (`warden:tool/call`), counted from the start of the call like the
//! guest's own clock.

use std::time::{Duration, Instant};

/// The variable that sets the soft deadline, in milliseconds (tests).
pub const VAR: &str = "WARDEN_SOFT_DEADLINE_MS";
/// The soft deadline when the host does not say the call's time limit:
/// below the default call timeout of 30 s.
const DEFAULT: Duration = Duration::from_secs(20);

/// The soft deadline for a call of `timeout`: four fifths of it, so that
/// formatting the results and handing them over fit in what is left.
pub fn soft_limit(timeout: Duration) -> Duration {
    timeout * 4 / 5
}

/// When a search should stop.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    start: Instant,
    limit: Duration,
}

impl Deadline {
    /// Starts the clock, with the limit from [`VAR`], else from the call's
    /// time limit as the host tells it, else the default.
    pub fn from_env() -> Deadline {
        let limit = std::env::var(VAR)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .map(Duration::from_millis)
            .or_else(|| call_time_limit().map(soft_limit))
            .unwrap_or(DEFAULT);
        Deadline::new(limit)
    }

    /// Starts the clock with `limit`.
    pub fn new(limit: Duration) -> Deadline {
        Deadline {
            start: Instant::now(),
            limit,
        }
    }

    /// True once the limit has passed. Each call reads the clock (a host
    /// call inside the component): call it every so many entries.
    pub fn passed(&self) -> bool {
        self.start.elapsed() >= self.limit
    }

    /// The note for the end of the output of a search that stopped here.
    pub fn note(&self) -> String {
        format!(
            "[search stopped after {:.1}s; results so far]",
            self.start.elapsed().as_secs_f64()
        )
    }
}

#[cfg(target_os = "wasi")]
fn call_time_limit() -> Option<Duration> {
    Some(Duration::from_nanos(
        crate::bindings::warden::tool::call::time_limit(),
    ))
}

#[cfg(not(target_os = "wasi"))]
fn call_time_limit() -> Option<Duration> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_leaves_a_fifth_of_the_timeout() {
        assert_eq!(soft_limit(Duration::from_secs(30)), Duration::from_secs(24));
        assert_eq!(
            soft_limit(Duration::from_millis(500)),
            Duration::from_millis(400)
        );
    }

    #[test]
    fn passes() {
        assert!(Deadline::new(Duration::ZERO).passed());
        let d = Deadline::new(Duration::from_secs(3600));
        assert!(!d.passed());
        assert!(
            d.note().starts_with("[search stopped after 0."),
            "{}",
            d.note()
        );
    }
}

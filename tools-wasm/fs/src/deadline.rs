//! A soft deadline for long searches. The host kills a call at its timeout
//! and the model then gets nothing; stopping a little earlier returns what
//! was found so far.

use std::time::{Duration, Instant};

/// The variable that sets the soft deadline, in milliseconds.
pub const VAR: &str = "WARDEN_SOFT_DEADLINE_MS";
/// The soft deadline when [`VAR`] is unset or not a number: below the
/// default call timeout of 30 s.
const DEFAULT: Duration = Duration::from_secs(20);

/// When a search should stop.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    start: Instant,
    limit: Duration,
}

impl Deadline {
    /// Starts the clock, with the limit from [`VAR`] or the default.
    pub fn from_env() -> Deadline {
        let limit = std::env::var(VAR)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .map_or(DEFAULT, Duration::from_millis);
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

#[cfg(test)]
mod tests {
    use super::*;

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

//! Identical calls repeated within one task: a small model that has done its
//! edit may make it again and again until the turn limit. The same call
//! (same tool, same arguments) runs at most twice; a third is answered with
//! a reminder that its result is already there, and a model that ignores
//! the reminder ends the task.

use std::sync::Arc;

use serde_json::Value;

/// Runs at most this many times per task.
const MAX_RUNS: u32 = 2;

/// Reminders a model may ignore before the task stops.
const MAX_REFUSALS: u32 = 2;

/// The calls made so far in this task.
#[derive(Debug, Default)]
pub(super) struct Repeats {
    runs: Vec<(String, Arc<Value>, u32)>,
    refusals: u32,
}

impl Repeats {
    /// A new task: nothing was called yet.
    pub fn reset(&mut self) {
        self.runs.clear();
        self.refusals = 0;
    }

    /// The reminder for a call already run [`MAX_RUNS`] times, or `None`
    /// when it may run. Arguments compare as JSON values, so key order and
    /// spacing do not matter.
    pub fn refuse(&mut self, name: &str, args: &Value) -> Option<String> {
        let runs = self
            .runs
            .iter()
            .find(|(n, a, _)| n == name && **a == *args)
            .map_or(0, |r| r.2);
        if runs < MAX_RUNS {
            return None;
        }
        self.refusals += 1;
        Some(format!(
            "error: not run: `{name}` was already called {runs} times with exactly these \
             arguments in this task, and its result is in the conversation above. Do not \
             repeat it: use that result, and if the task is done, answer the user now."
        ))
    }

    /// Whether the model ignored the reminders: the task should stop.
    pub fn stuck(&self) -> bool {
        self.refusals > MAX_REFUSALS
    }

    /// Counts a call that ran. A call that changed state makes the other
    /// calls worth making again (a read after a write): their counts restart.
    pub fn ran(&mut self, name: &str, args: &Arc<Value>, mutated: bool) {
        if mutated {
            self.runs.retain(|(n, a, _)| n == name && **a == **args);
        }
        match self
            .runs
            .iter_mut()
            .find(|(n, a, _)| n == name && **a == **args)
        {
            Some(r) => r.2 += 1,
            None => self.runs.push((name.to_string(), args.clone(), 1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Arc<Value> {
        Arc::new(serde_json::from_str(text).unwrap())
    }

    #[test]
    fn the_third_identical_call_is_refused() {
        let mut r = Repeats::default();
        for _ in 0..2 {
            assert!(
                r.refuse("write_file", &v(r#"{"path":"a","content":"x"}"#))
                    .is_none()
            );
            r.ran("write_file", &v(r#"{"path":"a","content":"x"}"#), true);
        }
        let refused = r.refuse("write_file", &v(r#"{ "content":"x", "path":"a" }"#));
        assert!(refused.unwrap().contains("already called 2 times"));
        assert!(
            r.refuse("write_file", &v(r#"{"path":"b","content":"x"}"#))
                .is_none()
        );
        assert!(!r.stuck());
        r.refuse("write_file", &v(r#"{"path":"a","content":"x"}"#));
        r.refuse("write_file", &v(r#"{"path":"a","content":"x"}"#));
        assert!(r.stuck());
    }

    #[test]
    fn a_change_allows_reading_again() {
        let mut r = Repeats::default();
        r.ran("read_file", &v(r#"{"path":"a"}"#), false);
        r.ran("read_file", &v(r#"{"path":"a"}"#), false);
        assert!(r.refuse("read_file", &v(r#"{"path":"a"}"#)).is_some());
        r.ran("edit_file", &v(r#"{"path":"a"}"#), true);
        assert!(r.refuse("read_file", &v(r#"{"path":"a"}"#)).is_none());
    }
}

//! Identical calls repeated within one task: a small model that has done its
//! edit may make it again and again until the turn limit. The same call
//! (same tool, same arguments, nothing changed since) runs at most twice; a
//! third is answered with the earlier result, not run, and a model that
//! keeps repeating ends the task.

use std::sync::Arc;

use serde_json::Value;

/// Runs at most this many times per task.
const MAX_RUNS: u32 = 2;

/// Reminders a model may ignore before the task stops.
const MAX_REFUSALS: u32 = 2;

/// The calls made so far in this task.
#[derive(Debug, Default)]
pub(super) struct Repeats {
    runs: Vec<Run>,
    refusals: u32,
}

/// A call made in this task: how often, and what it last returned.
#[derive(Debug)]
struct Run {
    name: String,
    args: Arc<Value>,
    count: u32,
    output: String,
}

/// A call that already ran [`MAX_RUNS`] times, answered without running.
#[derive(Debug)]
pub(super) struct Repeat {
    /// How many times it ran.
    pub runs: u32,
    /// What it returned the last time.
    pub earlier: String,
}

impl Repeats {
    /// A new task: nothing was called yet.
    pub fn reset(&mut self) {
        self.runs.clear();
        self.refusals = 0;
    }

    /// The earlier result of a call already run [`MAX_RUNS`] times, or
    /// `None` when it may run. Arguments compare as JSON values, so key
    /// order and spacing do not matter.
    pub fn repeat(&mut self, name: &str, args: &Value) -> Option<Repeat> {
        let run = self
            .runs
            .iter()
            .find(|r| r.name == name && *r.args == *args)?;
        if run.count < MAX_RUNS {
            return None;
        }
        self.refusals += 1;
        Some(Repeat {
            runs: run.count,
            earlier: run.output.clone(),
        })
    }

    /// Whether the model ignored the reminders: the task should stop.
    pub fn stuck(&self) -> bool {
        self.refusals > MAX_REFUSALS
    }

    /// Counts a call that ran, with what it returned. A call that changed
    /// state makes the other calls worth making again (a read after a
    /// write): their counts restart.
    pub fn ran(&mut self, name: &str, args: &Arc<Value>, mutated: bool, output: &str) {
        if mutated {
            self.runs.retain(|r| r.name == name && *r.args == **args);
        }
        match self
            .runs
            .iter_mut()
            .find(|r| r.name == name && *r.args == **args)
        {
            Some(r) => {
                r.count += 1;
                r.output = output.to_string();
            }
            None => self.runs.push(Run {
                name: name.to_string(),
                args: args.clone(),
                count: 1,
                output: output.to_string(),
            }),
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
    fn the_third_identical_call_gets_the_earlier_result() {
        let mut r = Repeats::default();
        for i in 0..2 {
            assert!(
                r.repeat("write_file", &v(r#"{"path":"a","content":"x"}"#))
                    .is_none()
            );
            let out = format!("wrote 1 byte ({i})");
            r.ran(
                "write_file",
                &v(r#"{"path":"a","content":"x"}"#),
                true,
                &out,
            );
        }
        let repeat = r
            .repeat("write_file", &v(r#"{ "content":"x", "path":"a" }"#))
            .unwrap();
        assert_eq!(
            (repeat.runs, repeat.earlier.as_str()),
            (2, "wrote 1 byte (1)")
        );
        assert!(
            r.repeat("write_file", &v(r#"{"path":"b","content":"x"}"#))
                .is_none()
        );
        assert!(!r.stuck());
        r.repeat("write_file", &v(r#"{"path":"a","content":"x"}"#));
        r.repeat("write_file", &v(r#"{"path":"a","content":"x"}"#));
        assert!(r.stuck());
    }

    #[test]
    fn a_change_allows_reading_again() {
        let mut r = Repeats::default();
        r.ran("read_file", &v(r#"{"path":"a"}"#), false, "a");
        r.ran("read_file", &v(r#"{"path":"a"}"#), false, "a");
        assert!(r.repeat("read_file", &v(r#"{"path":"a"}"#)).is_some());
        r.ran("edit_file", &v(r#"{"path":"a"}"#), true, "edited");
        assert!(r.repeat("read_file", &v(r#"{"path":"a"}"#)).is_none());
    }
}

//! What the current task has done: each call in a few words, and the paths
//! its calls changed (from each result's `touched`, the effects the runner
//! resolved for the call). Small models lose track of a task over a few
//! turns; restating it with the calls made so far after a result keeps
//! them on it, and a run that stops without an answer still says what it
//! changed.

use serde_json::Value;

use crate::ToolResult;

/// Calls listed when the task is restated; older ones are counted.
const LISTED: usize = 12;

/// Longest shown argument, in characters.
const SHOWN: usize = 60;

/// The calls of the current task, in order.
#[derive(Debug, Default)]
pub(super) struct Progress {
    /// One line per call.
    calls: Vec<String>,
    /// Paths the task's calls changed, each once, as the tools resolved
    /// them; a tool that does not declare its effects is named instead.
    changed: Vec<String>,
}

impl Progress {
    /// A new task: nothing was done yet.
    pub fn reset(&mut self) {
        self.calls.clear();
        self.changed.clear();
    }

    /// Records a call of `name` with `args` (as parsed once; `None` when
    /// unusable) and its result; `mutating` when its tool changes state.
    /// What is kept is bounded whatever the size of the arguments.
    pub fn record(&mut self, name: &str, args: Option<&Value>, r: &ToolResult, mutating: bool) {
        let what = match r.touched.as_deref() {
            Some([first, ..]) => first.path.clone(),
            _ => args.map(key_argument).unwrap_or_default(),
        };
        let outcome = if r.ok {
            "ok".to_string()
        } else if r.error_kind.as_deref() == Some("repeated") {
            "not run again (a repeat)".to_string()
        } else {
            let first = r.output.lines().next().unwrap_or("").trim();
            format!("failed: {}", cut(first.trim_start_matches("error: "), 80))
        };
        let what = if what.is_empty() {
            String::new()
        } else {
            format!(" {what}")
        };
        self.calls.push(format!("{name}{what}: {outcome}"));
        if !(r.ok && mutating) {
            return;
        }
        let paths: Vec<String> = match r.touched.as_deref() {
            Some(touched) => touched
                .iter()
                .filter(|t| t.refused.is_none() && t.access != "read" && t.access != "copy from")
                .map(|t| t.path.clone())
                .collect(),
            None => vec![format!("(what `{name}` changed is not known)")],
        };
        for p in paths {
            if !self.changed.contains(&p) {
                self.changed.push(p);
            }
        }
    }

    /// What the task's calls changed.
    pub fn changed(&self) -> &[String] {
        &self.changed
    }

    /// The task restated with the calls made so far, for the model.
    pub fn restate(&self, task: Option<&str>) -> String {
        let mut s = String::new();
        if let Some(task) = task {
            s.push_str(&format!("The task: {}\n", cut(task.trim(), 1_000)));
        }
        if self.calls.is_empty() {
            s.push_str("No call was made yet.\n");
            return s;
        }
        s.push_str("Calls made so far:\n");
        let skipped = self.calls.len().saturating_sub(LISTED);
        if skipped > 0 {
            s.push_str(&format!("({skipped} earlier calls)\n"));
        }
        for (i, line) in self.calls.iter().enumerate().skip(skipped) {
            s.push_str(&format!("{}. {line}\n", i + 1));
        }
        if !self.changed.is_empty() {
            s.push_str(&format!("Changed so far: {}\n", self.changed.join(", ")));
        }
        s
    }
}

/// The argument worth naming: a path, pattern or the first short string,
/// cut; what it reads of the arguments is bounded.
fn key_argument(args: &Value) -> String {
    let Some(map) = args.as_object() else {
        return String::new();
    };
    let pick = ["path", "pattern", "from", "url", "command"]
        .iter()
        .find_map(|k| map.get(*k).and_then(Value::as_str))
        .or_else(|| map.values().take(8).find_map(Value::as_str));
    pick.map(|s| cut(s, SHOWN)).unwrap_or_default()
}

/// `s` on one line, at most `max` characters, ending in `…` when cut.
fn cut(s: &str, max: usize) -> String {
    let mut out: String = s
        .chars()
        .take(max)
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    if s.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Touched;

    fn result(ok: bool, output: &str, touched: Option<Vec<Touched>>) -> ToolResult {
        ToolResult {
            ok,
            output: output.into(),
            touched,
            ..ToolResult::default()
        }
    }

    #[test]
    fn the_task_is_restated_with_each_call_and_what_changed() {
        let mut p = Progress::default();
        let wrote = Touched {
            path: "summary.txt".into(),
            access: "write",
            refused: None,
        };
        p.record(
            "read_file",
            Some(&json!({"path": "notes.txt"})),
            &result(true, "hello", None),
            false,
        );
        p.record(
            "write_file",
            Some(&json!({"path": "summary.txt", "content": "x".repeat(1 << 20)})),
            &result(true, "wrote", Some(vec![wrote])),
            true,
        );
        p.record(
            "grep",
            Some(&json!({"pattern": "a\nb"})),
            &result(false, "error: bad regex\nmore", None),
            false,
        );
        p.record(
            "shell",
            Some(&json!({"command": "make"})),
            &result(true, "", None),
            true,
        );
        assert_eq!(
            p.restate(Some("Summarize notes.txt into summary.txt")),
            "The task: Summarize notes.txt into summary.txt\n\
             Calls made so far:\n\
             1. read_file notes.txt: ok\n\
             2. write_file summary.txt: ok\n\
             3. grep a b: failed: bad regex\n\
             4. shell make: ok\n\
             Changed so far: summary.txt, (what `shell` changed is not known)\n"
        );
        assert_eq!(p.changed().len(), 2);
        p.reset();
        assert_eq!(p.restate(None), "No call was made yet.\n");
    }

    #[test]
    fn a_long_task_lists_its_latest_calls() {
        let mut p = Progress::default();
        for i in 0..20 {
            let args = json!({"path": format!("f{i}")});
            p.record("read_file", Some(&args), &result(true, "", None), false);
        }
        let s = p.restate(None);
        assert!(
            s.contains("(8 earlier calls)\n9. read_file f8: ok\n"),
            "{s}"
        );
        assert!(s.ends_with("20. read_file f19: ok\n"), "{s}");
    }
}

//! Agent events on the terminal: streamed text on stdout, one line per tool
//! call on stderr, a spinner while waiting; or one JSON object per line.

use std::io::Write;

use serde_json::{Value, json};
use warden_agent::{Event, Usage};
use warden_policy::{inert, inert_text};

use crate::style::{Spinner, paint, stderr_is_fancy};

/// Turns agent events into terminal output (or JSON lines).
pub struct Renderer {
    json: bool,
    fancy: bool,
    spinner: Option<Spinner>,
    /// Bytes of answer text printed since the last model call.
    pub streamed: usize,
    at_line_start: bool,
    /// The model calls since [`Renderer::take_usage`].
    tally: Tally,
}

/// The model calls of a run or a chat turn, and the tokens the server
/// counted for them.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    /// The counted tokens, summed.
    pub usage: Usage,
    /// Every model call that answered.
    pub calls: u32,
    /// Those whose answer carried no token counts.
    pub uncounted: u32,
}

impl Tally {
    /// One line of token totals for the terminal, when the server counted
    /// any; it says when the totals leave out calls the server did not
    /// count.
    pub fn line(&self) -> Option<String> {
        let Tally {
            usage,
            calls,
            uncounted,
        } = self;
        (usage.total_tokens > 0).then(|| {
            let not_counted = if *uncounted > 0 {
                format!(", {uncounted} not counted by the server")
            } else {
                String::new()
            };
            format!(
                "tokens: {} prompt + {} completion = {} ({calls} model call{}{not_counted})",
                usage.prompt_tokens,
                usage.completion_tokens,
                usage.total_tokens,
                if *calls == 1 { "" } else { "s" }
            )
        })
    }
}

impl Renderer {
    pub fn new(json: bool) -> Renderer {
        Renderer {
            json,
            fancy: stderr_is_fancy(),
            spinner: None,
            streamed: 0,
            at_line_start: true,
            tally: Tally::default(),
        }
    }

    /// The model calls since the last take (a run, a chat turn).
    pub fn take_usage(&mut self) -> Tally {
        std::mem::take(&mut self.tally)
    }

    /// Ends the answer on stdout: prints it if nothing was streamed, then a
    /// newline unless the output already is at the start of a line.
    pub fn finish_answer(&mut self, answer: &str) {
        if self.streamed == 0 {
            out(&inert_text(answer));
            self.at_line_start = answer.is_empty() || answer.ends_with('\n');
        }
        self.line_break();
    }

    /// Ends the line of text on stdout, if one is open.
    pub fn line_break(&mut self) {
        if !self.at_line_start {
            out("\n");
            self.at_line_start = true;
        }
    }

    pub fn emit(&self, v: serde_json::Value) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{v}");
        let _ = out.flush();
    }

    pub fn stop_spinner(&mut self) {
        self.spinner = None;
    }

    pub fn on(&mut self, e: Event<'_>) {
        match e {
            Event::Thinking => {
                self.streamed = 0;
                if !self.json {
                    self.spinner = Some(Spinner::start(self.fancy));
                }
            }
            Event::Text(t) => {
                self.stop_spinner();
                self.streamed += t.len();
                if self.json {
                    self.emit(json!({"type": "text", "text": t}));
                } else {
                    // The model's text cannot drive the terminal.
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(inert_text(t).as_bytes());
                    let _ = out.flush();
                    self.at_line_start = t.ends_with('\n');
                }
            }
            Event::Retry {
                attempt,
                wait,
                reason,
            } => {
                self.stop_spinner();
                if self.json {
                    self.emit(json!({"type": "retry", "attempt": attempt, "wait_ms": wait.as_millis() as u64, "reason": reason}));
                } else {
                    stderr_line!(
                        "{}",
                        paint(
                            self.fancy,
                            "33",
                            &format!(
                                "retrying in {:.1}s (attempt {attempt}): {}",
                                wait.as_secs_f64(),
                                inert(reason)
                            )
                        )
                    );
                }
            }
            Event::Restart => {
                if self.json {
                    self.emit(json!({"type": "restart"}));
                } else {
                    self.line_break();
                    stderr_line!(
                        "{}",
                        paint(
                            self.fancy,
                            "33",
                            "(the retried answer differs: it starts again below)"
                        )
                    );
                }
            }
            Event::Cut => {
                if self.json {
                    self.emit(json!({"type": "cut"}));
                } else {
                    self.stop_spinner();
                    self.line_break();
                    stderr_line!(
                        "note: the answer was cut off at the model's output token limit; ask it to \
                         continue, or raise the server's max tokens"
                    );
                }
            }
            Event::Compacted { before, after } => {
                if self.json {
                    self.emit(json!({"type": "compacted", "before_tokens": before, "after_tokens": after}));
                } else {
                    // It comes while the model is awaited: the spinner's
                    // line is cleared first.
                    self.stop_spinner();
                    self.line_break();
                    stderr_line!(
                        "note: older turns compacted to fit the context window (about {before} → {after} tokens)"
                    );
                }
            }
            Event::Protocol { protocol, reason } => {
                if self.json {
                    self.emit(json!({"type": "protocol", "protocol": protocol, "reason": reason}));
                } else {
                    self.stop_spinner();
                    self.line_break();
                    stderr_line!(
                        "note: switching to the {protocol} tool protocol for this session: {}",
                        inert(reason)
                    );
                }
            }
            Event::Notice(text) => {
                if self.json {
                    self.emit(json!({"type": "notice", "text": text}));
                } else {
                    self.stop_spinner();
                    self.line_break();
                    stderr_line!("note: {}", inert(text));
                }
            }
            // On a terminal the answer that follows says it.
            Event::Stopped { changed } => {
                if self.json {
                    self.emit(
                        json!({"type": "stopped", "reason": "repeating", "changed": changed}),
                    );
                }
            }
            Event::ToolStart { id, name, args } => {
                self.stop_spinner();
                if self.json {
                    // As text, as the model sent it (written from the one
                    // parse: only here, for the JSON events).
                    let arguments = args.map_or_else(str::to_string, Value::to_string);
                    self.emit(json!({"type": "tool_call", "id": id, "name": name, "arguments": arguments}));
                }
            }
            Event::ToolEnd {
                id,
                name,
                args,
                result,
            } => {
                if self.json {
                    let touched = result.touched.as_ref().map(|t| {
                        t.iter()
                            .map(|t| json!({"path": t.path, "access": t.access, "refused": t.refused}))
                            .collect::<Vec<_>>()
                    });
                    self.emit(json!({
                        "type": "tool_result", "id": id, "name": name, "ok": result.ok,
                        "output": result.output, "duration_ms": result.duration.as_millis() as u64,
                        "touched": touched,
                    }));
                    return;
                }
                self.line_break();
                let key = key_argument(result, args);
                let name = inert(name);
                let ms = result.duration.as_millis();
                let line = if result.ok {
                    paint(self.fancy, "32", &format!("  ✓ {name} {key} ({ms} ms)"))
                } else {
                    let first = result.output.lines().next().unwrap_or("");
                    paint(
                        self.fancy,
                        "31",
                        &format!("  ✗ {name} {key} ({ms} ms): {}", cut(first, 120)),
                    )
                };
                stderr_line!("{line}");
            }
            Event::Usage(None) => {
                self.tally.calls += 1;
                self.tally.uncounted += 1;
            }
            Event::Usage(Some(u)) => {
                let sum = &mut self.tally.usage;
                sum.prompt_tokens += u.prompt_tokens;
                sum.completion_tokens += u.completion_tokens;
                sum.total_tokens += u.total_tokens;
                self.tally.calls += 1;
                if self.json {
                    self.emit(json!({"type": "usage", "prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens, "total_tokens": u.total_tokens}));
                }
            }
        }
    }
}

/// What is worth showing of a call: the paths it touched, as its tool
/// resolved them (the same value its approval and undo used); else a path,
/// pattern or the first string of its arguments (parsed once, by the
/// agent); else the arguments as sent.
fn key_argument(result: &warden_agent::ToolResult, args: Result<&Value, &str>) -> String {
    match result.touched.as_deref() {
        Some([from, to]) if from.access.ends_with("from") && to.access.ends_with("to") => {
            return format!("{} → {}", cut(&from.path, 40), cut(&to.path, 40));
        }
        Some([first, rest @ ..]) => {
            let shown = cut(&first.path, 60);
            return match rest.len() {
                0 => shown,
                n => format!("{shown} (+{n})"),
            };
        }
        _ => {}
    }
    let map = match args {
        Ok(Value::Object(map)) => map,
        Ok(other) => return cut(&other.to_string(), 60),
        Err(raw) => return cut(raw, 60),
    };
    let pick = ["path", "pattern", "from", "url", "command", "text"]
        .iter()
        .find_map(|k| map.get(*k).and_then(|v| v.as_str()))
        .or_else(|| map.values().find_map(|v| v.as_str()));
    cut(pick.unwrap_or(""), 60)
}

/// One line of at most `max` characters, inert.
fn cut(s: &str, max: usize) -> String {
    let one_line = inert(&s.replace('\n', " ")).into_owned();
    if one_line.chars().count() <= max {
        one_line
    } else {
        format!("{}…", one_line.chars().take(max - 1).collect::<String>())
    }
}

/// Writes `text` to stdout. A reader that went away (`warden run … | head`)
/// is no error: the turn goes on to its end, its changes are reported on
/// stderr and the transcript is finished.
pub fn out(text: &str) {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

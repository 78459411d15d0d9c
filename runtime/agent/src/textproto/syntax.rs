//! The character-level grammar of one `[TOOL] ... [/TOOL]` call: the tool
//! name, the argument list and lenient JSON-like values.
//!
//! It is hand-written rather than built on `serde_json` because the extent of
//! a call is only known by reading it (a `)` or `[/TOOL]` inside a quoted
//! string must not end it), and because models write Python-ish values
//! (single quotes, `True`, `name=value`) that JSON rejects.

use serde_json::{Map, Value};

/// One argument as written, before it is mapped onto the schema.
#[derive(Debug)]
pub(super) enum Arg {
    Positional(Value),
    Keyword(String, Value),
}

/// What the call says, before the tool's parameters are consulted.
#[derive(Debug)]
pub(super) enum Body {
    /// `name(args)`.
    Args(Vec<Arg>),
    /// `{"name": ..., "arguments": {...}}`: the shape some models are trained on.
    Object(Map<String, Value>),
}

/// A syntax error at byte `pos` of the reply, rendered as
/// "`what` at line L, column C of the call`tail`".
#[derive(Debug)]
pub(super) struct SyntaxError {
    pub pos: usize,
    pub what: String,
    pub tail: String,
}

impl SyntaxError {
    /// Human-readable, with the position relative to the call starting at
    /// byte `start`, since the model sees the call, not the whole reply.
    pub fn render(&self, reply: &str, start: usize) -> String {
        let before = &reply[start..self.pos.max(start)];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        format!(
            "{} at line {line}, column {column} of the call{}",
            self.what, self.tail
        )
    }
}

pub(super) type Res<T> = Result<T, SyntaxError>;

/// A cursor over the reply. `lower` is its ASCII-lowercased copy (same byte
/// offsets), used to find the tags case-insensitively.
pub(super) struct Parser<'a> {
    pub s: &'a str,
    pub lower: &'a str,
    pub pos: usize,
    /// Nesting of arrays and objects, bounded by `value::MAX_DEPTH`.
    pub depth: usize,
}

impl<'a> Parser<'a> {
    pub fn new(s: &'a str, lower: &'a str, pos: usize) -> Self {
        Parser {
            s,
            lower,
            pos,
            depth: 0,
        }
    }

    pub fn peek(&self) -> Option<char> {
        self.s[self.pos..].chars().next()
    }

    pub fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    pub fn eat(&mut self, c: char) -> bool {
        let hit = self.peek() == Some(c);
        if hit {
            self.pos += c.len_utf8();
        }
        hit
    }

    pub fn ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    /// Whether the (lowercase) tag starts here.
    pub fn at_tag(&self, tag: &str) -> bool {
        self.lower[self.pos..].starts_with(tag)
    }

    /// Skips backticks and whitespace around a call; after a code-fence
    /// opener also its language word (```` ```text ````), if alone on its line.
    pub fn skip_ticks(&mut self) {
        loop {
            self.ws();
            let ticks = self.s[self.pos..].chars().take_while(|&c| c == '`').count();
            if ticks == 0 {
                return;
            }
            self.pos += ticks;
            let line = self.s[self.pos..].split('\n').next().unwrap_or("");
            if ticks >= 3
                && line
                    .chars()
                    .all(|c| c.is_alphanumeric() || "_-+ \r".contains(c))
            {
                self.pos += line.len();
            }
        }
    }

    pub fn err(&self, pos: usize, what: impl Into<String>, tail: impl Into<String>) -> SyntaxError {
        SyntaxError {
            pos,
            what: what.into(),
            tail: tail.into(),
        }
    }

    /// `, found X` for the text at the cursor.
    pub fn found(&self) -> String {
        let rest = &self.s[self.pos..];
        if rest.is_empty() {
            ", found the end of the reply".into()
        } else if self.at_tag("[/tool]") {
            ", found [/TOOL]".into()
        } else {
            // The offending token: up to the next space, as the model wrote it.
            let word = rest.split(char::is_whitespace).next().unwrap_or("");
            let shown: String = word.chars().take(16).collect();
            format!(", found `{shown}`")
        }
    }

    /// A tool name; empty when there is none.
    pub fn ident(&mut self) -> &'a str {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_alphanumeric() || "_-.".contains(c))
        {
            self.bump();
        }
        &self.s[start..self.pos]
    }

    /// The body after the tool name: `(args)`, or nothing at all (`[TOOL]
    /// list_dir [/TOOL]` means no arguments).
    pub fn arg_list(&mut self, name: &str) -> Res<Vec<Arg>> {
        self.ws();
        let open = self.pos;
        if !self.eat('(') {
            self.skip_ticks();
            let bare = self.peek().is_none() || self.at_tag("[/tool]") || self.at_tag("[tool]");
            self.pos = open;
            if bare {
                return Ok(Vec::new());
            }
            return Err(self.err(
                self.pos,
                format!("expected `(` after the tool name `{name}`"),
                self.found(),
            ));
        }
        let never_closed =
            |p: &Self| p.err(open, "unbalanced parentheses: the `(`", " is never closed");
        let mut args = Vec::new();
        loop {
            self.ws();
            if self.eat(')') {
                return Ok(args);
            }
            if self.peek().is_none() || self.at_tag("[/tool]") {
                return Err(never_closed(self));
            }
            args.push(self.arg(&args)?);
            self.ws();
            if self.eat(',') {
                continue;
            }
            if self.eat(')') {
                return Ok(args);
            }
            if self.peek().is_none() || self.at_tag("[/tool]") {
                return Err(never_closed(self));
            }
            let hint = match (args.last(), self.peek()) {
                (
                    Some(Arg::Positional(Value::String(_)) | Arg::Keyword(_, Value::String(_))),
                    Some(c),
                ) if c.is_alphanumeric() => {
                    " (a quote inside a string must be escaped with a backslash)"
                }
                _ => "",
            };
            let n = args.len();
            let what = format!("expected `,` or `)` after argument {n}");
            return Err(self.err(self.pos, what, format!("{}{hint}", self.found())));
        }
    }

    /// `value`, `name=value`, `name: value` or `"name": value`.
    fn arg(&mut self, so_far: &[Arg]) -> Res<Arg> {
        let start = self.pos;
        let word = self.ident();
        self.ws();
        let keyword = !word.is_empty()
            && matches!(self.peek(), Some('=' | ':'))
            && !self.s[self.pos..].starts_with("==");
        let arg = if keyword {
            self.bump();
            self.ws();
            Arg::Keyword(word.to_string(), self.value()?)
        } else {
            self.pos = start;
            let value = self.value()?;
            let colon = {
                let save = self.pos;
                self.ws();
                let hit = value.is_string() && self.eat(':');
                if !hit {
                    self.pos = save;
                }
                hit
            };
            if colon {
                self.ws();
                let Value::String(key) = value else {
                    unreachable!("checked is_string")
                };
                Arg::Keyword(key, self.value()?)
            } else {
                if so_far.iter().any(|a| matches!(a, Arg::Keyword(..))) {
                    let what = "positional argument after a keyword argument";
                    return Err(self.err(start, what, " (put positional arguments first)"));
                }
                Arg::Positional(value)
            }
        };
        Ok(arg)
    }
}

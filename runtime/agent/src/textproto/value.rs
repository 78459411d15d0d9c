//! Argument values: JSON, leniently. Models write Python-ish values
//! (single quotes, `True`, bare keys) that `serde_json` rejects, and the
//! end of a value can only be found by reading it.

use serde_json::{Map, Number, Value};

use super::syntax::{Parser, Res};

/// Nesting deeper than this is refused instead of risking the stack.
const MAX_DEPTH: usize = 64;

impl Parser<'_> {
    /// A lenient JSON value: JSON plus single-quoted and triple-quoted
    /// strings, bare object keys, `=` for `:`, trailing commas and the Python
    /// spellings `True`, `False`, `None`.
    pub fn value(&mut self) -> Res<Value> {
        let start = self.pos;
        match self.peek() {
            Some(q @ ('"' | '\'')) => self.string(q).map(Value::String),
            Some(open @ ('[' | '{')) => {
                if self.depth >= MAX_DEPTH {
                    return Err(self.err(start, "values nested too deeply", ""));
                }
                self.depth += 1;
                let v = if open == '[' {
                    self.array()
                } else {
                    self.object()
                };
                self.depth -= 1;
                v
            }
            Some(c) if c.is_ascii_digit() || c == '-' || c == '.' => self.number(),
            Some(c) if c.is_alphabetic() || c == '_' => {
                let word = self.ident();
                match word {
                    "true" | "True" => Ok(Value::Bool(true)),
                    "false" | "False" => Ok(Value::Bool(false)),
                    "null" | "None" => Ok(Value::Null),
                    _ => {
                        let rest = &self.s[start..];
                        let end = rest
                            .find(|c: char| ",)]}\n".contains(c) || c == '[')
                            .unwrap_or(rest.len());
                        let bare = rest[..end].trim_end();
                        let what = format!("unquoted value `{bare}`");
                        Err(self.err(
                            start,
                            what,
                            format!(": strings must be quoted, e.g. {bare:?}"),
                        ))
                    }
                }
            }
            _ => Err(self.err(start, "expected a value", self.found())),
        }
    }

    fn number(&mut self) -> Res<Value> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_digit() || "+-.eE".contains(c))
        {
            self.bump();
        }
        let text = &self.s[start..self.pos];
        let number = if let Ok(i) = text.parse::<i64>() {
            Some(Number::from(i))
        } else if let Ok(u) = text.parse::<u64>() {
            Some(Number::from(u))
        } else {
            text.parse::<f64>().ok().and_then(Number::from_f64)
        };
        number
            .map(Value::Number)
            .ok_or_else(|| self.err(start, format!("invalid number `{text}`"), ""))
    }

    /// A quoted string, `"..."`, `'...'` or tripled (`"""..."""`), with the
    /// JSON escapes plus `\'` and `\u{...}`. Unknown escapes are kept
    /// verbatim (`\d` stays `\d`), as Python does, since models write regexes.
    fn string(&mut self, quote: char) -> Res<String> {
        let open = self.pos;
        self.bump();
        let doubled: String = [quote, quote].into_iter().collect();
        let triple = self.s[self.pos..].starts_with(&doubled);
        if triple {
            self.pos += 2;
        }
        let unterminated =
            |p: &Self| p.err(open, "unterminated string: the quote", " is never closed");
        let mut out = String::new();
        loop {
            let Some(c) = self.bump() else {
                return Err(unterminated(self));
            };
            if c == quote {
                if !triple {
                    return Ok(out);
                }
                let rest = &self.s[self.pos..];
                if rest.starts_with(quote) && rest[1..].starts_with(quote) {
                    self.pos += 2;
                    return Ok(out);
                }
                out.push(c);
            } else if c == '\\' {
                let at = self.pos - 1;
                let Some(e) = self.bump() else {
                    return Err(unterminated(self));
                };
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '0' => out.push('\0'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    '"' | '\'' | '\\' | '/' => out.push(e),
                    'u' => out.push(self.unicode_escape(at)?),
                    other => {
                        out.push('\\');
                        out.push(other);
                    }
                }
            } else {
                out.push(c);
            }
        }
    }

    /// After `\u`: `{1F600}`, or `XXXX` with a following low surrogate when
    /// the first is a high one (JSON's way of writing astral characters).
    fn unicode_escape(&mut self, at: usize) -> Res<char> {
        let bad = |p: &Self| p.err(at, "invalid unicode escape", " (use \\uXXXX or \\u{X..})");
        let hex = |p: &mut Self, n: usize| -> Option<u32> {
            let digits = p.s.get(p.pos..p.pos + n)?;
            let v = u32::from_str_radix(digits, 16).ok()?;
            p.pos += n;
            Some(v)
        };
        if self.eat('{') {
            let len = self.s[self.pos..]
                .find('}')
                .filter(|&n| (1..=6).contains(&n))
                .ok_or_else(|| bad(self))?;
            let v = hex(self, len).ok_or_else(|| bad(self))?;
            self.pos += 1;
            return char::from_u32(v).ok_or_else(|| bad(self));
        }
        let hi = hex(self, 4).ok_or_else(|| bad(self))?;
        if (0xD800..0xDC00).contains(&hi) && self.s[self.pos..].starts_with("\\u") {
            self.pos += 2;
            let lo = hex(self, 4)
                .filter(|lo| (0xDC00..0xE000).contains(lo))
                .ok_or_else(|| bad(self))?;
            return char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
                .ok_or_else(|| bad(self));
        }
        char::from_u32(hi).ok_or_else(|| bad(self))
    }

    fn array(&mut self) -> Res<Value> {
        let open = self.pos;
        self.bump();
        let mut items = Vec::new();
        loop {
            self.ws();
            if self.eat(']') {
                return Ok(Value::Array(items));
            }
            if self.peek().is_none() || self.at_tag("[/tool]") {
                return Err(self.err(open, "unbalanced brackets: the `[`", " is never closed"));
            }
            items.push(self.value()?);
            self.ws();
            if !self.eat(',') && self.peek() != Some(']') {
                return Err(self.err(self.pos, "expected `,` or `]` in the array", self.found()));
            }
        }
    }

    fn object(&mut self) -> Res<Value> {
        let open = self.pos;
        self.bump();
        let mut map = Map::new();
        loop {
            self.ws();
            if self.eat('}') {
                return Ok(Value::Object(map));
            }
            if self.peek().is_none() || self.at_tag("[/tool]") {
                return Err(self.err(open, "unbalanced braces: the `{`", " is never closed"));
            }
            // A quoted key may be empty (`{"": 1}` is JSON); a bare one not.
            let key = match self.peek() {
                Some(q @ ('"' | '\'')) => self.string(q)?,
                _ => match self.ident() {
                    "" => {
                        return Err(self.err(
                            self.pos,
                            "expected a key in the object",
                            self.found(),
                        ));
                    }
                    key => key.to_string(),
                },
            };
            self.ws();
            if !self.eat(':') && !self.eat('=') {
                return Err(self.err(
                    self.pos,
                    format!("expected `:` after the key {key:?}"),
                    self.found(),
                ));
            }
            self.ws();
            map.insert(key, self.value()?);
            self.ws();
            if !self.eat(',') && self.peek() != Some('}') {
                return Err(self.err(self.pos, "expected `,` or `}` in the object", self.found()));
            }
        }
    }
}

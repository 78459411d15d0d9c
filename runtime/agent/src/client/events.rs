//! The event-stream format (WHATWG HTML, "server-sent events"), decoded
//! from the bytes of a response as they arrive.
//!
//! Decoded here rather than by a crate: the one in use before
//! (eventsource-stream 0.2, unreleased since 2022) panics on a stream
//! that starts with a byte-order mark, and the other at hand
//! (sse-stream) refuses fields it does not know, which llama.cpp's
//! `error:` line is. The answer does not depend on how the bytes are cut
//! into pieces: a line is decoded once it is whole, a `\r` at the end of a
//! piece waits for the next one to know whether a `\n` belongs to it.

/// One dispatched event: its type (`message` unless an `event:` field
/// named another) and its data lines joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    pub event: String,
    pub data: String,
}

/// The decoder of one stream.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// The line so far.
    line: Vec<u8>,
    /// The last byte was a `\r`: a `\n` next ends no second line.
    after_cr: bool,
    /// A line was decoded (the byte-order mark is dropped from the first).
    lines: bool,
    /// The event being built: its type and data.
    event: String,
    data: String,
    /// The payload of the last `error:` line not yet taken: llama.cpp
    /// reports a failure so, which is no field of the format.
    error: Option<String>,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl Decoder {
    /// Decodes the next piece of the stream; the events it completes are
    /// pushed onto `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Event>) {
        let mut rest = bytes;
        if self.after_cr && rest.first() == Some(&b'\n') {
            rest = &rest[1..];
        }
        self.after_cr = false;
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&rest[..end]);
            let line = std::mem::take(&mut self.line);
            self.take_line(&line, out);
            self.line = line;
            self.line.clear();
            let cr = rest[end] == b'\r';
            rest = &rest[end + 1..];
            if cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.line.extend_from_slice(rest);
    }

    /// Takes the payload of the last `error:` line, if one came since it
    /// was last taken.
    pub fn take_error(&mut self) -> Option<String> {
        self.error.take()
    }

    fn take_line(&mut self, line: &[u8], out: &mut Vec<Event>) {
        let line = match std::mem::replace(&mut self.lines, true) {
            false => line.strip_prefix(BOM).unwrap_or(line),
            true => line,
        };
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], Some(value.strip_prefix(b" ").unwrap_or(value)))
            }
            None => (line, None),
        };
        let colon = value.is_some();
        let value = || String::from_utf8_lossy(value.unwrap_or_default());
        match name {
            b"data" => {
                self.data.push_str(&value());
                self.data.push('\n');
            }
            b"event" => self.event = value().into_owned(),
            b"error" if colon => self.error = Some(value().into_owned()),
            // Comments (an empty name), `id` and `retry` (warden does not
            // reconnect), and fields the format does not know.
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<Event>) {
        let event = std::mem::take(&mut self.event);
        let mut data = std::mem::take(&mut self.data);
        if data.is_empty() {
            return;
        }
        data.pop(); // the `\n` after the last data line
        out.push(Event {
            event: if event.is_empty() {
                "message".into()
            } else {
                event
            },
            data,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(pieces: &[&[u8]]) -> Vec<(String, String)> {
        let mut d = Decoder::default();
        let mut out = Vec::new();
        for p in pieces {
            d.feed(p, &mut out);
        }
        out.into_iter().map(|e| (e.event, e.data)).collect()
    }

    fn pair(event: &str, data: &str) -> (String, String) {
        (event.into(), data.into())
    }

    #[test]
    fn decodes_the_format() {
        let body = b": comment\ndata: a\ndata:b\n\nevent: error\ndata:  c\r\n\r\nid: 1\nretry: 5\n\ndata\n\n";
        let want = [
            pair("message", "a\nb"),
            pair("error", " c"),
            pair("message", ""),
        ];
        assert_eq!(events(&[body]), want);
        // Cut anywhere, the same events.
        let pieces: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(events(&pieces), want);
        // An event without its blank line is not dispatched.
        assert_eq!(events(&[b"data: x\n"]), []);
    }

    #[test]
    fn a_byte_order_mark_starts_the_stream_in_any_pieces() {
        // eventsource-stream 0.2 panics here: it cut the mark at byte 1.
        let body = b"\xEF\xBB\xBFdata: x\n\n";
        assert_eq!(events(&[body]), [pair("message", "x")]);
        assert_eq!(
            events(&[&body[..1], &body[1..2], &body[2..]]),
            [pair("message", "x")]
        );
        // Only the first: a second one is part of the field name.
        assert_eq!(events(&[b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n"]), []);
    }

    #[test]
    fn a_cr_at_the_end_of_a_piece_waits_for_the_next() {
        // `\r` then `\n` in the next piece is one line end, not two (which
        // would dispatch `a` alone).
        let want = [pair("message", "a\nb")];
        assert_eq!(events(&[b"data: a\r", b"\ndata: b\r\n\r\n"]), want);
        assert_eq!(events(&[b"data: a\r", b"data: b\r", b"\r"]), want);
    }

    #[test]
    fn keeps_error_lines_and_replaces_bad_utf8() {
        let mut d = Decoder::default();
        let mut out = Vec::new();
        d.feed(b"error: {\"message\":\"boom\"}\ndata: \xff\n\n", &mut out);
        assert_eq!(d.take_error().as_deref(), Some("{\"message\":\"boom\"}"));
        assert_eq!(d.take_error(), None);
        assert_eq!(out[0].data, "\u{fffd}");
    }
}

//! The scrubber of secrets, without I/O: every form of each value
//! ([`forms`]: as it is, percent-encoded as common encoders write it,
//! JSON-, HTML- or Markdown-escaped, base64 at any offset) replaced by its
//! marker in one pass from the start ([`Scrubber`]), and a body scrubbed
//! as it arrives ([`Stream`]) in frames whose sizes and timing depend on
//! no byte's value.
//!
//! ```
//! use std::sync::Arc;
//! use warden_scrub::{Scrubber, Stream};
//!
//! let mut s = Scrubber::default();
//! s.add("s3cr3t/value", "[secret key]");
//! assert_eq!(&*s.scrub(b"k=s3cr3t%2Fvalue"), b"k=[secret key]");
//!
//! let mut body = Stream::new(Arc::new(s), 16);
//! body.push(b"echo: s3cr3t");
//! body.push(b"/value and more");
//! body.end();
//! let mut got = Vec::new();
//! while let Some(frame) = body.frame() {
//!     got.extend_from_slice(&frame);
//! }
//! assert_eq!(got, b"echo: [secret key] and more");
//! ```

use std::borrow::Cow;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};

mod forms;

pub use forms::forms;

/// Shortest value that may be a secret: a shorter one would be scrubbed
/// out of ordinary text.
pub const MIN_LEN: usize = 8;

/// The values to scrub, each with its forms and its marker.
#[derive(Default)]
pub struct Scrubber {
    /// Every form of every value, with the marker that replaces it.
    forms: Vec<(Vec<u8>, Bytes)>,
}

impl std::fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the forms: they are the secret.
        f.debug_struct("Scrubber")
            .field("forms", &self.forms.len())
            .finish()
    }
}

impl Scrubber {
    /// Scrubs every form of `value` as `marker`.
    pub fn add(&mut self, value: &str, marker: impl Into<Bytes>) {
        let marker = marker.into();
        for f in forms(value) {
            self.forms.push((f, marker.clone()));
        }
    }

    /// Whether there is nothing to scrub.
    pub fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// `bytes` with every form replaced by its marker.
    pub fn scrub<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        let mut out = Vec::new();
        match self.pass(bytes, 0, &mut out) {
            (_, false) => Cow::Borrowed(bytes),
            (_, true) => Cow::Owned(out),
        }
    }

    /// How many of the last bytes received always wait for the next ones:
    /// the longest form, less one. Any form that starts before them ends
    /// within what was received.
    pub fn hold(&self) -> usize {
        self.forms.iter().map(|(f, _)| f.len()).max().unwrap_or(1) - 1
    }

    /// Whether `name` (a header's, lower case) holds a form in any case.
    pub fn in_name(&self, name: &[u8]) -> bool {
        self.forms.iter().any(|(f, _)| {
            name.len() >= f.len() && name.windows(f.len()).any(|w| w.eq_ignore_ascii_case(f))
        })
    }

    /// Scrubs `bytes` from the start into `out`, up to the last `hold`
    /// bytes, which could begin a form the next bytes complete: at each
    /// step the form that starts first (the longest of those that start
    /// there) is replaced, and the scan goes on after it. Returns how many
    /// bytes were consumed (at least all but `hold`, more when a form
    /// reaches into them), and whether anything was replaced.
    fn pass(&self, bytes: &[u8], hold: usize, out: &mut Vec<u8>) -> (usize, bool) {
        // A form must start before `limit` to be replaced now; one that
        // starts there or later waits.
        let limit = bytes.len().saturating_sub(hold);
        let find = |f: &[u8], from: usize| {
            memchr::memmem::find(&bytes[from.min(bytes.len())..], f).map(|i| i + from)
        };
        // Where each form next occurs, at or after `at`.
        let mut next: Vec<Option<usize>> = self.forms.iter().map(|(f, _)| find(f, 0)).collect();
        let mut at = 0;
        let mut replaced = false;
        loop {
            let first = next
                .iter()
                .enumerate()
                .filter_map(|(k, n)| n.map(|s| (s, k)))
                .filter(|&(s, _)| s < limit)
                .min_by_key(|&(s, k)| (s, std::cmp::Reverse(self.forms[k].0.len()), k));
            let Some((start, k)) = first else {
                let end = limit.max(at);
                out.extend_from_slice(&bytes[at..end]);
                return (end, replaced);
            };
            let (form, marker) = &self.forms[k];
            out.extend_from_slice(&bytes[at..start]);
            out.extend_from_slice(marker);
            at = start + form.len();
            replaced = true;
            for (j, n) in next.iter_mut().enumerate() {
                if n.is_some_and(|s| s < at) {
                    *n = find(&self.forms[j].0, at);
                }
            }
        }
    }
}

/// A body scrubbed as it arrives, delivered so that nothing about how it
/// arrives depends on what it says: in frames of a fixed size (the last
/// one shorter), each ready once that many scrubbed bytes are. The last
/// bytes received, as many as the longest form less one
/// ([`Scrubber::hold`]), always wait for the next ones (a form the next
/// bytes complete would otherwise slip through in halves). How many wait
/// depends on no byte's value unless a whole form is among them, so a
/// tool that makes a host echo its guesses learns nothing from the split,
/// the timing or the length until a guess is the whole secret.
#[derive(Debug)]
pub struct Stream {
    scrubber: Arc<Scrubber>,
    frame: usize,
    /// Received, not yet scrubbed: at most the hold-back after a push.
    pending: BytesMut,
    /// Scrubbed, waiting to fill a frame.
    ready: BytesMut,
    ended: bool,
}

impl Stream {
    /// A body scrubbed by `scrubber`, delivered in frames of `frame`
    /// bytes (at least one).
    pub fn new(scrubber: Arc<Scrubber>, frame: usize) -> Stream {
        Stream {
            scrubber,
            frame: frame.max(1),
            pending: BytesMut::new(),
            ready: BytesMut::new(),
            ended: false,
        }
    }

    /// Bytes received.
    pub fn push(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        self.settle();
    }

    /// The body ended: what waited is scrubbed.
    pub fn end(&mut self) {
        self.ended = true;
        self.settle();
    }

    /// The next frame to deliver: a full one, or once the body ended, the
    /// rest; `None` when there is none yet (or, after the end, any more).
    pub fn frame(&mut self) -> Option<Bytes> {
        if self.ready.len() >= self.frame {
            return Some(self.ready.split_to(self.frame).freeze());
        }
        (self.ended && !self.ready.is_empty()).then(|| self.ready.split().freeze())
    }

    /// How many bytes received wait for the next ones: never more than
    /// the hold-back.
    pub fn waiting(&self) -> usize {
        self.pending.len()
    }

    /// Whether the body ended and every frame was taken.
    pub fn is_done(&self) -> bool {
        self.ended && self.ready.is_empty()
    }

    /// Scrubs all that no later byte can change.
    fn settle(&mut self) {
        let hold = if self.ended { 0 } else { self.scrubber.hold() };
        if self.pending.len() <= hold {
            return;
        }
        let mut out = Vec::new();
        let (used, _) = self.scrubber.pass(&self.pending, hold, &mut out);
        self.pending.advance(used);
        self.ready.extend_from_slice(&out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrubber(value: &str) -> Arc<Scrubber> {
        let mut s = Scrubber::default();
        s.add(value, "[secret key]");
        Arc::new(s)
    }

    /// The frames of `chunks`.
    fn frames(s: &Arc<Scrubber>, frame: usize, chunks: &[&[u8]]) -> Vec<Bytes> {
        let mut body = Stream::new(s.clone(), frame);
        let mut out = Vec::new();
        for c in chunks {
            body.push(c);
            out.extend(std::iter::from_fn(|| body.frame()));
        }
        body.end();
        out.extend(std::iter::from_fn(|| body.frame()));
        assert!(body.is_done());
        out
    }

    /// A value that overlaps itself, echoed without end: what waits stays
    /// the hold-back, and the scrub is one pass, not one per byte.
    #[test]
    fn a_body_of_a_repeating_value_is_not_held_whole() {
        let s = scrubber("abababab");
        let mut body = Stream::new(s.clone(), 64);
        for _ in 0..10_000 {
            body.push(b"ab");
            assert!(body.waiting() <= s.hold(), "{}", body.waiting());
        }
    }

    #[test]
    fn the_first_and_longest_form_is_replaced() {
        let s = scrubber("s3cr3t/value+1");
        assert_eq!(
            &*s.scrub(br#"{"k":"s3cr3t\/value+1"} s3cr3t%2fvalue%2b1"#),
            br#"{"k":"[secret key]"} [secret key]"#
        );
        assert!(matches!(s.scrub(b"nothing"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_body_that_ends_with_part_of_the_secret_arrives_as_one_that_does_not() {
        let s = scrubber("s3cr3t-value-0123456789");
        let lens = |f: Vec<Bytes>| f.iter().map(Bytes::len).collect::<Vec<_>>();
        for ends in [&[b'x'; 300][..], b"echo: "] {
            let right = [ends, b"s3cr3t-va"].concat();
            let wrong = [ends, b"zzzzzzzzz"].concat();
            let r = lens(frames(&s, 64, &[&right]));
            assert_eq!(r, lens(frames(&s, 64, &[&wrong])));
            // In any chunks, too.
            assert_eq!(r, lens(frames(&s, 64, &[&right[..3], &right[3..]])));
            assert_eq!(r, lens(frames(&s, 64, &[&wrong[..3], &wrong[3..]])));
        }
    }

    #[test]
    fn in_name_ignores_case() {
        let s = scrubber("S3cr3t-Value-42");
        assert!(s.in_name(b"x-s3cr3t-value-42-tail"));
        assert!(!s.in_name(b"x-other"));
    }
}

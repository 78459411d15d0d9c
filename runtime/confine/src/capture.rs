//! Output kept up to a cap: the head and the tail, the middle elided.
//!
//! A long build log ends with what matters (the error, the test summary),
//! so the cap keeps both ends and says how much was cut between them.

use std::collections::VecDeque;
use std::io::Read;

/// Bytes of one stream kept up to `cap`: the first half as it came, the
/// last half as a ring.
#[derive(Debug)]
pub(crate) struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    half: usize,
    total: u64,
}

impl Capture {
    pub(crate) fn new(cap: usize) -> Capture {
        Capture {
            head: Vec::new(),
            tail: VecDeque::new(),
            half: cap / 2,
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.half.saturating_sub(self.head.len());
        let n = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..n]);
        bytes = &bytes[n..];
        if self.half == 0 {
            return;
        }
        if bytes.len() >= self.half {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.half..]);
            return;
        }
        let over = (self.tail.len() + bytes.len()).saturating_sub(self.half);
        self.tail.drain(..over);
        self.tail.extend(bytes);
    }

    /// Reads `r` to its end (or an error) into a capture of `cap` bytes.
    pub(crate) fn read_all(mut r: impl Read, cap: usize) -> Capture {
        let mut c = Capture::new(cap);
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => c.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        c
    }

    /// The text kept, with a marker where bytes were cut; and whether any
    /// were.
    pub(crate) fn finish(self) -> (String, bool) {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let cut = self.total - kept;
        let head = String::from_utf8_lossy(&self.head).into_owned();
        if cut == 0 {
            let tail: Vec<u8> = self.tail.into();
            let mut all = self.head;
            all.extend_from_slice(&tail);
            return (String::from_utf8_lossy(&all).into_owned(), false);
        }
        let tail: Vec<u8> = self.tail.into();
        let tail = String::from_utf8_lossy(&tail);
        (
            format!("{head}\n[... {cut} bytes elided ...]\n{tail}"),
            true,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        let mut c = Capture::new(100);
        c.push(b"hello ");
        c.push(b"world");
        assert_eq!(c.finish(), ("hello world".to_string(), false));
    }

    #[test]
    fn long_output_keeps_both_ends_and_counts_the_middle() {
        let mut c = Capture::new(10);
        for chunk in [&b"abc"[..], b"defgh", b"ijklmnop", b"qrstuvwxyz"] {
            c.push(chunk);
        }
        let (text, cut) = c.finish();
        assert!(cut);
        assert_eq!(text, "abcde\n[... 16 bytes elided ...]\nvwxyz");
    }

    #[test]
    fn exactly_the_cap_is_not_elided() {
        let mut c = Capture::new(6);
        c.push(b"abcdef");
        assert_eq!(c.finish(), ("abcdef".to_string(), false));
    }
}

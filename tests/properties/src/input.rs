//! How a check reads its input bytes.

use std::borrow::Cow;

/// The parts of `data` between `0xFF` bytes (never in UTF-8 text), at
/// least one.
pub fn parts(data: &[u8]) -> Vec<&[u8]> {
    data.split(|&b| b == 0xFF).collect()
}

/// `bytes` as text: invalid UTF-8 replaced, as the parsers that take a
/// `&str` would get it from a lossy read.
pub fn text(bytes: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

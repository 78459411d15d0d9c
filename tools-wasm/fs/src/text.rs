//! Small text helpers: binary detection, line cutting, sizes, line numbers.

use std::borrow::Cow;

/// How many leading bytes are checked for a NUL byte.
pub const SNIFF_LEN: usize = 8192;

/// The file's contents as text, or `None` when it looks binary: a NUL byte
/// in the first 8 KiB, or invalid UTF-8 anywhere.
pub fn as_text(bytes: &[u8]) -> Option<&str> {
    let head = &bytes[..bytes.len().min(SNIFF_LEN)];
    if head.contains(&0) {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

/// Cuts `line` to at most `max` characters, saying so when it does.
pub fn cut_line(line: &str, max: usize) -> Cow<'_, str> {
    if line.len() <= max {
        return Cow::Borrowed(line); // bytes >= chars, so it fits
    }
    match line.char_indices().nth(max) {
        None => Cow::Borrowed(line),
        Some((end, _)) => Cow::Owned(format!(
            "{} [... line cut at {max} of {} chars]",
            &line[..end],
            line.chars().count()
        )),
    }
}

/// A byte count for people: `512 bytes`, `12.3 KiB`, `4.0 MiB`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {} ({bytes} bytes)", UNITS[unit])
}

/// 1-based line numbers of the given ascending byte offsets in `text`.
pub fn line_numbers(text: &str, offsets: &[usize]) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut line = 1;
    let mut pos = 0;
    offsets
        .iter()
        .map(|&off| {
            line += bytes[pos..off].iter().filter(|&&b| b == b'\n').count();
            pos = off;
            line
        })
        .collect()
}

/// "1, 5, 9" for up to `max` numbers, then "and N more".
pub fn list_numbers(numbers: &[usize], max: usize) -> String {
    let shown: Vec<String> = numbers.iter().take(max).map(|n| n.to_string()).collect();
    let mut out = shown.join(", ");
    if numbers.len() > max {
        out.push_str(&format!(" and {} more", numbers.len() - max));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_binary() {
        assert_eq!(as_text(b"hello\n"), Some("hello\n"));
        assert_eq!(as_text(b""), Some(""));
        assert_eq!(as_text(b"a\0b"), None);
        assert_eq!(as_text(&[0xff, 0xfe]), None);
        let mut late_nul = vec![b'a'; SNIFF_LEN];
        late_nul.push(0);
        assert!(as_text(&late_nul).is_some()); // NUL is valid UTF-8
    }

    #[test]
    fn cuts_lines() {
        assert_eq!(cut_line("abc", 3), "abc");
        assert_eq!(cut_line("ééé", 3), "ééé");
        assert_eq!(cut_line("abcdef", 3), "abc [... line cut at 3 of 6 chars]");
        assert_eq!(cut_line("éééé", 2), "éé [... line cut at 2 of 4 chars]");
    }

    #[test]
    fn sizes() {
        assert_eq!(human_size(0), "0 bytes");
        assert_eq!(human_size(1023), "1023 bytes");
        assert_eq!(human_size(1536), "1.5 KiB (1536 bytes)");
        assert_eq!(human_size(5 << 20), "5.0 MiB (5242880 bytes)");
    }

    #[test]
    fn numbers_lines() {
        let text = "a\nbb\n\nccc";
        assert_eq!(line_numbers(text, &[0, 2, 5, 6, 7]), vec![1, 2, 3, 4, 4]);
        assert_eq!(list_numbers(&[1, 2, 3], 2), "1, 2 and 1 more");
        assert_eq!(list_numbers(&[7], 5), "7");
    }
}

//! Small text helpers: binary detection, line cutting, sizes, number lists.

use std::borrow::Cow;

// What counts as text is the edit's (and the host preview's) rule too.
pub use warden_edit::{SNIFF_LEN, as_text};

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
    fn lists_numbers() {
        assert_eq!(list_numbers(&[1, 2, 3], 2), "1, 2 and 1 more");
        assert_eq!(list_numbers(&[7], 5), "7");
    }
}

//! The exact-text edit that `edit_file` makes, and what counts as text.
//!
//! The fs component edits files with it, and the host's approval preview
//! shows the edit it will make with it: one algorithm, so the preview of
//! an edit is the edit that then happens (the fallback for files with
//! CRLF line ends included). A tool that declares a `replace` effect
//! promises these semantics.
//!
//! ```
//! let e = warden_edit::edit("a\r\nfoo\r\nb\r\n", "foo\nb", "bar\nb", false).unwrap();
//! assert_eq!(e.content, "a\r\nbar\r\nb\r\n");
//! ```

/// Bytes looked at to tell a text file from a binary one.
pub const SNIFF_LEN: usize = 8192;

/// `bytes` as text: valid UTF-8 with no NUL in its first [`SNIFF_LEN`]
/// bytes. `None` for a binary file.
pub fn as_text(bytes: &[u8]) -> Option<&str> {
    let head = &bytes[..bytes.len().min(SNIFF_LEN)];
    if head.contains(&0) {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

/// A successful replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// The new file contents.
    pub content: String,
    /// For each replacement, the first and last line it covers in the new
    /// contents (1-based, inclusive).
    pub ranges: Vec<(usize, usize)>,
}

/// Why an edit cannot be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditError {
    /// The text to replace is empty.
    EmptyOld,
    /// The replacement is the text to replace: nothing would change.
    Unchanged,
    /// The text to replace does not occur.
    NotFound,
    /// It occurs more than once (on these lines) and not every occurrence
    /// is to be replaced.
    Ambiguous(Vec<usize>),
}

/// Replaces `old` by `new` in `content`: its single occurrence, or every
/// one when `all`. In a file with CRLF line ends, text given with plain
/// `\n` line ends (as models write it) is matched and replaced with CRLF.
pub fn edit(content: &str, old: &str, new: &str, all: bool) -> Result<Edit, EditError> {
    check(old, new)?;
    let result = apply(content, old, new, all);
    if matches!(result, Err(EditError::NotFound))
        && content.contains("\r\n")
        && old.contains('\n')
        && !old.contains("\r\n")
    {
        let crlf = |s: &str| s.replace('\n', "\r\n");
        return apply(content, &crlf(old), &crlf(new), all);
    }
    result
}

/// Whether `old` → `new` is an edit at all, whatever the file holds.
pub fn check(old: &str, new: &str) -> Result<(), EditError> {
    if old.is_empty() {
        return Err(EditError::EmptyOld);
    }
    if old == new {
        return Err(EditError::Unchanged);
    }
    Ok(())
}

/// Replaces `old` (non-empty) by `new` in `content` as given, without the
/// line-end fallback of [`edit`].
fn apply(content: &str, old: &str, new: &str, all: bool) -> Result<Edit, EditError> {
    let offsets: Vec<usize> = content.match_indices(old).map(|(i, _)| i).collect();
    match offsets.len() {
        0 => return Err(EditError::NotFound),
        1 => {}
        _ if all => {}
        _ => return Err(EditError::Ambiguous(line_numbers(content, &offsets))),
    }
    let mut out = String::with_capacity(content.len() + offsets.len() * new.len());
    let mut starts = Vec::with_capacity(offsets.len());
    let mut copied = 0;
    for &offset in &offsets {
        out.push_str(&content[copied..offset]);
        starts.push(out.len());
        out.push_str(new);
        copied = offset + old.len();
    }
    out.push_str(&content[copied..]);
    // A replacement covers as many lines as `new` has (a trailing newline
    // does not start a changed line); an empty `new` still marks its line.
    let span = new.trim_end_matches('\n').matches('\n').count();
    let ranges = line_numbers(&out, &starts)
        .into_iter()
        .map(|line| (line, line + span))
        .collect();
    Ok(Edit {
        content: out,
        ranges,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_once() {
        let e = edit("a\nfoo\nb\n", "foo", "bar\nbaz", false).unwrap();
        assert_eq!(e.content, "a\nbar\nbaz\nb\n");
        assert_eq!(e.ranges, vec![(2, 3)]);
        let e = edit("a\nfoo\nb\n", "foo\n", "", false).unwrap();
        assert_eq!(e.content, "a\nb\n");
        assert_eq!(e.ranges, vec![(2, 2)]);
        assert_eq!(edit("x", "x", "y\n", false).unwrap().ranges, vec![(1, 1)]);
    }

    #[test]
    fn counts_matches() {
        assert_eq!(edit("abc", "zz", "y", false), Err(EditError::NotFound));
        assert_eq!(
            edit("x\nfoo\nfoo foo\n", "foo", "y", false),
            Err(EditError::Ambiguous(vec![2, 3, 3]))
        );
        let e = edit("x\nfoo\nfoo foo\n", "foo", "longer", true).unwrap();
        assert_eq!(e.content, "x\nlonger\nlonger longer\n");
        assert_eq!(e.ranges, vec![(2, 2), (3, 3), (3, 3)]);
        // Matches do not overlap.
        assert_eq!(edit("aaa", "aa", "b", true).unwrap().content, "ba");
        assert_eq!(edit("a", "", "b", false), Err(EditError::EmptyOld));
        assert_eq!(edit("a", "a", "a", false), Err(EditError::Unchanged));
    }

    #[test]
    fn crlf_files_take_lf_text() {
        let e = edit("one\r\ntwo\r\nthree\r\n", "two\nthree", "2\n3", false).unwrap();
        assert_eq!(e.content, "one\r\n2\r\n3\r\n");
        // Only when the text as given is not there.
        let e = edit("a\nb\r\na\nb", "a\nb", "c", false);
        assert_eq!(e, Err(EditError::Ambiguous(vec![1, 3])));
        // A single-line text has no line ends to translate.
        assert_eq!(edit("a\r\n", "b", "c", false), Err(EditError::NotFound));
    }

    #[test]
    fn text_is_utf8_without_an_early_nul() {
        assert_eq!(as_text(b"hi\n"), Some("hi\n"));
        assert_eq!(as_text(b"h\0i"), None);
        assert_eq!(as_text(&[0xff, 0xfe]), None);
        let mut late_nul = vec![b'a'; SNIFF_LEN];
        late_nul.push(0);
        assert!(as_text(&late_nul).is_some());
    }
}

//! The block search gives the results of a line-by-line search.

use std::time::Duration;

use grep_matcher::Matcher;

use super::*;

/// Every matching line as `number:text`, and the outcome.
fn run(pattern: &str, text: &[u8], block_len: usize, whole_only: bool) -> (Vec<String>, Outcome) {
    let mut searcher = Searcher::new(compile(pattern, false).unwrap());
    searcher.block_len = block_len;
    let mut found = Vec::new();
    let deadline = Deadline::new(Duration::from_secs(3600));
    let outcome = searcher
        .search(&mut &text[..], whole_only, &deadline, &mut |n, line| {
            found.push(format!("{n}:{}", String::from_utf8_lossy(line)));
            ControlFlow::Continue(())
        })
        .unwrap();
    (found, outcome)
}

/// What matching each line on its own gives.
fn line_by_line(pattern: &str, text: &[u8]) -> Vec<String> {
    let regex = compile(pattern, false).unwrap();
    if text.is_empty() {
        return Vec::new();
    }
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    text.split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, l)| (i + 1, strip_cr(l)))
        .filter(|(_, l)| regex.is_match(l).unwrap())
        .map(|(i, l)| format!("{i}:{}", String::from_utf8_lossy(l)))
        .collect()
}

const DONE: Outcome = Outcome::Searched(ControlFlow::Continue(()));

#[test]
fn agrees_with_line_by_line() {
    let texts: [&[u8]; 6] = [
        b"",
        b"\n",
        b"foo\r\nbar\nxfo",
        b"a\n\nb\nfoo bar\n  \nend",
        b"fn\n  main\nfn main() {}\n\xff bad utf-8 fn\n",
        b"one\ntwo\nthree\n",
    ];
    let patterns = [
        "fo+",
        "^",
        "$",
        "^$",
        "o$",
        "^b",
        r"\s+",
        r"fn\s+main",
        "[^x]*",
        "a|b",
        r"\bbar\b",
        "(?s).",
        "x*",
        r"\S$",
        "[^x]+$",
        r"(?i)FN\s",
    ];
    for text in texts {
        for pattern in patterns {
            let want = line_by_line(pattern, text);
            for block_len in [1, 4, 1 << 20] {
                let (got, outcome) = run(pattern, text, block_len, false);
                assert_eq!(got, want, "/{pattern}/ in {text:?}, blocks of {block_len}");
                assert_eq!(outcome, DONE);
            }
        }
    }
}

#[test]
fn numbers_lines_across_blocks() {
    let mut text = String::new();
    for i in 1..=10_000 {
        text.push_str(&format!(
            "line {i}{}\n",
            if i % 997 == 0 { " hit" } else { "" }
        ));
    }
    let (got, _) = run("hit", text.as_bytes(), 4096, false);
    let want: Vec<String> = (1..=10_000)
        .filter(|i| i % 997 == 0)
        .map(|i| format!("{i}:line {i} hit"))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn binary_big_and_stopping() {
    let (got, outcome) = run("a", b"a\na\0", 1 << 20, false);
    assert_eq!((got.len(), outcome), (0, Outcome::Binary));
    // A NUL after the first 8 KiB does not make the file binary.
    let mut late = vec![b'a'; SNIFF_LEN];
    late.extend_from_slice(b"\n\0 a\n");
    assert_eq!(run("a", &late, 1 << 20, false).0.len(), 2);
    let (got, outcome) = run("a", b"a\na\na\n", 3, true);
    assert_eq!((got.len(), outcome), (0, Outcome::TooBig));
    assert_eq!(run("a", b"a\na\n", 4, true).1, DONE);
    // The sink stops the search.
    let mut searcher = Searcher::new(compile("a", false).unwrap());
    let mut seen = 0;
    let deadline = Deadline::new(Duration::from_secs(3600));
    let outcome = searcher
        .search(&mut &b"a\na\na\n"[..], false, &deadline, &mut |_, _| {
            seen += 1;
            if seen == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert_eq!(
        (seen, outcome),
        (2, Outcome::Searched(ControlFlow::Break(())))
    );
    // Between blocks the deadline is checked.
    searcher.block_len = 2;
    let passed = Deadline::new(Duration::ZERO);
    let outcome = searcher
        .search(&mut &b"a\na\na\n"[..], false, &passed, &mut |_, _| {
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(outcome, Outcome::OutOfTime);
}

//! Built-in file tools behave the way a model can rely on.
//!
//! This module covers read_file, write_file and edit_file; `fs_tools_tree`
//! covers the tools that walk or reshape directories.

use serde_json::json;
use warden_sandbox::{CallOutcome, ErrorKind};
use warden_tests::Tools as Toolset;
use warden_tests::{Sandbox, err, ok};

/// Calls `name` with JSON arguments.
pub(super) fn call(tools: &Toolset, name: &str, args: serde_json::Value) -> CallOutcome {
    tools.call(name, &args.to_string())
}

/// The content of workspace file `rel`, read on the host.
pub(super) fn host_read(sb: &Sandbox, rel: &str) -> String {
    std::fs::read_to_string(sb.ws.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Writes workspace file `rel` on the host, creating its parents.
pub(super) fn host_write(sb: &Sandbox, rel: &str, content: impl AsRef<[u8]>) {
    let path = sb.ws.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// "line 1\n" up to "line {n}\n".
fn numbered_text(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn read_file_numbers_lines_like_cat_n() {
    let sb = Sandbox::new();
    let tools = sb.toolset(&[]);
    let out = ok(call(&tools, "read_file", json!({"path": "hello.txt"})));
    assert_eq!(out, "     1\thello\n     2\tworld\n");
    // The `cat` alias runs the same tool.
    let aliased = call(&tools, "cat", json!({"path": "hello.txt"}));
    assert_eq!(aliased.tool, "read_file");
    assert_eq!(ok(aliased), out);
}

/// `cat -n` of `text` (whole lines), as read_file shows a file it shows whole.
fn cat_n(text: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, line)| format!("{:>6}\t{line}\n", i + 1))
        .collect()
}

#[test]
fn read_file_reads_every_size_every_depth_and_through_a_link_alike() {
    let sb = Sandbox::new();
    // Around the first read's 16 KiB, and around the line that straddles it.
    let line = "0123456789abcdef0123456789abcdef0123456789abcde\n"; // 48 bytes
    let mut cases = Vec::new();
    for size in [1, 47, 48, 16_383, 16_384, 16_385, 16_400, 40_000] {
        let mut text = line.repeat(size / line.len() + 1);
        text.truncate(size - 1);
        text.push('\n');
        let name = format!("sub/dir/f{size}.txt");
        host_write(&sb, &name, &text);
        cases.push((name, text));
    }
    std::os::unix::fs::symlink("dir/f16385.txt", sb.ws.join("sub/link.txt")).unwrap();
    host_write(&sb, "empty.txt", "");
    let tools = sb.toolset(&[]);
    for (name, text) in &cases {
        let out = ok(call(&tools, "read_file", json!({"path": name})));
        assert!(out == cat_n(text), "{name}: {} bytes shown", out.len());
    }
    let linked = ok(call(&tools, "read_file", json!({"path": "sub/link.txt"})));
    assert_eq!(linked, cat_n(&cases[5].1));
    assert_eq!(
        ok(call(&tools, "read_file", json!({"path": "empty.txt"}))),
        "empty.txt is empty (0 bytes)"
    );
}

#[test]
fn read_file_offset_and_limit_select_a_window_and_say_how_to_go_on() {
    let sb = Sandbox::new();
    host_write(&sb, "ten.txt", numbered_text(10));
    let tools = sb.toolset(&[]);
    let out = ok(call(
        &tools,
        "read_file",
        json!({"path": "ten.txt", "offset": 3, "limit": 2}),
    ));
    assert_eq!(
        out,
        "     3\tline 3\n     4\tline 4\n\
         [showing lines 3-4 of 10; call read_file with offset=5 to read more]"
    );
    // A window reaching the last line has no note.
    let out = ok(call(
        &tools,
        "read_file",
        json!({"path": "ten.txt", "offset": 9, "limit": 5}),
    ));
    assert_eq!(out, "     9\tline 9\n    10\tline 10\n");
}

#[test]
fn read_file_shows_2000_lines_then_a_note_on_reading_the_rest() {
    let sb = Sandbox::new();
    host_write(&sb, "long.txt", numbered_text(2500));
    let tools = sb.toolset(&[]);
    let first = ok(call(&tools, "read_file", json!({"path": "long.txt"})));
    let (body, note) = first.rsplit_once('\n').unwrap();
    assert_eq!(
        note,
        "[showing lines 1-2000 of 2500; call read_file with offset=2001 to read more]"
    );
    assert_eq!(body.lines().count(), 2000);
    assert!(body.starts_with("     1\tline 1\n"), "{}", &body[..40]);
    assert!(body.ends_with("  2000\tline 2000"));
    // Following the note reads the rest, without a further note.
    let rest = ok(call(
        &tools,
        "read_file",
        json!({"path": "long.txt", "offset": 2001}),
    ));
    assert_eq!(rest.lines().count(), 500);
    assert!(rest.starts_with("  2001\tline 2001\n"));
    assert!(rest.ends_with("  2500\tline 2500\n"));
}

#[test]
fn read_file_refuses_binary_files_bad_offsets_directories_and_bad_paths() {
    let sb = Sandbox::new();
    host_write(&sb, "blob.bin", [0x7f, b'E', 0, 0, b'\n']);
    let tools = sb.toolset(&[]);
    let e = err(call(&tools, "read_file", json!({"path": "blob.bin"})));
    assert_eq!(e.kind, ErrorKind::InvalidArgs, "{e}");
    assert_eq!(
        e.message,
        "blob.bin is a binary file (5 bytes); read_file only shows text files"
    );
    let e = err(call(
        &tools,
        "read_file",
        json!({"path": "hello.txt", "offset": 3}),
    ));
    assert_eq!(e.kind, ErrorKind::InvalidArgs, "{e}");
    assert_eq!(
        e.message,
        "offset 3 is past the end of hello.txt, which has 2 lines; use an offset from 1 to 2"
    );
    let e = err(call(&tools, "read_file", json!({"path": "docs"})));
    assert_eq!(e.kind, ErrorKind::InvalidArgs, "{e}");
    assert_eq!(
        e.message,
        "docs is a directory, not a file; use list_files to see what it contains"
    );
    let e = err(call(&tools, "read_file", json!({"path": "nope.txt"})));
    assert_eq!(e.kind, ErrorKind::NotFound, "{e}");
    assert_eq!(e.message, "no such file or directory: nope.txt");
    let e = err(call(
        &tools,
        "read_file",
        json!({"path": "../outside/secret.txt"}),
    ));
    assert_eq!(e.kind, ErrorKind::Denied, "{e}");
    assert!(
        e.message
            .starts_with("../outside/secret.txt is outside the directories this tool may access"),
        "{e}"
    );
}

#[test]
fn write_file_creates_parents_and_reports_what_it_wrote() {
    let sb = Sandbox::new();
    let tools = sb.toolset(&[]);
    let out = ok(call(
        &tools,
        "write_file",
        json!({"path": "a/b/c.txt", "content": "abc\n"}),
    ));
    assert_eq!(out, "wrote 4 bytes to a/b/c.txt (created a new file)");
    assert_eq!(host_read(&sb, "a/b/c.txt"), "abc\n");
    let out = ok(call(
        &tools,
        "write_file",
        json!({"path": "hello.txt", "content": "bye"}),
    ));
    assert_eq!(
        out,
        "wrote 3 bytes to hello.txt (overwrote the existing 12-byte file)"
    );
    assert_eq!(host_read(&sb, "hello.txt"), "bye");
}

#[test]
fn write_file_onto_a_directory_is_invalid_and_changes_nothing() {
    let sb = Sandbox::new();
    let tools = sb.toolset(&[]);
    let e = err(call(
        &tools,
        "write_file",
        json!({"path": "docs", "content": "x"}),
    ));
    assert_eq!(e.kind, ErrorKind::InvalidArgs, "{e}");
    assert_eq!(
        e.message,
        "docs is a directory; give the path of a file (for example docs/NAME)"
    );
    assert_eq!(host_read(&sb, "docs/readme.md"), "# docs\n");
}

#[test]
fn edit_file_replaces_the_exact_text_once() {
    let sb = Sandbox::new();
    let tools = sb.toolset(&[]);
    let out = ok(call(
        &tools,
        "edit_file",
        json!({"path": "hello.txt", "old_text": "world", "new_text": "there"}),
    ));
    assert_eq!(
        out,
        "replaced 1 occurrence in hello.txt; the change is now at line 2"
    );
    assert_eq!(host_read(&sb, "hello.txt"), "hello\nthere\n");
    // A replacement spanning lines reports the range it now covers.
    let out = ok(call(
        &tools,
        "edit_file",
        json!({"path": "hello.txt", "old_text": "hello\n", "new_text": "one\ntwo\n"}),
    ));
    assert_eq!(
        out,
        "replaced 1 occurrence in hello.txt; the change is now at lines 1-2"
    );
    assert_eq!(host_read(&sb, "hello.txt"), "one\ntwo\nthere\n");
}

#[test]
fn edit_file_with_missing_text_fails_and_leaves_the_file_alone() {
    let sb = Sandbox::new();
    let tools = sb.toolset(&[]);
    let e = err(call(
        &tools,
        "edit_file",
        json!({"path": "hello.txt", "old_text": "planet", "new_text": "moon"}),
    ));
    assert_eq!(e.kind, ErrorKind::InvalidArgs, "{e}");
    assert_eq!(
        e.message,
        "old_text was not found in hello.txt (0 matches). Read the file first and copy the \
         exact text, including whitespace and indentation."
    );
    assert_eq!(host_read(&sb, "hello.txt"), "hello\nworld\n");
    let e = err(call(
        &tools,
        "edit_file",
        json!({"path": "missing.txt", "old_text": "a", "new_text": "b"}),
    ));
    assert_eq!(e.kind, ErrorKind::NotFound, "{e}");
    assert!(!sb.ws.join("missing.txt").exists());
}

#[test]
fn edit_file_with_ambiguous_text_fails_unless_replace_all() {
    let sb = Sandbox::new();
    host_write(&sb, "f.txt", "a = 1\nb = 2\na = 1\nc = 3\na = 1\n");
    let tools = sb.toolset(&[]);
    let e = err(call(
        &tools,
        "edit_file",
        json!({"path": "f.txt", "old_text": "a = 1", "new_text": "a = 9"}),
    ));
    assert_eq!(e.kind, ErrorKind::InvalidArgs, "{e}");
    assert_eq!(
        e.message,
        "old_text matches 3 times in f.txt (at lines 1, 3, 5). Add surrounding lines to \
         old_text so that it matches exactly once, or set replace_all=true to replace every \
         match."
    );
    assert_eq!(
        host_read(&sb, "f.txt"),
        "a = 1\nb = 2\na = 1\nc = 3\na = 1\n"
    );
    let out = ok(call(
        &tools,
        "edit_file",
        json!({"path": "f.txt", "old_text": "a = 1", "new_text": "a = 9", "replace_all": true}),
    ));
    assert_eq!(
        out,
        "replaced 3 occurrences in f.txt; the change is now at lines 1, 3, 5"
    );
    assert_eq!(
        host_read(&sb, "f.txt"),
        "a = 9\nb = 2\na = 9\nc = 3\na = 9\n"
    );
}

#[test]
fn an_absolute_path_reaches_its_grant_past_a_longer_relative_name() {
    // The outside folder is granted by its absolute path; the workspace
    // holds a folder whose relative name spells that path without its
    // slash, granted too. The guest's C library matches the longer name
    // first: `/OUTSIDE/sub/f` must still read the outside file (found by
    // the fuzz target `paths`; the call was refused as ambiguous).
    let sb = Sandbox::new();
    let outside = sb.outside.to_str().unwrap();
    let spelled = outside.trim_start_matches('/');
    std::fs::create_dir_all(sb.outside.join("sub")).unwrap();
    std::fs::write(sb.outside.join("sub/f"), "outside\n").unwrap();
    host_write(&sb, &format!("{spelled}/sub/f"), "inside\n");
    sb.policy(&format!(
        "[tools.read_file]\nread = [\".\", \"{spelled}/sub\", \"{outside}\"]\n"
    ));
    sb.trust();
    let tools = sb.toolset(&[]);
    let read = |path: String| ok(call(&tools, "read_file", json!({ "path": path })));
    assert_eq!(read(format!("{outside}/sub/f")), "     1\toutside\n");
    assert_eq!(read(format!("{spelled}/sub/f")), "     1\tinside\n");
}

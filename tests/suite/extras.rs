//! The host extras (`warden:tool/host-extras`) grant nothing: `list-dir`
//! lists only a directory handle the tool already holds and never follows a
//! link, and `time-limit` says the tool's own timeout.

use warden_tests::{Sandbox, err, guests, ok};

fn extras(policy: &str) -> (Sandbox, warden_tests::Tools) {
    let sb = Sandbox::new();
    sb.policy(policy);
    let tools = sb.toolset(&[guests::EXTRAS]);
    (sb, tools)
}

#[test]
fn time_limit_is_the_tools_own_timeout() {
    let (_sb, tools) = extras("[tools.probe_time_limit]\ntimeout = \"1500ms\"\n");
    assert_eq!(ok(tools.call("probe_time_limit", "{}")), "1500000000");
    let (_sb, tools) = extras("[tools.probe_time_limit]\ntimeout = \"2m\"\n");
    assert_eq!(ok(tools.call("probe_time_limit", "{}")), "120000000000");
}

#[test]
fn the_clock_reads_zero_when_the_call_starts_whenever_its_instance_was_made() {
    let (_sb, tools) = extras("[tools.probe_clock]\n");
    let reading = |tools: &warden_tests::Tools| -> u64 {
        ok(tools.call("probe_clock", "{}")).parse().unwrap()
    };
    // The first call makes its instance in the call; each call then makes
    // the next one's ahead, which waits here longer than any call takes.
    for _ in 0..3 {
        let ns = reading(&tools);
        assert!(ns < 200_000_000, "the clock read {ns} ns into the call");
        std::thread::sleep(std::time::Duration::from_millis(400));
    }
}

#[test]
fn list_dir_types_entries_without_following_links_out_of_the_grant() {
    let (sb, tools) = extras("[tools.probe_list_dir]\nread = [\".\"]\n");
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(outside.path().join("secret_dir")).unwrap();
    std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
    std::fs::create_dir(sb.ws.join("sub")).unwrap();
    std::fs::write(sb.ws.join("b.txt"), "b").unwrap();
    std::fs::write(sb.ws.join("a.txt"), "a").unwrap();
    std::os::unix::fs::symlink(outside.path(), sb.ws.join("link_out")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), sb.ws.join("file_out")).unwrap();

    let out = ok(tools.call("probe_list_dir", "{}"));
    let lines: Vec<&str> = out.lines().collect();
    // Name order; links reported as links.
    let expected_prefix = [
        "DescriptorType::RegularFile a.txt",
        "DescriptorType::RegularFile b.txt",
        "DescriptorType::SymbolicLink file_out",
        "DescriptorType::SymbolicLink link_out",
        "DescriptorType::Directory sub",
    ];
    for want in expected_prefix {
        assert!(lines.contains(&want), "{want} missing from:\n{out}");
    }
    assert_eq!(lines.last(), Some(&"bad-names 0"), "{out}");
    let names: Vec<&str> = lines[..lines.len() - 1]
        .iter()
        .map(|l| l.split_once(' ').unwrap().1)
        .collect();
    assert!(names.is_sorted(), "not in name order:\n{out}");
    assert!(!out.contains("secret"), "{out}");

    // Listing through the link: opening it is refused by the sandbox before
    // list-dir is ever reached.
    let e = err(tools.call("probe_list_dir", r#"{"path":"link_out"}"#));
    assert!(!e.message.contains("secret"), "{}", e.message);
    assert!(e.message.contains("open:"), "{}", e.message);

    // A file handle is not a directory.
    let e = err(tools.call("probe_list_dir", r#"{"path":"a.txt","file":true}"#));
    assert!(
        e.message.contains("list-dir:") && e.message.contains("not-directory"),
        "{}",
        e.message
    );
}

#[test]
fn read_head_reads_only_regular_files_beneath_the_handle_and_never_follows_the_last_link() {
    let (sb, tools) = extras("[tools.probe_read_head]\nread = [\".\"]\n");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    std::fs::create_dir(sb.ws.join("sub")).unwrap();
    std::fs::write(sb.ws.join("a.txt"), "hello").unwrap();
    std::fs::write(sb.ws.join("sub/b.txt"), "nested").unwrap();
    std::os::unix::fs::symlink(outside.path(), sb.ws.join("link_out")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), sb.ws.join("file_out")).unwrap();
    std::os::unix::fs::symlink("a.txt", sb.ws.join("file_in")).unwrap();
    super::fs_tools_tree::host_mkfifo(&sb, "pipe");
    let head = |path: &str, max: u64| {
        tools.call(
            "probe_read_head",
            &serde_json::json!({"path": path, "max": max}).to_string(),
        )
    };

    assert_eq!(ok(head("a.txt", 100)), "size 5, whole: hello");
    assert_eq!(ok(head("sub/b.txt", 100)), "size 6, whole: nested");
    assert_eq!(ok(head("a.txt", 3)), "size 5: hel");
    // Whole only when the read came back short: a file of exactly `max`
    // bytes may go on, as far as one read can tell.
    assert_eq!(ok(head("a.txt", 5)), "size 5: hello");
    assert_eq!(ok(head("a.txt", 6)), "size 5, whole: hello");
    // `max` is capped at 64 KiB.
    let big = "x".repeat(70_000);
    std::fs::write(sb.ws.join("big.txt"), &big).unwrap();
    let capped = ok(head("big.txt", 100_000));
    assert_eq!(capped, format!("size 70000: {}", &big[..64 << 10]));
    // The last component is never followed, in or out of the grant: the
    // answer is "ask stat-at", and nothing is read.
    assert_eq!(ok(head("file_out", 100)), "none");
    assert_eq!(ok(head("file_in", 100)), "none");
    // Neither a directory nor a named pipe is opened (a pipe opened for
    // reading would wait for a writer).
    let start = std::time::Instant::now();
    assert_eq!(ok(head("pipe", 100)), "none");
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(ok(head("sub", 100)), "none");
    assert_eq!(ok(head("sub/..", 100)), "none");
    // The way there stays beneath the handle: through a link out, up past
    // it, or from the root.
    let outside_dir = outside.path().to_str().unwrap();
    for path in [
        "link_out/secret.txt",
        "../secret.txt",
        "sub/../../secret.txt",
        &format!("{outside_dir}/secret.txt"),
        &format!(
            "../{}/secret.txt",
            outside.path().file_name().unwrap().to_str().unwrap()
        ),
    ] {
        let e = err(head(path, 100));
        assert!(e.message.contains("read-head:"), "{path}: {e}");
    }
    let e = err(head("missing.txt", 100));
    assert!(e.message.contains("no-entry"), "{e}");
    // A file handle is not a directory.
    let e = err(tools.call("probe_read_head", r#"{"path":"a.txt","file":true}"#));
    assert!(e.message.contains("not-directory"), "{e}");
}

#[test]
fn files_read_head_opened_are_closed_once_the_call_is_over() {
    let (sb, tools) = extras("[tools.probe_read_head]\nread = [\".\"]\n");
    std::fs::create_dir(sb.ws.join("held")).unwrap();
    std::fs::write(sb.ws.join("held/a.txt"), "hello").unwrap();
    std::fs::write(sb.ws.join("top.txt"), "top").unwrap();
    // Closed after the answer (a close the answer need not wait for), but
    // closed: the file and the directory on its way.
    let open_here = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|target| target.starts_with(&sb.ws) && target != &sb.ws)
            .collect()
    };
    for path in ["held/a.txt", "top.txt"] {
        let args = serde_json::json!({ "path": path }).to_string();
        assert!(ok(tools.call("probe_read_head", &args)).starts_with("size"));
        assert_eq!(
            open_here(),
            Vec::<std::path::PathBuf>::new(),
            "after {path}"
        );
    }
}

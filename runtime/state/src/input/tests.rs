use std::os::unix::fs::symlink;
use std::sync::mpsc;
use std::time::Duration;

use super::*;

fn ws() -> (tempfile::TempDir, InputDir) {
    let d = tempfile::tempdir().unwrap();
    let dir = InputDir::workspace(d.path()).unwrap();
    (d, dir)
}

fn fifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        FileType::Fifo,
        Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
}

/// `read` in a thread, failed if it waits: a named pipe or a device
/// would otherwise hang the test instead of failing it.
fn read_promptly(dir: InputDir, name: &str, cap: u64) -> Result<Option<Vec<u8>>, InputError> {
    let (tx, rx) = mpsc::channel();
    let name = name.to_string();
    std::thread::spawn(move || {
        let _ = tx.send(dir.read(&name, cap));
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the read waited")
}

#[test]
fn a_regular_file_is_read_and_a_missing_one_is_none() {
    let (d, dir) = ws();
    assert!(dir.read("warden.toml", 10).unwrap().is_none());
    std::fs::write(d.path().join("warden.toml"), "0123456789").unwrap();
    assert_eq!(
        dir.read("warden.toml", 10).unwrap().as_deref(),
        Some(&b"0123456789"[..])
    );
}

#[test]
fn a_link_is_refused_even_to_a_regular_file() {
    let (d, dir) = ws();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "secret").unwrap();
    symlink(outside.path().join("secret"), d.path().join("warden.toml")).unwrap();
    let e = dir.read("warden.toml", 100).unwrap_err();
    assert!(matches!(e.why, Why::Link("file")), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "{}/warden.toml is a symbolic link; warden does not follow links for its own \
             files: replace the link with the file it points to",
            d.path().display()
        )
    );
}

#[test]
fn a_named_pipe_is_refused_without_waiting_for_a_writer() {
    let (d, dir) = ws();
    fifo(&d.path().join("warden.toml"));
    let e = read_promptly(dir, "warden.toml", 100).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}/warden.toml is a named pipe (FIFO), not a regular file; warden reads its own \
             files only from regular files: replace it with a regular file",
            d.path().display()
        )
    );
}

#[test]
fn a_link_to_a_device_is_refused_without_reading_it() {
    let (d, dir) = ws();
    symlink("/dev/zero", d.path().join("warden.toml")).unwrap();
    let e = read_promptly(dir, "warden.toml", 100).unwrap_err();
    assert!(matches!(e.why, Why::Link(_)), "{e:?}");
}

#[test]
fn a_folder_in_place_of_a_file_is_refused() {
    let (d, dir) = ws();
    std::fs::create_dir(d.path().join("warden.toml")).unwrap();
    let e = dir.read("warden.toml", 100).unwrap_err();
    assert!(matches!(e.why, Why::NotFile("a folder")), "{e:?}");
}

#[test]
fn a_file_over_the_cap_is_refused_with_both_sizes_and_one_at_the_cap_is_read() {
    let (d, dir) = ws();
    let file = std::fs::File::create(d.path().join("big")).unwrap();
    // Sparse: 5 GiB that take no room, and would take 5 GiB to read.
    file.set_len(5 << 30).unwrap();
    let e = dir.read("big", 1 << 20).unwrap_err();
    assert!(
        matches!(
            e.why,
            Why::TooLarge {
                size: 5368709120,
                cap: 1048576
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string().ends_with(
            "big is 5 GiB, more than the 1 MiB warden reads of this file: make it smaller"
        ),
        "{e}"
    );
    file.set_len(1 << 20).unwrap();
    assert_eq!(dir.read("big", 1 << 20).unwrap().unwrap().len(), 1 << 20);
    file.set_len((1 << 20) + 1).unwrap();
    assert!(dir.read("big", 1 << 20).is_err());
}

#[test]
fn sizes_are_shown_in_the_unit_a_person_reads() {
    assert_eq!(shown(1 << 20), "1 MiB");
    assert_eq!(shown(5 << 29), "2.5 GiB");
    assert_eq!(shown(300 << 10), "300 KiB");
    assert_eq!(shown(2 * (1 << 20) + 10), "2 MiB");
    assert_eq!(shown(999), "999 bytes");
}

#[test]
fn folders_beneath_are_reached_without_following_a_link() {
    let (d, dir) = ws();
    assert!(dir.dir(".warden/tools").unwrap().is_none());
    std::fs::create_dir_all(d.path().join(".warden/tools")).unwrap();
    std::fs::write(d.path().join(".warden/tools/b.wasm"), "b").unwrap();
    std::fs::write(d.path().join(".warden/tools/a.wasm"), "a").unwrap();
    let tools = dir.dir(".warden/tools").unwrap().unwrap();
    assert_eq!(tools.path(), d.path().join(".warden/tools"));
    assert_eq!(tools.names().unwrap(), ["a.wasm", "b.wasm"]);
    assert_eq!(tools.read("a.wasm", 1).unwrap().as_deref(), Some(&b"a"[..]));

    // `.warden` a link to a folder that has `tools/`.
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(outside.path().join("tools")).unwrap();
    std::fs::remove_dir_all(d.path().join(".warden")).unwrap();
    symlink(outside.path(), d.path().join(".warden")).unwrap();
    let e = dir.dir(".warden/tools").unwrap_err();
    assert_eq!(e.path, d.path().join(".warden"));
    assert!(matches!(e.why, Why::Link("folder")), "{e:?}");
    std::fs::remove_file(d.path().join(".warden")).unwrap();
    std::fs::write(d.path().join(".warden"), "").unwrap();
    let e = dir.dir(".warden/tools").unwrap_err();
    assert!(matches!(e.why, Why::NotFolder("a regular file")), "{e:?}");
    assert!(dir.read("../x", 1).is_err() && dir.dir("../x").is_err());
}

/// In a folder of the user's own, a link is theirs to make: followed, but
/// what it leads to is held to the same rules.
#[test]
fn in_a_users_folder_links_are_followed_to_regular_files_only() {
    let d = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("t.wasm"), "wasm").unwrap();
    symlink(elsewhere.path().join("t.wasm"), d.path().join("t.wasm")).unwrap();
    symlink("/dev/zero", d.path().join("zero.wasm")).unwrap();
    let dir = InputDir::users(d.path()).unwrap().unwrap();
    assert_eq!(
        dir.read("t.wasm", 10).unwrap().as_deref(),
        Some(&b"wasm"[..])
    );
    let e = dir.read("zero.wasm", 10).unwrap_err();
    assert!(matches!(e.why, Why::NotFile("a character device")), "{e:?}");
    assert!(
        InputDir::users(&d.path().join("missing"))
            .unwrap()
            .is_none()
    );
}

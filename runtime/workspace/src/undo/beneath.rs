//! Files beneath a granted directory's handle, reached one component at a
//! time without following a symlink: what a tool's call will touch is read
//! before it runs, and put back on undo, through the same handle the tool
//! was bound to. Nothing here looks a path up on the host.

use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use serde::{Deserialize, Serialize};

/// Largest file snapshotted.
pub const FILE_CAP: u64 = 8 * 1024 * 1024;
/// Most bytes snapshotted in one turn.
pub const TURN_CAP: u64 = 64 * 1024 * 1024;
/// Most entries in one snapshotted directory tree.
const TREE_CAP: usize = 10_000;

/// What was at a path before a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Before {
    /// Nothing: undo removes what is there.
    Absent,
    /// A regular file; its bytes are in blob `blob`.
    File { blob: String, mode: u32 },
    /// A symlink (the link itself).
    Link { target: Vec<u8> },
    /// A directory with everything in it.
    Dir {
        mode: u32,
        entries: Vec<(String, Before)>,
    },
    /// Not kept (too large, special file, symlink on the way): undo leaves
    /// the path as it is.
    Skipped { reason: String },
}

/// What is at a path, in short: enough to tell whether it changed since.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Print {
    Absent,
    /// A regular file: `sum` is the SHA-256 of its bytes, or for a file
    /// larger than [`FILE_CAP`] its modification time.
    File {
        mode: u32,
        size: u64,
        sum: String,
    },
    Link {
        target: Vec<u8>,
    },
    /// A directory: its entries by name.
    Dir {
        mode: u32,
        entries: Vec<(String, Print)>,
    },
    /// Anything else (a pipe, a device, ...).
    Other {
        mode: u32,
    },
}

/// Where snapshot bytes go and how many may still go there.
pub trait Blobs {
    /// Keeps `bytes`; returns the blob's name.
    fn put(&mut self, bytes: &[u8]) -> io::Result<String>;
    /// Bytes that may still be kept in this turn.
    fn room(&self) -> u64;
}

/// The components of a normalised relative path (`.` has none).
pub fn parts(rel: &str) -> Vec<&str> {
    rel.split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect()
}

fn no_links(e: rustix::io::Errno) -> io::Error {
    if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR {
        io::Error::other("a symlink or a file is on the way")
    } else {
        e.into()
    }
}

/// Opens the directory `parts` beneath `root` (`O_PATH`), never through a
/// link; missing ones are created when `create`, else `Ok(None)`.
fn open_dir(root: BorrowedFd<'_>, parts: &[&str], create: bool) -> io::Result<Option<OwnedFd>> {
    let mut cur = root.try_clone_to_owned()?;
    for part in parts {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        cur = match rustix::fs::openat(&cur, *part, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) if create => {
                match rustix::fs::mkdirat(&cur, *part, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                rustix::fs::openat(&cur, *part, flags, Mode::empty()).map_err(no_links)?
            }
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(e) => return Err(no_links(e)),
        };
    }
    Ok(Some(cur))
}

/// The path `rel` beneath `root` names, with the symlinks on the way (and
/// the last one's with `follow`) resolved as the sandbox resolves them:
/// never leaving `root`, no absolute target. What follows a missing
/// component is kept as it is.
pub fn resolve(root: BorrowedFd<'_>, rel: &str, follow: bool) -> io::Result<String> {
    let outside = || io::Error::other("a symlink on the way leads outside the grant");
    let mut todo: Vec<String> = parts(rel).into_iter().rev().map(str::to_string).collect();
    let mut done: Vec<String> = Vec::new();
    let mut dirs = vec![root.try_clone_to_owned()?];
    let mut links = 0;
    while let Some(part) = todo.pop() {
        if part == ".." {
            done.pop().ok_or_else(outside)?;
            dirs.pop();
            continue;
        }
        let dir = dirs.last().expect("the root stays");
        let st = match rustix::fs::statat(dir, part.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(rustix::io::Errno::NOENT) if !todo.iter().any(|p| p == "..") => {
                done.push(part);
                done.extend(todo.into_iter().rev());
                break;
            }
            Err(e) => return Err(no_links(e)),
        };
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Symlink if follow || !todo.is_empty() => {
                links += 1;
                if links > 40 {
                    return Err(io::Error::other("too many symlinks on the way"));
                }
                let target = rustix::fs::readlinkat(dir, part.as_str(), Vec::new())?;
                let target = String::from_utf8(target.into_bytes())
                    .map_err(|_| io::Error::other("a symlink on the way is not UTF-8"))?;
                if target.starts_with('/') {
                    return Err(outside());
                }
                todo.extend(
                    target
                        .split('/')
                        .rev()
                        .filter(|p| !p.is_empty() && *p != ".")
                        .map(str::to_string),
                );
            }
            FileType::Directory if !todo.is_empty() => {
                let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                dirs.push(
                    rustix::fs::openat(dir, part.as_str(), flags, Mode::empty())
                        .map_err(no_links)?,
                );
                done.push(part);
            }
            _ if !todo.is_empty() => return Err(io::Error::other("a file is on the way")),
            _ => done.push(part),
        }
    }
    Ok(if done.is_empty() {
        ".".into()
    } else {
        done.join("/")
    })
}

/// What is at `rel` beneath `root` now, never following a link.
pub fn print(root: BorrowedFd<'_>, rel: &str) -> io::Result<Print> {
    let ps = parts(rel);
    let Some((name, dirs)) = ps.split_last() else {
        return Err(io::Error::other("the root of a grant is not compared"));
    };
    match open_dir(root, dirs, false)? {
        Some(dir) => print_at(dir.as_fd(), name, &mut 0),
        None => Ok(Print::Absent),
    }
}

/// The entry `name` in `dir`, not followed if a link (`None`: there is
/// none), counted against [`TREE_CAP`].
fn stat_counted(
    dir: BorrowedFd<'_>,
    name: &str,
    count: &mut usize,
) -> io::Result<Option<rustix::fs::Stat>> {
    *count += 1;
    if *count > TREE_CAP {
        return Err(io::Error::other(format!("more than {TREE_CAP} entries")));
    }
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(st)),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn print_at(dir: BorrowedFd<'_>, name: &str, count: &mut usize) -> io::Result<Print> {
    let Some(st) = stat_counted(dir, name, count)? else {
        return Ok(Print::Absent);
    };
    let mode = st.st_mode & 0o7777;
    Ok(match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {
            let size = st.st_size as u64;
            let sum = if size > FILE_CAP {
                format!("modified {}.{:09}", st.st_mtime, st.st_mtime_nsec)
            } else {
                let mut bytes = Vec::new();
                open_file(dir, name)?
                    .take(FILE_CAP + 1)
                    .read_to_end(&mut bytes)?;
                warden_policy::sha256_hex(&bytes)
            };
            Print::File { mode, size, sum }
        }
        FileType::Symlink => Print::Link {
            target: rustix::fs::readlinkat(dir, name, Vec::new())?.into_bytes(),
        },
        FileType::Directory => {
            let fd = open_subdir(dir, name)?;
            let mut entries = Vec::new();
            for n in names(&fd)? {
                let n = String::from_utf8(n)
                    .map_err(|_| io::Error::other("a name inside is not UTF-8"))?;
                entries.push((n.clone(), print_at(fd.as_fd(), &n, count)?));
            }
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Print::Dir { mode, entries }
        }
        _ => Print::Other { mode: st.st_mode },
    })
}

fn open_subdir(dir: BorrowedFd<'_>, name: &str) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::openat(dir, name, flags, Mode::empty()).map_err(no_links)
}

/// A regular file, opened to read; never a link, never waiting on a pipe.
fn open_file(dir: BorrowedFd<'_>, name: &str) -> io::Result<std::fs::File> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file =
        std::fs::File::from(rustix::fs::openat(dir, name, flags, Mode::empty()).map_err(no_links)?);
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("replaced while read"));
    }
    Ok(file)
}

/// Snapshots `rel` beneath `root`. Returns the path actually recorded: the
/// first missing ancestor when the path's folder does not exist yet, so
/// that undo also removes the folders a call created.
pub fn snapshot(root: BorrowedFd<'_>, rel: &str, blobs: &mut dyn Blobs) -> (String, Before) {
    let ps = parts(rel);
    let Some((name, dirs)) = ps.split_last() else {
        return (
            rel.to_string(),
            Before::Skipped {
                reason: "the root of a grant is not snapshotted".into(),
            },
        );
    };
    let mut cur = match root.try_clone_to_owned() {
        Ok(fd) => fd,
        Err(e) => return (rel.into(), skipped(e)),
    };
    for (i, part) in dirs.iter().enumerate() {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        cur = match rustix::fs::openat(&cur, *part, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return (ps[..=i].join("/"), Before::Absent),
            Err(e) => return (rel.into(), skipped(no_links(e))),
        };
    }
    let mut count = 0;
    let before = capture(cur.as_fd(), name, blobs, &mut count).unwrap_or_else(skipped);
    (ps.join("/"), before)
}

fn skipped(e: io::Error) -> Before {
    Before::Skipped {
        reason: e.to_string(),
    }
}

fn capture(
    dir: BorrowedFd<'_>,
    name: &str,
    blobs: &mut dyn Blobs,
    count: &mut usize,
) -> io::Result<Before> {
    let Some(st) = stat_counted(dir, name, count)? else {
        return Ok(Before::Absent);
    };
    let mode = st.st_mode & 0o7777;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {
            let size = st.st_size as u64;
            if size > FILE_CAP {
                return Err(io::Error::other(format!(
                    "larger than {} MiB",
                    FILE_CAP >> 20
                )));
            }
            if size > blobs.room() {
                return Err(io::Error::other(format!(
                    "over the {} MiB snapshot budget of one turn",
                    TURN_CAP >> 20
                )));
            }
            let mut bytes = Vec::new();
            open_file(dir, name)?
                .take(FILE_CAP + 1)
                .read_to_end(&mut bytes)?;
            if bytes.len() as u64 > FILE_CAP || bytes.len() as u64 > blobs.room() {
                return Err(io::Error::other("grew while read"));
            }
            Ok(Before::File {
                blob: blobs.put(&bytes)?,
                mode,
            })
        }
        FileType::Symlink => {
            let target = rustix::fs::readlinkat(dir, name, Vec::new())?;
            Ok(Before::Link {
                target: target.into_bytes(),
            })
        }
        FileType::Directory => {
            let fd = open_subdir(dir, name)?;
            let mut entries = Vec::new();
            for n in names(&fd)? {
                let Ok(s) = String::from_utf8(n) else {
                    return Err(io::Error::other("a name inside is not UTF-8"));
                };
                match capture(fd.as_fd(), &s, blobs, count)? {
                    // One part lost would make undo lose it: all or nothing.
                    Before::Skipped { reason } => {
                        return Err(io::Error::other(format!("{s}: {reason}")));
                    }
                    b => entries.push((s, b)),
                }
            }
            Ok(Before::Dir { mode, entries })
        }
        _ => Err(io::Error::other("not a regular file, symlink or directory")),
    }
}

/// The names in a directory, without `.` and `..`.
fn names(dir: &OwnedFd) -> io::Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        let n = entry.file_name().to_bytes();
        if n != b"." && n != b".." {
            out.push(n.to_vec());
        }
    }
    Ok(out)
}

/// Puts `rel` beneath `root` back as `before` was. The old contents are
/// made beside it first, then put in its place (what is there now is
/// removed only then, a tree too): a failure leaves the path as it is.
/// `load` gives the bytes of a blob.
pub fn restore(
    root: BorrowedFd<'_>,
    rel: &str,
    before: &Before,
    load: &mut dyn FnMut(&str) -> io::Result<Vec<u8>>,
) -> io::Result<()> {
    if let Before::Skipped { reason } = before {
        return Err(io::Error::other(format!("not snapshotted: {reason}")));
    }
    let ps = parts(rel);
    let Some((name, dirs)) = ps.split_last() else {
        return Err(io::Error::other("the root of a grant is not restored"));
    };
    let create = !matches!(before, Before::Absent);
    let Some(dir) = open_dir(root, dirs, create)? else {
        return Ok(()); // absent before, and its folder is gone too
    };
    if !create {
        return remove(dir.as_fd(), OsStr::new(name));
    }
    let tmp = format!(
        ".warden-undo.{:016x}",
        getrandom::u64().map_err(io::Error::other)?
    );
    let placed = put(dir.as_fd(), &tmp, before, load).and_then(|()| {
        match rustix::fs::renameat(&dir, tmp.as_str(), &dir, *name) {
            // A directory is only replaced by an empty one, and only by a directory.
            Err(rustix::io::Errno::ISDIR | rustix::io::Errno::NOTDIR)
            | Err(rustix::io::Errno::NOTEMPTY | rustix::io::Errno::EXIST) => {
                remove(dir.as_fd(), OsStr::new(name))?;
                Ok(rustix::fs::renameat(&dir, tmp.as_str(), &dir, *name)?)
            }
            r => Ok(r?),
        }
    });
    if placed.is_err() {
        let _ = remove(dir.as_fd(), OsStr::new(&tmp));
    }
    placed
}

/// What [`clear`] left in place.
#[derive(Debug, Default)]
pub struct Cleared {
    /// Something the turn did not make is there: the directory stays.
    pub foreign: bool,
    /// Paths the turn made that changed since (`rel`/...): left as they are.
    pub changed: Vec<String>,
}

/// Removes from directory `rel` beneath `root`, which the turn made, what
/// the turn left there (`left`) and is still as it left it, then the
/// directory itself if nothing else is in it.
pub fn clear(root: BorrowedFd<'_>, rel: &str, left: &[(String, Print)]) -> io::Result<Cleared> {
    let ps = parts(rel);
    let mut out = Cleared::default();
    let Some((name, dirs)) = ps.split_last() else {
        return Err(io::Error::other("the root of a grant is not restored"));
    };
    if let Some(dir) = open_dir(root, dirs, false)? {
        clear_in(dir.as_fd(), name, rel, left, &mut out)?;
    }
    Ok(out)
}

fn clear_in(
    dir: BorrowedFd<'_>,
    name: &str,
    path: &str,
    left: &[(String, Print)],
    out: &mut Cleared,
) -> io::Result<()> {
    let fd = open_subdir(dir, name)?;
    for n in names(&fd)? {
        let n = String::from_utf8_lossy(&n).into_owned();
        let Some((_, was)) = left.iter().find(|(k, _)| *k == n) else {
            out.foreign = true;
            continue;
        };
        match (was, print_at(fd.as_fd(), &n, &mut 0)?) {
            (was, now) if *was == now => remove(fd.as_fd(), OsStr::new(&n))?,
            (Print::Dir { entries, .. }, Print::Dir { .. }) => {
                clear_in(fd.as_fd(), &n, &format!("{path}/{n}"), entries, out)?
            }
            _ => out.changed.push(format!("{path}/{n}")),
        }
    }
    if names(&fd)?.is_empty() {
        rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)?;
    }
    Ok(())
}

/// Removes `name` in `dir`, a directory with all it holds; links are
/// removed, never followed.
fn remove(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    let st = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(rustix::io::Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(dir, name, flags, Mode::empty()).map_err(no_links)?;
        for n in names(&fd)? {
            remove(fd.as_fd(), OsStr::from_bytes(&n))?;
        }
        rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)?;
    } else {
        rustix::fs::unlinkat(dir, name, AtFlags::empty())?;
    }
    Ok(())
}

fn put(
    dir: BorrowedFd<'_>,
    name: &str,
    before: &Before,
    load: &mut dyn FnMut(&str) -> io::Result<Vec<u8>>,
) -> io::Result<()> {
    match before {
        Before::Absent | Before::Skipped { .. } => Ok(()),
        Before::File { blob, mode } => {
            let bytes = load(blob)?;
            let fd = rustix::fs::openat(
                dir,
                name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(*mode),
            )?;
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(*mode))?;
            std::fs::File::from(fd).write_all(&bytes)
        }
        Before::Link { target } => Ok(rustix::fs::symlinkat(OsStr::from_bytes(target), dir, name)?),
        Before::Dir { mode, entries } => {
            rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o700))?;
            let fd = open_subdir(dir, name)?;
            for (n, b) in entries {
                put(fd.as_fd(), n, b, load)?;
            }
            Ok(rustix::fs::fchmod(&fd, Mode::from_raw_mode(*mode))?)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[derive(Default)]
    struct Mem(HashMap<String, Vec<u8>>);

    impl Blobs for Mem {
        fn put(&mut self, bytes: &[u8]) -> io::Result<String> {
            let name = self.0.len().to_string();
            self.0.insert(name.clone(), bytes.to_vec());
            Ok(name)
        }
        fn room(&self) -> u64 {
            TURN_CAP
        }
    }

    fn root(dir: &std::path::Path) -> OwnedFd {
        rustix::fs::open(
            dir,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap()
    }

    #[test]
    fn a_tree_file_and_link_come_back_byte_for_byte() {
        let ws = tempfile::tempdir().unwrap();
        let p = ws.path();
        std::fs::create_dir_all(p.join("d/e")).unwrap();
        std::fs::write(p.join("d/e/f.bin"), [0u8, 159, 146, 150, 255]).unwrap();
        std::os::unix::fs::symlink("../elsewhere", p.join("d/link")).unwrap();
        std::fs::write(p.join("a.txt"), "old\n").unwrap();
        let fd = root(p);
        let mut mem = Mem::default();
        let snaps: Vec<_> = ["d", "a.txt", "new/deep/x.txt"]
            .iter()
            .map(|r| snapshot(fd.as_fd(), r, &mut mem))
            .collect();
        // A path whose folder is missing is recorded at the first missing one.
        assert_eq!(snaps[2], ("new".to_string(), Before::Absent));
        std::fs::remove_dir_all(p.join("d")).unwrap();
        std::fs::write(p.join("a.txt"), "new").unwrap();
        std::fs::create_dir_all(p.join("new/deep")).unwrap();
        std::fs::write(p.join("new/deep/x.txt"), "x").unwrap();
        let mut load = |b: &str| Ok(mem.0[b].clone());
        for (rel, before) in snaps.iter().rev() {
            restore(fd.as_fd(), rel, before, &mut load).unwrap();
        }
        assert_eq!(
            std::fs::read(p.join("d/e/f.bin")).unwrap(),
            [0u8, 159, 146, 150, 255]
        );
        assert_eq!(
            std::fs::read_link(p.join("d/link")).unwrap(),
            std::path::Path::new("../elsewhere")
        );
        assert_eq!(std::fs::read_to_string(p.join("a.txt")).unwrap(), "old\n");
        assert!(!p.join("new").exists());
    }

    #[test]
    fn links_resolve_inside_the_root_only() {
        let ws = tempfile::tempdir().unwrap();
        let p = ws.path();
        std::fs::create_dir(p.join("sub")).unwrap();
        std::os::unix::fs::symlink("sub", p.join("dl")).unwrap();
        std::os::unix::fs::symlink("../x", p.join("sub/up")).unwrap();
        std::os::unix::fs::symlink("../..", p.join("sub/out")).unwrap();
        std::os::unix::fs::symlink("/etc", p.join("abs")).unwrap();
        let fd = root(p);
        let r = |rel, follow| resolve(fd.as_fd(), rel, follow).map_err(|e| e.to_string());
        assert_eq!(r("dl/f.txt", true), Ok("sub/f.txt".into()));
        assert_eq!(r("dl/up", true), Ok("x".into()));
        assert_eq!(r("dl/up", false), Ok("sub/up".into()));
        assert_eq!(r("dl/new/deep.txt", true), Ok("sub/new/deep.txt".into()));
        assert!(r("dl/out/etc", true).is_err());
        assert!(r("abs/passwd", true).is_err());
    }

    #[test]
    fn a_symlink_on_the_way_is_never_followed() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "secret").unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("out")).unwrap();
        let fd = root(ws.path());
        let mut mem = Mem::default();
        let (_, before) = snapshot(fd.as_fd(), "out/secret", &mut mem);
        assert!(matches!(before, Before::Skipped { .. }), "{before:?}");
        assert!(mem.0.is_empty());
        let e = restore(
            fd.as_fd(),
            "out/secret",
            &Before::Absent,
            &mut |_| unreachable!(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret")).unwrap(),
            "secret"
        );
    }
}

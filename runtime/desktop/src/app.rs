//! A granted app, resolved once when its tool is bound: its desktop entry
//! (found by its desktop-file ID under the XDG data folders) or its
//! program, and the program line a launch with some files or URLs runs.

use std::io::Read;
use std::path::{Path, PathBuf};

use warden_confine::find_program;

use crate::entry::{Entry, Part, parse};

/// Largest desktop file read.
const ENTRY_MAX: u64 = 64 << 10;

/// The `applications` folders desktop entries are looked for in, most
/// important first: `$XDG_DATA_HOME` (default `~/.local/share`), then each
/// of `$XDG_DATA_DIRS` (default `/usr/local/share:/usr/share`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppDirs(pub Vec<PathBuf>);

impl AppDirs {
    /// From warden's environment.
    pub fn from_env() -> AppDirs {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let home = var("XDG_DATA_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".local/share")));
        let dirs = var("XDG_DATA_DIRS").unwrap_or_else(|| "/usr/local/share:/usr/share".into());
        AppDirs(
            home.into_iter()
                .chain(std::env::split_paths(&dirs))
                .filter(|d| d.is_absolute())
                .map(|d| d.join("applications"))
                .collect(),
        )
    }

    /// The desktop file of ID `id` (`org.gnome.TextEditor`; in a subfolder,
    /// `kde-okular` is also `kde/okular.desktop`), from the first folder
    /// that has one.
    pub fn find(&self, id: &str) -> Option<PathBuf> {
        let dashes: Vec<usize> = id.match_indices('-').map(|(i, _)| i).collect();
        // Each dash may stand for a folder: at most 2^6 spellings.
        let spellings = 1u32 << dashes.len().min(6);
        self.0.iter().find_map(|dir| {
            (0..spellings).find_map(|mask| {
                let mut rel: Vec<u8> = id.as_bytes().to_vec();
                for (bit, &at) in dashes.iter().take(6).enumerate() {
                    if mask & (1 << bit) != 0 {
                        rel[at] = b'/';
                    }
                }
                let path = dir.join(format!("{}.desktop", String::from_utf8_lossy(&rel)));
                path.is_file().then_some(path)
            })
        })
    }
}

/// A granted app as this machine has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct App {
    /// As granted: a desktop-entry ID, a program name or a path.
    pub granted: String,
    /// Its name from its desktop entry, if it has one.
    pub name: Option<String>,
    /// How it starts, or why it cannot (not installed, ...).
    pub start: Result<Start, String>,
}

/// How an app starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    /// The program, by its absolute path.
    pub program: PathBuf,
    /// Its arguments with their field codes, from the desktop entry; for a
    /// program granted by name, none: files and URLs follow it.
    args: Vec<Vec<Part>>,
    /// The desktop file, for `%k`.
    entry: Option<PathBuf>,
    /// `Icon`, for `%i`.
    icon: Option<String>,
    /// Whether files and URLs are given as arguments of its own (a program
    /// granted by name) rather than through field codes.
    plain: bool,
}

impl App {
    /// Finds `granted` on this machine: a desktop entry of that ID, else a
    /// program of that name on `PATH` (or that absolute path).
    pub fn resolve(granted: &str, dirs: &AppDirs) -> App {
        let mut app = App {
            granted: granted.to_string(),
            name: None,
            start: Err(String::new()),
        };
        let entry = (!granted.starts_with('/'))
            .then(|| dirs.find(granted))
            .flatten();
        app.start = match entry {
            Some(path) => match read_entry(&path) {
                Ok(entry) => {
                    app.name = entry.name.clone();
                    from_entry(entry, &path)
                }
                Err(why) => Err(format!(
                    "its desktop entry {} cannot be used: {why}",
                    path.display()
                )),
            },
            None => match find_program(granted) {
                Some(program) => Ok(Start {
                    program,
                    args: Vec::new(),
                    entry: None,
                    icon: None,
                    plain: true,
                }),
                None if granted.starts_with('/') => Err(format!(
                    "not installed: {granted} is not an executable file"
                )),
                None => Err(format!(
                    "not installed: no desktop entry `{granted}.desktop` (looked in {}) and no \
                     program `{granted}` on PATH",
                    dirs.0
                        .iter()
                        .map(|d| d.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            },
        };
        app
    }

    /// The name to show: the entry's, else as granted.
    pub fn shown_name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.granted)
    }

    /// The program line that starts it with `files` (absolute paths) and
    /// `urls`, argument by argument; the error says why it cannot.
    pub fn line(&self, files: &[String], urls: &[String]) -> Result<Vec<String>, String> {
        let start = self.start.as_ref().map_err(Clone::clone)?;
        let program = start.program.to_string_lossy().into_owned();
        if start.plain {
            return Ok(std::iter::once(program)
                .chain(files.iter().cloned())
                .chain(urls.iter().cloned())
                .collect());
        }
        let codes: Vec<char> = start
            .args
            .iter()
            .flatten()
            .filter_map(|p| match p {
                Part::Code(c) => Some(*c),
                Part::Text(_) => None,
            })
            .collect();
        let has = |c: char| codes.contains(&c);
        let name = self.shown_name();
        let takes_urls = has('u') || has('U');
        if !urls.is_empty() && !takes_urls {
            return Err(format!(
                "{name} takes no URLs (its desktop entry's Exec line has no %u or %U)"
            ));
        }
        let takes_files = takes_urls || has('f') || has('F');
        if !files.is_empty() && !takes_files {
            return Err(format!(
                "{name} takes no files (its desktop entry's Exec line has no %f, %F, %u or %U)"
            ));
        }
        // Files go to %f/%F where the line has them, else with the URLs.
        let by_url: Vec<String> = if has('f') || has('F') {
            urls.to_vec()
        } else {
            files.iter().chain(urls).cloned().collect()
        };
        let one = |items: &[String], what: &str| -> Result<Option<String>, String> {
            match items {
                [] => Ok(None),
                [one] => Ok(Some(one.clone())),
                _ => Err(format!(
                    "{name} opens one {what} at a time: open it once for each"
                )),
            }
        };
        let mut argv = vec![program];
        for arg in start.args.iter().skip(1) {
            match arg.as_slice() {
                [Part::Code('F')] => argv.extend(files.iter().cloned()),
                [Part::Code('U')] => argv.extend(by_url.iter().cloned()),
                [Part::Code('i')] => {
                    if let Some(icon) = &start.icon {
                        argv.extend(["--icon".to_string(), icon.clone()]);
                    }
                }
                [Part::Code(c @ ('f' | 'u'))] => {
                    let items = if *c == 'f' { files } else { &by_url };
                    argv.extend(one(items, if *c == 'f' { "file" } else { "item" })?);
                }
                parts => {
                    let mut text = String::new();
                    for p in parts {
                        match p {
                            Part::Text(t) => text.push_str(t),
                            Part::Code('f') => {
                                text.push_str(&one(files, "file")?.unwrap_or_default())
                            }
                            Part::Code('u') => {
                                text.push_str(&one(&by_url, "item")?.unwrap_or_default());
                            }
                            Part::Code('c') => text.push_str(name),
                            Part::Code('k') => {
                                let k = start.entry.as_deref().unwrap_or(Path::new(""));
                                text.push_str(&k.to_string_lossy());
                            }
                            Part::Code(_) => {}
                        }
                    }
                    argv.push(text);
                }
            }
        }
        Ok(argv)
    }
}

/// How the app of `entry` (read from `path`) starts, or why it cannot.
fn from_entry(entry: Entry, path: &Path) -> Result<Start, String> {
    let at = path.display();
    if entry.hidden {
        return Err(format!("its desktop entry {at} is marked Hidden (deleted)"));
    }
    if entry.terminal {
        return Err(format!(
            "its desktop entry {at} runs it in a terminal (Terminal=true), which warden does \
             not give apps"
        ));
    }
    if let Some(t) = &entry.try_exec
        && find_program(t).is_none()
    {
        return Err(format!(
            "not installed: its desktop entry {at} needs `{t}` (TryExec), which is not"
        ));
    }
    let Some(args) = entry.exec else {
        return Err(format!(
            "its desktop entry {at} has no Exec line (it starts over D-Bus, which warden does \
             not do)"
        ));
    };
    let first: String = args[0]
        .iter()
        .map(|p| match p {
            Part::Text(t) => t.as_str(),
            Part::Code(_) => "",
        })
        .collect();
    let program = find_program(&first).ok_or_else(|| {
        format!("not installed: its desktop entry {at} runs `{first}`, which is not")
    })?;
    Ok(Start {
        program,
        args,
        entry: Some(path.to_path_buf()),
        icon: entry.icon,
        plain: false,
    })
}

/// A desktop file: a regular file of at most [`ENTRY_MAX`] bytes, in
/// UTF-8, opened without blocking (a pipe named like one never hangs the
/// bind).
fn read_entry(path: &Path) -> Result<Entry, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > ENTRY_MAX {
        return Err(format!("larger than {} KiB", ENTRY_MAX >> 10));
    }
    let mut text = String::new();
    file.take(ENTRY_MAX)
        .read_to_string(&mut text)
        .map_err(|_| "not UTF-8 text".to_string())?;
    parse(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `applications` folder holding `files` (path, content).
    fn dirs(files: &[(&str, &str)]) -> (tempfile::TempDir, AppDirs) {
        let d = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = d.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let dirs = AppDirs(vec![d.path().to_path_buf()]);
        (d, dirs)
    }

    fn entry(exec: &str) -> String {
        format!("[Desktop Entry]\nType=Application\nName=Shell Thing\nExec={exec}\nIcon=thing\n")
    }

    fn sh() -> String {
        find_program("sh").unwrap().display().to_string()
    }

    #[test]
    fn an_entry_is_found_by_its_id_and_fills_its_field_codes() {
        let (_d, dirs) = dirs(&[
            ("thing.desktop", &entry("sh -c \"echo %c\" --icon-at %i %F")),
            ("kde/viewer.desktop", &entry("sh --file=%f")),
            ("web.desktop", &entry("sh %U")),
        ]);
        let thing = App::resolve("thing", &dirs);
        assert_eq!(thing.shown_name(), "Shell Thing");
        let files = ["/w/a b.txt".to_string(), "/w/c".to_string()];
        assert_eq!(
            thing.line(&files, &[]).unwrap(),
            [
                &sh(),
                "-c",
                "echo Shell Thing",
                "--icon-at",
                "--icon",
                "thing",
                "/w/a b.txt",
                "/w/c"
            ]
        );
        assert_eq!(
            thing.line(&[], &["https://docs.rs/".into()]).unwrap_err(),
            "Shell Thing takes no URLs (its desktop entry's Exec line has no %u or %U)"
        );
        // An ID whose dash is a folder.
        let viewer = App::resolve("kde-viewer", &dirs);
        assert_eq!(
            viewer.line(&files[..1], &[]).unwrap(),
            [&sh(), "--file=/w/a b.txt"]
        );
        assert_eq!(viewer.line(&[], &[]).unwrap(), [&sh(), "--file="]);
        assert!(
            viewer
                .line(&files, &[])
                .unwrap_err()
                .contains("opens one file at a time"),
            "{:?}",
            viewer.line(&files, &[])
        );
        let web = App::resolve("web", &dirs);
        assert_eq!(
            web.line(&files[..1], &["https://docs.rs/".into()]).unwrap(),
            [&sh(), "/w/a b.txt", "https://docs.rs/"]
        );
    }

    #[test]
    fn a_program_by_name_takes_files_and_urls_as_arguments() {
        let (_d, dirs) = dirs(&[]);
        let app = App::resolve("sh", &dirs);
        assert_eq!(app.name, None);
        assert_eq!(
            app.line(&["/w/x".into()], &["https://a.example/".into()])
                .unwrap(),
            [&sh(), "/w/x", "https://a.example/"]
        );
    }

    #[test]
    fn what_cannot_start_says_why() {
        let (_d, dirs) = dirs(&[
            (
                "gone.desktop",
                "[Desktop Entry]\nType=Application\nExec=sh\nHidden=true\n",
            ),
            (
                "term.desktop",
                "[Desktop Entry]\nType=Application\nExec=sh\nTerminal=true\n",
            ),
            (
                "try.desktop",
                "[Desktop Entry]\nType=Application\nExec=sh\nTryExec=no-such-prog-x\n",
            ),
            (
                "dbus.desktop",
                "[Desktop Entry]\nType=Application\nName=D\n",
            ),
            (
                "missing.desktop",
                "[Desktop Entry]\nType=Application\nExec=no-such-prog-y %f\n",
            ),
            (
                "broken.desktop",
                "[Desktop Entry]\nType=Application\nExec=sh %q\n",
            ),
        ]);
        for (id, says) in [
            ("gone", "is marked Hidden"),
            ("term", "runs it in a terminal"),
            ("try", "needs `no-such-prog-x` (TryExec)"),
            ("dbus", "has no Exec line"),
            ("missing", "runs `no-such-prog-y`, which is not"),
            ("broken", "cannot be used: unknown field code `%q` in Exec"),
            (
                "no-such-app-z",
                "not installed: no desktop entry `no-such-app-z.desktop`",
            ),
            (
                "/no/such/file",
                "not installed: /no/such/file is not an executable file",
            ),
        ] {
            let app = App::resolve(id, &dirs);
            let why = app.line(&[], &[]).unwrap_err();
            assert!(why.contains(says), "{id}: {why}");
        }
    }
}

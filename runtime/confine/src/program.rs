//! Finding a program the way warden grants it: a name on warden's `PATH`
//! (absolute directories only), or an absolute path; either must be an
//! executable file. One lookup for every kind of program warden starts.

use std::path::{Path, PathBuf};

/// Whether `path` is a file someone may execute.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The executable file `program` names: itself when absolute, else the
/// first of that name in a directory of warden's `PATH` (relative
/// directories are skipped: they would depend on where warden runs).
pub fn find_program(program: &str) -> Option<PathBuf> {
    if program.starts_with('/') {
        let path = PathBuf::from(program);
        return is_executable(&path).then_some(path);
    }
    if program.is_empty() || program.contains('/') {
        return None;
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_programs_by_name_or_absolute_path_only() {
        let sh = find_program("sh").expect("sh on PATH");
        assert!(sh.is_absolute() && sh.ends_with("sh"), "{}", sh.display());
        assert_eq!(find_program(sh.to_str().unwrap()), Some(sh.clone()));
        assert_eq!(find_program("bin/sh"), None);
        assert_eq!(find_program(""), None);
        assert_eq!(find_program("no-such-program-anywhere"), None);
        // A file that is not executable is no program.
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::write(&data, "x").unwrap();
        assert_eq!(find_program(data.to_str().unwrap()), None);
    }
}

//! What kind of project a folder holds, from the files at its root.

use std::path::Path;

/// A kind of project `warden init` knows, with what its commands need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// How it is named to the user: "Rust", "Node", ...
    pub label: &'static str,
    /// The programs its commands start by name, most used first.
    pub programs: &'static [&'static str],
    /// The toolchain's own folders, each named by the variable that moves
    /// it and its place under `HOME` otherwise; the commands get them
    /// read-only, and the variable set to where it is.
    pub homes: &'static [(&'static str, &'static str)],
    /// Whether its builds and test runs outgrow the call defaults (30 s,
    /// 256 MiB a process).
    pub builds: bool,
}

pub const RUST: Kind = Kind {
    label: "Rust",
    programs: &["cargo", "rustc"],
    homes: &[("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")],
    builds: true,
};

pub const NODE: Kind = Kind {
    label: "Node",
    programs: &["node", "npm", "npx"],
    homes: &[],
    builds: true,
};

pub const PYTHON: Kind = Kind {
    label: "Python",
    programs: &["python3"],
    homes: &[],
    builds: true,
};

pub const GO: Kind = Kind {
    label: "Go",
    programs: &["go"],
    homes: &[],
    builds: true,
};

pub const MAKE: Kind = Kind {
    label: "make",
    programs: &["make"],
    homes: &[],
    builds: true,
};

pub const GIT: Kind = Kind {
    label: "git",
    programs: &["git"],
    homes: &[],
    builds: false,
};

/// The files that say what a folder holds, in the order they are shown.
const MARKERS: &[(&str, Kind)] = &[
    ("Cargo.toml", RUST),
    ("package.json", NODE),
    ("pyproject.toml", PYTHON),
    ("requirements.txt", PYTHON),
    ("setup.py", PYTHON),
    ("go.mod", GO),
    ("Makefile", MAKE),
    ("GNUmakefile", MAKE),
    (".git", GIT),
];

/// A kind found, with the file that told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// `Cargo.toml`, `.git`, ...
    pub marker: &'static str,
    pub kind: Kind,
}

/// The kinds of project in `root`, each once, by the files at its top
/// (looked at, never opened or followed).
pub fn detect(root: &Path) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    for (marker, kind) in MARKERS {
        let present = std::fs::symlink_metadata(root.join(marker)).is_ok();
        if present && !found.iter().any(|f| f.kind == *kind) {
            found.push(Found {
                marker,
                kind: *kind,
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_marker_names_its_kind_once() {
        let d = tempfile::tempdir().unwrap();
        assert!(detect(d.path()).is_empty());
        for f in [
            "pyproject.toml",
            "requirements.txt",
            "Cargo.toml",
            "Makefile",
        ] {
            std::fs::write(d.path().join(f), "").unwrap();
        }
        std::fs::create_dir(d.path().join(".git")).unwrap();
        let found: Vec<(&str, &str)> = detect(d.path())
            .iter()
            .map(|f| (f.marker, f.kind.label))
            .collect();
        assert_eq!(
            found,
            vec![
                ("Cargo.toml", "Rust"),
                ("pyproject.toml", "Python"),
                ("Makefile", "make"),
                (".git", "git"),
            ]
        );
    }
}

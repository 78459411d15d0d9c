use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::*;
use crate::init::detect::{self, Found};

/// A machine: a home with rustup, cargo and pyenv, `~/bin`, a system
/// folder, and the workspace.
struct Machine {
    _dir: tempfile::TempDir,
    base: PathBuf,
    home: PathBuf,
    ws: PathBuf,
    on_path: BTreeMap<&'static str, PathBuf>,
}

fn machine() -> Machine {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let home = base.join("home");
    let ws = home.join("proj");
    for d in [
        "home/.rustup/toolchains",
        "home/.cargo/bin",
        "home/.pyenv/shims",
        "home/bin",
        "usr/bin",
        "home/proj",
    ] {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
    std::fs::write(home.join(".cargo/bin/rustup"), "").unwrap();
    std::os::unix::fs::symlink("rustup", home.join(".cargo/bin/cargo")).unwrap();
    std::os::unix::fs::symlink("rustup", home.join(".cargo/bin/rustc")).unwrap();
    std::fs::write(home.join(".pyenv/shims/python3"), "").unwrap();
    std::fs::write(home.join("bin/make"), "").unwrap();
    std::fs::write(base.join("usr/bin/sh"), "").unwrap();
    let on_path = BTreeMap::from([
        ("cargo", home.join(".cargo/bin/cargo")),
        ("rustc", home.join(".cargo/bin/rustc")),
        ("python3", home.join(".pyenv/shims/python3")),
        ("make", home.join("bin/make")),
        ("sh", base.join("usr/bin/sh")),
    ]);
    Machine {
        _dir: dir,
        base,
        home,
        ws,
        on_path,
    }
}

fn plan_for(m: &Machine, markers: &[&str], vars: &[(&str, String)]) -> Plan {
    plan_owned(m, markers, vars, &|_: &Path| None)
}

fn plan_owned(
    m: &Machine,
    markers: &[&str],
    vars: &[(&str, String)],
    owned: &dyn Fn(&Path) -> Option<String>,
) -> Plan {
    for f in markers {
        std::fs::write(m.ws.join(f), "").unwrap();
    }
    let found: Vec<Found> = detect::detect(&m.ws);
    let resolve = |name: &str| {
        m.on_path
            .get(name)
            .cloned()
            .ok_or_else(|| format!("`{name}` was not found on PATH"))
    };
    let var = |name: &str| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.clone())
    };
    let system = m.base.join("usr");
    let system = [system.to_str().unwrap()];
    let env = Env {
        root: &m.ws,
        home: Some(m.home.clone()),
        var: &var,
        resolve: &resolve,
        owned,
        system: &system,
    };
    plan(&found, &env)
}

fn reads(p: &Plan) -> Vec<(PathBuf, &str)> {
    p.read
        .iter()
        .map(|r| (r.path.clone(), r.why.as_str()))
        .collect()
}

#[test]
fn rust_gets_the_rustup_and_cargo_homes_read_only_and_named() {
    let m = machine();
    let p = plan_for(&m, &["Cargo.toml"], &[]);
    assert_eq!(p.exec, vec!["cargo", "rustc", "sh"]);
    assert_eq!(
        reads(&p),
        vec![
            (m.home.join(".rustup"), "RUSTUP_HOME"),
            (m.home.join(".cargo"), "CARGO_HOME, cargo, rustc"),
        ]
    );
    assert_eq!(
        p.env,
        vec![
            ("RUSTUP_HOME".to_string(), m.home.join(".rustup")),
            ("CARGO_HOME".to_string(), m.home.join(".cargo")),
        ]
    );
    assert!(p.builds);
    assert!(p.missing.is_empty() && p.skipped.is_empty(), "{p:?}");
}

#[test]
fn the_homes_follow_the_variables() {
    let m = machine();
    let elsewhere = m.base.join("opt/rustup");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let p = plan_for(
        &m,
        &["Cargo.toml"],
        &[
            ("RUSTUP_HOME", elsewhere.display().to_string()),
            ("CARGO_HOME", m.base.join("nowhere").display().to_string()),
        ],
    );
    assert_eq!(p.env, vec![("RUSTUP_HOME".to_string(), elsewhere.clone())]);
    assert_eq!(p.read[0].path, elsewhere);
    assert_eq!(p.skipped.len(), 1, "{p:?}");
    assert!(p.skipped[0].starts_with("CARGO_HOME ("), "{p:?}");
    assert!(p.skipped[0].ends_with(") is not a folder here"), "{p:?}");
}

#[test]
fn a_version_managers_shim_gets_its_root_and_a_home_bin_only_itself() {
    let m = machine();
    let p = plan_for(&m, &["pyproject.toml", "Makefile"], &[]);
    assert_eq!(p.exec, vec!["python3", "make", "sh"]);
    // ~/.pyenv above its shims; ~/bin's parent is the home folder, so
    // only ~/bin itself.
    assert_eq!(
        reads(&p),
        vec![
            (m.home.join(".pyenv"), "python3"),
            (m.home.join("bin"), "make"),
        ]
    );
    assert!(p.env.is_empty());
}

#[test]
fn missing_programs_are_listed_and_system_ones_need_nothing() {
    let m = machine();
    let p = plan_for(&m, &["package.json", "go.mod"], &[]);
    assert_eq!(p.exec, vec!["sh"]);
    let missing: Vec<&str> = p.missing.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(missing, vec!["node", "npm", "npx", "go"]);
    assert!(p.read.is_empty());
}

#[test]
fn warden_folders_and_the_workspace_are_never_granted() {
    let mut m = machine();
    // node inside the workspace (readable already), npm where warden keeps
    // its own files.
    let state = m.base.join("state");
    for dir in [m.ws.join("tools/bin"), state.join("bin")] {
        std::fs::create_dir_all(&dir).unwrap();
    }
    m.on_path.insert("node", m.ws.join("tools/bin/node"));
    m.on_path.insert("npm", state.join("bin/npm"));
    let owned = |d: &Path| {
        d.starts_with(&state)
            .then(|| "it holds warden's own folder".to_string())
    };
    let p = plan_owned(&m, &["package.json"], &[], &owned);
    assert_eq!(p.exec, vec!["node", "npm", "sh"]);
    assert!(p.read.is_empty(), "{p:?}");
    assert_eq!(
        p.skipped,
        vec![format!(
            "{} (for npm): not granted, it holds warden's own folder",
            state.display()
        )]
    );
}

#[test]
fn nothing_found_proposes_nothing() {
    let m = machine();
    assert_eq!(plan_for(&m, &[], &[]), Plan::default());
}

//! `warden init`: a commented `warden.toml` for the project in this
//! folder, then its trust diff, offered for acceptance on a terminal.
//!
//! - `detect`: which kinds of project the folder holds;
//! - `toolchain`: what `shell` needs to run their programs;
//! - `template`: the file's text.

mod detect;
mod template;
mod toolchain;

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use warden_policy::{POLICY_FILE, Policy, inert};
use warden_workspace::{Folders, Overlap};

/// `warden init [--print]`.
pub fn run(dir: Option<&Path>, folders: Folders, print: bool) -> anyhow::Result<u8> {
    let root = root(dir)?;
    folders.check_workspace(&root)?;
    let path = root.join(POLICY_FILE);
    let shown = inert(&path.display().to_string()).into_owned();
    if !print && std::fs::symlink_metadata(&path).is_ok() {
        bail!(
            "{shown} already exists: `warden init` never replaces it. Edit it, or see what \
             init would write with `warden init --print`"
        );
    }
    let found = detect::detect(&root);
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute());
    let var = |name: &str| std::env::var(name).ok();
    let owned = |dir: &Path| {
        folders.owned_overlapping(dir).map(|o| match o {
            Overlap::Holds(own) => format!("it holds warden's own folder {}", own.display()),
            Overlap::Inside(own) => format!("it is inside warden's own folder {}", own.display()),
        })
    };
    let env = toolchain::Env {
        root: &root,
        home,
        var: &var,
        resolve: &warden_sandbox::resolve_program,
        owned: &owned,
        system: warden_confine::SYSTEM_DIRS,
    };
    let plan = toolchain::plan(&found, &env);
    let text = template::render(&found, &plan);
    // What is written must be a policy warden accepts.
    Policy::parse(&text, &path, &root)
        .with_context(|| format!("warden init made an invalid policy:\n{text}"))?;
    if print {
        stdout_text!("{text}");
        return Ok(0);
    }
    write_new(&path, &text).with_context(|| format!("cannot write {shown}"))?;
    let kinds: Vec<&str> = found.iter().map(|f| f.kind.label).collect();
    let what = if kinds.is_empty() {
        "the built-in defaults".to_string()
    } else {
        kinds.join(", ")
    };
    stdout_line!("wrote {shown} ({what})");
    if !plan.missing.is_empty() {
        let names: Vec<&str> = plan.missing.iter().map(|(n, _)| n.as_str()).collect();
        stdout_line!(
            "note: not found on PATH, left out of `exec`: {}",
            names.join(", ")
        );
    }
    crate::trust_cmd::offer(&root, folders)?;
    Ok(0)
}

fn root(dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let root = dir.canonicalize().with_context(|| {
        format!(
            "{} does not exist: pass an existing folder to --workspace",
            inert(&dir.display().to_string())
        )
    })?;
    if !root.is_dir() {
        bail!("{} is not a folder", inert(&root.display().to_string()));
    }
    Ok(root)
}

/// Creates `path` with `text`; never replaces a file, and never writes
/// through a link planted in its place.
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .mode(0o644)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

//! What the `shell` tool needs to run a project's toolchain: the programs
//! found on `PATH`, the folders they live in (read-only), and the
//! variables that tell a toolchain where its own folders are.

use std::path::{Path, PathBuf};

use super::detect::Found;

/// What the environment `warden init` looks at offers.
pub struct Env<'a> {
    /// The workspace root (canonical).
    pub root: &'a Path,
    /// The user's home folder, if known.
    pub home: Option<PathBuf>,
    /// A variable of warden's environment.
    pub var: &'a dyn Fn(&str) -> Option<String>,
    /// A program's path as an `exec` grant finds it.
    pub resolve: &'a dyn Fn(&str) -> Result<PathBuf, String>,
    /// Why a folder may not be granted because of warden's own folders.
    pub owned: &'a dyn Fn(&Path) -> Option<String>,
    /// The folders every command may read anyway.
    pub system: &'a [&'a str],
}

/// A folder the commands get read-only, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub path: PathBuf,
    pub why: String,
}

/// The `shell` section `warden init` proposes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Programs found, toolchains first and `sh` last (`PATH` follows
    /// this order).
    pub exec: Vec<String>,
    /// Programs not found, with why.
    pub missing: Vec<(String, String)>,
    /// Folders to read.
    pub read: Vec<Read>,
    /// Variables set: a toolchain's home.
    pub env: Vec<(String, PathBuf)>,
    /// Folders left out, with why.
    pub skipped: Vec<String>,
    /// Whether builds run here (longer timeout, more memory).
    pub builds: bool,
}

/// Whether `dir` may be granted read-only to the commands.
enum Verdict {
    Grant,
    /// Readable already (a system folder, or inside the workspace).
    Covered,
    Refused(String),
}

impl Env<'_> {
    fn verdict(&self, dir: &Path) -> Verdict {
        if self.system.iter().any(|s| dir.starts_with(s)) || dir.starts_with(self.root) {
            return Verdict::Covered;
        }
        if dir.parent().is_none() {
            return Verdict::Refused("it is the whole file system".into());
        }
        if self.home.as_deref().is_some_and(|h| h.starts_with(dir)) {
            return Verdict::Refused("it holds your home folder".into());
        }
        if self.root.starts_with(dir) {
            return Verdict::Refused("it holds the workspace".into());
        }
        match (self.owned)(dir) {
            Some(why) => Verdict::Refused(why),
            None => Verdict::Grant,
        }
    }

    /// Where a toolchain's own folder `var` is: the variable, else its
    /// place under `HOME`; only an existing folder, by its real path.
    fn home_of(&self, var: &str, under_home: &str) -> Result<PathBuf, String> {
        let path = match (self.var)(var).filter(|v| !v.is_empty()) {
            Some(v) => PathBuf::from(v),
            None => self
                .home
                .as_ref()
                .ok_or_else(|| format!("{var} is not set and HOME is unknown"))?
                .join(under_home),
        };
        if !path.is_absolute() {
            return Err(format!("{var} is not an absolute path"));
        }
        path.canonicalize()
            .ok()
            .filter(|p| p.is_dir())
            .ok_or_else(|| format!("{var} ({}) is not a folder here", path.display()))
    }
}

/// The folder a program's toolchain lives in: above its `bin` (or
/// `shims`) folder, else that folder itself.
fn toolchain_root(program: &Path) -> Option<&Path> {
    let dir = program.parent()?;
    let name = dir.file_name()?.to_str()?;
    if matches!(name, "bin" | "sbin" | "shims") {
        dir.parent()
    } else {
        Some(dir)
    }
}

/// The plan for the kinds `found` in the workspace.
pub fn plan(found: &[Found], env: &Env<'_>) -> Plan {
    let mut plan = Plan::default();
    let mut names: Vec<&str> = Vec::new();
    for f in found {
        plan.builds |= f.kind.builds;
        for p in f.kind.programs {
            if !names.contains(p) {
                names.push(p);
            }
        }
    }
    if names.is_empty() {
        return plan;
    }
    names.push("sh");
    for f in found {
        for (var, under_home) in f.kind.homes {
            match env.home_of(var, under_home) {
                Ok(path) => {
                    add_read(&mut plan, env, &path, var);
                    plan.env.push((var.to_string(), path));
                }
                Err(why) => plan.skipped.push(why),
            }
        }
    }
    for name in names {
        let found = match (env.resolve)(name) {
            Ok(p) => p,
            Err(why) => {
                plan.missing.push((name.to_string(), why));
                continue;
            }
        };
        plan.exec.push(name.to_string());
        // Where it was found and where it really is (a link into a
        // toolchain, a version manager's shim).
        let real = found.canonicalize().unwrap_or_else(|_| found.clone());
        let paths = if real == found {
            vec![found]
        } else {
            vec![found, real]
        };
        for path in &paths {
            let Some(top) = toolchain_root(path) else {
                continue;
            };
            let top = top.canonicalize().unwrap_or_else(|_| top.to_path_buf());
            if let Verdict::Refused(why) = env.verdict(&top) {
                // The program's own folder, when the one above it may not
                // be granted (`~/bin`, `~/.local/bin`).
                let own = path.parent().map(Path::to_path_buf).unwrap_or_default();
                let own = own.canonicalize().unwrap_or(own);
                match env.verdict(&own) {
                    Verdict::Refused(_) => {
                        let line = format!("{} (for {name}): not granted, {why}", top.display());
                        if !plan.skipped.contains(&line) {
                            plan.skipped.push(line);
                        }
                    }
                    _ => add_read(&mut plan, env, &own, name),
                }
                continue;
            }
            add_read(&mut plan, env, &top, name);
        }
    }
    plan
}

/// Adds `dir` to the folders read, unless it is readable already.
fn add_read(plan: &mut Plan, env: &Env<'_>, dir: &Path, why: &str) {
    if !matches!(env.verdict(dir), Verdict::Grant) {
        return;
    }
    if let Some(r) = plan.read.iter_mut().find(|r| dir.starts_with(&r.path)) {
        if !r.why.split(", ").any(|w| w == why) {
            r.why = format!("{}, {why}", r.why);
        }
        return;
    }
    // A folder above ones already listed replaces them.
    let mut why = why.to_string();
    plan.read.retain(|r| {
        let inside = r.path.starts_with(dir);
        if inside {
            why = format!("{}, {why}", r.why);
        }
        !inside
    });
    plan.read.push(Read {
        path: dir.to_path_buf(),
        why,
    });
}

#[cfg(test)]
mod tests;

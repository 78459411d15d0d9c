//! The text of the `warden.toml` that `warden init` writes: every grant
//! with a comment saying why, and the defaults that need no line.

use std::fmt::Write as _;
use std::path::Path;

use warden_policy::inert;

use super::detect::Found;
use super::toolchain::Plan;

/// The call limits of a section whose commands build: a build or a test
/// run outlasts the 30 s default, and a compiler outgrows 256 MiB.
const BUILD_TIMEOUT: &str = "10m";
const BUILD_MEMORY: &str = "4GiB";

/// Where a comment after a value starts.
const COMMENT_AT: usize = 32;

const HEAD: &str = "\
# warden.toml: what the tools may reach in this workspace (written by `warden init`).
# Nothing here applies until you accept it: `warden trust` shows each grant and
# records it. `warden policy` shows what every tool gets; the README lists every key.
";

const DEFAULTS: &str = "
# When to ask before a call: \"writes\" (the default: calls of tools that can change
# files or reach the network), \"always\", or \"never\".
# approval = \"writes\"

# The built-in file tools need no section; without one they get the workspace:
#   read_file, list_files, glob, grep                       read-only
#   write_file, edit_file, copy, move, mkdir, delete        read-write
# A section replaces that (`[tools.delete]` with `enabled = false` turns one off).
# fetch and web_search stay off until a section grants them hosts:
# [tools.fetch]
# network = [\"docs.rs\"]
";

const SHELL_INTRO: &str = "
# `shell` runs `sh -c LINE` in the workspace, confined by the kernel: it reaches the
# folders below and the system's program folders (read-only), no network and no other
# environment. `exec` names the programs a line may start by name; what they start in
# turn is not checked: the confinement is on files and network, not on programs.
";

/// A TOML basic string: JSON's escapes are all TOML's.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("a string always serializes")
}

/// `line`, then `# comment` from the comment column.
fn commented(out: &mut String, line: &str, comment: &str) {
    let pad = COMMENT_AT.saturating_sub(line.chars().count()).max(1);
    let _ = writeln!(out, "{line}{:pad$}# {comment}", "");
}

fn path_str(p: &Path) -> Option<&str> {
    p.to_str()
}

/// The whole file for what was `found`, with the `shell` section `plan`.
pub fn render(found: &[Found], plan: &Plan) -> String {
    let mut out = String::from(HEAD);
    if found.is_empty() {
        out.push_str(
            "#\n# Found nothing that names a toolchain here (Cargo.toml, package.json, \
             pyproject.toml,\n# go.mod, Makefile, .git).\n",
        );
    } else {
        let list: Vec<String> = found
            .iter()
            .map(|f| format!("{} ({})", f.marker, f.kind.label))
            .collect();
        let _ = writeln!(out, "#\n# Found here: {}.", list.join(", "));
    }
    out.push_str(DEFAULTS);
    out.push_str(SHELL_INTRO);
    if plan.exec.iter().all(|p| p == "sh") {
        out.push_str(
            "# To let the model run commands, name their programs:\n\
             # [tools.shell]\n\
             # exec = [\"make\", \"sh\"]\n\
             # write = [\".\"]\n",
        );
        missing(&mut out, plan);
        return out;
    }
    shell(&mut out, plan);
    out
}

fn shell(out: &mut String, plan: &Plan) {
    out.push_str("[tools.shell]\n");
    let exec: Vec<String> = plan.exec.iter().map(|p| quoted(p)).collect();
    let _ = writeln!(out, "exec = [{}]", exec.join(", "));
    commented(
        out,
        "write = [\".\"]",
        "the workspace: builds and tests write here",
    );
    let mut unwritable = Vec::new();
    let reads: Vec<(&str, &str)> = plan
        .read
        .iter()
        .filter_map(|r| match path_str(&r.path) {
            Some(p) => Some((p, r.why.as_str())),
            None => {
                unwritable.push(r.path.display().to_string());
                None
            }
        })
        .collect();
    if !reads.is_empty() {
        commented(out, "read = [", "the toolchains, read-only");
        for (path, why) in reads {
            commented(out, &format!("    {},", quoted(path)), why);
        }
        out.push_str("]\n");
    }
    let env: Vec<String> = plan
        .env
        .iter()
        .filter_map(|(var, path)| Some(format!("{var}={}", path_str(path)?)))
        .collect();
    if !env.is_empty() {
        commented(out, "env = [", "where the toolchain keeps its files");
        for e in env {
            let _ = writeln!(out, "    {},", quoted(&e));
        }
        out.push_str("]\n");
    }
    if plan.builds {
        commented(
            out,
            &format!("timeout = {}", quoted(BUILD_TIMEOUT)),
            "a build or a test run: longer than the 30s default",
        );
        commented(
            out,
            &format!("memory = {}", quoted(BUILD_MEMORY)),
            "per process; compilers outgrow the 256MiB default",
        );
    }
    commented(
        out,
        "# network = [\"*\"]",
        "downloads (cargo fetch, npm install, pip install): the whole network",
    );
    missing(out, plan);
    for p in unwritable {
        let _ = writeln!(out, "# not written (not UTF-8): {}", inert(&p));
    }
}

fn missing(out: &mut String, plan: &Plan) {
    if !plan.missing.is_empty() {
        let names: Vec<&str> = plan.missing.iter().map(|(n, _)| n.as_str()).collect();
        let _ = writeln!(
            out,
            "# Not found on PATH when `warden init` ran: {} (add to exec once installed).",
            names.join(", ")
        );
    }
    for why in &plan.skipped {
        let _ = writeln!(out, "# Left out: {}.", inert(why));
    }
}

//! `warden tools new | add | compile`: writing and installing tools.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, bail};
use serde_json::Value;
use warden_policy::{Origin, inert, inert_text};
use warden_sandbox::{ComponentSource, HostConfig, ToolHost, ToolInfo};
use warden_state::StateDir;
use warden_workspace::{WORKSPACE_TOOLS, Workspace};

use crate::render;

/// The contract every tool component implements (without the host extras
/// only the built-in `fs` component imports).
const TOOL_WIT: &str = include_str!("../../../wit/tool.wit");

/// The Rust SDK, vendored into each Rust project so it builds offline
/// from crates.io alone.
const SDK_LIB: &str = include_str!("../../../tools-wasm/warden-tool/src/lib.rs");
const SDK_EFFECT: &str = include_str!("../../../tools-wasm/warden-tool/src/effect.rs");
const SDK_DESKTOP: &str = include_str!("../../../tools-wasm/warden-tool/src/desktop.rs");
const SDK_README: &str = include_str!("../../../tools-wasm/warden-tool/README.md");
const SDK_CARGO: &str = r#"[package]
name = "warden-tool"
description = "Write warden tool components in Rust (vendored by `warden tools new`)."
version = "0.1.0"
edition = "2024"
license = "Apache-2.0"

[dependencies]
wit-bindgen = { version = "0.61", default-features = false, features = ["macros", "realloc", "std"] }
serde = { version = "1", features = ["derive"] }
serde_json = "1"
schemars = { version = "1", default-features = false, features = ["derive", "std", "preserve_order"] }
"#;

const RUST_LIB: &str = include_str!("../../../examples/tools/rust/src/lib.rs");
const PY_APP: &str = include_str!("../../../examples/tools/python/app.py");
const PY_SDK: &str = include_str!("../../../examples/tools/python/warden_tool.py");
const JS_TOOL: &str = include_str!("../../../examples/tools/js/tool.js");
const JS_SDK: &str = include_str!("../../../examples/tools/js/warden_tool.js");
const JS_BUILD: &str = include_str!("../../../examples/tools/js/build.mjs");

/// The example's tool name, replaced by the new tool's.
const EXAMPLE: &str = "word_count";

/// A tool name: `[a-z][a-z0-9_]*`, at most 64 characters.
fn is_tool_name(s: &str) -> bool {
    s.len() <= 64
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn camel(name: &str) -> String {
    name.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// `warden tools new NAME --lang LANG [--dir DIR]`.
pub fn new(name: &str, lang: &str, dir: Option<&Path>) -> anyhow::Result<u8> {
    if !is_tool_name(name) {
        bail!(
            "`{}` is not a tool name: use snake_case (a lowercase letter, then lowercase \
             letters, digits or _; at most 64 characters), e.g. `word_count`",
            inert(name)
        );
    }
    let base = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let root = base.join(name);
    let quoted = |s: &str| format!("\"{s}\"");
    let (files, build, output): (Vec<(&str, String)>, String, String) = match lang {
        "rust" => (
            vec![
                ("Cargo.toml", rust_cargo(name)),
                (
                    "src/lib.rs",
                    RUST_LIB
                        .replace(&quoted(EXAMPLE), &quoted(name))
                        .replace("WordCount", &camel(name)),
                ),
                ("warden-tool/Cargo.toml", SDK_CARGO.into()),
                ("warden-tool/README.md", SDK_README.into()),
                ("warden-tool/src/lib.rs", SDK_LIB.into()),
                ("warden-tool/src/effect.rs", SDK_EFFECT.into()),
                ("warden-tool/src/desktop.rs", SDK_DESKTOP.into()),
                ("warden-tool/wit/tool.wit", TOOL_WIT.into()),
                (".gitignore", "target/\n".into()),
            ],
            "rustup target add wasm32-wasip2   # once\n\
             cargo build --release --target wasm32-wasip2"
                .into(),
            format!("target/wasm32-wasip2/release/{name}.wasm"),
        ),
        "python" => (
            vec![
                ("app.py", PY_APP.replace(&quoted(EXAMPLE), &quoted(name))),
                ("warden_tool.py", PY_SDK.into()),
                ("wit/tool.wit", TOOL_WIT.into()),
                (".gitignore", "__pycache__/\n*.wasm\n".into()),
            ],
            format!(
                "pip install componentize-py==0.25.*   # once\n\
                 componentize-py -d wit -w warden:tool/component componentize app -o {name}.wasm"
            ),
            format!("{name}.wasm"),
        ),
        "js" => (
            vec![
                (
                    "tool.js",
                    JS_TOOL.replace(&format!("'{EXAMPLE}'"), &format!("'{name}'")),
                ),
                ("warden_tool.js", JS_SDK.into()),
                (
                    "build.mjs",
                    JS_BUILD.replace(&format!("'{EXAMPLE}.wasm'"), &format!("'{name}.wasm'")),
                ),
                ("package.json", js_package(name)),
                ("wit/tool.wit", TOOL_WIT.into()),
                (".gitignore", "node_modules/\n*.wasm\n".into()),
            ],
            "npm install   # once: componentize-js from npm\nnode build.mjs".into(),
            format!("{name}.wasm"),
        ),
        other => bail!(
            "unknown language `{}`: use --lang rust, python or js",
            inert(other)
        ),
    };
    // A new folder (an existing one, or a symlink there, is refused) and
    // new files only: nothing in place is overwritten or followed.
    std::fs::create_dir(&root).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            anyhow::anyhow!(
                "{} already exists: choose another name or remove it",
                inert(&root.display().to_string())
            )
        } else {
            anyhow::anyhow!("cannot create {}: {e}", inert(&root.display().to_string()))
        }
    })?;
    let readme = readme(name, lang, &build, &output);
    for (rel, text) in files.iter().chain([&("README.md", readme)]) {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .with_context(|| format!("cannot create {}", inert(&path.display().to_string())))?;
        f.write_all(text.as_bytes())?;
    }
    let shown = inert(&root.display().to_string()).into_owned();
    stdout_line!("created {lang} tool project {shown}");
    stdout_line!();
    stdout_line!("build it (see {shown}/README.md):");
    stdout_line!("  cd {shown}");
    for line in build.lines() {
        stdout_line!("  {line}");
    }
    stdout_line!();
    stdout_line!("then install it: warden tools add {shown}/{output}");
    Ok(0)
}

fn rust_cargo(name: &str) -> String {
    format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
# A cdylib built for wasm32-wasip2 is a WASI 0.2 component: {name}.wasm.
crate-type = ["cdylib"]

[dependencies]
warden-tool = {{ path = "warden-tool" }}
serde = {{ version = "1", features = ["derive"] }}
schemars = {{ version = "1", default-features = false, features = ["derive", "std", "preserve_order"] }}

# A project of its own, not part of a parent workspace.
[workspace]

[profile.release]
opt-level = "s"
lto = true
codegen-units = 1
strip = true
panic = "abort"
"#
    )
}

fn js_package(name: &str) -> String {
    let doc = serde_json::json!({
        "name": name.replace('_', "-"),
        "private": true,
        "type": "module",
        "scripts": {"build": "node build.mjs"},
        "devDependencies": {"@bytecodealliance/componentize-js": "^0.23.0"},
    });
    serde_json::to_string_pretty(&doc).expect("JSON") + "\n"
}

fn readme(name: &str, lang: &str, build: &str, output: &str) -> String {
    let (language, sources) = match lang {
        "rust" => (
            "Rust",
            "`src/lib.rs` is the tool: an argument struct (its doc comments are the \
             description and the argument schema) and a `run` function. `warden-tool/` \
             is the SDK.",
        ),
        "python" => (
            "Python",
            "`app.py` is the tool: a function, its description and its JSON Schema. \
             `warden_tool.py` turns it into the component's exports.",
        ),
        _ => (
            "JavaScript",
            "`tool.js` is the tool: a function, its description and its JSON Schema. \
             `warden_tool.js` turns it into the component's exports.",
        ),
    };
    format!(
        "# {name}: a warden tool in {language}\n\n\
         {sources} `wit/tool.wit` is the contract it implements.\n\n\
         ## Build\n\n```sh\n{build}\n```\n\n\
         The result is the component `{output}`.\n\n\
         ## Install and try\n\n```sh\n\
         warden tools add {output}          # into .warden/tools/ (or --user)\n\
         # add the printed [tools.{name}] section to warden.toml, then:\n\
         warden trust\n\
         warden tools call {name} '{{\"text\": \"one two two\"}}'\n```\n\n\
         A tool gets nothing by default: grant only the directories, variables or \
         hosts it needs in its `[tools.{name}]` section. See docs/WRITE_A_TOOL.md in \
         the warden repository.\n"
    )
}

/// `warden tools add FILE [--user] [--force]`.
pub fn add(ws: &Workspace, file: &Path, user: bool, force: bool) -> anyhow::Result<u8> {
    let shown_file = inert(&file.display().to_string()).into_owned();
    let Some(name) = file
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| n.ends_with(".wasm") && n.len() > 5 && !n.starts_with('.'))
    else {
        bail!("{shown_file} is not a .wasm file: give the path of a built component");
    };
    let origin = if user {
        Origin::User
    } else {
        Origin::Workspace
    };
    let source = ComponentSource::from_file(file, origin)
        .with_context(|| format!("cannot read {shown_file}"))?;
    let bytes = source.bytes.clone();

    // Load it on its own (compiled into the cache, so its first use is
    // fast) to read its tools; nothing is installed if it does not load.
    let mut config = HostConfig::new(ws.root.clone());
    config.cache = Some(ws.folders.compile_cache()?);
    config.on_compile = Some(render::compiling());
    let mut host = ToolHost::new(config)?;
    host.load([source]);
    if let Some(p) = host.problems().first() {
        bail!("{shown_file} was not installed: {}", inert_text(&p.reason));
    }
    let tools: Vec<&ToolInfo> = host.tools().collect();
    if tools.is_empty() {
        bail!("{shown_file} was not installed: it offers no tools (describe() returned none)");
    }

    let (base, rel, where_) = if user {
        (
            ws.folders.data.clone(),
            "warden/tools",
            "your user tools folder",
        )
    } else {
        (ws.root.clone(), WORKSPACE_TOOLS, "this workspace")
    };
    let dir = StateDir::open(&base, rel).with_context(|| {
        format!(
            "cannot open {}",
            inert(&base.join(rel).display().to_string())
        )
    })?;
    let dest = dir.path().join(name);
    let shown_dest = inert(&dest.display().to_string()).into_owned();
    match dir.read(name) {
        Ok(Some(old)) if old == *bytes => {
            stdout_line!("{shown_dest} is already installed (same contents)");
        }
        Ok(Some(_)) if !force => bail!(
            "{shown_dest} exists with other contents: pass --force to replace it, or rename \
             the file"
        ),
        _ => {
            dir.write_atomic(name, &bytes)
                .with_context(|| format!("cannot write {shown_dest}"))?;
            stdout_line!("installed {shown_dest} ({where_})");
        }
    }

    let mut out = String::new();
    writeln!(out)?;
    writeln!(out, "tools:")?;
    for t in &tools {
        let s = &t.spec;
        writeln!(out, "  {}{}", inert(&s.name), aliases(&s.aliases))?;
        writeln!(
            out,
            "    {}",
            inert_text(&s.description).replace('\n', "\n    ")
        )?;
        writeln!(out, "    arguments: {}", arguments(&s.parameters))?;
        writeln!(
            out,
            "    mutates:   {}",
            if s.mutates { "yes" } else { "no" }
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "It is disabled until warden.toml enables it. Add (granting only what it needs):"
    )?;
    writeln!(out)?;
    for t in &tools {
        writeln!(out, "[tools.{}]", inert(&t.spec.name))?;
        writeln!(out, "# read = [\"docs\"]     # folders it may read")?;
        writeln!(out, "# write = [\"out\"]     # folders it may change")?;
        writeln!(out)?;
    }
    writeln!(
        out,
        "then run `warden trust` to review and accept the change, and try it with\n\
         `warden tools call {} '{{...}}'`.",
        inert(&tools[0].spec.name)
    )?;
    stdout_text!("{out}");
    Ok(0)
}

fn aliases(list: &[String]) -> String {
    if list.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = list.iter().map(|a| inert(a).into_owned()).collect();
    format!(" (also {})", shown.join(", "))
}

/// "text (string, required), unique (boolean)".
fn arguments(schema: &Value) -> String {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return "none".into();
    };
    if props.is_empty() {
        return "none".into();
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    props
        .iter()
        .map(|(k, v)| {
            let ty = v.get("type").and_then(Value::as_str).unwrap_or("any");
            let req = if required.contains(&k.as_str()) {
                ", required"
            } else {
                ""
            };
            format!("{} ({}{req})", inert(k), inert(ty))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `warden tools compile`: every component this workspace would load,
/// compiled into the cache now rather than at the next start.
pub fn compile(ws: &Workspace) -> anyhow::Result<u8> {
    let tools = ws.toolset(Some(render::compiling()))?;
    // Listed components load at their first call: load them all now.
    let problems = tools.host().load_all();
    let stats = tools.host().cache_stats();
    render::warnings(&tools);
    for p in &problems {
        stderr_line!(
            "warning: skipped {}: {}",
            inert(&p.location),
            inert(&p.reason)
        );
    }
    stdout_line!(
        "{} component(s) compiled, {} already in the cache",
        stats.compiled(),
        stats.reused()
    );
    Ok(0)
}

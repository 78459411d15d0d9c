//! The whole output of grep, glob and list_files on a tree with ignore
//! rules: what the model reads. Paths are relative to the crate directory
//! (the tests' working directory), since native runs have no grants.

use std::fs;
use std::path::PathBuf;

/// A tree under the crate directory, removed on drop.
struct Tree(PathBuf, String);

impl Tree {
    fn new(tag: &str, files: &[(&str, &str)]) -> Tree {
        let rel = format!("test-tree-{tag}-{}", std::process::id());
        let root = PathBuf::from(&rel);
        let _ = fs::remove_dir_all(&root);
        for (path, text) in files {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        Tree(root, rel)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

const FILES: &[(&str, &str)] = &[
    (".gitignore", "target/\n*.log\n"),
    (".env", "TOKEN=1\n"),
    ("src/main.rs", "fn main() {\n    // TOKEN here\n}\n"),
    ("target/out.rs", "TOKEN\n"),
    ("run.log", "TOKEN\n"),
];

fn call(tool: &str, args: serde_json::Value) -> String {
    crate::call(tool, &args.to_string()).unwrap()
}

#[test]
fn grep_glob_and_list_say_what_they_skipped() {
    let t = Tree::new("notes", FILES);
    let p = t.1.as_str();
    assert_eq!(
        call("grep", serde_json::json!({"pattern": "TOKEN", "path": p})),
        format!(
            "{p}/src/main.rs:2:     // TOKEN here\n[skipped 4 entries matched by \
             ignore-file/hidden rules; pass no_ignore/hidden: true to include them]"
        )
    );
    let all = serde_json::json!({"pattern": "TOKEN", "path": p, "no_ignore": true, "hidden": true});
    assert_eq!(
        call("grep", all),
        format!(
            "{p}/.env:1: TOKEN=1\n{p}/run.log:1: TOKEN\n{p}/src/main.rs:2:     // TOKEN here\n{p}/target/out.rs:1: TOKEN"
        )
    );
    assert_eq!(
        call("glob", serde_json::json!({"pattern": "**/*.rs", "path": p})),
        format!(
            "{p}/src/main.rs\n[skipped 4 entries matched by ignore-file/hidden rules; pass \
             no_ignore/hidden: true to include them]"
        )
    );
    assert_eq!(
        call(
            "glob",
            serde_json::json!({"pattern": "**/*.rs", "path": p, "no_ignore": true})
        ),
        format!(
            "{p}/src/main.rs\n{p}/target/out.rs\n[skipped 2 entries matched by hidden rules \
             (name starts with '.'); pass hidden: true to include them]"
        )
    );
    assert_eq!(
        call("list_files", serde_json::json!({"path": p})),
        format!(
            "{p}/\n  src/\n    main.rs\n[skipped 4 entries matched by ignore-file/hidden \
             rules; pass no_ignore/hidden: true to include them]"
        )
    );
}

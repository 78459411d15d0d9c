use super::*;
use crate::{Baseline, Limits, Policy};

fn state_with(policy: Option<&str>, components: &[(&str, &str)]) -> TrustState {
    TrustState {
        policy_hash: policy.map(|t| sha256_hex(t.as_bytes())),
        policy_text: policy.map(str::to_string),
        components: components
            .iter()
            .map(|(file, hash)| {
                let entry = ComponentEntry {
                    hash: hash.to_string(),
                    size: 2048,
                };
                (file.to_string(), entry)
            })
            .collect(),
        tools: BTreeMap::new(),
        instructions_hash: None,
    }
}

fn current(components: &[(&str, &str)]) -> BTreeMap<String, String> {
    components
        .iter()
        .map(|(f, h)| (f.to_string(), h.to_string()))
        .collect()
}

fn grants(origin: &str, read: &[&str], write: &[&str], env: &[&str]) -> ToolRecord {
    let dir = |write: bool| {
        move |p: &&str| Capability::Dir {
            path: p.into(),
            write,
        }
    };
    ToolRecord {
        origin: origin.to_string(),
        launch: None,
        url: None,
        files: None,
        caps: read
            .iter()
            .map(dir(false))
            .chain(write.iter().map(dir(true)))
            .chain(env.iter().map(|n| Capability::Env {
                name: n.to_string(),
                value: None,
            }))
            .collect(),
        limits: Limits::default(),
    }
}

fn lines(changes: &[Change]) -> Vec<String> {
    changes.iter().map(ToString::to_string).collect()
}

#[test]
fn sha256_is_lowercase_hex() {
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn a_record_holds_the_capability_set() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("docs")).unwrap();
    std::fs::create_dir(ws.path().join("out")).unwrap();
    let text = "[tools.probe]\nread = [\"docs\"]\nwrite = [\"out\"]\nenv = [\"TERM\", \"LANG\"]\n\
                timeout = \"500ms\"\n";
    let policy = Policy::parse(text, &ws.path().join(POLICY_FILE), ws.path()).unwrap();
    let (g, _) = policy.grants_for("probe", Baseline::Off).unwrap();
    let t = ToolRecord::new(false, &g);
    let root = ws.path().canonicalize().unwrap();
    assert_eq!(t.origin, "drop-in");
    let caps: Vec<String> = t.caps.iter().map(ToString::to_string).collect();
    assert_eq!(
        caps,
        vec![
            format!("read-only {}", root.join("docs").display()),
            format!("read-write {}", root.join("out").display()),
            "env LANG".to_string(),
            "env TERM".to_string(),
        ]
    );
    assert_eq!(t.limits.timeout, std::time::Duration::from_millis(500));
    assert_eq!(t.limits.memory, Limits::default().memory);
    // The same grants in another order are the same record.
    let reordered = "[tools.probe]\nenv = [\"LANG\", \"TERM\"]\nwrite = [\"out\"]\nread = [\"docs\"]\n\
                timeout = \"500ms\"\n";
    let policy = Policy::parse(reordered, &ws.path().join(POLICY_FILE), ws.path()).unwrap();
    let (g, _) = policy.grants_for("probe", Baseline::Off).unwrap();
    assert_eq!(ToolRecord::new(false, &g), t);
}

#[test]
fn save_load_round_trip() {
    let store_dir = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let store = TrustStore::new(StateDir::open(store_dir.path(), "warden/trust").unwrap());
    assert_eq!(store.load(ws.path()).unwrap(), None);

    let mut state = state_with(Some("[tools.up]\n"), &[("up.wasm", "aa")]);
    state
        .tools
        .insert("up".into(), grants("drop-in", &["/r"], &["/w"], &["LANG"]));
    store.save(ws.path(), &state).unwrap();
    assert_eq!(store.load(ws.path()).unwrap(), Some(state.clone()));
    // Another spelling of the same directory finds the same record.
    assert_eq!(
        store.load(&ws.path().join(".")).unwrap(),
        Some(state.clone())
    );

    // One file, named by the canonical path, naming the workspace for humans;
    // no temporary file left behind.
    let canon = ws.path().canonicalize().unwrap();
    let files: Vec<_> = std::fs::read_dir(store_dir.path().join("warden/trust"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let name = format!("{}.json", sha256_hex(canon.as_os_str().as_encoded_bytes()));
    assert_eq!(files, vec![name.clone()]);
    let text = std::fs::read_to_string(store_dir.path().join("warden/trust").join(&name)).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["workspace"], canon.display().to_string());

    // Saving again replaces the record.
    let other = TrustState::default();
    store.save(ws.path(), &other).unwrap();
    assert_eq!(store.load(ws.path()).unwrap(), Some(other));
}

#[test]
fn corrupt_record_is_an_error_naming_the_file() {
    let store_dir = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let store = TrustStore::new(StateDir::open(store_dir.path(), "t").unwrap());
    store.save(ws.path(), &TrustState::default()).unwrap();
    let file = std::fs::read_dir(store_dir.path().join("t"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(&file, "{\"format\": 2, \"state\": ").unwrap();
    let err = store.load(ws.path()).unwrap_err();
    assert!(matches!(err, Error::Invalid { ref path, .. } if *path == file));
    let msg = err.to_string();
    assert!(msg.contains(&file.display().to_string()), "{msg}");
    assert!(msg.contains("corrupt"), "{msg}");
    assert!(
        msg.contains("delete") && msg.contains("`warden trust`"),
        "{msg}"
    );

    std::fs::write(&file, "{\"format\": 7}").unwrap();
    let msg = store.load(ws.path()).unwrap_err().to_string();
    assert!(msg.contains("format 7"), "{msg}");
}

#[test]
fn decide_never_trusted_uses_safe_defaults() {
    let none = decide(None, None, &BTreeMap::new());
    assert_eq!(none, Decision::default());

    let d = decide(
        None,
        Some("[tools.evil]\n"),
        &current(&[("evil.wasm", "ee")]),
    );
    assert_eq!(d.use_policy_text, None);
    assert!(d.allowed_components.is_empty());
    assert_eq!(d.notices.len(), 1);
    let n = &d.notices[0];
    assert!(n.contains("not trusted"), "{n}");
    assert!(
        n.contains("warden.toml") && n.contains(".warden/tools/evil.wasm"),
        "{n}"
    );
    assert!(n.contains("`warden trust`"), "{n}");
}

#[test]
fn decide_trusted_and_unchanged_runs_everything() {
    let text = "[tools.up]\n";
    let trusted = state_with(Some(text), &[("up.wasm", "aa")]);
    let d = decide(Some(&trusted), Some(text), &current(&[("up.wasm", "aa")]));
    assert_eq!(d.use_policy_text.as_deref(), Some(text));
    assert_eq!(
        d.allowed_components,
        BTreeSet::from(["up.wasm".to_string()])
    );
    assert!(d.notices.is_empty(), "{:?}", d.notices);

    // Trusted without any file: still nothing to say.
    let d = decide(Some(&TrustState::default()), None, &BTreeMap::new());
    assert_eq!(d, Decision::default());
}

#[test]
fn decide_policy_changed_keeps_the_trusted_text() {
    let old = "[tools.up]\nread = [\".\"]\n";
    let trusted = state_with(Some(old), &[]);
    let d = decide(
        Some(&trusted),
        Some("[tools.up]\nwrite = [\"/\"]\n"),
        &BTreeMap::new(),
    );
    assert_eq!(d.use_policy_text.as_deref(), Some(old));
    assert_eq!(d.notices.len(), 1);
    assert!(
        d.notices[0].contains("warden.toml changed"),
        "{:?}",
        d.notices
    );
    assert!(d.notices[0].contains("last trusted version"));
    assert!(d.notices[0].contains("`warden trust`"));

    // A file that appeared after trusting a workspace without one.
    let d = decide(
        Some(&TrustState::default()),
        Some("approval = \"never\"\n"),
        &BTreeMap::new(),
    );
    assert_eq!(d.use_policy_text, None);
    assert!(
        d.notices[0].contains("warden.toml is new"),
        "{:?}",
        d.notices
    );

    // A removed file: the last accepted text still applies until accepted.
    let d = decide(Some(&trusted), None, &BTreeMap::new());
    assert_eq!(d.use_policy_text.as_deref(), Some(old));
    assert!(d.notices[0].contains("removed"), "{:?}", d.notices);

    // A record whose text does not match its hash is not used.
    let mut damaged = trusted.clone();
    damaged.policy_text = Some("[tools.up]\nwrite = [\"/\"]\n".into());
    let d = decide(Some(&damaged), Some("other"), &BTreeMap::new());
    assert_eq!(d.use_policy_text, None);
}

#[test]
fn decide_new_component_is_ignored() {
    let trusted = state_with(None, &[("up.wasm", "aa")]);
    let d = decide(
        Some(&trusted),
        None,
        &current(&[("up.wasm", "aa"), ("evil.wasm", "ee")]),
    );
    assert_eq!(
        d.allowed_components,
        BTreeSet::from(["up.wasm".to_string()])
    );
    assert_eq!(
        d.notices,
        vec![
            "ignoring .warden/tools/evil.wasm: new since you trusted this workspace; run \
             `warden trust` to allow it"
        ]
    );

    // A copy of a trusted component under another name is new too.
    let d = decide(
        Some(&trusted),
        None,
        &current(&[("up.wasm", "aa"), ("up2.wasm", "aa")]),
    );
    assert_eq!(
        d.allowed_components,
        BTreeSet::from(["up.wasm".to_string()])
    );
}

#[test]
fn decide_changed_component_is_ignored() {
    let trusted = state_with(None, &[("up.wasm", "aa"), ("x.wasm", "11")]);
    let d = decide(
        Some(&trusted),
        None,
        &current(&[("up.wasm", "aa"), ("x.wasm", "22")]),
    );
    assert_eq!(
        d.allowed_components,
        BTreeSet::from(["up.wasm".to_string()])
    );
    assert_eq!(d.notices.len(), 1);
    assert!(
        d.notices[0].starts_with("ignoring .warden/tools/x.wasm: changed"),
        "{:?}",
        d.notices
    );
}

#[test]
fn decide_removed_component_is_reported() {
    let trusted = state_with(None, &[("up.wasm", "aa"), ("x.wasm", "11")]);
    let d = decide(Some(&trusted), None, &current(&[("up.wasm", "aa")]));
    assert_eq!(
        d.allowed_components,
        BTreeSet::from(["up.wasm".to_string()])
    );
    assert_eq!(d.notices.len(), 1);
    assert!(
        d.notices[0].contains(".warden/tools/x.wasm was removed"),
        "{:?}",
        d.notices
    );
}

#[test]
fn diff_of_equal_states_is_empty() {
    let mut s = state_with(Some("x"), &[("up.wasm", "aa")]);
    s.tools
        .insert("up".into(), grants("drop-in", &["/r"], &[], &[]));
    assert!(diff(&s, &s.clone()).is_empty());
}

#[test]
fn diff_policy_and_components() {
    let a = "a".repeat(64);
    let b = "b".repeat(64);
    let before = state_with(Some("old"), &[("gone.wasm", &a), ("x.wasm", &a)]);
    let after = state_with(Some("new"), &[("evil.wasm", "abcd1234ff"), ("x.wasm", &b)]);
    let changes = diff(&before, &after);
    assert_eq!(
        changes[0],
        Change::PolicyChanged {
            from: before.policy_hash.clone(),
            to: after.policy_hash.clone()
        }
    );
    let old = &before.policy_hash.as_ref().unwrap()[..8];
    let new = &after.policy_hash.as_ref().unwrap()[..8];
    assert_eq!(
        lines(&changes),
        vec![
            format!("~ warden.toml sha256:{old}… → sha256:{new}…"),
            "+ component evil.wasm (2KiB, sha256:abcd1234…); it runs only once trusted, and \
             its tools get only what warden.toml grants them"
                .to_string(),
            "- component gone.wasm".to_string(),
            "~ component x.wasm sha256:aaaaaaaa… → sha256:bbbbbbbb…".to_string(),
        ]
    );
    assert!(matches!(&changes[3], Change::ComponentChanged { file, .. } if file == "x.wasm"));

    let added = diff(&TrustState::default(), &state_with(Some("new"), &[]));
    assert_eq!(lines(&added), vec![format!("+ warden.toml sha256:{new}…")]);
    let removed = diff(&state_with(Some("new"), &[]), &TrustState::default());
    assert_eq!(lines(&removed), vec!["- warden.toml"]);
}

#[test]
fn diff_tools() {
    let mut before = TrustState::default();
    let mut after = TrustState::default();
    before
        .tools
        .insert("gone".into(), grants("builtin", &[], &["/ws"], &[]));
    before.tools.insert(
        "read_file".into(),
        grants("builtin", &["/", "/ws/docs"], &[], &[]),
    );
    before.tools.insert(
        "write_file".into(),
        grants("builtin", &[], &["/ws"], &["HOME"]),
    );
    after.tools.insert(
        "uppercase".into(),
        grants("drop-in", &[], &["/abs/out"], &["LANG"]),
    );
    let mut rf = grants("builtin", &["/ws/docs"], &["/"], &[]);
    rf.limits.memory = 1 << 30;
    rf.limits.timeout = std::time::Duration::from_millis(1500);
    rf.caps.insert(Capability::Net {
        host: "example.com".into(),
    });
    after.tools.insert("read_file".into(), rf);
    let mut wf = grants("builtin", &[], &["/ws"], &["LANG"]);
    wf.limits.output = 1 << 20;
    after.tools.insert("write_file".into(), wf);

    let changes = diff(&before, &after);
    assert_eq!(
        lines(&changes),
        vec![
            "- tool gone",
            "- read_file: read-only /",
            "+ read_file: read-write /",
            "+ read_file: network example.com",
            "~ read_file: memory 256MiB → 1GiB",
            "~ read_file: timeout 30s → 1500ms",
            "+ tool uppercase (drop-in): read-write /abs/out, env LANG",
            "- write_file: env HOME",
            "+ write_file: env LANG",
            "~ write_file: output 256KiB → 1MiB",
        ]
    );
    // read-only → read-write of one directory: the loss, then the gain.
    assert!(
        matches!(&changes[1], Change::Lost { cap: Capability::Dir { path, write: false }, .. } if path.as_os_str() == "/")
    );
    assert!(
        matches!(&changes[2], Change::Gained { cap: Capability::Dir { path, write: true }, .. } if path.as_os_str() == "/")
    );
    let memory = Change::LimitChanged {
        tool: "read_file".into(),
        limit: "memory",
        from: "256MiB".into(),
        to: "1GiB".into(),
    };
    assert_eq!(changes[4], memory);

    // The reverse shows the losses.
    let back = lines(&diff(&after, &before));
    assert!(back.contains(&"- read_file: network example.com".to_string()));
    assert!(back.contains(&"+ tool gone (builtin): read-write /ws".to_string()));
    assert!(back.contains(&"- tool uppercase".to_string()));
}

#[test]
fn diff_origin_change_is_a_new_tool() {
    let mut before = TrustState::default();
    let mut after = TrustState::default();
    before
        .tools
        .insert("read_file".into(), grants("builtin", &[], &["/ws"], &[]));
    let mut g = grants("drop-in", &[], &[], &[]);
    g.limits.memory = 64 << 20;
    after.tools.insert("read_file".into(), g);
    assert_eq!(
        lines(&diff(&before, &after)),
        vec![
            "- tool read_file",
            "+ tool read_file (drop-in): no access, memory 64MiB",
        ]
    );
    after.tools.get_mut("read_file").unwrap().limits.memory = Limits::default().memory;
    assert_eq!(
        lines(&diff(&before, &after))[1],
        "+ tool read_file (drop-in): no access"
    );
}

#[test]
fn diff_instructions_added_changed_removed() {
    let none = state_with(None, &[]);
    let with = |h: &str| TrustState {
        instructions_hash: Some(h.repeat(64)),
        ..state_with(None, &[])
    };
    assert_eq!(
        lines(&diff(&none, &with("a"))),
        [
            "+ AGENTS.md sha256:aaaaaaaa…: its text goes into the model's instructions; read it before trusting"
        ]
    );
    assert_eq!(
        lines(&diff(&with("a"), &with("b"))),
        [
            "~ AGENTS.md sha256:aaaaaaaa… → sha256:bbbbbbbb…: its text goes into the model's instructions; read it before trusting"
        ]
    );
    assert_eq!(lines(&diff(&with("a"), &none)), ["- AGENTS.md"]);
    assert!(diff(&with("a"), &with("a")).is_empty());
    // A record written before the field existed reads as "no AGENTS.md".
    let old: TrustState = serde_json::from_str(r#"{"policy_hash":null}"#).unwrap();
    assert_eq!(old.instructions_hash, None);
}

#[test]
fn diff_spells_out_model_and_approval_settings() {
    let before = state_with(Some("[model]\nmodel = \"small\"\nstream = false\n"), &[]);
    let after = state_with(
        Some(
            "approval = \"never\"\n[model]\nmodel = \"big\"\n\
             base_url = \"http://user:pw@evil.example:8443/v1\"\n\
             api_key_env = \"AWS_SECRET_ACCESS_KEY\"\n",
        ),
        &[],
    );
    let shown = lines(&diff(&before, &after));
    assert_eq!(
        shown[1..],
        [
            "+ approval = \"never\": tool calls run without asking (unless your config or \
             --approval asks more)",
            "+ model.base_url = \"http://user:pw@evil.example:8443/v1\": will send your API key, \
             if one is set, to evil.example:8443 (unless --base-url, OPENAI_BASE_URL or \
             base_url in your own config names another endpoint)",
            "+ model.api_key_env = \"AWS_SECRET_ACCESS_KEY\": ignored, only your own config \
             chooses the API key variable",
            "~ model.model: \"small\" → \"big\"",
            "- model.stream = false",
        ]
    );
    // The file removed: what it set is unset.
    let gone = lines(&diff(&after, &TrustState::default()));
    assert!(
        gone.contains(&"- approval = \"never\"".to_string()),
        "{gone:?}"
    );
    // An escape in a value is shown inert.
    let evil = state_with(Some("[model]\nmodel = \"\\u001b[2J\"\n"), &[]);
    assert!(!lines(&diff(&before, &evil)).concat().contains('\u{1b}'));
}

#[test]
fn the_diff_shows_an_added_mcp_server_with_its_command_line() {
    let empty = TrustState::default();
    let mut with = TrustState::default();
    let g = Grants {
        caps: vec![Capability::Net {
            host: "127.0.0.1:9".into(),
        }],
        limits: Limits::default(),
    };
    let argv = [
        "python3".to_string(),
        "my server.py".into(),
        "\u{1b}[2J".into(),
    ];
    with.tools.insert(
        "mcp.demo".into(),
        ToolRecord::mcp(
            &McpLaunch::Command(argv.to_vec()),
            [("my server.py".to_string(), "a".repeat(64))].into(),
            &g,
        ),
    );
    let shown = lines(&diff(&empty, &with));
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(
        shown[0].starts_with("+ mcp.demo: starts `python3 \"my server.py\""),
        "{shown:?}"
    );
    // A process granted a host gets the whole network, and is shown so.
    assert!(
        shown[0].contains(
            "the whole network, loopback and local addresses too (granted for 127.0.0.1:9"
        ),
        "{shown:?}"
    );
    assert!(!shown[0].contains('\u{1b}'), "{shown:?}");
    // Another command line is another server: all its grants again.
    let mut moved = with.clone();
    moved.tools.get_mut("mcp.demo").unwrap().launch = Some(vec!["node".into()]);
    let shown = lines(&diff(&with, &moved));
    assert_eq!(shown[0], "- mcp.demo");
    assert!(
        shown[1].starts_with("+ mcp.demo: starts `node`"),
        "{shown:?}"
    );
    // Its script changed: what it runs with its grants is not what was
    // trusted.
    let mut rewritten = with.clone();
    rewritten
        .tools
        .get_mut("mcp.demo")
        .unwrap()
        .files
        .as_mut()
        .unwrap()
        .insert("my server.py".into(), "b".repeat(64));
    let shown = lines(&diff(&with, &rewritten));
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(
        shown[0].starts_with("~ mcp.demo: runs my server.py sha256:aaaa"),
        "{shown:?}"
    );
    // A URL instead of a command is another server too, shown with its URL.
    let mut remote = with.clone();
    remote.tools.insert(
        "mcp.demo".into(),
        ToolRecord::mcp(
            &McpLaunch::Url("https://mcp.example.com/mcp".into()),
            BTreeMap::new(),
            &g,
        ),
    );
    let shown = lines(&diff(&with, &remote));
    assert_eq!(shown[0], "- mcp.demo");
    assert!(
        shown[1].starts_with("+ mcp.demo: connects to https://mcp.example.com/mcp with: "),
        "{shown:?}"
    );
}

#[test]
fn the_diff_shows_a_server_process_gaining_or_losing_the_whole_network() {
    let server = |hosts: &[&str]| {
        let g = Grants {
            caps: (hosts.iter())
                .map(|h| Capability::Net {
                    host: (*h).to_string(),
                })
                .chain([Capability::Env {
                    name: "HOME".into(),
                    value: None,
                }])
                .collect(),
            limits: Limits::default(),
        };
        let mut state = TrustState::default();
        let launch = McpLaunch::Command(vec!["server".into()]);
        (state.tools).insert(
            "mcp.demo".into(),
            ToolRecord::mcp(&launch, BTreeMap::new(), &g),
        );
        state
    };
    let (none, one, two) = (
        server(&[]),
        server(&["api.example.com"]),
        server(&["api.example.com", "example.org"]),
    );
    // A first host opens the whole network to the process.
    assert_eq!(
        lines(&diff(&none, &one)),
        [
            "+ mcp.demo: the whole network, loopback and local addresses too (granted for \
          api.example.com: a process cannot be held to a host list)"
        ]
    );
    // Another host changes nothing the process gets, and is shown so.
    assert_eq!(
        lines(&diff(&one, &two)),
        [
            "~ mcp.demo: still the whole network, loopback and local addresses too (granted \
          for api.example.com, example.org: a process cannot be held to a host list); it \
          was granted for api.example.com"
        ]
    );
    // The last host gone closes it.
    assert_eq!(
        lines(&diff(&two, &none)),
        ["- mcp.demo: the whole network (it was granted for api.example.com, example.org)"]
    );
    // A server reached by URL is held to its hosts: its lines name them.
    let url = |s: &TrustState| {
        let mut s = s.clone();
        let r = s.tools.get_mut("mcp.demo").unwrap();
        (r.launch, r.url) = (None, Some("https://mcp.example.com/mcp".into()));
        s
    };
    assert_eq!(
        lines(&diff(&url(&none), &url(&one))),
        ["+ mcp.demo: network api.example.com"]
    );
}

#[test]
fn the_diff_says_which_of_the_users_secrets_goes_where_and_that_an_echo_hands_it_over() {
    let secret = Capability::Secret {
        name: "brave".into(),
        source: "file brave_key".into(),
        hosts: vec!["api.search.brave.com".into()],
        send: "header X-Subscription-Token".into(),
    };
    let mut before = TrustState::default();
    before
        .tools
        .insert("web_search".into(), grants("builtin", &[], &[], &[]));
    let mut after = before.clone();
    let mut ws = grants("builtin", &[], &[], &[]);
    ws.caps.insert(secret.clone());
    after.tools.insert("web_search".into(), ws.clone());
    after.tools.insert("leak".into(), ws);
    assert_eq!(
        lines(&diff(&before, &after)),
        vec![
            "+ tool leak (builtin): secret brave (your secrets.toml entry `brave_key`) to \
             api.search.brave.com as header X-Subscription-Token; leak can read brave's value \
             if api.search.brave.com reflects it",
            "+ web_search: secret brave (your secrets.toml entry `brave_key`) to \
             api.search.brave.com as header X-Subscription-Token; web_search can read brave's \
             value if api.search.brave.com reflects it",
        ]
    );
    // Losing it says only what is lost.
    assert_eq!(
        lines(&diff(&after, &before))[1],
        "- web_search: secret brave (your secrets.toml entry `brave_key`) to \
         api.search.brave.com as header X-Subscription-Token"
    );
}

#[test]
fn the_diff_says_plainly_that_an_app_starts_unconfined() {
    let mut before = TrustState::default();
    let mut after = TrustState::default();
    let mut open = grants("builtin", &["/ws"], &[], &[]);
    for program in ["libreoffice", "xeyes"] {
        open.caps.insert(Capability::App {
            program: program.into(),
        });
    }
    after.tools.insert("open_app".into(), open);
    let mut browse = grants("builtin", &[], &[], &[]);
    browse.caps.insert(Capability::Browse {
        host: "docs.rs".into(),
    });
    after.tools.insert("browse".into(), browse.clone());
    assert_eq!(
        lines(&diff(&before, &after)),
        [
            "+ tool browse (builtin): browse: may open pages of docs.rs in your browser",
            "+ tool open_app (builtin): read-only /ws",
            "+ open_app: apps: may start libreoffice in your desktop session, unconfined",
            "+ open_app: apps: may start xeyes in your desktop session, unconfined",
        ]
    );
    // Granted later, to a tool already trusted: the same line.
    before = after.clone();
    after
        .tools
        .get_mut("open_app")
        .unwrap()
        .caps
        .insert(Capability::App {
            program: "gimp".into(),
        });
    browse.caps.insert(Capability::Browse {
        host: "*.github.com".into(),
    });
    after.tools.insert("browse".into(), browse);
    assert_eq!(
        lines(&diff(&before, &after)),
        [
            "+ browse: browse: may open pages of *.github.com in your browser",
            "+ open_app: apps: may start gimp in your desktop session, unconfined",
        ]
    );
    assert_eq!(
        lines(&diff(&after, &before)),
        [
            "- browse: browse: may open pages of *.github.com in your browser",
            "- open_app: apps: may start gimp in your desktop session, unconfined",
        ]
    );
    // A tool granted apps only is not said to have no access.
    let mut only = grants("builtin", &[], &[], &[]);
    only.caps.insert(Capability::App {
        program: "xclock".into(),
    });
    let mut with = TrustState::default();
    with.tools.insert("open_app".into(), only);
    assert_eq!(
        lines(&diff(&TrustState::default(), &with)),
        [
            "+ tool open_app (builtin): the desktop apps below",
            "+ open_app: apps: may start xclock in your desktop session, unconfined",
        ]
    );
}

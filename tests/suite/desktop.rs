//! Desktop apps and the browser (`list_apps`, `open_app`, `close_app`,
//! `browse`), through the real binary, under a real X server (Xvfb) with
//! real X clients (xeyes, xclock from x11-apps), checked with xdotool and
//! xwininfo. CI installs them (`.ci/run`) and sets
//! `WARDEN_REQUIRE_DESKTOP`, so there a missing one fails the test;
//! elsewhere the tests that need a display skip with a note.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use warden_mock_llm::{Gate, MockLlm, answer, calls};
use warden_tests::{Run, Sandbox, Terminal, processes_where, run, wait_until};

/// Long enough for a loaded machine.
const PATIENCE: Duration = Duration::from_secs(60);

/// An X server of this test's own, on a display it chose (`-displayfd`),
/// killed when dropped.
struct Xvfb {
    child: Child,
    display: String,
}

impl Xvfb {
    /// Starts one, or `None` (with a note) where Xvfb or the X clients are
    /// missing and the run does not require them.
    fn start() -> Option<Xvfb> {
        let missing: Vec<&str> = ["Xvfb", "xeyes", "xclock", "xdotool", "xwininfo"]
            .into_iter()
            .filter(|p| warden_confine::find_program(p).is_none())
            .collect();
        if !missing.is_empty() {
            assert!(
                std::env::var_os("WARDEN_REQUIRE_DESKTOP").is_none(),
                "missing {missing:?}: apt-get install xvfb x11-apps xdotool x11-utils"
            );
            eprintln!(
                "note: skipped, {missing:?} not installed (apt-get install xvfb x11-apps xdotool x11-utils)"
            );
            return None;
        }
        let mut child = Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-nolisten",
                "tcp",
                "-screen",
                "0",
                "640x480x24",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start Xvfb");
        // Xvfb writes its display number once it accepts clients.
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let n: u32 = line.trim().parse().expect("Xvfb printed its display");
        Some(Xvfb {
            child,
            display: format!(":{n}"),
        })
    }

    /// Runs an X client command on this display; its stdout and status.
    fn x(&self, program: &str, args: &[&str]) -> (bool, String) {
        let out = Command::new("timeout")
            .arg("30")
            .arg(program)
            .args(args)
            .env("DISPLAY", &self.display)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    /// Waits for a visible window of `class` (xdotool waits on the X
    /// server's events); its ids.
    fn window(&self, class: &str) -> Vec<String> {
        let (ok, ids) = self.x(
            "xdotool",
            &["search", "--sync", "--onlyvisible", "--class", class],
        );
        assert!(ok, "no {class} window appeared on {}", self.display);
        ids.lines().map(str::to_string).collect()
    }

    /// Whether a window of `class` exists.
    fn has_window(&self, class: &str) -> bool {
        self.x("xdotool", &["search", "--class", class]).0
    }

    /// `xwininfo -root -tree`.
    fn tree(&self) -> String {
        self.x("xwininfo", &["-root", "-tree"]).1
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `warden` in `sb`, on `display` (or without one).
fn warden(sb: &Sandbox, display: Option<&str>) -> Command {
    let mut cmd = sb.warden();
    if let Some(d) = display {
        cmd.env("DISPLAY", d);
    }
    cmd
}

/// The workspace's policy: xeyes (as a desktop entry, "eyes", whose
/// window title is the file it opens) and xclock granted to `open_app`.
fn desktop_workspace(sb: &Sandbox, extra: &str) {
    let apps = sb.home.join("data/applications");
    std::fs::create_dir_all(&apps).unwrap();
    std::fs::write(
        apps.join("eyes.desktop"),
        "[Desktop Entry]\nType=Application\nName=Eyes\nExec=xeyes -geometry 120x120 -title %f\n",
    )
    .unwrap();
    std::fs::write(sb.ws.join("report.txt"), "the report\n").unwrap();
    sb.policy(&format!(
        "[tools.open_app]\napps = [\"eyes\", \"xclock\"]\nread = [\".\"]\n\n\
         [tools.list_apps]\n\n[tools.close_app]\n\n{extra}"
    ));
    sb.trust();
}

/// Pid of the process group `pgid`'s live members.
fn group(pgid: u32) -> Vec<u32> {
    processes_where(|_| true)
        .into_iter()
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
                return false;
            };
            let f: Vec<&str> = after.split_whitespace().collect();
            f.len() > 2 && f[0] != "Z" && f[2] == pgid.to_string()
        })
        .collect()
}

/// The `pid N` an answer names.
fn pid_in(text: &str) -> u32 {
    let at = text.find("pid ").expect("a pid") + 4;
    text[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Ends process group `pgid` (cleanup of an app a test left running).
fn end_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-s", "KILL", "--", &format!("-{pgid}")])
        .status();
    wait_until("the app's processes end", || group(pgid).is_empty());
}

/// The result of the last tool call the model was sent in request `i`.
fn last_result(mock: &MockLlm, i: usize) -> String {
    let results = warden_tests::tool_contents(&mock.requests()[i].body);
    results.last().expect("a tool result").clone()
}

#[test]
fn open_list_and_close_an_app_in_one_session() {
    let Some(x) = Xvfb::start() else { return };
    let sb = Sandbox::new();
    desktop_workspace(&sb, "");
    let looked = Gate::new();
    let mock = MockLlm::start(vec![
        calls(&[(
            "o",
            "open_app",
            &json!({"app": "eyes", "files": ["report.txt"]}).to_string(),
        )]),
        warden_mock_llm::Reply::Gated(looked.clone(), Box::new(calls(&[("l", "list_apps", "{}")]))),
        calls(&[("c", "close_app", r#"{"id": 1}"#)]),
        answer("Done."),
    ]);
    let child = warden(&sb, Some(&x.display))
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("WARDEN_RETRY_BASE_MS", "5")
        .args(["run", "--yes", "open the report"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("open_app ran", || mock.requests().len() >= 2);
    let opened = &last_result(&mock, 1);
    assert!(opened.starts_with("Started Eyes (id 1, pid "), "{opened}");
    let pid = pid_in(opened);
    // The window is there, titled with the file's absolute path.
    let ids = x.window("xeyes");
    assert_eq!(ids.len(), 1, "{ids:?}");
    let report = sb.ws.join("report.txt").display().to_string();
    assert!(
        x.tree()
            .contains(&format!("\"{report}\": (\"xeyes\" \"XEyes\")")),
        "{}",
        x.tree()
    );
    assert_eq!(group(pid), [pid]);
    looked.open();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = &last_result(&mock, 2);
    assert!(
        listed.contains(&format!("- id 1: Eyes (eyes), pid {pid}, for "))
            && listed.contains(&format!("/xeyes -geometry 120x120 -title {report}\n")),
        "{listed}"
    );
    assert!(listed.contains("- eyes (Eyes): /"), "{listed}");
    assert!(listed.contains("- xclock: /"), "{listed}");
    let closed = &last_result(&mock, 3);
    assert_eq!(
        closed,
        &format!("Closed Eyes (id 1, pid {pid}): it ended when asked (SIGTERM).")
    );
    // Nothing of it remains: no process of its group, no window.
    assert!(group(pid).is_empty());
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    wait_until("the window is gone", || !x.has_window("xeyes"));
}

#[test]
fn an_app_keeps_running_when_warden_exits() {
    let Some(x) = Xvfb::start() else { return };
    let sb = Sandbox::new();
    desktop_workspace(&sb, "");
    let mock = MockLlm::start(vec![
        calls(&[("o", "open_app", r#"{"app": "xclock"}"#)]),
        answer("The clock is open."),
    ]);
    let r = run(warden(&sb, Some(&x.display))
        .env("OPENAI_BASE_URL", mock.base_url())
        .args(["run", "--yes", "show me a clock"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let opened = &last_result(&mock, 1);
    let pid = pid_in(opened);
    // warden has exited; its app has not, and still shows its window.
    assert_eq!(group(pid), [pid], "{opened}");
    assert_eq!(x.window("xclock").len(), 1);
    end_group(pid);
}

#[test]
fn what_is_not_granted_is_refused_and_nothing_starts() {
    let Some(x) = Xvfb::start() else { return };
    let sb = Sandbox::new();
    desktop_workspace(&sb, "");
    std::os::unix::fs::symlink(sb.outside.join("secret.txt"), sb.ws.join("link.txt")).unwrap();
    let call = |args: Value| {
        run(warden(&sb, Some(&x.display)).args(["tools", "call", "open_app", &args.to_string()]))
    };
    let secret = sb.outside.join("secret.txt").display().to_string();
    for (args, says) in [
        (
            json!({"app": "xterm"}),
            "error (denied): `xterm` is not granted to this tool; it may start only: eyes, xclock",
        ),
        (
            json!({"app": "/usr/bin/xeyes"}),
            "error (denied): `/usr/bin/xeyes` is not granted to this tool",
        ),
        (
            json!({"app": "eyes", "files": ["../outside/secret.txt"]}),
            "error (denied): ../outside/secret.txt is outside the directories this tool may access",
        ),
        (
            json!({"app": "eyes", "files": [secret]}),
            "is outside the directories this tool may access",
        ),
        (
            json!({"app": "eyes", "files": ["link.txt"]}),
            "error (denied): link.txt leads out of the directories this tool may access",
        ),
        (
            json!({"app": "eyes", "files": ["missing.txt"]}),
            "missing.txt: no such file",
        ),
        (
            json!({"app": "eyes", "urls": ["https://docs.rs/"]}),
            "error (denied): docs.rs is not among the hosts whose pages this tool may open \
             (granted: none)",
        ),
    ] {
        let r = call(args.clone());
        assert_eq!(r.code, 1, "{args}: {}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(says), "{args}: {}", r.stderr);
    }
    assert!(!x.has_window("xeyes") && !x.has_window("xterm"));
    // A tool without the grant cannot start a granted app either.
    sb.policy("[tools.open_app]\napps = []\n");
    sb.trust();
    let r = call(json!({"app": "xclock"}));
    assert!(
        r.stderr
            .contains("`xclock` is not granted: this tool may start no app"),
        "{}",
        r.stderr
    );
    assert!(!x.has_window("xclock"));
}

#[test]
fn close_app_ends_only_what_this_session_started() {
    let Some(x) = Xvfb::start() else { return };
    let sb = Sandbox::new();
    desktop_workspace(&sb, "");
    // An app the user opened.
    let mut theirs = Command::new("xclock")
        .env("DISPLAY", &x.display)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    x.window("xclock");
    for id in [1, theirs.id()] {
        let r = run(warden(&sb, Some(&x.display)).args([
            "tools",
            "call",
            "close_app",
            &json!({"id": id}).to_string(),
        ]));
        assert_eq!(r.code, 1, "{}", r.stdout);
        assert!(
            r.stderr.contains(&format!(
                "error (denied): no app with id {id} was started in this session and still runs"
            )),
            "{}",
            r.stderr
        );
    }
    assert!(
        theirs.try_wait().unwrap().is_none(),
        "the user's app was ended"
    );
    assert!(x.has_window("xclock"));
    theirs.kill().unwrap();
    theirs.wait().unwrap();
}

#[test]
fn browse_opens_exactly_the_granted_url_and_no_other_host() {
    let sb = Sandbox::new();
    sb.policy("[tools.browse]\nbrowse = [\"docs.rs\", \"*.github.com\"]\n");
    sb.trust();
    let seen = sb.home.join("browser-saw");
    let browser = sb.home.join("record-browser");
    std::fs::write(
        &browser,
        format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n", seen.display()),
    )
    .unwrap();
    std::fs::set_permissions(
        &browser,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let browse = |url: &str| -> Run {
        run(warden(&sb, Some(":7")).env("BROWSER", &browser).args([
            "tools",
            "call",
            "browse",
            &json!({"url": url}).to_string(),
        ]))
    };
    let url = "https://docs.rs/serde/latest/serde/?search=a%20b#x";
    let r = browse(url);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout.trim(),
        format!("Opened {url} in the user's browser.")
    );
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), format!("{url}\n"));
    std::fs::remove_file(&seen).unwrap();
    for (bad, says) in [
        (
            "https://evil.example/?q=docs.rs",
            "evil.example is not among the hosts whose pages this tool may open (granted: \
             docs.rs, *.github.com)",
        ),
        (
            "https://docs.rs.evil.example/",
            "docs.rs.evil.example is not among",
        ),
        ("https://github.com/", "github.com is not among"),
        (
            "file:///etc/passwd",
            "is a file: URL; only http and https pages can be opened",
        ),
        ("https://me:pw@docs.rs/", "carries a user name or password"),
    ] {
        let r = browse(bad);
        assert_eq!(r.code, 1, "{bad}: {}", r.stdout);
        assert!(r.stderr.contains(says), "{bad}: {}", r.stderr);
    }
    assert!(!seen.exists(), "the browser ran for a refused URL");
}

#[test]
fn without_a_display_the_tools_say_so() {
    let sb = Sandbox::new();
    desktop_workspace(&sb, "[tools.browse]\nbrowse = [\"docs.rs\"]\n");
    let no_display = "there is no graphical session here: neither DISPLAY nor WAYLAND_DISPLAY \
                      is set";
    for (tool, args) in [
        ("open_app", r#"{"app": "xclock"}"#),
        ("browse", r#"{"url": "https://docs.rs/"}"#),
    ] {
        let r = run(warden(&sb, None).args(["tools", "call", tool, args]));
        assert_eq!(r.code, 1, "{tool}: {}", r.stdout);
        assert!(
            r.stderr
                .starts_with(&format!("error (failed): {no_display}")),
            "{tool}: {}",
            r.stderr
        );
    }
    let r = run(warden(&sb, None).args(["tools", "call", "list_apps", "{}"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .starts_with(&format!("No app can be opened: {no_display}")),
        "{}",
        r.stdout
    );
    let policy = run(warden(&sb, None).arg("policy"));
    assert!(
        policy.stdout.contains(&format!("desktop:   {no_display}")),
        "{}",
        policy.stdout
    );
}

#[test]
fn the_trust_diff_and_the_policy_say_what_an_app_may_do() {
    let sb = Sandbox::new();
    sb.policy("[tools.open_app]\napps = [\"xclock\"]\n\n[tools.browse]\nbrowse = [\"docs.rs\"]\n");
    let diff = sb.trust();
    assert!(
        diff.contains("  + open_app: apps: may start xclock in your desktop session, unconfined\n"),
        "{diff}"
    );
    assert!(
        diff.contains(
            "  + tool browse (builtin): browse: may open pages of docs.rs in your browser\n"
        ),
        "{diff}"
    );
    let policy = run(warden(&sb, Some(":5")).arg("policy")).stdout;
    assert!(
        policy.contains(
            "desktop:   apps and pages open on the X11 display :5, outside the sandbox\n"
        ),
        "{policy}"
    );
    assert!(
        policy.contains(
            "open_app (builtin):\n  files:    none\n  env:      none\n  network:  none\n  apps:     \
             xclock (started in your desktop session, unconfined; they keep running after \
             warden exits)\n"
        ),
        "{policy}"
    );
}

#[test]
fn the_prompt_on_a_terminal_shows_the_program_line_that_then_runs() {
    let Some(x) = Xvfb::start() else { return };
    let sb = Sandbox::new();
    desktop_workspace(&sb, "");
    let mock = MockLlm::start(vec![
        calls(&[(
            "o",
            "open_app",
            &json!({"app": "eyes", "files": ["report.txt"]}).to_string(),
        )]),
        answer("Opened."),
    ]);
    let mut cmd = warden(&sb, Some(&x.display));
    cmd.env("OPENAI_BASE_URL", mock.base_url())
        .args(["run", "open the report"]);
    let mut t = Terminal::start(&cmd);
    t.wait_for("Allow?", 1, PATIENCE);
    let xeyes = warden_confine::find_program("xeyes")
        .unwrap()
        .display()
        .to_string();
    let report = sb.ws.join("report.txt").display().to_string();
    let line = format!("{xeyes} -geometry 120x120 -title {report}");
    let screen = t.screen();
    assert!(
        screen.contains(&format!(
            "open_app wants to run:\r\n  read report.txt\r\n  start Eyes in your desktop \
             session, unconfined (it keeps running after warden exits):\r\n    {line}\r\n"
        )),
        "{screen}"
    );
    // Nothing runs before the answer.
    assert!(!x.has_window("xeyes"));
    t.send("y\n");
    let (code, screen) = t.finish(PATIENCE);
    assert_eq!(code, 0, "{screen}");
    let pid = pid_in(&last_result(&mock, 1));
    // What runs is exactly the line shown.
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let argv: Vec<&str> = std::str::from_utf8(&cmdline)
        .unwrap()
        .trim_end_matches('\0')
        .split('\0')
        .collect();
    assert_eq!(argv.join(" "), line);
    x.window("xeyes");
    end_group(pid);
}

#[test]
fn a_tool_that_declares_its_launch_starts_nothing_else() {
    let Some(x) = Xvfb::start() else { return };
    let sb = Sandbox::new();
    sb.drop_in(warden_tests::guests::DESKTOP_LIAR, "desktop_liar.wasm");
    sb.policy(
        "[tools.show_app]\napps = [\"xeyes\", \"xclock\"]\n\n[tools.any_app]\napps = [\"xclock\"]\n",
    );
    sb.trust();
    let call = |tool: &str, args: Value| {
        run(warden(&sb, Some(&x.display)).args(["tools", "call", tool, &args.to_string()]))
    };
    // Declared: xeyes; asked of the host: xclock, which is granted too.
    let r = call("show_app", json!({"app": "xeyes", "other": "xclock"}));
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stderr.contains(
            "error (denied): starting `xclock` is not what this call was checked (and the user \
             shown) to do"
        ),
        "{}",
        r.stderr
    );
    assert!(!x.has_window("xclock") && !x.has_window("xeyes"));
    // Undeclared: held to its grants only.
    let r = call("any_app", json!({"app": "xeyes"}));
    assert!(
        r.stderr.contains("`xeyes` is not granted to this tool"),
        "{}",
        r.stderr
    );
    let r = call("any_app", json!({"app": "xclock"}));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let pid = pid_in(&r.stdout);
    assert_eq!(x.window("xclock").len(), 1);
    end_group(pid);
}

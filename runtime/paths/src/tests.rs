use super::*;

#[test]
fn normalizes() {
    let cases = [
        ("", "."),
        (".", "."),
        ("./", "."),
        ("./.", "."),
        ("/", "/"),
        ("//", "/"),
        ("/..", "/"),
        ("a/./b/", "a/b"),
        ("a//b", "a/b"),
        ("a/..", "."),
        ("a/../..", ".."),
        ("../a", "../a"),
        ("./../../a/b/../c", "../../a/c"),
        ("/work/ws/../x", "/work/x"),
    ];
    for (input, want) in cases {
        assert_eq!(normalize(input), want, "{input:?}");
    }
}

#[test]
fn within() {
    assert!(is_within("a/b", "a"));
    assert!(is_within("a", "a"));
    assert!(!is_within("ab", "a"));
    assert!(is_within("a", "."));
    assert!(!is_within("../a", "."));
    assert!(!is_within("/a", "."));
    assert!(is_within("/a", "/"));
    assert!(!is_within("a", "/"));
}

fn at(path: &str, mounts: &[&str]) -> Result<(String, String, String), Refused> {
    resolve(path, mounts).map(|r| (mounts[r.mount].to_string(), r.rel, r.shown))
}

fn ok(m: &str, rel: &str, shown: &str) -> Result<(String, String, String), Refused> {
    Ok((m.into(), rel.into(), shown.into()))
}

#[test]
fn the_longest_name_wins_and_relative_stays_relative() {
    let mounts = [
        "/w/ws",
        ".",
        "/w/ws/docs",
        "docs",
        "/data/",
        "/w/ws/docs/deep",
        "docs/deep",
    ];
    assert_eq!(at("a.txt", &mounts), ok(".", "a.txt", "a.txt"));
    assert_eq!(at("./a//b/", &mounts), ok(".", "a/b", "a/b"));
    assert_eq!(at(".", &mounts), ok(".", ".", "."));
    assert_eq!(at("docs", &mounts), ok("docs", ".", "docs"));
    assert_eq!(at("docs/a", &mounts), ok("docs", "a", "docs/a"));
    assert_eq!(
        at("docs/deep/x", &mounts),
        ok("docs/deep", "x", "docs/deep/x")
    );
    assert_eq!(at("docsx/a", &mounts), ok(".", "docsx/a", "docsx/a"));
    // The case of issue 40: `..` leaves the read-only grant.
    assert_eq!(
        at("docs/../notes.txt", &mounts),
        ok(".", "notes.txt", "notes.txt")
    );
    assert_eq!(at("/w/ws/a", &mounts), ok("/w/ws", "a", "/w/ws/a"));
    assert_eq!(
        at("/w/ws/docs/a/b", &mounts),
        ok("/w/ws/docs", "a/b", "/w/ws/docs/a/b")
    );
    assert_eq!(at("/data/x", &mounts), ok("/data/", "x", "/data/x"));
    assert_eq!(at("/data", &mounts), ok("/data/", ".", "/data"));
    assert_eq!(at("/w/ws/docs/../x", &mounts), ok("/w/ws", "x", "/w/ws/x"));
    // A relative path is relative to the workspace, even when it spells an
    // absolute grant without its slash (a workspace at /app with an app/).
    assert_eq!(at("w/ws/a", &mounts), ok(".", "w/ws/a", "w/ws/a"));
    assert_eq!(at("data/x", &mounts), ok(".", "data/x", "data/x"));
    assert_eq!(at("../x", &mounts), Err(Refused::Climbs));
    assert_eq!(at("docs/../../x", &mounts), Err(Refused::Climbs));
    assert_eq!(at("/etc/passwd", &mounts), Err(Refused::Outside));
    assert_eq!(at("/w", &mounts), Err(Refused::Outside));
    assert_eq!(at("/w/wsx", &mounts), Err(Refused::Outside));
}

#[test]
fn the_last_of_equal_names_wins_and_root_holds_every_absolute_path() {
    assert_eq!(at("a", &["docs", ".", "."]).unwrap().0, ".");
    assert_eq!(resolve("a", &[".", "."]).unwrap().mount, 1);
    assert_eq!(at("/etc/x", &["/", "."]), ok("/", "etc/x", "/etc/x"));
    assert_eq!(at("/", &["/"]), ok("/", ".", "/"));
    assert_eq!(at("/../etc", &["/"]), ok("/", "etc", "/etc"));
    // `/` does not take relative paths, nor `.` absolute ones.
    assert_eq!(at("etc/x", &["/"]), Err(Refused::Outside));
    assert_eq!(at("/etc/x", &["."]), Err(Refused::Outside));
    assert_eq!(at("a", &[] as &[&str]), Err(Refused::Outside));
}

#[test]
fn bad_paths_are_refused_before_anything_else() {
    assert_eq!(at("a\0b", &["."]), Err(Refused::Nul));
    let long = "a".repeat(MAX_PATH + 1);
    assert_eq!(at(&long, &["."]), Err(Refused::TooLong(MAX_PATH + 1)));
    assert!(at(&"a".repeat(MAX_PATH), &["."]).is_ok());
}

#[test]
fn shown_paths_join_back() {
    for (path, mounts) in [
        ("a/b", &[".", "/w"][..]),
        ("docs/a", &[".", "docs"][..]),
        ("docs", &[".", "docs"][..]),
        ("/w/x/y", &["/w", "."][..]),
        ("/w", &["/w"][..]),
        ("/etc/x", &["/"][..]),
        ("/", &["/"][..]),
        (".", &["."][..]),
    ] {
        let r = resolve(path, mounts).unwrap();
        assert_eq!(show(&r.base, &r.rel), r.shown, "{path}");
    }
}

#[test]
fn grant_roots() {
    let mounts = [".", "/data/ref", "cache"];
    for root in [
        "",
        ".",
        "./",
        "/",
        "..",
        "../..",
        "a/..",
        "/data",
        "/data/ref/",
        "cache",
        "./cache/.",
    ] {
        assert!(holds_a_grant(root, &mounts), "{root:?}");
    }
    for inner in ["a", "./a/b", "/data/ref/x", "cache/x", "../a"] {
        assert!(!holds_a_grant(inner, &mounts), "{inner:?}");
    }
}

//! Desktop entries (`.desktop` files, the freedesktop.org Desktop Entry
//! Specification): the few keys a launch needs, and the `Exec` line as
//! arguments and field codes, so that the program line is worked out
//! exactly as the specification says and never by a shell.

/// Part of an `Exec` argument: text, or a field code the launch fills in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Text as it is (quotes and escapes undone, `%%` made `%`).
    Text(String),
    /// `%f`, `%F`, `%u`, `%U`, `%i`, `%c` or `%k`.
    Code(char),
}

/// Parses the `[Desktop Entry]` group of a desktop file; the error says
/// what is wrong with it.
pub fn parse(text: &str) -> Result<Entry, String> {
    let mut in_main = false;
    let mut seen_main = false;
    let mut out = Entry::default();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(group) = trimmed.strip_prefix('[') {
            in_main = group.trim_end() == "Desktop Entry]";
            seen_main |= in_main;
            continue;
        }
        if !in_main {
            continue;
        }
        let Some((key, value)) = trimmed.split_once('=') else {
            continue;
        };
        let (key, value) = (key.trim_end(), value.trim_start());
        let string = || unescape(value);
        let boolean = || value.trim() == "true";
        match key {
            "Type" => out.kind = Some(value.trim().to_string()),
            "Name" => out.name = Some(string()),
            "Exec" => out.exec = Some(split_exec(&string())?),
            "TryExec" => out.try_exec = Some(string()),
            "Icon" => out.icon = Some(string()),
            "Terminal" => out.terminal = boolean(),
            "Hidden" => out.hidden = boolean(),
            _ => {}
        }
    }
    if !seen_main {
        return Err("no [Desktop Entry] group".into());
    }
    match out.kind.as_deref() {
        Some("Application") => Ok(out),
        Some(other) => Err(format!("of Type={other}, not an application")),
        None => Err("no Type key".into()),
    }
}

/// What a launch needs of one desktop entry's `[Desktop Entry]` group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    /// `Type` (an entry that parses is an `Application`).
    pub kind: Option<String>,
    /// `Name`, untranslated.
    pub name: Option<String>,
    /// `Exec`, split into arguments; `None` when the entry has none (a
    /// D-Bus activated app, which warden cannot start).
    pub exec: Option<Vec<Vec<Part>>>,
    /// `TryExec`: a program that must be installed for the entry to count.
    pub try_exec: Option<String>,
    /// `Icon`, for `%i`.
    pub icon: Option<String>,
    /// `Terminal=true`: the app runs in a terminal, which warden has not.
    pub terminal: bool,
    /// `Hidden=true`: the entry counts as deleted.
    pub hidden: bool,
}

/// The escapes of a value of type string: `\s`, `\n`, `\t`, `\r`, `\\`.
/// Any other backslash is kept, for the `Exec` quoting rules to read.
fn unescape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('s') => out.push(' '),
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Splits an `Exec` value into arguments: separated by spaces, an argument
/// quoted in double quotes where `"`, `` ` ``, `$` and `\` are escaped with
/// a backslash; `%%` is a `%`, and every other `%X` a field code. Codes
/// that the specification deprecates are dropped; an unknown one is an
/// error, and so are `%F`, `%U` and `%i` anywhere but alone in an
/// argument (each stands for several arguments, or none).
pub(crate) fn split_exec(exec: &str) -> Result<Vec<Vec<Part>>, String> {
    let mut args: Vec<Vec<Part>> = Vec::new();
    let mut arg: Vec<Part> = Vec::new();
    let mut text = String::new();
    let mut in_arg = false;
    // An argument that was only a deprecated field code is dropped; `""`
    // is an empty argument.
    let mut quoted = false;
    let mut chars = exec.chars().peekable();
    let flush = |text: &mut String, arg: &mut Vec<Part>| {
        if !text.is_empty() {
            arg.push(Part::Text(std::mem::take(text)));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                in_arg = true;
                quoted = true;
                loop {
                    match chars.next() {
                        None => return Err("an unmatched `\"` in Exec".into()),
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e @ ('"' | '`' | '$' | '\\')) => text.push(e),
                            Some(e) => {
                                text.push('\\');
                                text.push(e);
                            }
                            None => return Err("an unmatched `\"` in Exec".into()),
                        },
                        Some('%') => code(&mut chars, &mut text, &mut arg)?,
                        Some(c) => text.push(c),
                    }
                }
            }
            // Outside quotes the specification defines no escape; GLib and
            // KDE read it as a shell does: the next character as it is.
            '\\' => {
                in_arg = true;
                text.push(chars.next().unwrap_or('\\'));
            }
            '%' => {
                in_arg = true;
                code(&mut chars, &mut text, &mut arg)?;
            }
            c if c == ' ' || c == '\t' || c == '\n' => {
                if in_arg {
                    flush(&mut text, &mut arg);
                    if !arg.is_empty() || quoted {
                        args.push(std::mem::take(&mut arg));
                    }
                    in_arg = false;
                    quoted = false;
                }
            }
            c => {
                in_arg = true;
                text.push(c);
            }
        }
    }
    if in_arg {
        flush(&mut text, &mut arg);
        if !arg.is_empty() || quoted {
            args.push(arg);
        }
    }
    for a in &args {
        let alone = a.len() == 1;
        if let Some(Part::Code(c)) = a
            .iter()
            .find(|p| matches!(p, Part::Code('F' | 'U' | 'i')))
            .filter(|_| !alone)
        {
            return Err(format!(
                "`%{c}` in Exec is part of a longer argument; it must stand alone"
            ));
        }
    }
    match args.first().and_then(|a| a.first()) {
        None => Err("Exec is empty".into()),
        Some(Part::Code(_)) => Err("Exec starts with a field code, not a program".into()),
        Some(Part::Text(_)) => Ok(args),
    }
}

/// The field code after a `%`.
fn code(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    text: &mut String,
    arg: &mut Vec<Part>,
) -> Result<(), String> {
    match chars.next() {
        Some('%') => text.push('%'),
        Some(c @ ('f' | 'F' | 'u' | 'U' | 'i' | 'c' | 'k')) => {
            if !text.is_empty() {
                arg.push(Part::Text(std::mem::take(text)));
            }
            arg.push(Part::Code(c));
        }
        // Deprecated: "removed from the command line".
        Some('d' | 'D' | 'n' | 'N' | 'v' | 'm') => {}
        Some(c) => return Err(format!("unknown field code `%{c}` in Exec")),
        None => return Err("a `%` ends Exec".into()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Part::{Code, Text};
    use super::*;

    fn t(s: &str) -> Part {
        Text(s.into())
    }

    #[test]
    fn exec_lines_split_as_the_specification_says() {
        assert_eq!(
            split_exec("xeyes -geometry 100x100 %F").unwrap(),
            [
                vec![t("xeyes")],
                vec![t("-geometry")],
                vec![t("100x100")],
                vec![Code('F')]
            ]
        );
        // Quotes, escapes inside them, `%%`, an embedded %f, dropped codes.
        assert_eq!(
            split_exec(r#""/opt/my app/run" --title="a \"b\" \$c \\d" --file=%f 100%% %d %m"#)
                .unwrap(),
            [
                vec![t("/opt/my app/run")],
                vec![t("--title=a \"b\" $c \\d")],
                vec![t("--file="), Code('f')],
                vec![t("100%")],
            ]
        );
        assert_eq!(split_exec("a \"\"").unwrap(), [vec![t("a")], vec![]]);
        assert_eq!(
            split_exec("sh -c \"echo %c\"").unwrap(),
            [vec![t("sh")], vec![t("-c")], vec![t("echo "), Code('c')]]
        );
        for (bad, says) in [
            ("", "Exec is empty"),
            ("   ", "Exec is empty"),
            ("%f", "starts with a field code"),
            ("app \"unclosed", "unmatched"),
            ("app %x", "unknown field code `%x`"),
            (
                "app --files=%F",
                "`%F` in Exec is part of a longer argument",
            ),
            ("app x%U", "`%U`"),
            ("app %", "a `%` ends Exec"),
            ("%d %m", "Exec is empty"),
        ] {
            let e = split_exec(bad).unwrap_err();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }

    #[test]
    fn an_entry_keeps_what_a_launch_needs() {
        let e = parse(
            "# comment\n[Desktop Entry]\nType=Application\nName=Eyes\nName[fr]=Yeux\n\
             Exec=xeyes\\s-fg red %F\nTryExec=xeyes\nIcon=eyes\nTerminal=false\n\n\
             [Desktop Action new]\nExec=other\nName=Other\n",
        )
        .unwrap();
        assert_eq!(e.name.as_deref(), Some("Eyes"));
        assert_eq!(
            e.exec.unwrap(),
            [
                vec![t("xeyes")],
                vec![t("-fg")],
                vec![t("red")],
                vec![Code('F')]
            ]
        );
        assert_eq!(e.try_exec.as_deref(), Some("xeyes"));
        assert!(!e.terminal && !e.hidden);
        let hidden = parse("[Desktop Entry]\nType=Application\nHidden=true\n").unwrap();
        assert!(hidden.hidden && hidden.exec.is_none());
        for (bad, says) in [
            ("Type=Application\n", "no [Desktop Entry] group"),
            ("[Desktop Entry]\nType=Link\nURL=x\n", "Type=Link"),
            ("[Desktop Entry]\nName=x\n", "no Type key"),
            (
                "[Desktop Entry]\nType=Application\nExec=a %z\n",
                "unknown field code",
            ),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }
}

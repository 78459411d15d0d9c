//! The user's browser: `$BROWSER` when set (a `:`-separated list of
//! commands, the first installed one used; `%s` in a command stands for
//! the URL, else the URL follows it), else `xdg-open` (`open` on macOS).
//! Found once, when the tool is bound.

use std::path::PathBuf;

use warden_confine::find_program;

/// How a page is opened here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Browser {
    /// The program, by its absolute path.
    program: PathBuf,
    /// Its arguments; `%s` stands for the URL.
    args: Vec<String>,
    /// Whether an argument holds `%s` (else the URL is added last).
    placed: bool,
}

/// The opener of the platform, when `$BROWSER` is not set.
#[cfg(target_os = "macos")]
const OPENER: &str = "open";
#[cfg(not(target_os = "macos"))]
const OPENER: &str = "xdg-open";

impl Browser {
    /// The browser `browser` (the value of `$BROWSER`, if set) names, or
    /// the platform's opener; the error says what is missing.
    pub fn find(browser: Option<&str>) -> Result<Browser, String> {
        let Some(list) = browser.filter(|b| !b.trim().is_empty()) else {
            return find_program(OPENER)
                .map(|program| Browser {
                    program,
                    args: Vec::new(),
                    placed: false,
                })
                .ok_or_else(|| {
                    format!(
                        "no browser: $BROWSER is not set and `{OPENER}` is not installed \
                         (install xdg-utils, or set BROWSER)"
                    )
                });
        };
        for command in list.split(':') {
            let mut words = command.split_whitespace();
            let Some(first) = words.next() else { continue };
            if let Some(program) = find_program(first) {
                let args: Vec<String> = words.map(str::to_string).collect();
                let placed = args.iter().any(|a| a.contains("%s"));
                return Ok(Browser {
                    program,
                    args,
                    placed,
                });
            }
        }
        Err(format!(
            "no browser: $BROWSER is `{list}`, and none of its commands is installed"
        ))
    }

    /// The program line that opens `url`.
    pub fn line(&self, url: &str) -> Vec<String> {
        let mut argv = vec![self.program.to_string_lossy().into_owned()];
        argv.extend(self.args.iter().map(|a| a.replace("%s", url)));
        if !self.placed {
            argv.push(url.to_string());
        }
        argv
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browser_is_the_first_installed_command_with_the_url_in_its_place() {
        let sh = find_program("sh").unwrap().display().to_string();
        let b = Browser::find(Some("no-such-browser-x --new:sh -c 'open %s' x")).unwrap();
        assert_eq!(
            b.line("https://docs.rs/"),
            [&sh, "-c", "'open", "https://docs.rs/'", "x"]
        );
        let b = Browser::find(Some("sh")).unwrap();
        assert_eq!(b.line("https://docs.rs/"), [&sh, "https://docs.rs/"]);
        let e = Browser::find(Some("no-such-browser-x:also-not-y")).unwrap_err();
        assert_eq!(
            e,
            "no browser: $BROWSER is `no-such-browser-x:also-not-y`, and none of its commands \
             is installed"
        );
    }
}

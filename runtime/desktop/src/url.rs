//! A URL a tool asks to open: http or https, without credentials, on a
//! host of the tool's `browse` grant (entries written as for `network`).

use warden_policy::NetworkAllow;

/// `given`, as it will be opened (parsed and written back, so that what is
/// checked is what the browser gets), or why it is refused.
pub fn checked_url(given: &str, allow: &NetworkAllow, granted: &[&str]) -> Result<String, String> {
    let url = url::Url::parse(given).map_err(|e| format!("`{given}` is not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "`{given}` is a {}: URL; only http and https pages can be opened",
            url.scheme()
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "`{given}` carries a user name or password; open the page without them"
        ));
    }
    let Some(host) = url.host_str() else {
        return Err(format!("`{given}` names no host"));
    };
    let port = url.port_or_known_default().unwrap_or(0);
    if !allow.allows(host, port) {
        let granted = if granted.is_empty() {
            "none".to_string()
        } else {
            granted.join(", ")
        };
        return Err(format!(
            "{host} is not among the hosts whose pages this tool may open (granted: {granted}); \
             only the user can grant it, with `browse = [\"{host}\"]` in warden.toml"
        ));
    }
    Ok(url.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_granted_hosts_over_http_without_credentials() {
        let granted = ["docs.rs", "*.github.com"];
        let allow = NetworkAllow::new(granted);
        let ok = |u: &str| checked_url(u, &allow, &granted);
        assert_eq!(ok("https://docs.rs").unwrap(), "https://docs.rs/");
        assert_eq!(
            ok("https://DOCS.rs/serde/latest?x=1#y").unwrap(),
            "https://docs.rs/serde/latest?x=1#y"
        );
        assert_eq!(
            ok("http://api.github.com:8080/a").unwrap(),
            "http://api.github.com:8080/a"
        );
        for (bad, says) in [
            (
                "https://evil.example/",
                "evil.example is not among the hosts",
            ),
            ("https://github.com/", "github.com is not among"),
            ("https://docs.rs.evil.example/", "is not among"),
            ("file:///etc/passwd", "is a file: URL"),
            ("javascript:alert(1)", "is a javascript: URL"),
            (
                "https://user:pw@docs.rs/",
                "carries a user name or password",
            ),
            ("docs.rs", "is not a URL"),
        ] {
            let e = ok(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let none = NetworkAllow::new([]);
        assert!(
            checked_url("https://docs.rs/", &none, &[])
                .unwrap_err()
                .contains("(granted: none)")
        );
    }
}

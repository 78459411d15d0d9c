//! Network grants: the hosts a tool may send HTTP requests to.
//!
//! An entry is a host name or IP address, optionally with a port:
//! `api.github.com`, `*.example.com` (any subdomain, not the apex),
//! `127.0.0.1:8080`, `[::1]:3000`, or `*` (any host). Without a port, any
//! port of that host is allowed. Matching is on the host the request names,
//! case-insensitively; the host checks every request, redirects included
//! (each hop is a new request). A wildcard names DNS names only: it never
//! matches an address, and `*.1` or `*.0.0.1` are refused.

use std::fmt;

/// One validated entry of a `network` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    host: HostMatch,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostMatch {
    Any,
    /// `*.suffix`: subdomains of `suffix`.
    Subdomains(String),
    Exact(String),
}

impl HostPattern {
    /// Parses one entry; the error says what was wrong and how to write it.
    pub fn parse(entry: &str) -> Result<HostPattern, String> {
        let e = entry.trim().to_ascii_lowercase();
        if e.is_empty() {
            return Err("empty network entry: write a host such as \"api.example.com\"".into());
        }
        if let Some((scheme, rest)) = e.split_once("://") {
            let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
            return Err(format!(
                "network entry `{entry}` is a URL: write only the host, e.g. \"{host}\" \
                 (requests over http and https are both allowed; `{scheme}://` is not needed)"
            ));
        }
        if e.contains(['/', '?', '#', '@']) {
            return Err(format!(
                "network entry `{entry}` has a path or user part: write only the host, \
                 optionally with a port, e.g. \"example.com\" or \"example.com:8080\""
            ));
        }
        if e == "*" {
            return Ok(HostPattern {
                host: HostMatch::Any,
                port: None,
            });
        }
        let (host, port) =
            split_port(&e).map_err(|why| format!("network entry `{entry}`: {why}"))?;
        let host = if let Some(suffix) = host.strip_prefix("*.") {
            check_host(suffix).map_err(|why| format!("network entry `{entry}`: {why}"))?;
            if is_address(suffix) {
                return Err(format!(
                    "network entry `{entry}`: a wildcard covers the names under a domain, never \
                     addresses: name the address itself, e.g. \"127.0.0.1:8080\""
                ));
            }
            HostMatch::Subdomains(suffix.to_string())
        } else {
            check_host(host).map_err(|why| format!("network entry `{entry}`: {why}"))?;
            HostMatch::Exact(host.to_string())
        };
        Ok(HostPattern { host, port })
    }

    /// Whether a request to `host:port` matches this entry.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        match &self.host {
            HostMatch::Any => true,
            HostMatch::Exact(h) => h.trim_start_matches('[').trim_end_matches(']') == host,
            HostMatch::Subdomains(suffix) => {
                !is_address(host)
                    && host
                        .strip_suffix(suffix.as_str())
                        .is_some_and(|head| head.len() > 1 && head.ends_with('.'))
            }
        }
    }

    /// What is wrong with this entry as a host a secret is sent to: `*`,
    /// or a wildcard that does not stay below one registrable domain
    /// (`*.com`, `*.github.io`: names under a public suffix belong to
    /// many owners).
    pub fn check_secret_host(&self) -> Result<(), String> {
        match &self.host {
            HostMatch::Any => Err(format!(
                "`{self}` would send it to any host: name the hosts of the service"
            )),
            HostMatch::Subdomains(suffix) if psl::domain_str(suffix).is_none() => Err(format!(
                "`{self}` covers names under the public suffix `{suffix}`, which belong to \
                 many owners: name the hosts of the service, or a wildcard below its own \
                 domain, e.g. \"*.example.com\""
            )),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            HostMatch::Any => f.write_str("*")?,
            HostMatch::Subdomains(s) => write!(f, "*.{s}")?,
            HostMatch::Exact(h) => f.write_str(h)?,
        }
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
}

/// The hosts one tool may reach; empty means no network at all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkAllow(Vec<HostPattern>);

impl NetworkAllow {
    /// From the normalised entries of [`crate::Grants::hosts`]; entries
    /// that do not parse (they were validated when the policy was read) are
    /// dropped, so a bad entry can only deny.
    pub fn new<'a>(entries: impl IntoIterator<Item = &'a str>) -> NetworkAllow {
        NetworkAllow(
            entries
                .into_iter()
                .filter_map(|e| HostPattern::parse(e).ok())
                .collect(),
        )
    }

    /// Whether any entry allows `host:port`.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        self.0.iter().any(|p| p.allows(host, port))
    }

    /// The first entry that allows `host:port`, as written in the policy.
    pub fn entry_for(&self, host: &str, port: u16) -> Option<String> {
        self.0
            .iter()
            .find(|p| p.allows(host, port))
            .map(ToString::to_string)
    }

    /// Whether an entry names the address `ip` itself (with `port`, or
    /// any port): what opens a loopback or private address. `*` does not.
    pub fn allows_address(&self, ip: std::net::IpAddr, port: u16) -> bool {
        self.0.iter().any(|p| {
            p.port.is_none_or(|q| q == port)
                && match &p.host {
                    HostMatch::Exact(h) => h
                        .trim_start_matches('[')
                        .trim_end_matches(']')
                        .parse::<std::net::IpAddr>()
                        .is_ok_and(|a| a == ip),
                    _ => false,
                }
        })
    }

    /// Whether no host is allowed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Whether `host` is an IP address (or looks like the end of one: a last
/// label of digits, which no top-level domain has), as a wildcard must
/// never match.
fn is_address(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<std::net::IpAddr>().is_ok()
        || bare
            .trim_end_matches('.')
            .rsplit('.')
            .next()
            .is_some_and(|last| !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()))
}

/// Splits `host[:port]`, `[v6]` and `[v6]:port`.
fn split_port(e: &str) -> Result<(&str, Option<u16>), String> {
    let parse_port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|&n| n != 0)
            .ok_or_else(|| format!("`{p}` is not a port (1-65535)"))
    };
    if e.starts_with('[') {
        let close = e.find(']').ok_or("an IPv6 address needs a closing `]`")?;
        let (host, rest) = e.split_at(close + 1);
        return match rest {
            "" => Ok((host, None)),
            _ => match rest.strip_prefix(':') {
                Some(p) => Ok((host, Some(parse_port(p)?))),
                None => Err(format!("unexpected `{rest}` after the address")),
            },
        };
    }
    match e.rsplit_once(':') {
        Some((host, _)) if host.contains(':') => {
            Err("an IPv6 address must be in brackets, e.g. \"[::1]\" or \"[::1]:8080\"".into())
        }
        Some((host, p)) => Ok((host, Some(parse_port(p)?))),
        None => Ok((e, None)),
    }
}

fn check_host(h: &str) -> Result<(), String> {
    if let Some(v6) = h.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        return v6
            .parse::<std::net::Ipv6Addr>()
            .map(|_| ())
            .map_err(|_| format!("`{v6}` is not an IPv6 address"));
    }
    let labels_ok = !h.is_empty()
        && h.len() <= 253
        && h.trim_end_matches('.').split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        });
    if labels_ok {
        Ok(())
    } else if h.contains('*') {
        Err("a wildcard must be the whole first label, as in \"*.example.com\"".into())
    } else {
        Err(format!("`{h}` is not a host name or IP address"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> HostPattern {
        HostPattern::parse(s).unwrap()
    }

    #[test]
    fn exact_hosts_match_any_port_unless_one_is_given() {
        assert!(p("API.example.com").allows("api.example.com", 443));
        assert!(p("api.example.com").allows("API.EXAMPLE.COM.", 8080));
        assert!(!p("api.example.com").allows("example.com", 443));
        assert!(!p("api.example.com").allows("api.example.com.evil.net", 443));
        assert!(p("127.0.0.1:8080").allows("127.0.0.1", 8080));
        assert!(!p("127.0.0.1:8080").allows("127.0.0.1", 8081));
        assert!(p("[::1]:3000").allows("[::1]", 3000));
        assert!(p("[::1]").allows("::1", 80));
    }

    #[test]
    fn wildcards_match_subdomains_only() {
        let w = p("*.example.com");
        assert!(w.allows("a.example.com", 443));
        assert!(w.allows("a.b.example.com", 443));
        assert!(!w.allows("example.com", 443));
        assert!(!w.allows("badexample.com", 443));
        assert!(p("*").allows("anything.net", 1));
        assert_eq!(w.to_string(), "*.example.com");
        assert_eq!(p("Example.com:81").to_string(), "example.com:81");
    }

    #[test]
    fn a_wildcard_never_names_or_matches_an_address() {
        let err = |s: &str| HostPattern::parse(s).unwrap_err();
        for entry in ["*.1", "*.0.0.1", "*.0.1:8080", "*.168.1.10"] {
            assert!(
                err(entry).contains("a wildcard covers the names under a domain, never addresses"),
                "{entry}: {}",
                err(entry)
            );
        }
        // Even one that parses matches names, not an address that ends so.
        let w = p("*.example.com");
        assert!(!w.allows("127.0.0.1", 80));
        assert!(w.allows("a.example.com", 80));
    }

    #[test]
    fn a_secret_host_stays_below_one_registrable_domain() {
        for ok in [
            "*.example.com",
            "*.api.example.co.uk",
            "api.example.com",
            "127.0.0.1:8080",
        ] {
            assert_eq!(p(ok).check_secret_host(), Ok(()), "{ok}");
        }
        for (bad, says) in [
            ("*.com", "public suffix `com`"),
            ("*.co.uk", "public suffix `co.uk`"),
            ("*.github.io", "public suffix `github.io`"),
            ("*", "would send it to any host"),
        ] {
            let e = p(bad).check_secret_host().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn bad_entries_say_how_to_write_them() {
        let err = |s: &str| HostPattern::parse(s).unwrap_err();
        assert!(
            err("https://api.example.com/v1")
                .contains("write only the host, e.g. \"api.example.com\"")
        );
        assert!(err("example.com/path").contains("write only the host"));
        assert!(err("").contains("empty network entry"));
        assert!(err("example.com:0").contains("is not a port"));
        assert!(err("example.com:http").contains("is not a port"));
        assert!(err("::1").contains("in brackets"));
        assert!(err("a.*.com").contains("wildcard must be the whole first label"));
        assert!(err("exa mple.com").contains("is not a host name"));
        assert!(err("[zz]").contains("is not an IPv6 address"));
    }

    #[test]
    fn an_empty_allow_list_allows_nothing() {
        let none = NetworkAllow::new([]);
        assert!(none.is_empty());
        assert!(!none.allows("127.0.0.1", 80));
        let some = NetworkAllow::new(["example.com", "not a host"]);
        assert!(some.allows("example.com", 443));
        assert!(!some.allows("not a host", 443));
    }
}

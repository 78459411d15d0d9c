//! HTTP the host sends on behalf of a granted party that is not a
//! component: an MCP server reached at a URL. The checks are a tool's:
//! only the granted hosts, the name resolved here and the checked address
//! connected to, a private address only when it is granted itself, the
//! secrets added after the check (only to their hosts) and scrubbed from
//! every response.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::uri::Scheme;
use http::{Request, Response};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use warden_policy::{Grants, NetworkAllow};
use warden_state::StateDir;
use wasmtime_wasi_http::RequestOptions;

use crate::secrets::Secrets;
use crate::send::{Refusal, send};

/// A response body; a transport failure is an I/O error.
pub type OutboundBody = UnsyncBoxBody<Bytes, std::io::Error>;

/// Why a request was not answered.
#[derive(Debug, thiserror::Error)]
pub enum OutboundError {
    /// The host is not in the `network` grants.
    #[error("{0} is not granted: add it to `network`")]
    NotGranted(String),
    /// The name resolves only to addresses that are not granted as such.
    #[error(
        "{host} resolves to {addresses}, {why}: not connected; only the user can grant that \
         address, with `network = [\"{grant}\"]`"
    )]
    Private {
        /// `host:port` as asked.
        host: String,
        /// What it resolved to.
        addresses: String,
        /// What kind of address it is.
        why: &'static str,
        /// The entries that would grant it, quoted and joined.
        grant: String,
    },
    /// The URL cannot be sent (no host, a scheme other than http(s)).
    #[error("{0}")]
    BadUrl(String),
    /// The connection or the exchange failed.
    #[error("{0}")]
    Failed(String),
}

/// Requests to the hosts `grants` allows, with its secrets.
#[derive(Debug, Clone)]
pub struct Outbound {
    allow: Arc<NetworkAllow>,
    secrets: Arc<Secrets>,
    /// Secrets withheld from requests, and why, for the user.
    notes: Arc<Mutex<Vec<String>>>,
}

impl Outbound {
    /// Resolves the secrets `grants` names (from the environment or the
    /// secrets file in `config`).
    pub fn new(grants: &Grants, config: Option<&StateDir>) -> Result<Outbound, String> {
        Ok(Outbound {
            allow: Arc::new(NetworkAllow::new(grants.hosts())),
            secrets: Arc::new(Secrets::resolve(grants, config)?),
            notes: Arc::default(),
        })
    }

    /// Whether a request to `url` would pass the allow-list; `Err` names
    /// the host and port that are not granted.
    fn check(&self, url: &http::Uri) -> Result<(), OutboundError> {
        let (host, port, _) = target(url)?;
        if self.allow.allows(&host, port) {
            Ok(())
        } else {
            Err(OutboundError::NotGranted(format!("{host}:{port}")))
        }
    }

    /// Sends `req` (an absolute URL) when its host is granted, within
    /// `timeout` to connect and to the first byte of the answer. Must run
    /// on a tokio runtime, which drives the connection afterwards.
    pub async fn send(
        &self,
        mut req: Request<Full<Bytes>>,
        timeout: Duration,
    ) -> Result<Response<OutboundBody>, OutboundError> {
        self.check(req.uri())?;
        let (host, port, tls) = target(req.uri())?;
        // The origin form sent on the wire carries no authority.
        if let Some(authority) = req.uri().authority().cloned()
            && let Ok(v) = http::HeaderValue::from_str(authority.as_str())
        {
            req.headers_mut().insert(http::header::HOST, v);
        }
        let (withheld, carries_secret) = self.secrets.inject(&mut req, &host, port, tls);
        for n in withheld {
            crate::net::note_once(&self.notes, n);
        }
        let options = RequestOptions {
            connect_timeout: Some(timeout),
            first_byte_timeout: Some(timeout),
            // A server's event stream may be quiet for long; a stalled one
            // is reconnected by the MCP client.
            between_bytes_timeout: None,
        };
        let req = req.map(|b| b.map_err(|never| match never {}).boxed_unsync());
        let (res, driver) = match send(req, options, &self.allow, &host, port, tls).await {
            Ok(sent) => sent,
            Err(Refusal::Closed(addrs, why)) => {
                let shown: Vec<String> = addrs
                    .iter()
                    .map(|ip| std::net::SocketAddr::new(*ip, port).to_string())
                    .collect();
                return Err(OutboundError::Private {
                    host: format!("{host}:{port}"),
                    addresses: shown.join(", "),
                    why: why.words(),
                    grant: shown.join("\", \""),
                });
            }
            Err(Refusal::Failed(e)) => {
                return Err(OutboundError::Failed(format!("{host}:{port}: {e}")));
            }
        };
        tokio::spawn(driver);
        if carries_secret && let Some(coding) = crate::secrets::refused_coding(&res, &self.secrets)
        {
            return Err(OutboundError::Failed(crate::secrets::coding_note(
                &host, port, &coding,
            )));
        }
        let res = res.map(|b| b.boxed_unsync());
        let res = if self.secrets.is_empty() {
            res
        } else {
            self.secrets.scrub_response(res).map(|b| b.boxed_unsync())
        };
        Ok(res.map(|b| {
            b.map_err(|e| std::io::Error::other(e.to_string()))
                .boxed_unsync()
        }))
    }

    /// `text` with every secret replaced by its marker.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.secrets.scrub(text)
    }

    /// Secrets that were not sent, and why.
    pub fn notes(&self) -> Vec<String> {
        self.notes.lock().expect("notes poisoned").clone()
    }
}

/// Host, port and whether TLS, of an absolute http(s) URL.
fn target(url: &http::Uri) -> Result<(String, u16, bool), OutboundError> {
    let tls = match url.scheme() {
        Some(s) if *s == Scheme::HTTPS => true,
        Some(s) if *s == Scheme::HTTP => false,
        _ => {
            return Err(OutboundError::BadUrl(format!(
                "`{url}` is not an http:// or https:// URL"
            )));
        }
    };
    let host = url
        .host()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| OutboundError::BadUrl(format!("`{url}` names no host")))?;
    Ok((
        host.to_string(),
        url.port_u16().unwrap_or(if tls { 443 } else { 80 }),
        tls,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use warden_policy::Capability;

    fn outbound(hosts: &[&str]) -> Outbound {
        let grants = Grants {
            caps: hosts
                .iter()
                .map(|h| Capability::Net {
                    host: (*h).to_string(),
                })
                .collect(),
            ..Grants::default()
        };
        Outbound::new(&grants, None).unwrap()
    }

    #[test]
    fn only_granted_hosts_pass_the_check() {
        let o = outbound(&["mcp.example.com", "127.0.0.1:8931"]);
        let ok = |u: &str| o.check(&u.parse().unwrap());
        assert!(ok("https://mcp.example.com/mcp").is_ok());
        assert!(ok("http://127.0.0.1:8931/mcp").is_ok());
        let e = ok("http://127.0.0.1:8932/mcp").unwrap_err().to_string();
        assert!(e.contains("127.0.0.1:8932 is not granted"), "{e}");
        assert!(ok("https://other.example.com/").is_err());
        let e = ok("ftp://mcp.example.com/").unwrap_err().to_string();
        assert!(e.contains("not an http"), "{e}");
    }

    #[tokio::test]
    async fn a_name_granted_but_resolving_to_loopback_is_not_connected() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let o = outbound(&[&format!("localhost:{port}")]);
        let req = Request::post(format!("http://localhost:{port}/mcp"))
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap();
        let e = o.send(req, Duration::from_secs(5)).await.unwrap_err();
        assert!(matches!(e, OutboundError::Private { .. }), "{e}");
        assert!(listener.accept().is_err(), "nothing connected");
    }
}

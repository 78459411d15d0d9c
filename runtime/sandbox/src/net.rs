//! Outbound HTTP for one call: every request is checked against the tool's
//! `network` grants before a connection is made. Raw sockets stay disabled;
//! `wasi:http` is the only way out, and only to the hosts named. A name is
//! resolved here and connected to at the address checked; an address that
//! is not globally reachable, or is this machine's own, is reached only
//! when the address itself is granted.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::uri::Scheme;
use warden_policy::NetworkAllow;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

use crate::clock::CallClock;
use crate::secrets::Secrets;
use crate::send::{Refusal, send};

/// Requests the gate refused during one call, for the message to the model.
pub(crate) type Denials = Arc<Mutex<Vec<String>>>;

/// What the gate tells the model besides denials (secrets withheld).
pub(crate) type Notes = Arc<Mutex<Vec<String>>>;

/// Adds `note` to `notes` unless it is there already: a tool that retries
/// hears each thing once.
pub(crate) fn note_once(notes: &Mutex<Vec<String>>, note: String) {
    let mut notes = notes.lock().expect("notes poisoned");
    if !notes.contains(&note) {
        notes.push(note);
    }
}

/// Hosts a call's note names at most, each cut to a name's length: a tool
/// that asks for ever new hosts cannot grow the note, or the time to
/// check it, without bound.
const SHOWN_DENIALS: usize = 16;

/// Adds `host:port` to the call's denials, once.
fn deny(denied: &Mutex<Vec<String>>, host: &str, port: u16) {
    let mut denied = denied.lock().expect("denials poisoned");
    if denied.len() > SHOWN_DENIALS {
        return;
    }
    if denied.len() == SHOWN_DENIALS {
        denied.push("and others".into());
        return;
    }
    let end = host.floor_char_boundary(253);
    let cut = if end < host.len() { "..." } else { "" };
    let shown = format!("{}{cut}:{port}", &host[..end]);
    if !denied.contains(&shown) {
        denied.push(shown);
    }
}

type SendResult = wasmtime_wasi_http::Result<(
    http::Response<WasiBody>,
    Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
)>;

/// Requests one call may have open at once, from sending to the end of
/// the connection: each holds a socket (and buffers) of warden's own, and a
/// tool that opened them without end would leave no descriptor for the
/// rest of warden.
const MAX_OPEN_REQUESTS: usize = 32;

/// The allow-list check and per-call time bound on outgoing requests.
pub(crate) struct NetGate {
    allow: Arc<NetworkAllow>,
    secrets: Arc<Secrets>,
    pub(crate) clock: CallClock,
    denied: Denials,
    notes: Notes,
    /// Requests of this call open now (made at its first request).
    open: Option<Arc<AtomicUsize>>,
}

/// One open request of a call, until dropped.
struct Open(Arc<AtomicUsize>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl NetGate {
    pub(crate) fn new(
        allow: Arc<NetworkAllow>,
        secrets: Arc<Secrets>,
        clock: CallClock,
        denied: Denials,
        notes: Notes,
    ) -> NetGate {
        NetGate {
            allow,
            secrets,
            clock,
            denied,
            notes,
            open: None,
        }
    }

    /// Counts a request as open, unless the call has the most it may.
    fn open(&mut self) -> Option<Open> {
        let open = self.open.get_or_insert_with(Arc::default);
        open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < MAX_OPEN_REQUESTS).then_some(n + 1)
        })
        .ok()
        .map(|_| Open(open.clone()))
    }

    /// Every network wait ends by the call's own deadline: the host blocks on
    /// these outside wasm, where the epoch deadline cannot stop it.
    fn bounded(&self, options: Option<RequestOptions>) -> RequestOptions {
        let left = self
            .clock
            .deadline()
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        let cap = |t: Option<Duration>| Some(t.map_or(left, |t| t.min(left)));
        let o = options.unwrap_or_default();
        RequestOptions {
            connect_timeout: cap(o.connect_timeout),
            first_byte_timeout: cap(o.first_byte_timeout),
            between_bytes_timeout: cap(o.between_bytes_timeout),
        }
    }
}

impl WasiHttpHooks for NetGate {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> Box<dyn Future<Output = SendResult> + Send> {
        drop(fut);
        let mut request = request;
        let uri = request.uri();
        let host = uri.host().unwrap_or_default().to_string();
        let tls = uri.scheme() == Some(&Scheme::HTTPS);
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        // A user name in the authority would go out in `Host` while the
        // grant and the secrets follow the host after it: not sent.
        if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
            note_once(
                &self.notes,
                "a URL with a user name or password (`user@host`) is not sent; put credentials \
                 in a header, or have the user grant a secret"
                    .to_string(),
            );
            return Box::new(async { Err(HttpError::HttpRequestUriInvalid) });
        }
        if host.is_empty() || !self.allow.allows(&host, port) {
            deny(&self.denied, &host, port);
            return Box::new(async { Err(HttpError::HttpRequestDenied) });
        }
        let Some(open) = self.open() else {
            note_once(
                &self.notes,
                format!(
                    "the tool had {MAX_OPEN_REQUESTS} HTTP requests open at once, the most a \
                     call may: more were not sent. Read or drop a response before sending \
                     another"
                ),
            );
            return Box::new(async { Err(HttpError::ConnectionLimitReached) });
        };
        // Only now, for a request that may go: the secrets meant for it.
        let (withheld, carries_secret) = self.secrets.inject(&mut request, &host, port, tls);
        for note in withheld {
            note_once(&self.notes, note);
        }
        let options = self.bounded(options);
        let secrets = self.secrets.clone();
        let allow = self.allow.clone();
        let notes = self.notes.clone();
        Box::new(async move {
            use http_body_util::BodyExt;
            let sent = send(request, options, &allow, &host, port, tls).await;
            let (res, io) = match sent {
                Ok(r) => r,
                Err(Refusal::Failed(e)) => return Err(e),
                Err(Refusal::Closed(addrs, why)) => {
                    // With the port: the grant to suggest is this one
                    // service, and an IPv6 address goes in brackets.
                    let shown: Vec<String> = addrs
                        .iter()
                        .map(|ip| std::net::SocketAddr::new(*ip, port).to_string())
                        .collect();
                    let entry = allow.entry_for(&host, port).unwrap_or_default();
                    let note = format!(
                        "{host}:{port} resolves to {}, {}: not connected. The entry `{entry}` \
                         grants the name, not the address; only the user can grant it, with \
                         `network = [\"{}\"]`",
                        shown.join(", "),
                        why.words(),
                        shown.join("\", \"")
                    );
                    note_once(&notes, note);
                    return Err(HttpError::DestinationIpProhibited);
                }
            };
            if carries_secret && let Some(coding) = crate::secrets::refused_coding(&res, &secrets) {
                note_once(&notes, crate::secrets::coding_note(&host, port, &coding));
                return Err(HttpError::HttpResponseContentCoding(Some(coding)));
            }
            // Whatever the server echoes of a secret never reaches the guest.
            let res = if secrets.is_empty() {
                res.map(BodyExt::boxed_unsync)
            } else {
                secrets
                    .scrub_response(res.map(BodyExt::boxed_unsync))
                    .map(BodyExt::boxed_unsync)
            };
            // Open until its connection ends.
            let io = async move {
                let _open = open;
                io.await
            };
            Ok((res, Box::new(io) as Box<dyn Future<Output = _> + Send>))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_denied_in_a_call_are_named_a_bounded_number_of_times() {
        let denied = Mutex::new(Vec::new());
        deny(&denied, "a.example", 443);
        deny(&denied, "a.example", 443);
        assert_eq!(*denied.lock().unwrap(), ["a.example:443"]);
        let long = "x".repeat(64 << 10);
        for i in 0..1000 {
            deny(&denied, &format!("{i}.{long}"), 80);
        }
        let denied = denied.into_inner().unwrap();
        assert_eq!(denied.len(), SHOWN_DENIALS + 1);
        assert_eq!(denied.last().unwrap(), "and others");
        assert!(denied.iter().all(|d| d.len() <= 253 + 3 + 6), "{denied:?}");
    }
}

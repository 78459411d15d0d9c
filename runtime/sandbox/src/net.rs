//! Outbound HTTP for one call: every request is checked against the tool's
//! `network` grants before a connection is made. Raw sockets stay disabled;
//! `wasi:http` is the only way out, and only to the hosts named.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::uri::Scheme;
use warden_policy::NetworkAllow;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

use crate::clock::CallClock;

/// Requests the gate refused during one call, for the message to the model.
pub(crate) type Denials = Arc<Mutex<Vec<String>>>;

type SendResult = wasmtime_wasi_http::Result<(
    http::Response<WasiBody>,
    Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
)>;

/// The allow-list check and per-call time bound on outgoing requests.
pub(crate) struct NetGate {
    allow: Arc<NetworkAllow>,
    clock: CallClock,
    denied: Denials,
}

impl NetGate {
    pub(crate) fn new(allow: Arc<NetworkAllow>, clock: CallClock, denied: Denials) -> NetGate {
        NetGate {
            allow,
            clock,
            denied,
        }
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
        let uri = request.uri();
        let host = uri.host().unwrap_or_default().to_string();
        let tls = uri.scheme() == Some(&Scheme::HTTPS);
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        if host.is_empty() || !self.allow.allows(&host, port) {
            let mut denied = self.denied.lock().expect("denials poisoned");
            let shown = format!("{host}:{port}");
            if !denied.contains(&shown) {
                denied.push(shown);
            }
            return Box::new(async { Err(HttpError::HttpRequestDenied) });
        }
        let options = self.bounded(options);
        Box::new(async move {
            use http_body_util::BodyExt;
            let (res, io) =
                wasmtime_wasi_http::default_send_request(request, Some(options)).await?;
            Ok((
                res.map(BodyExt::boxed_unsync),
                Box::new(io) as Box<dyn Future<Output = _> + Send>,
            ))
        })
    }
}

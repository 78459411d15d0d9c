//! Sending one checked request: the host resolves the name itself, refuses
//! every address that is not globally reachable or is this machine's own
//! (`addrs.rs`) unless that address is granted by an entry of its own, and
//! connects to the very address it checked, so a name cannot resolve one
//! way for the check and another for the connection.
//!
//! The HTTP/1 exchange follows wasmtime-wasi-http's
//! `default_send_request`; only how the connection is made differs.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::{Pin, pin};
use std::task::{Context, Poll, ready};

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use tokio::net::TcpStream;
use warden_policy::NetworkAllow;

use crate::addrs::Closed;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions};

/// Why no address of a host could be used.
pub(crate) enum Refusal {
    /// Every address it resolves to is closed (the first one's reason)
    /// and not granted itself.
    Closed(Vec<IpAddr>, Closed),
    /// The transport failed.
    Failed(Error),
}

impl From<Error> for Refusal {
    fn from(e: Error) -> Refusal {
        Refusal::Failed(e)
    }
}

/// The addresses of `host` the tool may connect to, in resolver order.
async fn addresses(
    host: &str,
    port: u16,
    allow: &NetworkAllow,
    timeout: Duration,
) -> Result<Vec<SocketAddr>, Refusal> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let found: Vec<SocketAddr> = if let Ok(ip) = bare.parse::<IpAddr>() {
        vec![SocketAddr::new(ip, port)]
    } else {
        match tokio::time::timeout(timeout, tokio::net::lookup_host((bare, port))).await {
            Err(_) => return Err(Error::DnsTimeout.into()),
            Ok(Err(e)) => {
                return Err(Error::DnsError {
                    rcode: Some(unresolved(&e).into()),
                    info_code: None,
                }
                .into());
            }
            Ok(Ok(addrs)) => addrs.collect(),
        }
    };
    // Read now: an interface may have come up since the last request.
    let own = crate::addrs::own_addresses();
    let mut ok = Vec::new();
    let mut refused: Vec<(IpAddr, Closed)> = Vec::new();
    for a in found {
        match crate::addrs::closed(a.ip(), &own) {
            Some(why) if !allow.allows_address(a.ip(), port) => refused.push((a.ip(), why)),
            _ => ok.push(a),
        }
    }
    if ok.is_empty() {
        let Some(&(_, why)) = refused.first() else {
            return Err(Error::DestinationNotFound.into());
        };
        // This machine named first: the plainer reason.
        let why = if refused.iter().any(|(_, w)| *w == Closed::Own) {
            Closed::Own
        } else {
            why
        };
        return Err(Refusal::Closed(
            refused.into_iter().map(|(ip, _)| ip).collect(),
            why,
        ));
    }
    Ok(ok)
}

/// Why a name was not resolved, for the tool: whether the name does not
/// exist, or the resolver could not answer now (`EAI_AGAIN`: no network,
/// a DNS server down), which calls for another try rather than another
/// URL. The resolver's error text is all std gives of its code.
fn unresolved(e: &std::io::Error) -> &'static str {
    if e.to_string()
        .contains("Temporary failure in name resolution")
    {
        TRY_AGAIN
    } else {
        "no such host"
    }
}

/// What a tool is told when the resolver could not answer now.
const TRY_AGAIN: &str = "temporary failure in name resolution";

/// The future that drives a connection after its response arrived.
pub(crate) type Driver = Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>;

/// An HTTP/1 connection over `io`, set up within `timeout`: the request
/// sender and the future that drives the connection.
async fn http1<T, B>(
    io: T,
    timeout: Duration,
) -> Result<(hyper::client::conn::http1::SendRequest<B>, Driver), Error>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (sender, conn) = tokio::time::timeout(
        timeout,
        hyper::client::conn::http1::Builder::new().handshake(TokioIo::new(io)),
    )
    .await
    .map_err(|_| Error::ConnectionTimeout)?
    .map_err(Error::from)?;
    let driver: Driver = Box::pin(async move { conn.await.map_err(conn_error) });
    Ok((sender, driver))
}

/// Sends `req` to `host:port`, over TLS when `tls`, connecting only to
/// an address [`addresses`] allowed.
pub(crate) async fn send<B>(
    mut req: Request<B>,
    options: RequestOptions,
    allow: &NetworkAllow,
    host: &str,
    port: u16,
    tls: bool,
) -> Result<(Response<Incoming>, Driver), Refusal>
where
    B: Body<Data = Bytes, Error = Error> + Send + 'static,
{
    let long = Duration::from_secs(600);
    let connect_timeout = options.connect_timeout.unwrap_or(long);
    let first_byte_timeout = options.first_byte_timeout.unwrap_or(long);
    let between_bytes_timeout = options.between_bytes_timeout.unwrap_or(long);
    let addrs = addresses(host, port, allow, connect_timeout).await?;
    let connect = async {
        let mut last = Error::ConnectionRefused;
        for a in &addrs {
            match TcpStream::connect(a).await {
                Ok(s) => return Ok(s),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    last = Error::ConnectionRefused;
                }
                Err(e) => last = Error::Connect(e),
            }
        }
        Err(last)
    };
    let stream = match tokio::time::timeout(connect_timeout, connect).await {
        Ok(s) => s?,
        Err(_) => return Err(Error::ConnectionTimeout.into()),
    };
    let (mut sender, conn): (_, Driver) = if tls {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.into(),
        };
        let config = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let name = match bare.parse::<IpAddr>() {
            Ok(ip) => rustls::pki_types::ServerName::from(ip),
            Err(_) => rustls::pki_types::ServerName::try_from(bare.to_string())
                .map_err(|_| Error::HttpRequestUriInvalid)?,
        };
        let stream = tokio::time::timeout(connect_timeout, connector.connect(name, stream))
            .await
            .map_err(|_| Error::ConnectionTimeout)?
            .map_err(Error::Tls)?;
        http1(stream, connect_timeout).await?
    } else {
        http1(stream, connect_timeout).await?
    };

    // Origin form on the wire: the scheme and authority are only for proxies.
    *req.uri_mut() = http::Uri::builder()
        .path_and_query(req.uri().path_and_query().map_or("/", |p| p.as_str()))
        .build()
        .map_err(|_| Error::HttpRequestUriInvalid)?;

    let send = async move {
        let res = tokio::time::timeout(first_byte_timeout, sender.send_request(req))
            .await
            .map_err(|_| Error::ConnectionReadTimeout)?
            .map_err(Error::from)?;
        let between = between_bytes_timeout.max(Duration::new(0, 1));
        let mut timeout = tokio::time::interval(between);
        timeout.reset();
        Ok::<_, Error>(res.map(|incoming| Incoming { incoming, timeout }))
    };
    let mut send = pin!(send);
    let mut conn = Some(conn);
    // Wait for the response while driving the connection.
    let res = std::future::poll_fn(|cx| match send.as_mut().poll(cx) {
        Poll::Ready(r) => Poll::Ready(r),
        Poll::Pending => {
            let Some(fut) = conn.as_mut() else {
                return Poll::Pending;
            };
            let r = ready!(fut.as_mut().poll(cx));
            conn = None;
            match r {
                Ok(()) => send.as_mut().poll(cx),
                Err(e) => Poll::Ready(Err(e)),
            }
        }
    })
    .await?;
    let rest: Driver = match conn {
        Some(c) => c,
        None => Box::pin(async { Ok(()) }),
    };
    Ok((res, rest))
}

fn conn_error(e: hyper::Error) -> Error {
    if e.is_timeout() {
        Error::HttpResponseTimeout
    } else {
        e.into()
    }
}

/// A response body that fails when the server pauses longer than the
/// between-bytes timeout.
pub(crate) struct Incoming {
    incoming: hyper::body::Incoming,
    timeout: tokio::time::Interval,
}

impl Body for Incoming {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Error>>> {
        match Pin::new(&mut self.incoming).poll_frame(cx) {
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(if e.is_timeout() {
                Error::HttpResponseTimeout
            } else {
                e.into()
            }))),
            Poll::Ready(Some(Ok(frame))) => {
                self.timeout.reset();
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => {
                ready!(self.timeout.poll_tick(cx));
                Poll::Ready(Some(Err(Error::ConnectionReadTimeout)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.incoming.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resolver_that_cannot_answer_now_is_not_reported_as_no_such_host() {
        // As std words getaddrinfo's EAI_AGAIN and EAI_NONAME.
        let again = std::io::Error::other(
            "failed to lookup address information: Temporary failure in name resolution",
        );
        assert_eq!(unresolved(&again), TRY_AGAIN);
        let none = std::io::Error::other(
            "failed to lookup address information: Name or service not known",
        );
        assert_eq!(unresolved(&none), "no such host");
    }
}

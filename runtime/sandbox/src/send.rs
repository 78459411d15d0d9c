//! Sending one checked request: the host resolves the name itself, refuses
//! loopback, private, link-local and metadata addresses unless that address
//! is granted by an entry of its own, and connects to the very address it
//! checked, so a name cannot resolve one way for the check and another for
//! the connection.
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
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions};

/// Whether `ip` is a loopback, private, link-local, shared, unspecified,
/// reserved or unique-local address: one that names this machine or its
/// network rather than the internet (169.254.169.254, the cloud metadata
/// service, is link-local). An IPv6 address that carries an IPv4 one
/// (mapped, IPv4-compatible, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) is
/// judged by the IPv4 address it leads to.
pub(crate) fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || (a == 100 && (64..128).contains(&b))
                || a == 0
                // IETF protocol assignments, benchmarking, reserved.
                || (a == 192 && b == 0 && c == 0)
                || (a == 198 && (b & 0xfe) == 18)
                || a >= 240
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            let o = v6.octets();
            let v4 = |i: usize| std::net::Ipv4Addr::new(o[i], o[i + 1], o[i + 2], o[i + 3]);
            // IPv4-compatible (deprecated, still routed by some), NAT64's
            // well-known prefix, then 6to4.
            let compatible =
                s[..6] == [0, 0, 0, 0, 0, 0] && !v6.is_loopback() && !v6.is_unspecified();
            let nat64 = s[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
            let carried = if let Some(v4) = v6.to_ipv4_mapped() {
                Some(v4)
            } else if compatible || nat64 {
                Some(v4(12))
            } else if s[0] == 0x2002 {
                Some(v4(2))
            } else {
                None
            };
            if let Some(v4) = carried {
                return is_private(IpAddr::V4(v4));
            }
            v6.is_loopback()
                || v6.is_unspecified()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                // Site-local (deprecated, still routed by some networks).
                || (s[0] & 0xffc0) == 0xfec0
                // NAT64's local-use prefix, which may carry an IPv4 address
                // anywhere in it, and Teredo, which carries one obscured.
                || s[..3] == [0x64, 0xff9b, 1]
                || s[..2] == [0x2001, 0]
        }
    }
}

/// Why no address of a host could be used.
pub(crate) enum Refusal {
    /// Every address it resolves to is private and not granted itself.
    Private(Vec<IpAddr>),
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
    let (ok, refused): (Vec<SocketAddr>, Vec<SocketAddr>) = found
        .into_iter()
        .partition(|a| !is_private(a.ip()) || allow.allows_address(a.ip(), port));
    if ok.is_empty() {
        if refused.is_empty() {
            return Err(Error::DestinationNotFound.into());
        }
        return Err(Refusal::Private(
            refused.iter().map(SocketAddr::ip).collect(),
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

    #[test]
    fn private_ranges() {
        for a in [
            "127.0.0.1",
            "127.8.9.1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "192.0.0.170",
            "198.18.0.1",
            "198.19.255.1",
            "240.0.0.1",
            "::10.0.0.5",
            "64:ff9b::a00:5",
            "64:ff9b::169.254.169.254",
            "2002:a00:5::1",
            "2002:7f00:1::",
            "fec0::1",
            "64:ff9b:1::a00:5",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        ] {
            assert!(is_private(a.parse().unwrap()), "{a}");
        }
        for a in [
            "8.8.8.8",
            "172.32.0.1",
            "1.1.1.1",
            "2606:4700::1111",
            "100.128.0.1",
            "198.20.0.1",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "2001:db9::1",
        ] {
            assert!(!is_private(a.parse().unwrap()), "{a}");
        }
    }
}

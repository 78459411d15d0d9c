//! A tiny HTTP/1.1 server on loopback for the network tests: it answers every
//! request with `hello from PORT` (or never answers, when silent) and counts
//! the connections it accepted, so a test can prove nothing reached it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A loopback HTTP server that runs until the test process ends.
pub struct HttpPeer {
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    hits: Arc<AtomicUsize>,
}

impl HttpPeer {
    /// Answers each request with `200 hello from PORT`.
    pub fn start() -> HttpPeer {
        HttpPeer::spawn(true)
    }

    /// Accepts connections and reads requests but never answers.
    pub fn silent() -> HttpPeer {
        HttpPeer::spawn(false)
    }

    fn spawn(answer: bool) -> HttpPeer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                counter.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || serve(stream, port, answer));
            }
        });
        HttpPeer { port, hits }
    }

    /// `http://127.0.0.1:PORT/path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Connections accepted so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

fn serve(mut stream: TcpStream, port: u16, answer: bool) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    if !answer {
        // Hold the connection open until the client gives up.
        let _ = stream.read(&mut [0u8; 1]);
        return;
    }
    let body = format!("hello from {port}");
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// One request as a [`WebPeer`] saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `GET`, `POST`, ...
    pub method: String,
    /// Path and query.
    pub target: String,
    /// The request head (request line and headers), as received.
    pub head: String,
    /// The body.
    pub body: Vec<u8>,
}

impl Seen {
    /// A header's value (names compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }
}

/// What a [`WebPeer`] answers.
pub struct Answer {
    /// Status code.
    pub status: u16,
    /// Headers besides `content-length` and `connection`.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// Send the head, then hold the connection without sending the body.
    pub stall: bool,
    /// Write the body this many bytes at a time.
    pub chunk: usize,
    /// The header that frames the body in place of `content-length`
    /// (`transfer-encoding: chunked`); the body is then written as given.
    pub framing: Option<String>,
}

impl Answer {
    /// `200` with `content-type` and `body`.
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Answer {
        Answer {
            status: 200,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.into(),
            stall: false,
            chunk: 64 << 10,
            framing: None,
        }
    }

    /// A redirect to `location`.
    pub fn redirect(location: &str) -> Answer {
        Answer {
            status: 302,
            headers: vec![("location".into(), location.into())],
            body: Vec::new(),
            stall: false,
            chunk: 64 << 10,
            framing: None,
        }
    }

    /// `status` with a short text body.
    pub fn status(status: u16, text: &str) -> Answer {
        Answer {
            status,
            ..Answer::ok("text/plain", text)
        }
    }
}

type Handler = dyn Fn(&Seen) -> Answer + Send + Sync;

/// A loopback HTTP/1.1 server answering by a handler; it counts the
/// connections it accepted and keeps every request it read.
pub struct WebPeer {
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    hits: Arc<AtomicUsize>,
    seen: Arc<std::sync::Mutex<Vec<Seen>>>,
}

impl WebPeer {
    /// Serves every request with `handler`.
    pub fn start(handler: impl Fn(&Seen) -> Answer + Send + Sync + 'static) -> WebPeer {
        WebPeer::start_on("127.0.0.1", handler)
    }

    /// Serves every request with `handler`, listening on `ip` (`0.0.0.0`:
    /// every address of this machine).
    pub fn start_on(
        ip: &str,
        handler: impl Fn(&Seen) -> Answer + Send + Sync + 'static,
    ) -> WebPeer {
        let listener = TcpListener::bind((ip, 0)).expect("bind");
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let (counter, log) = (hits.clone(), seen.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                counter.fetch_add(1, Ordering::SeqCst);
                let (handler, log) = (handler.clone(), log.clone());
                std::thread::spawn(move || answer(stream, &*handler, &log));
            }
        });
        WebPeer { port, hits, seen }
    }

    /// `http://127.0.0.1:PORT/path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Connections accepted so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    /// Every request read so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Everything received, heads and bodies, as text.
    pub fn log(&self) -> String {
        self.seen()
            .iter()
            .map(|s| format!("{}{}\n", s.head, String::from_utf8_lossy(&s.body)))
            .collect()
    }
}

fn answer(mut stream: TcpStream, handler: &Handler, log: &std::sync::Mutex<Vec<Seen>>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut line = head.split_whitespace();
    let method = line.next().unwrap_or_default().to_string();
    let target = line.next().unwrap_or_default().to_string();
    let mut seen = Seen {
        method,
        target,
        head,
        body: Vec::new(),
    };
    if let Some(n) = seen
        .header("content-length")
        .and_then(|v| v.parse::<usize>().ok())
    {
        let mut body = vec![0u8; n];
        if stream.read_exact(&mut body).is_err() {
            return;
        }
        seen.body = body;
    } else if seen
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        seen.body = read_chunked(&mut stream);
    }
    log.lock().unwrap().push(seen.clone());
    let a = handler(&seen);
    let mut out = format!("HTTP/1.1 {} X\r\n", a.status);
    for (k, v) in &a.headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    let framing =
        (a.framing.clone()).unwrap_or_else(|| format!("content-length: {}", a.body.len()));
    out.push_str(&format!("{framing}\r\nconnection: close\r\n\r\n"));
    if stream.write_all(out.as_bytes()).is_err() {
        return;
    }
    if a.stall {
        let _ = stream.flush();
        // Hold the connection open until the client gives up.
        let _ = stream.read(&mut [0u8; 1]);
        return;
    }
    for piece in a.body.chunks(a.chunk.max(1)) {
        if stream
            .write_all(piece)
            .and_then(|()| stream.flush())
            .is_err()
        {
            return;
        }
    }
}

fn read_chunked(stream: &mut TcpStream) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let mut size_line = Vec::new();
        let mut byte = [0u8; 1];
        while !size_line.ends_with(b"\r\n") {
            match stream.read(&mut byte) {
                Ok(1) => size_line.push(byte[0]),
                _ => return body,
            }
        }
        let text = String::from_utf8_lossy(&size_line);
        let n =
            usize::from_str_radix(text.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
        let mut chunk = vec![0u8; n + 2];
        if stream.read_exact(&mut chunk).is_err() {
            return body;
        }
        if n == 0 {
            return body;
        }
        body.extend_from_slice(&chunk[..n]);
    }
}

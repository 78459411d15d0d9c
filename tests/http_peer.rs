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

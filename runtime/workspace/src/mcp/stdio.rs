//! Speaking to a server: its stdio (messages capped, stderr followed as it
//! comes) or its URL (through the checked sending, a stream that keeps
//! ending given up).

use super::*;

impl McpTools {
    /// Connects to the server's URL through the checked sending (granted
    /// hosts only) and lists its tools.
    pub(super) fn connect(
        &self,
        server: &McpServer,
        url: &str,
        config: Option<&StateDir>,
    ) -> Result<(Listed, CheckedHttp), String> {
        // Every request is checked against the grants as it is sent; a
        // refusal is reported below, with the reason.
        let out = Outbound::new(&server.grants, config)?;
        let http = CheckedHttp::new(out.clone(), server.grants.limits.timeout);
        let mut config = StreamableHttpClientTransportConfig::with_uri(url);
        config.retry_config = Arc::new(QuickEndsGiveUp::default());
        // Made on the servers' runtime, which runs its worker.
        let serving = {
            let http = http.clone();
            async move { ().serve(StreamableHttpClientTransport::with_client(http, config)).await }
        };
        let listed = self
            .list(serving, "its URL", None, START_TIMEOUT)
            .map_err(|why| {
                // Why the request did not go out, and why a secret was not
                // sent, say more than the client's error does.
                let why = match http.failure() {
                    Some(failure) => format!("it could not be reached: {failure}"),
                    None => why,
                };
                match out.notes() {
                    notes if notes.is_empty() => why,
                    notes => format!("{why}; {}", notes.join("; ")),
                }
            })?;
        Ok((listed, http))
    }
}

/// When a server's event stream ends (the one that carries its
/// notifications), it is opened again after 1 s, 2 s, 4 s; a stream that
/// keeps ending within [`QUICK_END`] is given up after [`QUICK_ENDS`]
/// tries, so an idle warden does not ask the server for it every second
/// (rmcp's own policy starts over after each reopening). Calls go by POST
/// and still work.
#[derive(Debug, Default)]
pub(super) struct QuickEndsGiveUp {
    /// When the last retry was asked for, and how many came in a row
    /// each within [`QUICK_END`] of the one before.
    last: Mutex<Option<(Instant, u32)>>,
}

/// A stream that ends this soon after it was opened again ended quickly.
pub(super) const QUICK_END: Duration = Duration::from_secs(30);

/// Quick ends in a row before the stream is given up.
pub(super) const QUICK_ENDS: u32 = 3;

impl rmcp::transport::common::client_side_sse::SseRetryPolicy for QuickEndsGiveUp {
    fn retry(&self, _: usize) -> Option<Duration> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let streak = match *last {
            Some((at, n)) if now.duration_since(at) < QUICK_END => n + 1,
            _ => 0,
        };
        *last = Some((now, streak));
        (streak < QUICK_ENDS).then(|| Duration::from_secs(1 << streak))
    }
}

/// What a server's process wrote that says why it failed: the end of its
/// stderr, read as it comes (so that the server never blocks on a full
/// pipe), and whether it sent a message too long to read on stdout.
#[derive(Clone, Default)]
pub(super) struct ProcessOutput(Arc<Tail>);

#[derive(Default)]
pub(super) struct Tail {
    /// At most [`STDERR_KEPT`] bytes, the last written.
    kept: Mutex<VecDeque<u8>>,
    /// Whether bytes were dropped from the front.
    cut: AtomicBool,
    ended: AtomicBool,
    /// A message on stdout passed [`MAX_MESSAGE`]: its connection was
    /// closed on it.
    oversized: AtomicBool,
    ending: tokio::sync::Notify,
}

impl ProcessOutput {
    /// Reads `stderr` on the current runtime until it ends.
    pub(super) fn follow(stderr: std::process::ChildStderr) -> std::io::Result<ProcessOutput> {
        let pipe = Receiver::from_owned_fd(stderr.into())?;
        let tail = ProcessOutput::default();
        let t = tail.0.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            loop {
                if pipe.readable().await.is_err() {
                    break;
                }
                match pipe.try_read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let mut kept = t.kept.lock().unwrap_or_else(|e| e.into_inner());
                        kept.extend(&buf[..n]);
                        if kept.len() > STDERR_KEPT {
                            let extra = kept.len() - STDERR_KEPT;
                            kept.drain(..extra);
                            t.cut.store(true, Ordering::Relaxed);
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => break,
                }
            }
            t.ended.store(true, Ordering::Release);
            t.ending.notify_waiters();
        });
        Ok(tail)
    }

    /// Returns once the stream ended (the process and all it started are
    /// gone, or closed it).
    pub(super) async fn ended(&self) {
        loop {
            let ending = self.0.ending.notified();
            if self.0.ended.load(Ordering::Acquire) {
                return;
            }
            ending.await;
        }
    }

    /// Says why the connection closed, when it closed on a message of
    /// more than [`MAX_MESSAGE`] bytes.
    pub(super) fn oversized(&self) -> Option<String> {
        self.0.oversized.load(Ordering::Relaxed).then(|| {
            format!(
                "it sent a message of more than {} MiB, more than warden reads, so its \
                 connection was closed",
                MAX_MESSAGE >> 20
            )
        })
    }

    /// The last [`STDERR_LINES`] lines that are not blank, joined by ` | `.
    pub(super) fn last_lines(&self) -> Option<String> {
        let bytes: Vec<u8> = {
            let kept = self.0.kept.lock().unwrap_or_else(|e| e.into_inner());
            kept.iter().copied().collect()
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut lines: Vec<&str> = text.lines().map(str::trim).collect();
        // The first line may have lost its start.
        if self.0.cut.load(Ordering::Relaxed) && !lines.is_empty() {
            lines.remove(0);
        }
        lines.retain(|l| !l.is_empty());
        let shown = &lines[lines.len().saturating_sub(STDERR_LINES)..];
        (!shown.is_empty()).then(|| shown.join(" | "))
    }
}

/// A server's stdout, as the client reads it: one message is one line,
/// and a line longer than [`MAX_MESSAGE`] ends the stream with an error
/// (rmcp would drop it and leave the call waiting for an answer that never
/// comes, until its timeout). [`ProcessOutput::oversized`] says so.
pub(super) struct MessageCap {
    pub(super) stdout: Receiver,
    /// Bytes of the current line so far.
    pub(super) line: usize,
    pub(super) output: ProcessOutput,
}

impl tokio::io::AsyncRead for MessageCap {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        std::task::ready!(std::pin::Pin::new(&mut self.stdout).poll_read(cx, buf))?;
        let mut line = self.line;
        for (i, part) in buf.filled()[before..].split(|&b| b == b'\n').enumerate() {
            if i > 0 {
                line = 0;
            }
            line += part.len();
            if line > MAX_MESSAGE {
                self.output.0.oversized.store(true, Ordering::Relaxed);
                return std::task::Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "a message longer than warden reads",
                )));
            }
        }
        self.line = line;
        std::task::Poll::Ready(Ok(()))
    }
}

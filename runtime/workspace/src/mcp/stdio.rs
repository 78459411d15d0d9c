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
    /// It flooded warden with messages of its own (notifications,
    /// requests) past [`FLOOD_SECONDS`]: its connection was closed.
    flooded: AtomicBool,
    /// Messages of its own dropped for going past the rate.
    dropped: std::sync::atomic::AtomicU64,
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

    /// Says why the connection closed, when the server flooded it.
    pub(super) fn flooded(&self) -> Option<String> {
        self.0.flooded.load(Ordering::Relaxed).then(|| {
            format!(
                "it sent messages of its own (notifications) faster than {SELF_MESSAGES} a \
                 second or {} KiB a second for {FLOOD_SECONDS} s, so warden closed its \
                 connection ({} were dropped first)",
                SELF_BYTES >> 10,
                self.0.dropped.load(Ordering::Relaxed)
            )
        })
    }

    /// Why the connection closed, when warden closed it: a message too
    /// long, or a flood.
    pub(super) fn closed(&self) -> Option<String> {
        self.oversized().or_else(|| self.flooded())
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

/// Messages a server sends of its own accord (notifications, requests)
/// passed on each second at most; past it they are dropped.
pub(super) const SELF_MESSAGES: u32 = 200;
/// Bytes of such messages passed on each second at most.
pub(super) const SELF_BYTES: usize = 256 << 10;
/// Seconds in a row with messages dropped after which the server's
/// connection is closed: it floods.
pub(super) const FLOOD_SECONDS: u32 = 3;
/// Lines longer than this are answers (a tool's result), never looked at
/// as messages of the server's own: those are small.
const LOOK: usize = 64 << 10;

/// A server's stdout, as the client reads it: one message is one line.
/// A line longer than [`MAX_MESSAGE`] ends the stream with an error (rmcp
/// would drop it and leave the call waiting for an answer that never
/// comes, until its timeout); [`ProcessOutput::oversized`] says so.
/// Messages the server sends of its own accord (a line with a `method`)
/// are passed on at most [`SELF_MESSAGES`] and [`SELF_BYTES`] a second,
/// the rest dropped; dropping in [`FLOOD_SECONDS`] seconds in a row ends
/// the stream ([`ProcessOutput::flooded`]). What warden holds of a server's
/// traffic is therefore one short line and one read, whatever it sends.
pub(super) struct MessageCap {
    stdout: Receiver,
    /// Bytes of the current line so far.
    line: usize,
    /// The current line while it is short enough to be looked at.
    pending: Vec<u8>,
    /// Bytes read and kept, not yet handed to the client.
    ready: Vec<u8>,
    at: usize,
    rate: Rate,
    output: ProcessOutput,
}

/// The messages of a server's own passed in the current second.
struct Rate {
    second: Instant,
    messages: u32,
    bytes: usize,
    /// Whether one was dropped this second, and in how many seconds in a
    /// row (this one included) one was.
    dropping: bool,
    streak: u32,
}

impl MessageCap {
    pub(super) fn new(stdout: Receiver, output: ProcessOutput) -> MessageCap {
        MessageCap {
            stdout,
            line: 0,
            pending: Vec::new(),
            ready: Vec::new(),
            at: 0,
            rate: Rate {
                second: Instant::now(),
                messages: 0,
                bytes: 0,
                dropping: false,
                streak: 0,
            },
            output,
        }
    }

    /// Takes in `bytes` read from the server. An error ends the stream.
    fn take(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        for (i, part) in bytes.split(|&b| b == b'\n').enumerate() {
            if i > 0 {
                self.end_line()?;
            }
            self.line += part.len();
            if self.line > MAX_MESSAGE {
                self.output.0.oversized.store(true, Ordering::Relaxed);
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "a message longer than warden reads",
                ));
            }
            if self.line <= LOOK {
                self.pending.extend_from_slice(part);
            } else {
                // An answer: passed on as it comes.
                self.ready.append(&mut self.pending);
                self.ready.extend_from_slice(part);
            }
        }
        Ok(())
    }

    /// A line ended: passed on, or dropped when it is a message of the
    /// server's own past the rate.
    fn end_line(&mut self) -> std::io::Result<()> {
        let long = self.line > LOOK;
        self.line = 0;
        if long {
            self.ready.push(b'\n');
            return Ok(());
        }
        let line = std::mem::take(&mut self.pending);
        if own_message(&line) && !self.rate.allows(line.len() + 1) {
            self.output.0.dropped.fetch_add(1, Ordering::Relaxed);
            if self.rate.streak >= FLOOD_SECONDS {
                self.output.0.flooded.store(true, Ordering::Relaxed);
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "the server floods warden with messages",
                ));
            }
            return Ok(());
        }
        self.ready.extend_from_slice(&line);
        self.ready.push(b'\n');
        Ok(())
    }
}

impl Rate {
    /// Whether a message of `len` bytes may pass now.
    fn allows(&mut self, len: usize) -> bool {
        let now = Instant::now();
        if now.duration_since(self.second) >= Duration::from_secs(1) {
            // The streak counts seconds in a row with drops: a calm second
            // (or a gap) ends it.
            let next = now.duration_since(self.second) < Duration::from_secs(2);
            if !(self.dropping && next) {
                self.streak = 0;
            }
            self.second = now;
            self.messages = 0;
            self.bytes = 0;
            self.dropping = false;
        }
        if self.messages < SELF_MESSAGES && self.bytes + len <= SELF_BYTES {
            self.messages += 1;
            self.bytes += len;
            return true;
        }
        if !self.dropping {
            self.dropping = true;
            self.streak += 1;
        }
        false
    }
}

/// Whether `line` is a message the server sends of its own accord (one
/// with a `method`: a notification or a request), not an answer.
fn own_message(line: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default)]
        method: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Probe>(line).is_ok_and(|p| p.method.is_some())
}

impl tokio::io::AsyncRead for MessageCap {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let this = &mut *self;
        while this.at == this.ready.len() {
            this.ready.clear();
            this.at = 0;
            let mut scratch = [0u8; 16 << 10];
            let mut read = tokio::io::ReadBuf::new(&mut scratch);
            std::task::ready!(std::pin::Pin::new(&mut this.stdout).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                return std::task::Poll::Ready(Ok(())); // the end
            }
            this.take(read.filled())?;
        }
        let n = buf.remaining().min(this.ready.len() - this.at);
        buf.put_slice(&this.ready[this.at..this.at + n]);
        this.at += n;
        std::task::Poll::Ready(Ok(()))
    }
}

//! The JSON-RPC framing `warden mcp` reads its client with (rmcp's
//! `AsyncRwTransport` over stdin, as `serve((stdin, stdout))` sets it up):
//! whatever bytes come, reading never panics, and what is read does not
//! depend on how the bytes were cut into reads (a message split across
//! reads is the same message; a line skipped, such as a notification of
//! another protocol, holds back none after it).
//!
//! It once checked rmcp's `JsonRpcMessageCodec` instead, which warden mcp
//! does not read with: the fuzzer found that codec answering "need more
//! bytes" after a skipped notification while whole lines were waiting
//! (`fuzz/seeds/jsonrpc/skipped-notification-holds-nothing-back`, now a
//! seed of this check).

use std::pin::Pin;
use std::task::{Context, Poll};

use rmcp::RoleServer;
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, ReadBuf};

/// Longest line read in these checks (the server's is rmcp's default; a
/// small one lets the fuzzer reach the "too long" path).
const MAX: usize = 4 << 10;

/// The client's bytes, handed over in the reads given.
struct Reads(std::collections::VecDeque<Vec<u8>>);

impl AsyncRead for Reads {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if let Some(mut chunk) = self.0.pop_front() {
            let n = chunk.len().min(buf.remaining());
            buf.put_slice(&chunk[..n]);
            if n < chunk.len() {
                self.0.push_front(chunk.split_off(n));
            }
        }
        Poll::Ready(Ok(()))
    }
}

/// The messages read, in order, as JSON.
fn decode(chunks: &[&[u8]]) -> Vec<String> {
    // An empty read is the end of the input: a reader never returns one
    // before it (the fuzzer found this check's first version cutting at 0).
    let reads = Reads(
        chunks
            .iter()
            .filter(|c| !c.is_empty())
            .map(|c| c.to_vec())
            .collect(),
    );
    let mut transport = AsyncRwTransport::<RoleServer, _, _>::new_server(reads, tokio::io::sink())
        .with_max_line_length(MAX);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
    rt.block_on(async {
        let mut out = Vec::new();
        while let Some(message) = transport.receive().await {
            out.push(serde_json::to_string(&message).expect("a message serializes"));
        }
        out
    })
}

/// `data`: the bytes the client sends; its first byte says where a second
/// read cuts them.
pub fn check(data: &[u8]) {
    let Some((&cut, bytes)) = data.split_first() else {
        return;
    };
    let whole = decode(&[bytes]);
    let at = cut as usize * bytes.len() / 255;
    let (a, b) = bytes.split_at(at);
    assert_eq!(
        whole,
        decode(&[a, b]),
        "the messages depend on where a read ends (cut at {at})"
    );
    // A byte a read, the slowest a client can be.
    if bytes.len() <= 512 {
        let each: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(whole, decode(&each), "read a byte at a time");
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::drive;

    #[test]
    fn seeds() {
        drive::replay("jsonrpc", super::check);
    }

    proptest! {
        #![proptest_config(drive::config(2_000))]

        #[test]
        fn edited_seeds(data in drive::mutated("jsonrpc")) {
            super::check(&data);
        }
    }
}

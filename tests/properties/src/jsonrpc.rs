//! The JSON-RPC framing `warden mcp` reads its client with (rmcp's line
//! codec over stdin, as `rmcp::transport::stdio()` sets it up): whatever
//! bytes come, decoding never panics, and what is decoded does not depend
//! on how the bytes were cut into reads (a message split across reads is
//! the same message).

use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::async_rw::JsonRpcMessageCodec;
use tokio_util::bytes::BytesMut;
use tokio_util::codec::Decoder;

/// Longest line decoded in these checks (the server's is 16 MiB; a small
/// one lets the fuzzer reach the "too long" path).
const MAX: usize = 4 << 10;

/// What decoding gave, one item per message or error, comparable.
fn decode(chunks: &[&[u8]]) -> Vec<Result<String, String>> {
    let mut codec = JsonRpcMessageCodec::<ClientJsonRpcMessage>::new_with_max_length(MAX);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut take = |codec: &mut JsonRpcMessageCodec<_>, buf: &mut BytesMut, eof: bool| loop {
        let item = if eof {
            codec.decode_eof(buf)
        } else {
            codec.decode(buf)
        };
        match item {
            Ok(Some(message)) => out.push(Ok(serde_json::to_string(&message).unwrap())),
            Ok(None) => break,
            Err(e) => out.push(Err(e.to_string())),
        }
        if eof && buf.is_empty() {
            break;
        }
    };
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        take(&mut codec, &mut buf, false);
    }
    take(&mut codec, &mut buf, true);
    out
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
    let split = decode(&[a, b]);
    // Errors (a line too long, one that is no message) may be reported at
    // another read; the messages decoded must be the same, in order.
    let messages = |r: &[Result<String, String>]| -> Vec<String> {
        r.iter().filter_map(|m| m.clone().ok()).collect()
    };
    assert_eq!(
        messages(&whole),
        messages(&split),
        "the messages depend on where a read ends (cut at {at})"
    );
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

//! A response body with the secrets scrubbed: `warden_scrub::Stream`
//! over an HTTP body, in frames of [`FRAME`] bytes (the last one shorter).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http_body::{Body, Frame};
use warden_scrub::{Scrubber, Stream};

/// The size of every frame but the last.
pub(crate) const FRAME: usize = 64 << 10;

/// A scrubbed response body. Trailers are dropped (they could carry an
/// echo and no tool needs them).
pub(crate) struct ScrubBody<B> {
    inner: B,
    stream: Stream,
}

impl<B> ScrubBody<B> {
    pub(super) fn new(inner: B, scrubber: Arc<Scrubber>) -> ScrubBody<B> {
        ScrubBody {
            inner,
            stream: Stream::new(scrubber, FRAME),
        }
    }
}

impl<B> Body for ScrubBody<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = &mut *self;
        loop {
            if let Some(frame) = this.stream.frame() {
                return Poll::Ready(Some(Ok(Frame::data(frame))));
            }
            if this.stream.is_done() {
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => this.stream.end(),
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(mut data) = frame.into_data() {
                        while data.has_remaining() {
                            let chunk = data.chunk();
                            this.stream.push(chunk);
                            let n = chunk.len();
                            data.advance(n);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use http_body_util::BodyExt;

    use super::*;
    use crate::secrets::tests::secrets;

    /// A body sent in the chunks given.
    struct Chunks(VecDeque<Bytes>);

    impl Body for Chunks {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Ready(self.0.pop_front().map(|b| Ok(Frame::data(b))))
        }
    }

    /// The frames a tool reads of `chunks`.
    async fn frames(value: &str, chunks: &[&[u8]]) -> Vec<Bytes> {
        let body = Chunks(chunks.iter().map(|c| Bytes::copy_from_slice(c)).collect());
        let mut body = ScrubBody::new(body, secrets(value).2);
        let mut out = Vec::new();
        while let Some(f) = body.frame().await {
            out.push(f.unwrap().into_data().unwrap());
        }
        out
    }

    #[tokio::test]
    async fn a_body_that_ends_with_part_of_the_secret_arrives_as_one_that_does_not() {
        let value = "s3cr3t-value-0123456789";
        let big = vec![b'x'; FRAME + 100];
        for ends in [&big[..], b"echo: ".as_slice()] {
            let right = [ends, b"s3cr3t-va"].concat();
            let wrong = [ends, b"zzzzzzzzz"].concat();
            let (r, w) = (
                frames(value, &[&right]).await,
                frames(value, &[&wrong]).await,
            );
            let lens = |f: &[Bytes]| f.iter().map(Bytes::len).collect::<Vec<_>>();
            assert_eq!(lens(&r), lens(&w));
            // In any chunks, too.
            let (r2, w2) = (
                frames(value, &[&right[..3], &right[3..]]).await,
                frames(value, &[&wrong[..3], &wrong[3..]]).await,
            );
            assert_eq!(lens(&r2), lens(&w2));
            assert_eq!(lens(&r2), lens(&r));
        }
    }

    #[tokio::test]
    async fn frames_are_full_but_the_last_and_a_split_secret_is_scrubbed() {
        let value = "s3cr3t-value-0123456789";
        let mut body = vec![b'a'; FRAME - 5];
        body.extend_from_slice(value.as_bytes());
        body.extend_from_slice(&vec![b'b'; FRAME]);
        // Three bytes a write, the secret across a frame's edge.
        let chunks: Vec<&[u8]> = body.chunks(3).collect();
        let got = frames(value, &chunks).await;
        assert!(got[..got.len() - 1].iter().all(|f| f.len() == FRAME));
        let all: Vec<u8> = got.concat();
        let text = String::from_utf8(all).unwrap();
        assert!(!text.contains(value));
        assert_eq!(text.matches("[secret key]").count(), 1);
        assert_eq!(text.len(), body.len() - value.len() + "[secret key]".len());
    }
}

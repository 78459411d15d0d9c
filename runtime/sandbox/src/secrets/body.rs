//! A response body with the secrets scrubbed, delivered so that nothing
//! about how it arrives depends on what it says: in frames of a fixed size
//! (the last one shorter), each sent once that many scrubbed bytes are
//! ready. The last bytes received, as many as the longest form less one,
//! always wait for the next ones (a form the next chunk completes would
//! otherwise slip through in halves); how many wait depends on no byte's
//! value, so a tool that makes a host echo its guesses learns nothing from
//! the split, the timing or the length until a guess is the whole secret.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use http_body::{Body, Frame};

use super::Secrets;

/// The size of every frame but the last.
pub(crate) const FRAME: usize = 64 << 10;

/// A scrubbed response body. Trailers are dropped (they could carry an
/// echo and no tool needs them).
pub(crate) struct ScrubBody<B> {
    inner: B,
    secrets: Arc<Secrets>,
    /// Received, not yet scrubbed: at most the hold-back once settled.
    pending: BytesMut,
    /// Scrubbed, waiting to fill a frame.
    ready: BytesMut,
    done: bool,
}

impl<B> ScrubBody<B> {
    pub(super) fn new(inner: B, secrets: Arc<Secrets>) -> ScrubBody<B> {
        ScrubBody {
            inner,
            secrets,
            pending: BytesMut::new(),
            ready: BytesMut::new(),
            done: false,
        }
    }

    /// Scrubs all that no later byte can change: everything but the last
    /// `hold` bytes, cut before a whole form that would straddle the cut.
    fn settle(&mut self) {
        let hold = if self.done { 0 } else { self.secrets.hold() };
        if self.pending.len() <= hold {
            return;
        }
        let cut = self
            .secrets
            .cut_outside_forms(&self.pending, self.pending.len() - hold);
        let head = self.pending.split_to(cut);
        self.ready
            .extend_from_slice(&self.secrets.scrub_bytes(&head));
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
            if this.ready.len() >= FRAME {
                let frame = this.ready.split_to(FRAME).freeze();
                return Poll::Ready(Some(Ok(Frame::data(frame))));
            }
            if this.done {
                this.settle();
                if this.ready.is_empty() {
                    return Poll::Ready(None);
                }
                let last = this.ready.split().freeze();
                return Poll::Ready(Some(Ok(Frame::data(last))));
            }
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => this.done = true,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(mut data) = frame.into_data() {
                        while data.has_remaining() {
                            let chunk = data.chunk();
                            this.pending.extend_from_slice(chunk);
                            let n = chunk.len();
                            data.advance(n);
                        }
                        this.settle();
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
        let mut body = ScrubBody::new(body, Arc::new(secrets(value)));
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

    /// The frames a tool reads of `chunks`, driven without a runtime: the
    /// chunks are always ready.
    fn frames_now(value: &str, chunks: &[Vec<u8>]) -> Vec<Bytes> {
        let body = Chunks(chunks.iter().map(|c| Bytes::copy_from_slice(c)).collect());
        let mut body = ScrubBody::new(body, Arc::new(secrets(value)));
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut out = Vec::new();
        while let Poll::Ready(Some(f)) = Pin::new(&mut body).poll_frame(&mut cx) {
            out.push(f.unwrap().into_data().unwrap());
        }
        out
    }

    /// `hay` with every `[secret key]` marker made one byte that no form
    /// holds (a value such as `secre` is part of the marker itself, which
    /// is no leak, and no form may be read across a marker either).
    fn without_markers(hay: &[u8]) -> Vec<u8> {
        let marker = b"[secret key]";
        let mut out = Vec::with_capacity(hay.len());
        let mut i = 0;
        while i < hay.len() {
            if hay[i..].starts_with(marker) {
                out.push(0xff);
                i += marker.len();
            } else {
                out.push(hay[i]);
                i += 1;
            }
        }
        out
    }

    fn holds(hay: &[u8], form: &[u8]) -> bool {
        hay.windows(form.len()).any(|w| w == form)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 192,
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// The differential property of the scrubber (issue: fuzzed
        /// parsers): for a random secret and random bytes around it, in
        /// each of its documented forms, placed anywhere (at a frame's edge
        /// too) and cut into random chunks, no delivery holds a form of the
        /// value, nor do all of them together; bytes that hold no form
        /// come through unchanged.
        #[test]
        fn no_delivery_holds_a_form_and_other_bytes_come_through_unchanged(
            value in "[!-~]{4,40}",
            form in proptest::prelude::any::<proptest::sample::Index>(),
            before in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            after in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            copies in 0usize..3,
            at_edge in proptest::prelude::any::<bool>(),
            shift in 0usize..96,
            cuts in proptest::collection::vec(proptest::prelude::any::<proptest::sample::Index>(), 0..6),
            inside in proptest::option::of(0usize..512),
            longest in proptest::prelude::any::<bool>(),
        ) {
            let forms = crate::secrets::forms::forms(&value);
            // The longest form half the time: the hold-back is its length
            // less one, and a cut near its end is where that matters.
            let form = if longest {
                forms.iter().max_by_key(|f| f.len()).unwrap()
            } else {
                &forms[form.index(forms.len())]
            };
            // Random bytes, then (at a frame's edge, when asked) filler up
            // to just before it, then the copies, each after more bytes.
            let mut body = before.clone();
            if at_edge {
                let to = (FRAME + shift).saturating_sub(form.len() + body.len());
                body.extend(std::iter::repeat_n(b'.', to));
            }
            // Where the first copy starts: a cut inside it is asked for.
            let first = body.len();
            for _ in 0..copies {
                body.extend_from_slice(form);
                body.extend_from_slice(&after);
            }
            if copies == 0 {
                body.extend_from_slice(&after);
            }
            let mut cuts: Vec<usize> = cuts
                .iter()
                .map(|c| c.index(body.len().max(1)))
                .chain(inside.filter(|_| copies > 0).map(|k| {
                    // Near the end of the copy half the time.
                    let back = if k % 2 == 0 { k / 2 % 4 } else { k / 2 % form.len() };
                    first + form.len().saturating_sub(1 + back).max(1)
                }))
                .filter(|c| (1..body.len()).contains(c))
                .collect();
            cuts.sort_unstable();
            cuts.dedup();
            let mut chunks = Vec::new();
            let mut from = 0;
            for c in cuts.into_iter().chain([body.len()]) {
                chunks.push(body[from..c].to_vec());
                from = c;
            }
            let got = frames_now(&value, &chunks);
            for (i, frame) in got.iter().enumerate() {
                let seen = without_markers(frame);
                for f in &forms {
                    proptest::prop_assert!(
                        !holds(&seen, f),
                        "delivery {i} holds the form {:?}",
                        String::from_utf8_lossy(f)
                    );
                }
            }
            let all: Vec<u8> = got.concat();
            let seen = without_markers(&all);
            for f in &forms {
                proptest::prop_assert!(!holds(&seen, f), "the deliveries together hold a form");
            }
            // Every frame but the last is full: the split says nothing.
            if let Some((_, full)) = got.split_last() {
                proptest::prop_assert!(full.iter().all(|f| f.len() == FRAME));
            }
            if !forms.iter().any(|f| holds(&body, f)) {
                proptest::prop_assert_eq!(all, body);
            }
        }
    }
}

//! The secret scrubber, differentially: for random secrets and random
//! bytes around them, in every documented form (`warden_scrub::forms`),
//! whole or in part, cut into random chunks and delivered in frames of a
//! random size:
//! - no delivery holds a form of a value, nor do all of them together
//!   (the markers that replace forms set apart: a marker is no leak, and
//!   no form may be read across one);
//! - every delivery but the last is a full frame, and no more than the
//!   hold-back ever waits;
//! - what is delivered is the whole body scrubbed at once, however it was
//!   cut, and a body that holds no form comes through unchanged.

use std::sync::Arc;

use warden_scrub::{MIN_LEN, Scrubber, Stream, forms};

/// `data`: parts separated by `0xFF` ([`crate::parts`]):
/// - the body, where `0xFE k j` is form `j` of secret `k` whole, and
///   `0xFD k j n` (`0xFC k j n`) its first (last) `n` bytes; each number
///   taken modulo what there is;
/// - the delivery: the frame size, then the sizes of the chunks the body
///   arrives in, in turn (one byte each; none: 64 bytes, whole);
/// - the secrets' values, one a part (none: `s3cr3t-value`), made one line
///   of at least 8 bytes as warden requires.
pub fn check(data: &[u8]) {
    Case::new(data).check();
}

#[derive(Debug)]
struct Case {
    /// Each value with its forms.
    secrets: Vec<(String, Vec<Vec<u8>>)>,
    body: Vec<u8>,
    chunks: Vec<usize>,
    frame: usize,
}

impl Case {
    fn new(data: &[u8]) -> Case {
        let parts = crate::parts(data);
        let mut secrets: Vec<(String, Vec<Vec<u8>>)> = parts
            .iter()
            .skip(2)
            .take(3)
            .map(|p| {
                let mut value: String = crate::text(p)
                    .chars()
                    .filter(|c| !c.is_control())
                    .take(64)
                    .collect();
                for c in "s3cr3t-k".chars() {
                    if value.len() >= MIN_LEN {
                        break;
                    }
                    value.push(c);
                }
                let forms = forms(&value);
                (value, forms)
            })
            .collect();
        if secrets.is_empty() {
            let value = "s3cr3t-value".to_string();
            secrets.push((value.clone(), forms(&value)));
        }
        let mut body = Vec::new();
        let mut t = parts[0].iter().copied();
        while let Some(b) = t.next() {
            if !(0xFC..=0xFE).contains(&b) {
                body.push(b);
                continue;
            }
            let forms = &secrets[usize::from(t.next().unwrap_or(0)) % secrets.len()].1;
            let form = &forms[usize::from(t.next().unwrap_or(0)) % forms.len()];
            let n = match b {
                0xFE => form.len(),
                _ => usize::from(t.next().unwrap_or(0)) % (form.len() + 1),
            };
            match b {
                0xFC => body.extend_from_slice(&form[form.len() - n..]),
                _ => body.extend_from_slice(&form[..n]),
            }
        }
        let delivery = parts.get(1).copied().unwrap_or_default();
        let frame = delivery.first().map_or(64, |&b| usize::from(b) + 1);
        let chunks = delivery
            .iter()
            .skip(1)
            .map(|&b| usize::from(b) + 1)
            .collect();
        Case {
            secrets,
            body,
            chunks,
            frame,
        }
    }

    fn check(&self) {
        let mut scrubber = Scrubber::default();
        for (k, (value, _)) in self.secrets.iter().enumerate() {
            scrubber.add(value, format!("[secret s{k}]"));
        }
        let scrubber = Arc::new(scrubber);
        let mut stream = Stream::new(scrubber.clone(), self.frame);
        let mut frames = Vec::new();
        let mut rest = &self.body[..];
        let mut sizes = self.chunks.iter().copied().cycle();
        while !rest.is_empty() {
            let n = sizes.next().unwrap_or(rest.len()).min(rest.len());
            stream.push(&rest[..n]);
            rest = &rest[n..];
            assert!(
                stream.waiting() <= scrubber.hold(),
                "{} bytes wait, the hold-back is {}",
                stream.waiting(),
                scrubber.hold()
            );
            frames.extend(std::iter::from_fn(|| stream.frame()));
        }
        stream.end();
        frames.extend(std::iter::from_fn(|| stream.frame()));
        assert!(stream.is_done() && stream.frame().is_none());
        // The markers are found in all that was delivered (a frame may
        // end inside one), then each delivery is looked at on its own.
        let all = frames.concat();
        let seen = self.without_markers(&all);
        let leaks = |hay: &[u8]| {
            self.secrets.iter().find_map(|(value, forms)| {
                forms
                    .iter()
                    .find(|f| holds(hay, f))
                    .map(|f| format!("{value:?} as {:?}", String::from_utf8_lossy(f)))
            })
        };
        let mut at = 0;
        for (i, f) in frames.iter().enumerate() {
            if let Some(leak) = leaks(&seen[at..at + f.len()]) {
                panic!("delivery {i} holds {leak}");
            }
            at += f.len();
        }
        if let Some(leak) = leaks(&seen) {
            panic!("the deliveries together hold {leak}");
        }
        if let Some((_, full)) = frames.split_last() {
            assert!(
                full.iter().all(|f| f.len() == self.frame),
                "a delivery before the last is not a full frame of {}: {:?}",
                self.frame,
                frames.iter().map(|f| f.len()).collect::<Vec<_>>()
            );
        }
        let at_once = scrubber.scrub(&self.body);
        assert_eq!(
            String::from_utf8_lossy(&all),
            String::from_utf8_lossy(&at_once),
            "delivered otherwise than scrubbed at once"
        );
        if !self
            .secrets
            .iter()
            .any(|(_, forms)| forms.iter().any(|f| holds(&self.body, f)))
        {
            assert_eq!(all, self.body, "a body without a form was changed");
        }
    }

    /// `hay` with the bytes of every marker made `0xFF`, which no form
    /// holds (forms are UTF-8): a marker is no leak, not even where its
    /// last bytes and those after it spell a value (a value `]s3cr3t-`
    /// after `[secret s0]`), and no form may be read across one.
    fn without_markers(&self, hay: &[u8]) -> Vec<u8> {
        let markers: Vec<Vec<u8>> = (0..self.secrets.len())
            .map(|k| format!("[secret s{k}]").into_bytes())
            .collect();
        let mut out = hay.to_vec();
        let mut i = 0;
        'bytes: while i < hay.len() {
            for m in &markers {
                if hay[i..].starts_with(m) {
                    out[i..i + m.len()].fill(0xff);
                    i += m.len();
                    continue 'bytes;
                }
            }
            i += 1;
        }
        out
    }
}

fn holds(hay: &[u8], form: &[u8]) -> bool {
    !form.is_empty() && hay.windows(form.len()).any(|w| w == form)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::drive;

    #[test]
    fn seeds() {
        drive::replay("scrub", super::check);
    }

    proptest! {
        #![proptest_config(drive::config(1_500))]

        #[test]
        fn edited_seeds(data in drive::mutated("scrub")) {
            super::check(&data);
        }

        #[test]
        fn cases(data in prop::collection::vec(
            prop_oneof![any::<u8>(), Just(0xFE), Just(0xFD), Just(0xFC), Just(0xFF)],
            0..600,
        )) {
            super::check(&data);
        }
    }
}

//! Text already shown, across the attempts of one completion: a retried
//! answer is reported from where the earlier attempt stopped, so that a cut
//! stream followed by a retry shows the answer once.

use super::ClientEvent;

/// What was reported so far, and what the current attempt has said.
#[derive(Debug, Default)]
pub(crate) struct Shown {
    /// The text reported to the caller.
    shown: String,
    /// The current attempt's text while it is still catching up with
    /// `shown` (empty once it went past it).
    attempt: String,
    catching_up: bool,
}

impl Shown {
    /// A new attempt starts: its text is compared with what was shown.
    pub fn restart(&mut self) {
        self.attempt.clear();
        self.catching_up = !self.shown.is_empty();
    }

    /// Reports the new part of `text`, or a [`ClientEvent::Restart`] and the
    /// whole attempt's text when it diverges from what was shown.
    pub fn text(&mut self, text: &str, on_event: &mut (dyn FnMut(ClientEvent<'_>) + Send)) {
        if !self.catching_up {
            self.shown.push_str(text);
            on_event(ClientEvent::Text(text));
            return;
        }
        self.attempt.push_str(text);
        if self.attempt.len() <= self.shown.len() {
            if self.shown.starts_with(&self.attempt) {
                return;
            }
        } else if self.attempt.starts_with(&self.shown) {
            let new = &self.attempt[self.shown.len()..];
            on_event(ClientEvent::Text(new));
            self.shown.push_str(new);
            self.catching_up = false;
            return;
        }
        on_event(ClientEvent::Restart);
        on_event(ClientEvent::Text(&self.attempt));
        self.shown = std::mem::take(&mut self.attempt);
        self.catching_up = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(s: &mut Shown, pieces: &[&str]) -> Vec<String> {
        let mut out = Vec::new();
        for p in pieces {
            s.text(p, &mut |e| {
                out.push(match e {
                    ClientEvent::Text(t) => t.to_string(),
                    ClientEvent::Restart => "<restart>".into(),
                    ClientEvent::Retry { .. } => "<retry>".into(),
                })
            });
        }
        out
    }

    #[test]
    fn a_retry_reports_only_what_is_new() {
        let mut s = Shown::default();
        assert_eq!(feed(&mut s, &["Hel", "lo wo"]), ["Hel", "lo wo"]);
        s.restart();
        assert_eq!(feed(&mut s, &["Hello", " world", "."]), ["rld", "."]);
    }

    #[test]
    fn a_shorter_retry_says_nothing_and_a_different_one_restarts() {
        let mut s = Shown::default();
        feed(&mut s, &["Hello wo"]);
        s.restart();
        assert!(feed(&mut s, &["Hel"]).is_empty());
        assert_eq!(feed(&mut s, &["p!"]), ["<restart>", "Help!"]);
        assert_eq!(feed(&mut s, &[" ok"]), [" ok"]);
        s.restart();
        assert_eq!(feed(&mut s, &["Help! ok", "?"]), ["?"]);
    }
}

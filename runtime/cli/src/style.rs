//! Terminal styling: colour only on a terminal and without `NO_COLOR`.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Whether stderr gets colours and a spinner.
pub fn stderr_is_fancy() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Wraps `text` in an ANSI colour when `on`.
pub fn paint(on: bool, code: &str, text: &str) -> String {
    if on {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// A spinner on stderr while waiting for the model; stops on drop.
pub struct Spinner {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Spinner {
    /// Starts spinning (does nothing when stderr is not a fancy terminal).
    pub fn start(enabled: bool) -> Spinner {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = enabled.then(|| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    stderr_text!("\r{} thinking", frames[i % frames.len()]);
                    i += 1;
                    std::thread::sleep(Duration::from_millis(80));
                }
                stderr_text!("\r\x1b[2K");
            })
        });
        Spinner { stop, thread }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

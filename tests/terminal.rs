//! `warden` under a pseudo-terminal (util-linux `script`), driven key by
//! key: the test waits for text to appear, then types.

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A running `warden` on a terminal.
pub struct Terminal {
    child: Child,
    stdin: ChildStdin,
    screen: Arc<(Mutex<Vec<u8>>, Condvar)>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Terminal {
    /// Runs `cmd`'s program and arguments through `script`, keeping its
    /// directory and environment.
    pub fn start(cmd: &Command) -> Terminal {
        let quoted: Vec<String> = std::iter::once(cmd.get_program())
            .chain(cmd.get_args())
            .map(|a| format!("'{}'", a.to_str().unwrap().replace('\'', r"'\''")))
            .collect();
        let mut script = Command::new("script");
        script
            .args(["-qfec", &quoted.join(" "), "/dev/null"])
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(dir) = cmd.get_current_dir() {
            script.current_dir(dir);
        }
        for (k, v) in cmd.get_envs() {
            if let Some(v) = v {
                script.env(k, v);
            }
        }
        let mut child = script.spawn().expect("util-linux `script` is needed");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let screen = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
        let reader = std::thread::spawn({
            let screen = screen.clone();
            move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = stdout.read(&mut buf) {
                    let (lock, cv) = &*screen;
                    lock.lock().unwrap().extend_from_slice(&buf[..n]);
                    cv.notify_all();
                    if n == 0 {
                        break;
                    }
                }
            }
        });
        Terminal {
            child,
            stdin,
            screen,
            reader: Some(reader),
        }
    }

    /// Types `keys`.
    pub fn send(&mut self, keys: &str) {
        self.stdin.write_all(keys.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Everything shown so far (output and echoed keys).
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.screen.0.lock().unwrap()).into_owned()
    }

    /// Waits until `text` has been shown `times` times; panics with the
    /// screen after `limit`.
    pub fn wait_for(&self, text: &str, times: usize, limit: Duration) {
        self.wait_until(limit, |screen| screen.matches(text).count() >= times);
    }

    /// Waits until `done` holds for the screen; panics with the screen
    /// after `limit`.
    pub fn wait_until(&self, limit: Duration, done: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + limit;
        let (lock, cv) = &*self.screen;
        let mut shown = lock.lock().unwrap();
        loop {
            if done(&String::from_utf8_lossy(&shown)) {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "not shown within {limit:?}:\n{}",
                String::from_utf8_lossy(&shown)
            );
            shown = cv.wait_timeout(shown, left).unwrap().0;
        }
    }

    /// Waits for the exit (killing it after `limit`, then panicking) and
    /// returns the exit code and the whole screen.
    pub fn finish(mut self, limit: Duration) -> (i32, String) {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // The reader ends at the end of the output, once script exits.
                if let Some(reader) = self.reader.take() {
                    reader.join().unwrap();
                }
                return (status.code().unwrap_or(-1), self.screen());
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("still running after {limit:?}:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

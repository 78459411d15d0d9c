//! `mock-llm`: the scripted model CI runs the README's main command
//! against. It prints its base URL, answers one task (list the files, read
//! the README, answer), and exits once the script is used up (or after five
//! minutes).

use std::io::Write;
use std::time::{Duration, Instant};

use warden_mock_llm::{MockLlm, answer, calls};

fn main() {
    let script = vec![
        calls(&[("c1", "list_files", r#"{"path":"."}"#)]),
        calls(&[("c2", "read_file", r#"{"path":"README.md","limit":20}"#)]),
        answer(
            "This workspace is warden, a sandboxed tool runtime for LLM agents. \
             Its tools run as WebAssembly components with only the access the policy grants.",
        ),
    ];
    let steps = script.len();
    let mock = MockLlm::start(script);
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", mock.base_url());
    let _ = out.flush();
    drop(out);
    let start = Instant::now();
    while mock.requests().len() < steps && start.elapsed() < Duration::from_secs(300) {
        std::thread::sleep(Duration::from_millis(100));
    }
    // Let the last answer finish streaming.
    std::thread::sleep(Duration::from_millis(500));
}

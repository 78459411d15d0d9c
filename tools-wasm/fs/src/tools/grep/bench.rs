//! The native benchmark of grep's search core against `rg -j1`; run by
//! bench/compare.sh.

use std::path::Path;
use std::time::Duration;

use super::*;

/// Times the search natively on `GREP_BENCH_DIR` (a directory, or one
/// file searched on its own) for each `GREP_BENCH_PATTERNS` (separated
/// by `;;`, `(?i)` first for case-insensitive), all matches kept, each
/// run followed by one of `rg -j1` under the same load; see
/// bench/README.md. Does nothing without `GREP_BENCH_DIR`.
#[test]
#[ignore = "a benchmark: needs GREP_BENCH_DIR"]
fn bench_tree() {
    let Ok(dir) = std::env::var("GREP_BENCH_DIR") else {
        return;
    };
    let patterns = std::env::var("GREP_BENCH_PATTERNS").unwrap_or("needle_xyz".into());
    let runs: usize = std::env::var("GREP_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let rg_out = std::env::temp_dir().join(format!("grep-bench-{}", std::process::id()));
    let median = |mut times: Vec<f64>| {
        times.sort_by(f64::total_cmp);
        times[times.len() / 2]
    };
    for pattern in patterns.split(";;") {
        let (case_insensitive, pattern) = match pattern.strip_prefix("(?i)") {
            Some(p) => (true, p),
            None => (false, pattern),
        };
        let (mut ours, mut rg) = (Vec::new(), Vec::new());
        let mut matches = 0;
        for _ in 0..runs {
            let started = std::time::Instant::now();
            let regex = compile(pattern, case_insensitive).unwrap();
            let mut s = Search::new(regex, usize::MAX, Deadline::new(Duration::MAX));
            if Path::new(&dir).is_file() {
                let mut f = std::fs::File::open(&dir).unwrap();
                s.read(&dir, &mut f, false).unwrap();
            } else {
                let (_, summary) = s.tree(&dir, Filter::default(), &[], None).unwrap();
                assert!(summary.notes().len() <= 1, "{:?}", summary.notes());
            }
            ours.push(started.elapsed().as_secs_f64());
            matches = s.matches;
            // To a file: rg stops early when it writes to /dev/null.
            let started = std::time::Instant::now();
            let mut cmd = std::process::Command::new("rg");
            cmd.args(["-j1", "-n", "--no-heading"]);
            if case_insensitive {
                cmd.arg("-i");
            }
            let out = std::fs::File::create(&rg_out).unwrap();
            if cmd
                .arg("-e")
                .arg(pattern)
                .arg(&dir)
                .stdout(out)
                .status()
                .is_ok()
            {
                rg.push(started.elapsed().as_secs_f64());
            }
        }
        let rg_matches =
            std::fs::read(&rg_out).map_or(0, |o| memchr::memchr_iter(b'\n', &o).count());
        let ours = median(ours);
        print!("bench /{pattern}/ i={case_insensitive}: ours {matches} matches, median {ours:.3}s");
        if rg.is_empty() {
            println!(" (rg not installed)");
        } else {
            let rg = median(rg);
            println!(
                "; rg -j1 {rg_matches} matches, median {rg:.3}s; rg time / ours = {:.2}",
                rg / ours
            );
        }
    }
    let _ = std::fs::remove_file(&rg_out);
}

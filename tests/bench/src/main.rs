//! `make bench`: figures as ratios to baselines measured in the same run,
//! because the machine is noisy. Targets are shown, never asserted.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use warden_tests::{Sandbox, warden_bin};

// As in the `warden` binary: host allocations made for a call count
// against its memory limit, so the figures include that bookkeeping.
#[global_allocator]
static ALLOC: warden_sandbox::HostAlloc = warden_sandbox::HostAlloc;

mod agent;
mod authoring;
mod search;
mod web;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(f());
                t.elapsed()
            })
            .collect(),
    )
}

/// `--profile-idle`: what one call after a second of sleep costs beyond a
/// warm one, in page faults and context switches (counts, not times, so a
/// noisy machine does not blur them).
fn profile_idle(tools: &warden_tests::Tools, args: &str) {
    /// Minor and major page faults of the process so far.
    fn faults() -> (u64, u64) {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        // Fields after the command name, which ends with the last ')'.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<u64> = rest
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        (
            f.get(7).copied().unwrap_or(0),
            f.get(9).copied().unwrap_or(0),
        )
    }
    for round in 0..6 {
        if round > 0 {
            std::thread::sleep(Duration::from_secs(1));
        }
        for call in 0..3 {
            let (f0, s0) = (faults(), context_switches().unwrap_or(0));
            let t = Instant::now();
            let mut took = Duration::ZERO;
            tools.call_then("read_file", args, |o| {
                took = t.elapsed();
                std::hint::black_box(o);
            });
            let (f1, s1) = (faults(), context_switches().unwrap_or(0));
            println!(
                "round {round} call {call}: {:>10}  minor faults {:>3}  major {:>2}  \
                 context switches {:>2}",
                us(took),
                f1.0 - f0.0,
                f1.1 - f0.1,
                s1 - s0
            );
        }
    }
}

/// Samples per idle measurement, one second apart.
const IDLE_ROUNDS: usize = 9;

/// Runs `f` after a second of sleep and times it.
fn after_sleep<T>(f: impl FnOnce() -> T) -> Duration {
    std::thread::sleep(Duration::from_secs(1));
    let t = Instant::now();
    std::hint::black_box(f());
    t.elapsed()
}

/// Calls after a second of sleep: made as the agent makes them, with the
/// instance made in the call, a native read, a spawned `cat`.
fn idle_rows(
    tools: &warden_tests::Tools,
    args: &str,
    file: &std::path::Path,
) -> (Duration, Duration, Duration, Duration) {
    // As between the turns of an agent: the process was idle a while. The
    // four are interleaved, one sample each per round, so that a noisy
    // second hits all of them alike. A call made as the agent makes it
    // answers in the instance its previous call made ahead (timed until its
    // result is delivered, as the agent gets it); a one-off call makes its
    // instance in the call.
    let (mut w, mut m, mut n, mut c) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..IDLE_ROUNDS {
        tools.call("read_file", args);
        std::thread::sleep(Duration::from_secs(1));
        let t = Instant::now();
        tools.call_then("read_file", args, |o| {
            let took = t.elapsed();
            assert!(o.result.is_ok());
            w.push(took);
        });
        // Uses up the instance made ahead; the next makes its own.
        tools.call_once("read_file", args);
        m.push(after_sleep(|| tools.call_once("read_file", args)));
        n.push(after_sleep(|| std::fs::read_to_string(file).unwrap()));
        c.push(after_sleep(|| spawn(Command::new("/bin/cat").arg(file))));
    }
    (median(w), median(m), median(n), median(c))
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn spawn(cmd: &mut Command) {
    let status = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{cmd:?} failed");
}

/// CPU time used so far by every thread of this process (Linux), so that
/// work moved off a call's path still shows.
fn process_cpu() -> Option<Duration> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(total))
}

/// Context switches so far of every thread of this process (Linux): a
/// process that sits idle should add none.
fn context_switches() -> Option<u64> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let status = std::fs::read_to_string(task.ok()?.path().join("status")).ok()?;
        for line in status.lines() {
            if let Some(v) = line
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                total += v.trim().parse::<u64>().ok()?;
            }
        }
    }
    Some(total)
}

fn verdict(ok: bool) -> &'static str {
    if ok { "meets target" } else { "MISSES target" }
}

fn main() {
    let sb = Sandbox::new();
    let file = sb.ws.join("4k.txt");
    let line = "the quick brown fox jumps over the lazy dog, 0123456789 abcdefghij\n";
    let content: String = line.repeat(4096 / line.len() + 1)[..4096].to_string();
    std::fs::write(&file, &content).unwrap();
    let tools = sb.toolset(&[]);
    let args = r#"{"path":"4k.txt"}"#;
    assert!(tools.call("read_file", args).result.is_ok());

    let missing = r#"{"path":"no-such-file.txt"}"#;
    assert!(tools.call("read_file", missing).result.is_err());

    // A long loop of one call, for `perf record` or callgrind:
    // `--profile-read` (the 4 KiB read), `--profile-missing` (a read of a
    // missing file: guest start-up and one failed open), `--profile-upper`
    // (the smallest component). `--calls N` sets the count (default 20000).
    // `--profile-idle` counts page faults and context switches of calls
    // made after a second of sleep. `--profile-agent` runs the agent
    // overhead measurement (50 turns each) until `--calls` turns are done.
    // `--profile-cold` times `--calls` calls each made after 64 MiB of
    // memory was swept (cold caches and TLB, as after idle, without the
    // sleep), or each after `--sleep MS` (100 ms is as cold as 1 s here):
    // read_file, or `--args JSON` for it, or `--upper`, or
    // `--native` (the same read with std::fs); `--pages` also prints the
    // pages each call touched, per mapping, until its answer. `--idle`
    // prints only the after-idle rows, `--search` only the search rows,
    // `--exec` only the exec rows.
    let argv: Vec<String> = std::env::args().collect();
    let calls = argv
        .iter()
        .position(|a| a == "--calls")
        .and_then(|i| argv.get(i + 1))
        .map_or(20_000, |n| n.parse::<usize>().expect("--calls N"));
    let profile = |name: &str, args: &str, t: &warden_tests::Tools| {
        for _ in 0..calls {
            t.call(name, args);
        }
    };
    if argv.iter().any(|a| a == "--profile-read") {
        return profile("read_file", args, &tools);
    }
    if argv.iter().any(|a| a == "--profile-missing") {
        return profile("read_file", missing, &tools);
    }
    if argv.iter().any(|a| a == "--profile-upper") {
        let sb2 = Sandbox::new();
        sb2.policy("[tools.uppercase]\n");
        let t = sb2.toolset(&[warden_tests::guests::UPPERCASE]);
        return profile("uppercase", r#"{"text":"a"}"#, &t);
    }
    if argv.iter().any(|a| a == "--profile-idle") {
        return profile_idle(&tools, args);
    }
    if argv.iter().any(|a| a == "--profile-cold") {
        // Calls after the caches were swept (no sleep): the cold path, many
        // times, for `perf record -e cpu-clock`.
        let mut took = Vec::new();
        let native = argv.iter().any(|a| a == "--native");
        let sb2 = Sandbox::new();
        sb2.policy("[tools.uppercase]\n");
        let upper = sb2.toolset(&[warden_tests::guests::UPPERCASE]);
        let (tools, name, args) = if argv.iter().any(|a| a == "--upper") {
            (&upper, "uppercase", r#"{"text":"a"}"#)
        } else if let Some(i) = argv.iter().position(|a| a == "--args") {
            (&tools, "read_file", argv[i + 1].as_str())
        } else {
            (&tools, "read_file", args)
        };
        let sleep = argv
            .iter()
            .position(|a| a == "--sleep")
            .map(|i| Duration::from_millis(argv[i + 1].parse().expect("--sleep MS")));
        let mut sweep = if sleep.is_none() {
            vec![0u8; 64 << 20]
        } else {
            Vec::new()
        };
        // `--spin US`: after the sleep, spin that long on the CPU (no
        // memory touched) before the call: what waking the core costs
        // apart from what its caches lost.
        let pages = argv.iter().any(|a| a == "--pages");
        let spin = argv
            .iter()
            .position(|a| a == "--spin")
            .map(|i| Duration::from_micros(argv[i + 1].parse().expect("--spin US")));
        for i in 0..calls {
            if let Some(d) = sleep {
                std::thread::sleep(d);
                if let Some(s) = spin {
                    let t = Instant::now();
                    while t.elapsed() < s {
                        std::hint::spin_loop();
                    }
                }
            } else {
                for b in sweep.iter_mut().step_by(64) {
                    *b = b.wrapping_add(i as u8);
                }
                std::hint::black_box(&sweep);
            }
            if pages {
                std::fs::write("/proc/self/clear_refs", "1").unwrap();
            }
            let t = Instant::now();
            if native {
                std::hint::black_box(std::fs::read_to_string(&file).unwrap());
                took.push(t.elapsed());
                continue;
            }
            tools.call_then(name, args, |o| {
                took.push(t.elapsed());
                std::hint::black_box(o);
                if pages {
                    referenced(i + 1 == calls);
                }
            });
        }
        let name = if native { "native read" } else { name };
        println!("cold {name} (median of {calls}): {}", us(median(took)));
        return;
    }
    if argv.iter().any(|a| a == "--search") {
        return search::run();
    }
    if argv.iter().any(|a| a == "--exec") {
        return exec_rows();
    }
    if argv.iter().any(|a| a == "--idle") {
        let (w, m, n, c) = idle_rows(&tools, args, &file);
        println!(
            "after 1 s: {} (made in call {}, native {}, cat {})",
            us(w),
            us(m),
            us(n),
            us(c)
        );
        return;
    }
    if argv.iter().any(|a| a == "--big-step") {
        for transcript in [false, true] {
            let (own, parse) = agent::big_step(60, transcript);
            println!(
                "1 MiB call, agent (transcript {transcript}): {} ({:.2}x one parse, {})",
                us(own),
                ratio(own, parse),
                us(parse)
            );
        }
        return;
    }
    if argv.iter().any(|a| a == "--big-call") {
        let (own, parse) = agent::big_call(15);
        println!(
            "1 MiB call, with HTTP: {} ({:.2}x one parse, {})",
            us(own),
            ratio(own, parse),
            us(parse)
        );
        return;
    }
    if argv.iter().any(|a| a == "--profile-agent") {
        for _ in 0..calls.div_ceil(50) {
            agent::overhead(50);
        }
        return;
    }
    // Warm up, then measure.
    for _ in 0..200 {
        tools.call("read_file", args);
    }
    let cpu_before = process_cpu();
    let calls_start = Instant::now();
    let sandboxed = time(3000, || tools.call("read_file", args));
    let cpu_per_call = process_cpu()
        .zip(cpu_before)
        .map(|(after, before)| (after - before) / 3000);
    let back_to_back = calls_start.elapsed() / 3000;
    let spaced = median(
        (0..300)
            .map(|_| {
                std::thread::sleep(Duration::from_millis(1));
                let t = Instant::now();
                std::hint::black_box(tools.call("read_file", args));
                t.elapsed()
            })
            .collect(),
    );
    let (after_idle, made_idle, native_idle, cat_idle) = idle_rows(&tools, args, &file);
    // Idle means idle: no thread wakes while nothing runs.
    let idle_switches = {
        let before = context_switches();
        std::thread::sleep(Duration::from_secs(5));
        context_switches().zip(before).map(|(a, b)| a - b)
    };
    let missing_file = time(3000, || tools.call("read_file", missing));
    let native = time(3000, || std::fs::read_to_string(&file).unwrap());
    let tiny = {
        let sb2 = Sandbox::new();
        sb2.policy("[tools.uppercase]\n");
        let t = sb2.toolset(&[warden_tests::guests::UPPERCASE]);
        for _ in 0..200 {
            t.call("uppercase", r#"{"text":"a"}"#);
        }
        time(3000, || t.call("uppercase", r#"{"text":"a"}"#))
    };
    let cat = time(300, || spawn(Command::new("/bin/cat").arg(&file)));

    println!("read_file on a 4 KiB file (median)");
    println!(
        "  uppercase, smallest tool   {:>12}   (sandbox floor: the smallest component, same path)",
        us(tiny)
    );
    println!("  native std::fs read        {:>12}", us(native));
    println!(
        "  warden read_file (sandbox) {:>12}   ({:.0}x native; calls back to back)",
        us(sandboxed),
        ratio(sandboxed, native)
    );
    println!(
        "  read_file, 1 ms apart      {:>12}   ({:.2}x back to back)",
        us(spaced),
        ratio(spaced, sandboxed)
    );
    println!(
        "  read_file, after 1 s idle  {:>12}   ({:.2}x back to back; as between agent turns: \
         the instance was made ahead by the previous call)",
        us(after_idle),
        ratio(after_idle, sandboxed),
    );
    println!(
        "    instance made in call    {:>12}   ({:.2}x the above; a one-off call, as `warden \
         tools call`)",
        us(made_idle),
        ratio(made_idle, after_idle)
    );
    println!(
        "    native read, after 1 s   {:>12}   (warden {:.1}x native, {:.1}x with the instance \
         made in the call)",
        us(native_idle),
        ratio(after_idle, native_idle),
        ratio(made_idle, native_idle)
    );
    println!(
        "    spawn cat, after 1 s     {:>12}   (warden {:.1}x faster than cat, {:.1}x with the \
         instance made in the call)",
        us(cat_idle),
        ratio(cat_idle, after_idle),
        ratio(cat_idle, made_idle)
    );
    if let Some(n) = idle_switches {
        println!(
            "  idle 5 s after calls       {n:>9} context switches of all threads (target <= 5: {})",
            verdict(n <= 5)
        );
    }
    if let Some(cpu) = cpu_per_call {
        println!(
            "  CPU per call, all threads  {:>12}   ({:.0}% of the {} each call took back to back)",
            us(cpu),
            100.0 * ratio(cpu, back_to_back),
            us(back_to_back)
        );
    }
    println!(
        "  read_file, missing file    {:>12}   (fs start-up + one failed open)",
        us(missing_file)
    );
    println!("  spawn /bin/cat             {:>12}", us(cat));
    let speedup = ratio(cat, sandboxed);
    println!(
        "  sandboxed call is {speedup:.1}x faster than spawning cat (target >= 15x: {}); {} (target <= 50 µs: {})",
        verdict(speedup >= 15.0),
        us(sandboxed),
        verdict(sandboxed <= Duration::from_micros(50))
    );

    println!();
    println!("agent overhead per turn, model excluded (50 tools, 100 messages, median)");
    let (turn, plain) = agent::overhead(50);
    let own = turn.saturating_sub(plain);
    println!(
        "  plain POST of the same body {:>11}   (baseline: HTTP to the mock)",
        us(plain)
    );
    println!(
        "  agent turn                 {:>12}   ({:.2}x baseline; own cost {}, target <= 1 ms: {})",
        us(turn),
        ratio(turn, plain),
        us(own),
        verdict(own <= Duration::from_millis(1))
    );

    let (step, one_parse) = agent::big_step(30, false);
    println!(
        "  a call with 1 MiB of arguments {:>8}   ({:.2}x one serde_json parse of them, {}; \
         the agent's own handling; target <= 3: {})",
        us(step),
        ratio(step, one_parse),
        us(one_parse),
        verdict(ratio(step, one_parse) <= 3.0)
    );
    let (recorded, one_parse) = agent::big_step(30, true);
    println!(
        "    with the transcript      {:>12}   ({:.2}x one parse: its 1 MiB line serialized and \
         written to the session file)",
        us(recorded),
        ratio(recorded, one_parse),
    );
    let (wire, one_parse) = agent::big_call(15);
    println!(
        "    with the HTTP client     {:>12}   ({:.2}x one parse: the reply read and the call \
         written back in the next request too)",
        us(wire),
        ratio(wire, one_parse),
    );

    exec_rows();

    web::run();

    authoring::run();
    if argv.iter().any(|a| a == "--sandbox-only") {
        return;
    }
    search::run();

    println!();
    println!("warden tools list, wall time (median)");
    let bin = warden_bin();
    let list = |cache: &Path| {
        let mut c = sb.warden();
        c.env("XDG_CACHE_HOME", cache).args(["tools", "list"]);
        spawn(&mut c);
    };
    let spawn_true = time(30, || spawn(&mut Command::new("/bin/true")));
    let warm_cache = tempfile::tempdir().unwrap();
    list(warm_cache.path());
    let warm = time(30, || list(warm_cache.path()));
    let cold = time(5, || {
        let fresh = tempfile::tempdir().unwrap();
        list(fresh.path())
    });
    println!("  spawn /bin/true (baseline) {:>12}", ms(spawn_true));
    println!(
        "  warm cache                 {:>12}   ({:.1}x spawn baseline; target <= 20 ms: {})",
        ms(warm),
        ratio(warm, spawn_true),
        verdict(warm <= Duration::from_millis(20))
    );
    println!(
        "  cold cache                 {:>12}   ({:.1}x warm)",
        ms(cold),
        ratio(cold, warm)
    );
    println!("  binary: {}", bin.display());
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

/// The exec rows: `true` confined by each mechanism against a plain spawn.
fn exec_rows() {
    println!();
    println!("exec: `true` as a confined process (median of 30)");
    let (confined, alone, unconfined) = exec_true();
    println!(
        "  spawn /bin/true, unconfined {:>11}   (baseline)",
        us(unconfined)
    );
    println!(
        "  confined, namespaces       {:>12}   ({:.1}x baseline: helper, namespaces, Landlock, seccomp, init)",
        us(confined),
        ratio(confined, unconfined)
    );
    println!(
        "  confined, Landlock alone   {:>12}   ({:.1}x baseline: helper, Landlock, seccomp)",
        us(alone),
        ratio(alone, unconfined)
    );
}

/// A confined `true` (run by the helper warden embeds) under each
/// mechanism, and a plain spawn of `true`, interleaved so that a noisy
/// moment hits all alike.
fn exec_true() -> (Duration, Duration, Duration) {
    use warden_confine::Confinement;
    // The helper warden embeds and runs (`make helper`), from its file.
    let helper = warden_tests::helper_bin();
    assert!(helper.is_file(), "{} is not built", helper.display());
    warden_confine::set_helper(helper);
    let program = ["/usr/bin/true", "/bin/true"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("a `true` program");
    let spec = |c| {
        let mut s = warden_confine::Spec::new(program, "/");
        s.confinement = c;
        s
    };
    let (ns, alone) = (spec(Confinement::Namespaces), spec(Confinement::Landlock));
    for s in [&ns, &alone] {
        let done = warden_confine::run(s).expect("confinement available for the benchmark");
        assert_eq!(done.status, warden_confine::Status::Exited(0));
    }
    let (mut c, mut a, mut u) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..30 {
        let t = Instant::now();
        warden_confine::run(&ns).unwrap();
        c.push(t.elapsed());
        let t = Instant::now();
        warden_confine::run(&alone).unwrap();
        a.push(t.elapsed());
        let t = Instant::now();
        spawn(&mut Command::new(program));
        u.push(t.elapsed());
    }
    (median(c), median(a), median(u))
}

/// The pages of each mapping touched since `/proc/self/clear_refs` was
/// last written (`--pages`), most first when `list`.
fn referenced(list: bool) {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("/proc/self/smaps");
    let mut mapping = "";
    let mut rows = Vec::new();
    for line in smaps.lines() {
        match line.strip_prefix("Referenced:") {
            Some(kb) => {
                let kb: u64 = kb.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
                if kb > 0 {
                    rows.push((kb / 4, mapping));
                }
            }
            // A mapping's first line starts with its address range.
            None if line.starts_with(|c: char| c.is_ascii_hexdigit()) && line.contains('-') => {
                mapping = line;
            }
            None => {}
        }
    }
    println!("touched {} pages", rows.iter().map(|r| r.0).sum::<u64>());
    if list {
        rows.sort_by_key(|r| std::cmp::Reverse(r.0));
        for (pages, mapping) in rows {
            println!("  {pages:5}  {mapping}");
        }
    }
}

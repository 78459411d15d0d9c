//! `confined DIR -- PROGRAM ARGS...`: runs PROGRAM confined with DIR
//! read-write (the crate's helper is this example itself).

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(warden_confine::HELPER_ARG) {
        warden_confine::helper_main(&args[2..]);
    }
    match warden_confine::probe() {
        Ok(m) => eprintln!("confinement: {m}"),
        Err(e) => eprintln!("{e}"),
    }
    let dir = &args[1];
    let mut spec = warden_confine::Spec::new(&args[3], dir);
    spec.args = args[4..].to_vec();
    spec.write = vec![dir.into()];
    spec.timeout = std::time::Duration::from_secs(5);
    spec.processes = 50;
    spec.output = 2000;
    spec.env = vec![("PATH".into(), "/root/.cargo/bin:/usr/bin:/bin".into())];
    for (k, v) in std::env::vars() {
        if let Some(name) = k.strip_prefix("CONFINED_ENV_") {
            spec.env.push((name.into(), v));
        }
    }
    if let Ok(r) = std::env::var("CONFINED_READ") {
        spec.read = r.split(':').map(Into::into).collect();
    }
    if let Ok(t) = std::env::var("CONFINED_TIMEOUT") {
        spec.timeout = std::time::Duration::from_secs(t.parse().unwrap());
    }
    if let Ok(m) = std::env::var("CONFINED_MEMORY_MB") {
        spec.memory = m.parse::<u64>().unwrap() << 20;
    }
    let t = std::time::Instant::now();
    let done = warden_confine::run(&spec);
    eprintln!("{:?} in {:?}", done, t.elapsed());
}

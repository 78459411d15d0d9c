//! The confinement helper on its own: what `warden __confine` runs, in a
//! binary a fraction of warden's size. Starting it costs a command about a
//! millisecond less than starting warden (whose relocations alone fault in
//! some 350 pages), so warden embeds this one and runs it from memory (see
//! `warden_confine::set_helper_image`).

fn main() {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() != Some(warden_confine::HELPER_ARG) {
        eprintln!(
            "warden-confine-helper is started by warden to confine a command; it is not run by hand"
        );
        std::process::exit(2);
    }
    let rest: Vec<String> = args.collect();
    warden_confine::helper_main(&rest)
}

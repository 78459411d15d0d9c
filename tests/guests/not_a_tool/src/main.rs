//! A plain WASI command: a valid component that does not export warden's
//! `tool` interface, so the host must refuse to load it as a tool.

fn main() {
    println!("hello");
}

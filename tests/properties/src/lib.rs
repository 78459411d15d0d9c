//! The properties of warden's parsers of untrusted bytes, one module per
//! parser, each a `check(&[u8])` that panics when its property fails.
//!
//! Two drivers run the same checks: the cargo-fuzz targets in `fuzz/`
//! (libFuzzer, nightly, `make fuzz`), and bounded proptest runs on stable
//! in this crate's tests (`make test`), which also replay every seed in
//! `fuzz/seeds/<target>/`. An input of several parts separates them with a
//! `0xFF` byte, which UTF-8 text never contains ([`parts`]).
//!
//! ```
//! // A policy whose error points at line 2.
//! warden_properties::policy::check(b"approval = \"never\"\nbogus = 1\n");
//! ```

pub mod jsonrpc;
pub mod paths;
pub mod policy;
pub mod scrub;
pub mod sse;
pub mod textproto;
pub mod trust;

#[cfg(test)]
mod drive;
mod input;

pub use input::{parts, text};

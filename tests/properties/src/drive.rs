//! The proptest driver of the checks (tests only): the seeds of a fuzz
//! target, the seeds with random edits, and a bounded number of cases.

use std::path::PathBuf;

use proptest::prelude::*;
use proptest::test_runner::Config;

/// The cases each property runs in `make test`: enough to catch what the
/// seeds and a few edits reach, few enough that all run in seconds.
pub fn config(cases: u32) -> Config {
    Config {
        cases,
        // Shrinking stays bounded too; a failure still prints its input.
        max_shrink_iters: 2_000,
        failure_persistence: None,
        ..Config::default()
    }
}

/// The seed corpus of fuzz target `target`, `fuzz/seeds/<target>/`, in
/// name order; there must be some.
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/seeds")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let seeds: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    assert!(!seeds.is_empty(), "no seeds in {}", dir.display());
    seeds
}

/// Runs `check` on every seed of `target`.
pub fn replay(target: &str, check: fn(&[u8])) {
    for seed in seeds(target) {
        check(&seed);
    }
}

/// One edit of a byte string: where (a fraction of its length), what.
#[derive(Debug, Clone)]
enum Edit {
    Insert(u16, Vec<u8>),
    Delete(u16, u8),
    Replace(u16, u8),
    /// Copies a stretch of the input elsewhere in it.
    Repeat(u16, u8, u16),
}

fn edit() -> impl Strategy<Value = Edit> {
    let bytes = prop::collection::vec(
        prop_oneof![
            any::<u8>(),
            // Bytes that mean something to the parsers, more often.
            prop::sample::select(b"\n\r\"'\\[]{}()<>:,=./` #-_\0\xff".to_vec()),
        ],
        1..6,
    );
    prop_oneof![
        (any::<u16>(), bytes).prop_map(|(at, b)| Edit::Insert(at, b)),
        (any::<u16>(), 1..16u8).prop_map(|(at, n)| Edit::Delete(at, n)),
        (any::<u16>(), any::<u8>()).prop_map(|(at, b)| Edit::Replace(at, b)),
        (any::<u16>(), 1..32u8, any::<u16>()).prop_map(|(at, n, to)| Edit::Repeat(at, n, to)),
    ]
}

fn at(frac: u16, len: usize) -> usize {
    (frac as usize * (len + 1)) >> 16
}

fn apply(mut data: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        match e {
            Edit::Insert(f, b) => {
                let i = at(*f, data.len());
                data.splice(i..i, b.iter().copied());
            }
            Edit::Delete(f, n) => {
                let i = at(*f, data.len());
                let end = (i + *n as usize).min(data.len());
                data.drain(i..end);
            }
            Edit::Replace(f, b) => {
                if !data.is_empty() {
                    let i = at(*f, data.len() - 1);
                    data[i] = *b;
                }
            }
            Edit::Repeat(f, n, to) => {
                let i = at(*f, data.len());
                let end = (i + *n as usize).min(data.len());
                let piece = data[i..end].to_vec();
                let j = at(*to, data.len());
                data.splice(j..j, piece);
            }
        }
    }
    data
}

/// A seed of `target` with a few random edits.
pub fn mutated(target: &str) -> impl Strategy<Value = Vec<u8>> {
    let seeds = seeds(target);
    (
        prop::sample::select(seeds),
        prop::collection::vec(edit(), 0..6),
    )
        .prop_map(|(seed, edits)| apply(seed, &edits))
}

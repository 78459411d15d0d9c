//! The undo records: turns pruned, undone paths noted and told.

use warden_state::StateDir;

use super::journal::{Journal, mark_running};
use super::store::{note_undone, prune, read_undone, turns};

/// Pruning keeps the turn another warden is running, however old:
/// that warden's next record would name snapshots that are gone.
#[test]
fn pruning_keeps_a_turn_that_is_still_running() {
    let base = tempfile::tempdir().unwrap();
    let dir = StateDir::open(base.path(), "undo").unwrap();
    let ids: Vec<String> = (0..5).map(|i| format!("{i:015}-s{i}")).collect();
    for id in &ids {
        dir.write_atomic(format!("{id}.json"), b"{}").unwrap();
        dir.write_atomic(format!("{id}.0.blob"), b"x").unwrap();
    }
    let running = mark_running(&dir, &ids[0]).expect("a running mark");
    // A mark no warden holds any more (its warden was killed).
    drop(mark_running(&dir, &ids[1]));
    prune(&dir, 2);
    let left = turns(&dir).unwrap();
    assert_eq!(left, [ids[0].clone(), ids[3].clone(), ids[4].clone()]);
    assert!(dir.read(format!("{}.0.blob", ids[0])).unwrap().is_some());
    drop(running);
    prune(&dir, 2);
    assert_eq!(turns(&dir).unwrap(), [ids[3].clone(), ids[4].clone()]);
}

/// What the model was told goes; what another warden's undo added
/// meanwhile stays for the next message.
#[test]
fn only_the_undone_paths_the_model_was_told_of_are_forgotten() {
    let base = tempfile::tempdir().unwrap();
    let journal = Journal::new(StateDir::open(base.path(), "undo").unwrap(), "s1");
    note_undone(&journal.dir, "s1", &["a".into(), "b".into()]).unwrap();
    let told = journal.undone().unwrap();
    assert_eq!(told, ["a", "b"]);
    note_undone(&journal.dir, "s1", &["c".into()]).unwrap();
    journal.told_undone(Some(&told)).unwrap();
    assert_eq!(journal.undone().unwrap(), ["c"]);
    journal.told_undone(None).unwrap();
    assert!(journal.undone().unwrap().is_empty());
}

/// Two wardens noting undone paths of one session at once (each with
/// its own handle on the folder, as two processes have) lose none.
#[test]
fn undone_paths_noted_at_once_by_two_wardens_are_all_kept() {
    let base = tempfile::tempdir().unwrap();
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let dir = StateDir::open(base.path(), "undo").unwrap();
            std::thread::spawn(move || {
                for i in 0..40 {
                    note_undone(&dir, "s1", &[format!("{w}-{i}")]).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let dir = StateDir::open(base.path(), "undo").unwrap();
    let mut undone = read_undone(&dir, "s1").unwrap();
    undone.sort();
    let mut all: Vec<String> = (0..2)
        .flat_map(|w| (0..40).map(move |i| format!("{w}-{i}")))
        .collect();
    all.sort();
    assert_eq!(undone, all);
}

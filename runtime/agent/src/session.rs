//! Append-only JSONL session transcripts, one file per session in a
//! per-user folder outside the workspace (`$XDG_STATE_HOME/warden/sessions/
//! <workspace id>/`), reached without following symlinks ([`StateDir`]):
//! no tool can read or rewrite them, and a planted link redirects nothing.
//!
//! Each line is one [`Record`], written with a single `write_all` and a
//! flush, so a crash loses at most the line being written; reading skips
//! such a torn last line. An open session is locked (`flock`): a second
//! warden cannot append another conversation to it meanwhile. A transcript
//! holds what the model saw and said, tool results and usage, so it must
//! never hold secrets: callers must not put the API key (or an
//! `Authorization` header) in any record — `Start` records the base URL
//! and model only.

#[cfg(test)]
mod tests;

use std::fs::{File, TryLockError};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use warden_state::StateDir;

use crate::{Message, Usage};

/// Extension of transcript files.
const EXT: &str = "jsonl";

/// Longest session title, in characters.
const TITLE_MAX: usize = 60;

/// One line of a transcript.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// The session's settings; first line of the file. Never the API key.
    Start {
        ts: String,
        model: String,
        base_url: String,
        workspace: String,
        protocol: String,
    },
    /// One message of the conversation, as sent to or received from the model.
    Message { ts: String, message: Message },
    /// What a tool call returned, with its call id and how long it took.
    ToolResult {
        ts: String,
        id: String,
        name: String,
        ok: bool,
        output: String,
        duration_ms: u64,
    },
    /// Token counts of one model response.
    Usage { ts: String, usage: Usage },
    /// A failure worth keeping (API error, interrupted turn).
    Error { ts: String, message: String },
    /// The user cleared the conversation (`/clear`): a resumed session
    /// continues from here, without what came before.
    Clear { ts: String },
    /// The conversation was compacted to fit the context window (or by
    /// `/compact`): `history` is what the model is sent from now on, the
    /// system prompt left out. A resumed session continues from it, as the
    /// model last saw it; the messages before stay in the transcript.
    Compacted {
        ts: String,
        before_tokens: u64,
        after_tokens: u64,
        history: Vec<Message>,
    },
    /// The session moved to another tool-call protocol (under `auto`:
    /// `json` or `text`), and why. A resumed session continues in it.
    Protocol {
        ts: String,
        protocol: String,
        reason: String,
    },
    /// The session ended (user quit, task done, error).
    End { ts: String, reason: String },
}

impl Record {
    /// When the record was written.
    pub fn ts(&self) -> &str {
        match self {
            Record::Start { ts, .. }
            | Record::Message { ts, .. }
            | Record::ToolResult { ts, .. }
            | Record::Usage { ts, .. }
            | Record::Error { ts, .. }
            | Record::Clear { ts }
            | Record::Compacted { ts, .. }
            | Record::Protocol { ts, .. }
            | Record::End { ts, .. } => ts,
        }
    }
}

/// Why a session could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// No transcript with that id.
    #[error("no session `{id}` in {}; run `warden sessions` to list them", dir.display())]
    NotFound { id: String, dir: PathBuf },
    /// Reading or reopening the file failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// Another warden has the session open.
    #[error(
        "session {id} is in use by another warden (a run or chat still has it open); wait for \
         it to finish, or start a new session"
    )]
    InUse { id: String },
    /// A line is not a record (a torn last line is not an error).
    #[error(
        "{}:{line}: corrupt session record: {reason}; start a new session, or remove that \
         line to resume this one",
        path.display()
    )]
    Corrupt {
        path: PathBuf,
        line: usize,
        reason: String,
    },
}

/// One line of `warden sessions`.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Session id (the file name without `.jsonl`).
    pub id: String,
    /// Timestamp of the first record.
    pub started: String,
    /// Timestamp of the last record.
    pub updated: String,
    /// The first user message: its first line, at most 60 characters.
    pub title: String,
    /// Number of message records.
    pub messages: usize,
    /// Number of user messages (tasks and chat lines).
    pub turns: usize,
    /// Token counts summed over every model response.
    pub usage: Usage,
    /// The tool-call protocol its last run used ([`protocol_in_use`]).
    pub protocol: String,
    /// The transcript file.
    pub path: PathBuf,
}

/// The folder of one workspace's transcripts.
#[derive(Debug)]
pub struct SessionStore {
    dir: StateDir,
}

impl SessionStore {
    /// A store in `dir`, a folder of warden's own.
    pub fn new(dir: StateDir) -> Self {
        SessionStore { dir }
    }

    /// The folder holding the transcripts.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Starts a new, empty transcript with a fresh id.
    pub fn create(&self) -> io::Result<Session> {
        loop {
            let id = new_id();
            // `create_new` makes the id unique even if two sessions start in
            // the same second with the same random suffix.
            match self.dir.create_new(file_name(&id)) {
                Ok(file) => {
                    lock(&file, &id).map_err(io::Error::other)?;
                    if !linked(&file)? {
                        continue; // removed before it was locked
                    }
                    let path = self.path_of(&id);
                    return Ok(Session {
                        id,
                        path,
                        file,
                        torn_at: None,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Reopens a transcript to resume it: its records, and the session
    /// positioned to append to the same file, locked before it is read. A
    /// torn last line is cut off first, so that the next record does not
    /// glue onto it and turn it into a corrupt middle line.
    pub fn open(&self, id: &str) -> Result<(Session, Vec<Record>), SessionError> {
        let path = self.path_of(id);
        let mut file = self.open_locked(id, true)?;
        let mut text = Vec::new();
        file.read_to_end(&mut text)?;
        let (records, valid) = read_records(&text, &path)?;
        if valid < text.len() {
            file.set_len(valid as u64)?;
        } else if text.last().is_some_and(|&b| b != b'\n') {
            // The record is whole but its newline was lost in the crash.
            file.write_all(b"\n")?;
        }
        Ok((
            Session {
                id: id.to_string(),
                path,
                file,
                torn_at: None,
            },
            records,
        ))
    }

    /// The records of transcript `id`, without opening it for writing.
    pub fn read(&self, id: &str) -> Result<Vec<Record>, SessionError> {
        let not_found = || SessionError::NotFound {
            id: id.to_string(),
            dir: self.dir.path().to_path_buf(),
        };
        if !valid_id(id) {
            return Err(not_found());
        }
        let Some(text) = self.dir.read(file_name(id))? else {
            return Err(not_found());
        };
        Ok(read_records(&text, &self.path_of(id))?.0)
    }

    /// Holds transcript `id` (it exists, and no other warden has it open)
    /// so that no warden opens it until the hold is dropped or removed.
    pub fn hold(&self, id: &str) -> Result<Held, SessionError> {
        Ok(Held {
            id: id.to_string(),
            _file: self.open_locked(id, false)?,
        })
    }

    /// Deletes a held transcript. A warden that opened it meanwhile finds
    /// it gone once it has the lock, and does not write to it.
    pub fn remove(&self, held: Held) -> Result<(), SessionError> {
        Ok(self.dir.remove(file_name(&held.id))?)
    }

    /// Transcript `id` opened (to append when `append`), locked: it
    /// exists, and no other warden has it open.
    fn open_locked(&self, id: &str, append: bool) -> Result<File, SessionError> {
        let not_found = || SessionError::NotFound {
            id: id.to_string(),
            dir: self.dir.path().to_path_buf(),
        };
        // The id becomes a file name: refuse anything that could leave the
        // directory.
        if !valid_id(id) {
            return Err(not_found());
        }
        let opened = if append {
            self.dir.open_append(file_name(id))
        } else {
            self.dir.open_read(file_name(id))
        };
        let file = match opened {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(not_found()),
            opened => opened?,
        };
        lock(&file, id)?;
        // Removed by `sessions rm` between the open and the lock.
        if !linked(&file)? {
            return Err(not_found());
        }
        Ok(file)
    }

    /// All transcripts, most recently updated first. Unreadable files and
    /// bad lines are skipped: one damaged transcript must not hide the rest.
    pub fn list(&self) -> io::Result<Vec<Summary>> {
        let mut out = Vec::new();
        for name in self.dir.files()? {
            let Some(id) = name.strip_suffix(&format!(".{EXT}")) else {
                continue;
            };
            let Ok(Some(bytes)) = self.dir.read(&name) else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes);
            let records: Vec<Record> = text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            out.push(summary(id.to_string(), self.path_of(id), &records));
        }
        out.sort_by(|a, b| (&b.updated, &b.started, &b.id).cmp(&(&a.updated, &a.started, &a.id)));
        Ok(out)
    }

    /// The id of the most recently updated transcript in which the user
    /// said something, if any: a chat quit at once, or a run that failed
    /// before its task was sent, is nothing to continue.
    pub fn latest(&self) -> io::Result<Option<String>> {
        Ok(self.list()?.into_iter().find(|s| s.turns > 0).map(|s| s.id))
    }

    fn path_of(&self, id: &str) -> PathBuf {
        self.dir.path().join(file_name(id))
    }
}

fn file_name(id: &str) -> String {
    format!("{id}.{EXT}")
}

/// Locks `file` for as long as it is open; fails at once if another open
/// file (another warden) holds the lock.
fn lock(file: &File, id: &str) -> Result<(), SessionError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(SessionError::InUse { id: id.to_string() }),
        Err(TryLockError::Error(e)) => Err(e.into()),
    }
}

/// Whether `file` still has a name (it was not removed since it was
/// opened).
fn linked(file: &File) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    Ok(file.metadata()?.nlink() > 0)
}

/// A transcript locked for removal ([`SessionStore::hold`]).
#[derive(Debug)]
pub struct Held {
    id: String,
    _file: File,
}

impl Held {
    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// An open transcript, appended to record by record.
#[derive(Debug)]
pub struct Session {
    id: String,
    path: PathBuf,
    file: File,
    /// Where the file ends with its last whole record, when a failed write
    /// left part of a record after it that could not be cut off yet.
    torn_at: Option<u64>,
}

impl Session {
    /// The session id, e.g. `20261129-193012-4f2a`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The transcript file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record as one line. The line goes out in a single
    /// `write_all` on an `O_APPEND` file, so a crash leaves at most that
    /// line torn, which reading tolerates.
    pub fn append(&mut self, record: &Record) -> io::Result<()> {
        let mut line = serde_json::to_vec(record).map_err(io::Error::other)?;
        line.push(b'\n');
        self.append_line(&line, |file, line| file.write_all(line))
    }

    /// Appends a [`Record::Message`] of `message`, written from the borrowed
    /// message (a long tool call is not copied to be recorded).
    pub fn append_message(&mut self, ts: &str, message: &Message) -> io::Result<()> {
        /// [`Record::Message`], borrowed: the same line.
        #[derive(Serialize)]
        #[serde(tag = "type", rename = "message")]
        struct MessageRecord<'a> {
            ts: &'a str,
            message: &'a Message,
        }
        let mut line =
            serde_json::to_vec(&MessageRecord { ts, message }).map_err(io::Error::other)?;
        line.push(b'\n');
        self.append_line(&line, |file, line| file.write_all(line))
    }

    /// Appends `line` with `write`. When that fails partway (a full disk),
    /// what it wrote is cut off, now or before the next record: glued to
    /// the next one, it would make a line that does not parse, and the
    /// whole transcript could no longer be opened.
    fn append_line(
        &mut self,
        line: &[u8],
        write: impl FnOnce(&mut File, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        if let Some(end) = self.torn_at {
            self.file.set_len(end)?;
            self.torn_at = None;
        }
        let end = self.file.metadata()?.len();
        match write(&mut self.file, line) {
            Ok(()) => Ok(()),
            Err(e) => {
                if self.file.set_len(end).is_err() {
                    self.torn_at = Some(end);
                }
                Err(e)
            }
        }
    }
}

/// Parses a transcript. Returns the records and the length of the valid
/// prefix (everything but a torn last line: one without its newline that
/// is not even whole JSON). Blank lines are ignored.
fn read_records(bytes: &[u8], path: &Path) -> Result<(Vec<Record>, usize), SessionError> {
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    let (mut records, mut valid) = (Vec::new(), 0);
    for (i, line) in lines.iter().enumerate() {
        if !line.iter().all(u8::is_ascii_whitespace) {
            match serde_json::from_slice(line) {
                Ok(record) => records.push(record),
                // Torn: cut off mid-write. A whole JSON value that is not
                // a record (one a newer warden wrote) is not torn.
                Err(_)
                    if !line.ends_with(b"\n")
                        && serde_json::from_slice::<serde::de::IgnoredAny>(line).is_err() =>
                {
                    break;
                }
                Err(e) => {
                    let (path, reason) = (path.to_path_buf(), e.to_string());
                    return Err(SessionError::Corrupt {
                        path,
                        line: i + 1,
                        reason,
                    });
                }
            }
        }
        valid += line.len();
    }
    Ok((records, valid))
}

/// The conversation to resume, in order: the message records after the
/// last [`Record::Clear`], or the history of the last
/// [`Record::Compacted`] and the message records after it.
pub fn messages(records: &[Record]) -> Vec<Message> {
    let last = records
        .iter()
        .rposition(|r| matches!(r, Record::Clear { .. } | Record::Compacted { .. }));
    let Some(at) = last else {
        return messages_iter(records).cloned().collect();
    };
    let mut conversation = match &records[at] {
        Record::Compacted { history, .. } => history.clone(),
        _ => Vec::new(),
    };
    conversation.extend(messages_iter(&records[at + 1..]).cloned());
    conversation
}

/// The protocol a session switched to under `auto`, the last time it did:
/// a resumed session under `auto` continues in it.
pub fn switched_protocol(records: &[Record]) -> Option<crate::settings::Protocol> {
    records.iter().rev().find_map(|r| match r {
        Record::Protocol { protocol, .. } => crate::settings::Protocol::parse(protocol),
        _ => None,
    })
}

/// The tool-call protocol in use at the end of `records`: the last switch,
/// or the protocol a run started with (`auto` starting native, or going on
/// in the protocol switched to before).
pub fn protocol_in_use(records: &[Record]) -> &str {
    let mut in_use = "native";
    let mut switched = None;
    for r in records {
        match r {
            Record::Start { protocol, .. } if protocol == "auto" => {
                in_use = switched.unwrap_or("native");
            }
            Record::Start { protocol, .. } => in_use = protocol,
            Record::Protocol { protocol, .. } => {
                in_use = protocol;
                switched = Some(protocol);
            }
            _ => {}
        }
    }
    in_use
}

/// Token counts summed over the usage records.
pub fn total_usage(records: &[Record]) -> Usage {
    let mut total = Usage::default();
    for r in records {
        if let Record::Usage { usage, .. } = r {
            total.prompt_tokens += usage.prompt_tokens;
            total.completion_tokens += usage.completion_tokens;
            total.total_tokens += usage.total_tokens;
        }
    }
    total
}

/// What the user said in `records`, in order: their messages, not the
/// tool results the text protocol sends as user messages.
fn said(records: &[Record]) -> impl Iterator<Item = &str> {
    messages_iter(records).filter_map(|m| match m {
        Message::User { content } if !crate::textproto::is_results_message(content) => {
            Some(content.as_str())
        }
        _ => None,
    })
}

/// What the user asked in the conversation a resumed session continues
/// (since the last `/clear`; a compaction changes what the model is sent,
/// not what was asked), in order.
pub fn asked(records: &[Record]) -> Vec<&str> {
    let from = records
        .iter()
        .rposition(|r| matches!(r, Record::Clear { .. }))
        .map_or(0, |at| at + 1);
    said(&records[from..]).collect()
}

fn summary(id: String, path: PathBuf, records: &[Record]) -> Summary {
    let ts = |r: Option<&Record>| r.map(|r| r.ts().to_string()).unwrap_or_default();
    let title = said(records).find_map(|c| c.lines().map(str::trim).find(|l| !l.is_empty()));
    Summary {
        id,
        started: ts(records.first()),
        updated: ts(records.last()),
        title: title.map(title_of).unwrap_or_default(),
        messages: messages_iter(records).count(),
        turns: said(records).count(),
        usage: total_usage(records),
        protocol: protocol_in_use(records).to_string(),
        path,
    }
}

fn messages_iter(records: &[Record]) -> impl Iterator<Item = &Message> {
    records.iter().filter_map(|r| match r {
        Record::Message { message, .. } => Some(message),
        _ => None,
    })
}

/// Cuts a line to [`TITLE_MAX`] characters, the last being `…` when cut.
fn title_of(line: &str) -> String {
    if line.chars().count() <= TITLE_MAX {
        return line.to_string();
    }
    let mut t: String = line.chars().take(TITLE_MAX - 1).collect();
    t.truncate(t.trim_end().len());
    t.push('…');
    t
}

/// A new session id: UTC time to the second, then 4 random hex digits, so
/// ids sort by start time and rarely collide (`create` handles it if so).
fn new_id() -> String {
    let (date, time, _) = utc_parts(SystemTime::now());
    format!(
        "{}-{}-{:04x}",
        date.replace('-', ""),
        time.replace(':', ""),
        rand::random::<u16>()
    )
}

/// The current time as RFC 3339 UTC with milliseconds,
/// e.g. `2026-11-29T19:30:12.345Z`.
pub fn now() -> String {
    let (date, time, millis) = utc_parts(SystemTime::now());
    format!("{date}T{time}.{millis:03}Z")
}

/// `("YYYY-MM-DD", "HH:MM:SS", millis)` in UTC.
fn utc_parts(t: SystemTime) -> (String, String, u32) {
    // Before 1970 only with a broken clock; clamp rather than fail.
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let s = secs % 86_400;
    let date = format!("{y:04}-{m:02}-{d:02}");
    let time = format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
    (date, time, since.subsec_millis())
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day):
/// Howard Hinnant's `civil_from_days`, valid for any day count we'll meet.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March-based
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

//! What a call will touch: the tool's declared effects applied to the
//! call's checked arguments, each path resolved by the one resolver
//! (`warden-paths`) against the names the tool's directories are mounted
//! at, the names its guest sees. Computed once per call, when its
//! arguments are checked ([`crate::Checked::effects`]); the approval
//! preview, undo, the event line, the changed list and MCP questions all
//! read this one value.

use std::path::PathBuf;

use serde_json::Value;
use warden_paths::Refused;

pub use crate::bindings::{Access, Content, Effect, Replacement};
use crate::granted::GrantedDirs;

/// Everything a call will touch, as far as its tool declares it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effects {
    /// Whether the tool declares its effects. When it does not, the call
    /// may touch anything its grants reach, and `touches` is empty.
    pub declared: bool,
    /// Each path the call names, in the order of the declaration.
    pub touches: Vec<Touch>,
}

/// One path a call names, and what the call does to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Touch {
    /// The argument it was given in.
    pub argument: String,
    /// What the call does to it.
    pub access: Access,
    /// Whether a symbolic link at the path is followed.
    pub follow: bool,
    /// The path as the model wrote it.
    pub given: String,
    /// Where it leads, or why it leads nowhere the tool may go (the call
    /// will be refused).
    pub at: Result<At, Refused>,
}

/// A path resolved into one of the tool's granted directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct At {
    /// The index of the mount among the tool's ([`GrantedDirs::mounts`]).
    pub mount: usize,
    /// The granted directory on the host.
    pub host: PathBuf,
    /// Whether the grant is read-write.
    pub writable: bool,
    /// The path beneath the directory.
    pub rel: String,
    /// The path as the user and the model are shown it.
    pub shown: String,
    /// The directory's name as `shown` writes it (see
    /// [`warden_paths::show`]).
    pub base: String,
}

/// The new content of a file a call writes, from its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewContent<'a> {
    /// Not known before the call runs.
    Unknown,
    /// The whole new content.
    Whole(&'a str),
    /// An exact-text replacement, made as `warden_edit::edit` makes it.
    Replace {
        old: &'a str,
        new: &'a str,
        all: bool,
    },
}

impl Effects {
    /// The effects of a call with `args` (checked against the schema) of a
    /// tool declaring `declared`, whose directories are `dirs`.
    pub fn of(declared: Option<&[Effect]>, args: &Value, dirs: &GrantedDirs) -> Effects {
        let Some(declared) = declared else {
            return Effects::default();
        };
        let names: Vec<&str> = dirs.mounts().map(|m| m.guest.as_str()).collect();
        let mut touches = Vec::new();
        for e in declared {
            let paths: Vec<&str> = match args.get(&e.argument) {
                Some(Value::String(p)) => vec![p],
                Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            for given in paths {
                let at = warden_paths::resolve(given, &names).map(|r| {
                    let m = dirs.mount(r.mount);
                    At {
                        mount: r.mount,
                        host: m.host.clone(),
                        writable: m.write,
                        rel: r.rel,
                        shown: r.shown,
                        base: r.base,
                    }
                });
                touches.push(Touch {
                    argument: e.argument.clone(),
                    access: e.access.clone(),
                    follow: e.follow,
                    given: given.to_string(),
                    at,
                });
            }
        }
        Effects {
            declared: true,
            touches,
        }
    }

    /// Whether argument `name` is one these effects show: a path, the new
    /// content of a write, or the flag of a delete, copy or move.
    pub fn covers(&self, name: &str) -> bool {
        self.touches.iter().any(|t| {
            t.argument == name
                || match &t.access {
                    Access::Write(Content::Whole(c)) => c == name,
                    Access::Write(Content::Replace(r)) => {
                        r.old == name || r.new == name || r.all.as_deref() == Some(name)
                    }
                    Access::Delete(f) | Access::CopyTo(f) | Access::MoveTo(f) => {
                        f.as_deref() == Some(name)
                    }
                    _ => false,
                }
        })
    }

    /// Whether argument `name` holds a path these effects name.
    pub fn is_path(&self, name: &str) -> bool {
        self.touches.iter().any(|t| t.argument == name)
    }

    /// The touches that change what is at their path.
    pub fn changes(&self) -> impl Iterator<Item = &Touch> {
        self.touches.iter().filter(|t| t.access.changes())
    }
}

impl Access {
    /// Whether the call changes what is at the path (a read or the source
    /// of a copy does not).
    pub fn changes(&self) -> bool {
        !matches!(self, Access::Read | Access::CopyFrom)
    }

    /// What the call does, in a word or two: `read`, `write`, `create`,
    /// `delete`, `copy from`, `copy to`, `move from`, `move to`.
    pub fn verb(&self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write(_) => "write",
            Access::Create => "create",
            Access::Delete(_) => "delete",
            Access::CopyFrom => "copy from",
            Access::CopyTo(_) => "copy to",
            Access::MoveFrom => "move from",
            Access::MoveTo(_) => "move to",
        }
    }

    /// Whether the call may replace what is there (`copy to`, `move to`
    /// with its flag set) or remove a directory with its contents
    /// (`delete` with its flag set), for a call with `args`.
    pub fn flagged(&self, args: &Value) -> bool {
        match self {
            Access::Delete(f) | Access::CopyTo(f) | Access::MoveTo(f) => flag(args, f.as_deref()),
            _ => false,
        }
    }
}

impl Touch {
    /// The path as shown: resolved, or as given when it leads nowhere.
    pub fn shown(&self) -> &str {
        match &self.at {
            Ok(at) => &at.shown,
            Err(_) => &self.given,
        }
    }

    /// The new content a write puts at the path, from `args`.
    pub fn content<'a>(&self, args: &'a Value) -> NewContent<'a> {
        let text = |name: &str| args.get(name).and_then(Value::as_str);
        match &self.access {
            Access::Write(Content::Whole(arg)) => {
                text(arg).map_or(NewContent::Unknown, NewContent::Whole)
            }
            Access::Write(Content::Replace(r)) => match (text(&r.old), text(&r.new)) {
                (Some(old), Some(new)) => NewContent::Replace {
                    old,
                    new,
                    all: flag(args, r.all.as_deref()),
                },
                _ => NewContent::Unknown,
            },
            _ => NewContent::Unknown,
        }
    }

    /// Why the call will be refused at this path, if it will: it leads
    /// outside the grants, or the call would change it through a
    /// read-only grant.
    pub fn refused(&self) -> Option<&'static str> {
        match &self.at {
            Err(Refused::Nul | Refused::TooLong(_)) => Some("not a usable path"),
            Err(_) => Some("outside the grants"),
            Ok(at) if !at.writable && self.access.changes() => Some("in a read-only grant"),
            Ok(_) => None,
        }
    }
}

/// The boolean argument `name` of `args` (false when unnamed or absent).
fn flag(args: &Value, name: Option<&str>) -> bool {
    name.and_then(|n| args.get(n))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// That every argument `effects` name is a property of `parameters`; the
/// error names the first that is not.
pub(crate) fn check(effects: &[Effect], parameters: &Value) -> Result<(), String> {
    let props = parameters.get("properties").and_then(Value::as_object);
    let has = |name: &str| props.is_some_and(|p| p.contains_key(name));
    for e in effects {
        let mut named = vec![e.argument.as_str()];
        match &e.access {
            Access::Write(Content::Whole(arg)) => named.push(arg),
            Access::Write(Content::Replace(r)) => {
                named.extend([r.old.as_str(), r.new.as_str()]);
                named.extend(r.all.as_deref());
            }
            Access::Delete(f) | Access::CopyTo(f) | Access::MoveTo(f) => named.extend(f.as_deref()),
            _ => {}
        }
        if let Some(missing) = named.into_iter().find(|n| !has(n)) {
            return Err(format!(
                "its effect on `{}` names argument `{missing}`, which its parameters do not have",
                e.argument
            ));
        }
    }
    Ok(())
}

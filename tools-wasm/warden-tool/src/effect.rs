//! What a call does to the files its path arguments name, declared on the
//! argument struct's fields: the host shows it to the user before the call
//! runs, and snapshots those files for undo.
//!
//! ```ignore
//! use warden_tool::{effect, JsonSchema, Tool};
//!
//! /// Save a note: write its text to a file, replacing the file.
//! #[derive(serde::Deserialize, JsonSchema)]
//! struct SaveNote {
//!     /// The file to write.
//!     #[schemars(extend("x-warden-effect" = effect::write().whole("text").follow()))]
//!     path: String,
//!     /// The note.
//!     text: String,
//! }
//! ```
//!
//! A tool whose struct declares no effect has its effects "unknown": the
//! user is told it may change anything its grants reach, and undo cannot
//! put that back. Set [`crate::Tool::NO_FILES`] for a tool that touches no
//! files at all. A declaration is a claim: what a call can reach is decided
//! by the grants, never by it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bindings::exports::warden::tool::tool as wit;

/// The schema keyword a field's effect is written under (the SDK removes it
/// from the schema the model sees).
pub const KEYWORD: &str = "x-warden-effect";

/// A field's effect, as written in its `extend` attribute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Effect {
    /// `read`, `write`, `create`, `delete`, `copy_from`, `copy_to`,
    /// `move_from` or `move_to`.
    pub access: String,
    /// Whether a symbolic link at the path is followed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub follow: bool,
    /// For `write`: where the new content comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    /// For `delete`: the boolean argument that allows removing a directory
    /// with what is in it; for `copy_to` and `move_to`: the one that
    /// allows replacing what is there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flag: Option<String>,
}

/// Where a write's new content comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Content {
    /// The whole content is this string argument.
    Whole(String),
    /// An exact-text replacement (as `edit_file` makes it) of the text in
    /// argument `old` by the text in argument `new`; every occurrence when
    /// the boolean argument `all` is true.
    Replace {
        old: String,
        new: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        all: Option<String>,
    },
}

fn access(access: &str) -> Effect {
    Effect {
        access: access.into(),
        follow: false,
        content: None,
        flag: None,
    }
}

/// The call reads the path (a file's content, a directory's entries).
pub fn read() -> Effect {
    access("read")
}
/// The call writes a file at the path, replacing it or creating it.
pub fn write() -> Effect {
    access("write")
}
/// The call makes a directory at the path.
pub fn create() -> Effect {
    access("create")
}
/// The call removes the path (a directory only when empty, unless
/// [`Effect::flag`]).
pub fn delete() -> Effect {
    access("delete")
}
/// The path is the source of a copy.
pub fn copy_from() -> Effect {
    access("copy_from")
}
/// The path is the destination of a copy.
pub fn copy_to() -> Effect {
    access("copy_to")
}
/// The path is the source of a move: it is gone after the call.
pub fn move_from() -> Effect {
    access("move_from")
}
/// The path is the destination of a move.
pub fn move_to() -> Effect {
    access("move_to")
}

impl Effect {
    /// A symbolic link at the path is followed: the call acts on its target.
    pub fn follow(mut self) -> Effect {
        self.follow = true;
        self
    }

    /// The new content is the whole of string argument `argument`.
    pub fn whole(mut self, argument: &str) -> Effect {
        self.content = Some(Content::Whole(argument.into()));
        self
    }

    /// The new content is the file's with the text of argument `old`
    /// replaced by that of `new` (every occurrence when boolean argument
    /// `all`, if given, is true).
    pub fn replace(mut self, old: &str, new: &str, all: Option<&str>) -> Effect {
        self.content = Some(Content::Replace {
            old: old.into(),
            new: new.into(),
            all: all.map(Into::into),
        });
        self
    }

    /// The boolean argument that lets a `delete` remove a directory with
    /// what is in it, or a `copy_to` / `move_to` replace what is there.
    pub fn flag(mut self, argument: &str) -> Effect {
        self.flag = Some(argument.into());
        self
    }

    /// The WIT effect of the argument `argument`; the error says what is
    /// wrong with the declaration.
    pub(crate) fn to_wit(&self, argument: &str) -> Result<wit::Effect, String> {
        let flag = self.flag.clone();
        let no_flag = |what: &str| match &flag {
            None => Ok(()),
            Some(_) => Err(format!("`{argument}`: a `{what}` effect takes no flag")),
        };
        let access = match self.access.as_str() {
            "read" => no_flag("read").map(|()| wit::Access::Read)?,
            "write" => {
                no_flag("write")?;
                wit::Access::Write(match self.content.clone() {
                    None => wit::Content::Unknown,
                    Some(Content::Whole(arg)) => wit::Content::Whole(arg),
                    Some(Content::Replace { old, new, all }) => {
                        wit::Content::Replace(wit::Replacement { old, new, all })
                    }
                })
            }
            "create" => no_flag("create").map(|()| wit::Access::Create)?,
            "delete" => wit::Access::Delete(flag),
            "copy_from" => no_flag("copy_from").map(|()| wit::Access::CopyFrom)?,
            "copy_to" => wit::Access::CopyTo(flag),
            "move_from" => no_flag("move_from").map(|()| wit::Access::MoveFrom)?,
            "move_to" => wit::Access::MoveTo(flag),
            other => return Err(format!("`{argument}`: unknown access `{other}`")),
        };
        if self.content.is_some() && self.access != "write" {
            return Err(format!("`{argument}`: only a `write` effect has content"));
        }
        Ok(wit::Effect {
            argument: argument.into(),
            access,
            follow: self.follow,
        })
    }
}

/// Takes the effects declared on the properties of `schema` out of it, in
/// the order of the properties. `Err` names a declaration that is wrong.
pub(crate) fn take(schema: &mut Value) -> Result<Vec<wit::Effect>, String> {
    let Some(Value::Object(props)) = schema.get_mut("properties") else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (name, prop) in props.iter_mut() {
        let Some(declared) = prop.as_object_mut().and_then(|p| p.remove(KEYWORD)) else {
            continue;
        };
        let effect: Effect = serde_json::from_value(declared)
            .map_err(|e| format!("`{name}`: the {KEYWORD} attribute is not an effect: {e}"))?;
        out.push(effect.to_wit(name)?);
    }
    Ok(out)
}

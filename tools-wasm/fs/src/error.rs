//! [`ToolError`] and the mapping of io errors to messages.

use std::io;

use crate::paths;

/// Why a call failed: the SDK's typed error, which becomes the WIT `error`
/// variant. Every message is shown to the model as it is, so it says what
/// went wrong and how to do better.
pub use warden_tool::Error as ToolError;

/// Shorthand for [`ToolError::InvalidArgs`].
pub fn invalid(msg: impl Into<String>) -> ToolError {
    ToolError::InvalidArgs(msg.into())
}

/// What the failed operation was doing to the path, to pick the message for
/// a permission error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// Turns an io error on `path` into a message for the model.
pub fn io_error(err: &io::Error, path: &str, access: Access) -> ToolError {
    let outside = || ToolError::Denied(paths::outside_message(path));
    match classify(err, access) {
        Class::NotFound if paths::looks_outside(path) => outside(),
        Class::NotFound => ToolError::NotFound(format!("no such file or directory: {path}")),
        Class::Denied if paths::looks_outside(path) => outside(),
        Class::Denied => ToolError::Denied(match access {
            Access::Write => format!(
                "{path} is not writable: this tool's grant is read-only or does not cover it"
            ),
            Access::Read => format!(
                "permission denied reading {path}: it is not readable, or it leads \
                 (through a symlink) outside the directories this tool may access"
            ),
        }),
        Class::Other => ToolError::Failed(format!("{path}: {err}")),
    }
}

/// True when `err` means the sandbox refused access (no grant, read-only
/// grant, or a symlink leading outside the grants).
pub fn is_denied(err: &io::Error) -> bool {
    matches!(classify(err, Access::Read), Class::Denied)
}

enum Class {
    NotFound,
    Denied,
    Other,
}

fn classify(err: &io::Error, access: Access) -> Class {
    match err.kind() {
        io::ErrorKind::NotFound => Class::NotFound,
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => Class::Denied,
        _ if denied_errno(err.raw_os_error(), access) => Class::Denied,
        _ => Class::Other,
    }
}

/// WASI errno values that mean "the sandbox said no" but that std does not
/// map to `PermissionDenied`: ENOTCAPABLE (no grant for the path) and, for
/// writes, EBADF (a descriptor without write rights: a read-only grant).
#[cfg(target_os = "wasi")]
fn denied_errno(code: Option<i32>, access: Access) -> bool {
    match code {
        Some(libc::ENOTCAPABLE) => true,
        Some(libc::EBADF) => access == Access::Write,
        _ => false,
    }
}

#[cfg(not(target_os = "wasi"))]
fn denied_errno(_code: Option<i32>, _access: Access) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_kinds() {
        let nf = io::Error::from(io::ErrorKind::NotFound);
        assert_eq!(
            io_error(&nf, "a/b.txt", Access::Read),
            ToolError::NotFound("no such file or directory: a/b.txt".into())
        );
        let pd = io::Error::from(io::ErrorKind::PermissionDenied);
        let ToolError::Denied(msg) = io_error(&pd, "a.txt", Access::Write) else {
            panic!()
        };
        assert!(msg.contains("a.txt is not writable"), "{msg}");
        let ro = io::Error::from(io::ErrorKind::ReadOnlyFilesystem);
        assert!(matches!(
            io_error(&ro, "a", Access::Write),
            ToolError::Denied(_)
        ));
        let other = io::Error::other("disk on fire");
        assert_eq!(
            io_error(&other, "a", Access::Read),
            ToolError::Failed("a: disk on fire".into())
        );
    }

    #[test]
    fn outside_paths() {
        let nf = io::Error::from(io::ErrorKind::NotFound);
        let ToolError::Denied(msg) = io_error(&nf, "../etc/passwd", Access::Read) else {
            panic!()
        };
        assert!(msg.contains("outside the directories"), "{msg}");
        // Off wasm32 no directories are known, so absolute paths count as outside.
        assert!(matches!(
            io_error(&nf, "/etc/x", Access::Read),
            ToolError::Denied(_)
        ));
        // `..` that stays inside is an ordinary missing file.
        assert!(matches!(
            io_error(&nf, "a/../b", Access::Read),
            ToolError::NotFound(_)
        ));
    }
}

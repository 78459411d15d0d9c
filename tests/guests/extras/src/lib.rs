//! Probes the host extras (`warden:tool/host-extras`) for warden's
//! integration tests: what `call.time-limit` and the monotonic clock say, and
//! what `host-fs.list-dir` and `host-fs.read-head` answer for a handle the
//! guest holds. Never shipped.

wit_bindgen::generate!({
    path: "../../../wit",
    world: "warden:tool/fs-component",
    with: {
        "wasi:filesystem/types@0.2.12": wasip2::filesystem::types,
        "wasi:io/error@0.2.12": wasip2::io::error,
        "wasi:io/poll@0.2.12": wasip2::io::poll,
        "wasi:io/streams@0.2.12": wasip2::io::streams,
        "wasi:clocks/wall-clock@0.2.12": wasip2::clocks::wall_clock,
    },
});

use exports::warden::tool::tool::{Error, Guest, Spec};
use serde_json::Value;
use wasip2::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};

const NO_ARGS: &str = r#"{"type":"object","additionalProperties":false}"#;
const LIST_ARGS: &str = r#"{"type":"object","properties":{"path":{"type":"string"},"file":{"type":"boolean"}},"additionalProperties":false}"#;
const HEAD_ARGS: &str = r#"{"type":"object","properties":{"path":{"type":"string"},"max":{"type":"integer"},"file":{"type":"boolean"}},"required":["path"],"additionalProperties":false}"#;

struct Component;

impl Guest for Component {
    fn describe() -> Vec<Spec> {
        [
            ("probe_time_limit", "Returns the call's time limit in nanoseconds."),
            ("probe_clock", "Returns the monotonic clock's reading, in nanoseconds."),
            (
                "probe_list_dir",
                "Lists `path` (relative to the first preopen, `.` by default) with host-fs list-dir: one `type name` line per entry, then `bad-names N`; opens it as a file when `file` is true.",
            ),
            (
                "probe_read_head",
                "Reads `path` under the first preopen with host-fs read-head (`max` bytes, default 1024): `none`, or `size N: data`; asks through a file handle of `.` when `file` is true.",
            ),
        ]
        .iter()
        .map(|(name, description)| Spec {
            name: name.to_string(),
            description: description.to_string(),
            parameters: match *name {
                "probe_list_dir" => LIST_ARGS,
                "probe_read_head" => HEAD_ARGS,
                _ => NO_ARGS,
            }
            .into(),
            aliases: vec![],
            mutates: false,
            effects: None,
        })
        .collect()
    }

    fn call(name: String, args: String) -> Result<String, Error> {
        let args: Value =
            serde_json::from_str(&args).map_err(|e| Error::InvalidArgs(e.to_string()))?;
        match name.as_str() {
            "probe_time_limit" => Ok(warden::tool::call::time_limit().to_string()),
            "probe_clock" => Ok(wasip2::clocks::monotonic_clock::now().to_string()),
            "probe_list_dir" => {
                let path = args.get("path").and_then(Value::as_str).unwrap_or(".");
                let as_file = args.get("file").and_then(Value::as_bool).unwrap_or(false);
                let dirs = wasip2::filesystem::preopens::get_directories();
                let (root, _) = dirs
                    .first()
                    .ok_or_else(|| Error::Failed("no preopen".into()))?;
                let flags = if as_file {
                    OpenFlags::empty()
                } else {
                    OpenFlags::DIRECTORY
                };
                let d = root
                    .open_at(PathFlags::empty(), path, flags, DescriptorFlags::READ)
                    .map_err(|e| Error::Failed(format!("open: {e:?}")))?;
                match warden::tool::host_fs::list_dir(&d) {
                    Ok(listing) => {
                        let mut out: Vec<String> = listing
                            .entries
                            .iter()
                            .map(|e| format!("{:?} {}", e.type_, e.name))
                            .collect();
                        out.push(format!("bad-names {}", listing.bad_names));
                        Ok(out.join("\n"))
                    }
                    Err(e) => Err(Error::Failed(format!("list-dir: {e:?}"))),
                }
            }
            "probe_read_head" => {
                let path = args.get("path").and_then(Value::as_str).unwrap_or(".");
                let max = args.get("max").and_then(Value::as_u64).unwrap_or(1024);
                let dirs = wasip2::filesystem::preopens::get_directories();
                let (root, _) = dirs
                    .first()
                    .ok_or_else(|| Error::Failed("no preopen".into()))?;
                let file;
                let handle = if args.get("file").and_then(Value::as_bool).unwrap_or(false) {
                    file = root
                        .open_at(
                            PathFlags::empty(),
                            "a.txt",
                            OpenFlags::empty(),
                            DescriptorFlags::READ,
                        )
                        .map_err(|e| Error::Failed(format!("open: {e:?}")))?;
                    &file
                } else {
                    root
                };
                match warden::tool::host_fs::read_head(handle, path, max) {
                    Ok(None) => Ok("none".into()),
                    Ok(Some(head)) => Ok(format!(
                        "size {}{}: {}",
                        head.size,
                        if head.whole { ", whole" } else { "" },
                        String::from_utf8_lossy(&head.data)
                    )),
                    Err(e) => Err(Error::Failed(format!("read-head: {e:?}"))),
                }
            }
            _ => Err(Error::NotFound(format!("no tool {name}"))),
        }
    }
}

export!(Component);

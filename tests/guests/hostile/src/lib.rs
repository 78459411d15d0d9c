//! Hostile tools for warden's integration tests: each one attacks a limit or
//! probes the sandbox, and reports what it could do so tests can assert on it.
//! Never shipped.

wit_bindgen::generate!({ path: "../../../wit", world: "warden:tool/component" });

use std::hint::black_box;
use std::io::Write;

use exports::warden::tool::tool::{Error, Guest, Spec};
use serde_json::{Map, Value};

const ANY_OBJECT: &str = r#"{"type":"object","additionalProperties":true}"#;
const STRICT: &str = r#"{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"],"additionalProperties":false}"#;

/// (name, description, parameters)
const TOOLS: &[(&str, &str, &str)] = &[
    ("spin", "Loops forever.", ANY_OBJECT),
    ("bomb", "Allocates memory without bound.", ANY_OBJECT),
    (
        "flood",
        "Writes 1 MiB to stdout, then returns `bytes` (default 10000000) 'x' characters.",
        ANY_OBJECT,
    ),
    ("recurse", "Recurses until the stack overflows.", ANY_OBJECT),
    (
        "env_dump",
        "Returns `count=N` then every environment variable as KEY=VALUE lines.",
        ANY_OBJECT,
    ),
    (
        "net",
        "Tries a TCP connect to `addr` (default 127.0.0.1:80), a UDP bind and a DNS lookup.",
        ANY_OBJECT,
    ),
    (
        "fs_probe",
        "Runs std::fs `op` (read, write, list, delete, mkdir, stat) on `path`.",
        ANY_OBJECT,
    ),
    (
        "fs_preopens",
        "Lists the preopened directory names.",
        ANY_OBJECT,
    ),
    (
        "raw_write",
        "Writes `content` to `path` under preopen `preopen` with raw WASI calls.",
        ANY_OBJECT,
    ),
    (
        "http_get",
        "GETs `url` over wasi:http; returns `status=N` and the body, or `err: CODE`.",
        ANY_OBJECT,
    ),
    (
        "http_hold",
        "Sends `n` GETs to `url` at once and holds them all open; after `ms` \
         milliseconds says how many are still waiting and how each other one ended.",
        ANY_OBJECT,
    ),
    (
        "escape",
        "Writes `content` to `path` with std::fs and GETs `url`; one line per outcome.",
        ANY_OBJECT,
    ),
    (
        "sleep",
        "Sleeps `ms` milliseconds (default an hour).",
        ANY_OBJECT,
    ),
    ("cwd", "Returns the current directory.", ANY_OBJECT),
    (
        "count",
        "Counts the calls this instance has served, in a global.",
        ANY_OBJECT,
    ),
    (
        "http_unsent",
        "Writes an outgoing HTTP body to `url` (default http://127.0.0.1:9/) and never sends it.",
        ANY_OBJECT,
    ),
    (
        "host_bomb",
        "Makes the host hold memory: header fields of 32 KiB each, without bound.",
        ANY_OBJECT,
    ),
    ("ok", "Returns \"ok\".", ANY_OBJECT),
    ("fail", "Always fails.", ANY_OBJECT),
    ("strict", "Returns n=<n>.", STRICT),
];

struct Component;

impl Guest for Component {
    fn describe() -> Vec<Spec> {
        TOOLS
            .iter()
            .map(|&(name, description, parameters)| Spec {
                name: name.into(),
                description: description.into(),
                parameters: parameters.into(),
                aliases: vec![],
                mutates: false,
                effects: None,
            })
            .collect()
    }

    fn call(name: String, args: String) -> Result<String, Error> {
        let args = match serde_json::from_str::<Value>(&args) {
            Ok(Value::Object(map)) => map,
            Ok(_) => Map::new(),
            Err(e) => return Err(Error::InvalidArgs(format!("args are not JSON: {e}"))),
        };
        match name.as_str() {
            "spin" => spin(),
            "bomb" => bomb(),
            "flood" => Ok(flood(&args)),
            "recurse" => Ok(recurse(0).to_string()),
            "env_dump" => Ok(env_dump()),
            "net" => Ok(net(&args)),
            "fs_probe" => fs_probe(&args),
            "fs_preopens" => Ok(fs_preopens()),
            "raw_write" => raw_write(&args),
            "http_get" => http_get(str_arg(&args, "url")?),
            "http_hold" => Ok(http_hold(
                str_arg(&args, "url")?,
                args.get("n").and_then(Value::as_u64).unwrap_or(100),
                args.get("ms").and_then(Value::as_u64).unwrap_or(300),
            )),
            "http_unsent" => http_unsent(
                args.get("url")
                    .and_then(Value::as_str)
                    .unwrap_or("http://127.0.0.1:9/"),
            ),
            "host_bomb" => host_bomb(),
            "escape" => {
                let path = str_arg(&args, "path")?;
                let content = args.get("content").and_then(Value::as_str).unwrap_or("");
                let write = match std::fs::write(path, content) {
                    Ok(()) => "write: ok".to_string(),
                    Err(e) => format!("write: {}", io_err(&e)),
                };
                let get = match http_get(str_arg(&args, "url")?) {
                    Ok(out) => format!("http: {}", out.replace('\n', " ")),
                    Err(e) => format!("http: {e:?}"),
                };
                Ok(format!("{write}\n{get}"))
            }
            "sleep" => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(3_600_000);
                std::thread::sleep(std::time::Duration::from_millis(ms));
                Ok(format!("slept {ms} ms"))
            }
            "cwd" => Ok(match std::env::current_dir() {
                Ok(dir) => format!("ok: {}", dir.display()),
                Err(e) => io_err(&e),
            }),
            "count" => {
                use std::sync::atomic::{AtomicU32, Ordering};
                static CALLS: AtomicU32 = AtomicU32::new(0);
                let n = CALLS.fetch_add(1, Ordering::Relaxed) + 1;
                Ok(format!("call {n} of this instance"))
            }
            "ok" => Ok("ok".into()),
            "fail" => Err(Error::Failed("deliberate failure".into())),
            "strict" => match args.get("n").and_then(Value::as_i64) {
                Some(n) => Ok(format!("n={n}")),
                None => Err(Error::InvalidArgs("n must be an integer".into())),
            },
            _ => Err(Error::Failed(format!("unknown tool: {name}"))),
        }
    }
}

export!(Component);

fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, Error> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| Error::InvalidArgs(format!("`{key}` must be a string")))
}

fn io_err(e: &std::io::Error) -> String {
    format!("err: {:?}: {e}", e.kind())
}

fn spin() -> ! {
    let mut counter: u64 = 0;
    loop {
        counter = black_box(counter.wrapping_add(1));
    }
}

fn bomb() -> ! {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        hoard.push(vec![0xA5; 1 << 20]);
        black_box(&mut hoard);
    }
}

fn flood(args: &Map<String, Value>) -> String {
    let bytes = args
        .get("bytes")
        .and_then(Value::as_u64)
        .unwrap_or(10_000_000);
    let mut stdout = std::io::stdout();
    let _ = stdout.write_all(&vec![b'o'; 1 << 20]);
    let _ = stdout.flush();
    "x".repeat(bytes as usize)
}

/// Non-tail recursion with a 1 KiB frame that must live on the stack.
#[inline(never)]
fn recurse(depth: u64) -> u64 {
    let mut frame = [0u8; 1024];
    frame[0] = depth as u8;
    black_box(&mut frame);
    if black_box(depth) == u64::MAX {
        return 0;
    }
    let below = recurse(black_box(depth + 1));
    below.wrapping_add(u64::from(frame[black_box(0)]))
}

fn env_dump() -> String {
    let vars: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
    let mut out = format!("count={}", vars.len());
    for line in vars {
        out.push('\n');
        out.push_str(&line);
    }
    out
}

fn net(args: &Map<String, Value>) -> String {
    use std::net::{TcpStream, ToSocketAddrs, UdpSocket};
    let addr = args
        .get("addr")
        .and_then(Value::as_str)
        .unwrap_or("127.0.0.1:80");
    let tcp = match TcpStream::connect(addr) {
        Ok(stream) => format!("tcp: CONNECTED to {addr} ({:?})", stream.peer_addr().ok()),
        Err(e) => format!("tcp: denied: {e}"),
    };
    let udp = match UdpSocket::bind("0.0.0.0:0") {
        Ok(socket) => format!("udp: CONNECTED (bound {:?})", socket.local_addr().ok()),
        Err(e) => format!("udp: denied: {e}"),
    };
    let dns = match "localhost:80".to_socket_addrs() {
        Ok(addrs) => format!("dns: CONNECTED (resolved {:?})", addrs.collect::<Vec<_>>()),
        Err(e) => format!("dns: denied: {e}"),
    };
    format!("{tcp}\n{udp}\n{dns}")
}

fn fs_probe(args: &Map<String, Value>) -> Result<String, Error> {
    use std::fs;
    let op = str_arg(args, "op")?;
    let path = str_arg(args, "path")?;
    let content = args.get("content").and_then(Value::as_str).unwrap_or("");
    let result = match op {
        "read" => fs::read(path).map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
        "write" => fs::write(path, content).map(|()| format!("wrote {} bytes", content.len())),
        "list" => fs::read_dir(path).and_then(|entries| {
            let mut names = entries
                .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect::<std::io::Result<Vec<_>>>()?;
            names.sort();
            let mut out = format!("{} entries", names.len());
            for name in names {
                out.push('\n');
                out.push_str(&name);
            }
            Ok(out)
        }),
        "delete" => match fs::remove_file(path) {
            Ok(()) => Ok("deleted".into()),
            Err(e) => match fs::symlink_metadata(path) {
                Ok(meta) if meta.is_dir() => fs::remove_dir(path).map(|()| "deleted".into()),
                _ => Err(e),
            },
        },
        "mkdir" => fs::create_dir(path).map(|()| "created".into()),
        "symlink" => {
            // Raw WASI: a link at `path` (in the `.` preopen) to `content`.
            let dirs = wasip2::filesystem::preopens::get_directories();
            let Some((dir, _)) = dirs.iter().find(|(_, name)| name == ".") else {
                return Ok("err: no . preopen".into());
            };
            return Ok(match dir.symlink_at(content, path) {
                Ok(()) => "linked".into(),
                Err(code) => format!("err: {code:?}"),
            });
        }
        "stat" => fs::metadata(path).map(|meta| {
            let kind = if meta.is_dir() {
                "dir"
            } else if meta.is_file() {
                "file"
            } else {
                "other"
            };
            format!("kind={kind} len={}", meta.len())
        }),
        _ => {
            return Err(Error::InvalidArgs(format!(
                "unknown op `{op}`: use read, write, list, delete, mkdir or stat"
            )));
        }
    };
    Ok(match result {
        Ok(details) => format!("ok: {details}"),
        Err(e) => io_err(&e),
    })
}

fn fs_preopens() -> String {
    wasip2::filesystem::preopens::get_directories()
        .into_iter()
        .map(|(_, name)| name)
        .collect::<Vec<_>>()
        .join("\n")
}

fn raw_write(args: &Map<String, Value>) -> Result<String, Error> {
    use wasip2::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
    let preopen = str_arg(args, "preopen")?;
    let path = str_arg(args, "path")?;
    let content = str_arg(args, "content")?.as_bytes();
    let Some((dir, _)) = wasip2::filesystem::preopens::get_directories()
        .into_iter()
        .find(|(_, name)| name == preopen)
    else {
        return Ok(format!("err: no preopen named {preopen:?}"));
    };
    let file = match dir.open_at(
        PathFlags::empty(),
        path,
        OpenFlags::CREATE | OpenFlags::TRUNCATE,
        DescriptorFlags::WRITE,
    ) {
        Ok(file) => file,
        Err(code) => return Ok(format!("err: {code:?}")),
    };
    let mut written = 0;
    while written < content.len() {
        match file.write(&content[written..], written as u64) {
            Ok(0) => return Ok("err: wrote 0 bytes".into()),
            Ok(n) => written += n as usize,
            Err(code) => return Ok(format!("err: {code:?}")),
        }
    }
    Ok("ok".into())
}

/// A refusal by the host is a `denied` tool error (as a real fetch tool would
/// report it); any other failure is returned as `err: CODE` for the tests.
fn refused(code: wasip2::http::types::ErrorCode) -> Result<String, Error> {
    match code {
        wasip2::http::types::ErrorCode::HttpRequestDenied => {
            Err(Error::Denied("the host refused the request".into()))
        }
        other => Ok(format!("err: {other:?}")),
    }
}

/// A GET through wasi:http/outgoing-handler.
fn http_get(url: &str) -> Result<String, Error> {
    use wasip2::http::outgoing_handler::handle;
    use wasip2::http::types::{Fields, OutgoingRequest, Scheme};
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| Error::InvalidArgs("`url` needs a scheme".into()))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let request = OutgoingRequest::new(Fields::new());
    let scheme = match scheme {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => Scheme::Other(other.into()),
    };
    let set = request
        .set_scheme(Some(&scheme))
        .and(request.set_authority(Some(authority)))
        .and(request.set_path_with_query(Some(if path.is_empty() { "/" } else { path })));
    if set.is_err() {
        return Ok("err: invalid url".into());
    }
    let pending = match handle(request, None) {
        Ok(p) => p,
        Err(code) => return refused(code),
    };
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(r))) => r,
        Some(Ok(Err(code))) => return refused(code),
        Some(Err(())) | None => return Ok("err: no response".into()),
    };
    let status = response.status();
    let body = response
        .consume()
        .map_err(|()| Error::Failed("no body".into()))?;
    let stream = body
        .stream()
        .map_err(|()| Error::Failed("no body stream".into()))?;
    let mut bytes = Vec::new();
    while let Ok(chunk) = stream.blocking_read(64 << 10) {
        bytes.extend_from_slice(&chunk);
    }
    Ok(format!(
        "status={status}\n{}",
        String::from_utf8_lossy(&bytes)
    ))
}

/// Sends `n` GETs to `url` (`http://authority/`) without waiting for any,
/// holds every one, waits `ms`, then counts: `waiting=W` and each way the
/// others ended (`ConnectionLimitReached=R`, ...), sorted.
fn http_hold(url: &str, n: u64, ms: u64) -> String {
    use wasip2::http::outgoing_handler::handle;
    use wasip2::http::types::{Fields, OutgoingRequest, Scheme};
    let authority = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default();
    let mut ends = std::collections::BTreeMap::<String, u64>::new();
    let mut held = Vec::new();
    for _ in 0..n {
        let request = OutgoingRequest::new(Fields::new());
        let _ = request.set_scheme(Some(&Scheme::Http));
        let _ = request.set_authority(Some(authority));
        let _ = request.set_path_with_query(Some("/"));
        match handle(request, None) {
            Ok(pending) => held.push(pending),
            Err(code) => *ends.entry(format!("{code:?}")).or_default() += 1,
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(ms));
    let mut waiting = 0;
    let mut responses = Vec::new();
    for pending in &held {
        // Asks the host to look (`get` alone only reads what it saw).
        pending.subscribe().ready();
        match pending.get() {
            None => waiting += 1,
            Some(Ok(Ok(response))) => responses.push(response),
            Some(Ok(Err(code))) => *ends.entry(format!("{code:?}")).or_default() += 1,
            Some(Err(())) => *ends.entry("taken".into()).or_default() += 1,
        }
    }
    *ends.entry("answered".into()).or_default() += responses.len() as u64;
    let ends: Vec<String> = ends.iter().map(|(k, v)| format!("{k}={v}")).collect();
    black_box(&held);
    format!("waiting={waiting} {}", ends.join(" "))
}

/// Writes the body of a POST that is never handed to the host: the body
/// pipe fills, and a host that waits for room waits forever.
fn http_unsent(url: &str) -> Result<String, Error> {
    use wasip2::http::types::{Fields, Method, OutgoingRequest, Scheme};
    let (_, rest) = url.split_once("://").unwrap_or(("http", url));
    let authority = rest.split('/').next().unwrap_or(rest);
    let request = OutgoingRequest::new(Fields::new());
    let _ = request.set_method(&Method::Post);
    let _ = request.set_scheme(Some(&Scheme::Http));
    let _ = request.set_authority(Some(authority));
    let body = request
        .body()
        .map_err(|()| Error::Failed("no body".into()))?;
    let stream = body
        .write()
        .map_err(|()| Error::Failed("no body stream".into()))?;
    // The most one blocking write may take.
    let chunk = vec![b'x'; 4096];
    let mut written = 0u64;
    while stream.blocking_write_and_flush(&chunk).is_ok() {
        written += chunk.len() as u64;
    }
    Ok(format!("the host took {written} bytes, then refused more"))
}

/// Makes the host allocate: every header value is copied into host memory.
fn host_bomb() -> Result<String, Error> {
    use wasip2::http::types::Fields;
    // Under the per-fields size limit; without bound in number.
    let value = vec![b'v'; 4 << 10];
    let mut kept = Vec::new();
    for i in 0u64.. {
        let f = Fields::new();
        for j in 0..8 {
            let _ = f.append(&format!("x-{i}-{j}"), &value);
        }
        kept.push(f);
        black_box(&kept);
    }
    Ok(format!("held {} fields", kept.len()))
}

//! `fetch`: the built-in web tools of warden, as one WASI 0.2 component.
//!
//! Every request goes through `wasi:http`; the host checks each one (every
//! redirect is a new request made here) against the tool's network grants,
//! adds the secrets the policy names, and scrubs them from responses. This
//! crate only makes the requests and turns pages into text the model reads.
//!
//! Table of contents:
//! - `bindings`: the WIT bindings and the exported `describe` / `call`.
//! - `http`: GET with redirects, a deadline and a body cap; errors in words.
//! - `decode`: gzip, deflate and br bodies undone, within the same cap.
//! - `page`: content types, HTML to Markdown, pieces of long pages.
//! - `search`: `web_search` over the provider the policy names.

#[cfg(target_os = "wasi")]
mod bindings;
mod decode;
#[cfg(target_os = "wasi")]
mod http;
mod page;
#[cfg(target_os = "wasi")]
mod search;

use serde_json::{Map, Value};

/// Why a call failed, as the model reads it.
#[derive(Debug, PartialEq, Eq)]
pub enum ToolError {
    /// Arguments that passed the schema but are still wrong.
    InvalidArgs(String),
    /// Nothing at that address (HTTP 404, 410).
    NotFound(String),
    /// Refused by the policy.
    Denied(String),
    /// Anything else.
    Failed(String),
}

/// One tool of the component.
pub struct Tool {
    /// snake_case name the model calls.
    pub name: &'static str,
    /// What the tool does, written for the model.
    pub description: &'static str,
    /// JSON Schema of the argument object.
    pub schema: &'static str,
}

/// Every tool this component offers.
pub const TOOLS: &[Tool] = &[
    Tool {
        name: "fetch",
        description: "Fetches a URL with HTTP GET and returns its content as text: HTML pages \
            as Markdown (headings, links, lists; scripts, navigation and footers left out), \
            JSON and plain text as they are. Binary content (images, PDFs, archives) is \
            refused. Long content comes in pieces: the answer states the total length and \
            the `start_index` to ask for the next piece. Only hosts the user granted can be \
            reached.",
        schema: r#"{"type":"object","properties":{"url":{"type":"string","description":"http:// or https:// URL"},"max_length":{"type":"integer","minimum":1,"maximum":200000,"description":"Characters to return (default 20000)"},"start_index":{"type":"integer","minimum":0,"description":"Character to start at, for the next piece of a long page (default 0)"}},"required":["url"],"additionalProperties":false}"#,
    },
    Tool {
        name: "web_search",
        description: "Searches the web with the search provider the user configured and \
            returns one result per entry: title, URL and a snippet. Use `fetch` on a result's \
            URL to read it.",
        schema: r#"{"type":"object","properties":{"query":{"type":"string","minLength":1,"maxLength":400},"count":{"type":"integer","minimum":1,"maximum":20,"description":"Results to return (default 5)"}},"required":["query"],"additionalProperties":false}"#,
    },
];

/// Runs tool `name` on its JSON arguments.
pub fn call(name: &str, args: &str) -> Result<String, ToolError> {
    let args: Map<String, Value> = serde_json::from_str(args)
        .map_err(|e| ToolError::InvalidArgs(format!("arguments are not a JSON object: {e}")))?;
    run(name, &args)
}

#[cfg(target_os = "wasi")]
fn run(name: &str, args: &Map<String, Value>) -> Result<String, ToolError> {
    match name {
        "fetch" => page::fetch(args),
        "web_search" => search::search(args),
        other => Err(ToolError::NotFound(format!(
            "unknown tool {other:?}; this component offers: fetch, web_search"
        ))),
    }
}

#[cfg(not(target_os = "wasi"))]
fn run(name: &str, _args: &Map<String, Value>) -> Result<String, ToolError> {
    Err(ToolError::Failed(format!("{name} runs only inside warden")))
}

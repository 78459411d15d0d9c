//! What `fetch` returns: the page as text the model reads, in pieces.

#[cfg(target_os = "wasi")]
use serde_json::{Map, Value};

use crate::ToolError;

/// Characters returned when the call does not say.
#[cfg(target_os = "wasi")]
pub const DEFAULT_LENGTH: usize = 20_000;

/// How a response body becomes text.
#[derive(Debug, PartialEq, Eq)]
pub enum Kind {
    /// HTML: converted to Markdown.
    Html,
    /// JSON, XML, plain text: as it is.
    Text,
    /// Anything else: refused.
    Binary,
}

/// The kind of a body from its content type, sniffed when there is none.
pub fn kind(content_type: Option<&str>, body: &[u8]) -> Kind {
    let Some(ct) = content_type else {
        let head = &body[..body.len().min(1024)];
        return if head.contains(&0) || std::str::from_utf8(body).is_err() {
            Kind::Binary
        } else if head.trim_ascii_start().starts_with(b"<") {
            Kind::Html
        } else {
            Kind::Text
        };
    };
    let mime = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match mime.as_str() {
        "text/html" | "application/xhtml+xml" => Kind::Html,
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/ecmascript"
        | "application/x-ndjson"
        | "application/yaml"
        | "application/toml"
        | "application/x-www-form-urlencoded" => Kind::Text,
        m if m.starts_with("text/") || m.ends_with("+json") || m.ends_with("+xml") => Kind::Text,
        _ => Kind::Binary,
    }
}

/// HTML as Markdown, without scripts, styles and page chrome.
pub fn markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "svg", "iframe", "nav", "footer", "aside",
            "form", "button",
        ])
        .build();
    converter.convert(html).unwrap_or_else(|_| html.to_string())
}

/// The piece of `text` from character `start`, at most `len` characters,
/// with a header that states the total and how to get the next piece.
pub fn piece(
    url: &str,
    note: &str,
    text: &str,
    start: usize,
    len: usize,
) -> Result<String, ToolError> {
    let total = text.chars().count();
    if total == 0 {
        return Ok(format!("URL: {url}\n{note}\n(the page is empty)"));
    }
    if start >= total {
        return Err(ToolError::InvalidArgs(format!(
            "start_index {start} is past the end: the content has {total} characters"
        )));
    }
    let from = text
        .char_indices()
        .nth(start)
        .map_or(text.len(), |(i, _)| i);
    let end = (start + len).min(total);
    let to = text.char_indices().nth(end).map_or(text.len(), |(i, _)| i);
    let more = if end < total {
        format!(
            "; showing characters {start}-{end}. Call fetch again with start_index={end} for the next piece"
        )
    } else if start > 0 {
        format!("; showing characters {start}-{end}, the end")
    } else {
        String::new()
    };
    Ok(format!(
        "URL: {url}\n{note}\nLength: {total} characters{more}.\n\n{}",
        &text[from..to]
    ))
}

#[cfg(target_os = "wasi")]
fn int(args: &Map<String, Value>, key: &str) -> Option<usize> {
    args.get(key).and_then(Value::as_u64).map(|n| n as usize)
}

/// `fetch`: GET the URL, turn it into text, return the piece asked for.
#[cfg(target_os = "wasi")]
pub fn fetch(args: &Map<String, Value>) -> Result<String, ToolError> {
    use crate::http::{Deadline, get};
    let url = args.get("url").and_then(Value::as_str).unwrap_or_default();
    let start = int(args, "start_index").unwrap_or(0);
    let len = int(args, "max_length").unwrap_or(DEFAULT_LENGTH).max(1);
    let page = get(
        url,
        &[(
            "accept",
            "text/html, application/json;q=0.9, text/*;q=0.8, */*;q=0.1",
        )],
        Deadline::from_host(),
    )?;
    let ct = page.content_type.as_deref();
    let shown_ct = ct.unwrap_or("none");
    if page.status >= 400 {
        let excerpt: String = String::from_utf8_lossy(&page.body)
            .chars()
            .take(300)
            .collect();
        let msg = format!(
            "HTTP {} from {}: the server refused or failed the request. It said: {}",
            page.status,
            page.url,
            excerpt.trim()
        );
        return Err(if matches!(page.status, 404 | 410) {
            ToolError::NotFound(msg)
        } else {
            ToolError::Failed(msg)
        });
    }
    let (text, note) = match kind(ct, &page.body) {
        Kind::Binary => {
            return Err(ToolError::Failed(format!(
                "refused: {} is binary content ({shown_ct}, {} bytes); fetch returns HTML, JSON \
                 and text only",
                page.url,
                page.body.len()
            )));
        }
        Kind::Html => (
            markdown(&String::from_utf8_lossy(&page.body)),
            format!("Content-Type: {shown_ct} (converted to Markdown)"),
        ),
        Kind::Text => (
            String::from_utf8_lossy(&page.body).into_owned(),
            format!("Content-Type: {shown_ct}"),
        ),
    };
    piece(page.url.as_str(), &note, &text, start, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        assert_eq!(kind(Some("text/html; charset=utf-8"), b""), Kind::Html);
        assert_eq!(kind(Some("application/json"), b"{}"), Kind::Text);
        assert_eq!(kind(Some("application/vnd.api+json"), b"{}"), Kind::Text);
        assert_eq!(kind(Some("image/png"), b"\x89PNG"), Kind::Binary);
        assert_eq!(kind(None, b"\x00\x01"), Kind::Binary);
        assert_eq!(kind(None, b"plain"), Kind::Text);
    }

    #[test]
    fn html_becomes_markdown_without_chrome() {
        let md = markdown(
            "<html><head><script>x()</script></head><body><nav>menu</nav><h1>Title</h1>\
             <p>See <a href=\"https://e.com/a\">the link</a>.</p></body></html>",
        );
        assert!(md.contains("# Title"), "{md}");
        assert!(md.contains("[the link](https://e.com/a)"), "{md}");
        assert!(!md.contains("menu") && !md.contains("x()"), "{md}");
    }

    #[test]
    fn pieces_state_the_total_and_the_next_start() {
        let text = "é".repeat(25);
        let p = piece("u", "n", &text, 0, 10).unwrap();
        assert!(p.contains("Length: 25 characters; showing characters 0-10. Call fetch again with start_index=10"), "{p}");
        assert!(p.ends_with(&"é".repeat(10)));
        let p = piece("u", "n", &text, 20, 10).unwrap();
        assert!(p.contains("showing characters 20-25, the end"), "{p}");
        assert!(piece("u", "n", &text, 25, 10).is_err());
    }
}

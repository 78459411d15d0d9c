//! `web_search`: one request to the provider the policy names, answered as
//! title, URL and snippet lines. A key the provider needs is added by the
//! host (a `secret` grant); this component never holds it.

use serde_json::{Map, Value};
use url::Url;

use crate::ToolError;
use crate::http::{Deadline, get, post};

/// Brave Search's web endpoint.
const BRAVE: &str = "https://api.search.brave.com/res/v1/web/search";
/// Tavily's search endpoint.
const TAVILY: &str = "https://api.tavily.com/search";

fn setting(key: &str) -> Option<String> {
    std::env::var(format!("WARDEN_SETTING_{key}"))
        .ok()
        .filter(|v| !v.trim().is_empty())
}

fn unavailable(why: &str) -> ToolError {
    ToolError::Failed(format!(
        "web_search is unavailable: {why}. Only the user can configure it, in warden.toml: \
         `[tools.web_search]` with `settings = {{ provider = \"searxng\", url = \"https://HOST\" }}` \
         and `network = [\"HOST\"]`, or provider \"brave\" or \"tavily\" with a secret for \
         its key. Until then, use `fetch` on URLs you know."
    ))
}

/// `web_search`: the provider from the settings, `count` results.
pub fn search(args: &Map<String, Value>) -> Result<String, ToolError> {
    let query = args
        .get("query")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let count = args
        .get("count")
        .and_then(Value::as_u64)
        .unwrap_or(5)
        .clamp(1, 20) as usize;
    let Some(provider) = setting("PROVIDER") else {
        return Err(unavailable("no search provider is configured"));
    };
    let (base, snippet) = match provider.as_str() {
        "searxng" => {
            let Some(base) = setting("URL") else {
                return Err(unavailable(
                    "provider \"searxng\" needs the `url` of the instance",
                ));
            };
            let base = format!("{}/search", base.trim_end_matches('/'));
            (base, "content")
        }
        "brave" => (
            setting("URL").unwrap_or_else(|| BRAVE.to_string()),
            "description",
        ),
        "tavily" => (
            setting("URL").unwrap_or_else(|| TAVILY.to_string()),
            "content",
        ),
        other => {
            return Err(unavailable(&format!(
                "the provider `{other}` is not known (use \"searxng\", \"brave\" or \"tavily\")"
            )));
        }
    };
    let mut url = Url::parse(&base)
        .map_err(|e| unavailable(&format!("the provider url `{base}` is not a URL ({e})")))?;
    let accept = [("accept", "application/json")];
    let page = match provider.as_str() {
        // Tavily takes the query as JSON in a POST.
        "tavily" => {
            let body = serde_json::json!({ "query": query, "max_results": count });
            post(
                url.as_str(),
                &[accept[0], ("content-type", "application/json")],
                body.to_string().as_bytes(),
                Deadline::from_host(),
            )?
        }
        _ => {
            url.query_pairs_mut().append_pair("q", query);
            if provider == "searxng" {
                url.query_pairs_mut().append_pair("format", "json");
            } else {
                url.query_pairs_mut()
                    .append_pair("count", &count.to_string());
            }
            get(url.as_str(), &accept, Deadline::from_host())?
        }
    };
    if page.status >= 400 {
        let excerpt: String = String::from_utf8_lossy(&page.body)
            .chars()
            .take(200)
            .collect();
        let hint = if matches!(page.status, 401 | 403) {
            " (a missing or wrong API key: the user sets it as a secret in warden.toml)"
        } else {
            ""
        };
        return Err(ToolError::Failed(format!(
            "the search provider answered HTTP {}{hint}: {}",
            page.status,
            excerpt.trim()
        )));
    }
    let doc: Value = serde_json::from_slice(&page.body).map_err(|e| {
        ToolError::Failed(format!("the search provider did not answer with JSON: {e}"))
    })?;
    let list = match provider.as_str() {
        "brave" => &doc["web"]["results"],
        _ => &doc["results"],
    };
    let results = list.as_array().map(Vec::as_slice).unwrap_or_default();
    if results.is_empty() {
        return Ok(format!("No results for \"{query}\"."));
    }
    let mut out = String::new();
    for (i, r) in results.iter().take(count).enumerate() {
        let title = text(&r["title"]);
        let link = text(&r["url"]);
        let snip = text(&r[snippet]);
        out.push_str(&format!("{}. {title}\n   {link}\n   {snip}\n", i + 1));
    }
    Ok(out)
}

/// A JSON string without markup, on one line.
fn text(v: &Value) -> String {
    let s = v.as_str().unwrap_or_default();
    let mut out = String::with_capacity(s.len());
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if in_tag => {}
            c if c.is_whitespace() => {
                if !out.ends_with(' ') {
                    out.push(' ');
                }
            }
            c => out.push(c),
        }
    }
    out.trim().to_string()
}

//! The client: building the request and retrying failed attempts.

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use reqwest::Url;
use serde::Serialize;
use serde_json::Value;

use super::retry::{self, Failure};
use super::shown::Shown;
use super::{ClientConfig, ClientError, ClientEvent, Completion, Request, Structured};
use crate::{Message, ToolDef};

/// A chat-completions client for one server and model.
pub struct Client {
    pub(crate) http: reqwest::Client,
    pub(crate) cfg: ClientConfig,
    /// Where requests go.
    pub(crate) url: Url,
    /// The same URL as shown in errors: without user info or query, which
    /// may hold credentials.
    pub(crate) endpoint: String,
    /// The server refused `max_tokens` once (OpenAI's reasoning models
    /// want another field): it is not sent again.
    no_max_tokens: AtomicBool,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("endpoint", &self.endpoint)
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client for `cfg`. Fails only on an unusable base URL.
    pub fn new(cfg: ClientConfig) -> Result<Client, ClientError> {
        let invalid = |reason: String| ClientError::Malformed {
            endpoint: cfg.base_url.clone(),
            reason,
        };
        let mut url = Url::parse(cfg.base_url.trim())
            .map_err(|e| invalid(format!("invalid base url: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.cannot_be_a_base() {
            return Err(invalid(
                "invalid base url: expected http:// or https://".into(),
            ));
        }
        let path = format!("{}/chat/completions", url.path().trim_end_matches('/'));
        url.set_path(&path);
        let mut shown = url.clone();
        // Both setters only fail on URLs that cannot have credentials, which
        // http(s) URLs can.
        let _ = shown.set_username("");
        let _ = shown.set_password(None);
        shown.set_query(None);
        shown.set_fragment(None);
        // A global timeout would cut long streamed answers: the idle timeout
        // is enforced per read instead.
        let http = reqwest::Client::builder()
            .connect_timeout(cfg.connect_timeout)
            .build()
            .map_err(|e| invalid(format!("cannot build the http client: {e}")))?;
        Ok(Client {
            http,
            cfg,
            url,
            endpoint: shown.to_string(),
            no_max_tokens: AtomicBool::new(false),
        })
    }

    /// The configuration this client was made with.
    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }

    /// The endpoint as shown to the user (no credentials).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Asks for the next assistant message, reporting text as it streams in
    /// and each retry before its pause.
    ///
    /// Connection errors, timeouts, 408/409/429/5xx (as a status, or as the
    /// code of an error the server sends in the stream), and cut streams
    /// are retried up to `max_attempts` in total, and while the
    /// `request_timeout` deadline is not reached; other errors return at
    /// once. With [`Request::tools_optional`], the second failure of the
    /// server on a request carrying tools gives
    /// [`ClientError::ToolsFailing`]. Text is reported once: a retried
    /// answer is reported from where the earlier attempt stopped.
    pub async fn complete(
        &self,
        req: Request<'_>,
        on_event: &mut (dyn FnMut(ClientEvent<'_>) + Send),
    ) -> Result<Completion, ClientError> {
        let encode = |max_tokens: bool| {
            request_body(&self.cfg, &req, max_tokens)
                .map(bytes::Bytes::from)
                .map_err(|e| ClientError::Malformed {
                    endpoint: self.endpoint.clone(),
                    reason: format!("cannot encode the request: {e}"),
                })
        };
        let mut max_tokens =
            req.max_tokens.is_some() && !self.no_max_tokens.load(Ordering::Relaxed);
        let mut body = encode(max_tokens)?;
        let tools_sent = !req.tools.is_empty();
        let max_attempts = self.cfg.max_attempts.max(1);
        let deadline = Instant::now() + self.cfg.request_timeout;
        let mut shown = Shown::default();
        let mut causes: Vec<String> = Vec::new();
        let mut tools_failures = Vec::new();
        let mut attempt = 1;
        loop {
            shown.restart();
            let outcome = {
                let mut report = |e: ClientEvent<'_>| match e {
                    ClientEvent::Text(t) => shown.text(t, &mut *on_event),
                    other => on_event(other),
                };
                super::attempt::run(self, &body, tools_sent, deadline, &mut report).await
            };
            let Failure {
                error,
                retry,
                retry_after,
                tools_failure,
            } = match outcome {
                Ok(completion) => return Ok(completion),
                Err(failure) => failure,
            };
            if max_tokens && super::verdict::refuses_max_tokens(&error) {
                // Not an attempt of the request: the same one without it.
                self.no_max_tokens.store(true, Ordering::Relaxed);
                max_tokens = false;
                body = encode(false)?;
                continue;
            }
            if tools_failure && req.tools_optional {
                tools_failures.push(error.brief());
                if tools_failures.len() >= 2 {
                    return Err(ClientError::ToolsFailing {
                        endpoint: self.endpoint.clone(),
                        causes: tools_failures,
                    });
                }
            }
            let wait = retry::wait(&self.cfg, attempt, retry_after);
            // No retry whose pause would end past the deadline.
            let too_late = Instant::now() + wait >= deadline;
            if !retry || attempt >= max_attempts || too_late {
                return Err(error.with_attempts(attempt, causes));
            }
            let reason = error.brief();
            on_event(ClientEvent::Retry {
                attempt: attempt + 1,
                wait,
                reason: reason.clone(),
            });
            causes.push(reason);
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }
}

/// The JSON body: `model`, `messages`, `tools` (only when there are some),
/// the reply's schema (`response_format` or `format`) and `max_tokens`
/// when asked for (and `max_tokens` allowed), `stream`, and
/// `stream_options.include_usage` so that streamed answers report token
/// counts too. Serialized from the borrowed conversation, in one pass,
/// with nothing copied but user messages in a row (see [`Messages`]).
pub(crate) fn request_body(
    cfg: &ClientConfig,
    req: &Request<'_>,
    max_tokens: bool,
) -> serde_json::Result<Vec<u8>> {
    let (response_format, format) = match req.format {
        Some((Structured::ResponseFormat, schema)) => (
            Some(ResponseFormat {
                kind: "json_schema",
                json_schema: JsonSchema {
                    name: "reply",
                    schema,
                },
            }),
            None,
        ),
        Some((Structured::Format, schema)) => (None, Some(schema)),
        None => (None, None),
    };
    serde_json::to_vec(&Body {
        model: &cfg.model,
        messages: Messages(req.messages),
        tools: Tools(req.tools),
        response_format,
        format,
        max_tokens: req.max_tokens.filter(|_| max_tokens),
        stream: cfg.stream,
        stream_options: cfg.stream.then_some(StreamOptions {
            include_usage: true,
        }),
    })
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Messages<'a>,
    #[serde(skip_serializing_if = "Tools::is_empty")]
    tools: Tools<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u64>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

/// `{"type": "json_schema", "json_schema": {"name": …, "schema": …}}`.
#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: JsonSchema<'a>,
}

#[derive(Serialize)]
struct JsonSchema<'a> {
    name: &'static str,
    schema: &'a Value,
}

/// The conversation as sent. User messages in a row (a turn whose request
/// failed or got an empty answer, then the next one) are sent as one, their
/// texts a blank line apart: chat templates of many open models (Mistral,
/// Gemma, …) refuse a conversation whose roles do not alternate. The
/// transcript keeps them apart.
struct Messages<'a>(&'a [Message]);

impl Serialize for Messages<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let users = |a: &Message, b: &Message| {
            matches!((a, b), (Message::User { .. }, Message::User { .. }))
        };
        s.collect_seq(self.0.chunk_by(users).map(|run| {
            match run {
                [one] => Cow::Borrowed(one),
                several => Cow::Owned(Message::User {
                    content: several
                        .iter()
                        .filter_map(|m| match m {
                            Message::User { content } => Some(content.as_str()),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join("\n\n"),
                }),
            }
        }))
    }
}

struct Tools<'a>(&'a [ToolDef]);

impl Tools<'_> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Tools<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(ToolDef::wire))
    }
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// A transport error in words, without its URL (which `ClientError` already
/// names) and with its causes, e.g. `error sending request: client error
/// (Connect): tcp connect error: Connection refused (os error 111)`.
pub(crate) fn describe(e: &reqwest::Error) -> String {
    let mut text = String::new();
    let mut source: Option<&dyn std::error::Error> = Some(e);
    while let Some(err) = source {
        let piece = err.to_string();
        // reqwest's message embeds the URL; the endpoint is reported apart.
        let piece = match piece.split_once(" for url (") {
            Some((head, _)) => head.to_string(),
            None => piece,
        };
        if !text.contains(&piece) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&piece);
        }
        source = err.source();
    }
    text.to_lowercase()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::ToolCall;

    /// The body as it was built before, through a `Value`: the bytes sent
    /// must not change.
    fn through_value(cfg: &ClientConfig, req: &Request<'_>) -> Vec<u8> {
        let mut body = json!({
            "model": cfg.model,
            "messages": req.messages,
        });
        if !req.tools.is_empty() {
            body["tools"] = req.tools.iter().map(ToolDef::to_json).collect();
        }
        body["stream"] = cfg.stream.into();
        if cfg.stream {
            body["stream_options"] = json!({ "include_usage": true });
        }
        serde_json::to_vec(&body).unwrap()
    }

    #[test]
    fn the_body_is_the_same_json_as_through_a_value() {
        let messages = [
            Message::System {
                content: "be \"brief\"\n\u{1}é".into(),
            },
            Message::User {
                content: "hi".into(),
            },
            Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall::new("c1", "read_file", r#"{"path":"a"}"#)],
            },
            Message::Tool {
                tool_call_id: "c1".into(),
                content: "text".into(),
            },
            Message::Assistant {
                content: Some("done".into()),
                tool_calls: Vec::new(),
            },
        ];
        let tools = [ToolDef {
            name: "read_file".into(),
            description: "Reads.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}, "limit": {"minimum": 1.5}}, "required": ["path"]}),
        }];
        for stream in [false, true] {
            let mut cfg = ClientConfig::new("http://localhost/v1", "m");
            cfg.stream = stream;
            for tools in [&tools[..], &[]] {
                let req = Request::new(&messages, tools);
                let bytes = request_body(&cfg, &req, true).unwrap();
                assert_eq!(
                    String::from_utf8(bytes.clone()).unwrap(),
                    String::from_utf8(through_value(&cfg, &req)).unwrap()
                );
                let v: Value = serde_json::from_slice(&bytes).unwrap();
                assert_eq!(v.get("tools").is_some(), !tools.is_empty());
            }
        }
    }

    #[test]
    fn a_reply_schema_goes_in_the_field_the_server_takes_with_the_bound() {
        let messages = [Message::User {
            content: "hi".into(),
        }];
        let schema = json!({"type": "object"});
        let cfg = ClientConfig::new("http://localhost/v1", "m");
        let body = |form, max_tokens| {
            let req = Request {
                format: Some((form, &schema)),
                max_tokens: Some(100),
                ..Request::new(&messages, &[])
            };
            let bytes = request_body(&cfg, &req, max_tokens).unwrap();
            serde_json::from_slice::<Value>(&bytes).unwrap()
        };
        let v = body(Structured::ResponseFormat, true);
        assert_eq!(
            v["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}})
        );
        assert_eq!(v["max_tokens"], 100);
        assert!(v.get("format").is_none());
        let v = body(Structured::Format, false);
        assert_eq!(v["format"], schema);
        assert!(v.get("response_format").is_none() && v.get("max_tokens").is_none());
    }

    #[test]
    fn user_messages_in_a_row_are_sent_as_one_and_the_rest_as_they_are() {
        let user = |t: &str| Message::User { content: t.into() };
        let messages = [
            Message::System {
                content: "sys".into(),
            },
            user("first"),
            user("second"),
            user("third"),
            Message::Assistant {
                content: Some("ok".into()),
                tool_calls: Vec::new(),
            },
            user("alone"),
        ];
        let cfg = ClientConfig::new("http://localhost/v1", "m");
        let req = Request::new(&messages, &[]);
        let v: Value = serde_json::from_slice(&request_body(&cfg, &req, true).unwrap()).unwrap();
        assert_eq!(
            v["messages"],
            json!([
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "first\n\nsecond\n\nthird"},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "alone"},
            ])
        );
    }
}

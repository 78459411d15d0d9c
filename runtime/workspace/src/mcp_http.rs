//! The HTTP side of a `[mcp.NAME]` server reached by URL: rmcp's
//! streamable-HTTP client transport, sending through the sandbox's checked
//! [`Outbound`] (granted hosts only, names resolved and checked by warden,
//! secrets added after the check and scrubbed from answers).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::{Error as SseError, Sse, SseStream};
use warden_sandbox::{Outbound, OutboundBody, OutboundError};

const SESSION_ID: &str = "Mcp-Session-Id";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";

/// Most bytes read from one answer (a JSON body, or one event stream
/// before it is reconnected).
const MAX_ANSWER: usize = 16 << 20;
/// Most bytes of an error page kept for the message.
const MAX_ERROR_TEXT: usize = 2 << 10;

/// rmcp's HTTP client, over warden's checked sending.
#[derive(Clone)]
pub(crate) struct CheckedHttp {
    out: Outbound,
    /// To connect and to the first byte of each answer.
    timeout: Duration,
    /// The latest request that could not be sent, and why: clearer than
    /// what the MCP client makes of it.
    failed: Arc<Mutex<Option<String>>>,
}

impl CheckedHttp {
    pub(crate) fn new(out: Outbound, timeout: Duration) -> CheckedHttp {
        CheckedHttp {
            out,
            timeout,
            failed: Arc::default(),
        }
    }

    /// Why the latest request that failed to go out failed.
    pub(crate) fn failure(&self) -> Option<String> {
        self.failed.lock().expect("not poisoned").clone()
    }

    /// [`CheckedHttp::failure`], forgotten once taken.
    pub(crate) fn take_failure(&self) -> Option<String> {
        self.failed.lock().expect("not poisoned").take()
    }

    async fn send(
        &self,
        method: Method,
        uri: &str,
        headers: Vec<(HeaderName, HeaderValue)>,
        body: Bytes,
    ) -> Result<Response<OutboundBody>, StreamableHttpError<OutboundError>> {
        let mut req = Request::builder().method(method).uri(uri);
        for (name, value) in headers {
            req = req.header(name, value);
        }
        let req = req
            .body(Full::new(body))
            .map_err(|e| StreamableHttpError::UnexpectedServerResponse(e.to_string().into()))?;
        self.out.send(req, self.timeout).await.map_err(|e| {
            *self.failed.lock().expect("not poisoned") = Some(e.to_string());
            StreamableHttpError::Client(e)
        })
    }

    /// `Err` for a status that carries no MCP answer, with the start of
    /// its body (scrubbed of secrets) for the user.
    async fn refuse_status(
        &self,
        res: Response<OutboundBody>,
    ) -> StreamableHttpError<OutboundError> {
        let status = res.status();
        // The start of a longer page is kept: a gateway's error page is
        // often more than the limit, and its first lines say what failed.
        let mut rest = res.into_body();
        let mut body = Vec::new();
        while body.len() < MAX_ERROR_TEXT {
            match rest.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        body.extend_from_slice(&data);
                    }
                }
                _ => break,
            }
        }
        body.truncate(MAX_ERROR_TEXT);
        let text = String::from_utf8_lossy(&body);
        let text = self.out.scrub(text.trim());
        let hint = match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                "; the server wants credentials: grant them as `secrets` in its section"
            }
            _ => "",
        };
        StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
            "HTTP {status}{}{text}{hint}",
            if text.is_empty() { "" } else { ": " }
        )))
    }
}

/// Headers every request carries: the session, the token rmcp was given
/// (none: credentials are secrets, added by the sandbox), rmcp's own
/// (protocol version).
fn common_headers(
    session_id: Option<&str>,
    auth: Option<String>,
    custom: HashMap<HeaderName, HeaderValue>,
) -> Vec<(HeaderName, HeaderValue)> {
    let mut out: Vec<(HeaderName, HeaderValue)> = custom.into_iter().collect();
    if let Some(v) = session_id.and_then(|s| HeaderValue::from_str(s).ok()) {
        out.push((HeaderName::from_static("mcp-session-id"), v));
    }
    if let Some(v) = auth.and_then(|a| HeaderValue::from_str(&format!("Bearer {a}")).ok()) {
        out.push((AUTHORIZATION, v));
    }
    out
}

fn header<'a>(res: &'a Response<OutboundBody>, name: &str) -> Option<&'a str> {
    res.headers().get(name).and_then(|v| v.to_str().ok())
}

fn is_type(res: &Response<OutboundBody>, mime: &str) -> bool {
    header(res, CONTENT_TYPE.as_str()).is_some_and(|ct| {
        ct.split(';')
            .next()
            .is_some_and(|t| t.trim().eq_ignore_ascii_case(mime))
    })
}

/// An event stream, bounded to [`MAX_ANSWER`] bytes.
fn events(res: Response<OutboundBody>) -> BoxStream<'static, Result<Sse, SseError>> {
    let body = Limited::new(res.into_body(), MAX_ANSWER).map_err(std::io::Error::other);
    SseStream::new(body).boxed()
}

impl StreamableHttpClient for CheckedHttp {
    type Error = OutboundError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        custom: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<OutboundError>> {
        let body = serde_json::to_vec(&message)?;
        let mut headers = common_headers(session_id.as_deref(), auth, custom);
        headers.push((CONTENT_TYPE, HeaderValue::from_static(JSON)));
        headers.push((
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        ));
        let res = self
            .send(Method::POST, &uri, headers, Bytes::from(body))
            .await?;
        let status = res.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        if !status.is_success() {
            return Err(self.refuse_status(res).await);
        }
        let session = header(&res, SESSION_ID).map(str::to_string);
        if is_type(&res, EVENT_STREAM) {
            return Ok(StreamableHttpPostResponse::Sse(events(res), session));
        }
        let answers_nothing = !matches!(message, ClientJsonRpcMessage::Request(_));
        let body = Limited::new(res.into_body(), MAX_ANSWER)
            .collect()
            .await
            .map_err(|e| StreamableHttpError::UnexpectedServerResponse(e.to_string().into()))?
            .to_bytes();
        if body.is_empty() && answers_nothing {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        let answer: ServerJsonRpcMessage = serde_json::from_slice(&body)?;
        Ok(StreamableHttpPostResponse::Json(answer, session))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth: Option<String>,
        custom: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<OutboundError>> {
        let headers = common_headers(Some(&session_id), auth, custom);
        let res = self
            .send(Method::DELETE, &uri, headers, Bytes::new())
            .await?;
        if res.status().is_success() || res.status() == StatusCode::METHOD_NOT_ALLOWED {
            Ok(())
        } else {
            Err(self.refuse_status(res).await)
        }
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        custom: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<OutboundError>> {
        let mut headers = common_headers(session_id.as_deref(), auth, custom);
        headers.push((ACCEPT, HeaderValue::from_static(EVENT_STREAM)));
        if let Some(v) = last_event_id.and_then(|id| HeaderValue::from_str(&id).ok()) {
            headers.push((HeaderName::from_static("last-event-id"), v));
        }
        let res = self.send(Method::GET, &uri, headers, Bytes::new()).await?;
        if res.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !res.status().is_success() {
            return Err(self.refuse_status(res).await);
        }
        if !is_type(&res, EVENT_STREAM) {
            return Err(StreamableHttpError::UnexpectedContentType(
                header(&res, CONTENT_TYPE.as_str()).map(str::to_string),
            ));
        }
        Ok(events(res))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_goes_in_its_header_and_names_stay_lower_case() {
        let h = common_headers(Some("abc"), None, HashMap::new());
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].0.as_str(), SESSION_ID.to_ascii_lowercase());
        assert_eq!(h[0].1, "abc");
    }
}

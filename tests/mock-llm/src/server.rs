//! The HTTP side: hyper's HTTP/1 server on a current-thread runtime.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::stream;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::{Piece, Recorded, Reply, Shared, lock};

type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// Serves `listener` until `shutdown` fires (or its sender is dropped).
/// Dropping the runtime then cancels every connection, hanging ones
/// included.
pub(crate) fn run(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    mut shutdown: oneshot::Receiver<()>,
) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("mock-llm: runtime");
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("mock-llm: listener");
        loop {
            let stream = tokio::select! {
                _ = &mut shutdown => return,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => continue,
                },
            };
            let shared = shared.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req| handle(req, shared.clone()));
                // Errors here are the client going away or a deliberate cut.
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
}

/// Records the request, then answers with the next scripted reply.
async fn handle(req: Request<Incoming>, shared: Arc<Shared>) -> Result<Response<Body>, Infallible> {
    let at = Instant::now();
    let path = req.uri().path().to_string();
    let authorization = req
        .headers()
        .get(AUTHORIZATION)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    if req.method() == hyper::Method::GET && path == "/v1/models" {
        *lock(&shared.model_lists) += 1;
        let gate = lock(&shared.models_gate).clone();
        if let Some(gate) = gate {
            gate.opened().await;
        }
        let list = lock(&shared.models).clone().unwrap_or_else(
            || json!({ "object": "list", "data": [{ "id": "mock", "object": "model" }] }),
        );
        return Ok(full(200, "application/json", list.to_string(), None));
    }
    if req.method() == hyper::Method::GET && path == "/props" {
        // llama-server's settings, where it reports a slot's context.
        return Ok(match lock(&shared.props).clone() {
            Some(props) => full(200, "application/json", props.to_string(), None),
            None => full(404, "text/plain", "File Not Found".into(), None),
        });
    }
    let bytes = match req.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
    };
    lock(&shared.requests).push(Recorded {
        path: path.clone(),
        authorization,
        body,
        at,
    });
    if path != "/v1/chat/completions" {
        let body = json!({ "error": { "message": format!("mock: no route for {path}") } });
        return Ok(full(404, "application/json", body.to_string(), None));
    }
    let window = *lock(&shared.context_window);
    if let Some(window) = window {
        let used = crate::prompt_tokens(&lock(&shared.requests).last().expect("recorded").body);
        if used > window {
            let message = format!(
                "This model's maximum context length is {window} tokens. However, you requested \
                 {used} tokens in the messages. Please reduce the length of the messages."
            );
            let body = json!({ "object": "error", "message": message, "code": 400 });
            return Ok(full(400, "application/json", body.to_string(), None));
        }
    }
    let reply = lock(&shared.replies).pop_front();
    let reply = reply.unwrap_or_else(|| Reply::Status {
        status: 500,
        body: json!({ "error": { "message": "mock: no more replies" } }).to_string(),
        retry_after: None,
    });
    let reply = match reply {
        Reply::Llama { text, silence } => {
            let body = lock(&shared.requests)
                .last()
                .expect("recorded")
                .body
                .clone();
            crate::llama::serve(&text, silence, &body)
        }
        other => other,
    };
    Ok(respond(reply).await)
}

/// The HTTP response of a reply (after its delays).
async fn respond(mut reply: Reply) -> Response<Body> {
    loop {
        reply = match reply {
            Reply::Delay(wait, inner) => {
                tokio::time::sleep(wait).await;
                *inner
            }
            Reply::Gated(gate, inner) => {
                gate.opened().await;
                *inner
            }
            Reply::Hang => std::future::pending().await,
            other => break reply_to(other),
        };
    }
}

/// The response of a reply with no wait left in front of it.
fn reply_to(reply: Reply) -> Response<Body> {
    match reply {
        Reply::Sse(payloads) => sse(payloads.into_iter().map(Piece::Data).collect(), false),
        Reply::SseCut(payloads) => sse(payloads.into_iter().map(Piece::Data).collect(), true),
        Reply::Stream(pieces) => sse(pieces, false),
        Reply::Json(value) => full(200, "application/json", value.to_string(), None),
        Reply::Status {
            status,
            body,
            retry_after,
        } => {
            let kind = if serde_json::from_str::<Value>(&body).is_ok() {
                "application/json"
            } else {
                "text/plain; charset=utf-8"
            };
            full(status, kind, body, retry_after)
        }
        Reply::Raw {
            status,
            content_type,
            body,
        } => full(status, &content_type, body, None),
        Reply::Hang | Reply::Delay(..) | Reply::Gated(..) | Reply::Llama { .. } => {
            unreachable!("waits and models were taken off above")
        }
    }
}

/// A complete response.
fn full(status: u16, kind: &str, body: String, retry_after: Option<String>) -> Response<Body> {
    let mut resp = Response::builder()
        .status(status)
        .header(CONTENT_TYPE, kind);
    if let Some(value) = retry_after {
        resp = resp.header(RETRY_AFTER, value);
    }
    let body = Full::new(Bytes::from(body))
        .map_err(|never| match never {})
        .boxed_unsync();
    resp.body(body).expect("mock-llm: valid response")
}

/// An event stream of `pieces`, each frame written on its own about 1 ms
/// after the previous one, so that clients see real chunk boundaries (a
/// pause writes nothing for its length). With `cut`, the body then fails,
/// which makes hyper drop the connection without ending the chunked
/// encoding.
fn sse(pieces: Vec<Piece>, cut: bool) -> Response<Body> {
    let frames = stream::unfold((pieces.into_iter(), cut), |(mut rest, cut)| async move {
        loop {
            tokio::time::sleep(Duration::from_millis(1)).await;
            let bytes = match rest.next() {
                Some(Piece::Pause(wait)) => {
                    tokio::time::sleep(wait).await;
                    continue;
                }
                Some(Piece::Data(payload)) => format!("data: {payload}\n\n"),
                Some(Piece::Raw(raw)) => raw,
                None if cut => {
                    return Some((Err(std::io::Error::other("mock: cut")), (rest, false)));
                }
                None => return None,
            };
            return Some((Ok(Frame::data(Bytes::from(bytes))), (rest, cut)));
        }
    });
    Response::builder()
        .status(200)
        .header(CONTENT_TYPE, "text/event-stream")
        .header("cache-control", "no-cache")
        .body(StreamBody::new(frames).boxed_unsync())
        .expect("mock-llm: valid response")
}

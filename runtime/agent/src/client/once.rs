//! One request and its whole answer, without retries: for what asks the
//! server once (`/models`, a feature check), not for completions.

use std::time::{Duration, Instant};

use super::ClientError;
use super::attempt::within;
use super::request::describe;

/// Sends `req` and reads the answer as text: its status and body. Each
/// wait (the head, the body) ends after `wait`, and all of it at
/// `deadline`. The body of an error status that does not come is empty:
/// the status says enough.
pub(crate) async fn once(
    endpoint: &str,
    req: reqwest::RequestBuilder,
    wait: Duration,
    deadline: Instant,
) -> Result<(u16, String), ClientError> {
    let total = deadline.saturating_duration_since(Instant::now());
    // `within` says which ran out: one wait, or the whole request.
    let timeout = |what: &'static str| ClientError::Timeout {
        endpoint: endpoint.to_string(),
        what,
        after: if what == "request" { total } else { wait },
        attempts: 0,
        earlier: Vec::new(),
    };
    let resp = match within(wait, deadline, req.send()).await {
        Ok(Ok(resp)) => resp,
        Ok(Err(e)) => {
            return Err(ClientError::Connect {
                endpoint: endpoint.to_string(),
                reason: describe(&e),
                attempts: 0,
                earlier: Vec::new(),
            });
        }
        Err(what) => return Err(timeout(what)),
    };
    let status = resp.status().as_u16();
    match within(wait, deadline, resp.text()).await {
        Ok(Ok(text)) => Ok((status, text)),
        Ok(Err(_)) | Err(_) if status >= 400 => Ok((status, String::new())),
        Ok(Err(e)) => Err(ClientError::Stream {
            endpoint: endpoint.to_string(),
            reason: format!("response body cut: {}", describe(&e)),
            attempts: 0,
            earlier: Vec::new(),
        }),
        Err(what) => Err(timeout(what)),
    }
}

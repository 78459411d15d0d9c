//! Which protocol a session speaks. Under `auto` it starts with native tool
//! calls and leaves them when the server fails them (or refuses `tools`):
//! for the json protocol when the server constrains replies to a schema
//! (asked once per endpoint and model, and remembered), else for the text
//! protocol. The move is recorded in the session, which keeps it when
//! resumed, and shown once.

use tokio_util::sync::CancellationToken;

use super::{Agent, AgentError, Event};
use crate::client::{ClientError, Structured};
use crate::jsonproto;
use crate::session::{self, Record, now};
use crate::settings::Protocol;

impl Agent {
    /// Continues a resumed session in the protocol it moved to under
    /// `auto` (by its `records`); a protocol set explicitly wins.
    pub fn resume_protocol(mut self, records: &[Record]) -> Agent {
        if self.settings.protocol == Protocol::Auto
            && let Some(moved) = session::switched_protocol(records)
            && moved != Protocol::Auto
        {
            self.mode = moved;
            self.history[0] = self.system_message();
        }
        self
    }

    /// Leaves native tool calls, for the reason `why`: for the json
    /// protocol if the server constrains replies, else for text.
    pub(super) async fn leave_native(
        &mut self,
        why: &str,
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<(), AgentError> {
        let found = self.structured_form(cancel).await?;
        let (mode, reason) = match &found {
            Ok(Some(form)) => (
                Protocol::Json,
                format!(
                    "{why}; the server constrains replies to a JSON schema (`{}`)",
                    form.as_str()
                ),
            ),
            Ok(None) => (
                Protocol::Text,
                format!("{why}; the server does not constrain replies to a JSON schema"),
            ),
            Err(e) => (
                Protocol::Text,
                format!(
                    "{why}; whether the server constrains replies to a JSON schema could not \
                     be asked ({})",
                    e.brief()
                ),
            ),
        };
        self.structured = found.ok().flatten();
        self.mode = mode;
        self.history[0] = self.system_message();
        self.record(Record::Protocol {
            ts: now(),
            protocol: mode.as_str().to_string(),
            reason: reason.clone(),
        })?;
        on(Event::Protocol {
            protocol: mode.as_str(),
            reason: &reason,
        });
        Ok(())
    }

    /// Readies the json protocol, once: its reply schema, and the field
    /// the server takes it in (`response_format` when that cannot be told).
    pub(super) async fn ready_json(
        &mut self,
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<(), AgentError> {
        if self.step_schema.is_none() {
            self.step_schema = Some(jsonproto::step_schema(&self.defs));
        }
        if self.structured.is_some() {
            return Ok(());
        }
        let form = match self.structured_form(cancel).await? {
            Ok(Some(form)) => form,
            Ok(None) => {
                on(Event::Notice(
                    "the server did not constrain a test reply to a JSON schema, so the json \
                     protocol's replies may not be valid steps; `--protocol text` suits such \
                     a server",
                ));
                Structured::ResponseFormat
            }
            Err(_) => Structured::ResponseFormat,
        };
        self.structured = Some(form);
        Ok(())
    }

    /// Whether the server constrains replies, and how: the endpoint cache,
    /// else a probe; the error when the server could not be asked.
    async fn structured_form(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Result<Option<Structured>, ClientError>, AgentError> {
        // A server slow to answer is waited on like the model.
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(AgentError::Cancelled),
            r = self.client.structured_output(self.endpoint_cache.as_ref()) => Ok(r),
        }
    }
}

//! A call of a server's tool, waited for on the servers' runtime, with the
//! connection made again when its process exited.

use super::*;

impl McpTools {
    /// Calls `tool` with `arguments` (a JSON object), within the server's
    /// timeout; cancelling `cancel` sends `notifications/cancelled`.
    pub fn call(&self, tool: &McpTool, arguments: Value, cancel: &CallCancel) -> ToolResult {
        let running = &self.servers[tool.server];
        let limits = running.server.grants.limits;
        let fail = |kind: &str, output: String| ToolResult {
            ok: false,
            output,
            error_kind: Some(kind.to_string()),
            ..ToolResult::default()
        };
        // Checked against the server's own schema first, as a
        // component's call is.
        if let Err(e) = tool.check(&arguments) {
            return fail(e.kind.label(), e.to_string());
        }
        let Value::Object(map) = arguments else {
            unreachable!("the schema check takes objects only");
        };
        let started = Instant::now();
        let Connection {
            peer,
            stderr: stderr_tail,
            http,
            restarted,
        } = match self.connection(running, &tool.remote, cancel) {
            Ok(live) => live,
            Err(why) => {
                let mut result = if cancel.is_cancelled() {
                    fail("cancelled", "cancelled by the user".into())
                } else {
                    fail("failed", why)
                };
                result.duration = started.elapsed();
                return result;
            }
        };
        let params = CallToolRequestParams::new(tool.remote.clone()).with_arguments(map);
        // What a start of the server within the call left of its time.
        let left = limits.timeout.saturating_sub(started.elapsed());
        let (done, wait) = std::sync::mpsc::channel();
        let task = self.rt().spawn(async move {
            let answer = tokio::time::timeout(left, peer.call_tool(params)).await;
            let _ = done.send(answer);
        });
        let abort = Arc::new(task.abort_handle());
        cancel.on_cancel({
            let abort = abort.clone();
            move || abort.abort()
        });
        let answer = wait.recv();
        let duration = started.elapsed();
        let server = &running.server.name;
        // What the process wrote last to stderr, when the call failed for
        // want of an answer: often why.
        let stderr = |wait| match &stderr_tail {
            Some(tail) => inert(&self.stderr_note(tail, wait)).into_owned(),
            None => String::new(),
        };
        let mut result = match answer {
            Err(_) => fail("cancelled", "cancelled by the user".into()),
            Ok(Err(_)) => fail(
                "timeout",
                format!(
                    "MCP server `{server}` did not answer within {}s (the server's timeout){}",
                    limits.timeout.as_secs_f64(),
                    stderr(Duration::ZERO)
                ),
            ),
            Ok(Ok(Err(_)))
                if let Some(why) = stderr_tail.as_ref().and_then(ProcessOutput::oversized) =>
            {
                fail(
                    "failed",
                    format!(
                        "MCP server `{server}` failed the call: {why}{}; ask the tool for less \
                     data per call",
                        self.restart_note(running)
                    ),
                )
            }
            Ok(Ok(Err(_)))
                if let Some(why) = stderr_tail.as_ref().and_then(ProcessOutput::flooded) =>
            {
                fail(
                    "failed",
                    format!(
                        "MCP server `{server}` was stopped: {why}{}",
                        self.restart_note(running)
                    ),
                )
            }
            Ok(Ok(Err(e))) => {
                // An error the server answered is its own; any other means
                // it is gone or broken.
                let note = match e {
                    ServiceError::McpError(_) => String::new(),
                    _ => stderr(STDERR_WAIT) + &self.restart_note(running),
                };
                // A server at a URL that could not be reached: why, in
                // words, rather than the client's transport error.
                let unreachable = match e {
                    ServiceError::McpError(_) => None,
                    _ => http.as_ref().and_then(CheckedHttp::take_failure),
                };
                match unreachable {
                    Some(why) => fail(
                        "failed",
                        format!(
                            "MCP server `{server}` could not be reached: {}; check that it \
                             is running (the next call tries it again)",
                            inert(&why)
                        ),
                    ),
                    None => fail(
                        "failed",
                        format!(
                            "MCP server `{server}` failed the call: {}{note}",
                            inert(&e.to_string())
                        ),
                    ),
                }
            }
            Ok(Ok(Ok(answer))) => {
                let (text, truncated) = text_of(&answer.content, limits.output as usize);
                ToolResult {
                    ok: answer.is_error != Some(true),
                    error_kind: (answer.is_error == Some(true)).then(|| "failed".to_string()),
                    output: text,
                    truncated,
                    ..ToolResult::default()
                }
            }
        };
        if restarted {
            result.output.push_str(&format!(
                "\n[warden: MCP server `{server}` had exited; it was started again for this \
                 call, so whatever state it held is gone]"
            ));
        }
        result.duration = duration;
        result
    }

    /// The connection to `running` for a call of its tool `remote`: a
    /// server started by command whose process exited is started again
    /// (at most [`MAX_RESTARTS`] times, until `cancel`), and says so. The
    /// error says why there is none.
    pub(super) fn connection(
        &self,
        running: &Running,
        remote: &str,
        cancel: &CallCancel,
    ) -> Result<Connection, String> {
        let mut live = running.live.lock().unwrap_or_else(|e| e.into_inner());
        let server = &running.server;
        let current = |live: &Live, restarted| Connection {
            peer: live.client.peer().clone(),
            stderr: live.stderr.clone(),
            http: live.http.clone(),
            restarted,
        };
        let McpLaunch::Command(argv) = &server.launch else {
            if let Some(http) = &live.http {
                // What failed before this call is not its failure.
                http.take_failure();
            }
            return Ok(current(&live, false));
        };
        if !live.client.peer().is_transport_closed() {
            return Ok(current(&live, false));
        }
        let name = &server.name;
        if live.restarts >= MAX_RESTARTS {
            let gone = match &live.stderr {
                Some(tail) => self.stderr_note(tail, Duration::ZERO),
                None => String::new(),
            };
            return Err(format!(
                "MCP server `{name}` exited and was started again {MAX_RESTARTS} times already, \
                 so it stays down{}; fix the server, then start warden again",
                inert(&gone)
            ));
        }
        let changed = changed_files(&server.files, &launch_files(&server.launch, &self.root));
        if !changed.is_empty() {
            return Err(format!(
                "MCP server `{name}` had exited, and a file its command runs changed since the \
                 session began ({changed}), so it is not started again; review with \
                 `warden trust`, then start warden again"
            ));
        }
        // Each try counts, whether or not the server comes up: one that
        // keeps failing to start is not started again at every call.
        live.restarts += 1;
        // The start is part of the call, and bounded by its time limit.
        let limit = server.grants.limits.timeout.min(START_TIMEOUT);
        let ((client, tools), (process, stderr)) = self
            .start_process(server, argv, &self.root, Some(cancel), limit)
            .map_err(|why| {
                format!(
                    "MCP server `{name}` had exited, and starting it again failed: {}",
                    inert(&why)
                )
            })?;
        if !tools.iter().any(|t| t.name == remote) {
            return Err(format!(
                "MCP server `{name}` had exited; started again, it no longer offers `{}`",
                inert(remote)
            ));
        }
        let restarts = live.restarts;
        *live = Live {
            client,
            stderr: Some(stderr),
            _process: Some(process),
            restarts,
            http: None,
        };
        Ok(current(&live, true))
    }

    pub(super) fn rt(&self) -> &tokio::runtime::Runtime {
        self.rt.as_ref().expect("the runtime lives until drop")
    }

    /// Runs `task` on the servers' runtime and waits for it on this
    /// thread, which may belong to another runtime (never a worker of it);
    /// `None` when the task was aborted.
    pub(super) fn wait<T: Send + 'static>(
        &self,
        task: impl Future<Output = T> + Send + 'static,
    ) -> Option<T> {
        let (done, wait) = std::sync::mpsc::channel();
        self.rt().spawn(async move {
            let _ = done.send(task.await);
        });
        wait.recv().ok()
    }

    /// [`McpTools::wait`], also ended by `cancel` (the task is dropped
    /// at its next await); `None` then.
    pub(super) fn wait_unless<T: Send + 'static>(
        &self,
        task: impl Future<Output = T> + Send + 'static,
        cancel: &CallCancel,
    ) -> Option<T> {
        let (done, wait) = std::sync::mpsc::channel();
        let task = self.rt().spawn(async move {
            let _ = done.send(task.await);
        });
        let abort = task.abort_handle();
        cancel.on_cancel(move || abort.abort());
        wait.recv().ok()
    }
}

/// The text of a result: text blocks as they are, other content named.
pub(super) fn text_of(content: &[ContentBlock], cap: usize) -> (String, bool) {
    let mut out = String::new();
    for block in content {
        if !out.is_empty() {
            out.push('\n');
        }
        match block {
            ContentBlock::Text(t) => out.push_str(&t.text),
            ContentBlock::Image(i) => out.push_str(&format!("[image, {}]", i.mime_type)),
            ContentBlock::Audio(a) => out.push_str(&format!("[audio, {}]", a.mime_type)),
            ContentBlock::Resource(_) => out.push_str("[embedded resource]"),
            ContentBlock::ResourceLink(r) => out.push_str(&format!("[resource {}]", r.uri)),
            _ => out.push_str("[content of a kind warden does not show]"),
        }
    }
    // Cut as a tool's output is, saying so: the model must not take a
    // part for the whole.
    warden_sandbox::cap_output(out, cap as u64)
}

//! The tools a server offers: listed (bounded pages, sizes and counts),
//! checked, named `SERVER__TOOL`, and found by name.

use super::*;

impl McpTools {
    /// Waits for the client `serving` to initialize, then lists the
    /// server's tools, within `limit`, or until `cancel`.
    pub(super) fn list<E: std::fmt::Display>(
        &self,
        serving: impl Future<Output = Result<RunningService<RoleClient, ()>, E>> + Send + 'static,
        check: &'static str,
        cancel: Option<&CallCancel>,
        limit: Duration,
    ) -> Result<Listed, String> {
        let listing = async move {
            tokio::time::timeout(limit, async {
                let client = serving.await.map_err(|e| {
                    let e = without_type_names(&e.to_string());
                    format!("it did not answer `initialize` ({e}); check {check}")
                })?;
                let tools = list_tools(client.peer()).await?;
                Ok::<_, String>((client, tools))
            })
            .await
            .map_err(|_| {
                // Shorter than the start limit only for a start within a
                // call, bounded by the server's timeout.
                let whose = if limit < START_TIMEOUT {
                    " (the server's timeout, which bounds the whole call)"
                } else {
                    ""
                };
                format!("it did not start within {}s{whose}", limit.as_secs_f64())
            })?
        };
        match cancel {
            Some(cancel) => self
                .wait_unless(listing, cancel)
                .ok_or("cancelled by the user")?,
            None => self.wait(listing).ok_or("warden is stopping")?,
        }
    }

    /// Offers the tools `listed` of `server`.
    pub(super) fn add(
        &mut self,
        server: McpServer,
        client: RunningService<RoleClient, ()>,
        mut listed: Vec<Tool>,
        (process, stderr): (Option<ServerProcess>, Option<ProcessOutput>),
        http: Option<CheckedHttp>,
    ) {
        let at = self.servers.len();
        if listed.len() > MAX_TOOLS {
            self.problems.push(format!(
                "MCP server `{}` offers more than {MAX_TOOLS} tools: only the first {MAX_TOOLS} \
                 are offered (each is sent to the model with every request)",
                server.name
            ));
            listed.truncate(MAX_TOOLS);
        }
        // What this server's tools add to every request, and the tools
        // left out once that passed [`SERVER_BYTES`].
        let mut sent = 0;
        let mut over_budget = Vec::new();
        for tool in listed {
            let exposed = exposed_name(&server.name, &tool.name);
            if !is_tool_name(&exposed) || self.index.contains_key(&exposed) {
                self.problems.push(format!(
                    "MCP server `{}`: tool `{}` is left out: its name cannot be offered as \
                     `{}`",
                    server.name,
                    inert(&tool.name),
                    inert(&exposed)
                ));
                continue;
            }
            // Sent with every request: a server cannot fill the model's
            // context with them.
            let parameters = Value::Object((*tool.input_schema).clone());
            let schema_len = parameters.to_string().len();
            if schema_len > SCHEMA_MAX {
                self.problems.push(format!(
                    "MCP server `{}`: tool `{}` is left out: its input schema is {} KiB, more \
                     than the {} KiB a tool may send to the model with every request",
                    server.name,
                    inert(&tool.name),
                    schema_len >> 10,
                    SCHEMA_MAX >> 10
                ));
                continue;
            }
            // Checked as a component's schema is: one that does not compile
            // would fail every request it is sent with.
            let check = match warden_sandbox::ArgsCheck::new(&exposed, &parameters, schema_len) {
                Ok(check) => check,
                Err(why) => {
                    self.problems.push(format!(
                        "MCP server `{}`: tool `{}` is left out: {}",
                        server.name,
                        inert(&tool.name),
                        inert(&why)
                    ));
                    continue;
                }
            };
            let mut description = tool.description.as_deref().unwrap_or("").to_string();
            if description.len() > DESCRIPTION_MAX {
                self.problems.push(format!(
                    "MCP server `{}`: the description of tool `{}` is cut to {} KiB (it had {} \
                     KiB)",
                    server.name,
                    inert(&tool.name),
                    DESCRIPTION_MAX >> 10,
                    description.len() >> 10
                ));
                let mut end = DESCRIPTION_MAX;
                while !description.is_char_boundary(end) {
                    end -= 1;
                }
                description.truncate(end);
                description.push('…');
            }
            let bytes = exposed.len() + description.len() + schema_len;
            if sent + bytes > SERVER_BYTES {
                over_budget.push(inert(&tool.name).into_owned());
                continue;
            }
            sent += bytes;
            self.index.insert(exposed.clone(), self.tools.len());
            self.tools.push(McpTool {
                def: ToolDef {
                    name: exposed,
                    description,
                    parameters,
                },
                server: at,
                remote: tool.name.to_string(),
                check: Arc::new(check),
            });
        }
        if !over_budget.is_empty() {
            let named = match over_budget.len() {
                n if n > 10 => format!("{}, and {} more", over_budget[..10].join(", "), n - 10),
                _ => over_budget.join(", "),
            };
            self.problems.push(format!(
                "MCP server `{}`: {} tool{} left out ({}): with them, its tools would pass the \
                 {} KiB a server may send to the model with every request",
                server.name,
                over_budget.len(),
                if over_budget.len() == 1 {
                    " is"
                } else {
                    "s are"
                },
                named,
                SERVER_BYTES >> 10
            ));
        }
        self.servers.push(Running {
            server,
            live: Mutex::new(Live {
                client,
                stderr,
                _process: process,
                restarts: 0,
                http,
            }),
        });
    }

    /// Leaves out each tool whose offered name `taken` says a loaded tool
    /// has already (as its name or an alias), and says so: the model must never read one
    /// tool's description and have its arguments reach another.
    pub fn leave_out_taken(&mut self, taken: impl Fn(&str) -> bool) {
        let servers = &self.servers;
        let problems = &mut self.problems;
        self.tools.retain(|t| {
            if !taken(&t.def.name) {
                return true;
            }
            problems.push(format!(
                "MCP server `{}`: tool `{}` is left out: a loaded tool is called `{}` already",
                servers[t.server].server.name,
                inert(&t.remote),
                inert(&t.def.name)
            ));
            false
        });
        self.index = (self.tools.iter().enumerate())
            .map(|(i, t)| (t.def.name.clone(), i))
            .collect();
    }

    /// The tool offered as `name`, if any.
    pub fn find(&self, name: &str) -> Option<&McpTool> {
        self.index.get(name).map(|&i| &self.tools[i])
    }
}

/// `SERVER__TOOL`, lower case, with what a tool name cannot hold as `_`.
pub(super) fn exposed_name(server: &str, tool: &str) -> String {
    let tool: String = tool
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '_' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '_',
        })
        .collect();
    format!("{server}__{tool}")
}

/// Pages of `tools/list` read from one server at most.
pub(super) const MAX_LIST_PAGES: usize = 64;

/// Tools offered from one server at most: every one is sent to the model
/// with every request.
pub(super) const MAX_TOOLS: usize = 512;

/// The tools `peer` lists, page after page, within bounds: a server whose
/// list never ends (a cursor that comes back, or page after page) is not
/// read on until warden runs out of memory. Reading stops at the page that
/// passes [`MAX_TOOLS`]; [`McpTools::add`] offers that many and says so.
pub(super) async fn list_tools(peer: &rmcp::Peer<RoleClient>) -> Result<Vec<Tool>, String> {
    let mut tools = Vec::new();
    let mut cursor = None;
    let mut cursors = HashSet::new();
    for _ in 0..MAX_LIST_PAGES {
        let page = peer
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await
            .map_err(|e| format!("`tools/list` failed: {e}"))?;
        tools.extend(page.tools);
        if tools.len() > MAX_TOOLS {
            return Ok(tools);
        }
        match page.next_cursor {
            None => return Ok(tools),
            Some(next) if !cursors.insert(next.clone()) => {
                return Err(
                    "its tool list never ends (`tools/list` gave a page cursor it had given \
                     before)"
                        .into(),
                );
            }
            Some(next) => cursor = Some(next),
        }
    }
    Err(format!(
        "its tool list did not end after {MAX_LIST_PAGES} pages of `tools/list`"
    ))
}

/// `text` without the Rust type names rmcp puts in its transport errors
/// (`Transport [rmcp::transport::worker::WorkerTransport<…>] error`), which
/// tell the user nothing.
pub(super) fn without_type_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(" [rmcp::") {
        let Some(end) = rest[at..].find(']') else {
            break;
        };
        out.push_str(&rest[..at]);
        rest = &rest[at + end + 1..];
    }
    out.push_str(rest);
    out
}

//! MCP servers (Model Context Protocol) over stdio, whose tools the built-in agent offers as `mcp__<server>__<tool>`.
//!
//! Each configured server is one child process shared by every session, spoken to in JSON-RPC 2.0 as
//! newline-delimited JSON on its stdin and stdout (MCP revision 2025-06-18; servers answering 2025-03-26 or 2024-11-05
//! are accepted too, since the tool calls are the same). It runs in a process group of its own, killed as a whole when
//! its connection is dropped; its stderr goes to our log. A server that dies is started again by the next call of one
//! of its tools.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::child::{ChildProcess, ChildSpec, ChildWriter, ExitWatch, Spawned, StdoutLine};
use super::tools::{Tool, ToolContext, ToolFuture, ToolOutput};

/// The revision chatwire asks for; the others are the ones it accepts when a server answers with its own.
const PROTOCOL_VERSION: &str = "2025-06-18";
const ACCEPTED_VERSIONS: [&str; 3] = ["2025-06-18", "2025-03-26", "2024-11-05"];
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// A server whose `nextCursor` never ends cannot hold startup forever.
const MAX_LIST_PAGES: usize = 100;
/// The longest function name the model APIs take (OpenAI's limit).
const MAX_TOOL_NAME_CHARS: usize = 64;
/// Base64 `data` of an image or audio result longer than this is left out of what the transcript keeps.
const MAX_INLINE_DATA_CHARS: usize = 4096;
const DEFAULT_STARTUP_TIMEOUT_SECS: u64 = 30;
const DEFAULT_TOOL_TIMEOUT_SECS: u64 = 120;
/// How long a server whose stdout closed may take to exit before its process group is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// A server that never started (so it has no tools to call) is tried again in the background this long after.
const RETRY_UNSTARTED_AFTER: Duration = Duration::from_secs(60);

/// One `[mcp.<name>]` table of the config file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The executable, looked up on `PATH`.
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables set on top of chatwire's own environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Where the server runs [default: [`McpSettings::default_cwd`]].
    pub cwd: Option<PathBuf>,
    /// How long spawning, `initialize` and `tools/list` may each take [default: 30].
    pub startup_timeout_secs: Option<u64>,
    /// How long one tool call may take before it is cancelled [default: 120].
    pub tool_timeout_secs: Option<u64>,
}

/// What every server shares.
#[derive(Debug, Clone)]
pub struct McpSettings {
    /// Where a server without `cwd` runs.
    pub default_cwd: PathBuf,
    /// Most bytes of result text kept for the model (the rest is cut with a note).
    pub max_output_bytes: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpConfigError {
    #[error(
        "the MCP server name {0:?} is not usable: use letters, digits, `-` and single `_` between them (it becomes \
         part of the tool names, mcp__<server>__<tool>)"
    )]
    BadName(String),
    #[error("the MCP server `{0}` has an empty `command`")]
    EmptyCommand(String),
}

/// Why a request to a server failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    #[error("`{command}` could not be started: {reason}")]
    Spawn { command: String, reason: String },
    #[error("the server exited{0}")]
    Exited(String),
    #[error("no answer to `{method}` within {secs} s")]
    Timeout { method: String, secs: u64 },
    #[error("stopped")]
    Cancelled,
    #[error("the server answered `{method}` with error {code}: {message}")]
    Rpc { method: String, code: i64, message: String },
    #[error("{0}")]
    Protocol(String),
}

/// What the reader hands a waiting request.
enum Reply {
    Result(Value),
    Error { code: i64, message: String },
    Closed(String),
}

#[derive(Default)]
struct Pending {
    waiting: HashMap<u64, oneshot::Sender<Reply>>,
    /// Set when stdout closed, with how the process ended; no request is taken after that.
    closed: Option<String>,
}

/// One running server process and the requests in flight to it. Dropping it kills the server's process group.
struct Connection {
    process: ChildProcess,
    outgoing: ChildWriter,
    pending: Arc<Mutex<Pending>>,
    next_id: AtomicU64,
    /// Set by `notifications/tools/list_changed`: the tools are listed again before the next call.
    tools_changed: Arc<AtomicBool>,
}

fn send_line(outgoing: &ChildWriter, message: &Value) {
    // A closed writer means the process is gone; the reader reports that to every request.
    let _ = outgoing.send_json(message);
}

impl Connection {
    /// Spawns the server and initializes it; returns the connection and the tools it lists.
    async fn start(
        name: &str,
        config: &McpServerConfig,
        cwd: &std::path::Path,
    ) -> Result<(Connection, Vec<ToolInfo>), McpError> {
        let spec = ChildSpec {
            program: config.command.clone().into(),
            args: config.args.iter().map(Into::into).collect(),
            env: config.env.clone(),
            cwd: cwd.to_owned(),
            max_line_bytes: MAX_LINE_BYTES,
            label: format!("MCP server {name}"),
        };
        let Spawned { process, writer, stdout } = ChildProcess::spawn(&spec)
            .map_err(|error| McpError::Spawn { command: error.program, reason: error.reason })?;
        let exit = process.exit_watch();
        let connection = Connection {
            process,
            outgoing: writer.clone(),
            pending: Arc::default(),
            next_id: AtomicU64::new(1),
            tools_changed: Arc::default(),
        };
        let reader = Reader {
            server: name.to_owned(),
            outgoing: writer,
            pending: connection.pending.clone(),
            tools_changed: connection.tools_changed.clone(),
        };
        tokio::spawn(reader.run(exit, stdout));

        let timeout = Duration::from_secs(config.startup_timeout_secs.unwrap_or(DEFAULT_STARTUP_TIMEOUT_SECS).max(1));
        let never = CancellationToken::new();
        let client = json!({"name": "chatwire", "version": env!("CARGO_PKG_VERSION")});
        let params = json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": client});
        let init = connection.request("initialize", params, timeout, &never).await?;
        let version = init.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
        if !ACCEPTED_VERSIONS.contains(&version) {
            return Err(McpError::Protocol(format!(
                "the server speaks MCP revision {version:?}; chatwire speaks {}",
                ACCEPTED_VERSIONS.join(", ")
            )));
        }
        connection.notify("notifications/initialized", None);
        let offers_tools = init.get("capabilities").and_then(|c| c.get("tools")).is_some();
        let tools = if offers_tools { connection.list_tools(name, timeout).await? } else { Vec::new() };
        Ok((connection, tools))
    }

    fn is_open(&self) -> bool {
        self.process.is_alive() && self.pending.lock().expect("the pending lock is never poisoned").closed.is_none()
    }

    fn notify(&self, method: &str, params: Option<Value>) {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        send_line(&self.outgoing, &message);
    }

    /// Sends one request and waits for its answer, at most `timeout`, or until `cancel`; a request given up on is
    /// cancelled on the server too (`notifications/cancelled`).
    async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value, McpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        {
            let mut pending = self.pending.lock().expect("the pending lock is never poisoned");
            if let Some(why) = &pending.closed {
                return Err(McpError::Exited(why.clone()));
            }
            pending.waiting.insert(id, sender);
        }
        send_line(&self.outgoing, &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let reply = tokio::select! {
            reply = receiver => reply.unwrap_or_else(|_| Reply::Closed(String::new())),
            () = tokio::time::sleep(timeout) => {
                self.give_up(id, "timed out");
                return Err(McpError::Timeout { method: method.to_owned(), secs: timeout.as_secs() });
            }
            () = cancel.cancelled() => {
                self.give_up(id, "stopped by the user");
                return Err(McpError::Cancelled);
            }
        };
        match reply {
            Reply::Result(value) => Ok(value),
            Reply::Error { code, message } => Err(McpError::Rpc { method: method.to_owned(), code, message }),
            Reply::Closed(why) => Err(McpError::Exited(why)),
        }
    }

    fn give_up(&self, id: u64, reason: &str) {
        self.pending.lock().expect("the pending lock is never poisoned").waiting.remove(&id);
        self.notify("notifications/cancelled", Some(json!({"requestId": id, "reason": reason})));
    }

    /// Every tool the server lists, following `nextCursor`.
    async fn list_tools(&self, server: &str, timeout: Duration) -> Result<Vec<ToolInfo>, McpError> {
        let never = CancellationToken::new();
        let mut tools: Vec<ToolInfo> = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let params = match &cursor {
                Some(cursor) => json!({"cursor": cursor}),
                None => json!({}),
            };
            let page = self.request("tools/list", params, timeout, &never).await?;
            let listed = page
                .get("tools")
                .and_then(Value::as_array)
                .ok_or_else(|| McpError::Protocol("`tools/list` answered without a `tools` array".into()))?;
            for tool in listed {
                match ToolInfo::parse(server, tool) {
                    Ok(info) if tools.iter().any(|known| known.full_name == info.full_name) => {
                        tracing::warn!(server, tool = %info.full_name, "MCP tool listed twice; the first is kept")
                    }
                    Ok(info) => tools.push(info),
                    Err(why) => tracing::warn!(server, "MCP tool left out: {why}"),
                }
            }
            cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
            if cursor.is_none() {
                return Ok(tools);
            }
        }
        tracing::warn!(server, "MCP tools/list still had more pages after {MAX_LIST_PAGES}; the rest is left out");
        Ok(tools)
    }
}

/// Reads a server's stdout: answers go to the requests waiting for them, requests from the server are answered.
struct Reader {
    server: String,
    outgoing: ChildWriter,
    pending: Arc<Mutex<Pending>>,
    tools_changed: Arc<AtomicBool>,
}

impl Reader {
    async fn run(self, exit: ExitWatch, mut stdout: mpsc::Receiver<StdoutLine>) {
        while let Some(line) = stdout.recv().await {
            self.line(line);
        }
        // Its stdout is gone, so it can never answer again: what it last said on stderr tells why.
        let why = exit.describe(EXIT_GRACE).await;
        tracing::warn!(server = %self.server, "MCP server exited{why}");
        let waiting = {
            let mut pending = self.pending.lock().expect("the pending lock is never poisoned");
            pending.closed = Some(why.clone());
            std::mem::take(&mut pending.waiting)
        };
        for (_, sender) in waiting {
            let _ = sender.send(Reply::Closed(why.clone()));
        }
    }

    fn line(&self, line: StdoutLine) {
        let text = match line {
            StdoutLine::Text { text, .. } => text,
            StdoutLine::Unreadable(why) => {
                tracing::warn!(server = %self.server, "MCP server {why}; dropped");
                return;
            }
        };
        let message: Value = match serde_json::from_str(&text) {
            Ok(Value::Object(message)) => Value::Object(message),
            Ok(_) | Err(_) => {
                let shown: String = text.chars().take(200).collect();
                tracing::warn!(server = %self.server, "MCP server wrote a line that is not a JSON-RPC message: {shown}");
                return;
            }
        };
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").filter(|id| !id.is_null());
        match (method, id) {
            (Some(method), Some(id)) => {
                // `ping` is the one request a client without capabilities must answer; sampling, roots and
                // elicitation were not offered in `initialize`.
                let reply = if method == "ping" {
                    json!({"jsonrpc": "2.0", "id": id, "result": {}})
                } else {
                    let message = format!("chatwire does not support {method}");
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": message}})
                };
                send_line(&self.outgoing, &reply);
            }
            (Some("notifications/tools/list_changed"), None) => self.tools_changed.store(true, Ordering::Relaxed),
            (Some(method), None) => {
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                tracing::debug!(server = %self.server, method, %params, "MCP notification");
            }
            (None, Some(id)) => {
                let Some(sender) = id.as_u64().and_then(|id| {
                    self.pending.lock().expect("the pending lock is never poisoned").waiting.remove(&id)
                }) else {
                    // An answer to a request given up on (timed out or stopped) comes late; it is dropped.
                    return;
                };
                let reply = match (message.get("result"), message.get("error")) {
                    (Some(result), _) => Reply::Result(result.clone()),
                    (None, Some(error)) => Reply::Error {
                        code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                        message: error.get("message").and_then(Value::as_str).unwrap_or("(no message)").to_owned(),
                    },
                    (None, None) => Reply::Error { code: 0, message: "an answer with neither result nor error".into() },
                };
                let _ = sender.send(reply);
            }
            (None, None) => tracing::warn!(server = %self.server, "MCP server message without method or id: {message}"),
        }
    }
}

/// One tool a server lists.
#[derive(Debug, Clone, PartialEq)]
struct ToolInfo {
    /// `mcp__<server>__<tool>`, with characters the model APIs refuse replaced by `_`.
    full_name: String,
    /// The name the server knows it by.
    remote_name: String,
    description: String,
    input_schema: Value,
    /// The server's `annotations.readOnlyHint`; anything else counts as a tool that changes things.
    read_only: bool,
}

impl ToolInfo {
    fn parse(server: &str, tool: &Value) -> Result<ToolInfo, String> {
        let remote_name = tool.get("name").and_then(Value::as_str).filter(|name| !name.is_empty());
        let remote_name = remote_name.ok_or_else(|| format!("a tool without a name: {tool}"))?.to_owned();
        let safe: String = remote_name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
            .collect();
        let full_name = format!("mcp__{server}__{safe}");
        if full_name.chars().count() > MAX_TOOL_NAME_CHARS {
            return Err(format!("`{full_name}` is longer than the {MAX_TOOL_NAME_CHARS} characters models accept"));
        }
        let input_schema = match tool.get("inputSchema") {
            Some(schema @ Value::Object(_)) => schema.clone(),
            Some(_) | None => json!({"type": "object"}),
        };
        let text = |key: &str| tool.get(key).and_then(Value::as_str).filter(|text| !text.trim().is_empty());
        let description = text("description").or_else(|| text("title")).unwrap_or(&remote_name).to_owned();
        let annotations = tool.get("annotations");
        let read_only = annotations.and_then(|a| a.get("readOnlyHint")).and_then(Value::as_bool) == Some(true);
        Ok(ToolInfo { full_name, remote_name, description, input_schema, read_only })
    }
}

/// One configured server: its live connection, if any, and the tools it listed last.
struct McpServer {
    name: String,
    config: McpServerConfig,
    cwd: PathBuf,
    max_output_bytes: usize,
    live: tokio::sync::Mutex<Option<Arc<Connection>>>,
    tools: Mutex<Vec<Arc<ToolInfo>>>,
    /// When the last start failed, while the server has never listed tools.
    failed_at: Mutex<Option<std::time::Instant>>,
}

impl McpServer {
    /// The running connection, starting the server when it is not running (never started, or died).
    async fn connection(&self) -> Result<Arc<Connection>, McpError> {
        let mut live = self.live.lock().await;
        if let Some(connection) = live.as_ref().filter(|connection| connection.is_open()) {
            if connection.tools_changed.swap(false, Ordering::Relaxed) {
                match connection.list_tools(&self.name, self.startup_timeout()).await {
                    Ok(tools) => self.set_tools(tools),
                    Err(error) => tracing::warn!(server = %self.name, "listing the changed MCP tools: {error}"),
                }
            }
            return Ok(connection.clone());
        }
        if live.take().is_some() {
            tracing::info!(server = %self.name, "starting the MCP server again");
        }
        let started = Connection::start(&self.name, &self.config, &self.cwd).await;
        *self.failed_at.lock().expect("the failure lock is never poisoned") =
            started.is_err().then(std::time::Instant::now);
        let (connection, tools) = started?;
        let names: Vec<&str> = tools.iter().map(|tool| tool.remote_name.as_str()).collect();
        tracing::info!(server = %self.name, tools = %names.join(", "), "MCP server started");
        self.set_tools(tools);
        let connection = Arc::new(connection);
        *live = Some(connection.clone());
        Ok(connection)
    }

    fn retry_if_unstarted(self: &Arc<Self>) {
        let mut failed_at = self.failed_at.lock().expect("the failure lock is never poisoned");
        let due = failed_at.is_some_and(|at| at.elapsed() >= RETRY_UNSTARTED_AFTER);
        if !due || !self.tools.lock().expect("the tools lock is never poisoned").is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        // Not due again until this attempt has had its chance.
        *failed_at = Some(std::time::Instant::now());
        let server = self.clone();
        runtime.spawn(async move {
            if let Err(error) = server.connection().await {
                tracing::warn!(server = %server.name, "MCP server still not available: {error}");
            }
        });
    }

    fn set_tools(&self, tools: Vec<ToolInfo>) {
        *self.tools.lock().expect("the tools lock is never poisoned") = tools.into_iter().map(Arc::new).collect();
    }

    fn startup_timeout(&self) -> Duration {
        Duration::from_secs(self.config.startup_timeout_secs.unwrap_or(DEFAULT_STARTUP_TIMEOUT_SECS).max(1))
    }

    fn tool_timeout(&self) -> Duration {
        Duration::from_secs(self.config.tool_timeout_secs.unwrap_or(DEFAULT_TOOL_TIMEOUT_SECS).max(1))
    }
}

/// The configured MCP servers, shared by every agent of the app.
pub struct McpServers {
    servers: Vec<Arc<McpServer>>,
}

impl McpServers {
    /// Checks the names; nothing is started yet (see [`McpServers::start`]).
    pub fn new(configs: BTreeMap<String, McpServerConfig>, settings: &McpSettings) -> Result<Self, McpConfigError> {
        let servers = configs
            .into_iter()
            .map(|(name, config)| {
                if !usable_server_name(&name) {
                    return Err(McpConfigError::BadName(name));
                }
                if config.command.trim().is_empty() {
                    return Err(McpConfigError::EmptyCommand(name));
                }
                let cwd = config.cwd.clone().unwrap_or_else(|| settings.default_cwd.clone());
                Ok(Arc::new(McpServer {
                    name,
                    config,
                    cwd,
                    max_output_bytes: settings.max_output_bytes,
                    live: tokio::sync::Mutex::new(None),
                    tools: Mutex::new(Vec::new()),
                    failed_at: Mutex::new(None),
                }))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(McpServers { servers })
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Starts every server at once and lists its tools. A server that fails is logged and left out; it never stops
    /// the others or the app.
    pub async fn start(&self) {
        let starts = self.servers.iter().map(|server| async move {
            if let Err(error) = server.connection().await {
                tracing::error!(server = %server.name, "MCP server not available, its tools are not offered: {error}");
            }
        });
        futures_util::future::join_all(starts).await;
    }

    /// Every tool the servers listed last, in server name order. A server that has never started is tried again in
    /// the background once a minute, so fixing what kept it from starting needs no restart of chatwire.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        for server in &self.servers {
            server.retry_if_unstarted();
        }
        self.servers
            .iter()
            .flat_map(|server| {
                let tools = server.tools.lock().expect("the tools lock is never poisoned").clone();
                tools.into_iter().map(|info| Arc::new(McpTool { server: server.clone(), info }) as Arc<dyn Tool>)
            })
            .collect()
    }

    /// The tool the model calls `name`, if a server listed it.
    pub fn tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools().into_iter().find(|tool| tool.name() == name)
    }

    /// Stops every server (its whole process group).
    pub async fn shutdown(&self) {
        for server in &self.servers {
            server.live.lock().await.take();
        }
    }
}

/// Names end up inside `mcp__<server>__<tool>`, which is split at the first `__` after the prefix.
fn usable_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !name.contains("__")
        && !name.starts_with('_')
        && !name.ends_with('_')
}

/// A server's tool as the agent sees it.
struct McpTool {
    server: Arc<McpServer>,
    info: Arc<ToolInfo>,
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.info.full_name
    }

    fn description(&self) -> &str {
        &self.info.description
    }

    fn parameters(&self) -> Value {
        self.info.input_schema.clone()
    }

    fn read_only(&self) -> bool {
        self.info.read_only
    }

    fn run<'a>(&'a self, args: Value, ctx: ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(self.call(args, ctx.cancel))
    }
}

impl McpTool {
    async fn call(&self, args: Value, cancel: CancellationToken) -> ToolOutput {
        let server = &self.server.name;
        let tool = &self.info.remote_name;
        let arguments = match args {
            Value::Object(_) => args,
            Value::Null => json!({}),
            _ => return ToolOutput::error("arguments must be a JSON object"),
        };
        let connection = tokio::select! {
            connection = self.server.connection() => connection,
            () = cancel.cancelled() => return ToolOutput::error("stopped while the MCP server was starting"),
        };
        let connection = match connection {
            Ok(connection) => connection,
            Err(error) => return ToolOutput::error(format!("the MCP server `{server}` is not available: {error}")),
        };
        let params = json!({"name": tool, "arguments": arguments});
        match connection.request("tools/call", params, self.server.tool_timeout(), &cancel).await {
            Ok(result) => call_output(&result, self.server.max_output_bytes),
            Err(McpError::Cancelled) => ToolOutput::error("stopped; the MCP server was told to cancel the call"),
            Err(McpError::Exited(why)) => ToolOutput::error(format!(
                "the MCP server `{server}` exited during the call{why}; it is started again on the next call"
            )),
            Err(error) => ToolOutput::error(format!("`{tool}` on the MCP server `{server}` failed: {error}")),
        }
    }
}

/// A `tools/call` result as a tool output: the text items joined for the model, with a line for each other item;
/// `structuredContent` and the non-text items (as JSON) in the details, which the transcript shows as a tree.
fn call_output(result: &Value, max_output_bytes: usize) -> ToolOutput {
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let mut lines: Vec<String> = Vec::new();
    let mut other_items: Vec<Value> = Vec::new();
    for item in result.get("content").and_then(Value::as_array).into_iter().flatten() {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("unknown");
        match (kind, item.get("text").and_then(Value::as_str)) {
            ("text", Some(text)) => lines.push(text.to_owned()),
            _ => {
                lines.push(describe_item(kind, item));
                other_items.push(without_large_data(item));
            }
        }
    }
    let structured = result.get("structuredContent").filter(|value| !value.is_null());
    let mut text = lines.join("\n");
    if text.is_empty() {
        text = match structured {
            Some(structured) => structured.to_string(),
            None if is_error => "the tool reported an error without a message".to_owned(),
            None => "(the tool returned no content)".to_owned(),
        };
    }
    let mut details = Map::new();
    if let Some(structured) = structured {
        details.insert("structuredContent".into(), structured.clone());
    }
    if !other_items.is_empty() {
        details.insert("content".into(), Value::Array(other_items));
    }
    ToolOutput {
        text: cut_to(text, max_output_bytes),
        details: (!details.is_empty()).then_some(Value::Object(details)),
        is_error,
    }
}

/// The line the model gets for a content item that is not text.
fn describe_item(kind: &str, item: &Value) -> String {
    let field =
        |value: Option<&Value>, key: &str| value.and_then(|v| v.get(key)).and_then(Value::as_str).map(str::to_owned);
    match kind {
        "image" | "audio" => format!("[{kind} {}]", field(Some(item), "mimeType").unwrap_or_default()),
        "resource_link" => format!("[resource link {}]", field(Some(item), "uri").unwrap_or_default()),
        "resource" => {
            let resource = item.get("resource");
            let uri = field(resource, "uri").unwrap_or_default();
            match field(resource, "text") {
                Some(text) => format!("[resource {uri}]\n{text}"),
                None => format!("[resource {uri}]"),
            }
        }
        other => format!("[{other} content]"),
    }
}

/// Base64 payloads are for a viewer the transcript does not have; a long one is replaced by its size.
fn without_large_data(item: &Value) -> Value {
    let mut item = item.clone();
    if let Some(data) = item.get_mut("data")
        && let Some(encoded) = data.as_str()
        && encoded.len() > MAX_INLINE_DATA_CHARS
    {
        *data = Value::String(format!("({} characters of base64 left out)", encoded.len()));
    }
    item
}

fn cut_to(mut text: String, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text;
    }
    let mut at = max_bytes;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let left_out = text.len() - at;
    text.truncate(at);
    text.push_str(&format!("\n[… {left_out} more bytes left out]"));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_must_survive_the_tool_name_split() {
        for good in ["github", "my-server", "a_b", "fs2"] {
            assert!(usable_server_name(good), "{good}");
        }
        for bad in ["", "a__b", "_a", "a_", "a.b", "a b", "ä"] {
            assert!(!usable_server_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn tool_names_are_made_safe_and_read_only_needs_the_hint() {
        let info = ToolInfo::parse("srv", &json!({"name": "get.file", "annotations": {"readOnlyHint": true}})).unwrap();
        assert_eq!(info.full_name, "mcp__srv__get_file");
        assert_eq!(info.remote_name, "get.file");
        assert_eq!(info.input_schema, json!({"type": "object"}));
        assert!(info.read_only);
        let info = ToolInfo::parse(
            "srv",
            &json!({"name": "put", "title": "Put it", "inputSchema": {"type": "object",
            "properties": {}}, "annotations": {"destructiveHint": false}}),
        )
        .unwrap();
        assert_eq!(info.description, "Put it");
        assert!(!info.read_only);
        assert!(ToolInfo::parse("srv", &json!({"name": "x".repeat(60)})).is_err());
        assert!(ToolInfo::parse("srv", &json!({"title": "nameless"})).is_err());
    }

    #[test]
    fn results_join_text_and_keep_the_rest_as_json() {
        let result = json!({
            "content": [
                {"type": "text", "text": "first"},
                {"type": "image", "mimeType": "image/png", "data": "A".repeat(5000)},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}},
                {"type": "text", "text": "last"}
            ],
            "structuredContent": {"n": 1}
        });
        let output = call_output(&result, 1000);
        assert_eq!(output.text, "first\n[image image/png]\n[resource file:///a.txt]\ninside\nlast");
        assert!(!output.is_error);
        let details = output.details.unwrap();
        assert_eq!(details["structuredContent"], json!({"n": 1}));
        assert_eq!(details["content"][0]["data"], "(5000 characters of base64 left out)");
        assert_eq!(details["content"][1]["resource"]["text"], "inside");

        let output = call_output(&json!({"content": [], "structuredContent": {"ok": true}}), 1000);
        assert_eq!(output.text, r#"{"ok":true}"#);
        let output = call_output(&json!({"content": [{"type": "text", "text": "bad city"}], "isError": true}), 1000);
        assert_eq!((output.text.as_str(), output.is_error, output.details), ("bad city", true, None));
        let output = call_output(&json!({"content": [{"type": "text", "text": "é".repeat(10)}]}), 5);
        assert_eq!(output.text, "éé\n[… 16 more bytes left out]");
    }
}

//! One ACP prompt turn as the agent events every runtime emits (DESIGN §12): message and thought chunks become text
//! and thinking deltas, tool calls become tool executions of the matching chatwire tool (so they draw as Bash, Read,
//! Edit/Write, Grep/Glob rows), `plan` becomes `plan_update`, and the turn's end carries its usage. Pure: the
//! session feeds it updates and says how the prompt ended; the table is in docs/decisions.md.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::schema::{
    AcpToolKind, ContentBlock, ContentChunk, PermissionRequest, PlanEntry, PromptUsage, SessionUpdate, StopReason,
    ToolCallContent, ToolCallFields, ToolCallStatus,
};
use crate::protocol::{TodoItem, TodoStatus, TokenUsage};
use crate::runtime::event::{AgentEvent, AgentMessage, AssistantMessageEvent, CallUsage, ToolResult};

/// The line pi's and chatwire's bash results end with when the command failed; the Bash row reads the exit code
/// from it.
const EXIT_CODE_PREFIX: &str = "Command exited with code ";

/// How a turn ended, for the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    /// The agent is done (`end_turn`), or stopped because the user asked (`cancelled`).
    Settled,
    /// The agent ended the turn short of an answer: the run ends with an `error` of this message and code.
    Failed { message: String, code: &'static str },
}

/// What chatwire knows of one tool call so far: ACP updates carry only what changed.
#[derive(Debug, Clone, Default)]
struct Call {
    kind: Option<AcpToolKind>,
    /// The tool's name as chatwire shows it, fixed by the call's first update.
    name: String,
    title: Option<String>,
    raw_input: Option<Value>,
    raw_output: Option<Value>,
    content: Vec<ToolCallContent>,
    locations: Vec<String>,
    /// The arguments last sent on, so an update that changes none sends none.
    args: Option<Value>,
    /// The status of the latest update: only the one that says `completed` or `failed` ends the call.
    status: Option<ToolCallStatus>,
    finished: bool,
    /// The output of the terminal its content shows (`terminal/*`, served by chatwire), and its exit code once it
    /// ended.
    terminal: Option<(String, Option<i64>)>,
}

/// One prompt turn's translation.
#[derive(Debug)]
pub struct Turn {
    workspace: PathBuf,
    calls: HashMap<String, Call>,
    /// The context window as the agent last said (`usage_update`): `(used, size)`.
    context: Option<(u64, u64)>,
    /// The agent's session's cost in US dollars before this turn and as it last said (`usage_update`'s `cost` is
    /// the whole session's so far).
    cost_before: Option<f64>,
    cost: Option<f64>,
}

impl Turn {
    /// Opens the turn (the run has said `agent_start`); its first events open the turn's assistant message.
    /// `cost_before`: the session's cost as the agent last said it, before this turn.
    pub fn start(workspace: &Path, cost_before: Option<f64>) -> (Turn, Vec<AgentEvent>) {
        let turn =
            Turn { workspace: workspace.to_owned(), calls: HashMap::new(), context: None, cost_before, cost: None };
        let events = vec![AgentEvent::TurnStart, AgentEvent::MessageStart(AgentMessage::opening_answer())];
        (turn, events)
    }

    /// The events of one update; a kind with no place in chatwire yet is `Ignored` under its name (the mapper counts
    /// it).
    pub fn update(&mut self, update: SessionUpdate) -> Vec<AgentEvent> {
        match update {
            SessionUpdate::AgentMessageChunk(chunk) => self.chunk(chunk, false),
            SessionUpdate::AgentThoughtChunk(chunk) => self.chunk(chunk, true),
            SessionUpdate::ToolCall(fields) | SessionUpdate::ToolCallUpdate(fields) => self.tool(fields),
            SessionUpdate::Plan(entries) => vec![AgentEvent::PlanUpdate { todos: todos(&entries) }],
            SessionUpdate::Usage { used, size } => {
                self.context = Some((used, size));
                Vec::new()
            }
            // The user's own words come back only when `session/load` replays a conversation.
            SessionUpdate::UserMessageChunk(_) => vec![AgentEvent::Ignored("user_message_chunk".into())],
            // What the agent offers is the session's, not the turn's: `Offered` keeps it, and the session hands it
            // these before the turn sees them.
            SessionUpdate::AvailableCommands(_) => vec![AgentEvent::Ignored("available_commands_update".into())],
            SessionUpdate::CurrentMode(_) => vec![AgentEvent::Ignored("current_mode_update".into())],
            SessionUpdate::ConfigOptions(_) => vec![AgentEvent::Ignored("config_option_update".into())],
            SessionUpdate::Other(kind) => vec![AgentEvent::Unknown(kind)],
        }
    }

    /// The agent asks before a call runs: the call as the request describes it, then its approval card.
    pub fn permission_asked(&mut self, request: &PermissionRequest) -> Vec<AgentEvent> {
        let tool_call_id = request.tool_call.tool_call_id.clone();
        let mut events = self.tool(request.tool_call.clone());
        let call = &self.calls[&tool_call_id];
        events.push(AgentEvent::ToolApprovalRequest {
            tool_call_id,
            tool_name: call.name.clone(),
            args: call.args.clone().unwrap_or(Value::Null),
            options: request.options.clone(),
        });
        events
    }

    /// The user's decision on a call `permission_asked` showed (`false` also when the run was stopped).
    pub fn permission_decided(&self, tool_call_id: &str, approved: bool) -> AgentEvent {
        let tool_name = self.calls.get(tool_call_id).map(|call| call.name.clone()).unwrap_or_default();
        AgentEvent::ToolApprovalEnd { tool_call_id: tool_call_id.to_owned(), tool_name, approved }
    }

    /// Notes the session's cost so far, from a `usage_update`'s `cost`.
    pub fn cost(&mut self, amount: f64) {
        self.cost = Some(amount);
    }

    /// The session's cost as the agent last said it, for the next turn's `cost_before`.
    pub fn session_cost(&self) -> Option<f64> {
        self.cost.or(self.cost_before)
    }

    /// Ends the turn as `session/prompt` answered: the assistant message's end with its usage, then the turn's.
    pub fn finish(mut self, stop: &StopReason, usage: Option<&PromptUsage>) -> (Vec<AgentEvent>, TurnEnd) {
        let mut events = self.close_calls(stop == &StopReason::Cancelled);
        let (stop_reason, error_message, end) = match stop {
            StopReason::EndTurn => (crate::runtime::event::StopReason::Stop, None, TurnEnd::Settled),
            StopReason::Cancelled => (crate::runtime::event::StopReason::Aborted, None, TurnEnd::Settled),
            StopReason::MaxTokens => {
                failed("the agent's model reached its output limit before it finished", "max_tokens")
            }
            StopReason::MaxTurnRequests => {
                failed("the agent reached its limit of model requests for one prompt", "max_turn_requests")
            }
            StopReason::Refusal => failed("the agent refused to go on with this prompt", "refusal"),
            StopReason::Other(reason) => {
                let message = format!("the agent ended its turn for a reason chatwire does not know: {reason}");
                (
                    crate::runtime::event::StopReason::Error,
                    Some(message.clone()),
                    TurnEnd::Failed { message, code: "runtime_stop" },
                )
            }
        };
        let message = AgentMessage {
            stop_reason: Some(stop_reason),
            error_message,
            usage: self.usage(usage),
            ..AgentMessage::opening_answer()
        };
        events.extend([AgentEvent::MessageEnd(message), AgentEvent::TurnEnd]);
        (events, end)
    }

    fn usage(&self, usage: Option<&PromptUsage>) -> Option<CallUsage> {
        // A stopped turn reports zeros: it counted nothing.
        let usage = usage.filter(|usage| usage.input_tokens + usage.output_tokens + usage.total_tokens > 0);
        let tokens = usage.map(|usage| TokenUsage {
            input: usage.input_tokens.saturating_sub(usage.cached_read_tokens.unwrap_or(0)),
            output: usage.output_tokens,
            cache_read: usage.cached_read_tokens.unwrap_or(0),
            cache_write: usage.cached_write_tokens.unwrap_or(0),
            cost: self.cost.map(|total| (total - self.cost_before.unwrap_or(0.0)).max(0.0)),
        });
        match (tokens, self.context) {
            (None, None) => None,
            (tokens, context) => Some(CallUsage {
                tokens: tokens.unwrap_or_default(),
                context_window: context.map(|(_, size)| size).filter(|size| *size > 0),
                compact_at: None,
            }),
        }
    }

    fn chunk(&mut self, chunk: ContentChunk, thinking: bool) -> Vec<AgentEvent> {
        let delta = match chunk.content {
            ContentBlock::Text(text) => text,
            ContentBlock::Resource { uri, text: _ } => format!("[{uri}]"),
            ContentBlock::Image { .. } => return vec![AgentEvent::Ignored("image content".into())],
            ContentBlock::Other(kind) => return vec![AgentEvent::Unknown(format!("{kind} content"))],
        };
        let update = match thinking {
            true => AssistantMessageEvent::ThinkingDelta { content_index: 0, delta },
            false => AssistantMessageEvent::TextDelta { content_index: 0, delta },
        };
        vec![AgentEvent::MessageUpdate(update)]
    }

    fn tool(&mut self, fields: ToolCallFields) -> Vec<AgentEvent> {
        let id = fields.tool_call_id.clone();
        let call = self.calls.entry(id.clone()).or_default();
        if call.finished {
            return vec![AgentEvent::Ignored("update of a finished tool call".into())];
        }
        if call.name.is_empty() {
            call.name = tool_name(fields.kind.as_ref(), fields.title.as_deref(), fields.raw_input.as_ref());
        }
        merge(call, fields, &self.workspace);
        let mut events = Vec::new();
        let args = arguments(call, &self.workspace);
        if call.args.as_ref() != Some(&args) {
            call.args = Some(args.clone());
            events.push(AgentEvent::ToolExecutionStart {
                tool_call_id: id.clone(),
                tool_name: call.name.clone(),
                args,
            });
        }
        match &call.status {
            Some(ToolCallStatus::Completed) | Some(ToolCallStatus::Failed) => {
                call.finished = true;
                let failed = call.status == Some(ToolCallStatus::Failed);
                let (result, is_error) = result(call, failed, &self.workspace);
                events.push(AgentEvent::ToolExecutionEnd {
                    tool_call_id: id,
                    tool_name: call.name.clone(),
                    result,
                    is_error,
                });
            }
            Some(ToolCallStatus::Pending | ToolCallStatus::InProgress | ToolCallStatus::Other(_)) | None => {
                if !call.content.is_empty() {
                    events.push(progress(id, call, &self.workspace));
                }
            }
        }
        events
    }

    /// A terminal chatwire runs for the agent has new output (or ended): the calls whose content shows it stream it
    /// in their Bash rows, and their results are its output.
    pub fn terminal_output(&mut self, terminal_id: &str, output: &str, exit_code: Option<i64>) -> Vec<AgentEvent> {
        let mut events = Vec::new();
        let mut ids: Vec<&String> = self
            .calls
            .iter()
            .filter(|(_, call)| {
                !call.finished
                    && call.content.iter().any(
                        |item| matches!(item, ToolCallContent::Terminal { terminal_id: shown } if shown == terminal_id),
                    )
            })
            .map(|(id, _)| id)
            .collect();
        ids.sort();
        let ids: Vec<String> = ids.into_iter().cloned().collect();
        for id in ids {
            let call = self.calls.get_mut(&id).expect("listed just above");
            let seen = Some((output.to_owned(), exit_code));
            if call.terminal == seen {
                continue;
            }
            call.terminal = seen;
            events.push(progress(id, call, &self.workspace));
        }
        events
    }

    /// Calls the agent left open when the turn ended: stopped ones fail as stopped, others as unfinished.
    fn close_calls(&mut self, cancelled: bool) -> Vec<AgentEvent> {
        let mut open: Vec<(&String, &mut Call)> = self.calls.iter_mut().filter(|(_, call)| !call.finished).collect();
        open.sort_by(|a, b| a.0.cmp(b.0));
        open.into_iter()
            .map(|(id, call)| {
                call.finished = true;
                let why = if cancelled { "Stopped" } else { "the agent ended its turn before this call finished" };
                AgentEvent::ToolExecutionEnd {
                    tool_call_id: id.clone(),
                    tool_name: call.name.clone(),
                    result: ToolResult { text: why.into(), details: None },
                    is_error: true,
                }
            })
            .collect()
    }
}

/// What a running call shows so far.
fn progress(tool_call_id: String, call: &Call, workspace: &Path) -> AgentEvent {
    let (partial_result, _) = result(call, false, workspace);
    AgentEvent::ToolExecutionUpdate { tool_call_id, tool_name: call.name.clone(), args: Value::Null, partial_result }
}

fn failed(message: &str, code: &'static str) -> (crate::runtime::event::StopReason, Option<String>, TurnEnd) {
    (
        crate::runtime::event::StopReason::Error,
        Some(message.to_owned()),
        TurnEnd::Failed { message: message.to_owned(), code },
    )
}

fn merge(call: &mut Call, fields: ToolCallFields, workspace: &Path) {
    if let Some(kind) = fields.kind {
        call.kind = Some(kind);
    }
    if let Some(title) = fields.title {
        call.title = Some(title);
    }
    if let Some(input) = fields.raw_input.filter(|input| input.as_object().is_none_or(|input| !input.is_empty())) {
        call.raw_input = Some(input);
    }
    if let Some(output) = fields.raw_output {
        call.raw_output = Some(output);
    }
    if let Some(content) = fields.content {
        call.content = content;
    }
    if let Some(locations) = fields.locations.filter(|locations| !locations.is_empty()) {
        call.locations = locations.into_iter().map(|location| shown_path(&location.path, workspace)).collect();
    }
    call.status = fields.status;
}

/// The path as the rows show it: relative to the workspace when inside it.
fn shown_path(path: &str, workspace: &Path) -> String {
    match Path::new(path).strip_prefix(workspace) {
        Ok(relative) if relative.as_os_str().is_empty() => ".".to_owned(),
        Ok(relative) => relative.display().to_string(),
        Err(_) => path.to_owned(),
    }
}

/// The name the call's row is drawn by: chatwire's own tool of the same job for the kinds that have one, else the
/// agent's name of the tool when its first title is one (opencode's are), else the kind.
fn tool_name(kind: Option<&AcpToolKind>, title: Option<&str>, input: Option<&Value>) -> String {
    let word = title.filter(|title| {
        !title.is_empty()
            && title.len() <= 40
            && title.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    });
    let has = |key: &str| input.and_then(|input| input.get(key)).is_some();
    match kind {
        Some(AcpToolKind::Execute) => "bash".into(),
        Some(AcpToolKind::Read) => "read".into(),
        Some(AcpToolKind::Edit) => match word.map(str::to_ascii_lowercase).as_deref() {
            Some("write") => "write".into(),
            _ if has("content") && !has("oldString") && !has("old_string") => "write".into(),
            _ => "edit".into(),
        },
        Some(AcpToolKind::Search) => match word.map(str::to_ascii_lowercase).as_deref() {
            Some(name @ ("glob" | "ls")) => name.into(),
            Some("list") => "ls".into(),
            _ => "grep".into(),
        },
        Some(AcpToolKind::Think) => "think".into(),
        Some(AcpToolKind::Fetch) => word.map(str::to_ascii_lowercase).unwrap_or_else(|| "fetch".into()),
        Some(AcpToolKind::Delete) => "delete".into(),
        Some(AcpToolKind::Move) => "move".into(),
        Some(AcpToolKind::SwitchMode) => "switch_mode".into(),
        Some(AcpToolKind::Other(_)) | None => match word.map(str::to_ascii_lowercase) {
            // opencode's and Claude Code's checklist tool: the TodoWrite row draws it and the plan follows it.
            Some(name) if name == "todowrite" => "todo_write".into(),
            Some(name) => name,
            None => "tool".into(),
        },
    }
}

/// A string field of the agent's raw input under any of `keys`.
fn input_text<'a>(call: &'a Call, keys: &[&str]) -> Option<&'a str> {
    let input = call.raw_input.as_ref()?;
    keys.iter().find_map(|key| input.get(*key).and_then(Value::as_str))
}

/// The call's path: the input's, else its first location.
fn path_of(call: &Call, workspace: &Path) -> Option<String> {
    input_text(call, &["filePath", "filepath", "file_path", "path", "abs_path"])
        .map(|path| shown_path(path, workspace))
        .or_else(|| call.locations.first().cloned())
}

/// The arguments in the shape of chatwire's tool of the same name, so its row reads them; other tools keep the
/// agent's raw input.
fn arguments(call: &Call, workspace: &Path) -> Value {
    let mut args = Map::new();
    let mut put = |key: &str, value: Option<String>| {
        if let Some(value) = value {
            args.insert(key.into(), Value::String(value));
        }
    };
    match call.name.as_str() {
        "bash" => {
            // A pending call's title may be only the tool's name (opencode's); a later one is the command.
            let title = call.title.clone().filter(|title| !title.eq_ignore_ascii_case(&call.name));
            put("command", input_text(call, &["command", "cmd"]).map(str::to_owned).or(title));
            put("description", input_text(call, &["description"]).map(str::to_owned));
        }
        "read" | "ls" => put("path", path_of(call, workspace)),
        "write" => {
            put("path", path_of(call, workspace));
            put("content", input_text(call, &["content"]).map(str::to_owned));
        }
        "edit" => {
            put("path", path_of(call, workspace));
            put("oldText", input_text(call, &["oldString", "old_string", "oldText"]).map(str::to_owned));
            put("newText", input_text(call, &["newString", "new_string", "newText"]).map(str::to_owned));
        }
        "grep" | "glob" => {
            put("pattern", input_text(call, &["pattern", "query"]).map(str::to_owned));
            put("path", input_text(call, &["path"]).map(|path| shown_path(path, workspace)));
        }
        _ => {
            let input = call.raw_input.clone().unwrap_or_else(|| json!({}));
            return match (input, call.title.as_deref()) {
                (Value::Object(mut input), Some(title)) if !input.contains_key("title") => {
                    input.insert("title".into(), Value::String(title.into()));
                    Value::Object(input)
                }
                (input, _) => input,
            };
        }
    }
    Value::Object(args)
}

/// The text of the call's content blocks, joined.
fn content_text(call: &Call) -> String {
    let texts: Vec<&str> = call
        .content
        .iter()
        .filter_map(|item| match item {
            ToolCallContent::Content(ContentBlock::Text(text)) => Some(text.as_str()),
            ToolCallContent::Content(_)
            | ToolCallContent::Diff { .. }
            | ToolCallContent::Terminal { .. }
            | ToolCallContent::Other(_) => None,
        })
        .collect();
    texts.join("\n")
}

/// The call's result as chatwire's tool of the same name reports it, and whether it failed.
fn result(call: &Call, failed: bool, workspace: &Path) -> (ToolResult, bool) {
    let text = content_text(call);
    let output = call.raw_output.as_ref();
    match call.name.as_str() {
        "bash" => {
            let terminal = call.terminal.as_ref();
            let text = match (text.is_empty(), terminal) {
                (false, _) => text,
                (true, Some((shown, _))) => shown.clone(),
                (true, None) => output
                    .and_then(|output| output.get("output"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            };
            let exit = output
                .and_then(|output| {
                    ["exit", "exitCode", "exit_code"].iter().find_map(|key| {
                        output.get(*key).or_else(|| output.get("metadata").and_then(|meta| meta.get(*key)))?.as_i64()
                    })
                })
                .or_else(|| terminal.and_then(|(_, exit)| *exit));
            match exit.filter(|code| *code != 0) {
                Some(code) => {
                    let sep = if text.is_empty() || text.ends_with('\n') { "" } else { "\n" };
                    (ToolResult { text: format!("{text}{sep}\n{EXIT_CODE_PREFIX}{code}"), details: None }, true)
                }
                None => (ToolResult { text, details: None }, failed),
            }
        }
        "edit" | "write" => {
            let diff = call.content.iter().find_map(|item| match item {
                ToolCallContent::Diff { path, old_text, new_text } => Some((path, old_text, new_text)),
                ToolCallContent::Content(_) | ToolCallContent::Terminal { .. } | ToolCallContent::Other(_) => None,
            });
            // opencode's own unified diff of the whole file has the right line numbers; its `diff` content holds
            // only the replaced fragments.
            let whole = output
                .and_then(|output| output.get("metadata"))
                .and_then(|metadata| metadata.get("diff"))
                .and_then(Value::as_str)
                .and_then(|diff| relative_diff(diff, workspace));
            let details = whole.or_else(|| match diff {
                Some((path, old, new)) => {
                    let (diff, first) = crate::runtime::tools::unified_diff(
                        old.as_deref().unwrap_or_default(),
                        new,
                        &shown_path(path, workspace),
                    );
                    Some(json!({"diff": diff, "firstChangedLine": first}))
                }
                None => match (
                    input_text(call, &["oldString", "old_string", "oldText"]),
                    input_text(call, &["newString", "new_string", "newText"]),
                ) {
                    (Some(old), Some(new)) => {
                        let path = path_of(call, workspace).unwrap_or_default();
                        let (diff, first) = crate::runtime::tools::unified_diff(old, new, &path);
                        Some(json!({"diff": diff, "firstChangedLine": first}))
                    }
                    _ => None,
                },
            });
            (ToolResult { text, details }, failed)
        }
        // The rows list matches as the built-in tools report them, relative to the workspace.
        "grep" | "glob" | "ls" => {
            let prefix = format!("{}/", workspace.display());
            let text = text.lines().map(|line| line.replace(&prefix, "")).collect::<Vec<_>>().join("\n");
            (ToolResult { text, details: None }, failed)
        }
        _ => {
            let details = output.cloned().filter(|output| !output.is_null());
            (ToolResult { text, details }, failed)
        }
    }
}

/// A unified diff whose headers name absolute paths (opencode's, after an `Index:` and a `===` line), as chatwire's
/// edit tool writes one: `--- a/<path>` and `+++ b/<path>` relative to the workspace, and the line its first hunk
/// starts at in the new file.
fn relative_diff(diff: &str, workspace: &Path) -> Option<Value> {
    let start = diff.find("--- ")?;
    let mut out = String::new();
    let mut first_changed = None;
    for line in diff[start..].split_inclusive('\n') {
        if let Some(path) = line.strip_prefix("--- ") {
            out.push_str(&format!("--- a/{}\n", shown_path(path.trim_end(), workspace)));
        } else if let Some(path) = line.strip_prefix("+++ ") {
            out.push_str(&format!("+++ b/{}\n", shown_path(path.trim_end(), workspace)));
        } else {
            if first_changed.is_none() && line.starts_with("@@") {
                first_changed = hunk_new_start(line);
            }
            out.push_str(line);
        }
    }
    Some(json!({"diff": out, "firstChangedLine": first_changed.unwrap_or(1)}))
}

/// `+N` of a hunk header `@@ -a,b +N,M @@`.
fn hunk_new_start(header: &str) -> Option<u64> {
    let plus = header.split_whitespace().find_map(|word| word.strip_prefix('+'))?;
    plus.split(',').next()?.parse().ok()
}

/// The plan as chatwire's checklist items.
fn todos(entries: &[PlanEntry]) -> Vec<TodoItem> {
    entries
        .iter()
        .map(|entry| TodoItem::new(&entry.content, TodoStatus::parse(&entry.status).unwrap_or(TodoStatus::Pending)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::acp::schema::SessionUpdate;

    fn update(value: Value) -> SessionUpdate {
        SessionUpdate::parse(&value).expect("a valid update")
    }

    /// The name and arguments of the first `tool_execution_start` among `events`.
    fn started(events: &[AgentEvent]) -> (String, Value) {
        events
            .iter()
            .find_map(|event| match event {
                AgentEvent::ToolExecutionStart { tool_name, args, .. } => Some((tool_name.clone(), args.clone())),
                _ => None,
            })
            .expect("the call starts")
    }

    fn ended(events: &[AgentEvent]) -> (ToolResult, bool) {
        events
            .iter()
            .find_map(|event| match event {
                AgentEvent::ToolExecutionEnd { result, is_error, .. } => Some((result.clone(), *is_error)),
                _ => None,
            })
            .expect("the call ends")
    }

    #[test]
    fn claude_code_style_calls_take_chatwires_tool_names_and_argument_shapes() {
        let (mut turn, _) = Turn::start(Path::new("/w"), None);
        let cases = [
            (
                json!({"kind": "edit", "title": "Edit `src/a.rs`", "rawInput": {"file_path": "/w/src/a.rs", "old_string": "a", "new_string": "b"}}),
                "edit",
                json!({"path": "src/a.rs", "oldText": "a", "newText": "b"}),
            ),
            (
                json!({"kind": "edit", "title": "Write /w/b.txt", "rawInput": {"file_path": "/w/b.txt", "content": "hi"}}),
                "write",
                json!({"path": "b.txt", "content": "hi"}),
            ),
            (
                json!({"kind": "read", "title": "Read c.txt", "locations": [{"path": "/w/c.txt"}], "rawInput": {}}),
                "read",
                json!({"path": "c.txt"}),
            ),
            (
                json!({"kind": "search", "title": "glob", "rawInput": {"pattern": "**/*.rs", "path": "/w/src"}}),
                "glob",
                json!({"pattern": "**/*.rs", "path": "src"}),
            ),
            (
                json!({"kind": "search", "title": "Find TODOs", "rawInput": {"pattern": "TODO"}}),
                "grep",
                json!({"pattern": "TODO"}),
            ),
            (
                json!({"kind": "execute", "title": "cargo test", "rawInput": {}}),
                "bash",
                json!({"command": "cargo test"}),
            ),
            (
                json!({"kind": "fetch", "title": "Fetch https://example.com", "rawInput": {"url": "https://example.com"}}),
                "fetch",
                json!({"url": "https://example.com", "title": "Fetch https://example.com"}),
            ),
            (
                json!({"title": "TodoWrite", "rawInput": {"todos": []}}),
                "todo_write",
                json!({"todos": [], "title": "TodoWrite"}),
            ),
            (
                json!({"kind": "other", "title": "Ask the user something long", "rawInput": {"q": 1}}),
                "tool",
                json!({"q": 1, "title": "Ask the user something long"}),
            ),
        ];
        for (at, (fields, name, args)) in cases.into_iter().enumerate() {
            let mut fields = fields;
            fields["sessionUpdate"] = json!("tool_call");
            fields["toolCallId"] = json!(format!("c{at}"));
            let events = turn.update(update(fields.clone()));
            assert_eq!(started(&events), (name.to_owned(), args), "{fields}");
        }
    }

    #[test]
    fn an_update_carries_only_what_changed_and_the_end_carries_the_result() {
        let (mut turn, _) = Turn::start(Path::new("/w"), None);
        let first = turn.update(update(json!({"sessionUpdate": "tool_call", "toolCallId": "e", "kind": "edit",
            "title": "edit", "status": "pending", "rawInput": {}})));
        assert_eq!(started(&first), ("edit".to_owned(), json!({})));
        let same = turn
            .update(update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "e", "status": "in_progress"})));
        assert!(same.is_empty(), "nothing changed: {same:?}");
        let end = turn
            .update(update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "e", "status": "completed",
            "content": [{"type": "diff", "path": "/w/a.txt", "oldText": "one\ntwo\n", "newText": "one\n2\n"}]})));
        let (result, is_error) = ended(&end);
        assert!(!is_error);
        let details = result.details.expect("the diff");
        assert_eq!(details["diff"], "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n");
        assert_eq!(details["firstChangedLine"], 2);
        let late =
            turn.update(update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "e", "status": "completed"})));
        assert!(matches!(late.as_slice(), [AgentEvent::Ignored(_)]), "{late:?}");
    }

    #[test]
    fn a_failed_command_says_its_exit_code_as_the_bash_row_reads_it() {
        let (mut turn, _) = Turn::start(Path::new("/w"), None);
        let events = turn.update(update(json!({"sessionUpdate": "tool_call", "toolCallId": "b", "kind": "execute",
            "status": "completed", "rawInput": {"command": "false"},
            "content": [{"type": "content", "content": {"type": "text", "text": "oops"}}],
            "rawOutput": {"exitCode": 2}})));
        let (result, is_error) = ended(&events);
        assert!(is_error);
        assert_eq!(result.text, "oops\n\nCommand exited with code 2");
    }

    #[test]
    fn stop_reasons_end_the_turn_or_fail_it_in_words() {
        for (stop, expected) in [
            (StopReason::EndTurn, None),
            (StopReason::Cancelled, None),
            (StopReason::MaxTokens, Some("max_tokens")),
            (StopReason::MaxTurnRequests, Some("max_turn_requests")),
            (StopReason::Refusal, Some("refusal")),
            (StopReason::Other("tired".into()), Some("runtime_stop")),
        ] {
            let (turn, _) = Turn::start(Path::new("/w"), None);
            let (_, end) = turn.finish(&stop, None);
            let code = match end {
                TurnEnd::Settled => None,
                TurnEnd::Failed { code, .. } => Some(code),
            };
            assert_eq!(code, expected, "{stop:?}");
        }
    }

    #[test]
    fn a_turns_cost_is_what_it_added_to_the_sessions_and_its_window_comes_from_usage_update() {
        let (mut turn, _) = Turn::start(Path::new("/w"), Some(0.25));
        turn.update(update(json!({"sessionUpdate": "usage_update", "used": 900, "size": 64000})));
        turn.cost(0.5);
        let usage = PromptUsage { input_tokens: 800, output_tokens: 100, total_tokens: 900, ..PromptUsage::default() };
        let (events, _) = turn.finish(&StopReason::EndTurn, Some(&usage));
        let Some(AgentEvent::MessageEnd(message)) = events.iter().find(|e| matches!(e, AgentEvent::MessageEnd(_)))
        else {
            panic!("the message ends")
        };
        let usage = message.usage.as_ref().expect("usage");
        assert_eq!(usage.tokens.cost, Some(0.25));
        assert_eq!(usage.context_window, Some(64000));
        assert_eq!((usage.tokens.input, usage.tokens.output), (800, 100));
    }

    #[test]
    fn plans_keep_their_steps_and_unknown_statuses_are_pending() {
        let (mut turn, _) = Turn::start(Path::new("/w"), None);
        let events = turn.update(update(json!({"sessionUpdate": "plan", "entries": [
            {"content": "a", "priority": "high", "status": "completed"},
            {"content": "b", "priority": "low", "status": "blocked"}]})));
        assert_eq!(
            events,
            [AgentEvent::PlanUpdate {
                todos: vec![TodoItem::new("a", TodoStatus::Completed), TodoItem::new("b", TodoStatus::Pending)]
            }]
        );
    }
}

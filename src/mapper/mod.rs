//! `EventMapper`: agent events (pi's RPC dialect) → chat frames, following the table in DESIGN.md §5. Pure: clock and ids are injected.
//!
//! One run is one assistant message. A run opens at `agent_start` (or when the
//! server opens it with the user's prompt) and stays open across pi's retries
//! (a retry is a new `agent_start … agent_end`), steering and follow-ups; it
//! ends when the runtime has settled, with `done` carrying the message the
//! shared reducer built from the very frames sent — or `error` when nothing
//! renderable came out.

mod args_scanner;
mod replay;
mod tool_output;

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use serde_json::{Map, Value};

pub use self::args_scanner::{ArgsScanner, ArgsText};
pub use self::replay::{MAX_EVENT_LINE_BYTES, ReplayReport, replay};
pub use self::tool_output::normalize_output;
use crate::chat_state::{ChatSnapshot, apply};
use crate::protocol::*;
use crate::runtime::event::{
    AgentEvent, AgentMessage, AssistantMessageEvent, MessageRole, StopReason, ToolCallHeader, ToolResult, UiRequest,
};

/// Milliseconds since the Unix epoch.
pub type Clock = Box<dyn FnMut() -> u64 + Send>;
/// Makes a fresh id; the argument says what it is for (`run`, `msg`).
pub type IdGenerator = Box<dyn FnMut(&str) -> String + Send>;

/// Events the mapper saw but had nothing to show for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MapperStats {
    pub events: u64,
    /// Known types with nothing to show, and events outside any run that need one.
    pub ignored: u64,
    /// Types this version does not know, by name.
    pub unknown: BTreeMap<String, u64>,
}

#[derive(Debug, Clone)]
struct ToolTrack {
    kind: ToolKind,
    state: ToolState,
    index: Option<u32>,
    /// When the call began to execute (or its question was asked): the start of its `durationMs`.
    started_at: Option<u64>,
}

/// What the server knows of a run when it opens it.
#[derive(Debug, Clone, Default)]
pub struct RunMeta {
    /// The run's id, when the server chose it (it names the run before the run opens); else the mapper makes one.
    pub run_id: Option<String>,
    /// The user's prompt, logged as the run's first `message`.
    pub prompt: Option<ChatMessage>,
    pub mode: AgentMode,
    /// The runtime's own file of the conversation (pi's session file), named by `start` and `done`.
    pub session_file: Option<String>,
    /// The runtime could not reopen the conversation it had before and starts over.
    pub session_reset: bool,
    /// Set when the run starts a branch (an edit, a regeneration): where it attaches, for its `start`.
    pub branch: Option<BranchPoint>,
    /// The run answers a user message the transcript already holds (Regenerate): the runtime's echo of it is not
    /// logged a second time.
    pub answers_again: bool,
}

#[derive(Debug, Default)]
struct RunState {
    run_id: String,
    /// The runtime's file of the conversation, for `done`.
    session_file: Option<String>,
    message_id: String,
    created_at: u64,
    /// Plan mode: plan frames say `mode: plan`, and a run that wrote a plan ends by asking the user to decide.
    mode: AgentMode,
    /// The checklist of the run's latest successful `todo_write`.
    plan: Option<Vec<TodoItem>>,
    /// The server logged the prompt itself; pi's echo of it must not make a second `message`.
    prompt_logged: bool,
    agent_active: bool,
    /// `auto_retry_start` seen, its `auto_retry_end` not yet.
    retry_pending: bool,
    /// `agent_end` seen: the run ends unless a retry or more agent work follows.
    awaiting_settle: bool,
    aborted: bool,
    stopped_at_length: bool,
    /// The provider error of the latest attempt, if it failed.
    provider_error: Option<String>,
    tools: FxHashMap<String, ToolTrack>,
    /// Tool calls in arrival order, to close unfinished ones in a stable order.
    tool_order: Vec<String>,
    /// `contentIndex` → tool call id, for the model message being streamed.
    content_tools: FxHashMap<usize, String>,
    tool_calls_in_message: u32,
    scanners: FxHashMap<String, ArgsScanner>,
}

pub struct EventMapper {
    session_id: String,
    clock: Clock,
    ids: IdGenerator,
    snapshot: ChatSnapshot,
    run: Option<RunState>,
    /// The phase the agent is in, for the status lines a runtime's extensions post (pi's `notify`, `setStatus`).
    phase: LifecycleName,
    stats: MapperStats,
    /// Reused for every `toolcall_delta`, so that scanning a fragment allocates only the frames it yields.
    args_pieces: Vec<ArgsText>,
}

/// `errorText` of a call the user denied.
const DENIED_TOOL: &str = "denied by the user";

impl EventMapper {
    pub fn new(session_id: impl Into<String>, clock: Clock, ids: IdGenerator) -> Self {
        EventMapper {
            session_id: session_id.into(),
            clock,
            ids,
            snapshot: ChatSnapshot::default(),
            run: None,
            phase: LifecycleName::AgentStart,
            stats: MapperStats::default(),
            args_pieces: Vec::new(),
        }
    }

    pub fn stats(&self) -> &MapperStats {
        &self.stats
    }

    pub fn is_run_open(&self) -> bool {
        self.run.is_some()
    }

    /// The transcript as the frames sent so far build it.
    pub fn snapshot(&self) -> &ChatSnapshot {
        &self.snapshot
    }

    /// Runs `work` with `transcript` as the mapper's own snapshot: a caller that keeps the session's transcript
    /// itself (the server) has the mapper reduce its frames into it, so that each frame is reduced once.
    pub fn reducing_into<T>(&mut self, transcript: &mut ChatSnapshot, work: impl FnOnce(&mut Self) -> T) -> T {
        std::mem::swap(&mut self.snapshot, transcript);
        let out = work(self);
        std::mem::swap(&mut self.snapshot, transcript);
        out
    }

    fn emit(&mut self, frame: ChatFrame, out: &mut Vec<ChatFrame>) {
        apply(&mut self.snapshot, &frame);
        out.push(frame);
    }

    /// Opens a run: `start`, then the user's prompt as a `message` when the server has it.
    pub fn open_run(&mut self, meta: RunMeta) -> Vec<ChatFrame> {
        let mut out = Vec::new();
        if self.run.is_some() {
            out.extend(self.settle());
        }
        let RunMeta { run_id, prompt, mode, session_file, session_reset, branch, answers_again } = meta;
        let run = RunState {
            run_id: run_id.unwrap_or_else(|| (self.ids)("run")),
            session_file: session_file.clone(),
            message_id: (self.ids)("msg"),
            created_at: (self.clock)(),
            prompt_logged: prompt.is_some() || answers_again,
            mode,
            ..RunState::default()
        };
        let start = ChatFrame::Start(StartFrame {
            seq: None,
            id: run.message_id.clone(),
            run_id: run.run_id.clone(),
            session_id: self.session_id.clone(),
            session_file,
            session_reset: session_reset.then_some(true),
            diagnostics: None,
            branch,
        });
        self.run = Some(run);
        self.emit(start, &mut out);
        if let Some(message) = prompt {
            self.emit(ChatFrame::Message(MessageFrame { seq: None, message }), &mut out);
        }
        out
    }

    /// Ends the open run as settled, with what the runtime said of it at the end: its conversation's file, when it
    /// names one (pi may have moved to a new file during the run).
    pub fn settle_run(&mut self, session_file: Option<String>) -> Vec<ChatFrame> {
        if let (Some(run), Some(file)) = (self.run.as_mut(), session_file) {
            run.session_file = Some(file);
        }
        self.map(AgentEvent::AgentSettled)
    }

    /// Maps one event to the frames a viewer of the session receives.
    pub fn map(&mut self, event: AgentEvent) -> Vec<ChatFrame> {
        let mut out = Vec::new();
        self.map_into(event, &mut out);
        out
    }

    /// Like `map`, appending the frames to `out`: a caller that encodes them right away reuses one buffer.
    pub fn map_into(&mut self, event: AgentEvent, out: &mut Vec<ChatFrame>) {
        self.stats.events += 1;
        match event {
            AgentEvent::AgentStart => {
                let continues = self.run.as_ref().is_some_and(|run| !run.awaiting_settle || run.retry_pending);
                if !continues {
                    out.extend(self.open_run(RunMeta::default()));
                }
                let run = self.run_mut();
                run.agent_active = true;
                run.awaiting_settle = false;
                self.phase = LifecycleName::AgentStart;
                self.emit(lifecycle(LifecycleName::AgentStart, None), out);
            }
            AgentEvent::AgentEnd => {
                if let Some(run) = self.run.as_mut() {
                    run.agent_active = false;
                    run.awaiting_settle = true;
                    self.emit(lifecycle(LifecycleName::AgentEnd, None), out);
                } else {
                    self.stats.ignored += 1;
                }
            }
            AgentEvent::AgentSettled => out.extend(self.settle()),
            AgentEvent::TurnStart => {
                self.phase = LifecycleName::TurnStart;
                self.in_run(lifecycle(LifecycleName::TurnStart, None), out);
            }
            AgentEvent::TurnEnd => {
                self.phase = LifecycleName::TurnEnd;
                self.in_run(lifecycle(LifecycleName::TurnEnd, None), out);
            }
            AgentEvent::MessageStart(message) => self.message_start(message, out),
            AgentEvent::MessageEnd(message) => self.message_end(message, out),
            AgentEvent::MessageUpdate(update) => self.message_update(update, out),
            AgentEvent::ToolExecutionStart { tool_call_id, tool_name, args } => {
                self.ensure_run(out);
                let input_available = self.track_tool(&tool_call_id, &tool_name).state == ToolState::InputAvailable;
                let now = (self.clock)();
                if let Some(track) = self.run_mut().tools.get_mut(&tool_call_id) {
                    track.started_at.get_or_insert(now);
                }
                let unchanged = input_available && known_input(&self.snapshot, &tool_call_id) == Some(&args);
                if !unchanged {
                    self.tool_frame(&tool_call_id, ToolState::InputAvailable, non_null(args), None, None, out);
                }
            }
            AgentEvent::ToolApprovalRequest { tool_call_id, tool_name, args, options } => {
                self.ensure_run(out);
                self.track_tool(&tool_call_id, &tool_name);
                self.tool_frame_with(
                    &tool_call_id,
                    ToolState::ApprovalRequested,
                    non_null(args),
                    None,
                    None,
                    options,
                    out,
                );
            }
            AgentEvent::ToolApprovalEnd { tool_call_id, tool_name, approved } => {
                self.ensure_run(out);
                self.track_tool(&tool_call_id, &tool_name);
                // An approved call goes on to `tool_execution_start`, which shows it running.
                if !approved {
                    let denied = Some(DENIED_TOOL.to_owned());
                    self.tool_frame(&tool_call_id, ToolState::OutputDenied, None, None, denied, out);
                }
            }
            AgentEvent::ToolExecutionUpdate { tool_call_id, tool_name, args, partial_result } => {
                self.ensure_run(out);
                self.track_tool(&tool_call_id, &tool_name);
                // Without new arguments the call keeps the ones it has.
                let input = non_null(args);
                let kind = &self.run_ref().tools[&tool_call_id].kind;
                let known = input.as_ref().or_else(|| known_input(&self.snapshot, &tool_call_id));
                let output = normalize_output(kind, known.unwrap_or(&Value::Null), &partial_result, false, false);
                self.tool_frame(&tool_call_id, ToolState::InputAvailable, input, Some(output), None, out);
            }
            AgentEvent::ToolExecutionEnd { tool_call_id, tool_name, result, is_error } => {
                self.ensure_run(out);
                self.track_tool(&tool_call_id, &tool_name);
                self.finish_tool(&tool_call_id, &result, is_error, out);
            }
            AgentEvent::QueueUpdate { steering, follow_up } => {
                self.emit(ChatFrame::Queue(QueueFrame { seq: None, steering, follow_up }), out)
            }
            AgentEvent::PlanUpdate { todos } => {
                self.ensure_run(out);
                self.plan_changed(todos, out);
            }
            // Outside a run as well as in one (setting an option between runs); an agent that repeats what the log
            // already holds (each reopened session says its options again) adds no frame.
            AgentEvent::AgentOptions(offered) => {
                let offered = AgentOptionsFrame { seq: None, ..offered };
                if self.snapshot.agent_options.as_ref() != Some(&offered) {
                    self.emit(ChatFrame::AgentOptions(offered), out);
                }
            }
            AgentEvent::CompactionStart { reason } => {
                // A manual compaction happens between runs: the one that just ended is over.
                if reason == CompactionReason::Manual && self.run.as_ref().is_some_and(|r| r.awaiting_settle) {
                    out.extend(self.settle());
                }
                let frame = ChatFrame::Compaction(CompactionFrame::Start(CompactionStart { seq: None, reason }));
                self.emit(frame, out);
            }
            AgentEvent::CompactionEnd { reason, aborted, will_retry, error_message } => {
                let end = CompactionEnd { seq: None, reason, aborted, will_retry, error_message };
                self.emit(ChatFrame::Compaction(CompactionFrame::End(end)), out);
            }
            AgentEvent::AutoRetryStart { attempt, max_attempts, delay_ms, error_message } => {
                if let Some(run) = self.run.as_mut() {
                    run.retry_pending = true;
                    run.awaiting_settle = false;
                    // The failed attempt is reported by this frame; only the last attempt's error may reach `done`.
                    run.provider_error = None;
                }
                let start = RetryStart { seq: None, attempt, max_attempts, delay_ms, error_message };
                self.emit(ChatFrame::Retry(RetryFrame::Start(start)), out);
            }
            AgentEvent::AutoRetryEnd { success, attempt, final_error } => {
                let end = RetryEnd { seq: None, success, attempt, final_error: final_error.clone() };
                self.emit(ChatFrame::Retry(RetryFrame::End(end)), out);
                if let Some(run) = self.run.as_mut() {
                    run.retry_pending = false;
                    if !success {
                        run.provider_error = final_error.or(run.provider_error.take());
                        if !run.agent_active {
                            out.extend(self.settle());
                        }
                    }
                }
            }
            AgentEvent::ExtensionUiRequest(request) => self.ui_request(request, out),
            AgentEvent::Response(_) => {
                // A command answered while the agent is idle: nothing more is coming for the run that ended.
                if self.run.as_ref().is_some_and(|run| run.awaiting_settle && !run.retry_pending) {
                    out.extend(self.settle());
                }
            }
            AgentEvent::Ignored(_) => self.stats.ignored += 1,
            AgentEvent::Unknown(kind) => *self.stats.unknown.entry(kind).or_default() += 1,
        }
    }

    fn run_mut(&mut self) -> &mut RunState {
        // Every caller opens a run first (`ensure_run` / `open_run`).
        self.run.as_mut().expect("a run is open here")
    }

    fn run_ref(&self) -> &RunState {
        self.run.as_ref().expect("a run is open here")
    }

    /// Events that only make sense inside a run open one when a stream starts mid-run.
    fn ensure_run(&mut self, out: &mut Vec<ChatFrame>) {
        if self.run.is_none() {
            out.extend(self.open_run(RunMeta::default()));
        }
    }

    fn in_run(&mut self, frame: ChatFrame, out: &mut Vec<ChatFrame>) {
        if self.run.is_some() {
            self.emit(frame, out);
        } else {
            self.stats.ignored += 1;
        }
    }

    fn message_start(&mut self, message: AgentMessage, out: &mut Vec<ChatFrame>) {
        match message.role {
            MessageRole::User => {
                self.ensure_run(out);
                let run = self.run_mut();
                if std::mem::take(&mut run.prompt_logged) {
                    return;
                }
                let created_at = message.timestamp.unwrap_or_else(|| (self.clock)());
                let user = ChatMessage {
                    id: (self.ids)("msg"),
                    role: Role::User,
                    parts: vec![ChatMessagePart::text(message.text)],
                    created_at: Some(created_at),
                    changes: None,
                    usage: None,
                };
                self.emit(ChatFrame::Message(MessageFrame { seq: None, message: user }), out);
            }
            MessageRole::Assistant => {
                self.ensure_run(out);
                let run = self.run_mut();
                run.content_tools.clear();
                run.tool_calls_in_message = 0;
                self.emit(lifecycle(LifecycleName::MessageStart, None), out);
            }
            MessageRole::ToolResult | MessageRole::Other => {}
        }
    }

    fn message_end(&mut self, message: AgentMessage, out: &mut Vec<ChatFrame>) {
        if message.role != MessageRole::Assistant {
            return;
        }
        self.ensure_run(out);
        let run = self.run_mut();
        let note = match &message.stop_reason {
            Some(StopReason::Error) => {
                let error = message.error_message.clone().unwrap_or_else(|| "the model call failed".into());
                run.provider_error = Some(error.clone());
                Some(error)
            }
            Some(StopReason::Aborted) => {
                run.aborted = true;
                message.error_message.clone()
            }
            Some(StopReason::Length) => {
                run.stopped_at_length = true;
                None
            }
            Some(StopReason::Stop | StopReason::ToolUse | StopReason::Other(_)) | None => {
                run.stopped_at_length = false;
                None
            }
        };
        if let Some(usage) = message.usage {
            let frame = UsageFrame {
                seq: None,
                run_id: Some(run.run_id.clone()),
                message_id: Some(run.message_id.clone()),
                context: Some(usage.context()),
                usage: usage.tokens,
            };
            self.emit(ChatFrame::Usage(frame), out);
        }
        self.emit(lifecycle(LifecycleName::MessageEnd, note), out);
    }

    fn message_update(&mut self, update: AssistantMessageEvent, out: &mut Vec<ChatFrame>) {
        self.ensure_run(out);
        match update {
            AssistantMessageEvent::TextDelta { delta, .. } => {
                if !delta.is_empty() {
                    self.emit(ChatFrame::Delta(DeltaFrame { seq: None, text: delta, message_id: None }), out);
                }
            }
            AssistantMessageEvent::ThinkingDelta { delta, .. } => {
                if !delta.is_empty() {
                    self.emit(ChatFrame::Thinking(ThinkingFrame { seq: None, text: delta, message_id: None }), out);
                }
            }
            AssistantMessageEvent::ToolcallStart { content_index, call } => {
                if let Some(call) = call {
                    self.draft_tool(content_index, call, out);
                }
            }
            AssistantMessageEvent::ToolcallDelta { content_index, delta, call } => {
                let known = self.run_mut().content_tools.get(&content_index);
                let id = match (known, call) {
                    // pi repeats the header with every fragment: its id is the frames' copy, so none is made here.
                    (Some(known), Some(call)) if *known == call.id => call.id,
                    (Some(known), _) => known.clone(),
                    (None, Some(call)) => self.draft_tool(content_index, call, out),
                    (None, None) => {
                        self.stats.ignored += 1;
                        return;
                    }
                };
                let mut pieces = std::mem::take(&mut self.args_pieces);
                let run = self.run_mut();
                match run.scanners.get_mut(&id) {
                    Some(scanner) => scanner.feed_into(&delta, &mut pieces),
                    None => run.scanners.entry(id.clone()).or_default().feed_into(&delta, &mut pieces),
                }
                let last = pieces.len().saturating_sub(1);
                let mut id = Some(id);
                for (i, piece) in pieces.drain(..).enumerate() {
                    // The last frame takes the id itself; the others get copies.
                    let tool_call_id =
                        if i == last { id.take().unwrap_or_default() } else { id.clone().unwrap_or_default() };
                    let frame = ToolArgsDeltaFrame {
                        seq: None,
                        tool_call_id,
                        path: piece.path,
                        text: piece.text,
                        message_id: None,
                    };
                    self.emit(ChatFrame::ToolArgsDelta(frame), out);
                }
                self.args_pieces = pieces;
            }
            AssistantMessageEvent::ToolcallEnd { content_index, call } => {
                if !self.run_mut().tools.contains_key(&call.id) {
                    let header = ToolCallHeader { id: call.id.clone(), name: call.name.clone() };
                    self.draft_tool(content_index, header, out);
                }
                self.run_mut().scanners.remove(&call.id);
                self.tool_frame(&call.id, ToolState::InputAvailable, non_null(call.arguments), None, None, out);
            }
            AssistantMessageEvent::Other(_) => {}
        }
    }

    /// Opens a tool row for a call the model started writing; returns its id.
    fn draft_tool(&mut self, content_index: usize, call: ToolCallHeader, out: &mut Vec<ChatFrame>) -> String {
        let run = self.run_mut();
        run.content_tools.insert(content_index, call.id.clone());
        if run.tools.contains_key(&call.id) {
            return call.id;
        }
        let index = run.tool_calls_in_message;
        run.tool_calls_in_message += 1;
        let kind = ToolKind::from_runtime_name(&call.name);
        let part_name = kind.part_name().into_owned();
        run.tool_order.push(call.id.clone());
        run.tools.insert(
            call.id.clone(),
            ToolTrack { kind, state: ToolState::InputStreaming, index: Some(index), started_at: None },
        );
        let frame =
            ToolDraftFrame { seq: None, tool_call_id: call.id.clone(), tool_name: part_name, index, message_id: None };
        self.emit(ChatFrame::ToolDraft(frame), out);
        call.id
    }

    /// The tracked tool call, registering one that was never drafted (runtimes without streaming).
    fn track_tool(&mut self, tool_call_id: &str, tool_name: &str) -> &ToolTrack {
        if !self.run_mut().tools.contains_key(tool_call_id) {
            let run = self.run_mut();
            run.tool_order.push(tool_call_id.to_owned());
            run.tools.insert(
                tool_call_id.to_owned(),
                ToolTrack {
                    kind: ToolKind::from_runtime_name(tool_name),
                    state: ToolState::InputStreaming,
                    index: None,
                    started_at: None,
                },
            );
        }
        &self.run_mut().tools[tool_call_id]
    }

    fn tool_frame(
        &mut self,
        tool_call_id: &str,
        state: ToolState,
        input: Option<Value>,
        output: Option<Value>,
        error_text: Option<String>,
        out: &mut Vec<ChatFrame>,
    ) {
        self.tool_frame_with(tool_call_id, state, input, output, error_text, Vec::new(), out);
    }

    /// [`Self::tool_frame`] for a call waiting for approval, with the agent's ways to answer it.
    #[allow(clippy::too_many_arguments)]
    fn tool_frame_with(
        &mut self,
        tool_call_id: &str,
        state: ToolState,
        input: Option<Value>,
        output: Option<Value>,
        error_text: Option<String>,
        approval_options: Vec<ApprovalOption>,
        out: &mut Vec<ChatFrame>,
    ) {
        let Some(track) = self.run.as_mut().and_then(|run| run.tools.get_mut(tool_call_id)) else {
            return;
        };
        track.state = state;
        let duration_ms = match state {
            ToolState::OutputAvailable | ToolState::OutputError => {
                track.started_at.map(|started_at| (self.clock)().saturating_sub(started_at))
            }
            ToolState::InputStreaming
            | ToolState::InputAvailable
            | ToolState::ApprovalRequested
            | ToolState::OutputDenied => None,
        };
        // The reducer's copy of the arguments is the only one kept: a frame without new ones repeats it.
        let input = input.or_else(|| known_input(&self.snapshot, tool_call_id).cloned());
        let part = ChatToolPart {
            kind: track.kind.clone(),
            tool_call_id: tool_call_id.to_owned(),
            state,
            index: track.index,
            input,
            output,
            error_text,
            duration_ms,
            approval_options,
            extra: Map::new(),
        };
        self.emit(ChatFrame::Tool(ToolFrame { seq: None, part: Box::new(part), message_id: None }), out);
    }

    fn finish_tool(&mut self, tool_call_id: &str, result: &ToolResult, is_error: bool, out: &mut Vec<ChatFrame>) {
        let track = &self.run_ref().tools[tool_call_id];
        let input = known_input(&self.snapshot, tool_call_id).unwrap_or(&Value::Null);
        let output = normalize_output(&track.kind, input, result, true, is_error);
        let (state, error_text) = if is_error {
            // A command's output is already in `output`; its last line says why it failed ("Command aborted").
            let message = if track.kind.is_command() {
                result.text.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or_default()
            } else {
                result.text.as_str()
            }
            .trim();
            let message = if message.is_empty() { "the tool failed".to_owned() } else { message.to_owned() };
            (ToolState::OutputError, Some(message))
        } else {
            (ToolState::OutputAvailable, None)
        };
        // The same items the TodoWrite row draws.
        let todos = (!is_error && track.kind.is_checklist()).then(|| TodosOutput::from_output(&output)).flatten();
        self.tool_frame(tool_call_id, state, None, Some(output), error_text, out);
        if let Some(TodosOutput { todos }) = todos {
            self.plan_changed(todos, out);
        }
    }

    /// The run's plan is now `todos`, from a checklist tool or the runtime's own plan event.
    fn plan_changed(&mut self, todos: Vec<TodoItem>, out: &mut Vec<ChatFrame>) {
        let run = self.run_mut();
        let frame = plan_frame(run.mode, &todos, false);
        run.plan = Some(todos);
        self.emit(frame, out);
    }

    fn ui_request(&mut self, request: UiRequest, out: &mut Vec<ChatFrame>) {
        match request.method.as_str() {
            "select" | "confirm" | "input" => {
                self.ensure_run(out);
                let id = format!("ui-{}", request.id);
                let mut input = request.fields;
                input.shift_remove("type");
                input.shift_remove("id");
                let asked_at = (self.clock)();
                let run = self.run_mut();
                run.tool_order.push(id.clone());
                run.tools.insert(
                    id.clone(),
                    ToolTrack {
                        kind: ToolKind::Question,
                        state: ToolState::InputStreaming,
                        index: None,
                        started_at: Some(asked_at),
                    },
                );
                self.tool_frame(&id, ToolState::InputAvailable, Some(Value::Object(input)), None, None, out);
            }
            // The activity line: a `state` frame naming the phase the agent is in (so the lifecycle stays true)
            // with the extension's text as its message.
            "notify" | "setStatus" if self.run.is_some() => match status_text(&request) {
                Some(message) => self.emit(lifecycle(self.phase, message), out),
                None => self.stats.ignored += 1,
            },
            _ => self.stats.ignored += 1,
        }
    }

    /// Ends every tool call of the open run that has no result yet with `output-error`, in arrival order.
    fn close_unfinished_tools(&mut self, out: &mut Vec<ChatFrame>) {
        let Some(run) = self.run.as_ref() else { return };
        let unfinished: Vec<String> =
            run.tool_order.iter().filter(|id| !run.tools[*id].state.is_terminal()).cloned().collect();
        for id in unfinished {
            self.tool_frame(&id, ToolState::OutputError, None, None, Some(INTERRUPTED_TOOL_ERROR.into()), out);
        }
    }

    /// Ends the open run: closes unfinished tools, then `state{agent_settled}` and `done` — or `error` when nothing renderable came out.
    pub fn settle(&mut self) -> Vec<ChatFrame> {
        let mut out = Vec::new();
        if self.run.is_none() {
            return out;
        }
        self.close_unfinished_tools(&mut out);
        let run = self.run_mut();
        // A stopped planning run offers no decision: its plan may be half written.
        if run.mode == AgentMode::Plan
            && !run.aborted
            && let Some(todos) = run.plan.clone()
        {
            self.emit(plan_frame(AgentMode::Plan, &todos, true), &mut out);
        }
        self.emit(lifecycle(LifecycleName::AgentSettled, None), &mut out);
        let run = self.run.take().expect("checked above");
        // The parts move into `done`, whose reduction puts them back; an `error` ending gives them back first.
        let message = match self.snapshot.message_mut(&run.message_id) {
            Some(streamed) => ChatMessage {
                id: streamed.id.clone(),
                role: streamed.role,
                parts: std::mem::take(&mut streamed.parts),
                created_at: streamed.created_at,
                changes: streamed.changes.take(),
                usage: streamed.usage.take(),
            },
            None => ChatMessage {
                id: run.message_id.clone(),
                role: Role::Assistant,
                parts: Vec::new(),
                created_at: None,
                changes: None,
                usage: None,
            },
        };
        let renderable = message.parts.iter().any(|part| match part {
            ChatMessagePart::Text(text) => !text.text.trim().is_empty(),
            ChatMessagePart::Tool(_) => true,
            ChatMessagePart::Thinking(_) | ChatMessagePart::Error(_) | ChatMessagePart::File(_) => false,
        });
        let terminal = if renderable {
            let mut message = message;
            message.created_at = Some(run.created_at);
            if let Some(error) = run.provider_error.filter(|_| !run.aborted) {
                message
                    .parts
                    .push(ChatMessagePart::Error(ErrorPart { title: Some("Provider error".into()), message: error }));
            } else if run.stopped_at_length && !run.aborted {
                message.parts.push(ChatMessagePart::Error(ErrorPart {
                    title: Some("Answer cut off".into()),
                    message: "the model reached its output limit; the answer may be incomplete".into(),
                }));
            }
            Ok(message)
        } else {
            if let Some(streamed) = self.snapshot.message_mut(&run.message_id) {
                streamed.parts = message.parts;
                streamed.changes = message.changes;
                streamed.usage = message.usage;
            }
            Err(match (run.aborted, run.provider_error) {
                (true, _) => ("the run was stopped before the agent answered".to_owned(), "aborted"),
                (false, Some(error)) => (error, "provider_error"),
                (false, None) => ("the model returned an empty response".to_owned(), "empty_response"),
            })
        };
        let frame = match terminal {
            Ok(message) => ChatFrame::Done(DoneFrame {
                seq: None,
                run_id: run.run_id,
                message,
                session_id: self.session_id.clone(),
                session_file: run.session_file,
                session_reset: None,
            }),
            Err((message, code)) => {
                ChatFrame::Error(ErrorFrame { seq: None, message, run_id: Some(run.run_id), code: Some(code.into()) })
            }
        };
        self.emit(frame, &mut out);
        out
    }

    /// What the open run changed in the workspace's files, for its answer: a `changes` frame, told by the server
    /// once the run's checkpoint after it is taken and before the run ends. Nothing outside a run.
    pub fn changes(&mut self, changes: RunChanges) -> Vec<ChatFrame> {
        let mut out = Vec::new();
        let Some(run) = &self.run else {
            self.stats.ignored += 1;
            return out;
        };
        let RunChanges { checkpoint, files, additions, deletions } = changes;
        let message_id = Some(run.message_id.clone());
        self.emit(
            ChatFrame::Changes(ChangesFrame { seq: None, checkpoint, files, additions, deletions, message_id }),
            &mut out,
        );
        out
    }

    /// Ends the open run with an error (a runtime that died or sent malformed data); the partial answer stays in the transcript.
    pub fn fail(&mut self, message: impl Into<String>, code: &str) -> Vec<ChatFrame> {
        let mut out = Vec::new();
        self.close_unfinished_tools(&mut out);
        let run_id = self.run.take().map(|run| run.run_id);
        let frame = ErrorFrame { seq: None, message: message.into(), run_id, code: Some(code.into()) };
        self.emit(ChatFrame::Error(frame), &mut out);
        out
    }
}

/// Plan progress; the UI's progress line reads `completed` of `total`. In agent mode the plan is executing until
/// every step is done; in plan mode nothing executes, and `pending_decision` asks the user to execute or refine.
fn plan_frame(mode: AgentMode, items: &[TodoItem], pending_decision: bool) -> ChatFrame {
    let todos = PlanTodo::steps(items);
    let completed = todos.iter().filter(|todo| todo.completed).count() as u32;
    let total = todos.len() as u32;
    let executing = match mode {
        AgentMode::Agent => completed < total,
        AgentMode::Plan => false,
    };
    ChatFrame::Plan(PlanFrame {
        seq: None,
        mode,
        executing,
        completed,
        total,
        message: None,
        state: ChatPlanState { mode, executing, pending_decision, completed, total, todos, message: None },
    })
}

/// `Some(text)` for a request that sets the activity line; `Some(None)` for one that clears it.
fn status_text(request: &UiRequest) -> Option<Option<String>> {
    let field = |key: &str| request.fields.get(key).and_then(Value::as_str).map(str::to_owned);
    match request.method.as_str() {
        "notify" => {
            let message = field("message")?;
            Some(Some(match field("notifyType").as_deref() {
                Some("warning") => format!("Warning: {message}"),
                Some("error") => format!("Error: {message}"),
                _ => message,
            }))
        }
        "setStatus" => Some(field("statusText").filter(|text| !text.trim().is_empty())),
        _ => None,
    }
}

fn lifecycle(name: LifecycleName, message: Option<String>) -> ChatFrame {
    ChatFrame::State(StateFrame { seq: None, state: Lifecycle { name, message } })
}

/// The arguments of a call as the run's transcript holds them.
fn known_input<'a>(snapshot: &'a ChatSnapshot, tool_call_id: &str) -> Option<&'a Value> {
    snapshot.tool(tool_call_id)?.input.as_ref()
}

fn non_null(value: Value) -> Option<Value> {
    (!value.is_null()).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{AgentCommand, AgentOption, OptionCategory, OptionChoice};

    fn offered(current: &str) -> AgentOptionsFrame {
        AgentOptionsFrame {
            seq: None,
            commands: vec![AgentCommand { name: "review".into(), description: "review changes".into(), hint: None }],
            options: vec![AgentOption {
                id: "model".into(),
                name: "Model".into(),
                description: None,
                category: OptionCategory::Model,
                current: current.into(),
                choices: ["a", "b"]
                    .map(|value| OptionChoice { value: value.into(), name: value.to_uppercase(), description: None })
                    .into(),
            }],
        }
    }

    #[test]
    fn what_the_agent_offers_is_a_frame_in_or_out_of_a_run_and_only_when_it_changed() {
        let mut counter = 0;
        let mut mapper = EventMapper::new(
            "s1",
            Box::new(|| 0),
            Box::new(move |kind| {
                counter += 1;
                format!("{kind}-{counter}")
            }),
        );
        let frames = mapper.map(AgentEvent::AgentOptions(offered("a")));
        assert_eq!(frames, [ChatFrame::AgentOptions(offered("a"))]);
        assert!(!mapper.is_run_open(), "options between runs open no run");
        assert_eq!(mapper.snapshot().agent_options, Some(offered("a")));
        assert!(mapper.map(AgentEvent::AgentOptions(offered("a"))).is_empty(), "the same again adds nothing");
        assert_eq!(mapper.map(AgentEvent::AgentOptions(offered("b"))).len(), 1);
        let detail: SessionDetail = serde_json::from_value(serde_json::json!({
            "session": {"sessionId": "s1", "title": "", "createdAt": 0, "updatedAt": 0, "status": "idle",
                        "messageCount": 0, "lastSeq": 0},
            "messages": [], "lastSeq": 0,
        }))
        .unwrap();
        let detail = mapper.snapshot().to_detail(detail.session);
        assert_eq!(detail.agent_options.unwrap().options[0].current, "b", "a reload shows what the agent offers");
    }
}

//! The built-in agent loop: model calls, tool runs, steering and follow-up queues, automatic retry and abort,
//! reported as pi-dialect `AgentEvent`s so the same mapper serves it and an external pi.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::attached::{Prompt, user_message, without_images};
use super::event::{
    AgentEvent, AgentMessage, AssistantMessageEvent, CallUsage, MessageRole, StopReason, ToolCall, ToolCallHeader,
    ToolResult,
};
use super::mcp::McpServers;
use super::price::TokenPrice;
use super::provider::{
    AssistantBlock, CHARS_PER_TOKEN, ModelMessage, ModelRequest, ModelStop, Provider, ProviderError, StreamEvent,
    ToolSpec,
};
use super::seam::{RunControl, RunOptions, queue_event};
use super::tools::{
    OptionalTools, Tool, ToolContext, ToolLimits, ToolOutput, Workspace, builtin_tools, optional_tools,
};
use crate::protocol::{AgentMode, CompactionReason, PlanAction, TokenUsage};

const SYSTEM_PROMPT: &str = "You are a coding agent working in the user's workspace directory. \
Use the tools to look at files, change them and run commands; keep a todo list with todo_write for multi-step work; \
ask the user with question when a decision is theirs. Answer in Markdown.";

/// Appended to the system prompt of a plan-mode run.
const PLAN_MODE_PROMPT: &str = "You are in plan mode: do not change anything. Only read-only tools are available. \
Investigate what the task needs, then write the plan as a checklist with todo_write (one todo per step, every \
status pending) and end with a short summary of it. The user reviews the plan and decides whether to execute it.";

/// The system prompt of the call that compacts a conversation.
const SUMMARY_PROMPT: &str = "You summarize a coding agent's conversation so the agent can continue the work without \
it. Keep: the user's goals and current task, decisions made, files read or changed and what changed in them, commands \
run and their outcome, open problems and the next steps. Be concise and concrete; use Markdown lists.";

/// Tool results longer than this are shortened in the text given to the summarizing call.
const SUMMARY_TOOL_RESULT_CHARS: usize = 2_000;

/// Tools offered besides the workspace tools; they exist in every mode, since none changes the workspace itself.
const TODO_WRITE: &str = "todo_write";
const QUESTION: &str = "question";
const CHART: &str = "chart";
/// Runs a sub-agent on one task; its tool calls show nested under the task's row (ids `<task id>:<call id>`).
const TASK: &str = "task";

/// The system prompt of a sub-agent started by `task`.
const SUBAGENT_PROMPT: &str = "You are a sub-agent of a coding agent, given one task in the user's workspace. Use the \
tools to do it, then answer with a short report of what you found or did: the report is all the main agent sees.";

/// Most model calls one sub-agent may make before its task is ended as unfinished.
const SUBAGENT_MAX_CALLS: usize = 24;

/// The tool error of an approved write or edit whose file changed while the call waited for approval.
pub const FILE_CHANGED: &str = "the file changed since the edit was proposed; nothing was written";

#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Model calls after the first failed one (429, 5xx, network).
    pub max_retries: u32,
    /// The first retry waits this long; each further one twice as long.
    pub retry_base_delay: Duration,
    /// A provider asking to wait longer than this (`Retry-After`) fails the run instead of holding it.
    pub max_retry_delay: Duration,
    /// The model's context window, in tokens.
    pub context_window: u64,
    /// Compact when the estimated context passes this fraction of the window.
    pub compaction_threshold: f64,
    /// About how many tokens of the latest messages compaction keeps as they are.
    pub keep_recent_tokens: u64,
    pub tool_limits: ToolLimits,
    /// Which tool calls wait for the user's approval before they run.
    pub approval: ApprovalPolicy,
    /// The tools offered besides the built-in ones when python3 or a search backend is there.
    pub optional_tools: OptionalTools,
    /// What the model's tokens cost; `None`: unknown, and no cost is shown.
    pub price: Option<TokenPrice>,
    /// The model reads images; a model that does not gets a note naming them instead.
    pub takes_images: bool,
}

/// Which tool calls wait for the user's approval (`--approve`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApprovalPolicy {
    /// Every call runs at once.
    #[default]
    Never,
    /// Calls of tools that change the workspace or run commands (bash, write, edit) wait, and MCP tools whose server
    /// does not mark them `readOnlyHint`.
    Writes,
    /// Every workspace tool call waits, reading ones too (`todo_write`, `question` and `chart` only talk to the
    /// user).
    Always,
}

impl ApprovalPolicy {
    fn requires(self, tool: &dyn Tool) -> bool {
        match self {
            ApprovalPolicy::Never => false,
            ApprovalPolicy::Writes => !tool.read_only(),
            ApprovalPolicy::Always => true,
        }
    }
}

/// What became of a call that waited for approval.
enum Approval {
    /// Approved; for a write or edit, with the state of its file when the call was proposed.
    Approved(Option<FileState>),
    Denied,
    /// The run was stopped while the call waited.
    Stopped,
}

/// A file as a proposed write or edit found it: changed content means the approval no longer covers the call.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FileState {
    Missing,
    /// SHA-256 of the content.
    Content([u8; 32]),
    /// Neither readable nor missing (a directory, no permission): the tool itself reports why.
    Unreadable,
}

impl FileState {
    /// The state of the file a `write` or `edit` call names; `None` for other calls and paths the workspace refuses.
    async fn of(call: &ToolCall, workspace: &Workspace) -> Option<FileState> {
        use sha2::{Digest, Sha256};
        if !matches!(call.name.as_str(), "write" | "edit") {
            return None;
        }
        let path = workspace.resolve(call.arguments.get("path")?.as_str()?).ok()?;
        Some(match tokio::fs::read(&path).await {
            Ok(bytes) => FileState::Content(Sha256::digest(&bytes).into()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => FileState::Missing,
            Err(_) => FileState::Unreadable,
        })
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            max_retries: 3,
            retry_base_delay: Duration::from_secs(2),
            max_retry_delay: Duration::from_secs(60),
            context_window: 128_000,
            compaction_threshold: 0.8,
            keep_recent_tokens: 20_000,
            tool_limits: ToolLimits::default(),
            approval: ApprovalPolicy::Never,
            optional_tools: OptionalTools::default(),
            price: None,
            takes_images: true,
        }
    }
}

/// What the model has seen of one session.
#[derive(Debug, Default, Clone)]
pub struct Conversation {
    pub messages: Vec<ModelMessage>,
    /// The tokens the provider counted for the first `n` messages (prompt + answer of the last call), as `(n, tokens)`.
    pub counted: Option<(usize, u64)>,
}

impl Conversation {
    /// The context the next call would send, in tokens: the provider's last count plus an estimate of what came
    /// after it, or an estimate of everything when there is no count.
    pub fn estimated_tokens(&self) -> u64 {
        let (counted_messages, counted_tokens) =
            self.counted.filter(|(n, _)| *n <= self.messages.len()).unwrap_or((0, 0));
        counted_tokens + self.messages[counted_messages..].iter().map(estimate_tokens).sum::<u64>()
    }
}

/// About four characters a token, and a few for the message's framing: close enough for English and code to decide
/// when to compact.
fn estimate_tokens(message: &ModelMessage) -> u64 {
    message.chars() as u64 / CHARS_PER_TOKEN + 4
}

pub use crate::protocol::{TodoItem, TodoStatus};

impl Conversation {
    /// The plan: the checklist of the last `todo_write` that succeeded, in this run or an earlier one.
    pub fn plan(&self) -> Option<Vec<TodoItem>> {
        self.messages.iter().enumerate().rev().find_map(|(at, message)| {
            let ModelMessage::Assistant { blocks } = message else {
                return None;
            };
            blocks.iter().rev().find_map(|block| match block {
                AssistantBlock::ToolCall { id, name, arguments } if name == TODO_WRITE => {
                    let succeeded = self.messages[at + 1..].iter().any(|later| {
                        matches!(later, ModelMessage::ToolResult { tool_call_id, is_error: false, .. }
                            if tool_call_id == id)
                    });
                    succeeded.then(|| parse_todos(arguments)).flatten()
                }
                AssistantBlock::ToolCall { .. } | AssistantBlock::Text(_) | AssistantBlock::Thinking(_) => None,
            })
        })
    }
}

/// The todos of `todo_write` arguments; `None` unless every item has a text and a known status.
fn parse_todos(arguments: &Value) -> Option<Vec<TodoItem>> {
    arguments.get("todos")?.as_array()?.iter().map(TodoItem::parse_strict).collect()
}

pub struct Agent {
    provider: Arc<dyn Provider>,
    tools: Vec<Arc<dyn Tool>>,
    config: AgentConfig,
    mcp: Option<Arc<McpServers>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AgentState {
    /// Between `agent_start` and `agent_end`.
    Active,
    /// `agent_end` already sent (a retry wait was cancelled).
    Ended,
}

/// A tool call as it streams in.
struct CallDraft {
    content_index: usize,
    id: String,
    name: String,
    arguments: String,
}

struct Emitter<'a> {
    events: &'a mpsc::UnboundedSender<AgentEvent>,
}

impl Emitter<'_> {
    fn send(&self, event: AgentEvent) {
        // A closed channel means nobody listens any more; the run still finishes its work.
        let _ = self.events.send(event);
    }

    fn message(&self, role: MessageRole, text: String, stop_reason: Option<StopReason>, error: Option<String>) {
        let message = AgentMessage { role, text, stop_reason, error_message: error, timestamp: None, usage: None };
        self.send(AgentEvent::MessageStart(message.clone()));
        self.send(AgentEvent::MessageEnd(message));
    }

    /// A model call's answer, ended for `stop_reason`, with what the call used.
    fn answer(&self, text: String, stop_reason: StopReason, error: Option<String>, usage: Option<CallUsage>) {
        let message = AgentMessage {
            role: MessageRole::Assistant,
            text,
            stop_reason: Some(stop_reason),
            error_message: error,
            timestamp: None,
            usage: None,
        };
        self.send(AgentEvent::MessageStart(message.clone()));
        self.send(AgentEvent::MessageEnd(AgentMessage { usage, ..message }));
    }
}

impl Agent {
    pub fn new(provider: Arc<dyn Provider>, config: AgentConfig) -> Self {
        let tools = builtin_tools(config.tool_limits.clone())
            .into_iter()
            .chain(optional_tools(&config.tool_limits, &config.optional_tools))
            .map(Arc::from)
            .collect();
        Agent { provider, tools, config, mcp: None }
    }

    /// Offers the tools of these MCP servers too, as `mcp__<server>__<tool>`.
    pub fn with_mcp(mut self, servers: Arc<McpServers>) -> Self {
        self.mcp = Some(servers);
        self
    }

    /// Every workspace tool the agent has now: the built-in ones, then the MCP servers' (listed again when a server
    /// restarts).
    fn workspace_tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools = self.tools.clone();
        tools.extend(self.mcp.iter().flat_map(|mcp| mcp.tools()));
        tools
    }

    fn workspace_tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.iter().find(|tool| tool.name() == name).cloned().or_else(|| self.mcp.as_ref()?.tool(name))
    }

    pub fn takes_images(&self) -> bool {
        self.config.takes_images
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// A call's tokens, priced, with the model's window and the size at which this agent compacts.
    fn call_usage(&self, mut tokens: TokenUsage) -> CallUsage {
        tokens.cost = self.config.price.as_ref().map(|price| price.cost(&tokens));
        let window = self.config.context_window;
        let compact_at = (window as f64 * self.config.compaction_threshold) as u64;
        CallUsage { tokens, context_window: Some(window), compact_at: Some(compact_at) }
    }

    /// The tools offered to the model: in plan mode only those that change nothing.
    fn tool_specs(&self, mode: AgentMode) -> Vec<ToolSpec> {
        let mut specs: Vec<ToolSpec> = self
            .workspace_tools()
            .iter()
            .filter(|tool| offered_in(mode, tool.as_ref()))
            .map(|tool| ToolSpec {
                name: tool.name().to_owned(),
                description: tool.description().to_owned(),
                parameters: tool.parameters(),
            })
            .collect();
        specs.push(ToolSpec {
            name: TODO_WRITE.into(),
            description:
                "Replace the task checklist; each todo has text and a status of pending, in_progress or completed."
                    .into(),
            parameters: json!({"type": "object", "required": ["todos"], "properties": {"todos": {"type": "array",
                "items": {"type": "object", "required": ["text", "status"], "properties": {
                    "text": {"type": "string"},
                    "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}}}}}}),
        });
        specs.push(ToolSpec {
            name: QUESTION.into(),
            description: "Ask the user and wait for the answer: options to pick from, and/or free text.".into(),
            parameters: json!({"type": "object", "required": ["question"], "properties": {
                "question": {"type": "string"},
                "options": {"type": "array", "items": {"type": "object", "properties": {
                    "id": {"type": "string"}, "label": {"type": "string"}}}},
                "multiple": {"type": "boolean"}, "allowText": {"type": "boolean"},
                "timeoutSeconds": {"type": "number"}}}),
        });
        specs.push(ToolSpec {
            name: CHART.into(),
            description: super::tools::chart::DESCRIPTION.into(),
            parameters: super::tools::chart::parameters(),
        });
        specs.push(ToolSpec {
            name: TASK.into(),
            description: "Hand one self-contained task to a sub-agent with the same workspace tools; it works on its \
                own and returns a short report. Use it for side investigations that would clutter the conversation."
                .into(),
            parameters: json!({"type": "object", "required": ["description", "prompt"], "properties": {
                "description": {"type": "string", "description": "A few words saying what the task is"},
                "prompt": {"type": "string", "description": "Everything the sub-agent needs to know to do it"}}}),
        });
        specs
    }

    /// The workspace tools a sub-agent gets in `mode`.
    fn subagent_specs(&self, mode: AgentMode) -> Vec<ToolSpec> {
        self.workspace_tools()
            .iter()
            .filter(|tool| offered_in(mode, tool.as_ref()))
            .map(|tool| ToolSpec {
                name: tool.name().to_owned(),
                description: tool.description().to_owned(),
                parameters: tool.parameters(),
            })
            .collect()
    }

    /// Runs the agent on `prompt` until it has settled; every step goes to `events`, ending with `agent_settled`.
    ///
    /// `options` picks plan mode (read-only tools, the model writes a plan with `todo_write`) and what to do with
    /// the plan the conversation holds: carry it out, or revise it with `prompt` as the requested change.
    pub async fn run(
        &self,
        conversation: &mut Conversation,
        workspace: &Workspace,
        prompt: Prompt,
        options: &RunOptions,
        control: &RunControl,
        events: &mpsc::UnboundedSender<AgentEvent>,
    ) {
        let emit = Emitter { events };
        let mode = options.effective_mode();
        let (shown, for_model) = model_prompt(conversation, prompt.text, options.plan_action);
        emit.send(AgentEvent::AgentStart);
        emit.send(AgentEvent::TurnStart);
        conversation.messages.push(user_message(&for_model, &prompt.files));
        emit.message(MessageRole::User, shown, None, None);
        if self.turns(conversation, workspace, mode, control, &emit).await == AgentState::Active {
            emit.send(AgentEvent::AgentEnd);
        }
        // A stopped or failed run ends with its queue closed too (the normal end closed it in `next_queued`); what
        // was still waiting is dropped with it, and the emptied queue says so.
        {
            let mut queues = control.queues.lock().expect("the queue lock is never poisoned");
            queues.closed = true;
            if !queues.steering.is_empty() || !queues.follow_up.is_empty() {
                queues.steering.clear();
                queues.follow_up.clear();
                emit.send(queue_event(&queues));
            }
        }
        emit.send(AgentEvent::AgentSettled);
    }

    /// The model/tool loop; says whether the agent is still between `agent_start` and `agent_end` when it returns.
    async fn turns(
        &self,
        conversation: &mut Conversation,
        workspace: &Workspace,
        mode: AgentMode,
        control: &RunControl,
        emit: &Emitter<'_>,
    ) -> AgentState {
        let system = match mode {
            AgentMode::Agent => SYSTEM_PROMPT.to_owned(),
            AgentMode::Plan => format!("{SYSTEM_PROMPT}\n\n{PLAN_MODE_PROMPT}"),
        };
        let mut failed_attempts = 0_u32;
        let mut compacted_for_overflow = false;
        // A compaction that failed is not tried again before every call of the run; an overflow still may.
        let mut threshold_compaction_failed = false;
        loop {
            if !threshold_compaction_failed
                && self.over_threshold(conversation)
                && !self.compact(conversation, CompactionReason::Threshold, false, control, emit).await
            {
                if control.cancel.is_cancelled() {
                    return AgentState::Active;
                }
                threshold_compaction_failed = true;
            }
            let messages = match self.config.takes_images {
                true => conversation.messages.clone(),
                false => without_images(&conversation.messages),
            };
            let request = ModelRequest { system: system.clone(), messages, tools: self.tool_specs(mode) };
            emit.send(AgentEvent::MessageStart(AgentMessage::opening_answer()));
            let (outcome, blocks, calls, counted) = self.call_model(&request, control, emit).await;
            let usage = counted.map(|tokens| self.call_usage(tokens));
            let text: String = blocks
                .iter()
                .filter_map(|b| match b {
                    AssistantBlock::Text(t) => Some(t.as_str()),
                    AssistantBlock::Thinking(_) | AssistantBlock::ToolCall { .. } => None,
                })
                .collect();
            // Only an attempt that showed nothing is repeated: a retry after output would show the answer twice.
            let nothing_shown = blocks.is_empty();
            let stop = match outcome {
                Ok(stop) => stop,
                Err(ProviderError::ContextOverflow(message)) if nothing_shown && !compacted_for_overflow => {
                    compacted_for_overflow = true;
                    emit.answer(text, StopReason::Error, Some(message.clone()), usage);
                    emit.send(AgentEvent::TurnEnd);
                    emit.send(AgentEvent::AgentEnd);
                    if !self.compact(conversation, CompactionReason::Overflow, true, control, emit).await {
                        return AgentState::Ended;
                    }
                    failed_attempts += 1;
                    emit.send(AgentEvent::AutoRetryStart {
                        attempt: failed_attempts,
                        max_attempts: self.config.max_retries.max(failed_attempts),
                        delay_ms: 0,
                        error_message: message,
                    });
                    emit.send(AgentEvent::AgentStart);
                    emit.send(AgentEvent::TurnStart);
                    continue;
                }
                Err(ProviderError::Retryable { message, retry_after })
                    if nothing_shown
                        && failed_attempts < self.config.max_retries
                        && retry_after.is_none_or(|wait| wait <= self.config.max_retry_delay) =>
                {
                    emit.answer(text, StopReason::Error, Some(message.clone()), usage);
                    emit.send(AgentEvent::TurnEnd);
                    emit.send(AgentEvent::AgentEnd);
                    failed_attempts += 1;
                    let delay =
                        retry_after.unwrap_or(self.config.retry_base_delay * 2_u32.saturating_pow(failed_attempts - 1));
                    emit.send(AgentEvent::AutoRetryStart {
                        attempt: failed_attempts,
                        max_attempts: self.config.max_retries,
                        delay_ms: delay.as_millis() as u64,
                        error_message: message,
                    });
                    let waited = tokio::select! {
                        () = tokio::time::sleep(delay) => true,
                        () = control.cancel.cancelled() => false,
                    };
                    if !waited {
                        emit.send(AgentEvent::AutoRetryEnd {
                            success: false,
                            attempt: failed_attempts,
                            final_error: Some("Retry cancelled".into()),
                        });
                        return AgentState::Ended;
                    }
                    emit.send(AgentEvent::AgentStart);
                    emit.send(AgentEvent::TurnStart);
                    continue;
                }
                Err(error) => {
                    let (reason, message) = match &error {
                        ProviderError::Aborted => (StopReason::Aborted, "Request was aborted".to_owned()),
                        ProviderError::Retryable { message, retry_after: Some(wait) }
                            if *wait > self.config.max_retry_delay =>
                        {
                            let limit = self.config.max_retry_delay.as_secs();
                            let wait = wait.as_secs();
                            (
                                StopReason::Error,
                                format!("{message} (asks to wait {wait} s, more than the {limit} s limit)"),
                            )
                        }
                        ProviderError::Retryable { message, .. }
                        | ProviderError::Fatal(message)
                        | ProviderError::ContextOverflow(message) => (StopReason::Error, message.clone()),
                    };
                    if !text.is_empty() {
                        conversation
                            .messages
                            .push(ModelMessage::Assistant { blocks: vec![AssistantBlock::Text(text.clone())] });
                    }
                    emit.answer(text, reason, Some(message.clone()), usage);
                    if failed_attempts > 0 {
                        emit.send(AgentEvent::AutoRetryEnd {
                            success: false,
                            attempt: failed_attempts,
                            final_error: Some(message),
                        });
                    }
                    emit.send(AgentEvent::TurnEnd);
                    return AgentState::Active;
                }
            };
            let reason = match stop {
                ModelStop::Stop => StopReason::Stop,
                ModelStop::ToolUse => StopReason::ToolUse,
                ModelStop::Length => StopReason::Length,
            };
            let counted = usage.as_ref().map(|usage| usage.tokens.context_tokens());
            emit.answer(text, reason, None, usage);
            if failed_attempts > 0 {
                emit.send(AgentEvent::AutoRetryEnd { success: true, attempt: failed_attempts, final_error: None });
                failed_attempts = 0;
            }
            compacted_for_overflow = false;
            conversation.messages.push(ModelMessage::Assistant { blocks });
            if let Some(tokens) = counted {
                conversation.counted = Some((conversation.messages.len(), tokens));
            }

            for call in calls {
                let (result, is_error) = self.execute_call(&call, mode, workspace, control, emit, false).await;
                emit.message(MessageRole::ToolResult, result.text.clone(), None, None);
                conversation.messages.push(ModelMessage::ToolResult {
                    tool_call_id: call.id,
                    tool_name: call.name,
                    text: result.text,
                    is_error,
                });
            }
            emit.send(AgentEvent::TurnEnd);
            if control.cancel.is_cancelled() {
                return AgentState::Active;
            }
            let asked_for_tools = stop == ModelStop::ToolUse;
            let Some(next) = self.next_queued(control, asked_for_tools) else {
                if asked_for_tools {
                    emit.send(AgentEvent::TurnStart);
                    continue;
                }
                return AgentState::Active;
            };
            emit.send(queue_event(&control.queues.lock().expect("the queue lock is never poisoned")));
            emit.send(AgentEvent::TurnStart);
            conversation.messages.push(ModelMessage::user(next.clone()));
            emit.message(MessageRole::User, next, None, None);
        }
    }

    fn over_threshold(&self, conversation: &Conversation) -> bool {
        let limit = self.config.context_window as f64 * self.config.compaction_threshold;
        conversation.estimated_tokens() as f64 > limit
    }

    /// Compacts the conversation, reporting it with `compaction_start`/`compaction_end`; says whether it worked.
    async fn compact(
        &self,
        conversation: &mut Conversation,
        reason: CompactionReason,
        will_retry: bool,
        control: &RunControl,
        emit: &Emitter<'_>,
    ) -> bool {
        emit.send(AgentEvent::CompactionStart { reason: reason.clone() });
        let outcome = self.summarize(conversation, control, self.config.keep_recent_tokens, None).await.map(|_| ());
        let (aborted, error_message) = match &outcome {
            Ok(()) => (false, None),
            Err(ProviderError::Aborted) => (true, None),
            Err(
                error @ (ProviderError::Fatal(_) | ProviderError::Retryable { .. } | ProviderError::ContextOverflow(_)),
            ) => (false, Some(format!("compaction failed: {error}"))),
        };
        emit.send(AgentEvent::CompactionEnd {
            reason,
            aborted,
            will_retry: will_retry && outcome.is_ok(),
            error_message,
        });
        outcome.is_ok()
    }

    /// Compacts the conversation because the user asked (`/compact`), as a run of its own: the summary is the run's
    /// answer, so the transcript shows what the model goes on from. `instructions` (what followed `/compact`) say
    /// what the summary should keep. Everything but the latest message is summarized, whatever its size.
    pub async fn compact_on_request(
        &self,
        conversation: &mut Conversation,
        instructions: String,
        control: &RunControl,
        events: &mpsc::UnboundedSender<AgentEvent>,
    ) {
        let emit = Emitter { events };
        emit.send(AgentEvent::AgentStart);
        emit.send(AgentEvent::TurnStart);
        emit.message(MessageRole::User, format!("/compact {instructions}").trim_end().to_owned(), None, None);
        emit.send(AgentEvent::CompactionStart { reason: CompactionReason::Manual });
        let instructions = Some(instructions.trim()).filter(|text| !text.is_empty());
        let outcome = if compaction_cut(&conversation.messages, 0).is_none() {
            Err(ProviderError::Fatal("there is nothing to compact yet: the conversation is too short".into()))
        } else {
            self.summarize(conversation, control, 0, instructions).await
        };
        let (aborted, error_message) = match &outcome {
            Ok(_) => (false, None),
            Err(ProviderError::Aborted) => (true, None),
            Err(
                error @ (ProviderError::Fatal(_) | ProviderError::Retryable { .. } | ProviderError::ContextOverflow(_)),
            ) => (false, Some(format!("compaction failed: {error}"))),
        };
        let reason = CompactionReason::Manual;
        emit.send(AgentEvent::CompactionEnd {
            reason,
            aborted,
            will_retry: false,
            error_message: error_message.clone(),
        });
        emit.send(AgentEvent::MessageStart(AgentMessage::opening_answer()));
        match outcome {
            Ok(summary) => {
                let text = format!("Compacted the conversation. The agent goes on from this summary:\n\n{summary}");
                let delta = text.clone();
                emit.send(AgentEvent::MessageUpdate(AssistantMessageEvent::TextDelta { content_index: 0, delta }));
                emit.answer(text, StopReason::Stop, None, None);
            }
            Err(ProviderError::Aborted) => {
                emit.answer(String::new(), StopReason::Aborted, Some("Request was aborted".into()), None)
            }
            Err(
                error @ (ProviderError::Fatal(_) | ProviderError::Retryable { .. } | ProviderError::ContextOverflow(_)),
            ) => emit.answer(String::new(), StopReason::Error, Some(format!("compaction failed: {error}")), None),
        }
        emit.send(AgentEvent::TurnEnd);
        emit.send(AgentEvent::AgentEnd);
        emit.send(AgentEvent::AgentSettled);
    }

    /// Replaces the older messages by the model's summary of them and keeps the recent ones (about `keep_tokens`)
    /// as they are; returns the summary.
    async fn summarize(
        &self,
        conversation: &mut Conversation,
        control: &RunControl,
        keep_tokens: u64,
        instructions: Option<&str>,
    ) -> Result<String, ProviderError> {
        let cut = compaction_cut(&conversation.messages, keep_tokens).ok_or_else(|| {
            ProviderError::Fatal("there is nothing older to summarize: the latest exchange alone is too long".into())
        })?;
        // The summarizing call must fit the window itself: about half of it goes to the transcript.
        let budget = (self.config.context_window as usize).saturating_mul(2);
        let system = match instructions {
            Some(instructions) => format!("{SUMMARY_PROMPT}\n\nThe user asks the summary to keep: {instructions}"),
            None => SUMMARY_PROMPT.to_owned(),
        };
        let request = ModelRequest {
            system,
            messages: vec![ModelMessage::user(transcript(&conversation.messages[..cut], budget))],
            tools: Vec::new(),
        };
        let mut summary = String::new();
        let mut sink = |piece: StreamEvent| {
            if let StreamEvent::TextDelta(text) = piece {
                summary.push_str(&text);
            }
        };
        self.provider.stream(&request, &mut sink, &control.cancel).await?;
        if summary.trim().is_empty() {
            return Err(ProviderError::Fatal("the model answered the summary request with nothing".into()));
        }
        let note = format!("Summary of the earlier conversation (compacted to fit the context window):\n\n{summary}");
        let mut kept = conversation.messages.split_off(cut);
        match kept.first_mut() {
            // Two user messages in a row would be merged by some APIs and refused by others.
            Some(ModelMessage::User { text, .. }) => *text = format!("{note}\n\n---\n\n{text}"),
            Some(ModelMessage::Assistant { .. } | ModelMessage::ToolResult { .. }) | None => {
                kept.insert(0, ModelMessage::user(note))
            }
        }
        conversation.messages = kept;
        conversation.counted = None;
        Ok(summary)
    }

    /// Why a call may not run in `mode`, if it may not. Tools the agent does not have are left to `run_tool`.
    fn refusal(&self, mode: AgentMode, name: &str) -> Option<String> {
        let tool = self.workspace_tool(name)?;
        (!offered_in(mode, tool.as_ref())).then(|| {
            format!(
                "`{name}` is not available in plan mode, and nothing was run: plan mode only investigates. \
                 Write the plan with todo_write; the user decides whether to execute it."
            )
        })
    }

    /// The next message to deliver: steering at every turn boundary, follow-ups only when the agent would stop.
    fn next_queued(&self, control: &RunControl, agent_continues: bool) -> Option<String> {
        let mut queues = control.queues.lock().expect("the queue lock is never poisoned");
        let next =
            queues.steering.pop_front().or_else(|| if agent_continues { None } else { queues.follow_up.pop_front() });
        // Deciding to stop and refusing later messages happen under one lock, so no message slips in between.
        queues.closed = next.is_none() && !agent_continues;
        next
    }

    /// Streams one model call, translating its pieces into `message_update` events.
    async fn call_model(
        &self,
        request: &ModelRequest,
        control: &RunControl,
        emit: &Emitter<'_>,
    ) -> (Result<ModelStop, ProviderError>, Vec<AssistantBlock>, Vec<ToolCall>, Option<TokenUsage>) {
        let mut blocks: Vec<AssistantBlock> = Vec::new();
        let mut counted: Option<TokenUsage> = None;
        let mut drafts: Vec<CallDraft> = Vec::new();
        let mut by_index: HashMap<usize, usize> = HashMap::new();
        let mut sink = |piece: StreamEvent| match piece {
            StreamEvent::TextDelta(delta) => {
                let content_index = match blocks.last_mut() {
                    Some(AssistantBlock::Text(text)) => {
                        text.push_str(&delta);
                        blocks.len() - 1
                    }
                    _ => {
                        blocks.push(AssistantBlock::Text(delta.clone()));
                        blocks.len() - 1
                    }
                };
                emit.send(AgentEvent::MessageUpdate(AssistantMessageEvent::TextDelta { content_index, delta }));
            }
            StreamEvent::ThinkingDelta(delta) => {
                let content_index = match blocks.last_mut() {
                    Some(AssistantBlock::Thinking(text)) => {
                        text.push_str(&delta);
                        blocks.len() - 1
                    }
                    _ => {
                        blocks.push(AssistantBlock::Thinking(delta.clone()));
                        blocks.len() - 1
                    }
                };
                emit.send(AgentEvent::MessageUpdate(AssistantMessageEvent::ThinkingDelta { content_index, delta }));
            }
            StreamEvent::ToolCallStart { index, id, name } => {
                let content_index = blocks.len();
                blocks.push(AssistantBlock::ToolCall { id: id.clone(), name: name.clone(), arguments: Value::Null });
                by_index.insert(index, drafts.len());
                drafts.push(CallDraft { content_index, id: id.clone(), name: name.clone(), arguments: String::new() });
                emit.send(AgentEvent::MessageUpdate(AssistantMessageEvent::ToolcallStart {
                    content_index,
                    call: Some(ToolCallHeader { id, name }),
                }));
            }
            StreamEvent::ToolCallDelta { index, fragment } => {
                if let Some(draft) = by_index.get(&index).map(|&i| &mut drafts[i]) {
                    draft.arguments.push_str(&fragment);
                    emit.send(AgentEvent::MessageUpdate(AssistantMessageEvent::ToolcallDelta {
                        content_index: draft.content_index,
                        delta: fragment,
                        call: Some(ToolCallHeader { id: draft.id.clone(), name: draft.name.clone() }),
                    }));
                }
            }
            // Servers that count nothing send zeros: no usage, and the context estimate is better than that.
            StreamEvent::Usage(usage) => counted = Some(usage).filter(|usage| !usage.is_empty()),
        };
        let outcome = self.provider.stream(request, &mut sink, &control.cancel).await;
        let mut calls = Vec::new();
        for draft in drafts {
            // Unparsable arguments stay visible as text; the tool then reports them as its error.
            let arguments = match serde_json::from_str::<Value>(&draft.arguments) {
                Ok(value) => value,
                Err(_) if draft.arguments.trim().is_empty() => json!({}),
                Err(_) => Value::String(draft.arguments.clone()),
            };
            if let AssistantBlock::ToolCall { arguments: slot, .. } = &mut blocks[draft.content_index] {
                *slot = arguments.clone();
            }
            let call = ToolCall { id: draft.id, name: draft.name, arguments };
            emit.send(AgentEvent::MessageUpdate(AssistantMessageEvent::ToolcallEnd {
                content_index: draft.content_index,
                call: call.clone(),
            }));
            calls.push(call);
        }
        (outcome, blocks, calls, counted)
    }

    /// Runs one call of the model (or of a sub-agent, `nested`) as far as it may go — refused in plan mode, stopped,
    /// denied, or run — reporting it with `tool_execution_*` events; the result is what the model is told.
    ///
    /// Boxed with its type spelled out: a sub-agent's calls (`task`) come back here, and a recursive future needs
    /// both a known size and a `Send` the compiler can see without going round the cycle.
    fn execute_call<'a>(
        &'a self,
        call: &'a ToolCall,
        mode: AgentMode,
        workspace: &'a Workspace,
        control: &'a RunControl,
        emit: &'a Emitter<'_>,
        nested: bool,
    ) -> Pin<Box<dyn Future<Output = (ToolResult, bool)> + Send + 'a>> {
        Box::pin(self.execute_call_now(call, mode, workspace, control, emit, nested))
    }

    async fn execute_call_now(
        &self,
        call: &ToolCall,
        mode: AgentMode,
        workspace: &Workspace,
        control: &RunControl,
        emit: &Emitter<'_>,
        nested: bool,
    ) -> (ToolResult, bool) {
        let mut denied = false;
        let (result, is_error) = if control.cancel.is_cancelled() {
            (ToolResult { text: "not run: the run was stopped".into(), details: None }, true)
        } else if let Some(refusal) = self.refusal(mode, &call.name) {
            (ToolResult { text: refusal, details: None }, true)
        } else {
            let approval = self.approval(call, workspace, control, emit).await;
            match approval {
                Some(Approval::Denied) => {
                    denied = true;
                    let text = "The user denied this call; it was not run. Ask or try another way.";
                    (ToolResult { text: text.into(), details: None }, true)
                }
                Some(Approval::Stopped) => {
                    (ToolResult { text: "not run: the run was stopped".into(), details: None }, true)
                }
                Some(Approval::Approved(Some(proposed_against)))
                    if FileState::of(call, workspace).await.as_ref() != Some(&proposed_against) =>
                {
                    (ToolResult { text: FILE_CHANGED.into(), details: None }, true)
                }
                Some(Approval::Approved(_)) | None => {
                    emit.send(AgentEvent::ToolExecutionStart {
                        tool_call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        args: call.arguments.clone(),
                    });
                    let output = self.run_tool(call, mode, workspace, control, emit, nested).await;
                    (ToolResult { text: output.text, details: output.details }, output.is_error)
                }
            }
        };
        // A denied call already ended in its `tool_approval_end`.
        if !denied {
            emit.send(AgentEvent::ToolExecutionEnd {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                result: result.clone(),
                is_error,
            });
        }
        (result, is_error)
    }

    async fn run_tool(
        &self,
        call: &ToolCall,
        mode: AgentMode,
        workspace: &Workspace,
        control: &RunControl,
        emit: &Emitter<'_>,
        nested: bool,
    ) -> ToolOutput {
        if let Value::String(raw) = &call.arguments {
            return ToolOutput {
                text: format!("the arguments are not valid JSON: {raw}"),
                details: None,
                is_error: true,
            };
        }
        match call.name.as_str() {
            TODO_WRITE | QUESTION | CHART | TASK if nested => {
                ToolOutput::error(format!("`{}` is not available to a sub-agent", call.name))
            }
            TODO_WRITE => todo_write(&call.arguments),
            QUESTION => self.question(call, control).await,
            CHART => super::tools::chart::draw(&call.arguments),
            TASK => self.task(call, mode, workspace, control, emit).await,
            name => match self.workspace_tool(name) {
                Some(tool) => {
                    let events = emit.events.clone();
                    let id = call.id.clone();
                    let tool_name = call.name.clone();
                    let args = call.arguments.clone();
                    let progress = move |partial: ToolOutput| {
                        let _ = events.send(AgentEvent::ToolExecutionUpdate {
                            tool_call_id: id.clone(),
                            tool_name: tool_name.clone(),
                            args: args.clone(),
                            partial_result: ToolResult { text: partial.text, details: partial.details },
                        });
                    };
                    let context = ToolContext { workspace, cancel: control.cancel.clone(), progress: &progress };
                    tool.run(call.arguments.clone(), context).await
                }
                None => ToolOutput { text: format!("there is no tool named `{name}`"), details: None, is_error: true },
            },
        }
    }

    /// Asks the user to approve `call` when the policy says so (`None`: it need not wait), and waits for the answer.
    /// A write or edit is approved against its file as it is now (see [`FILE_CHANGED`]).
    async fn approval(
        &self,
        call: &ToolCall,
        workspace: &Workspace,
        control: &RunControl,
        emit: &Emitter<'_>,
    ) -> Option<Approval> {
        let tool = self.workspace_tool(&call.name)?;
        if !self.config.approval.requires(tool.as_ref()) {
            return None;
        }
        let proposed_against = FileState::of(call, workspace).await;
        let (sender, receiver) = oneshot::channel();
        control.approvals.lock().expect("the approval lock is never poisoned").insert(call.id.clone(), sender);
        emit.send(AgentEvent::ToolApprovalRequest {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
            options: Vec::new(),
        });
        let decision = tokio::select! {
            decision = receiver => decision.ok(),
            () = control.cancel.cancelled() => None,
        };
        control.approvals.lock().expect("the approval lock is never poisoned").remove(&call.id);
        let Some(approved) = decision.map(|decision| decision.approve) else { return Some(Approval::Stopped) };
        emit.send(AgentEvent::ToolApprovalEnd {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            approved,
        });
        Some(if approved { Approval::Approved(proposed_against) } else { Approval::Denied })
    }

    /// `task`: a sub-agent with the workspace tools (read-only ones in plan mode) works on `prompt` in a
    /// conversation of its own. Its text is not streamed (its report is the task's result); its tool calls are
    /// reported, approved and stopped like the agent's own, under ids `<task id>:<call id>`.
    async fn task(
        &self,
        call: &ToolCall,
        mode: AgentMode,
        workspace: &Workspace,
        control: &RunControl,
        emit: &Emitter<'_>,
    ) -> ToolOutput {
        let Some(prompt) = call.arguments.get("prompt").and_then(Value::as_str).filter(|p| !p.trim().is_empty()) else {
            return ToolOutput::error("`prompt` is missing");
        };
        let system = match mode {
            AgentMode::Agent => SUBAGENT_PROMPT.to_owned(),
            AgentMode::Plan => format!("{SUBAGENT_PROMPT}\n\n{PLAN_MODE_PROMPT}"),
        };
        let tools = self.subagent_specs(mode);
        let mut messages = vec![ModelMessage::user(prompt.to_owned())];
        // The sub-agent's text and thinking are its own: they go nowhere but into its report.
        let (unheard, _) = mpsc::unbounded_channel();
        let quiet = Emitter { events: &unheard };
        for _ in 0..SUBAGENT_MAX_CALLS {
            if control.cancel.is_cancelled() {
                return ToolOutput::error("the task was stopped");
            }
            let request = ModelRequest { system: system.clone(), messages: messages.clone(), tools: tools.clone() };
            let (outcome, blocks, calls, _) = self.call_model(&request, control, &quiet).await;
            let report: String = blocks
                .iter()
                .filter_map(|b| match b {
                    AssistantBlock::Text(t) => Some(t.as_str()),
                    AssistantBlock::Thinking(_) | AssistantBlock::ToolCall { .. } => None,
                })
                .collect();
            let stop = match outcome {
                Ok(stop) => stop,
                Err(ProviderError::Aborted) => return ToolOutput::error("the task was stopped"),
                Err(error) => return ToolOutput::error(format!("the sub-agent's model call failed: {error}")),
            };
            messages.push(ModelMessage::Assistant { blocks });
            if calls.is_empty() || stop != ModelStop::ToolUse {
                let report = report.trim();
                return ToolOutput::ok(if report.is_empty() {
                    "The sub-agent finished without a report."
                } else {
                    report
                });
            }
            for child in calls {
                let nested = ToolCall { id: format!("{}:{}", call.id, child.id), ..child.clone() };
                let (result, is_error) = self.execute_call(&nested, mode, workspace, control, emit, true).await;
                messages.push(ModelMessage::ToolResult {
                    tool_call_id: child.id,
                    tool_name: child.name,
                    text: result.text,
                    is_error,
                });
            }
        }
        ToolOutput::error(format!("the sub-agent made {SUBAGENT_MAX_CALLS} model calls without finishing the task"))
    }

    async fn question(&self, call: &ToolCall, control: &RunControl) -> ToolOutput {
        let Some(question) = call.arguments.get("question").and_then(Value::as_str) else {
            return ToolOutput { text: "`question` is missing".into(), details: None, is_error: true };
        };
        let timeout =
            call.arguments.get("timeoutSeconds").and_then(Value::as_f64).unwrap_or(600.0).clamp(1.0, 86_400.0);
        let (sender, receiver) = oneshot::channel();
        control.questions.lock().expect("the question lock is never poisoned").insert(call.id.clone(), sender);
        let outcome = tokio::select! {
            answer = receiver => answer.map_err(|_| "the question was withdrawn".to_owned()),
            () = control.cancel.cancelled() => Err("the run was stopped before the question was answered".to_owned()),
            () = tokio::time::sleep(Duration::from_secs_f64(timeout)) => {
                Err(format!("no answer to \"{question}\" within {timeout:.0} s"))
            }
        };
        control.questions.lock().expect("the question lock is never poisoned").remove(&call.id);
        match outcome {
            Ok(answer) => ToolOutput { text: answer, details: None, is_error: false },
            Err(message) => ToolOutput { text: message, details: None, is_error: true },
        }
    }
}

/// Where compaction cuts: the earliest message from which the rest fits in `keep_tokens`, else the latest possible
/// cut. A cut never falls on a tool result, which must follow its call. `None` when nothing precedes any cut.
fn compaction_cut(messages: &[ModelMessage], keep_tokens: u64) -> Option<usize> {
    let mut kept_tokens = 0;
    let mut cut = None;
    for at in (1..messages.len()).rev() {
        kept_tokens += estimate_tokens(&messages[at]);
        let cuttable = match &messages[at] {
            ModelMessage::User { .. } | ModelMessage::Assistant { .. } => true,
            ModelMessage::ToolResult { .. } => false,
        };
        if cuttable {
            if kept_tokens > keep_tokens && cut.is_some() {
                break;
            }
            cut = Some(at);
        }
    }
    cut
}

/// The messages as plain text for the summarizing call, at most about `max_chars` (the latest part is kept).
fn transcript(messages: &[ModelMessage], max_chars: usize) -> String {
    let mut text = String::from("Summarize this conversation:\n\n");
    let mut lines: Vec<String> = Vec::new();
    for message in messages {
        match message {
            ModelMessage::User { text, .. } => lines.push(format!("User: {text}")),
            ModelMessage::Assistant { blocks } => {
                for block in blocks {
                    match block {
                        AssistantBlock::Text(text) => lines.push(format!("Assistant: {text}")),
                        AssistantBlock::Thinking(_) => {}
                        AssistantBlock::ToolCall { name, arguments, .. } => {
                            lines.push(format!("Assistant called {name} with {arguments}"))
                        }
                    }
                }
            }
            ModelMessage::ToolResult { tool_name, text, is_error, .. } => {
                let shown: String = text.chars().take(SUMMARY_TOOL_RESULT_CHARS).collect();
                let more = if shown.len() < text.len() { " […]" } else { "" };
                let kind = if *is_error { "error" } else { "result" };
                lines.push(format!("{tool_name} {kind}: {shown}{more}"));
            }
        }
    }
    let mut total = 0;
    let keep_from = lines
        .iter()
        .rposition(|line| {
            total += line.len() + 2;
            total > max_chars
        })
        .map_or(0, |at| at + 1);
    if keep_from > 0 {
        text.push_str("(The earliest part is left out.)\n\n");
    }
    text.push_str(&lines[keep_from..].join("\n\n"));
    text
}

/// Whether a workspace tool is offered in `mode`; `todo_write` and `question` always are.
fn offered_in(mode: AgentMode, tool: &dyn Tool) -> bool {
    match mode {
        AgentMode::Agent => true,
        AgentMode::Plan => tool.read_only(),
    }
}

/// The prompt as the transcript shows it, and as the model gets it: `execute` and `refine` wrap the user's text
/// around the conversation's plan. Without a plan both are the user's text as it is.
fn model_prompt(conversation: &Conversation, prompt: String, action: Option<PlanAction>) -> (String, String) {
    let Some(action) = action else {
        return (prompt.clone(), prompt);
    };
    let shown = match (prompt.trim().is_empty(), action) {
        (false, PlanAction::Execute | PlanAction::Refine) => prompt.clone(),
        (true, PlanAction::Execute) => "Execute the plan.".to_owned(),
        (true, PlanAction::Refine) => "Refine the plan.".to_owned(),
    };
    let Some(plan) = conversation.plan().filter(|plan| !plan.is_empty()) else {
        return (shown.clone(), shown);
    };
    let steps: String = plan
        .iter()
        .enumerate()
        .map(|(i, todo)| format!("{}. [{}] {}\n", i + 1, todo.status.as_str(), todo.text))
        .collect();
    let has_text = !prompt.trim().is_empty();
    let for_model = match action {
        PlanAction::Execute => {
            let note = if has_text { format!("\nThe user adds: {prompt}") } else { String::new() };
            format!(
                "Execute the plan below; every tool is available now. Work through the steps in order. Keep the \
                 checklist up to date with todo_write, always with every step in it: mark a step in_progress when \
                 you start it and completed when it is done.\n\nThe plan:\n{steps}{note}"
            )
        }
        PlanAction::Refine => {
            let change = if has_text { prompt.as_str() } else { "make it better" };
            format!(
                "Revise the plan with this change: {change}\n\nThe current plan:\n{steps}\nWrite the whole revised \
                 plan with todo_write."
            )
        }
    };
    (shown, for_model)
}

/// `todo_write`: validates the checklist; the mapper turns it into `plan` frames.
fn todo_write(arguments: &Value) -> ToolOutput {
    let Some(todos) = arguments.get("todos").and_then(Value::as_array) else {
        return ToolOutput { text: "`todos` must be an array".into(), details: None, is_error: true };
    };
    let mut done = 0;
    for (i, todo) in todos.iter().enumerate() {
        let Some(item) = TodoItem::parse_strict(todo) else {
            return ToolOutput {
                text: format!("todos[{i}] needs `text` and a `status` of pending, in_progress or completed"),
                details: None,
                is_error: true,
            };
        };
        done += usize::from(item.is_completed());
    }
    ToolOutput {
        text: format!("Updated the checklist: {done} of {} done", todos.len()),
        details: None,
        is_error: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn todo_call(id: &str, statuses: &[&str]) -> ModelMessage {
        let todos: Vec<Value> = statuses.iter().map(|s| json!({"text": format!("{id} {s}"), "status": s})).collect();
        ModelMessage::Assistant {
            blocks: vec![AssistantBlock::ToolCall {
                id: id.into(),
                name: TODO_WRITE.into(),
                arguments: json!({ "todos": todos }),
            }],
        }
    }

    fn result(id: &str, is_error: bool) -> ModelMessage {
        ModelMessage::ToolResult {
            tool_call_id: id.into(),
            tool_name: TODO_WRITE.into(),
            text: String::new(),
            is_error,
        }
    }

    #[test]
    fn the_agents_own_tools_are_named_as_their_kinds() {
        use crate::protocol::ToolKind;
        for (name, kind) in [
            (TODO_WRITE, ToolKind::TodoWrite),
            (QUESTION, ToolKind::Question),
            (CHART, ToolKind::Chart),
            (TASK, ToolKind::Task),
        ] {
            assert_eq!(kind.runtime_name(), Some(name));
            assert_eq!(ToolKind::from_runtime_name(name), kind);
        }
    }

    #[test]
    fn the_plan_is_the_last_todo_write_that_succeeded() {
        let mut conversation = Conversation::default();
        assert_eq!(conversation.plan(), None);
        conversation.messages.push(ModelMessage::user("plan"));
        conversation.messages.extend([todo_call("a", &["pending", "pending"]), result("a", false)]);
        conversation.messages.extend([todo_call("b", &["completed"]), result("b", true)]);
        let plan = conversation.plan().unwrap();
        assert_eq!(plan.len(), 2, "the failed write is not the plan");
        assert_eq!(plan[0], TodoItem { text: "a pending".into(), status: TodoStatus::Pending });
        conversation.messages.extend([todo_call("c", &["completed", "in_progress"]), result("c", false)]);
        let statuses: Vec<TodoStatus> = conversation.plan().unwrap().iter().map(|t| t.status).collect();
        assert_eq!(statuses, [TodoStatus::Completed, TodoStatus::InProgress]);
    }

    #[test]
    fn a_plan_action_decides_the_mode() {
        let options = |mode, plan_action| RunOptions { mode, plan_action }.effective_mode();
        assert_eq!(options(AgentMode::Agent, None), AgentMode::Agent);
        assert_eq!(options(AgentMode::Plan, None), AgentMode::Plan);
        assert_eq!(options(AgentMode::Plan, Some(PlanAction::Execute)), AgentMode::Agent);
        assert_eq!(options(AgentMode::Agent, Some(PlanAction::Refine)), AgentMode::Plan);
    }

    #[test]
    fn execute_and_refine_put_the_plan_into_the_prompt() {
        let mut conversation = Conversation::default();
        let (shown, seen) = model_prompt(&conversation, String::new(), Some(PlanAction::Execute));
        assert_eq!((shown.as_str(), seen.as_str()), ("Execute the plan.", "Execute the plan."), "no plan yet");
        conversation.messages.extend([todo_call("a", &["pending", "completed"]), result("a", false)]);
        let (shown, seen) = model_prompt(&conversation, String::new(), Some(PlanAction::Execute));
        assert_eq!(shown, "Execute the plan.");
        assert!(seen.ends_with("The plan:\n1. [pending] a pending\n2. [completed] a completed\n"), "{seen}");
        let (shown, seen) = model_prompt(&conversation, "split step 2".into(), Some(PlanAction::Refine));
        assert_eq!(shown, "split step 2");
        assert!(seen.starts_with("Revise the plan with this change: split step 2\n"), "{seen}");
        let (shown, seen) = model_prompt(&conversation, "hi".into(), None);
        assert_eq!((shown.as_str(), seen.as_str()), ("hi", "hi"));
    }
}

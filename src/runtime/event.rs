//! `AgentEvent`: the JSON event dialect of the pi coding agent's RPC mode (DESIGN.md §5), the one input language of the mapper.
//!
//! Lines are parsed in one pass into borrowed raw fields, and only the fields
//! an event type needs are decoded: pi repeats the whole growing message on
//! every `message_update`, and decoding it each time would make a long answer
//! cost O(n²).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::protocol::{CompactionReason, ContextUse, TodoItem, TokenUsage};

/// One line of a runtime's output.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    AgentStart,
    AgentEnd,
    /// pi ≥ 0.8x: the agent is idle with nothing queued and no retry pending.
    AgentSettled,
    TurnStart,
    TurnEnd,
    MessageStart(AgentMessage),
    MessageEnd(AgentMessage),
    MessageUpdate(AssistantMessageEvent),
    ToolExecutionStart {
        tool_call_id: String,
        tool_name: String,
        args: Value,
    },
    /// `partial_result` is cumulative: it replaces the previous one.
    ToolExecutionUpdate {
        tool_call_id: String,
        tool_name: String,
        args: Value,
        partial_result: ToolResult,
    },
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: ToolResult,
        is_error: bool,
    },
    /// chatwire's addition to the dialect: the call waits for the user's approval before it runs.
    ToolApprovalRequest {
        tool_call_id: String,
        tool_name: String,
        args: Value,
        /// The agent's own ways to answer (an ACP agent's permission options); empty for Approve or Deny.
        options: Vec<crate::protocol::ApprovalOption>,
    },
    /// chatwire's addition to the dialect: the user's decision on a call that waited for approval.
    ToolApprovalEnd {
        tool_call_id: String,
        tool_name: String,
        approved: bool,
    },
    QueueUpdate {
        steering: Vec<String>,
        follow_up: Vec<String>,
    },
    /// chatwire's addition to the dialect: the agent's whole plan, as it stands now (an ACP agent's `plan`), for a
    /// runtime whose plan is not the output of a checklist tool.
    PlanUpdate {
        todos: Vec<TodoItem>,
    },
    /// chatwire's addition to the dialect: everything the agent offers beside the conversation (its slash commands,
    /// its options with their values), as it stands now (an ACP agent's `available_commands_update`,
    /// `config_option_update`, and the options its session opened with). Comes in runs and outside them.
    AgentOptions(crate::protocol::AgentOptionsFrame),
    /// `compaction_start`, or `auto_compaction_start` from older pi.
    CompactionStart {
        reason: CompactionReason,
    },
    CompactionEnd {
        reason: CompactionReason,
        aborted: bool,
        will_retry: bool,
        error_message: Option<String>,
    },
    AutoRetryStart {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error_message: String,
    },
    AutoRetryEnd {
        success: bool,
        attempt: u32,
        final_error: Option<String>,
    },
    /// A request for the user (`select`, `confirm`, `input`, `notify`, …), with all its fields.
    ExtensionUiRequest(UiRequest),
    /// The answer to a command sent to the runtime.
    Response(RpcResponse),
    /// A known type with nothing to show (`session_info_changed`, `thinking_level_changed`).
    Ignored(String),
    /// A type this version does not know: skipped and counted, never an error.
    Unknown(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageRole {
    User,
    Assistant,
    ToolResult,
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StopReason {
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
    Other(String),
}

impl StopReason {
    fn parse(text: &str) -> Self {
        match text {
            "stop" => StopReason::Stop,
            "length" => StopReason::Length,
            "toolUse" => StopReason::ToolUse,
            "error" => StopReason::Error,
            "aborted" => StopReason::Aborted,
            other => StopReason::Other(other.to_owned()),
        }
    }
}

/// A whole message as pi reports it at `message_start` / `message_end`.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentMessage {
    pub role: MessageRole,
    /// The text blocks joined; what a user typed, or an assistant's visible answer.
    pub text: String,
    pub stop_reason: Option<StopReason>,
    pub error_message: Option<String>,
    pub timestamp: Option<u64>,
    /// What the call that wrote an assistant message used (pi's `usage`); `None` where nothing was counted.
    pub usage: Option<CallUsage>,
}

impl AgentMessage {
    /// An assistant message as it starts, before its model call has written or counted anything.
    pub fn opening_answer() -> AgentMessage {
        AgentMessage {
            role: MessageRole::Assistant,
            text: String::new(),
            stop_reason: None,
            error_message: None,
            timestamp: None,
            usage: None,
        }
    }
}

/// One model call's tokens and cost, and what the runtime knows of the model's context window.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CallUsage {
    pub tokens: TokenUsage,
    pub context_window: Option<u64>,
    /// The context size past which the runtime compacts before its next call.
    pub compact_at: Option<u64>,
}

impl CallUsage {
    /// How full the context is after this call.
    pub fn context(&self) -> ContextUse {
        ContextUse { used: self.tokens.context_tokens(), window: self.context_window, compact_at: self.compact_at }
    }
}

/// The header of a tool call being written: what `toolcall_start` knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallHeader {
    pub id: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// The streaming event inside a `message_update`.
#[derive(Debug, Clone, PartialEq)]
pub enum AssistantMessageEvent {
    TextDelta {
        content_index: usize,
        delta: String,
    },
    ThinkingDelta {
        content_index: usize,
        delta: String,
    },
    /// The id and name come from `partial.content[contentIndex]`.
    ToolcallStart {
        content_index: usize,
        call: Option<ToolCallHeader>,
    },
    /// `delta` is a raw fragment of the arguments JSON; pi 0.73 repeats the header in `partial`.
    ToolcallDelta {
        content_index: usize,
        delta: String,
        call: Option<ToolCallHeader>,
    },
    ToolcallEnd {
        content_index: usize,
        call: ToolCall,
    },
    /// `text_start`, `text_end`, `thinking_start`, `thinking_end`, `start`, `done`, `error` and unknown kinds:
    /// the deltas and the `message_end` already carry what they say.
    Other(String),
}

/// A tool's result: `{ content: [{type: "text", text}], details? }`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolResult {
    /// The text blocks joined.
    pub text: String,
    pub details: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct UiRequest {
    pub id: String,
    pub method: String,
    /// Every field of the request, `id` and `method` included.
    pub fields: serde_json::Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RpcResponse {
    pub id: Option<String>,
    pub command: String,
    pub success: bool,
    /// The answer's payload, kept as raw JSON: pi's `get_messages` answer holds the whole conversation, and
    /// building a tree of it that nobody reads would cost more than all other events together.
    pub data: Option<RawJson>,
    pub error: Option<String>,
}

/// A JSON value kept as its text, parsed only when someone needs it.
#[derive(Debug, Clone)]
pub struct RawJson(pub Box<RawValue>);

impl RawJson {
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.0.get())
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

/// A line that is not a usable event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    #[error("not JSON: {0}")]
    Json(String),
    #[error("`{event}` event: {problem}")]
    Shape { event: String, problem: String },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    #[serde(borrow)]
    assistant_message_event: Option<&'a RawValue>,
    #[serde(borrow)]
    partial_result: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    args: Option<&'a RawValue>,
    #[serde(borrow)]
    data: Option<&'a RawValue>,
    tool_call_id: Option<String>,
    tool_name: Option<String>,
    is_error: Option<bool>,
    approved: Option<bool>,
    options: Option<Vec<crate::protocol::ApprovalOption>>,
    steering: Option<Vec<String>>,
    follow_up: Option<Vec<String>>,
    todos: Option<Vec<Value>>,
    reason: Option<String>,
    aborted: Option<bool>,
    will_retry: Option<bool>,
    error_message: Option<String>,
    attempt: Option<u32>,
    max_attempts: Option<u32>,
    delay_ms: Option<u64>,
    success: Option<bool>,
    final_error: Option<String>,
    id: Option<String>,
    command: Option<String>,
    method: Option<String>,
    error: Option<String>,
}

impl AgentEvent {
    /// Parses one line of runtime output (without its line ending).
    pub fn parse(line: &str) -> Result<AgentEvent, EventError> {
        let raw: RawEvent<'_> = serde_json::from_str(line).map_err(|e| EventError::Json(e.to_string()))?;
        let kind = raw.kind.as_ref();
        let shape = |problem: String| EventError::Shape { event: kind.to_owned(), problem };
        let missing = |field: &str| shape(format!("missing field `{field}`"));
        let decode = |raw: Option<&RawValue>, field: &str| -> Result<Value, EventError> {
            match raw {
                Some(raw) => serde_json::from_str(raw.get()).map_err(|e| shape(format!("field `{field}`: {e}"))),
                None => Ok(Value::Null),
            }
        };
        let event = match kind {
            "agent_start" => AgentEvent::AgentStart,
            "agent_end" => AgentEvent::AgentEnd,
            "agent_settled" => AgentEvent::AgentSettled,
            "turn_start" => AgentEvent::TurnStart,
            "turn_end" => AgentEvent::TurnEnd,
            "message_start" | "message_end" => {
                let message = raw.message.ok_or_else(|| missing("message"))?;
                let message = parse_message(message.get()).map_err(|e| shape(format!("field `message`: {e}")))?;
                if kind == "message_start" {
                    AgentEvent::MessageStart(message)
                } else {
                    AgentEvent::MessageEnd(message)
                }
            }
            "message_update" => {
                let inner = raw.assistant_message_event.ok_or_else(|| missing("assistantMessageEvent"))?;
                AgentEvent::MessageUpdate(
                    parse_assistant_event(inner.get())
                        .map_err(|e| shape(format!("field `assistantMessageEvent`: {e}")))?,
                )
            }
            "tool_execution_start" => AgentEvent::ToolExecutionStart {
                tool_call_id: raw.tool_call_id.ok_or_else(|| missing("toolCallId"))?,
                tool_name: raw.tool_name.ok_or_else(|| missing("toolName"))?,
                args: decode(raw.args, "args")?,
            },
            "tool_execution_update" => AgentEvent::ToolExecutionUpdate {
                tool_call_id: raw.tool_call_id.ok_or_else(|| missing("toolCallId"))?,
                tool_name: raw.tool_name.ok_or_else(|| missing("toolName"))?,
                args: decode(raw.args, "args")?,
                partial_result: parse_tool_result(raw.partial_result)
                    .map_err(|e| shape(format!("field `partialResult`: {e}")))?,
            },
            "tool_execution_end" => AgentEvent::ToolExecutionEnd {
                tool_call_id: raw.tool_call_id.ok_or_else(|| missing("toolCallId"))?,
                tool_name: raw.tool_name.ok_or_else(|| missing("toolName"))?,
                result: parse_tool_result(raw.result).map_err(|e| shape(format!("field `result`: {e}")))?,
                is_error: raw.is_error.unwrap_or(false),
            },
            "tool_approval_request" => AgentEvent::ToolApprovalRequest {
                tool_call_id: raw.tool_call_id.ok_or_else(|| missing("toolCallId"))?,
                tool_name: raw.tool_name.ok_or_else(|| missing("toolName"))?,
                args: decode(raw.args, "args")?,
                options: raw.options.unwrap_or_default(),
            },
            "tool_approval_end" => AgentEvent::ToolApprovalEnd {
                tool_call_id: raw.tool_call_id.ok_or_else(|| missing("toolCallId"))?,
                tool_name: raw.tool_name.ok_or_else(|| missing("toolName"))?,
                approved: raw.approved.ok_or_else(|| missing("approved"))?,
            },
            "queue_update" => AgentEvent::QueueUpdate {
                steering: raw.steering.unwrap_or_default(),
                follow_up: raw.follow_up.unwrap_or_default(),
            },
            "plan_update" => AgentEvent::PlanUpdate {
                todos: raw
                    .todos
                    .ok_or_else(|| missing("todos"))?
                    .iter()
                    .map(|todo| {
                        TodoItem::parse_lenient(todo).ok_or_else(|| shape(format!("a todo without text: {todo}")))
                    })
                    .collect::<Result<_, _>>()?,
            },
            "agent_options" => AgentEvent::AgentOptions(serde_json::from_str(line).map_err(|e| shape(e.to_string()))?),
            "compaction_start" | "auto_compaction_start" => AgentEvent::CompactionStart {
                reason: CompactionReason::parse(raw.reason.as_deref().unwrap_or("threshold")),
            },
            "compaction_end" | "auto_compaction_end" => AgentEvent::CompactionEnd {
                reason: CompactionReason::parse(raw.reason.as_deref().unwrap_or("threshold")),
                aborted: raw.aborted.unwrap_or(false),
                will_retry: raw.will_retry.unwrap_or(false),
                error_message: raw.error_message,
            },
            "auto_retry_start" => AgentEvent::AutoRetryStart {
                attempt: raw.attempt.ok_or_else(|| missing("attempt"))?,
                max_attempts: raw.max_attempts.ok_or_else(|| missing("maxAttempts"))?,
                delay_ms: raw.delay_ms.unwrap_or(0),
                error_message: raw.error_message.unwrap_or_default(),
            },
            "auto_retry_end" => AgentEvent::AutoRetryEnd {
                success: raw.success.ok_or_else(|| missing("success"))?,
                attempt: raw.attempt.ok_or_else(|| missing("attempt"))?,
                final_error: raw.final_error,
            },
            "extension_ui_request" => {
                let fields: serde_json::Map<String, Value> =
                    serde_json::from_str(line).map_err(|e| shape(e.to_string()))?;
                AgentEvent::ExtensionUiRequest(UiRequest {
                    id: raw.id.ok_or_else(|| missing("id"))?,
                    method: raw.method.ok_or_else(|| missing("method"))?,
                    fields,
                })
            }
            "response" => AgentEvent::Response(RpcResponse {
                id: raw.id,
                command: raw.command.ok_or_else(|| missing("command"))?,
                success: raw.success.unwrap_or(false),
                data: raw.data.map(|data| RawJson(data.to_owned())),
                error: raw.error,
            }),
            "session_info_changed" | "thinking_level_changed" => AgentEvent::Ignored(kind.to_owned()),
            other => AgentEvent::Unknown(other.to_owned()),
        };
        Ok(event)
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawContent {
    Text(String),
    Blocks(Vec<RawBlock>),
}

#[derive(Deserialize)]
struct RawBlock {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMessage {
    role: String,
    content: Option<RawContent>,
    stop_reason: Option<String>,
    error_message: Option<String>,
    timestamp: Option<u64>,
    usage: Option<RawUsage>,
}

/// pi's `usage` of an assistant message; `cost.total` is in dollars at the prices of pi's model list.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawUsage {
    #[serde(default)]
    input: u64,
    #[serde(default)]
    output: u64,
    #[serde(default)]
    cache_read: u64,
    #[serde(default)]
    cache_write: u64,
    cost: Option<RawCost>,
}

#[derive(Deserialize)]
struct RawCost {
    total: Option<f64>,
}

impl RawUsage {
    /// pi prices a model without a price list at 0: that is unknown, not free.
    fn into_call(self) -> Option<CallUsage> {
        let cost = self.cost.and_then(|cost| cost.total).filter(|&total| total > 0.0);
        let tokens = TokenUsage {
            input: self.input,
            output: self.output,
            cache_read: self.cache_read,
            cache_write: self.cache_write,
            cost,
        };
        (!tokens.is_empty()).then_some(CallUsage { tokens, context_window: None, compact_at: None })
    }
}

fn joined_text(content: Option<RawContent>) -> String {
    match content {
        None => String::new(),
        Some(RawContent::Text(text)) => text,
        Some(RawContent::Blocks(blocks)) => blocks
            .into_iter()
            .filter(|block| block.kind == "text")
            .filter_map(|block| block.text)
            .collect::<Vec<_>>()
            .join(""),
    }
}

fn parse_message(json: &str) -> Result<AgentMessage, serde_json::Error> {
    let raw: RawMessage = serde_json::from_str(json)?;
    let role = match raw.role.as_str() {
        "user" => MessageRole::User,
        "assistant" => MessageRole::Assistant,
        "toolResult" => MessageRole::ToolResult,
        _ => MessageRole::Other,
    };
    Ok(AgentMessage {
        role,
        text: joined_text(raw.content),
        stop_reason: raw.stop_reason.as_deref().map(StopReason::parse),
        error_message: raw.error_message,
        timestamp: raw.timestamp,
        usage: raw.usage.and_then(RawUsage::into_call),
    })
}

#[derive(Deserialize)]
struct RawToolResult {
    content: Option<RawContent>,
    details: Option<Value>,
}

fn parse_tool_result(raw: Option<&RawValue>) -> Result<ToolResult, serde_json::Error> {
    let Some(raw) = raw else {
        return Ok(ToolResult::default());
    };
    let parsed: RawToolResult = serde_json::from_str(raw.get())?;
    Ok(ToolResult { text: joined_text(parsed.content), details: parsed.details.filter(|d| !d.is_null()) })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawAssistantEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    content_index: Option<usize>,
    delta: Option<String>,
    tool_call: Option<RawToolCall>,
    partial: Option<RawPartial>,
}

#[derive(Deserialize)]
struct RawToolCall {
    id: String,
    name: String,
    #[serde(default)]
    arguments: Value,
}

/// Only what identifies the blocks of the partial message; their text is skipped, not copied.
#[derive(Deserialize)]
struct RawPartial {
    #[serde(default)]
    content: Vec<RawBlockHeader>,
}

#[derive(Deserialize)]
struct RawBlockHeader {
    id: Option<String>,
    name: Option<String>,
}

fn parse_assistant_event(json: &str) -> Result<AssistantMessageEvent, String> {
    let raw: RawAssistantEvent<'_> = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let content_index = raw.content_index.unwrap_or(0);
    let header = |partial: Option<RawPartial>| {
        let block = partial?.content.into_iter().nth(content_index)?;
        Some(ToolCallHeader { id: block.id?, name: block.name? })
    };
    Ok(match raw.kind.as_ref() {
        "text_delta" => AssistantMessageEvent::TextDelta { content_index, delta: raw.delta.unwrap_or_default() },
        "thinking_delta" => {
            AssistantMessageEvent::ThinkingDelta { content_index, delta: raw.delta.unwrap_or_default() }
        }
        "toolcall_start" => AssistantMessageEvent::ToolcallStart { content_index, call: header(raw.partial) },
        "toolcall_delta" => AssistantMessageEvent::ToolcallDelta {
            content_index,
            delta: raw.delta.unwrap_or_default(),
            call: header(raw.partial),
        },
        "toolcall_end" => {
            let call = raw.tool_call.ok_or("`toolcall_end` without `toolCall`")?;
            AssistantMessageEvent::ToolcallEnd {
                content_index,
                call: ToolCall { id: call.id, name: call.name, arguments: call.arguments },
            }
        }
        other => AssistantMessageEvent::Other(other.to_owned()),
    })
}

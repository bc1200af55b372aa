//! `ChatFrame`, the wire union of DESIGN.md §2: one JSON object per line, discriminated by `type`.

use std::sync::Arc;

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::message::{ChatMessage, ChatToolPart};
use super::tool::TodoItem;

/// Position of a logged frame in its session's log: strictly +1 per frame, across runs.
pub type Seq = u64;

/// Every frame of the chat stream.
///
/// Each logged frame carries `seq`; `ping` is never logged and has none.
///
/// Decoding is hand-written (see `Deserialize for ChatFrame`); encoding is derived.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatFrame {
    Start(StartFrame),
    Message(MessageFrame),
    Delta(DeltaFrame),
    Thinking(ThinkingFrame),
    ToolDraft(ToolDraftFrame),
    ToolArgsDelta(ToolArgsDeltaFrame),
    Tool(ToolFrame),
    Plan(PlanFrame),
    State(StateFrame),
    Queue(QueueFrame),
    Compaction(CompactionFrame),
    Retry(RetryFrame),
    Done(DoneFrame),
    Error(ErrorFrame),
    Ping,
}

/// The `type` of a frame, for logs, counters and SSE `event:` lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameType {
    Start,
    Message,
    Delta,
    Thinking,
    ToolDraft,
    ToolArgsDelta,
    Tool,
    Plan,
    State,
    Queue,
    Compaction,
    Retry,
    Done,
    Error,
    Ping,
}

impl FrameType {
    pub const ALL: [FrameType; 15] = [
        FrameType::Start,
        FrameType::Message,
        FrameType::Delta,
        FrameType::Thinking,
        FrameType::ToolDraft,
        FrameType::ToolArgsDelta,
        FrameType::Tool,
        FrameType::Plan,
        FrameType::State,
        FrameType::Queue,
        FrameType::Compaction,
        FrameType::Retry,
        FrameType::Done,
        FrameType::Error,
        FrameType::Ping,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FrameType::Start => "start",
            FrameType::Message => "message",
            FrameType::Delta => "delta",
            FrameType::Thinking => "thinking",
            FrameType::ToolDraft => "tool_draft",
            FrameType::ToolArgsDelta => "tool_args_delta",
            FrameType::Tool => "tool",
            FrameType::Plan => "plan",
            FrameType::State => "state",
            FrameType::Queue => "queue",
            FrameType::Compaction => "compaction",
            FrameType::Retry => "retry",
            FrameType::Done => "done",
            FrameType::Error => "error",
            FrameType::Ping => "ping",
        }
    }

    pub fn parse(name: &str) -> Option<FrameType> {
        FrameType::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

/// Runs `$body` with `$payload` bound to the payload of any logged frame (each has a `seq`
/// field), or `$ping` for `ping`; one exhaustive match serves both the getter and the setter.
macro_rules! on_logged_frame {
    ($frame:expr, $payload:ident => $body:expr, ping => $ping:expr) => {
        match $frame {
            ChatFrame::Start($payload) => $body,
            ChatFrame::Message($payload) => $body,
            ChatFrame::Delta($payload) => $body,
            ChatFrame::Thinking($payload) => $body,
            ChatFrame::ToolDraft($payload) => $body,
            ChatFrame::ToolArgsDelta($payload) => $body,
            ChatFrame::Tool($payload) => $body,
            ChatFrame::Plan($payload) => $body,
            ChatFrame::State($payload) => $body,
            ChatFrame::Queue($payload) => $body,
            ChatFrame::Compaction(CompactionFrame::Start($payload)) => $body,
            ChatFrame::Compaction(CompactionFrame::End($payload)) => $body,
            ChatFrame::Retry(RetryFrame::Start($payload)) => $body,
            ChatFrame::Retry(RetryFrame::End($payload)) => $body,
            ChatFrame::Done($payload) => $body,
            ChatFrame::Error($payload) => $body,
            ChatFrame::Ping => $ping,
        }
    };
}

impl ChatFrame {
    pub fn frame_type(&self) -> FrameType {
        match self {
            ChatFrame::Start(_) => FrameType::Start,
            ChatFrame::Message(_) => FrameType::Message,
            ChatFrame::Delta(_) => FrameType::Delta,
            ChatFrame::Thinking(_) => FrameType::Thinking,
            ChatFrame::ToolDraft(_) => FrameType::ToolDraft,
            ChatFrame::ToolArgsDelta(_) => FrameType::ToolArgsDelta,
            ChatFrame::Tool(_) => FrameType::Tool,
            ChatFrame::Plan(_) => FrameType::Plan,
            ChatFrame::State(_) => FrameType::State,
            ChatFrame::Queue(_) => FrameType::Queue,
            ChatFrame::Compaction(_) => FrameType::Compaction,
            ChatFrame::Retry(_) => FrameType::Retry,
            ChatFrame::Done(_) => FrameType::Done,
            ChatFrame::Error(_) => FrameType::Error,
            ChatFrame::Ping => FrameType::Ping,
        }
    }

    /// The frame's position in its session log, if it has been logged.
    pub fn seq(&self) -> Option<Seq> {
        on_logged_frame!(self, frame => frame.seq, ping => None)
    }

    /// Stamps the frame with its log position; `ping` frames are never logged and stay as they are.
    pub fn set_seq(&mut self, seq: Seq) {
        on_logged_frame!(self, frame => frame.seq = Some(seq), ping => ())
    }

    pub fn with_seq(mut self, seq: Seq) -> Self {
        self.set_seq(seq);
        self
    }

    /// `done` and `error` end a run; nothing of that run follows them.
    pub fn is_terminal(&self) -> bool {
        match self.frame_type() {
            FrameType::Done | FrameType::Error => true,
            FrameType::Start
            | FrameType::Message
            | FrameType::Delta
            | FrameType::Thinking
            | FrameType::ToolDraft
            | FrameType::ToolArgsDelta
            | FrameType::Tool
            | FrameType::Plan
            | FrameType::State
            | FrameType::Queue
            | FrameType::Compaction
            | FrameType::Retry
            | FrameType::Ping => false,
        }
    }
}

/// Opens a run; `id` is the assistant message id of this run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    pub id: String,
    pub run_id: String,
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_reset: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Vec<String>>,
}

/// A whole message joins the transcript (the prompt, or a delivered steering / follow-up message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    pub message: ChatMessage,
}

/// Assistant text to append: always a delta, never the accumulated text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeltaFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
}

/// Model thinking to append (a delta).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
}

/// The model started writing a tool call; its row opens before the arguments are complete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDraftFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    pub tool_call_id: String,
    pub tool_name: String,
    /// The call's position in the model message.
    pub index: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
}

/// One step of a path into a tool call's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PathSegment {
    Index(u64),
    Key(String),
}

/// A path into a tool call's arguments. Shared: every frame that extends the same string holds the same segments,
/// so the mapper hands out a pointer per frame instead of copying the keys.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ArgsPath(Arc<[PathSegment]>);

impl std::ops::Deref for ArgsPath {
    type Target = [PathSegment];

    fn deref(&self) -> &[PathSegment] {
        &self.0
    }
}

impl From<Vec<PathSegment>> for ArgsPath {
    fn from(segments: Vec<PathSegment>) -> Self {
        ArgsPath(segments.into())
    }
}

impl Serialize for ArgsPath {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
    }
}

impl<'de> Deserialize<'de> for ArgsPath {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<PathSegment>::deserialize(deserializer).map(ArgsPath::from)
    }
}

/// Decoded text appended to one string argument of a call still being written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolArgsDeltaFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    pub tool_call_id: String,
    pub path: ArgsPath,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
}

/// Upsert of a tool part, keyed by `toolCallId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    /// Boxed: a tool part is by far the largest payload, and every frame of every kind is as large as the largest.
    pub part: Box<ChatToolPart>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AgentMode {
    #[default]
    Agent,
    Plan,
}

/// One step of a plan: a checklist item ([`TodoItem`]) as `plan` frames carry it, numbered from 1 and with its
/// status reduced to done or not (the wire shape of DESIGN.md §2's `ChatPlanState`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanTodo {
    pub step: u32,
    pub text: String,
    pub completed: bool,
}

impl PlanTodo {
    /// The plan steps of a checklist.
    pub fn steps(items: &[TodoItem]) -> Vec<PlanTodo> {
        items
            .iter()
            .enumerate()
            .map(|(i, item)| PlanTodo { step: i as u32 + 1, text: item.text.clone(), completed: item.is_completed() })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatPlanState {
    pub mode: AgentMode,
    pub executing: bool,
    pub pending_decision: bool,
    pub completed: u32,
    pub total: u32,
    pub todos: Vec<PlanTodo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Plan-mode progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    pub mode: AgentMode,
    pub executing: bool,
    pub completed: u32,
    pub total: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub state: ChatPlanState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LifecycleName {
    AgentStart,
    AgentEnd,
    AgentSettled,
    TurnStart,
    TurnEnd,
    MessageStart,
    MessageEnd,
}

impl LifecycleName {
    pub const ALL: [LifecycleName; 7] = [
        LifecycleName::AgentStart,
        LifecycleName::AgentEnd,
        LifecycleName::AgentSettled,
        LifecycleName::TurnStart,
        LifecycleName::TurnEnd,
        LifecycleName::MessageStart,
        LifecycleName::MessageEnd,
    ];
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lifecycle {
    pub name: LifecycleName,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Lifecycle of the agent: runs, turns and model messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    pub state: Lifecycle,
}

/// The whole queue of messages waiting to be delivered to the running agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct QueueFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    pub steering: Vec<String>,
    pub follow_up: Vec<String>,
}

/// Why the context was compacted; an open set, so unknown reasons are kept as they are.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CompactionReason {
    Manual,
    Threshold,
    Overflow,
    Other(String),
}

impl CompactionReason {
    pub fn as_str(&self) -> &str {
        match self {
            CompactionReason::Manual => "manual",
            CompactionReason::Threshold => "threshold",
            CompactionReason::Overflow => "overflow",
            CompactionReason::Other(other) => other,
        }
    }

    pub fn parse(text: &str) -> Self {
        match text {
            "manual" => CompactionReason::Manual,
            "threshold" => CompactionReason::Threshold,
            "overflow" => CompactionReason::Overflow,
            other => CompactionReason::Other(other.to_owned()),
        }
    }
}

impl Serialize for CompactionReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for CompactionReason {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(|text| CompactionReason::parse(&text))
    }
}

/// Context compaction, sub-tagged by `phase`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "phase", rename_all = "lowercase")]
pub enum CompactionFrame {
    Start(CompactionStart),
    End(CompactionEnd),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionStart {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    pub reason: CompactionReason,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionEnd {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    pub reason: CompactionReason,
    pub aborted: bool,
    pub will_retry: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

/// Automatic retry of a failed model call, sub-tagged by `phase`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "phase", rename_all = "lowercase")]
pub enum RetryFrame {
    Start(RetryStart),
    End(RetryEnd),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryStart {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    pub attempt: u32,
    pub max_attempts: u32,
    pub delay_ms: u64,
    pub error_message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryEnd {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    pub success: bool,
    pub attempt: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_error: Option<String>,
}

/// Terminal success of a run: the full, final assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DoneFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    pub run_id: String,
    pub message: ChatMessage,
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_reset: Option<bool>,
}

/// Terminal failure of a run, or of a request before a run started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// Reads the `type` (and for compaction and retry frames the `phase`) first, then the payload of that kind from the
/// same JSON object. serde's derived internally tagged enum does the same through a private buffer type, with a
/// second copy of every payload's decoder for it; going through `serde_json::Value` reuses the copy the message parts
/// already need, which keeps the browser's WASM smaller.
impl<'de> Deserialize<'de> for ChatFrame {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = Map::<String, Value>::deserialize(deserializer)?;
        let frame_type = match object.get("type") {
            Some(Value::String(name)) => name,
            Some(_) => return Err(D::Error::custom("field `type`: expected a string")),
            None => return Err(D::Error::missing_field("type")),
        };
        let Some(frame_type) = FrameType::parse(frame_type) else {
            let known: Vec<&str> = FrameType::ALL.iter().map(|t| t.as_str()).collect();
            let message = format!("unknown frame type `{frame_type}`, expected one of {}", known.join(", "));
            return Err(D::Error::custom(message));
        };
        let frame = match frame_type {
            FrameType::Start => payload(object).map(ChatFrame::Start),
            FrameType::Message => payload(object).map(ChatFrame::Message),
            FrameType::Delta => payload(object).map(ChatFrame::Delta),
            FrameType::Thinking => payload(object).map(ChatFrame::Thinking),
            FrameType::ToolDraft => payload(object).map(ChatFrame::ToolDraft),
            FrameType::ToolArgsDelta => payload(object).map(ChatFrame::ToolArgsDelta),
            FrameType::Tool => payload(object).map(ChatFrame::Tool),
            FrameType::Plan => payload(object).map(ChatFrame::Plan),
            FrameType::State => payload(object).map(ChatFrame::State),
            FrameType::Queue => payload(object).map(ChatFrame::Queue),
            FrameType::Compaction => match phase(&object) {
                Ok(Phase::Start) => payload(object).map(|start| ChatFrame::Compaction(CompactionFrame::Start(start))),
                Ok(Phase::End) => payload(object).map(|end| ChatFrame::Compaction(CompactionFrame::End(end))),
                Err(message) => Err(message),
            },
            FrameType::Retry => match phase(&object) {
                Ok(Phase::Start) => payload(object).map(|start| ChatFrame::Retry(RetryFrame::Start(start))),
                Ok(Phase::End) => payload(object).map(|end| ChatFrame::Retry(RetryFrame::End(end))),
                Err(message) => Err(message),
            },
            FrameType::Done => payload(object).map(ChatFrame::Done),
            FrameType::Error => payload(object).map(ChatFrame::Error),
            FrameType::Ping => Ok(ChatFrame::Ping),
        };
        frame.map_err(D::Error::custom)
    }
}

enum Phase {
    Start,
    End,
}

fn phase(object: &Map<String, Value>) -> Result<Phase, String> {
    match object.get("phase") {
        Some(Value::String(phase)) if phase == "start" => Ok(Phase::Start),
        Some(Value::String(phase)) if phase == "end" => Ok(Phase::End),
        Some(Value::String(phase)) => Err(format!("field `phase`: unknown phase `{phase}`, expected `start` or `end`")),
        Some(_) => Err("field `phase`: expected a string".to_owned()),
        None => Err("missing field `phase`".to_owned()),
    }
}

/// The payload's own fields; `type` and `phase` are unknown to it and ignored, as every unknown field is.
fn payload<T: DeserializeOwned>(object: Map<String, Value>) -> Result<T, String> {
    T::deserialize(Value::Object(object)).map_err(|error| error.to_string())
}

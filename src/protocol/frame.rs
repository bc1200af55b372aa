//! `ChatFrame`, the wire union of DESIGN.md §2: one JSON object per line, discriminated by `type`.

use std::sync::Arc;

use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeSeed, Error as _, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::agent_options::AgentOptionsFrame;
use super::changes::{ChangedFile, RunChanges};
use super::message::{ChatMessage, ChatToolPart};
use super::tool::TodoItem;
use super::usage::{ContextUse, TokenUsage};

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
    Branch(BranchFrame),
    Changes(ChangesFrame),
    Usage(UsageFrame),
    AgentOptions(AgentOptionsFrame),
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
    Branch,
    Changes,
    Usage,
    AgentOptions,
    Compaction,
    Retry,
    Done,
    Error,
    Ping,
}

impl FrameType {
    pub const ALL: [FrameType; 19] = [
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
        FrameType::Branch,
        FrameType::Changes,
        FrameType::Usage,
        FrameType::AgentOptions,
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
            FrameType::Branch => "branch",
            FrameType::Changes => "changes",
            FrameType::Usage => "usage",
            FrameType::AgentOptions => "agent_options",
            FrameType::Compaction => "compaction",
            FrameType::Retry => "retry",
            FrameType::Done => "done",
            FrameType::Error => "error",
            FrameType::Ping => "ping",
        }
    }

    pub fn parse(name: &str) -> Option<FrameType> {
        // A match rather than a search of `ALL`: this runs once per decoded frame.
        Some(match name {
            "start" => FrameType::Start,
            "message" => FrameType::Message,
            "delta" => FrameType::Delta,
            "thinking" => FrameType::Thinking,
            "tool_draft" => FrameType::ToolDraft,
            "tool_args_delta" => FrameType::ToolArgsDelta,
            "tool" => FrameType::Tool,
            "plan" => FrameType::Plan,
            "state" => FrameType::State,
            "queue" => FrameType::Queue,
            "branch" => FrameType::Branch,
            "changes" => FrameType::Changes,
            "usage" => FrameType::Usage,
            "agent_options" => FrameType::AgentOptions,
            "compaction" => FrameType::Compaction,
            "retry" => FrameType::Retry,
            "done" => FrameType::Done,
            "error" => FrameType::Error,
            "ping" => FrameType::Ping,
            _ => return None,
        })
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
            ChatFrame::Branch($payload) => $body,
            ChatFrame::Changes($payload) => $body,
            ChatFrame::Usage($payload) => $body,
            ChatFrame::AgentOptions($payload) => $body,
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
            ChatFrame::Branch(_) => FrameType::Branch,
            ChatFrame::Changes(_) => FrameType::Changes,
            ChatFrame::Usage(_) => FrameType::Usage,
            ChatFrame::AgentOptions(_) => FrameType::AgentOptions,
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
            | FrameType::Branch
            | FrameType::Changes
            | FrameType::Usage
            | FrameType::AgentOptions
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
    /// Present when the run starts a new branch (an edit, a regeneration) instead of following the shown one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<BranchPoint>,
}

/// Where a run that starts a branch attaches: the message its first message follows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct BranchPoint {
    /// Absent: the run's prompt is a new first message of the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
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
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum PathSegment {
    Index(u64),
    Key(String),
}

/// By the JSON kind of the step, read once: serde's derived untagged enum would buffer every step into its private
/// `Content` type and then try each variant on it.
impl<'de> Deserialize<'de> for PathSegment {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PathSegmentVisitor)
    }
}

struct PathSegmentVisitor;

impl<'de> Visitor<'de> for PathSegmentVisitor {
    type Value = PathSegment;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a path step (an object key or an array index)")
    }

    fn visit_u64<E: serde::de::Error>(self, index: u64) -> Result<PathSegment, E> {
        Ok(PathSegment::Index(index))
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<PathSegment, E> {
        Ok(PathSegment::Key(key.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, key: String) -> Result<PathSegment, E> {
        Ok(PathSegment::Key(key))
    }

    // Any other kind gets the message the derived untagged enum gave.
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<PathSegment, E> {
        Err(no_path_segment())
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<PathSegment, E> {
        Err(no_path_segment())
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<PathSegment, E> {
        Err(no_path_segment())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<PathSegment, E> {
        Err(no_path_segment())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, _: A) -> Result<PathSegment, A::Error> {
        Err(no_path_segment())
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<PathSegment, A::Error> {
        Err(no_path_segment())
    }
}

fn no_path_segment<E: serde::de::Error>() -> E {
    E::custom("data did not match any variant of untagged enum PathSegment")
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

/// The transcript shows the branch that ends at `messageId` (a user moved between siblings).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    /// The last message of the branch.
    pub message_id: String,
}

/// What the run changed in the workspace's files, between its checkpoints before and after it: logged right before
/// the run's terminal frame, and only when at least one file changed. The diff itself is served by
/// `GET /api/sessions/{id}/changes/{checkpoint}`, not logged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangesFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    /// The run's checkpoint key (the prompt's message id, or the run's id for a regeneration).
    pub checkpoint: String,
    pub files: Vec<ChangedFile>,
    pub additions: u32,
    pub deletions: u32,
    /// The run's answer; absent, the run in progress's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
}

impl ChangesFrame {
    /// The summary the answer keeps.
    pub fn summary(&self) -> RunChanges {
        RunChanges {
            checkpoint: self.checkpoint.clone(),
            files: self.files.clone(),
            additions: self.additions,
            deletions: self.deletions,
        }
    }
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

/// What one model call of a run used, logged as the call ends: the answer sums them, the context meter shows the
/// last one's `context`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The answer the call wrote into; absent, the run in progress's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    pub usage: TokenUsage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextUse>,
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

/// Decodes straight from the JSON text, without a `serde_json::Value` in between: the first key of a frame is its
/// `type` (and the second, for compaction and retry frames, its `phase`), which is where our encoder puts them, so
/// the rest of the object is the payload of a kind known in advance and is read into it directly. A frame from
/// elsewhere with its tag further in is rewritten with the tag first and read again (`reordered`): slower, but only
/// for frames chatwire did not write. serde's derived internally tagged enum would instead buffer every frame into
/// its private `Content` type and carry a second decoder of every payload for it.
impl<'de> Deserialize<'de> for ChatFrame {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FrameVisitor)
    }
}

struct FrameVisitor;

impl<'de> Visitor<'de> for FrameVisitor {
    type Value = ChatFrame;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a chat frame (a JSON object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ChatFrame, A::Error> {
        let frame_type = match map.next_key_seed(Tag("type"))? {
            Some(Key::Tag) => map.next_value::<FrameType>()?,
            Some(Key::Other(key)) => {
                let mut entries = Map::new();
                entries.insert(key, map.next_value()?);
                return reordered(entries, map);
            }
            None => return Err(A::Error::missing_field("type")),
        };
        // The rest of the object, as a deserializer of its own for the payload.
        macro_rules! rest {
            () => {
                MapAccessDeserializer::new(map)
            };
        }
        match frame_type {
            FrameType::Start => StartFrame::deserialize(rest!()).map(ChatFrame::Start),
            FrameType::Message => MessageFrame::deserialize(rest!()).map(ChatFrame::Message),
            FrameType::Delta => DeltaFrame::deserialize(rest!()).map(ChatFrame::Delta),
            FrameType::Thinking => ThinkingFrame::deserialize(rest!()).map(ChatFrame::Thinking),
            FrameType::ToolDraft => ToolDraftFrame::deserialize(rest!()).map(ChatFrame::ToolDraft),
            FrameType::ToolArgsDelta => ToolArgsDeltaFrame::deserialize(rest!()).map(ChatFrame::ToolArgsDelta),
            FrameType::Tool => ToolFrame::deserialize(rest!()).map(ChatFrame::Tool),
            FrameType::Plan => PlanFrame::deserialize(rest!()).map(ChatFrame::Plan),
            FrameType::State => StateFrame::deserialize(rest!()).map(ChatFrame::State),
            FrameType::Queue => QueueFrame::deserialize(rest!()).map(ChatFrame::Queue),
            FrameType::Branch => BranchFrame::deserialize(rest!()).map(ChatFrame::Branch),
            FrameType::Changes => ChangesFrame::deserialize(rest!()).map(ChatFrame::Changes),
            FrameType::Usage => UsageFrame::deserialize(rest!()).map(ChatFrame::Usage),
            FrameType::AgentOptions => AgentOptionsFrame::deserialize(rest!()).map(ChatFrame::AgentOptions),
            FrameType::Compaction => match phased(frame_type, map)? {
                Phased::Start(rest) => CompactionStart::deserialize(rest).map(CompactionFrame::Start),
                Phased::End(rest) => CompactionEnd::deserialize(rest).map(CompactionFrame::End),
                Phased::Reordered(frame) => return Ok(frame),
            }
            .map(ChatFrame::Compaction),
            FrameType::Retry => match phased(frame_type, map)? {
                Phased::Start(rest) => RetryStart::deserialize(rest).map(RetryFrame::Start),
                Phased::End(rest) => RetryEnd::deserialize(rest).map(RetryFrame::End),
                Phased::Reordered(frame) => return Ok(frame),
            }
            .map(ChatFrame::Retry),
            FrameType::Done => DoneFrame::deserialize(rest!()).map(ChatFrame::Done),
            FrameType::Error => ErrorFrame::deserialize(rest!()).map(ChatFrame::Error),
            FrameType::Ping => IgnoredAny::deserialize(rest!()).map(|_| ChatFrame::Ping),
        }
    }
}

impl<'de> Deserialize<'de> for FrameType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(FrameTypeVisitor)
    }
}

struct FrameTypeVisitor;

impl Visitor<'_> for FrameTypeVisitor {
    type Value = FrameType;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a frame type (a string)")
    }

    fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<FrameType, E> {
        FrameType::parse(name).ok_or_else(|| E::custom(unknown_frame_type(name)))
    }
}

/// The message for a `type` that names no frame.
pub(super) fn unknown_frame_type(name: &str) -> String {
    let known: Vec<&str> = FrameType::ALL.iter().map(|t| t.as_str()).collect();
    format!("unknown frame type `{name}`, expected one of {}", known.join(", "))
}

/// A key that is either the tag looked for or any other key (kept, for the slow path).
enum Key {
    Tag,
    Other(String),
}

/// Reads one key, telling the tag `.0` apart from the others without allocating for it.
struct Tag(&'static str);

impl<'de> DeserializeSeed<'de> for Tag {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl Visitor<'_> for Tag {
    type Value = Key;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a field name")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(if key == self.0 { Key::Tag } else { Key::Other(key.to_owned()) })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Phase {
    Start,
    End,
}

/// Where the payload of a compaction or retry frame is, once its `phase` is read.
enum Phased<R> {
    Start(R),
    End(R),
    /// The `phase` was not the second key: the frame was read by the slow path.
    Reordered(ChatFrame),
}

fn phased<'de, A: MapAccess<'de>>(
    frame_type: FrameType,
    mut map: A,
) -> Result<Phased<MapAccessDeserializer<A>>, A::Error> {
    match map.next_key_seed(Tag("phase"))? {
        Some(Key::Tag) => Ok(match map.next_value::<Phase>()? {
            Phase::Start => Phased::Start(MapAccessDeserializer::new(map)),
            Phase::End => Phased::End(MapAccessDeserializer::new(map)),
        }),
        Some(Key::Other(key)) => {
            let mut entries = Map::new();
            entries.insert("type".to_owned(), Value::String(frame_type.as_str().to_owned()));
            entries.insert(key, map.next_value()?);
            reordered(entries, map).map(Phased::Reordered)
        }
        None => Err(A::Error::missing_field("phase")),
    }
}

/// The slow path, for a frame whose `type` (or `phase`) is not where chatwire's encoder puts it: the whole object
/// is read as JSON values, written out again with the tags first, and that text decoded on the fast path. Checking
/// the tags here first keeps the second pass from coming back.
fn reordered<'de, A: MapAccess<'de>>(mut entries: Map<String, Value>, mut map: A) -> Result<ChatFrame, A::Error> {
    while let Some((key, value)) = map.next_entry::<String, Value>()? {
        entries.insert(key, value);
    }
    let frame_type = match entries.get("type") {
        Some(Value::String(name)) => {
            FrameType::parse(name).ok_or_else(|| A::Error::custom(unknown_frame_type(name)))?
        }
        Some(_) => return Err(A::Error::custom("field `type`: expected a string")),
        None => return Err(A::Error::missing_field("type")),
    };
    let phased = matches!(frame_type, FrameType::Compaction | FrameType::Retry);
    if phased {
        match entries.get("phase") {
            Some(Value::String(phase)) if phase == "start" || phase == "end" => {}
            Some(Value::String(phase)) => {
                return Err(A::Error::custom(format!(
                    "field `phase`: unknown phase `{phase}`, expected `start` or `end`"
                )));
            }
            Some(_) => return Err(A::Error::custom("field `phase`: expected a string")),
            None => return Err(A::Error::missing_field("phase")),
        }
    }
    let tags: &[&str] = if phased { &["type", "phase"] } else { &["type"] };
    let mut text = Vec::with_capacity(256);
    let mut write = |key: &str, value: &Value| -> serde_json::Result<()> {
        text.push(if text.is_empty() { b'{' } else { b',' });
        serde_json::to_writer(&mut text, key)?;
        text.push(b':');
        serde_json::to_writer(&mut text, value)
    };
    let written = tags
        .iter()
        .filter_map(|tag| entries.get(*tag).map(|value| (*tag, value)))
        .chain(
            entries.iter().filter(|(key, _)| !tags.contains(&key.as_str())).map(|(key, value)| (key.as_str(), value)),
        )
        .try_for_each(|(key, value)| write(key, value));
    written.map_err(A::Error::custom)?;
    text.push(b'}');
    serde_json::from_slice(&text).map_err(|error| A::Error::custom(without_position(&error)))
}

/// serde_json's message without its " at line 1 column N": within one line only the column means anything, and in
/// the rewritten text of `reordered` not even that.
pub(super) fn without_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(cut) => text[..cut].to_owned(),
        None => text,
    }
}

//! Request and response bodies of the HTTP API (DESIGN.md §3).

use serde::{Deserialize, Serialize};

use super::agent_options::AgentOptionsFrame;
use super::changes::ChangedFile;
use super::frame::{AgentMode, ChatPlanState, Seq};
use super::message::ChatMessage;
use super::usage::TokenUsage;

/// `POST /api/chat`: send a message to a session, starting a run (or queueing it into the active one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatRequest {
    pub session_id: String,
    /// The user's text.
    pub message: String,
    /// Client-generated id (e.g. a UUID per send) that makes the request idempotent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<AgentMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_action: Option<PlanAction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming_behavior: Option<StreamingBehavior>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachments: Option<Vec<AttachmentRef>>,
    /// Runs on a new branch instead of after the shown one: an edited user message, or a new answer to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun: Option<Rerun>,
    /// A command instead of a prompt (the composer's `/compact`); `message` is then its argument, possibly empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<ChatCommand>,
    /// The agent the session runs on. It binds a session that has none and no messages yet (the default agent
    /// does when this is absent); for any other session it must be the session's own agent, or the send is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// What a send may ask the runtime to do instead of answering a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ChatCommand {
    /// Summarize the conversation so far and go on from the summary; `message` adds what the summary should keep.
    Compact,
}

impl ChatCommand {
    /// How the composer spells it, which is also what the transcript shows.
    pub fn as_str(self) -> &'static str {
        match self {
            ChatCommand::Compact => "/compact",
        }
    }
}

/// Edit and Regenerate (DESIGN §11): which earlier user message the send starts a sibling of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rerun {
    pub kind: RerunKind,
    /// A user message of the shown branch.
    pub message_id: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RerunKind {
    /// The send's text replaces the message: a sibling of it, answered afresh.
    Edit,
    /// The message is answered again (the send's text is ignored): a sibling of its answer.
    Regenerate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlanAction {
    Execute,
    Refine,
}

/// How a message sent while a run is active is delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamingBehavior {
    /// After the current tool calls, before the next model call.
    Steer,
    /// When the agent would otherwise stop.
    FollowUp,
}

/// A file sent along with a message: one `POST /api/attachments` kept, by the `id` it answered with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentRef {
    pub id: String,
    /// The name the message shows; the upload's, unless the user renamed it since.
    pub name: String,
}

/// `POST /api/chat/abort`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AbortRequest {
    pub session_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AbortResponse {
    pub ok: bool,
    /// Whether a run was active and has been stopped.
    pub aborted: bool,
}

/// `POST /api/chat/question`: the user's answer to a pending question card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionAnswerRequest {
    pub session_id: String,
    pub tool_call_id: String,
    pub answer: QuestionAnswer,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionAnswer {
    pub kind: AnswerKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// The answer the agent is given, and the question part records, when the user skips a question.
pub const SKIPPED_ANSWER: &str = "(the user skipped this question)";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerKind {
    Single,
    Multi,
    Text,
    Skip,
}

/// `POST /api/chat/approval`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    pub session_id: String,
    pub tool_call_id: String,
    /// Approve or Deny; may be left out when `option_id` says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve: Option<bool>,
    /// One of the call's `approvalOptions` (allow always, reject once, …), for an agent that offers them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option_id: Option<String>,
}

/// `{ ok }`, the answer of routes that only acknowledge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OkResponse {
    pub ok: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    Idle,
    Running,
    Interrupted,
    Failed,
}

impl SessionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Idle => "idle",
            SessionStatus::Running => "running",
            SessionStatus::Interrupted => "interrupted",
            SessionStatus::Failed => "failed",
        }
    }
}

/// A session as listed in the sidebar. Times are milliseconds since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub session_id: String,
    pub title: String,
    pub created_at: u64,
    pub updated_at: u64,
    pub status: SessionStatus,
    pub message_count: u64,
    pub last_seq: Seq,
    /// What the session's model calls used in all, every branch counted; absent before the first counted call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    /// The agent the session runs on, for life (`GET /api/agents` lists them); absent until it is bound (at the
    /// session's creation or by its first send) and for sessions from before agents had names, which run on the
    /// server's default agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// `GET /api/sessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionList {
    pub sessions: Vec<SessionSummary>,
}

/// `POST /api/sessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CreateSessionRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The agent the session runs on, for life [default: bound by the session's first send].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// One of `agent`'s own conversations (an `id` of `GET /api/agents/{name}/conversations`): the session opens it,
    /// its messages replayed, and goes on with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
}

/// `GET /api/agents/{name}/conversations`: the agent's own conversations New chat can open, as the agent orders them
/// (most recent first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentConversations {
    pub conversations: Vec<AgentConversation>,
}

/// One conversation an agent made itself (its own CLI, or another client of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentConversation {
    /// The agent's id of it.
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// When it last changed, in milliseconds since the Unix epoch, where the agent says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<u64>,
    /// The directory it works in.
    pub cwd: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionCreated {
    pub session: SessionSummary,
    pub messages: Vec<ChatMessage>,
}

/// `GET /api/sessions/{id}`: the transcript as the shared reducer builds it from the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionDetail {
    pub session: SessionSummary,
    pub messages: Vec<ChatMessage>,
    pub last_seq: Seq,
    /// The assistant message of a run still in progress, as far as it has streamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<ChatMessage>,
    /// The plan the latest `plan` frame left, so a reload still offers its decision (`pendingDecision`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<ChatPlanState>,
    /// The branches not shown, once a message was edited or an answer regenerated; `messages` is the shown one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branches: Option<BranchTree>,
    /// What the session's agent offers (its commands and options), as its latest `agent_options` frame said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_options: Option<AgentOptionsFrame>,
}

/// The conversation tree beside the shown branch (DESIGN §11): enough to rebuild it and to switch branches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct BranchTree {
    /// The messages off the shown branch, each after its parent.
    pub shelved: Vec<ShelvedMessage>,
    /// Every message with more than one child (or the session's start, without `parentId`).
    pub forks: Vec<Fork>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShelvedMessage {
    /// Absent for a first message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    pub message: ChatMessage,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fork {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// In the order they were made: the order of "‹ 1/3 ›".
    pub children: Vec<String>,
    /// The child this message shows (or would show, off the shown branch).
    pub shown: String,
}

/// `POST /api/sessions/{id}/restore`: put the workspace's files back as they were before `messageId` ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoreRequest {
    pub message_id: String,
}

/// What a restore did, path by path (relative to the workspace).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoreResponse {
    /// Changed since, now as they were.
    pub changed: Vec<String>,
    /// Created since, now gone.
    pub removed: Vec<String>,
    /// Deleted since, now back.
    pub recreated: Vec<String>,
    /// The checkpoint of the files just before the restore.
    pub backup: String,
    /// Left alone because no checkpoint holds them (`.gitignore`d paths are not listed).
    pub skipped: Vec<SkippedFile>,
}

/// `GET /api/sessions/{id}/changes/{key}`: what the run with checkpoint `key` changed, with its unified diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangesResponse {
    pub files: Vec<ChangedFile>,
    pub additions: u32,
    pub deletions: u32,
    /// Git's unified diff of every changed file (`diff --git a/… b/…` headers), cut at a line end past 1 MiB.
    pub diff: String,
    /// The diff was cut: `files` still lists every file.
    pub truncated: bool,
    /// Files either checkpoint left out (over the size limit, nested repositories): not in `files`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedFile>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
}

/// `POST /api/sessions/{id}/fork`: a new session holding the branch up to `messageId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkRequest {
    pub message_id: String,
}

/// The session a fork made (201).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkResponse {
    pub session: SessionSummary,
    /// A fork at a user message holds what came before it and hands its text back, for the new session's composer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft: Option<String>,
    pub workspace: ForkedWorkspace,
}

/// What the fork works on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ForkedWorkspace {
    /// Every session works in the one `--workspace`: the fork shares its files with the session it came from.
    Shared,
    /// A copy of the session's workspace. `restored` is what the copy then had put back to stand as it stood at
    /// the fork's point; absent, the copy is the files as they are now (the fork is at the latest point, or no
    /// checkpoint is kept of that point).
    Copied {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        restored: Option<RestoreResponse>,
    },
}

/// `POST /api/sessions/{id}/agent-option`: set one of the agent's options (`agent_options` lists them) to one of its
/// values. Answered once the agent took it, or, while a run goes, once the run's loop has it to send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentOptionRequest {
    pub config_id: String,
    pub value: String,
}

/// `POST /api/sessions/{id}/branch`: show the branch through `messageId` (down to its last message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShowBranchRequest {
    pub message_id: String,
}

/// `PATCH /api/sessions/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenameSessionRequest {
    pub title: String,
}

/// `GET /api/health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HealthResponse {
    pub status: String,
    pub version: String,
    pub runtime: String,
}

/// `GET /api/models`: the models `POST /api/chat` may name as `model`; the first is the default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelsResponse {
    /// The name of the model used when a request names none.
    pub default: String,
    pub models: Vec<ModelInfo>,
    /// Why a send to a session on the default agent cannot carry `rerun` (its runtime cannot branch); absent when
    /// it can. `GET /api/agents` says it of every agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_unavailable: Option<String>,
    /// How much a message may carry, so the composer can refuse a file before uploading it.
    #[serde(default)]
    pub attachment_limits: AttachmentLimits,
}

/// `GET /api/agents`: the agents a session can run on, in the order New chat lists them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentsResponse {
    /// The agent of a session that names none.
    pub default: String,
    pub agents: Vec<AgentInfo>,
}

/// One agent the server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInfo {
    /// What sessions, sends and the page call it (`agent`, `pi`, `opencode`).
    pub name: String,
    /// The models a send to this agent may name as `model`, for the built-in agent the names of
    /// `GET /api/models`; absent for an agent that picks its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<String>>,
    /// Why this agent cannot edit or regenerate messages, if it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_unavailable: Option<String>,
    /// Why this agent cannot compact its conversation (`/compact`), if it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact_unavailable: Option<String>,
    /// Why messages sent while this agent works do not steer it (they wait for its next prompt), if they do not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steer_unavailable: Option<String>,
    /// Why New chat cannot open this agent's own conversations, if it cannot; absent, it may (the agent itself
    /// may still say it lists none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_unavailable: Option<String>,
}

/// The size limits of `POST /api/attachments` and of one message's attachments, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentLimits {
    pub per_file: u64,
    pub per_message: u64,
    pub files_per_message: u32,
}

impl Default for AttachmentLimits {
    /// What a server allows unless told otherwise: photos from a phone, a few source files.
    fn default() -> AttachmentLimits {
        AttachmentLimits { per_file: 5 << 20, per_message: 20 << 20, files_per_message: 10 }
    }
}

impl AttachmentLimits {
    /// Why a file of `size` bytes cannot be attached, if it cannot: the same words on the page and the server.
    pub fn file_refused(&self, name: &str, size: u64) -> Option<String> {
        match size {
            0 => Some(format!("{name} is empty")),
            size if size > self.per_file => {
                Some(format!("{name} is {}; a file may be at most {}", byte_size(size), byte_size(self.per_file)))
            }
            _ => None,
        }
    }

    /// Why a message cannot carry these files, if it cannot: too many, or too much together.
    pub fn message_refused(&self, count: usize, total: u64) -> Option<String> {
        if count > self.files_per_message as usize {
            return Some(format!("a message may carry at most {} files; this one has {count}", self.files_per_message));
        }
        (total > self.per_message).then(|| {
            format!(
                "a message's attachments may come to at most {}; these come to {}",
                byte_size(self.per_message),
                byte_size(total)
            )
        })
    }
}

/// A size as people read it: `512 B`, `14.2 KiB`, `5 MiB`.
pub fn byte_size(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let value = bytes as f64;
    let (amount, unit) = match bytes {
        0..1024 => return format!("{bytes} B"),
        1024..1_048_576 => (value / KIB, "KiB"),
        _ => (value / (KIB * KIB), "MiB"),
    };
    let text = fixed(amount, 1);
    format!("{} {unit}", text.strip_suffix(".0").unwrap_or(&text))
}

/// `value` with `places` decimals, as `format!("{value:.places$}")` shows it but rounding halves away from zero.
/// The page's numbers go through this: Rust's float formatting is about 6 KB of the page's WASM.
pub fn fixed(value: f64, places: u32) -> String {
    let scale = 10u64.pow(places);
    let scaled = (value.abs() * scale as f64).round() as u64;
    let sign = if value < 0.0 && scaled != 0 { "-" } else { "" };
    let (whole, fraction) = (scaled / scale, scaled % scale);
    match places {
        0 => format!("{sign}{whole}"),
        places => format!("{sign}{whole}.{fraction:0width$}", width = places as usize),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    /// What to show and to send as `model`.
    pub name: String,
    /// `scripted`, `openai` or `anthropic`.
    pub provider: String,
    /// The id the provider knows the model by.
    pub model: String,
    pub context_window: u64,
    /// The model reads images; a message with images sent to one that does not ends in an error.
    pub images: bool,
}

/// `GET /api/files?q=…&session=…`: the workspace's files and directories that match a typed `@` mention, best
/// first, at most a screenful.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilesResponse {
    pub files: Vec<FileMatch>,
}

/// One path of the workspace, relative to its root with `/` between names (a directory's ends in `/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileMatch {
    pub path: String,
    /// The matched characters of `path`, as `char` indexes, ascending (for highlighting).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub positions: Vec<usize>,
}

/// `GET /api/search?q=…&limit=…`: sessions found by their title and the text of their messages, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResponse {
    pub hits: Vec<SearchHit>,
}

/// One message (or a session's title) that matches every word of a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    pub session_id: String,
    /// The session's title as it is now.
    pub title: String,
    /// The `seq` of the logged `message` or `done` frame that matched; absent when the title matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    /// The id of the matched message, to scroll to; absent when the title matched. It also names the branch the
    /// message is on (an edit or a regeneration keeps the version it replaced, found under its own id):
    /// `POST /api/sessions/{id}/branch` with it shows that branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// A short window of the matched text, cut into plain and highlighted pieces: text, never markup.
    pub snippet: Vec<SnippetPiece>,
    /// Higher is better; comparable only within one answer.
    pub rank: f64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnippetPiece {
    pub text: String,
    /// True for a word that matched the query.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub highlight: bool,
}

/// Every error answered before a stream starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub message: String,
}

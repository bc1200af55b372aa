//! The `Runtime` seam (DESIGN §9): what the server drives a run through. The built-in agent, pi and test runtimes
//! implement it; the server builds one from its configuration and never names it after that. A runtime emits agent
//! events only: it builds no frame.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::attached::{AttachedBytes, AttachedFile};
use super::event::AgentEvent;
use crate::chat_state::ChatSnapshot;
use crate::protocol::{AgentMode, PlanAction};

/// What the runtime's async steps return.
pub type RuntimeFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a run's events go.
pub type EventSender = mpsc::UnboundedSender<AgentEvent>;

/// What a runtime is given to open its side of a session.
#[derive(Debug, Clone)]
pub struct SessionSetup {
    pub session_id: String,
    /// The session's working directory; it exists.
    pub workspace: PathBuf,
    /// The transcript so far, for a runtime that keeps the model's view of the conversation itself.
    pub transcript: ChatSnapshot,
    /// The bytes of the files the transcript's user messages attach, for the same runtime.
    pub attached: AttachedBytes,
    /// The runtime's own reference to the conversation of the branch the run goes on, as the session's log named it.
    pub conversation: Option<ConversationRef>,
    /// How much of that conversation the run starts from.
    pub start: ConversationStart,
}

/// What a runtime that keeps the conversation itself needs to find it again, opaque to everything else: pi's session
/// file, an ACP agent's session id. The log keeps it on `start` and `done` frames (`sessionFile`), per branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationRef(String);

impl ConversationRef {
    pub fn new(reference: impl Into<String>) -> ConversationRef {
        ConversationRef(reference.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// How much of its conversation a runtime that keeps one (pi) starts from. A runtime that takes its
/// conversation from `SessionSetup::transcript` finds the same cut made there.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ConversationStart {
    /// All of it: the branch goes on.
    #[default]
    Whole,
    /// What came before one of its user messages: an edit or a regeneration of that message.
    BeforeUserMessage(UserMessageAt),
}

/// A user message of the conversation, by its place among the user messages (steers and follow-ups count), and its
/// text, which confirms the place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserMessageAt {
    pub index: usize,
    pub text: String,
}

/// One run as the user asked for it.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub prompt: String,
    /// The files attached to the prompt, in the order the user added them.
    pub files: Vec<AttachedFile>,
    pub options: RunOptions,
    /// The model the request named, among those the server offers; `None` for the default.
    pub model: Option<String>,
    /// A command to carry out instead of answering `prompt` (which is then the command's argument).
    pub command: Option<crate::protocol::ChatCommand>,
}

/// What the runtime tells of a run as it opens, for the run's `start` frame.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunOpening {
    pub conversation: Option<ConversationRef>,
    /// The runtime could not reopen the conversation it had and starts over without it.
    pub session_reset: bool,
}

/// How a run ended, as the runtime saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// The runtime is idle with nothing queued; `conversation` names the conversation where it keeps one.
    Settled { conversation: Option<ConversationRef> },
    /// The runtime failed (died, hung, sent malformed data): the run ends with an `error` of this message and code.
    Failed { message: String, code: &'static str },
}

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("preparing the workspace {path}: {source}")]
    Workspace { path: String, source: std::io::Error },
    #[error("the agent runtime could not fork the conversation: {0}")]
    Fork(String),
    /// The runtime cannot do what was asked (list or open its own conversations); why, in words for the user.
    #[error("{0}")]
    Unavailable(String),
    /// The agent has no conversation of that id in the directory asked about.
    #[error("{0}")]
    UnknownConversation(String),
    /// The agent failed while listing or replaying (it exited, hung, or answered with an error).
    #[error("{0}")]
    Agent(String),
}

/// One of an agent's own conversations, as it lists them: the ones its own CLI (or another client) made in the
/// directory chatwire's session would work in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnConversation {
    /// The agent's id of it, which becomes the imported session's `ConversationRef`.
    pub id: String,
    pub title: Option<String>,
    /// When it last changed, in milliseconds since the Unix epoch, where the agent says.
    pub updated_at: Option<u64>,
    /// The directory it works in.
    pub cwd: String,
}

/// One of the agent's own conversations as the agent replayed it, to be logged into a new chatwire session.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayedConversation {
    /// What the imported session's runs reopen.
    pub conversation: ConversationRef,
    pub title: Option<String>,
    /// Its turns in order: each a user's prompt and the agent events of the answer.
    pub turns: Vec<ReplayedTurn>,
}

/// One turn of a replayed conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayedTurn {
    /// What the user wrote; `None` for what the agent said before any user message.
    pub prompt: Option<String>,
    /// The answer as a run of agent events, `agent_start` to `agent_end`.
    pub events: Vec<AgentEvent>,
}

/// Why an agent's option could not be set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    #[error("the agent offers no option `{id}`{}", listed(" (it offers: ", offered, ")"))]
    UnknownOption { id: String, offered: Vec<String> },
    #[error("the agent's option `{id}` has no value `{value}`{}", listed(" (its values: ", choices, ")"))]
    UnknownValue { id: String, value: String, choices: Vec<String> },
    /// The runtime has no options of the agent's to set (the built-in agent and pi take the model per message).
    #[error("{0}")]
    Unsupported(String),
    /// The agent could not be reached, or refused.
    #[error("{0}")]
    Agent(String),
}

fn listed(before: &str, items: &[String], after: &str) -> String {
    if items.is_empty() { String::new() } else { format!("{before}{}{after}", items.join(", ")) }
}

/// One option to set on the agent while a run goes (it waits in `RunControl::options` for the run's loop).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionSetting {
    pub id: String,
    pub value: String,
}

/// What a runtime can do, in one value the server reads instead of asking capability by capability.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// Edits and regenerations: runs that start from part of the conversation (`SessionSetup::start`).
    pub rerun: Availability,
    /// Compacting the conversation when the user asks (`/compact`).
    pub compact: Availability,
    /// Where the model's view of the conversation comes from.
    pub conversation: ConversationSource,
    /// Steering: a message sent while a run goes reaches the agent before its next model call. Where it does not,
    /// the message waits for the turn's end and is the agent's next prompt, and the page says so.
    pub steering: Availability,
}

/// Whether the user can ask for something, and if not, why (said to them as it is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    Available,
    Unavailable(String),
}

impl Availability {
    /// Why it is unavailable, if it is.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Availability::Available => None,
            Availability::Unavailable(why) => Some(why),
        }
    }
}

/// Where a runtime's model finds the conversation so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConversationSource {
    /// Rebuilt from `SessionSetup::transcript` for every session it opens, with the bytes of the attached files in
    /// `SessionSetup::attached`.
    Transcript,
    /// Kept by the runtime itself and found again by `SessionSetup::conversation`.
    OwnedByRuntime,
}

/// An agent runtime: opens one `RuntimeSession` per chat session.
pub trait Runtime: Send + Sync + 'static {
    /// What it is called: `agent`, `pi`, or an ACP agent's configured name.
    fn name(&self) -> &str;

    fn capabilities(&self) -> Capabilities;

    /// The names of the models a send may pick (`RunRequest::model`), for `GET /api/agents`; `None` for a runtime
    /// that picks its own.
    fn models(&self) -> Option<Vec<String>> {
        None
    }

    fn open_session(&self, setup: SessionSetup) -> Result<Box<dyn RuntimeSession>, RuntimeError>;

    /// Whether New chat can open one of the agent's own conversations, for sessions whose workspace is
    /// `shared_workspace` (the server's `--workspace`, `None` when each session has a directory of its own); if not,
    /// why. `Available` may still meet an agent that says at start that it lists none.
    fn own_conversations(&self, shared_workspace: Option<&Path>) -> Availability {
        let _ = shared_workspace;
        Availability::Unavailable(format!("the agent {} has no conversations of its own to open", self.name()))
    }

    /// The agent's own conversations in the directory a new session would work in, most recent first as the agent
    /// orders them.
    fn list_conversations<'a>(
        &'a self,
        shared_workspace: Option<&'a Path>,
    ) -> RuntimeFuture<'a, Result<Vec<OwnConversation>, RuntimeError>> {
        let why = self.own_conversations(shared_workspace).reason().unwrap_or_default().to_owned();
        Box::pin(std::future::ready(Err(RuntimeError::Unavailable(why))))
    }

    /// Replays the agent's own conversation `id` for a new session that works in `workspace`.
    fn replay_conversation<'a>(
        &'a self,
        id: &'a str,
        workspace: &'a Path,
    ) -> RuntimeFuture<'a, Result<ReplayedConversation, RuntimeError>> {
        let _ = (id, workspace);
        let why = self.own_conversations(None).reason().unwrap_or_default().to_owned();
        Box::pin(std::future::ready(Err(RuntimeError::Unavailable(why))))
    }

    /// Makes the runtime's own copy of the conversation for a session forked from `from`: `from.conversation` cut
    /// at `from.start`, to go on in `workspace`. `None` for a runtime that keeps none (it reads the transcript) or
    /// when the cut leaves nothing.
    fn fork_conversation<'a>(
        &'a self,
        from: SessionSetup,
        workspace: &'a Path,
    ) -> RuntimeFuture<'a, Result<Option<ConversationRef>, RuntimeError>>;
}

/// A runtime's side of one session: its conversation, its process. Runs on it one at a time.
pub trait RuntimeSession: Send {
    /// Gets ready for the next run (starts a process if none is running) and says what its `start` frame tells.
    fn open_run(&mut self) -> RuntimeFuture<'_, RunOpening>;

    /// Drives one run until the runtime has settled or failed. Every step goes to `events`; messages to steer or
    /// follow up with, answers, approval decisions and Stop arrive through `control`.
    fn run<'a>(
        &'a mut self,
        request: RunRequest,
        control: &'a RunControl,
        events: &'a EventSender,
    ) -> RuntimeFuture<'a, RunEnd>;

    /// Ends what the session holds (a process and the tools it started); the session is being deleted.
    fn close(&mut self) -> RuntimeFuture<'_, ()>;

    /// Sets one of the agent's options between runs (starting the agent if it is not running), and tells what it
    /// then offers through `events`. During a run the setting goes through `RunControl::options` instead.
    fn set_option<'a>(
        &'a mut self,
        setting: OptionSetting,
        events: &'a EventSender,
    ) -> RuntimeFuture<'a, Result<(), OptionError>> {
        let _ = (setting, events);
        Box::pin(std::future::ready(Err(OptionError::Unsupported("this agent has no options to set".into()))))
    }
}

/// How one run goes: the mode of `POST /api/chat` and what to do with the plan.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOptions {
    pub mode: AgentMode,
    pub plan_action: Option<PlanAction>,
}

impl RunOptions {
    /// The mode the run works in: `execute` carries the plan out as the agent, `refine` plans again.
    pub fn effective_mode(&self) -> AgentMode {
        match self.plan_action {
            Some(PlanAction::Execute) => AgentMode::Agent,
            Some(PlanAction::Refine) => AgentMode::Plan,
            None => self.mode,
        }
    }
}

/// Messages waiting for the running agent.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Queues {
    /// Delivered after the current tool calls, before the next model call.
    pub steering: VecDeque<String>,
    /// Delivered when the agent would otherwise stop.
    pub follow_up: VecDeque<String>,
    /// Set once the agent has decided to stop: nothing queued after that could be delivered.
    pub closed: bool,
}

/// Handles a run shares with the requests that steer, answer or stop it.
#[derive(Clone, Default)]
pub struct RunControl {
    pub cancel: CancellationToken,
    pub queues: Arc<Mutex<Queues>>,
    /// Questions waiting for the user, by tool call id.
    pub questions: Arc<Mutex<HashMap<String, oneshot::Sender<String>>>>,
    /// Tool calls waiting for the user's approval, by tool call id.
    pub approvals: Arc<Mutex<HashMap<String, oneshot::Sender<ApprovalDecision>>>>,
    /// Woken when a message is queued, for runtimes that pass queued messages on as they come (pi), and when an
    /// option is to be set.
    pub wake: Arc<tokio::sync::Notify>,
    /// The agent's options to set as soon as the run's loop can (an ACP agent takes them during a turn).
    pub options: Arc<Mutex<VecDeque<OptionSetting>>>,
}

impl RunControl {
    /// Queues a message for the running agent and reports the new queue; false (and nothing queued) when the
    /// agent has already decided to stop, so the caller starts a new run instead of losing the message.
    #[must_use]
    pub fn enqueue(&self, text: String, steer: bool, events: &mpsc::UnboundedSender<AgentEvent>) -> bool {
        let mut queues = self.queues.lock().expect("the queue lock is never poisoned");
        if queues.closed {
            return false;
        }
        if steer {
            queues.steering.push_back(text)
        } else {
            queues.follow_up.push_back(text)
        }
        let _ = events.send(queue_event(&queues));
        self.wake.notify_one();
        true
    }

    /// True once the agent has decided to stop: the run is ending and takes no more messages.
    pub fn is_closing(&self) -> bool {
        self.queues.lock().expect("the queue lock is never poisoned").closed
    }

    /// Delivers the user's decision on a call waiting for approval; false when no such call waits (any more), so
    /// a second decision never runs a tool twice.
    pub fn decide(&self, tool_call_id: &str, decision: impl Into<ApprovalDecision>) -> bool {
        let waiting = self.approvals.lock().expect("the approval lock is never poisoned").remove(tool_call_id);
        waiting.is_some_and(|sender| sender.send(decision.into()).is_ok())
    }

    /// Queues one of the agent's options for the running loop to set.
    pub fn set_option(&self, setting: OptionSetting) -> bool {
        self.options.lock().expect("the option lock is never poisoned").push_back(setting);
        self.wake.notify_one();
        true
    }

    /// Delivers the user's answer to a pending question; false when no such question waits.
    pub fn answer(&self, tool_call_id: &str, answer: String) -> bool {
        let waiting = self.questions.lock().expect("the question lock is never poisoned").remove(tool_call_id);
        waiting.is_some_and(|sender| sender.send(answer).is_ok())
    }
}

/// The user's decision on a call waiting for approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalDecision {
    pub approve: bool,
    /// The option the user chose among the ones the agent offered (`ChatToolPart::approval_options`); `None` for a
    /// plain Approve or Deny, which an agent with options takes as its allow-once or reject-once.
    pub option_id: Option<String>,
}

impl From<bool> for ApprovalDecision {
    fn from(approve: bool) -> ApprovalDecision {
        ApprovalDecision { approve, option_id: None }
    }
}

pub(super) fn queue_event(queues: &Queues) -> AgentEvent {
    AgentEvent::QueueUpdate {
        steering: queues.steering.iter().cloned().collect(),
        follow_up: queues.follow_up.iter().cloned().collect(),
    }
}

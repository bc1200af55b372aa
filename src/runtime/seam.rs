//! The `Runtime` seam (DESIGN §9): what the server drives a run through. The built-in agent, pi and test runtimes
//! implement it; the server builds one from its configuration and never names it after that. A runtime emits agent
//! events only: it builds no frame.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;

use tokio::sync::mpsc;

use super::agent::{RunControl, RunOptions};
use super::attached::{AttachedBytes, AttachedFile};
use super::event::AgentEvent;
use crate::chat_state::ChatSnapshot;

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
    /// The runtime's own file of the branch the run goes on (pi's session file), as the session's log named it.
    pub session_file: Option<String>,
    /// How much of `session_file` the run starts from.
    pub start: ConversationStart,
}

/// How much of its conversation file a runtime that keeps one (pi) starts from. A runtime that takes its
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
    pub session_file: Option<String>,
    /// The runtime could not reopen the conversation it had and starts over without it.
    pub session_reset: bool,
}

/// How a run ended, as the runtime saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// The runtime is idle with nothing queued; `session_file` names the conversation's file where it keeps one.
    Settled { session_file: Option<String> },
    /// The runtime failed (died, hung, sent malformed data): the run ends with an `error` of this message and code.
    Failed { message: String, code: &'static str },
}

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("preparing the workspace {path}: {source}")]
    Workspace { path: String, source: std::io::Error },
    #[error("the agent runtime could not fork the conversation: {0}")]
    Fork(String),
}

/// An agent runtime: opens one `RuntimeSession` per chat session.
pub trait Runtime: Send + Sync + 'static {
    /// What `/api/health` calls it.
    fn name(&self) -> &'static str;

    fn open_session(&self, setup: SessionSetup) -> Result<Box<dyn RuntimeSession>, RuntimeError>;

    /// Why this runtime cannot run an edit or a regeneration, if it cannot: those runs start from part of the
    /// conversation (`SessionSetup::start`).
    fn rerun_unsupported(&self) -> Option<&'static str>;

    /// Why this runtime cannot compact the conversation when the user asks (`/compact`), if it cannot.
    fn compact_unsupported(&self) -> Option<&'static str>;

    /// Whether the runtime builds the model's view from `SessionSetup::transcript` (and so needs the bytes of its
    /// attached files in `SessionSetup::attached`) rather than keeping a conversation of its own.
    fn reads_transcript(&self) -> bool;

    /// Makes the runtime's own file of the conversation for a session forked from `from`: `from.session_file` cut
    /// at `from.start`, to go on in `workspace`. `None` for a runtime that keeps no file (it reads the transcript)
    /// or when the cut leaves nothing.
    fn fork_conversation<'a>(
        &'a self,
        from: SessionSetup,
        workspace: &'a Path,
    ) -> RuntimeFuture<'a, Result<Option<String>, RuntimeError>>;
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
}

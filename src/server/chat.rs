//! The chat core the HTTP handlers call: sessions, sends, runs and the requests that steer them. Runs live here,
//! not in HTTP responses; a response only tails a session's log.
//!
//! The rooms: `sessions` (each session's live state and the log every frame goes through), `send` (`POST /api/chat`,
//! serialized per session and idempotent by request id), `run` (the task that drives one run), `lease` (this
//! instance's hold on its runs, and the end of runs whose instance is gone), `relay` (controls for a run another
//! instance owns) and `wake` (other instances' appends reaching this one's viewers).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::relay::Control;
use super::sessions::SessionRegistry;
use crate::protocol::*;
use crate::runtime::Runtime;
use crate::runtime::models::ModelCatalog;
use crate::runtime::registry::{AgentEntry, Agents};
use crate::store::{RunStatus, Store, StoreError, Wake, WakeSink};

pub use super::sessions::{SessionLive, Tail};

pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

pub(super) fn new_id(kind: &str) -> String {
    format!("{kind}-{}", uuid::Uuid::new_v4().simple())
}

#[derive(Debug, Clone)]
pub struct ChatConfig {
    pub data_dir: PathBuf,
    /// One directory for every session; `None`: a fresh directory per session under the data dir.
    pub workspace: Option<PathBuf>,
    /// Quiet streams get a keepalive this often.
    pub keepalive: Duration,
    /// How long a run's lease lasts unless renewed: an instance that dies has its runs ended by another within it.
    pub lease_ttl: Duration,
    /// Files larger than this are left out of the workspace checkpoints taken before each run; 0 turns them off.
    pub checkpoint_file_limit: u64,
    pub attachments: crate::protocol::AttachmentLimits,
}

/// Why the chat core refused or failed a request; the HTTP edge turns each into a status and `{ message }`.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    #[error("no session {0}")]
    UnknownSession(String),
    #[error("`message` must not be empty")]
    EmptyMessage,
    #[error("`title` must not be empty")]
    EmptyTitle,
    #[error("unknown model {requested:?}; the configured models are: {known}")]
    UnknownModel { requested: String, known: String },
    #[error("a run is in progress; send with streamingBehavior \"steer\" or \"followUp\", or stop it")]
    RunInProgress,
    #[error("the session has a run in progress; stop it first")]
    SessionBusy,
    #[error("request id {0} was already used with a different body")]
    RequestIdReused(String),
    #[error("the instance running this session's run did not answer in time; try again")]
    OwnerUnreachable,
    #[error("no message {0} in this session")]
    UnknownMessage(String),
    #[error("message {0} is not a user message: only what the user wrote can be edited or answered again")]
    NotAUserMessage(String),
    #[error("{0}")]
    CannotBranch(String),
    #[error("{0} is a run of its own: send it without streamingBehavior, rerun or planAction, once the run has ended")]
    CommandMixed(&'static str),
    #[error("{0}")]
    Unsupported(String),
    #[error("`rerun` cannot be combined with streamingBehavior: edit or regenerate once the run has ended")]
    RerunWhileStreaming,
    #[error("a run is in progress: stop it before putting files back")]
    RestoreWhileRunning,
    #[error(
        "no checkpoint of the files before message {0}: one is taken when a message starts a run, so not for a \
         message sent while a run was going, nor on a server with checkpoints off"
    )]
    NoCheckpoint(String),
    #[error("the fork's conversation could not be made: {0}")]
    Fork(String),
    #[error(
        "no record of what the run {0} changed: runs that started before checkpoints existed, runs still going and \
         servers with checkpoints off have none"
    )]
    NoChanges(String),
    #[error("{0}")]
    Checkpoint(#[from] crate::checkpoints::CheckpointError),
    #[error("preparing the workspace {path}: {source}")]
    Workspace { path: String, source: std::io::Error },
    #[error("{0}")]
    Attachment(#[from] super::attachments::AttachmentError),
    #[error("attachments start a run of their own: send them once the run has ended, or stop it")]
    AttachmentsWhileStreaming,
    #[error("no agent {requested:?}; the agents are: {offered}")]
    UnknownAgent { requested: String, offered: String },
    #[error(
        "this session runs on {agent}, not {requested}: a session keeps its agent for life; start a new chat to use \
         {requested}"
    )]
    AgentMismatch { agent: String, requested: String },
    #[error(
        "this session runs on {agent}, which this server does not offer (the agents are: {offered}); start the \
         server with {agent} again to go on with it, or start a new chat"
    )]
    AgentGone { agent: String, offered: String },
    #[error("an approval needs `approve` (true or false) or the `optionId` of one of the agent's options")]
    NoDecision,
    #[error("no option {requested:?} for this call; the agent offers: {offered}")]
    UnknownApprovalOption { requested: String, offered: String },
    #[error("option {option:?} {} the call, which contradicts `approve`", if *allows { "allows" } else { "rejects" })]
    ApprovalContradicts { option: String, allows: bool },
    #[error("{0}")]
    Option(#[from] crate::runtime::seam::OptionError),
    #[error("{0}")]
    UnknownConversation(String),
    /// The agent failed while listing or replaying its own conversations.
    #[error("{0}")]
    AgentFailed(String),
    #[error("storage failed: {0}")]
    Store(#[from] StoreError),
}

impl From<crate::runtime::seam::RuntimeError> for ChatError {
    fn from(error: crate::runtime::seam::RuntimeError) -> ChatError {
        match error {
            crate::runtime::seam::RuntimeError::Workspace { path, source } => ChatError::Workspace { path, source },
            crate::runtime::seam::RuntimeError::Fork(why) => ChatError::Fork(why),
            crate::runtime::seam::RuntimeError::Unavailable(why) => ChatError::Unsupported(why),
            crate::runtime::seam::RuntimeError::UnknownConversation(why) => ChatError::UnknownConversation(why),
            crate::runtime::seam::RuntimeError::Agent(why) => ChatError::AgentFailed(why),
        }
    }
}

pub struct Chat {
    pub store: Arc<dyn Store>,
    /// The agents runs go through, by name: the built-in agent, pi, ACP agents, or a test's.
    pub agents: Agents,
    /// The models the built-in agent can run, by name (`GET /api/models`).
    pub models: Arc<ModelCatalog>,
    pub config: ChatConfig,
    pub(super) sessions: SessionRegistry,
    /// Cancelled when the server shuts down: every stream then ends, and its viewer resumes later by `seq`.
    pub streams_end: tokio_util::sync::CancellationToken,
    /// This instance's name as the owner of run leases: new with every start, so a restarted instance never
    /// mistakes a dead predecessor's runs for its own.
    pub instance: String,
    /// Woken when controls were posted for this instance's runs.
    pub(super) controls_posted: tokio::sync::Notify,
    /// Counts the answers to relayed controls, so that a waiting relay looks again.
    pub(super) replies: tokio::sync::watch::Sender<u64>,
    /// Woken when the wake-up listener (re)connected: every watched session is read again.
    pub(super) resync: tokio::sync::Notify,
    /// One checkpoint store per workspace (a shared `--workspace` has one for every session), made when first used.
    pub(super) checkpoints: std::sync::Mutex<std::collections::HashMap<PathBuf, Arc<crate::checkpoints::Checkpoints>>>,
    /// The paths of recently walked workspaces, which the composer's `@` asks for on every keystroke.
    pub(super) file_walks: super::files::WalkCache,
}

impl Chat {
    /// Opens the chat over a store: runs whose instance is gone are ended, and this instance starts keeping its
    /// leases, ending dead instances' runs, and (on a shared store) listening to the other instances.
    pub async fn open(
        store: Arc<dyn Store>,
        agents: Agents,
        models: Arc<ModelCatalog>,
        config: ChatConfig,
    ) -> Result<Arc<Chat>, ChatError> {
        // The sink is made before the chat (the store says whether it listens when it is given one), so it finds the
        // chat through a cell set just after; wake-ups before that concern no session yet.
        let cell: Arc<std::sync::OnceLock<std::sync::Weak<Chat>>> = Default::default();
        let sink: WakeSink = Arc::new({
            let cell = cell.clone();
            move |wake| match cell.get().map(std::sync::Weak::upgrade) {
                None => true,
                Some(Some(chat)) => {
                    chat.woken(wake);
                    true
                }
                Some(None) => false,
            }
        });
        // Whether other instances write to the store too: then controls are relayed and watched sessions polled.
        let shared = store.listen(sink);
        let chat = Arc::new(Chat {
            sessions: SessionRegistry::new(store.clone()),
            store,
            agents,
            models,
            config,
            streams_end: Default::default(),
            instance: new_id("instance"),
            controls_posted: Default::default(),
            checkpoints: Default::default(),
            file_walks: Default::default(),
            replies: tokio::sync::watch::channel(0).0,
            resync: Default::default(),
        });
        cell.set(Arc::downgrade(&chat)).expect("the cell is set once, here");
        chat.end_stale_runs().await?;
        super::lease::spawn(&chat);
        if shared {
            super::relay::spawn(&chat);
            super::wake::spawn(&chat);
        }
        Ok(chat)
    }

    /// Ends the run `run_id` of a session whose lease expired, once, with one interrupted error (or as its logged
    /// terminal frame says, for a store written before the two were one transaction); false when another instance
    /// got there first or the run had ended.
    pub(super) async fn end_stale_run(&self, session_id: &str, run_id: &str) -> Result<bool, ChatError> {
        let Some(lease) = self.store.take_over(run_id, session_id, &self.instance, self.config.lease_ttl).await? else {
            return Ok(false);
        };
        match self.store.run_terminal_kind(session_id, run_id).await?.as_deref() {
            Some(kind) => {
                let status = if kind == "done" { RunStatus::Done } else { RunStatus::Failed };
                self.store.finish_run(run_id, session_id, status, now_ms()).await?;
            }
            None => {
                let frame = ChatFrame::Error(ErrorFrame {
                    seq: None,
                    message: "the server running this run stopped before it finished".into(),
                    run_id: Some(run_id.to_owned()),
                    code: Some("interrupted".into()),
                });
                let live = self.live(session_id).await?;
                self.sessions.log(&live, Some(run_id), &lease, vec![frame], Some(RunStatus::Interrupted)).await?;
                tracing::warn!(run = %run_id, session = %session_id, "ended a run whose server stopped");
            }
        }
        Ok(true)
    }

    /// Ends every run whose lease expired.
    pub(super) async fn end_stale_runs(&self) -> Result<(), ChatError> {
        for run in self.store.stale_runs().await? {
            self.end_stale_run(&run.session_id, &run.run_id).await?;
        }
        Ok(())
    }

    /// A wake-up from the store (another instance appended, posted a control, or answered one).
    fn woken(&self, wake: Wake) {
        match wake {
            Wake::Appended { session_id, last_seq } => match self.sessions.known(&session_id) {
                Some(live) => live.bump(last_seq),
                None => self.sessions.note_growth(),
            },
            Wake::Control { owner } => {
                if owner == self.instance {
                    self.controls_posted.notify_one();
                }
            }
            Wake::Replied { .. } => {
                self.replies.send_modify(|count| *count += 1);
            }
            Wake::Resync => {
                self.resync.notify_one();
                self.sessions.note_growth();
                self.controls_posted.notify_one();
                self.replies.send_modify(|count| *count += 1);
            }
        }
    }

    /// The live state of an existing session.
    pub async fn live(&self, session_id: &str) -> Result<Arc<SessionLive>, ChatError> {
        self.sessions.live(session_id).await
    }

    /// The agent the session runs on: its own, or the default for a session that has none yet. Never another: a
    /// session whose agent this server does not offer is refused (422), not moved to the default.
    pub(super) async fn agent_of(&self, live: &SessionLive) -> Result<AgentEntry, ChatError> {
        // Another instance may have bound the session since this one loaded it.
        if live.agent().is_none()
            && let Some(agent) = self.store.session(live.id()).await?.and_then(|session| session.agent)
        {
            live.set_agent(agent);
        }
        match live.agent() {
            None => Ok(self.agents.default_entry().clone()),
            Some(agent) => self
                .agents
                .get(agent)
                .cloned()
                .ok_or_else(|| ChatError::AgentGone { agent: agent.to_owned(), offered: self.agents.names() }),
        }
    }

    /// The runtime of the agent the session runs on.
    pub(super) async fn runtime_of(&self, live: &SessionLive) -> Result<Arc<dyn Runtime>, ChatError> {
        Ok(self.agent_of(live).await?.runtime)
    }

    /// The agent called `name`, if this server offers it; else the refusal that lists the agents.
    pub(super) fn offered(&self, name: &str) -> Result<&AgentEntry, ChatError> {
        self.agents
            .get(name)
            .ok_or_else(|| ChatError::UnknownAgent { requested: name.to_owned(), offered: self.agents.names() })
    }

    /// Binds the session to the agent a send runs on, if it has none yet: the send's `requested` agent while the
    /// session has no messages, else the default (a session from before agents had names ran on it, and stays on
    /// it from then on, whatever the default becomes). A send that names another agent than the session's is
    /// refused, and so is a session whose agent is no longer offered.
    pub(super) async fn bind_agent(&self, live: &SessionLive, requested: Option<&str>) -> Result<(), ChatError> {
        if let Some(name) = requested {
            self.offered(name)?;
        }
        let mismatch = |agent: &str| match requested {
            Some(requested) if requested != agent => {
                Err(ChatError::AgentMismatch { agent: agent.to_owned(), requested: requested.to_owned() })
            }
            Some(_) | None => Ok(()),
        };
        if live.agent().is_none() {
            let unknown = || ChatError::UnknownSession(live.id().to_owned());
            let session = self.store.session(live.id()).await?.ok_or_else(unknown)?;
            let default = || self.agents.default_entry().name.clone();
            let choice = match session.agent {
                Some(agent) => agent,
                None if session.message_count == 0 => requested.map_or_else(default, str::to_owned),
                None => default(),
            };
            // Checked before binding too: a refused send binds nothing.
            mismatch(&choice)?;
            let bound = self.store.bind_agent(live.id(), &choice).await?.ok_or_else(unknown)?;
            live.set_agent(bound);
        }
        mismatch(live.agent().expect("bound just above, if it was not before"))?;
        self.agent_of(live).await.map(drop)
    }

    /// A new session, bound to `agent` if one is named (else by its first send).
    pub async fn create_session(
        &self,
        title: Option<String>,
        agent: Option<String>,
    ) -> Result<SessionSummary, ChatError> {
        if let Some(name) = &agent {
            self.offered(name)?;
        }
        let title = title.map(|t| t.trim().to_owned()).unwrap_or_default();
        let id = uuid::Uuid::new_v4().to_string();
        Ok(self.store.create_session(&id, &title, agent.as_deref(), now_ms()).await?)
    }

    /// A new session of the id `id` (chosen before, for its workspace), bound to `agent`.
    pub(super) async fn create_session_as(
        &self,
        id: &str,
        title: &str,
        agent: &str,
    ) -> Result<SessionSummary, ChatError> {
        Ok(self.store.create_session(id, title.trim(), Some(agent), now_ms()).await?)
    }

    pub async fn rename(&self, session_id: &str, title: &str) -> Result<SessionSummary, ChatError> {
        let title = title.trim();
        if title.is_empty() {
            return Err(ChatError::EmptyTitle);
        }
        if !self.store.rename_session(session_id, title, now_ms()).await? {
            return Err(ChatError::UnknownSession(session_id.to_owned()));
        }
        self.store.session(session_id).await?.ok_or_else(|| ChatError::UnknownSession(session_id.to_owned()))
    }

    pub async fn delete(&self, session_id: &str) -> Result<(), ChatError> {
        let live = self.live(session_id).await?;
        let held_elsewhere = self.store.lease_holder(session_id).await?.is_some_and(|holder| !holder.expired);
        if live.active_run_id().is_some() || held_elsewhere {
            return Err(ChatError::SessionBusy);
        }
        self.store.delete_session(session_id).await?;
        self.sessions.forget(session_id).await;
        self.forget_checkpoints(session_id).await;
        Ok(())
    }

    /// The transcript, as the shared reducer builds it from the log.
    pub async fn detail(&self, session_id: &str) -> Result<SessionDetail, ChatError> {
        let session =
            self.store.session(session_id).await?.ok_or_else(|| ChatError::UnknownSession(session_id.to_owned()))?;
        let live = self.live(session_id).await?;
        self.sessions.read_transcript(&live, |kept| kept.snapshot.to_detail(session)).await
    }

    /// `POST /api/chat/abort`: true when a run was stopped.
    pub async fn abort(&self, session_id: &str) -> Result<bool, ChatError> {
        self.control(session_id, Control::Stop).await
    }

    /// `POST /api/chat/approval`: false when no such call is waiting for approval (any more). A chosen option must
    /// be one the agent offered for the call, and says by its kind whether the call runs.
    pub async fn decide(&self, session_id: &str, request: &ApprovalRequest) -> Result<bool, ChatError> {
        let approve = match &request.option_id {
            None => request.approve.ok_or(ChatError::NoDecision)?,
            Some(chosen) => {
                let live = self.live(session_id).await?;
                let offered = self
                    .sessions
                    .read_transcript(&live, |kept| {
                        kept.snapshot.tool(&request.tool_call_id).map(|call| call.approval_options.clone())
                    })
                    .await?;
                let Some(offered) = offered else { return Ok(false) };
                let Some(option) = offered.iter().find(|option| &option.option_id == chosen) else {
                    let names: Vec<String> =
                        offered.iter().map(|option| format!("{} ({})", option.option_id, option.name)).collect();
                    return Err(ChatError::UnknownApprovalOption {
                        requested: chosen.clone(),
                        offered: if names.is_empty() { "none: answer with approve".into() } else { names.join(", ") },
                    });
                };
                let allows = option.kind.allows();
                if request.approve.is_some_and(|approve| approve != allows) {
                    return Err(ChatError::ApprovalContradicts { option: chosen.clone(), allows });
                }
                allows
            }
        };
        let control = Control::Decide {
            tool_call_id: request.tool_call_id.clone(),
            approve,
            option_id: request.option_id.clone(),
        };
        self.control(session_id, control).await
    }

    /// `POST /api/chat/question`: false when no such question is waiting.
    pub async fn answer(
        &self,
        session_id: &str,
        tool_call_id: &str,
        answer: &QuestionAnswer,
    ) -> Result<bool, ChatError> {
        let text = match answer.kind {
            AnswerKind::Skip => crate::protocol::SKIPPED_ANSWER.to_owned(),
            AnswerKind::Text => answer.text.clone().unwrap_or_default(),
            AnswerKind::Single | AnswerKind::Multi => {
                let mut picked = answer.selected_ids.clone().unwrap_or_default().join(", ");
                if let Some(text) = answer.text.as_deref().filter(|t| !t.trim().is_empty()) {
                    picked = if picked.is_empty() { text.to_owned() } else { format!("{picked}; {text}") };
                }
                picked
            }
        };
        self.control(session_id, Control::Answer { tool_call_id: tool_call_id.to_owned(), text }).await
    }
}

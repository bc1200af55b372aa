//! The chat core the HTTP handlers call: sessions, sends, runs and the requests that steer them. Runs live here,
//! not in HTTP responses; a response only tails a session's log.
//!
//! The rooms: `sessions` (each session's live state and the log every frame goes through), `send` (`POST /api/chat`,
//! serialized per session and idempotent by request id), `run` (the task that drives one run).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::sessions::SessionRegistry;
use crate::protocol::*;
use crate::runtime::Runtime;
use crate::runtime::models::ModelCatalog;
use crate::store::{RunStatus, Store, StoreError};

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
    #[error("preparing the workspace {path}: {source}")]
    Workspace { path: String, source: std::io::Error },
    #[error("storage failed: {0}")]
    Store(#[from] StoreError),
}

pub struct Chat {
    pub store: Arc<dyn Store>,
    /// What runs go through: the built-in agent, pi, or a test's.
    pub runtime: Arc<dyn Runtime>,
    /// The models the built-in agent can run, by name (`GET /api/models`).
    pub models: Arc<ModelCatalog>,
    pub config: ChatConfig,
    pub(super) sessions: SessionRegistry,
    /// Cancelled when the server shuts down: every stream then ends, and its viewer resumes later by `seq`.
    pub streams_end: tokio_util::sync::CancellationToken,
}

impl Chat {
    /// Opens the chat over a store; runs the store left `running` (a crash) are closed as interrupted.
    pub async fn open(
        store: Arc<dyn Store>,
        runtime: Arc<dyn Runtime>,
        models: Arc<ModelCatalog>,
        config: ChatConfig,
    ) -> Result<Arc<Chat>, ChatError> {
        let chat = Arc::new(Chat {
            sessions: SessionRegistry::new(store.clone()),
            store,
            runtime,
            models,
            config,
            streams_end: Default::default(),
        });
        for run in chat.store.running_runs().await? {
            // A store written before terminal frames and run ends were one transaction can hold a run whose
            // terminal frame is logged: it ended as that frame says, and gets no second one.
            match chat.store.run_terminal_kind(&run.session_id, &run.run_id).await?.as_deref() {
                Some(kind) => {
                    let status = if kind == "done" { RunStatus::Done } else { RunStatus::Failed };
                    chat.store.finish_run(&run.run_id, &run.session_id, status, now_ms()).await?;
                }
                None => {
                    let frame = ChatFrame::Error(ErrorFrame {
                        seq: None,
                        message: "the server stopped while this run was active".into(),
                        run_id: Some(run.run_id.clone()),
                        code: Some("interrupted".into()),
                    });
                    let live = chat.live(&run.session_id).await?;
                    chat.sessions.log(&live, Some(&run.run_id), vec![frame], Some(RunStatus::Interrupted)).await?;
                    tracing::warn!(run = %run.run_id, session = %run.session_id, "marked a run interrupted by a restart");
                }
            }
        }
        Ok(chat)
    }

    /// The live state of an existing session.
    pub async fn live(&self, session_id: &str) -> Result<Arc<SessionLive>, ChatError> {
        self.sessions.live(session_id).await
    }

    pub async fn create_session(&self, title: Option<String>) -> Result<SessionSummary, ChatError> {
        let title = title.map(|t| t.trim().to_owned()).unwrap_or_default();
        Ok(self.store.create_session(&uuid::Uuid::new_v4().to_string(), &title, now_ms()).await?)
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
        if live.active_run_id().is_some() {
            return Err(ChatError::SessionBusy);
        }
        self.store.delete_session(session_id).await?;
        self.sessions.forget(session_id).await;
        Ok(())
    }

    /// The transcript, as the shared reducer builds it from the log.
    pub async fn detail(&self, session_id: &str) -> Result<SessionDetail, ChatError> {
        let session =
            self.store.session(session_id).await?.ok_or_else(|| ChatError::UnknownSession(session_id.to_owned()))?;
        let live = self.live(session_id).await?;
        let snapshot = self.sessions.transcript(&live).await?.snapshot;
        let pending = snapshot.run.as_ref().map(|run| snapshot.messages[run.message].clone());
        let mut messages = snapshot.messages;
        if let Some(run) = &snapshot.run {
            messages.remove(run.message);
        }
        Ok(SessionDetail { last_seq: snapshot.last_seq, session, messages, pending, plan: snapshot.plan })
    }

    /// `POST /api/chat/abort`: true when a run was stopped.
    pub async fn abort(&self, session_id: &str) -> Result<bool, ChatError> {
        let live = self.live(session_id).await?;
        Ok(live.with_active(|run| match run {
            Some(run) if !run.control.cancel.is_cancelled() => {
                run.control.cancel.cancel();
                true
            }
            Some(_) | None => false,
        }))
    }

    /// `POST /api/chat/approval`: false when no such call is waiting for approval (any more).
    pub async fn decide(&self, session_id: &str, tool_call_id: &str, approve: bool) -> Result<bool, ChatError> {
        let live = self.live(session_id).await?;
        Ok(live.with_active(|run| run.is_some_and(|run| run.control.decide(tool_call_id, approve))))
    }

    /// `POST /api/chat/question`: false when no such question is waiting.
    pub async fn answer(
        &self,
        session_id: &str,
        tool_call_id: &str,
        answer: &QuestionAnswer,
    ) -> Result<bool, ChatError> {
        let live = self.live(session_id).await?;
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
        Ok(live.with_active(|run| run.is_some_and(|run| run.control.answer(tool_call_id, text))))
    }
}

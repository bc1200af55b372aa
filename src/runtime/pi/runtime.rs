//! pi as a `Runtime`: one `pi --mode rpc` process per session, started for a session's first run and kept for the
//! next; a fresh process reopens the pi session file the session last worked on.

use std::path::PathBuf;

use super::{PiConfig, PiFailure, PiProcess};
use crate::runtime::attached::{IMAGES_UNSUPPORTED, Prompt, images_refused};
use crate::runtime::seam::RunControl;
use crate::runtime::seam::{
    Availability, Capabilities, ConversationRef, ConversationSource, ConversationStart, EventSender, RunEnd,
    RunOpening, RunRequest, Runtime, RuntimeError, RuntimeFuture, RuntimeSession, SessionSetup,
};

pub struct PiRuntime {
    config: PiConfig,
}

impl PiRuntime {
    pub fn new(config: PiConfig) -> PiRuntime {
        PiRuntime { config }
    }
}

impl Runtime for PiRuntime {
    fn name(&self) -> &str {
        "pi"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            // Reruns go through pi's own `fork`, so its session files stay the conversation's truth.
            rerun: Availability::Available,
            // pi's RPC `compact` answers with a response, not with the agent events a run is made of; chatwire does
            // not drive it yet. pi compacts by itself when `autoCompactionEnabled` is on.
            compact: Availability::Unavailable(
                "/compact is not available with --runtime pi yet: pi compacts by itself near the context window when \
                 its auto-compaction is on"
                    .into(),
            ),
            // pi keeps the conversation, images included, in its session file.
            conversation: ConversationSource::OwnedByRuntime,
            steering: Availability::Available,
        }
    }

    fn open_session(&self, setup: SessionSetup) -> Result<Box<dyn RuntimeSession>, RuntimeError> {
        Ok(Box::new(PiSessionRuntime {
            config: self.config.clone(),
            process: None,
            workspace: setup.workspace,
            session_file: setup.conversation.map(ConversationRef::into_string),
            start: setup.start,
            start_failure: None,
        }))
    }

    fn fork_conversation<'a>(
        &'a self,
        from: SessionSetup,
        workspace: &'a std::path::Path,
    ) -> RuntimeFuture<'a, Result<Option<ConversationRef>, RuntimeError>> {
        Box::pin(async move {
            let file = super::fork::fork_into(&self.config, &from, workspace)
                .await
                .map_err(|failure| RuntimeError::Fork(failure.to_string()))?;
            Ok(file.map(ConversationRef::new))
        })
    }
}

/// A session's pi process and what chatwire remembers of pi's session across processes.
struct PiSessionRuntime {
    config: PiConfig,
    process: Option<Box<PiProcess>>,
    workspace: PathBuf,
    /// The pi session file of the branch the next run goes on: a fresh process reopens it.
    session_file: Option<String>,
    /// How much of that file the first run starts from; a rerun forks the file before its message.
    start: ConversationStart,
    /// Why the process for the next run could not be started; that run ends with it.
    start_failure: Option<PiFailure>,
}

impl PiSessionRuntime {
    fn conversation(&self) -> Option<ConversationRef> {
        self.session_file.clone().map(ConversationRef::new)
    }

    /// Makes the cut `start` asks for, once. `reset` says pi could not reopen the branch's file: only the
    /// conversation before the first user message, which is empty, can then be had.
    async fn go_back_if_asked(&mut self, reset: bool) -> Result<(), PiFailure> {
        let ConversationStart::BeforeUserMessage(at) = std::mem::take(&mut self.start) else { return Ok(()) };
        let Some(process) = self.process.as_mut() else { return Ok(()) };
        match (self.session_file.as_deref().filter(|_| !reset), at.index) {
            (None, 0) => Ok(()),
            (None, _) => Err(PiFailure::CannotFork(format!(
                "pi could not reopen the session file of that branch ({})",
                self.session_file.as_deref().unwrap_or("none was kept")
            ))),
            (Some(_), _) => super::fork::go_back_before(process, &self.config, &at).await,
        }
    }
}

impl RuntimeSession for PiSessionRuntime {
    fn open_run(&mut self) -> RuntimeFuture<'_, RunOpening> {
        Box::pin(async move {
            let started =
                super::start(&mut self.process, &self.config, &self.workspace, self.session_file.as_deref()).await;
            let opened = match started {
                Ok(started) => {
                    let reset = started.as_ref().is_some_and(|started| started.reset);
                    self.go_back_if_asked(reset).await.map(|()| started)
                }
                Err(failure) => Err(failure),
            };
            match opened {
                Ok(Some(started)) => {
                    if started.reset {
                        tracing::warn!(previous = ?self.session_file, now = ?started.session.file, "pi started a new session");
                    }
                    let now = self.process.as_ref().and_then(|process| process.session().file.clone());
                    self.session_file = now.or(self.session_file.take());
                    RunOpening { conversation: self.conversation(), session_reset: started.reset }
                }
                Ok(None) => RunOpening { conversation: self.conversation(), session_reset: false },
                Err(failure) => {
                    self.process = None;
                    self.start_failure = Some(failure);
                    RunOpening { conversation: self.conversation(), session_reset: false }
                }
            }
        })
    }

    fn run<'a>(
        &'a mut self,
        request: RunRequest,
        control: &'a RunControl,
        events: &'a EventSender,
    ) -> RuntimeFuture<'a, RunEnd> {
        Box::pin(async move {
            let takes_images = self.process.as_ref().and_then(|process| process.session().takes_images);
            if takes_images == Some(false)
                && let Some(message) = images_refused("pi's current model", &request.files)
            {
                return RunEnd::Failed { message, code: IMAGES_UNSUPPORTED };
            }
            let prompt = Prompt { text: request.prompt, files: request.files };
            let outcome = match self.start_failure.take() {
                Some(failure) => Err(failure),
                None => super::run(&mut self.process, &self.config, prompt, control, events).await,
            };
            match outcome {
                // pi was idle with nothing queued when it answered; the run's `done` names its session file.
                Ok(session) => {
                    if session.file.is_some() {
                        self.session_file = session.file.clone();
                    }
                    RunEnd::Settled { conversation: session.file.map(ConversationRef::new) }
                }
                Err(failure) => RunEnd::Failed { message: failure.to_string(), code: failure.code() },
            }
        })
    }

    fn close(&mut self) -> RuntimeFuture<'_, ()> {
        // Dropping the process kills its process group, tools included.
        self.process = None;
        Box::pin(std::future::ready(()))
    }
}

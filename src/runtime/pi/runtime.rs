//! pi as a `Runtime`: one `pi --mode rpc` process per session, started for a session's first run and kept for the
//! next; a fresh process reopens the pi session file the session last worked on.

use std::path::PathBuf;

use super::{PiConfig, PiFailure, PiProcess};
use crate::runtime::agent::RunControl;
use crate::runtime::seam::{
    EventSender, RunEnd, RunOpening, RunRequest, Runtime, RuntimeError, RuntimeFuture, RuntimeSession, SessionSetup,
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
    fn name(&self) -> &'static str {
        "pi"
    }

    fn open_session(&self, setup: SessionSetup) -> Result<Box<dyn RuntimeSession>, RuntimeError> {
        Ok(Box::new(PiSessionRuntime {
            config: self.config.clone(),
            process: None,
            workspace: setup.workspace,
            session_file: setup.session_file,
            start_failure: None,
        }))
    }

    fn rerun_unsupported(&self) -> Option<&'static str> {
        // pi keeps the conversation in its own session file, which a rerun would have to fork (its RPC `fork`).
        Some(
            "edit and regenerate are not available with the pi runtime yet: pi keeps the conversation in its own session file, and chatwire does not drive pi's fork yet",
        )
    }
}

/// A session's pi process and what chatwire remembers of pi's session across processes.
struct PiSessionRuntime {
    config: PiConfig,
    process: Option<Box<PiProcess>>,
    workspace: PathBuf,
    /// The pi session file this chatwire session last worked on: a fresh process reopens it.
    session_file: Option<String>,
    /// Why the process for the next run could not be started; that run ends with it.
    start_failure: Option<PiFailure>,
}

impl RuntimeSession for PiSessionRuntime {
    fn open_run(&mut self) -> RuntimeFuture<'_, RunOpening> {
        Box::pin(async move {
            match super::start(&mut self.process, &self.config, &self.workspace, self.session_file.as_deref()).await {
                Ok(Some(started)) => {
                    if started.reset {
                        tracing::warn!(previous = ?self.session_file, now = ?started.session.file, "pi started a new session");
                    }
                    self.session_file = started.session.file.or(self.session_file.take());
                    RunOpening { session_file: self.session_file.clone(), session_reset: started.reset }
                }
                Ok(None) => RunOpening { session_file: self.session_file.clone(), session_reset: false },
                Err(failure) => {
                    self.process = None;
                    self.start_failure = Some(failure);
                    RunOpening { session_file: self.session_file.clone(), session_reset: false }
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
            let outcome = match self.start_failure.take() {
                Some(failure) => Err(failure),
                None => super::run(&mut self.process, &self.config, request.prompt, control, events).await,
            };
            match outcome {
                // pi was idle with nothing queued when it answered; the run's `done` names its session file.
                Ok(session) => {
                    if session.file.is_some() {
                        self.session_file = session.file.clone();
                    }
                    RunEnd::Settled { session_file: session.file }
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

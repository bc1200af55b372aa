//! A runtime for tests whose runs can be held at a gate: the built-in agent, except that a gated session's
//! `open_run` waits until the test opens its gate (as a slow pi start would).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::runtime::seam::RunControl;
use crate::runtime::seam::{
    Capabilities, ConversationRef, EventSender, RunEnd, RunOpening, RunRequest, Runtime, RuntimeError, RuntimeFuture,
    RuntimeSession, SessionSetup,
};

/// One session's gate: closed until `open`.
#[derive(Default)]
pub struct Gate {
    /// Set once a run waits at the gate.
    reached: Notify,
    opened: Notify,
}

impl Gate {
    /// Waits until a run of the session is held at the gate.
    pub async fn reached(&self) {
        self.reached.notified().await;
    }

    pub fn open(&self) {
        self.opened.notify_one();
    }
}

pub struct GatedRuntime {
    inner: Arc<dyn Runtime>,
    gates: Mutex<HashMap<String, Arc<Gate>>>,
}

impl GatedRuntime {
    pub fn new(inner: Arc<dyn Runtime>) -> Arc<GatedRuntime> {
        Arc::new(GatedRuntime { inner, gates: Mutex::new(HashMap::new()) })
    }

    /// Closes the gate of a session, before its runtime is opened.
    pub fn close(&self, session_id: &str) -> Arc<Gate> {
        self.gates.lock().unwrap().entry(session_id.to_owned()).or_default().clone()
    }
}

impl Runtime for GatedRuntime {
    fn name(&self) -> &str {
        "gated"
    }

    fn open_session(&self, setup: SessionSetup) -> Result<Box<dyn RuntimeSession>, RuntimeError> {
        let gate = self.gates.lock().unwrap().get(&setup.session_id).cloned();
        Ok(Box::new(GatedSession { gate, inner: self.inner.open_session(setup)? }))
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn fork_conversation<'a>(
        &'a self,
        from: SessionSetup,
        workspace: &'a std::path::Path,
    ) -> RuntimeFuture<'a, Result<Option<ConversationRef>, RuntimeError>> {
        self.inner.fork_conversation(from, workspace)
    }
}

struct GatedSession {
    gate: Option<Arc<Gate>>,
    inner: Box<dyn RuntimeSession>,
}

impl RuntimeSession for GatedSession {
    fn open_run(&mut self) -> RuntimeFuture<'_, RunOpening> {
        Box::pin(async move {
            if let Some(gate) = self.gate.take() {
                let opened = gate.opened.notified();
                gate.reached.notify_one();
                opened.await;
            }
            self.inner.open_run().await
        })
    }

    fn run<'a>(
        &'a mut self,
        request: RunRequest,
        control: &'a RunControl,
        events: &'a EventSender,
    ) -> RuntimeFuture<'a, RunEnd> {
        self.inner.run(request, control, events)
    }

    fn close(&mut self) -> RuntimeFuture<'_, ()> {
        self.inner.close()
    }
}

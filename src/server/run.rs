//! The run driver: a run opens with its `start` and prompt, then one task per run feeds the runtime's events
//! through the session's mapper into the session's log, until one terminal frame.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::chat::{Chat, ChatError, new_id, now_ms};
use super::sessions::{ActiveRun, SessionLive};
use crate::chat_state::ChatSnapshot;
use crate::mapper::{EventMapper, RunMeta};
use crate::protocol::*;
use crate::runtime::agent::{Agent, Conversation, RunControl, RunOptions};
use crate::runtime::event::AgentEvent;
use crate::runtime::pi::{self, PiConfig, PiFailure, PiProcess, PiSession, StatusLine};
use crate::runtime::provider::{AssistantBlock, ModelMessage};
use crate::runtime::tools::Workspace;
use crate::store::RunStatus;

/// The part of a session only its run touches.
pub struct SessionRuntime {
    mapper: EventMapper,
    engine: Engine,
}

/// A session's side of its runtime.
enum Engine {
    Agent { conversation: Conversation, workspace: Workspace },
    Pi(PiEngine),
}

/// A session's pi process and what chatwire remembers of pi's session across processes.
struct PiEngine {
    process: Option<Box<PiProcess>>,
    workspace: PathBuf,
    /// The pi session file this chatwire session last worked on: a fresh process reopens it.
    session_file: Option<String>,
    /// Why the process for the next run could not be started; that run ends with it.
    start_failure: Option<PiFailure>,
}

impl PiEngine {
    /// Makes sure a process is running for the next run; returns what the run's `start` frame tells about pi's
    /// session: its file, and whether the earlier one could not be reopened.
    async fn prepare(&mut self, config: &PiConfig) -> (Option<String>, bool) {
        match pi::start(&mut self.process, config, &self.workspace, self.session_file.as_deref()).await {
            Ok(Some(started)) => {
                if started.reset {
                    tracing::warn!(previous = ?self.session_file, now = ?started.session.file, "pi started a new session");
                }
                self.session_file = started.session.file.or(self.session_file.take());
                (self.session_file.clone(), started.reset)
            }
            Ok(None) => (self.session_file.clone(), false),
            Err(failure) => {
                self.process = None;
                self.start_failure = Some(failure);
                (self.session_file.clone(), false)
            }
        }
    }
}

impl Chat {
    /// Opens run `run_id` of the session with the request's prompt and spawns the task that drives it. Waits for
    /// the session's previous run to release the runtime first.
    pub(super) async fn start_run(
        self: &Arc<Self>,
        live: &Arc<SessionLive>,
        request: &ChatRequest,
        run_id: String,
    ) -> Result<(), ChatError> {
        let mut runtime = live.runtime.clone().lock_owned().await;
        if runtime.is_none() {
            *runtime = Some(self.load_runtime(live).await?);
        }
        let state = runtime.as_mut().expect("loaded just above");
        let prompt = ChatMessage {
            id: new_id("msg"),
            role: Role::User,
            parts: vec![ChatMessagePart::text(shown_prompt(request))],
            created_at: Some(now_ms()),
        };
        let options = RunOptions { mode: request.mode.unwrap_or_default(), plan_action: request.plan_action };
        let (session_file, session_reset) = match (&mut state.engine, &self.config.pi) {
            (Engine::Pi(engine), Some(config)) => engine.prepare(config).await,
            (Engine::Pi(_), None) | (Engine::Agent { .. }, _) => (None, false),
        };
        let meta = RunMeta {
            run_id: Some(run_id.clone()),
            prompt: Some(prompt),
            mode: options.effective_mode(),
            session_file,
            session_reset,
        };
        let opening = state.mapper.open_run(meta);
        self.store.start_run(&run_id, live.id(), now_ms()).await?;
        self.sessions.log(live, Some(&run_id), opening, None).await?;
        let (events, receiver) = mpsc::unbounded_channel();
        let control = RunControl::default();
        live.set_active(ActiveRun { run_id: run_id.clone(), control: control.clone(), events: events.clone() });
        let agent = self
            .models
            .pick(request.model.as_deref())
            .map_or_else(|| self.models.default_entry().agent.clone(), |entry| entry.agent.clone());
        let task = RunTask {
            agent,
            chat: self.clone(),
            live: live.clone(),
            run_id,
            prompt: request.message.clone(),
            options,
            control,
        };
        tokio::spawn(task.run(runtime, events, receiver));
        Ok(())
    }

    async fn load_runtime(&self, live: &SessionLive) -> Result<SessionRuntime, ChatError> {
        let session_id = live.id();
        let root = match &self.config.workspace {
            Some(shared) => shared.clone(),
            None => self.config.data_dir.join("workspaces").join(session_id),
        };
        let workspace = Workspace::new(&root)
            .map_err(|source| ChatError::Workspace { path: root.display().to_string(), source })?;
        let mapper = EventMapper::new(session_id, Box::new(now_ms), Box::new(new_id));
        let engine = match &self.config.pi {
            None => {
                Engine::Agent { conversation: conversation_from(&self.sessions.transcript(live).await?), workspace }
            }
            Some(_) => Engine::Pi(PiEngine {
                process: None,
                workspace: root,
                session_file: self.last_pi_session_file(session_id).await?,
                start_failure: None,
            }),
        };
        Ok(SessionRuntime { mapper, engine })
    }

    /// The pi session file the session's log last names (in a `start` or `done` frame).
    async fn last_pi_session_file(&self, session_id: &str) -> Result<Option<String>, ChatError> {
        let mut found = None;
        let mut after = 0;
        loop {
            let frames = self.store.frames_after(session_id, after, 1024).await?;
            let Some(last) = frames.last() else { break };
            after = last.seq;
            for logged in frames.iter().filter(|logged| logged.line.contains("\"sessionFile\"")) {
                match crate::protocol::parse_frame(logged.line.as_bytes()) {
                    Ok(ChatFrame::Start(StartFrame { session_file: Some(file), .. }))
                    | Ok(ChatFrame::Done(DoneFrame { session_file: Some(file), .. })) => found = Some(file),
                    Ok(_) | Err(_) => {}
                }
            }
        }
        Ok(found)
    }
}

struct RunTask {
    /// The agent of the model the request picked.
    agent: Arc<Agent>,
    chat: Arc<Chat>,
    live: Arc<SessionLive>,
    run_id: String,
    prompt: String,
    options: RunOptions,
    control: RunControl,
}

/// How a run's terminal frame ends the run in the store.
fn ending(frame: &ChatFrame) -> Option<RunStatus> {
    match frame {
        ChatFrame::Done(_) => Some(RunStatus::Done),
        frame if frame.is_terminal() => Some(RunStatus::Failed),
        _ => None,
    }
}

impl RunTask {
    /// Logs frames the mapper made; a batch that ends the run ends it in the same transaction. True when it did.
    async fn record(&self, frames: Vec<ChatFrame>) -> bool {
        let ends_run = frames.last().and_then(ending);
        match self.chat.sessions.log(&self.live, Some(&self.run_id), frames, ends_run).await {
            Ok(()) => ends_run.is_some(),
            Err(error) => {
                tracing::error!(run = %self.run_id, "logging frames failed: {error}");
                false
            }
        }
    }

    async fn run(
        self,
        mut runtime: tokio::sync::OwnedMutexGuard<Option<SessionRuntime>>,
        events: mpsc::UnboundedSender<AgentEvent>,
        mut receiver: mpsc::UnboundedReceiver<AgentEvent>,
    ) {
        {
            let SessionRuntime { mapper, engine } =
                runtime.as_mut().expect("start_run loads the runtime before spawning the run");
            let (prompt, options, control) = (self.prompt.clone(), &self.options, &self.control);
            type Outcome = Result<Option<PiSession>, PiFailure>;
            let drive: std::pin::Pin<Box<dyn std::future::Future<Output = Outcome> + Send + '_>> = match engine {
                Engine::Agent { conversation, workspace } => {
                    let agent = self.agent.clone();
                    Box::pin(async move {
                        agent.run(conversation, workspace, prompt, options, control, &events).await;
                        Ok(None)
                    })
                }
                Engine::Pi(engine) => {
                    let config = self.chat.config.pi.as_ref().expect("a pi engine is made only with pi configured");
                    match engine.start_failure.take() {
                        Some(failure) => Box::pin(std::future::ready(Err(failure))),
                        None => {
                            let run = pi::run(&mut engine.process, config, prompt, control, &events);
                            Box::pin(async move { run.await.map(Some) })
                        }
                    }
                }
            };
            tokio::pin!(drive);
            // pi's fire-and-forget status requests go to the activity line; the built-in agent makes none.
            let mut status = StatusLine::default();
            let mut map = |event: AgentEvent, frames: &mut Vec<ChatFrame>| {
                if let Some(frame) = status.frame(&event).filter(|_| mapper.is_run_open()) {
                    frames.push(frame);
                }
                mapper.map_into(event, frames);
            };
            let mut ended = false;
            // The active run keeps a sender for queueing, so the channel never closes by itself: the run is over when
            // the agent returns, and whatever it sent before that is drained. Events that are already waiting go
            // into one batch, one transaction.
            let outcome = loop {
                let mut frames = Vec::new();
                tokio::select! {
                    biased;
                    Some(event) = receiver.recv() => {
                        map(event, &mut frames);
                        while let Ok(event) = receiver.try_recv() {
                            map(event, &mut frames);
                        }
                    }
                    outcome = &mut drive => break outcome,
                }
                ended |= self.record(frames).await;
            };
            let mut frames = Vec::new();
            while let Ok(event) = receiver.try_recv() {
                map(event, &mut frames);
            }
            match outcome {
                // pi was idle with nothing queued when it answered; the done frame names its session file.
                Ok(Some(session)) => frames.extend(mapper.settle_run(session.file)),
                Ok(None) => {}
                Err(failure) if mapper.is_run_open() => {
                    tracing::warn!(run = %self.run_id, "{failure}");
                    frames.extend(mapper.fail(failure.to_string(), failure.code()));
                }
                Err(_) => {}
            }
            if mapper.is_run_open() {
                frames.extend(mapper.fail("the agent stopped without finishing its run", "runtime_exit"));
            }
            ended |= self.record(frames).await;
            // The terminal frame could not be logged: the run still ends, so the session does not look busy.
            if !ended
                && let Err(error) =
                    self.chat.store.finish_run(&self.run_id, self.live.id(), RunStatus::Failed, now_ms()).await
            {
                tracing::error!(run = %self.run_id, "recording the end of the run failed: {error}");
            }
        }
        // Release the runtime before the session looks idle, so the next send finds it free.
        drop(runtime);
        self.live.clear_active(&self.run_id);
    }
}

/// What the transcript shows for a send: the text, or the plan action when it came without one.
fn shown_prompt(request: &ChatRequest) -> String {
    match (request.message.trim().is_empty(), request.plan_action) {
        (true, Some(PlanAction::Execute)) => "Execute the plan.".into(),
        (true, Some(PlanAction::Refine)) => "Refine the plan.".into(),
        (true, None) | (false, _) => request.message.clone(),
    }
}

/// What the model saw, rebuilt from the transcript after a restart (text only; tool calls are summarized away).
fn conversation_from(snapshot: &ChatSnapshot) -> Conversation {
    let mut conversation = Conversation::default();
    for message in &snapshot.messages {
        let text: String = message
            .parts
            .iter()
            .filter_map(|part| match part {
                ChatMessagePart::Text(text) => Some(text.text.as_str()),
                ChatMessagePart::Thinking(_) | ChatMessagePart::Error(_) | ChatMessagePart::Tool(_) => None,
            })
            .collect::<Vec<_>>()
            .join("\n\n");
        if text.is_empty() {
            continue;
        }
        conversation.messages.push(match message.role {
            Role::User => ModelMessage::User { text },
            Role::Assistant => ModelMessage::Assistant { blocks: vec![AssistantBlock::Text(text)] },
        });
    }
    conversation
}

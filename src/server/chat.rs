//! The chat core: sessions, the run registry and the session logs. Runs live here, not in HTTP responses;
//! a response only tails a session's log.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, watch};

use super::error::ApiError;
use crate::chat_state::{ChatSnapshot, apply};
use crate::mapper::EventMapper;
use crate::ndjson::encode_frame;
use crate::protocol::*;
use crate::runtime::agent::{Agent, Conversation, RunControl, RunOptions};
use crate::runtime::event::AgentEvent;
use crate::runtime::models::ModelCatalog;
use crate::runtime::pi::{self, PiConfig, PiFailure, PiProcess, PiSession, StatusLine};
use crate::runtime::provider::{AssistantBlock, ModelMessage};
use crate::runtime::tools::Workspace;
use crate::store::{LoggedFrame, NewFrame, RequestRecord, RunStatus, Store};

pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

fn new_id(kind: &str) -> String {
    format!("{kind}-{}", uuid::Uuid::new_v4().simple())
}

#[derive(Debug, Clone)]
pub struct ChatConfig {
    pub data_dir: PathBuf,
    /// One directory for every session; `None`: a fresh directory per session under the data dir.
    pub workspace: Option<PathBuf>,
    /// Quiet streams get a keepalive this often.
    pub keepalive: Duration,
    /// Set: runs go to a `pi --mode rpc` process per session instead of the built-in agent.
    pub pi: Option<PiConfig>,
}

/// The part of a session only its run touches.
struct SessionRuntime {
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

struct ActiveRun {
    run_id: String,
    control: RunControl,
    events: mpsc::UnboundedSender<AgentEvent>,
}

/// A session's live state: who is running, and the latest `seq` for tailing viewers.
pub struct SessionLive {
    id: String,
    last_seq: watch::Sender<Seq>,
    active: Mutex<Option<ActiveRun>>,
    runtime: Arc<tokio::sync::Mutex<Option<SessionRuntime>>>,
    /// The transcript as the reducer has built it from the log, once someone asked for it; kept current by every
    /// append, so opening a long session does not replay its whole log.
    transcript: Mutex<Option<ChatSnapshot>>,
}

impl SessionLive {
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn subscribe(&self) -> watch::Receiver<Seq> {
        self.last_seq.subscribe()
    }

    /// The `seq` of the session's last logged frame.
    pub fn last_seq(&self) -> Seq {
        *self.last_seq.borrow()
    }

    fn active_run_id(&self) -> Option<String> {
        self.active.lock().expect("the active-run lock is never poisoned").as_ref().map(|run| run.run_id.clone())
    }
}

/// Which frames a response streams: those after `after`, until `until_run` ends (or forever).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tail {
    pub after: Seq,
    pub until_run: Option<String>,
}

pub struct Chat {
    pub store: Store,
    /// The models the built-in agent can run, by name (`GET /api/models`).
    pub models: Arc<ModelCatalog>,
    pub config: ChatConfig,
    live: Mutex<HashMap<String, Arc<SessionLive>>>,
    /// Serializes sends, so two requests with one request id make one run.
    send_lock: tokio::sync::Mutex<()>,
    /// Cancelled when the server shuts down: every stream then ends, and its viewer resumes later by `seq`.
    pub streams_end: tokio_util::sync::CancellationToken,
}

impl Chat {
    /// Opens the chat over a store; runs the store left `running` (a crash) are closed as interrupted.
    pub fn new(store: Store, models: Arc<ModelCatalog>, config: ChatConfig) -> Result<Arc<Chat>, ApiError> {
        let chat = Arc::new(Chat {
            store,
            models,
            config,
            live: Mutex::new(HashMap::new()),
            send_lock: Default::default(),
            streams_end: Default::default(),
        });
        for run in chat.store.running_runs()? {
            // A store written before terminal frames and run ends were one transaction can hold a run whose
            // terminal frame is logged: it ended as that frame says, and gets no second one.
            match chat.store.run_terminal_kind(&run.session_id, &run.run_id)?.as_deref() {
                Some(kind) => {
                    let status = if kind == "done" { RunStatus::Done } else { RunStatus::Failed };
                    chat.store.finish_run(&run.run_id, &run.session_id, status, now_ms())?;
                }
                None => {
                    let frame = ChatFrame::Error(ErrorFrame {
                        seq: None,
                        message: "the server stopped while this run was active".into(),
                        run_id: Some(run.run_id.clone()),
                        code: Some("interrupted".into()),
                    });
                    let live = chat.live(&run.session_id)?;
                    chat.log(&live, Some(&run.run_id), frame, Some(RunStatus::Interrupted))?;
                    tracing::warn!(run = %run.run_id, session = %run.session_id, "marked a run interrupted by a restart");
                }
            }
        }
        Ok(chat)
    }

    /// The live state of an existing session.
    pub fn live(&self, session_id: &str) -> Result<Arc<SessionLive>, ApiError> {
        let mut live = self.live.lock().expect("the sessions lock is never poisoned");
        if let Some(session) = live.get(session_id) {
            return Ok(session.clone());
        }
        let last_seq = self.store.last_seq(session_id)?.ok_or_else(|| unknown_session(session_id))?;
        let session = Arc::new(SessionLive {
            id: session_id.to_owned(),
            last_seq: watch::channel(last_seq).0,
            active: Mutex::new(None),
            runtime: Arc::new(tokio::sync::Mutex::new(None)),
            transcript: Mutex::new(None),
        });
        live.insert(session_id.to_owned(), session.clone());
        Ok(session)
    }

    pub fn create_session(&self, title: Option<String>) -> Result<SessionSummary, ApiError> {
        let title = title.map(|t| t.trim().to_owned()).unwrap_or_default();
        Ok(self.store.create_session(&uuid::Uuid::new_v4().to_string(), &title, now_ms())?)
    }

    pub fn rename(&self, session_id: &str, title: &str) -> Result<SessionSummary, ApiError> {
        let title = title.trim();
        if title.is_empty() {
            return Err(ApiError::BadRequest("`title` must not be empty".into()));
        }
        if !self.store.rename_session(session_id, title, now_ms())? {
            return Err(unknown_session(session_id));
        }
        self.store.session(session_id)?.ok_or_else(|| unknown_session(session_id))
    }

    pub fn delete(&self, session_id: &str) -> Result<(), ApiError> {
        let live = self.live(session_id)?;
        if live.active_run_id().is_some() {
            return Err(ApiError::Conflict("the session has a run in progress; stop it first".into()));
        }
        self.store.delete_session(session_id)?;
        self.live.lock().expect("the sessions lock is never poisoned").remove(session_id);
        Ok(())
    }

    /// The transcript, as the shared reducer builds it from the log.
    pub fn detail(&self, session_id: &str) -> Result<SessionDetail, ApiError> {
        let session = self.store.session(session_id)?.ok_or_else(|| unknown_session(session_id))?;
        let live = self.live(session_id)?;
        let snapshot = self.transcript(&live)?;
        let pending = snapshot.run.as_ref().map(|run| snapshot.messages[run.message].clone());
        let mut messages = snapshot.messages;
        if let Some(run) = &snapshot.run {
            messages.remove(run.message);
        }
        Ok(SessionDetail { last_seq: snapshot.last_seq, session, messages, pending, plan: snapshot.plan })
    }

    /// A copy of the session's transcript: built from the log the first time, then kept current by `log`.
    fn transcript(&self, live: &SessionLive) -> Result<ChatSnapshot, ApiError> {
        // Held while building: an append that lands meanwhile waits and is applied after (or, if the build already
        // read it, is recognised by its `seq` and changes nothing).
        let mut transcript = live.transcript.lock().expect("the transcript lock is never poisoned");
        if transcript.is_none() {
            *transcript = Some(self.snapshot(&live.id)?);
        }
        Ok(transcript.as_ref().expect("built just above").clone())
    }

    fn snapshot(&self, session_id: &str) -> Result<ChatSnapshot, ApiError> {
        let mut snapshot = ChatSnapshot::default();
        let mut after = 0;
        loop {
            let frames = self.store.frames_after(session_id, after, 1024)?;
            let Some(last) = frames.last() else { break };
            after = last.seq;
            for logged in &frames {
                // Lines were validated when they were written; one that no longer parses is skipped, not fatal.
                if let Ok(frame) = crate::protocol::parse_frame(logged.line.as_bytes()) {
                    apply(&mut snapshot, &frame);
                }
            }
        }
        Ok(snapshot)
    }

    /// Appends a frame to the session's log and wakes its viewers; `ends_run` is set on a run's terminal frame.
    fn log(
        &self,
        live: &SessionLive,
        run_id: Option<&str>,
        frame: ChatFrame,
        ends_run: Option<RunStatus>,
    ) -> Result<LoggedFrame, ApiError> {
        let kind = frame.frame_type().as_str();
        let counts = matches!(frame, ChatFrame::Message(_) | ChatFrame::Done(_));
        if let ChatFrame::Message(MessageFrame { message, .. }) = &frame
            && message.role == Role::User
            && let Some(ChatMessagePart::Text(text)) = message.parts.first()
        {
            self.store.title_if_unset(&live.id, &title_from(&text.text))?;
        }
        let mut frame = frame;
        let new_frame =
            NewFrame { session_id: &live.id, kind, run_id, counts_as_message: counts, now: now_ms(), ends_run };
        let logged = self.store.append(&new_frame, |seq| {
            frame.set_seq(seq);
            let mut line = encode_frame(&frame);
            line.pop();
            line
        })?;
        if let Some(transcript) = live.transcript.lock().expect("the transcript lock is never poisoned").as_mut() {
            apply(transcript, &frame);
        }
        live.last_seq.send_replace(logged.seq);
        Ok(logged)
    }

    /// `POST /api/chat`: starts a run, queues into the active one, or finds the run a request id already made.
    pub async fn send(self: &Arc<Self>, request: ChatRequest) -> Result<Tail, ApiError> {
        if request.message.trim().is_empty() && request.plan_action.is_none() {
            return Err(ApiError::BadRequest("`message` must not be empty".into()));
        }
        if self.models.pick(request.model.as_deref()).is_none() {
            let model = request.model.as_deref().unwrap_or_default();
            let known = self.models.names().join(", ");
            return Err(ApiError::BadRequest(format!("unknown model {model:?}; the configured models are: {known}")));
        }
        let live = self.live(&request.session_id)?;
        let _serialized = self.send_lock.lock().await;
        let body_hash = body_hash(&request);
        if let Some(request_id) = &request.request_id
            && let Some(record) = self.store.request(request_id)?
        {
            if record.session_id != request.session_id || record.body_hash != body_hash {
                return Err(ApiError::Unprocessable(format!(
                    "request id {request_id} was already used with a different body"
                )));
            }
            return Ok(Tail { after: record.after_seq, until_run: Some(record.run_id) });
        }
        let after = self.store.last_seq(&live.id)?.ok_or_else(|| unknown_session(&live.id))?;

        let queued = {
            let active = live.active.lock().expect("the active-run lock is never poisoned");
            match (active.as_ref(), request.streaming_behavior) {
                // A run that is only finishing up (its `done` may already be out) is waited for, not refused.
                (Some(run), None) if run.control.is_closing() => None,
                (Some(_), None) => {
                    return Err(ApiError::Conflict(
                        "a run is in progress; send with streamingBehavior \"steer\" or \"followUp\", or stop it"
                            .into(),
                    ));
                }
                (Some(run), Some(behavior)) => {
                    let steer = behavior == StreamingBehavior::Steer;
                    // Refused when the run is already ending: the message then starts the next run, once that
                    // run has released the session (`start_run` waits for it).
                    run.control.enqueue(request.message.clone(), steer, &run.events).then(|| run.run_id.clone())
                }
                (None, _) => None,
            }
        };
        let run_id = match queued {
            Some(run_id) => run_id,
            None => self.start_run(&live, &request).await?,
        };
        if let Some(request_id) = &request.request_id {
            let record =
                RequestRecord { session_id: live.id.clone(), body_hash, run_id: run_id.clone(), after_seq: after };
            self.store.record_request(request_id, &record, now_ms())?;
        }
        Ok(Tail { after, until_run: Some(run_id) })
    }

    async fn start_run(self: &Arc<Self>, live: &Arc<SessionLive>, request: &ChatRequest) -> Result<String, ApiError> {
        let mut runtime = live.runtime.clone().lock_owned().await;
        if runtime.is_none() {
            *runtime = Some(self.load_runtime(&live.id)?);
        }
        let state = runtime.as_mut().expect("loaded just above");
        let prompt = ChatMessage {
            id: new_id("msg"),
            role: Role::User,
            parts: vec![ChatMessagePart::text(shown_prompt(request))],
            created_at: Some(now_ms()),
        };
        let options = RunOptions { mode: request.mode.unwrap_or_default(), plan_action: request.plan_action };
        let pi_session = match (&mut state.engine, &self.config.pi) {
            (Engine::Pi(engine), Some(config)) => Some(engine.prepare(config).await),
            (Engine::Pi(_), None) | (Engine::Agent { .. }, _) => None,
        };
        let mut opening = state.mapper.open_run(Some(prompt), options.effective_mode());
        let pi_session_file = pi_session.as_ref().and_then(|(file, _)| file.clone());
        if let Some((session_file, reset)) = pi_session {
            for frame in &mut opening {
                if let ChatFrame::Start(start) = frame {
                    start.session_file = session_file.clone();
                    start.session_reset = reset.then_some(true);
                }
            }
        }
        let run_id = opening
            .iter()
            .find_map(|frame| match frame {
                ChatFrame::Start(start) => Some(start.run_id.clone()),
                _ => None,
            })
            .expect("open_run always starts with a start frame");
        self.store.start_run(&run_id, &live.id, now_ms())?;
        for frame in opening {
            self.log(live, Some(&run_id), frame, None)?;
        }
        let (events, receiver) = mpsc::unbounded_channel();
        let control = RunControl::default();
        *live.active.lock().expect("the active-run lock is never poisoned") =
            Some(ActiveRun { run_id: run_id.clone(), control: control.clone(), events: events.clone() });
        let agent = self
            .models
            .pick(request.model.as_deref())
            .map_or_else(|| self.models.default_entry().agent.clone(), |entry| entry.agent.clone());
        let task = RunTask {
            agent,
            chat: self.clone(),
            live: live.clone(),
            run_id: run_id.clone(),
            prompt: request.message.clone(),
            options,
            control,
            pi_session_file,
        };
        tokio::spawn(task.run(runtime, events, receiver));
        Ok(run_id)
    }

    fn load_runtime(&self, session_id: &str) -> Result<SessionRuntime, ApiError> {
        let root = match &self.config.workspace {
            Some(shared) => shared.clone(),
            None => self.config.data_dir.join("workspaces").join(session_id),
        };
        let workspace = Workspace::new(&root).map_err(|e| {
            ApiError::Store(crate::store::StoreError::Io { path: root.display().to_string(), source: e })
        })?;
        let mapper = EventMapper::new(session_id, Box::new(now_ms), Box::new(new_id));
        let engine = match &self.config.pi {
            None => {
                let live = self.live(session_id)?;
                Engine::Agent { conversation: conversation_from(&self.transcript(&live)?), workspace }
            }
            Some(_) => Engine::Pi(PiEngine {
                process: None,
                workspace: root,
                session_file: self.last_pi_session_file(session_id)?,
                start_failure: None,
            }),
        };
        Ok(SessionRuntime { mapper, engine })
    }

    /// The pi session file the session's log last names (in a `start` or `done` frame).
    fn last_pi_session_file(&self, session_id: &str) -> Result<Option<String>, ApiError> {
        let mut found = None;
        let mut after = 0;
        loop {
            let frames = self.store.frames_after(session_id, after, 1024)?;
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

    /// `POST /api/chat/abort`: true when a run was stopped.
    pub fn abort(&self, session_id: &str) -> Result<bool, ApiError> {
        let live = self.live(session_id)?;
        let active = live.active.lock().expect("the active-run lock is never poisoned");
        Ok(match active.as_ref() {
            Some(run) if !run.control.cancel.is_cancelled() => {
                run.control.cancel.cancel();
                true
            }
            Some(_) | None => false,
        })
    }

    /// `POST /api/chat/approval`: false when no such call is waiting for approval (any more).
    pub fn decide(&self, session_id: &str, tool_call_id: &str, approve: bool) -> Result<bool, ApiError> {
        let live = self.live(session_id)?;
        let active = live.active.lock().expect("the active-run lock is never poisoned");
        Ok(active.as_ref().is_some_and(|run| run.control.decide(tool_call_id, approve)))
    }

    /// `POST /api/chat/question`: false when no such question is waiting.
    pub fn answer(&self, session_id: &str, tool_call_id: &str, answer: &QuestionAnswer) -> Result<bool, ApiError> {
        let live = self.live(session_id)?;
        let active = live.active.lock().expect("the active-run lock is never poisoned");
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
        Ok(active.as_ref().is_some_and(|run| run.control.answer(tool_call_id, text)))
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
    /// The pi session file the run's `start` named; its `done` names it too.
    pi_session_file: Option<String>,
}

impl RunTask {
    async fn run(
        self,
        mut runtime: tokio::sync::OwnedMutexGuard<Option<SessionRuntime>>,
        events: mpsc::UnboundedSender<AgentEvent>,
        mut receiver: mpsc::UnboundedReceiver<AgentEvent>,
    ) {
        {
            let SessionRuntime { mapper, engine } =
                runtime.as_mut().expect("start_run loads the runtime before spawning the run");
            let mut ended = false;
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
            let mut record = |frames: Vec<ChatFrame>| {
                for mut frame in frames {
                    if let ChatFrame::Done(done) = &mut frame
                        && done.session_file.is_none()
                    {
                        done.session_file = self.pi_session_file.clone();
                    }
                    let ends_run = match &frame {
                        ChatFrame::Done(_) => Some(RunStatus::Done),
                        frame if frame.is_terminal() => Some(RunStatus::Failed),
                        _ => None,
                    };
                    match self.chat.log(&self.live, Some(&self.run_id), frame, ends_run) {
                        Ok(_) => ended |= ends_run.is_some(),
                        Err(error) => tracing::error!(run = %self.run_id, "logging a frame failed: {error}"),
                    }
                }
            };
            // The active run keeps a sender for queueing, so the channel never closes by itself: the run is over when
            // the agent returns, and whatever it sent before that is drained.
            // pi's fire-and-forget status requests go to the activity line; the built-in agent makes none.
            let mut status = StatusLine::default();
            let mut map = |event: AgentEvent, record: &mut dyn FnMut(Vec<ChatFrame>)| {
                if let Some(frame) = status.frame(&event).filter(|_| mapper.is_run_open()) {
                    record(vec![frame]);
                }
                record(mapper.map(event));
            };
            let outcome = loop {
                tokio::select! {
                    biased;
                    Some(event) = receiver.recv() => map(event, &mut record),
                    outcome = &mut drive => break outcome,
                }
            };
            while let Ok(event) = receiver.try_recv() {
                map(event, &mut record);
            }
            match outcome {
                // pi was idle with nothing queued when it answered; the done frame names its session file.
                Ok(Some(session)) => {
                    let mut frames = mapper.map(AgentEvent::AgentSettled);
                    for frame in &mut frames {
                        if let ChatFrame::Done(done) = frame {
                            done.session_file = session.file.clone();
                        }
                    }
                    record(frames);
                }
                Ok(None) => {}
                Err(failure) if mapper.is_run_open() => {
                    tracing::warn!(run = %self.run_id, "{failure}");
                    record(mapper.fail(failure.to_string(), failure.code()));
                }
                Err(_) => {}
            }
            if mapper.is_run_open() {
                record(mapper.fail("the agent stopped without finishing its run", "runtime_exit"));
            }
            // The terminal frame could not be logged: the run still ends, so the session does not look busy.
            if !ended
                && let Err(error) = self.chat.store.finish_run(&self.run_id, &self.live.id, RunStatus::Failed, now_ms())
            {
                tracing::error!(run = %self.run_id, "recording the end of the run failed: {error}");
            }
        }
        // Release the runtime before the session looks idle, so the next send finds it free. A send that arrived
        // while this run was ending may already have started the next run: that one stays active.
        drop(runtime);
        let mut active = self.live.active.lock().expect("the active-run lock is never poisoned");
        if active.as_ref().is_some_and(|run| run.run_id == self.run_id) {
            *active = None;
        }
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

fn unknown_session(session_id: &str) -> ApiError {
    ApiError::NotFound(format!("no session {session_id}"))
}

/// A session's title from its first message: the first line, at most 60 characters.
fn title_from(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let mut title: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        title.push('…');
    }
    title
}

/// Identifies a request body for request-id reuse: the same id must come with the same request.
fn body_hash(request: &ChatRequest) -> String {
    let canonical = serde_json::to_vec(request).expect("a ChatRequest serializes");
    Sha256::digest(&canonical).iter().map(|b| format!("{b:02x}")).collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn chat_playing(script: &str, dir: &std::path::Path) -> Arc<Chat> {
        use crate::runtime::agent::AgentConfig;
        use crate::runtime::models::ModelEntry;
        use crate::runtime::scripted::{Script, ScriptedProvider};
        let provider = Arc::new(ScriptedProvider::new(Script::parse(script).unwrap()));
        let agent = Arc::new(Agent::new(provider, AgentConfig::default()));
        let entry = ModelEntry {
            name: "scripted".into(),
            provider: "scripted".into(),
            model: "test".into(),
            context_window: 128_000,
            agent,
        };
        let models = Arc::new(ModelCatalog::new(vec![entry]).unwrap());
        let config = ChatConfig { data_dir: dir.into(), workspace: None, keepalive: Duration::from_secs(15), pi: None };
        Chat::new(Store::open(dir).unwrap(), models, config).unwrap()
    }

    fn request(session_id: &str, message: &str, streaming_behavior: Option<StreamingBehavior>) -> ChatRequest {
        ChatRequest {
            session_id: session_id.into(),
            message: message.into(),
            request_id: None,
            mode: None,
            plan_action: None,
            model: None,
            streaming_behavior,
            attachments: None,
        }
    }

    /// Waits (up to 20 s) until the session has no run in progress.
    async fn until_idle(live: &SessionLive) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while live.active_run_id().is_some() {
            assert!(tokio::time::Instant::now() < deadline, "the session's runs never ended");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn a_message_for_a_run_that_is_ending_starts_the_next_run() {
        let dir = tempfile::tempdir().unwrap();
        let chat = chat_playing(r#"{"delayMs": 50, "turns": [{"text": "One two three four five six."}]}"#, dir.path());
        let session = chat.create_session(None).unwrap().session_id;
        let first = chat.send(request(&session, "first", None)).await.unwrap();
        let live = chat.live(&session).unwrap();
        // What the agent does once it has decided to stop, done here while the run is still streaming.
        live.active.lock().unwrap().as_ref().unwrap().control.queues.lock().unwrap().closed = true;

        let steered = chat.send(request(&session, "steer", Some(StreamingBehavior::Steer))).await.unwrap();
        assert_ne!(steered.until_run, first.until_run, "the steer was not queued into the ending run");
        let next = chat.send(request(&session, "plain", None)).await;
        assert!(matches!(next, Err(ApiError::Conflict(_))), "the steer's run is active and open: {next:?}");

        until_idle(&live).await;
        let users: Vec<String> = chat
            .detail(&session)
            .unwrap()
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .filter_map(|m| match m.parts.first()? {
                ChatMessagePart::Text(text) => Some(text.text.clone()),
                ChatMessagePart::Thinking(_) | ChatMessagePart::Error(_) | ChatMessagePart::Tool(_) => None,
            })
            .collect();
        assert_eq!(users, ["first", "steer"]);
    }

    #[tokio::test]
    async fn the_kept_transcript_equals_a_replay_of_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let chat =
            chat_playing(r#"{"delayMs": 5, "chunkChars": 3, "turns": [{"text": "One two three."}]}"#, dir.path());
        let session = chat.create_session(None).unwrap().session_id;
        chat.send(request(&session, "first", None)).await.unwrap();
        let live = chat.live(&session).unwrap();
        // Built while the run streams; every later append must keep it equal to a replay.
        let during = chat.detail(&session).unwrap();
        assert!(during.pending.is_some(), "the run was still going");
        until_idle(&live).await;
        let kept = chat.transcript(&live).unwrap();
        let replayed = chat.snapshot(&session).unwrap();
        assert_eq!(kept.last_seq, replayed.last_seq);
        assert_eq!(kept.messages, replayed.messages);
        assert!(kept.last_seq > during.last_seq);
    }

    #[tokio::test]
    async fn a_restart_gives_no_second_terminal_frame_to_a_run_whose_done_was_logged() {
        let dir = tempfile::tempdir().unwrap();
        {
            // What a crash between logging a `done` and recording the run's end left behind, before the two were
            // one transaction.
            let store = Store::open(dir.path()).unwrap();
            store.create_session("s1", "", 1).unwrap();
            store.start_run("r1", "s1", 1).unwrap();
            let done = NewFrame {
                session_id: "s1",
                kind: "done",
                run_id: Some("r1"),
                counts_as_message: true,
                now: 2,
                ends_run: None,
            };
            let line = |seq| {
                format!(
                    r#"{{"type":"done","seq":{seq},"runId":"r1","sessionId":"s1","message":{{"id":"m","role":"assistant","parts":[{{"type":"text","text":"hi"}}]}}}}"#
                )
            };
            store.append(&done, line).unwrap();
        }
        let chat = chat_playing(r#"{"turns": [{"text": "unused"}]}"#, dir.path());
        let kinds: Vec<String> = chat.store.frames_after("s1", 0, 10).unwrap().into_iter().map(|f| f.kind).collect();
        assert_eq!(kinds, ["done"], "one terminal frame, no interrupted error after it");
        assert_eq!(chat.store.run_status("r1").unwrap().as_deref(), Some("done"));
        assert_eq!(chat.store.session("s1").unwrap().unwrap().status, SessionStatus::Idle);
    }

    #[test]
    fn titles_come_from_the_first_line() {
        assert_eq!(title_from("\n  Fix the build  \nplease"), "Fix the build");
        assert_eq!(title_from(&"x".repeat(70)).chars().count(), 61);
    }
}

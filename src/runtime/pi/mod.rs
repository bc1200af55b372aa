//! The pi runtime: one `pi --mode rpc` process per session, driven by JSON commands on its stdin and read as agent
//! events on its stdout (one line each, framed by `runtime::child`), for the same mapper the built-in agent feeds.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

mod fork;
mod runtime;

pub use runtime::PiRuntime;

use super::attached::{Prompt, with_text_files};
use super::child::{ChildProcess, ChildSpec, ChildWriter, Spawned, StdoutLine};
use super::event::{AgentEvent, CallUsage, RpcResponse, ToolResult};
use super::providers::base64_of;
use super::seam::RunControl;

/// How the pi process is started.
#[derive(Debug, Clone)]
pub struct PiConfig {
    /// The executable (`pi` by default, found on PATH).
    pub program: PathBuf,
    /// Arguments before `--mode rpc`.
    pub args: Vec<String>,
    /// Longest line pi may print; a longer one ends the run as malformed.
    pub max_line_bytes: usize,
    /// How long pi gets to wind down after `abort` before it is killed.
    pub abort_grace: Duration,
    /// How long pi may leave a command unanswered. A pi that has been quiet this long is asked for its state, so a
    /// hung process is found within twice this time, also while a long tool runs silently.
    pub timeout: Duration,
}

impl Default for PiConfig {
    fn default() -> Self {
        PiConfig {
            program: "pi".into(),
            args: Vec::new(),
            max_line_bytes: 16 << 20,
            abort_grace: Duration::from_secs(10),
            timeout: Duration::from_secs(60),
        }
    }
}

/// Why a run on pi ended without settling: the message of its `error` frame and that frame's code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PiFailure {
    #[error("could not start the agent runtime `{program}`: {reason}")]
    Spawn { program: String, reason: String },
    #[error("agent runtime sent malformed data: {0}")]
    Malformed(String),
    #[error("the agent runtime exited{0}")]
    Exited(String),
    #[error("the agent runtime did not stop within {0:?} of being asked to")]
    Unstoppable(Duration),
    #[error("writing to the agent runtime failed: {0}")]
    Write(String),
    #[error("the agent runtime did not answer `{command}` within {timeout:?}")]
    Hung { command: String, timeout: Duration },
    #[error("the agent runtime refused the prompt: {0}")]
    Refused(String),
    #[error("pi cannot go back to before that message: {0}")]
    CannotFork(String),
}

impl PiFailure {
    pub fn code(&self) -> &'static str {
        match self {
            PiFailure::Spawn { .. } => "runtime_unavailable",
            PiFailure::Malformed(_) => "runtime_malformed",
            PiFailure::Exited(_) | PiFailure::Unstoppable(_) | PiFailure::Write(_) => "runtime_exit",
            PiFailure::Hung { .. } => "runtime_timeout",
            PiFailure::Refused(_) => "runtime_refused",
            PiFailure::CannotFork(_) => "runtime_fork",
        }
    }
}

/// Which pi session a process works on, from its answer to `get_state`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PiSession {
    /// The JSONL file pi keeps the conversation in; `switch_session` reopens it in a later process.
    pub file: Option<String>,
    /// pi's own id of the session (chatwire's frames name chatwire's session).
    pub id: Option<String>,
    /// The context window of pi's current model.
    pub context_window: Option<u64>,
    /// Whether pi compacts the conversation by itself when the context nears the window.
    pub auto_compaction: bool,
    /// Whether pi's current model reads images (its `input` lists `image`); `None` when pi did not say.
    pub takes_images: Option<bool>,
}

/// What pi keeps free of the window for the answer: it compacts once the context passes the window less this (pi's
/// default `compaction.reserveTokens`; chatwire does not read pi's settings file).
const PI_COMPACTION_RESERVE: u64 = 16_384;

impl PiSession {
    fn from_state(response: &RpcResponse) -> PiSession {
        let data: Value =
            response.data.as_ref().and_then(|raw| serde_json::from_str(raw.0.get()).ok()).unwrap_or_default();
        let text = |key: &str| data.get(key).and_then(Value::as_str).map(str::to_owned);
        PiSession {
            file: text("sessionFile"),
            id: text("sessionId"),
            context_window: data["model"]["contextWindow"].as_u64(),
            auto_compaction: data["autoCompactionEnabled"].as_bool().unwrap_or(false),
            takes_images: data["model"]["input"]
                .as_array()
                .map(|input| input.iter().any(|kind| kind.as_str() == Some("image"))),
        }
    }

    /// Gives a call's usage what the session knows of the model's window.
    fn complete(&self, usage: &mut CallUsage) {
        usage.context_window = self.context_window;
        usage.compact_at = self
            .context_window
            .filter(|_| self.auto_compaction)
            .map(|window| window.saturating_sub(PI_COMPACTION_RESERVE));
    }
}

/// What starting a process found out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PiStarted {
    pub session: PiSession,
    /// True when the session had a pi session before and this process could not reopen it: pi starts over without
    /// the earlier conversation.
    pub reset: bool,
}

/// A command written to pi and not answered yet.
struct Pending {
    command: String,
    sent: Instant,
}

/// A running pi process, in a process group of its own so that killing it also ends the tools it started.
pub struct PiProcess {
    process: ChildProcess,
    writer: ChildWriter,
    stdout: mpsc::Receiver<StdoutLine>,
    next_command: u64,
    pending: HashMap<String, Pending>,
    last_heard: Instant,
    session: PiSession,
}

/// How long a pi whose output closed gets to exit before its group is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

impl PiProcess {
    pub fn spawn(config: &PiConfig, workspace: &Path) -> Result<PiProcess, PiFailure> {
        let spec = ChildSpec {
            program: config.program.clone(),
            args: config.args.iter().map(OsString::from).chain(["--mode".into(), "rpc".into()]).collect(),
            env: Default::default(),
            cwd: workspace.to_owned(),
            max_line_bytes: config.max_line_bytes,
            label: "pi".into(),
        };
        let Spawned { process, writer, stdout } = ChildProcess::spawn(&spec)
            .map_err(|error| PiFailure::Spawn { program: error.program, reason: error.reason })?;
        Ok(PiProcess {
            process,
            writer,
            stdout,
            next_command: 0,
            pending: HashMap::new(),
            last_heard: Instant::now(),
            session: PiSession::default(),
        })
    }

    /// True while the process has not exited.
    pub fn is_alive(&self) -> bool {
        self.process.is_alive()
    }

    /// The pi session this process works on, as of its latest answer to `get_state`.
    pub fn session(&self) -> &PiSession {
        &self.session
    }

    /// Writes one command under a fresh id and waits for its answer; returns the id.
    async fn send(&mut self, mut command: Value) -> Result<String, PiFailure> {
        self.next_command += 1;
        let id = format!("chatwire-{}", self.next_command);
        command["id"] = Value::String(id.clone());
        let kind = command["type"].as_str().unwrap_or_default().to_owned();
        self.write(&command).await?;
        self.pending.insert(id.clone(), Pending { command: kind, sent: Instant::now() });
        Ok(id)
    }

    /// Writes one JSON line to pi's stdin.
    async fn write(&mut self, message: &Value) -> Result<(), PiFailure> {
        self.writer.send_json(message).map_err(|closed| PiFailure::Write(closed.to_string()))
    }

    /// The next thing pi said; a closed or garbled stdout is the failure it means.
    async fn next_event(&mut self) -> Result<AgentEvent, PiFailure> {
        let line = self.stdout.recv().await;
        self.last_heard = Instant::now();
        let event = match line {
            Some(StdoutLine::Text { number, text }) => {
                AgentEvent::parse(&text).map_err(|error| PiFailure::Malformed(format!("line {number}: {error}")))?
            }
            Some(StdoutLine::Unreadable(why)) => return Err(PiFailure::Malformed(why)),
            None => return Err(PiFailure::Exited(self.process.exit_description(EXIT_GRACE).await)),
        };
        match event {
            AgentEvent::MessageEnd(mut message) => {
                if let Some(usage) = &mut message.usage {
                    self.session.complete(usage);
                }
                Ok(AgentEvent::MessageEnd(message))
            }
            event => Ok(event),
        }
    }

    /// Takes the answer to one of our commands off the pending list, and what it says about the session.
    fn answered(&mut self, response: &RpcResponse) -> Option<Pending> {
        let pending = self.pending.remove(response.id.as_deref()?)?;
        if pending.command == "get_state" && response.success {
            self.session = PiSession::from_state(response);
        }
        Some(pending)
    }

    /// When pi is overdue: the oldest unanswered command's deadline, else the moment a quiet pi is asked for its
    /// state. The command that is late, if one is.
    fn deadline(&self, timeout: Duration) -> (Instant, Option<&str>) {
        match self.pending.values().min_by_key(|pending| pending.sent) {
            Some(oldest) => (oldest.sent + timeout, Some(&oldest.command)),
            None => (self.last_heard + timeout, None),
        }
    }

    /// Sends a command and waits for its answer, outside any run (what pi says meanwhile has no run to go to).
    async fn request(&mut self, command: Value, timeout: Duration) -> Result<RpcResponse, PiFailure> {
        let kind = command["type"].as_str().unwrap_or_default().to_owned();
        let id = self.send(command).await?;
        let deadline = Instant::now() + timeout;
        loop {
            let event = tokio::time::timeout_at(deadline, self.next_event())
                .await
                .map_err(|_| PiFailure::Hung { command: kind.clone(), timeout })??;
            match event {
                AgentEvent::Response(response) if response.id.as_deref() == Some(id.as_str()) => {
                    self.answered(&response);
                    return Ok(response);
                }
                other => tracing::debug!(target: "chatwire::pi", "outside a run: {other:?}"),
            }
        }
    }
}

/// Starts the session's pi process unless one is running: reopens `resume` (the pi session file the chatwire session
/// used before) with `switch_session`, then asks `get_state` which session it is on. `None` when a process was
/// already running.
pub async fn start(
    slot: &mut Option<Box<PiProcess>>,
    config: &PiConfig,
    workspace: &Path,
    resume: Option<&str>,
) -> Result<Option<PiStarted>, PiFailure> {
    if slot.as_mut().is_some_and(|process| process.is_alive()) {
        return Ok(None);
    }
    *slot = None;
    let mut process = Box::new(PiProcess::spawn(config, workspace)?);
    let mut reopened = false;
    if let Some(file) = resume.filter(|file| !Path::new(file).is_file()) {
        // Another instance without a shared data dir ran the session, or the file was removed.
        tracing::warn!(
            target: "chatwire::pi",
            "pi's session file {file} is not on this server's disk: pi starts the conversation afresh"
        );
    }
    if let Some(file) = resume.filter(|file| Path::new(file).is_file()) {
        let answer = process.request(json!({"type": "switch_session", "sessionPath": file}), config.timeout).await?;
        if !answer.success {
            tracing::warn!(target: "chatwire::pi", "pi could not reopen {file}: {}", answer.error.unwrap_or_default());
        }
        reopened = answer.success;
    }
    process.request(json!({"type": "get_state"}), config.timeout).await?;
    let session = process.session.clone();
    let reset = resume.is_some() && !(reopened && session.file.as_deref() == resume);
    *slot = Some(process);
    Ok(Some(PiStarted { session, reset }))
}

/// pi's `prompt`: text files go into the message as fenced blocks, images as its `images` (`ImageContent`).
fn prompt_command(prompt: &Prompt) -> Value {
    let message = with_text_files(&prompt.text, &prompt.files);
    let images: Vec<Value> = prompt
        .files
        .iter()
        .filter(|file| file.is_image())
        .map(|file| json!({"type": "image", "data": base64_of(&file.bytes), "mimeType": file.media_type}))
        .collect();
    match images.is_empty() {
        true => json!({"type": "prompt", "message": message}),
        false => json!({"type": "prompt", "message": message, "images": images}),
    }
}

/// Where the run stands, as far as deciding that pi is done goes.
#[derive(Default)]
struct Progress {
    agent_active: bool,
    retry_pending: bool,
    /// The id of the `get_state` sent once pi looked idle; its answer settles the run.
    settle_probe: Option<String>,
    abort_sent: Option<Instant>,
}

/// Runs one prompt on the session's pi process (see `start`) until pi is idle with nothing queued and no retry
/// pending, and returns the session pi is on then. Every event goes to `events`, except pi's answers to chatwire's
/// commands, which are this driver's business; the caller settles the run. A process that misbehaves is dropped from
/// `slot`, so the next run starts a fresh one.
pub async fn run(
    slot: &mut Option<Box<PiProcess>>,
    config: &PiConfig,
    prompt: Prompt,
    control: &RunControl,
    events: &mpsc::UnboundedSender<AgentEvent>,
) -> Result<PiSession, PiFailure> {
    let Some(process) = slot.as_mut() else {
        return Err(PiFailure::Exited(" before the run began".into()));
    };
    let outcome = drive(process, config, prompt, control, events).await;
    if outcome.is_err() {
        // Killed on drop; the session gets a fresh process next time.
        *slot = None;
    }
    outcome
}

async fn drive(
    process: &mut PiProcess,
    config: &PiConfig,
    prompt: Prompt,
    control: &RunControl,
    events: &mpsc::UnboundedSender<AgentEvent>,
) -> Result<PiSession, PiFailure> {
    process.send(prompt_command(&prompt)).await?;
    let mut progress = Progress { agent_active: true, ..Progress::default() };
    let (answers_in, mut answers) = mpsc::unbounded_channel::<UiReply>();
    loop {
        let abort_deadline = progress.abort_sent.map(|at| at + config.abort_grace);
        let (overdue_at, _) = process.deadline(config.timeout);
        tokio::select! {
            event = process.next_event() => match event? {
                AgentEvent::Response(response) => {
                    let Some(pending) = process.answered(&response) else { continue };
                    if response.id == progress.settle_probe {
                        if progress.looks_idle() {
                            return Ok(process.session.clone());
                        }
                        // pi went on (a retry began) before it answered; ask again when it looks idle next.
                        progress.settle_probe = None;
                    }
                    match (pending.command.as_str(), response.success) {
                        ("prompt", false) => return Err(PiFailure::Refused(response.error.unwrap_or_default())),
                        (command, false) => tracing::warn!(
                            target: "chatwire::pi",
                            "pi refused `{command}`: {}",
                            response.error.unwrap_or_default()
                        ),
                        (_, true) => {}
                    }
                }
                event => {
                    observe(&event, &mut progress, control, &answers_in);
                    let _ = events.send(event);
                    probe_once_idle(process, &mut progress, control).await?;
                }
            },
            () = control.wake.notified() => {
                forward_queued(process, control).await?;
                // A message queued as pi's agent ended reaches an idle pi, which says nothing more about it.
                probe_once_idle(process, &mut progress, control).await?;
            }
            Some(UiReply { id, method, outcome }) = answers.recv() => {
                let tool_call_id = format!("ui-{id}");
                let (text, is_error) = match outcome {
                    UiOutcome::Answered(answer) => {
                        // An answer to pi's request carries that request's id, not one of ours.
                        let response = match (method.as_str(), &answer) {
                            (_, None) => json!({"type": "extension_ui_response", "id": id, "cancelled": true}),
                            ("confirm", Some(answer)) => {
                                json!({"type": "extension_ui_response", "id": id, "confirmed": is_yes(answer)})
                            }
                            (_, Some(answer)) => json!({"type": "extension_ui_response", "id": id, "value": answer}),
                        };
                        process.write(&response).await?;
                        (answer.unwrap_or_else(|| SKIPPED.to_owned()), false)
                    }
                    // pi resolved the dialog itself when its timeout ran out; an answer now would reach nobody.
                    UiOutcome::TimedOut(limit) => {
                        control.questions.lock().expect("the question lock is never poisoned").remove(&tool_call_id);
                        (format!("timed out after {:.1} s without an answer; pi went on without one", limit.as_secs_f64()), true)
                    }
                };
                let _ = events.send(AgentEvent::ToolExecutionEnd {
                    tool_call_id,
                    tool_name: "question".into(),
                    result: ToolResult { text, details: None },
                    is_error,
                });
            }
            () = control.cancel.cancelled(), if progress.abort_sent.is_none() => {
                // pi's `abort` also cancels a retry that is waiting (`abort_retry` is only that part of it).
                process.send(json!({"type": "abort"})).await?;
                progress.abort_sent = Some(Instant::now());
            }
            () = sleep_until(abort_deadline) => return Err(PiFailure::Unstoppable(config.abort_grace)),
            () = tokio::time::sleep_until(overdue_at) => {
                match process.deadline(config.timeout) {
                    (_, Some(command)) => {
                        return Err(PiFailure::Hung { command: command.to_owned(), timeout: config.timeout });
                    }
                    // Quiet for a whole timeout, maybe in a long silent tool: a live pi answers this at once.
                    (_, None) => {
                        process.send(json!({"type": "get_state"})).await?;
                    }
                }
            }
        }
    }
}

/// How a dialog pi asked for ended, for the run loop to pass on.
struct UiReply {
    id: String,
    method: String,
    outcome: UiOutcome,
}

enum UiOutcome {
    /// The user's answer; `None` when they skipped it.
    Answered(Option<String>),
    TimedOut(Duration),
}

impl UiOutcome {
    fn answered(answer: String) -> UiOutcome {
        UiOutcome::Answered((answer != SKIPPED).then_some(answer))
    }
}

/// What the transcript shows as the answer to a question the user skipped.
pub const SKIPPED: &str = "(the user skipped this question)";

impl Progress {
    /// Nothing running and no retry waiting. A message pi still queues then reached it after the agent ended; pi
    /// delivers it with the next prompt rather than on its own, so it is not waited for.
    fn looks_idle(&self) -> bool {
        !self.agent_active && !self.retry_pending
    }
}

/// Once pi looks idle and nothing waits in the run's queue, closes the queue and asks pi for its state: pi says
/// nothing when it is done, and its answer to a question asked now comes after everything it had to say, settling
/// the run if pi is still idle then.
async fn probe_once_idle(
    process: &mut PiProcess,
    progress: &mut Progress,
    control: &RunControl,
) -> Result<(), PiFailure> {
    if progress.looks_idle() && progress.settle_probe.is_none() && close_queue(control) {
        progress.settle_probe = Some(process.send(json!({"type": "get_state"})).await?);
    }
    Ok(())
}

/// Closes the run's queue when nothing waits in it, so a send from now on starts the next run; false otherwise.
fn close_queue(control: &RunControl) -> bool {
    let mut queues = control.queues.lock().expect("the queue lock is never poisoned");
    queues.closed = queues.steering.is_empty() && queues.follow_up.is_empty();
    queues.closed
}

/// Tracks what `event` says about pi's state, and registers pi's questions for the user's answer.
fn observe(
    event: &AgentEvent,
    progress: &mut Progress,
    control: &RunControl,
    answers: &mpsc::UnboundedSender<UiReply>,
) {
    match event {
        AgentEvent::AgentStart => {
            progress.agent_active = true;
            progress.retry_pending = false;
            progress.settle_probe = None;
            control.queues.lock().expect("the queue lock is never poisoned").closed = false;
        }
        AgentEvent::AgentEnd => progress.agent_active = false,
        AgentEvent::AutoRetryStart { .. } => progress.retry_pending = true,
        AgentEvent::AutoRetryEnd { .. } => progress.retry_pending = false,
        AgentEvent::ExtensionUiRequest(request)
            if matches!(request.method.as_str(), "select" | "confirm" | "input") =>
        {
            let (sender, receiver) = oneshot::channel();
            let tool_call_id = format!("ui-{}", request.id);
            control.questions.lock().expect("the question lock is never poisoned").insert(tool_call_id, sender);
            let (id, method, answers) = (request.id.clone(), request.method.clone(), answers.clone());
            // pi's dialog `timeout` is in milliseconds; when it runs out pi answers itself and goes on.
            let limit = request.fields.get("timeout").and_then(Value::as_u64).map(Duration::from_millis);
            tokio::spawn(async move {
                let outcome = match limit {
                    Some(limit) => match tokio::time::timeout(limit, receiver).await {
                        Ok(answer) => answer.ok().map(UiOutcome::answered),
                        Err(_) => Some(UiOutcome::TimedOut(limit)),
                    },
                    None => receiver.await.ok().map(UiOutcome::answered),
                };
                if let Some(outcome) = outcome {
                    let _ = answers.send(UiReply { id, method, outcome });
                }
            });
        }
        AgentEvent::AgentSettled
        | AgentEvent::TurnStart
        | AgentEvent::TurnEnd
        | AgentEvent::MessageStart(_)
        | AgentEvent::MessageEnd(_)
        | AgentEvent::MessageUpdate(_)
        | AgentEvent::ToolExecutionStart { .. }
        | AgentEvent::ToolExecutionUpdate { .. }
        | AgentEvent::ToolExecutionEnd { .. }
        | AgentEvent::ToolApprovalRequest { .. }
        | AgentEvent::ToolApprovalEnd { .. }
        | AgentEvent::CompactionStart { .. }
        | AgentEvent::CompactionEnd { .. }
        | AgentEvent::QueueUpdate { .. }
        | AgentEvent::PlanUpdate { .. }
        | AgentEvent::AgentOptions(_)
        | AgentEvent::ExtensionUiRequest(_)
        | AgentEvent::Response(_)
        | AgentEvent::Ignored(_)
        | AgentEvent::Unknown(_) => {}
    }
}

/// Sends what was queued for the running agent as pi's own `steer` and `follow_up` commands.
async fn forward_queued(process: &mut PiProcess, control: &RunControl) -> Result<(), PiFailure> {
    let (steering, follow_up) = {
        let mut queues = control.queues.lock().expect("the queue lock is never poisoned");
        (queues.steering.drain(..).collect::<Vec<_>>(), queues.follow_up.drain(..).collect::<Vec<_>>())
    };
    for message in steering {
        process.send(json!({"type": "steer", "message": message})).await?;
    }
    for message in follow_up {
        process.send(json!({"type": "follow_up", "message": message})).await?;
    }
    Ok(())
}

fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "yes" | "y" | "true" | "ok" | "confirm" | "confirmed")
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::attached::AttachedFile;

    fn file(name: &str, media_type: &str, bytes: &[u8]) -> AttachedFile {
        AttachedFile { name: name.into(), media_type: media_type.into(), bytes: bytes.into() }
    }

    #[test]
    fn a_prompt_carries_images_as_pi_image_content_and_text_files_in_its_message() {
        let prompt = Prompt {
            text: "see".into(),
            files: vec![file("dot.png", "image/png", b"\x89PNG"), file("a.txt", "text/plain", b"hi")],
        };
        assert_eq!(
            prompt_command(&prompt),
            json!({"type": "prompt", "message": "see\n\n```a.txt\nhi\n```",
                "images": [{"type": "image", "data": "iVBORw==", "mimeType": "image/png"}]})
        );
        assert_eq!(prompt_command(&Prompt::from("plain")), json!({"type": "prompt", "message": "plain"}));
    }

    #[test]
    fn the_state_says_whether_the_model_takes_images() {
        let state = |input: Value| {
            let data = serde_json::value::to_raw_value(&json!({"model": {"input": input}})).unwrap();
            let response = RpcResponse {
                id: None,
                command: "get_state".into(),
                success: true,
                data: Some(crate::runtime::event::RawJson(data)),
                error: None,
            };
            PiSession::from_state(&response).takes_images
        };
        assert_eq!(state(json!(["text"])), Some(false));
        assert_eq!(state(json!(["text", "image"])), Some(true));
        assert_eq!(state(Value::Null), None);
    }
}

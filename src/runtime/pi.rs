//! The pi runtime: one `pi --mode rpc` process per session, driven by JSON commands on its stdin and read as agent
//! events on its stdout, for the same mapper the built-in agent feeds.
//!
//! Framing is LF only with one trailing CR stripped (`ndjson::LineSplitter`): a generic line reader would also split
//! on U+2028/U+2029, which JSON strings may contain raw.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, oneshot};

use super::agent::RunControl;
use super::event::{AgentEvent, ToolResult};
use crate::ndjson::{LineEvent, LineSplitter};

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
}

impl Default for PiConfig {
    fn default() -> Self {
        PiConfig {
            program: "pi".into(),
            args: Vec::new(),
            max_line_bytes: 16 << 20,
            abort_grace: Duration::from_secs(10),
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
}

impl PiFailure {
    pub fn code(&self) -> &'static str {
        match self {
            PiFailure::Spawn { .. } => "runtime_unavailable",
            PiFailure::Malformed(_) => "runtime_malformed",
            PiFailure::Exited(_) | PiFailure::Unstoppable(_) | PiFailure::Write(_) => "runtime_exit",
        }
    }
}

/// What the stdout reader hands the driver.
enum Output {
    Event(AgentEvent),
    Malformed(String),
    Closed,
}

/// A running pi process.
pub struct PiProcess {
    child: Child,
    stdin: ChildStdin,
    output: mpsc::UnboundedReceiver<Output>,
    /// The last lines pi wrote to stderr, for the error shown when it dies.
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    next_command: u64,
}

const STDERR_LINES_KEPT: usize = 5;

impl PiProcess {
    pub fn spawn(config: &PiConfig, workspace: &Path) -> Result<PiProcess, PiFailure> {
        let mut child = Command::new(&config.program)
            .args(&config.args)
            .args(["--mode", "rpc"])
            .current_dir(workspace)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| PiFailure::Spawn { program: config.program.display().to_string(), reason: e.to_string() })?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let mut stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let (sender, output) = mpsc::unbounded_channel();
        let max_line_bytes = config.max_line_bytes;
        tokio::spawn(async move {
            let mut splitter = LineSplitter::new(max_line_bytes);
            let mut buffer = vec![0_u8; 64 * 1024];
            let mut deliver = |event: LineEvent<'_>| {
                let output = match event {
                    LineEvent::Line(line) if line.bytes.is_empty() => return,
                    LineEvent::Line(line) => match std::str::from_utf8(line.bytes) {
                        Ok(text) => match AgentEvent::parse(text) {
                            Ok(event) => Output::Event(event),
                            Err(error) => Output::Malformed(format!("line {}: {error}", line.number)),
                        },
                        Err(_) => Output::Malformed(format!("line {}: not UTF-8", line.number)),
                    },
                    LineEvent::TooLong { number, limit } => {
                        Output::Malformed(format!("line {number}: longer than {limit} bytes"))
                    }
                };
                let _ = sender.send(output);
            };
            loop {
                match stdout.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(read) => splitter.feed(&buffer[..read], &mut deliver),
                }
            }
            splitter.finish(&mut deliver);
            let _ = sender.send(Output::Closed);
        });
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = stderr_tail.clone();
        tokio::spawn(async move {
            let mut buffer = vec![0_u8; 8 * 1024];
            let mut splitter = LineSplitter::new(4 * 1024);
            loop {
                match stderr.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(read) => splitter.feed(&buffer[..read], |event| {
                        if let LineEvent::Line(line) = event {
                            let text = String::from_utf8_lossy(line.bytes).into_owned();
                            tracing::debug!(target: "chatwire::pi", "{text}");
                            let mut tail = tail.lock().expect("the stderr lock is never poisoned");
                            if tail.len() == STDERR_LINES_KEPT {
                                tail.pop_front();
                            }
                            tail.push_back(text);
                        }
                    }),
                }
            }
        });
        Ok(PiProcess { child, stdin, output, stderr_tail, next_command: 0 })
    }

    /// True while the process has not exited.
    pub fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Writes one command under a fresh id; returns the id.
    async fn send(&mut self, mut command: Value) -> Result<String, PiFailure> {
        self.next_command += 1;
        let id = format!("chatwire-{}", self.next_command);
        command["id"] = Value::String(id.clone());
        self.write(&command).await?;
        Ok(id)
    }

    /// Writes one JSON line to pi's stdin.
    async fn write(&mut self, message: &Value) -> Result<(), PiFailure> {
        let mut line = serde_json::to_vec(message).expect("a JSON value serializes");
        line.push(b'\n');
        self.stdin.write_all(&line).await.map_err(|e| PiFailure::Write(e.to_string()))?;
        self.stdin.flush().await.map_err(|e| PiFailure::Write(e.to_string()))
    }

    /// How the process ended, with what it last said on stderr.
    async fn exit_description(&mut self) -> String {
        let status = match tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await {
            Ok(Ok(status)) => format!(" ({status})"),
            Ok(Err(_)) | Err(_) => String::new(),
        };
        let tail = self.stderr_tail.lock().expect("the stderr lock is never poisoned");
        match tail.back() {
            Some(last) => format!("{status}: {last}"),
            None => status,
        }
    }
}

/// Where the run stands, as far as deciding that pi is done goes.
#[derive(Default)]
struct Progress {
    agent_active: bool,
    retry_pending: bool,
    queued_in_pi: bool,
    /// The id of the `get_state` sent once pi looked idle; its answer settles the run.
    settle_probe: Option<String>,
    abort_sent: Option<tokio::time::Instant>,
}

/// Runs one prompt on the session's pi process (started if there is none or it died) until pi is idle with nothing
/// queued and no retry pending. Every event goes to `events`; a process that misbehaves is dropped from `slot`, so
/// the next run starts a fresh one.
pub async fn run(
    slot: &mut Option<Box<PiProcess>>,
    config: &PiConfig,
    workspace: &Path,
    prompt: String,
    control: &RunControl,
    events: &mpsc::UnboundedSender<AgentEvent>,
) -> Result<(), PiFailure> {
    if !slot.as_mut().is_some_and(|process| process.is_alive()) {
        *slot = Some(Box::new(PiProcess::spawn(config, workspace)?));
    }
    let process = slot.as_mut().expect("started above");
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
    prompt: String,
    control: &RunControl,
    events: &mpsc::UnboundedSender<AgentEvent>,
) -> Result<(), PiFailure> {
    process.send(json!({"type": "prompt", "message": prompt})).await?;
    let mut progress = Progress { agent_active: true, ..Progress::default() };
    let (answers_in, mut answers) = mpsc::unbounded_channel::<(String, String, String)>();
    loop {
        let abort_deadline = progress.abort_sent.map(|at| at + config.abort_grace);
        tokio::select! {
            output = process.output.recv() => match output {
                Some(Output::Event(event)) => {
                    let settled = observe(&event, &mut progress, control, &answers_in);
                    let _ = events.send(event);
                    if settled {
                        return Ok(());
                    }
                    if progress.looks_idle() && progress.settle_probe.is_none() && close_queue(control) {
                        // pi says nothing when it is done; its answer to a question asked now comes after everything
                        // it had to say, and settles the run if pi is still idle then.
                        progress.settle_probe = Some(process.send(json!({"type": "get_state"})).await?);
                    }
                }
                Some(Output::Malformed(why)) => return Err(PiFailure::Malformed(why)),
                Some(Output::Closed) | None => return Err(PiFailure::Exited(process.exit_description().await)),
            },
            () = control.wake.notified() => forward_queued(process, control).await?,
            Some((id, method, answer)) = answers.recv() => {
                // An answer to pi's request carries that request's id, not one of ours.
                let response = match method.as_str() {
                    "confirm" => json!({"type": "extension_ui_response", "id": id, "confirmed": is_yes(&answer)}),
                    _ => json!({"type": "extension_ui_response", "id": id, "value": answer}),
                };
                process.write(&response).await?;
                let _ = events.send(AgentEvent::ToolExecutionEnd {
                    tool_call_id: format!("ui-{id}"),
                    tool_name: "question".into(),
                    result: ToolResult { text: answer, details: None },
                    is_error: false,
                });
            }
            () = control.cancel.cancelled(), if progress.abort_sent.is_none() => {
                process.send(json!({"type": "abort"})).await?;
                progress.abort_sent = Some(tokio::time::Instant::now());
            }
            () = sleep_until(abort_deadline) => return Err(PiFailure::Unstoppable(config.abort_grace)),
        }
    }
}

impl Progress {
    fn looks_idle(&self) -> bool {
        !self.agent_active && !self.retry_pending && !self.queued_in_pi
    }
}

/// Closes the run's queue when nothing waits in it, so a send from now on starts the next run; false otherwise.
fn close_queue(control: &RunControl) -> bool {
    let mut queues = control.queues.lock().expect("the queue lock is never poisoned");
    queues.closed = queues.steering.is_empty() && queues.follow_up.is_empty();
    queues.closed
}

/// Tracks what `event` says about pi's state; true when it is the answer that settles the run.
fn observe(
    event: &AgentEvent,
    progress: &mut Progress,
    control: &RunControl,
    answers: &mpsc::UnboundedSender<(String, String, String)>,
) -> bool {
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
        AgentEvent::QueueUpdate { steering, follow_up } => {
            progress.queued_in_pi = !steering.is_empty() || !follow_up.is_empty();
        }
        AgentEvent::ExtensionUiRequest(request)
            if matches!(request.method.as_str(), "select" | "confirm" | "input") =>
        {
            let (sender, receiver) = oneshot::channel();
            let tool_call_id = format!("ui-{}", request.id);
            control.questions.lock().expect("the question lock is never poisoned").insert(tool_call_id, sender);
            let (id, method, answers) = (request.id.clone(), request.method.clone(), answers.clone());
            tokio::spawn(async move {
                if let Ok(answer) = receiver.await {
                    let _ = answers.send((id, method, answer));
                }
            });
        }
        AgentEvent::Response(response) => {
            return progress.settle_probe.is_some() && response.id == progress.settle_probe && progress.looks_idle();
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
        | AgentEvent::ExtensionUiRequest(_)
        | AgentEvent::Ignored(_)
        | AgentEvent::Unknown(_) => {}
    }
    false
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

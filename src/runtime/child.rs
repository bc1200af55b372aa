//! The one helper that runs chatwire's line-speaking child processes (pi, MCP servers, ACP agents): a process group
//! of their own, stdout split into capped lines, stdin fed from a queue, the tail of stderr kept for error messages,
//! and the whole group killed when the handle is dropped. The protocols sit on top of it.
//!
//! Framing is LF only with one trailing CR stripped (`ndjson::LineSplitter`): a generic line reader would also split
//! on U+2028/U+2029, which JSON strings may contain raw.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::sync::{mpsc, watch};

use crate::ndjson::{LineEvent, LineSplitter};

/// Lines of stderr kept for the message shown when a child dies.
const STDERR_LINES_KEPT: usize = 5;
/// A stderr line longer than this is cut: it is only logged and quoted.
const MAX_STDERR_LINE_BYTES: usize = 4 * 1024;
/// Lines read ahead of the consumer. A child that writes faster than it is read waits on its pipe instead of
/// growing chatwire's memory.
const STDOUT_LINES_QUEUED: usize = 1024;

/// What to start.
#[derive(Debug, Clone)]
pub struct ChildSpec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// Variables set on top of chatwire's own environment.
    pub env: BTreeMap<String, String>,
    pub cwd: PathBuf,
    /// The longest stdout line taken; a longer one is reported as `StdoutLine::Unreadable` and skipped.
    pub max_line_bytes: usize,
    /// Who the child is in logs, e.g. `pi` or `MCP server files`.
    pub label: String,
}

/// One line the child wrote on stdout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StdoutLine {
    /// A non-blank line of UTF-8 text, without its line end; `number` counts from 1.
    Text { number: u64, text: String },
    /// A line that was too long or not UTF-8, and why.
    Unreadable(String),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("could not start `{program}`: {reason}")]
pub struct SpawnError {
    pub program: String,
    pub reason: String,
}

/// The stdin side: lines queued here are written in order by a task of their own, so any number of tasks may send.
#[derive(Debug, Clone)]
pub struct ChildWriter {
    lines: mpsc::UnboundedSender<Vec<u8>>,
}

/// The child's stdin is closed: it exited or stopped reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the process no longer reads its input")]
pub struct WriteClosed;

impl ChildWriter {
    /// Queues `message` as one JSON line.
    pub fn send_json(&self, message: &impl serde::Serialize) -> Result<(), WriteClosed> {
        let mut line = serde_json::to_vec(message).expect("chatwire's own messages serialize");
        line.push(b'\n');
        self.lines.send(line).map_err(|_| WriteClosed)
    }
}

/// A running child. Dropping it kills the child's whole process group, and with it whatever the child started.
#[derive(Debug)]
pub struct ChildProcess {
    /// The child's pid, which is also its process group's id.
    group: Option<rustix::process::Pid>,
    /// `None` while it runs; then how it ended, as words for an error message.
    exit: watch::Receiver<Option<String>>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

/// Everything `spawn` hands back.
pub struct Spawned {
    pub process: ChildProcess,
    pub writer: ChildWriter,
    /// Closes (`recv` gives `None`) once stdout is closed and every line before it was read.
    pub stdout: mpsc::Receiver<StdoutLine>,
}

impl ChildProcess {
    pub fn spawn(spec: &ChildSpec) -> Result<Spawned, SpawnError> {
        let mut child = Command::new(&spec.program)
            .args(&spec.args)
            .envs(&spec.env)
            .current_dir(&spec.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| SpawnError {
                program: spec.program.display().to_string(),
                reason: format!("{error} (in {})", spec.cwd.display()),
            })?;
        let group = child.id().and_then(|pid| rustix::process::Pid::from_raw(pid as i32));
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");

        let (lines, queued) = mpsc::unbounded_channel();
        tokio::spawn(write_lines(stdin, queued));
        let (sender, receiver) = mpsc::channel(STDOUT_LINES_QUEUED);
        tokio::spawn(read_lines(stdout, spec.max_line_bytes, sender));
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        tokio::spawn(keep_stderr(stderr, spec.label.clone(), stderr_tail.clone()));
        let (exited, exit) = watch::channel(None);
        tokio::spawn(async move {
            let status = match child.wait().await {
                Ok(status) => format!(" ({status})"),
                Err(error) => format!(" (its status is unknown: {error})"),
            };
            let _ = exited.send(Some(status));
        });
        let process = ChildProcess { group, exit, stderr_tail };
        Ok(Spawned { process, writer: ChildWriter { lines }, stdout: receiver })
    }

    /// True while the process has not exited.
    pub fn is_alive(&self) -> bool {
        self.exit.borrow().is_none()
    }

    /// Sends SIGKILL to the child's process group.
    pub fn kill(&self) {
        if let Some(group) = self.group {
            kill_group(group);
        }
    }

    /// The last line the child wrote on stderr.
    pub fn last_stderr_line(&self) -> Option<String> {
        self.exit_watch().last_stderr_line()
    }

    /// How the process ended; see `ExitWatch::describe`.
    pub async fn exit_description(&self, grace: Duration) -> String {
        self.exit_watch().describe(grace).await
    }

    /// A handle that tells how the process ended, for a task that does not own it (a reader whose stdout closed).
    pub fn exit_watch(&self) -> ExitWatch {
        ExitWatch { group: self.group, exit: self.exit.clone(), stderr_tail: self.stderr_tail.clone() }
    }
}

/// How a child ended, readable without its handle.
#[derive(Debug, Clone)]
pub struct ExitWatch {
    group: Option<rustix::process::Pid>,
    exit: watch::Receiver<Option<String>>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

impl ExitWatch {
    pub fn last_stderr_line(&self) -> Option<String> {
        self.stderr_tail.lock().expect("the stderr lock is never poisoned").back().cloned()
    }

    /// How the process ended, e.g. ` (exit status: 1): Error: no model`: its status once it exited (waiting up to
    /// `grace` for it), then its last line on stderr. A process still running after `grace` is killed, since a child
    /// that closed its stdout can never answer again.
    pub async fn describe(&self, grace: Duration) -> String {
        let mut exit = self.exit.clone();
        let status = match tokio::time::timeout(grace, exit.wait_for(Option::is_some)).await {
            Ok(Ok(status)) => status.clone().unwrap_or_default(),
            Ok(Err(_)) => String::new(),
            Err(_) => {
                if let Some(group) = self.group {
                    kill_group(group);
                }
                " (it stopped answering and was killed)".to_owned()
            }
        };
        match self.last_stderr_line() {
            Some(line) => format!("{status}: {line}"),
            None => status,
        }
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// SIGKILL to process group `group`; a group that is already gone is fine.
pub fn kill_group(group: rustix::process::Pid) {
    let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
}

async fn write_lines(mut stdin: tokio::process::ChildStdin, mut queued: mpsc::UnboundedReceiver<Vec<u8>>) {
    while let Some(line) = queued.recv().await {
        if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
            // The receiver goes with this task, so every later send says the input is closed.
            break;
        }
    }
}

async fn read_lines(mut stdout: tokio::process::ChildStdout, max_line_bytes: usize, sender: mpsc::Sender<StdoutLine>) {
    let mut splitter = LineSplitter::new(max_line_bytes);
    let mut buffer = vec![0_u8; 64 * 1024];
    let mut ready = Vec::new();
    loop {
        match stdout.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => splitter.feed(&buffer[..read], |event| ready.extend(stdout_line(event))),
        }
        for line in ready.drain(..) {
            if sender.send(line).await.is_err() {
                // Nobody reads any more: the handle is gone and the group killed.
                return;
            }
        }
    }
    splitter.finish(|event| ready.extend(stdout_line(event)));
    for line in ready {
        let _ = sender.send(line).await;
    }
}

fn stdout_line(event: LineEvent<'_>) -> Option<StdoutLine> {
    match event {
        LineEvent::Line(line) if line.bytes.iter().all(u8::is_ascii_whitespace) => None,
        LineEvent::Line(line) => Some(match std::str::from_utf8(line.bytes) {
            Ok(text) => StdoutLine::Text { number: line.number, text: text.to_owned() },
            Err(_) => StdoutLine::Unreadable(format!("line {}: not UTF-8", line.number)),
        }),
        LineEvent::TooLong { number, limit } => {
            Some(StdoutLine::Unreadable(format!("line {number}: longer than {limit} bytes")))
        }
    }
}

async fn keep_stderr(mut stderr: tokio::process::ChildStderr, label: String, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut splitter = LineSplitter::new(MAX_STDERR_LINE_BYTES);
    let mut buffer = vec![0_u8; 8 * 1024];
    let mut keep = |event: LineEvent<'_>| {
        if let LineEvent::Line(line) = event {
            let text = String::from_utf8_lossy(line.bytes).trim_end().to_owned();
            if text.is_empty() {
                return;
            }
            tracing::info!(target: "chatwire::child", child = %label, "{text}");
            let mut tail = tail.lock().expect("the stderr lock is never poisoned");
            if tail.len() == STDERR_LINES_KEPT {
                tail.pop_front();
            }
            tail.push_back(text);
        }
    };
    loop {
        match stderr.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => splitter.feed(&buffer[..read], &mut keep),
        }
    }
    splitter.finish(keep);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(script: &str, max_line_bytes: usize) -> ChildSpec {
        ChildSpec {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: BTreeMap::new(),
            cwd: std::env::temp_dir(),
            max_line_bytes,
            label: "test".into(),
        }
    }

    async fn all_lines(stdout: &mut mpsc::Receiver<StdoutLine>) -> Vec<StdoutLine> {
        let mut lines = Vec::new();
        while let Some(line) = stdout.recv().await {
            lines.push(line);
        }
        lines
    }

    #[tokio::test]
    async fn lines_come_whole_and_a_long_one_is_reported_and_skipped() {
        let script = "printf 'one\\r\\n\\n  \\n'; head -c 100 /dev/zero | tr '\\0' x; printf '\\ntwo\\342\\200\\250still two\\n'";
        let Spawned { process, mut stdout, .. } = ChildProcess::spawn(&shell(script, 50)).unwrap();
        let lines = all_lines(&mut stdout).await;
        assert_eq!(
            lines,
            [
                StdoutLine::Text { number: 1, text: "one".into() },
                StdoutLine::Unreadable("line 4: longer than 50 bytes".into()),
                StdoutLine::Text { number: 5, text: "two\u{2028}still two".into() },
            ]
        );
        assert_eq!(process.exit_description(Duration::from_secs(10)).await, " (exit status: 0)");
    }

    #[tokio::test]
    async fn what_is_written_reaches_stdin_in_order() {
        let Spawned { process, writer, mut stdout } = ChildProcess::spawn(&shell("head -n 2", 1024)).unwrap();
        writer.send_json(&serde_json::json!({"n": 1})).unwrap();
        writer.send_json(&serde_json::json!({"n": 2})).unwrap();
        let lines = all_lines(&mut stdout).await;
        let texts: Vec<_> = lines
            .iter()
            .map(|line| match line {
                StdoutLine::Text { text, .. } => text.as_str(),
                StdoutLine::Unreadable(why) => why.as_str(),
            })
            .collect();
        assert_eq!(texts, [r#"{"n":1}"#, r#"{"n":2}"#]);
        process.exit_description(Duration::from_secs(10)).await;
        assert!(!process.is_alive());
    }

    #[tokio::test]
    async fn the_exit_names_the_status_and_the_last_stderr_line() {
        let script = "echo starting >&2; echo 'Error: no model' >&2; exit 3";
        let Spawned { process, mut stdout, .. } = ChildProcess::spawn(&shell(script, 1024)).unwrap();
        assert!(all_lines(&mut stdout).await.is_empty());
        let described = process.exit_description(Duration::from_secs(10)).await;
        // The stderr reader may still be on its way when the exit is seen; the status is there at once.
        assert!(described.starts_with(" (exit status: 3)"), "{described}");
    }

    #[tokio::test]
    async fn dropping_the_handle_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild.pid");
        let script = format!("sleep 30 & echo $! > {}; echo ready; wait", pid_file.display());
        let Spawned { process, mut stdout, .. } = ChildProcess::spawn(&shell(&script, 1024)).unwrap();
        assert!(matches!(stdout.recv().await, Some(StdoutLine::Text { text, .. }) if text == "ready"));
        let grandchild: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        let grandchild = rustix::process::Pid::from_raw(grandchild).unwrap();
        drop(process);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while rustix::process::test_kill_process(grandchild).is_ok() {
            assert!(std::time::Instant::now() < deadline, "the grandchild survived its group's kill");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn a_program_that_is_not_there_is_a_clear_error() {
        let spec = ChildSpec { program: "/nonexistent/agent".into(), ..shell("", 1024) };
        let error = ChildProcess::spawn(&spec).err().expect("no such program");
        assert_eq!(error.program, "/nonexistent/agent");
        assert!(error.reason.contains("No such file"), "{}", error.reason);
    }
}

//! The `bash` tool: runs a command in the workspace in its own process group, streaming its merged output; the
//! process runner it is built on serves the `ipython` tool too.

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::time::{Instant, MissedTickBehavior};

use super::{Args, Tool, ToolContext, ToolFuture, ToolLimits, ToolOutput, Workspace, display_path, try_arg};

/// How often progress may be reported.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);
/// How long to keep reading after the shell exits: a background job that inherited the pipes
/// must not keep the call open, but output the shell wrote just before exiting should not be lost.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);

pub(crate) struct BashTool {
    limits: ToolLimits,
}

impl BashTool {
    pub(crate) fn new(limits: ToolLimits) -> Self {
        Self { limits }
    }
}

impl Tool for BashTool {
    fn name(&self) -> &'static str {
        "bash"
    }

    fn description(&self) -> &'static str {
        "Run a bash command in the workspace root and return its combined stdout and stderr. \
         Long output keeps only its tail; the full output is saved to a log file whose path is given."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": { "type": "string", "description": "The bash command to run" },
                "timeout": { "type": "number", "description": "Timeout in seconds (optional)" }
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        false
    }

    fn run<'a>(&'a self, args: Value, ctx: ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let args = try_arg!(Args::new(&args));
            let command = try_arg!(args.string("command"));
            let timeout = try_arg!(args.opt_seconds("timeout")).unwrap_or(self.limits.bash_timeout);
            let mut bash = Command::new("bash");
            bash.arg("-c").arg(command);
            let program = Program { label: "bash", command: bash, stdin: None, log_prefix: "bash" };
            run_program(program, timeout, self.limits.max_output_bytes, &ctx).await
        })
    }
}

/// A process to run the way bash runs its command: in the workspace, in its own process group, with its merged
/// output streamed, bounded in time and kept whole in a log file when long.
pub(crate) struct Program {
    /// What error texts call it ("Failed to start bash").
    pub(crate) label: &'static str,
    /// The program and its arguments; the rest (directory, pipes, process group) is set here.
    pub(crate) command: Command,
    /// Written to its standard input, which is then closed; without it, standard input is empty.
    pub(crate) stdin: Option<Vec<u8>>,
    /// The start of the full-output log's file name.
    pub(crate) log_prefix: &'static str,
}

/// How the command's run ended.
enum Ending {
    Exited(ExitStatus),
    Aborted,
    TimedOut,
}

pub(crate) async fn run_program(
    program: Program,
    timeout: Duration,
    max_bytes: usize,
    ctx: &ToolContext<'_>,
) -> ToolOutput {
    let Program { label, mut command, stdin, log_prefix } = program;
    let mut child = match command
        .current_dir(ctx.workspace.root())
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => return ToolOutput::error(format!("Failed to start {label}: {e}")),
    };
    let mut group = match child.id().and_then(|pid| rustix::process::Pid::from_raw(pid as i32)) {
        Some(pgid) => GroupGuard { pgid, armed: true },
        None => return ToolOutput::error(format!("Failed to start {label}: no process id")),
    };
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return ToolOutput::error(format!("Failed to start {label}: its output pipes are missing"));
    };
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // Written beside the output loop, so a program that answers before it has read everything cannot stall on
        // a full pipe; a program that exits early makes the write fail, which is no concern of ours.
        tokio::spawn(async move {
            let _ = pipe.write_all(&bytes).await;
        });
    }

    let mut output = Output::new(ctx.workspace, max_bytes, log_prefix);
    let mut out_buf = vec![0u8; 16 * 1024];
    let mut err_buf = vec![0u8; 16 * 1024];
    let (mut out_open, mut err_open) = (true, true);
    let mut status: Option<ExitStatus> = None;
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let drain = tokio::time::sleep(Duration::MAX);
    tokio::pin!(drain);
    let mut tick = tokio::time::interval(PROGRESS_INTERVAL);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut dirty = false;

    let ending = loop {
        if let Some(status) = status
            && !out_open
            && !err_open
        {
            break Ending::Exited(status);
        }
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => break Ending::Aborted,
            _ = &mut deadline, if status.is_none() => break Ending::TimedOut,
            read = stdout.read(&mut out_buf), if out_open => match read {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => { output.push(&out_buf[..n]).await; dirty = true; }
            },
            read = stderr.read(&mut err_buf), if err_open => match read {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => { output.push(&err_buf[..n]).await; dirty = true; }
            },
            waited = child.wait(), if status.is_none() => match waited {
                Ok(s) => {
                    status = Some(s);
                    drain.as_mut().reset(Instant::now() + DRAIN_AFTER_EXIT);
                }
                Err(e) => {
                    group.kill();
                    return ToolOutput::error(format!("Failed to wait for {label}: {e}"));
                }
            },
            _ = &mut drain, if status.is_some() => {
                break Ending::Exited(status.expect("the drain timer only runs after the exit status arrived"));
            }
            _ = tick.tick() => if dirty {
                dirty = false;
                (ctx.progress)(ToolOutput::ok(output.tail_text()));
            },
        }
    };

    let suffix = match ending {
        Ending::Exited(status) => {
            group.armed = false;
            exit_notice(status)
        }
        Ending::Aborted => {
            group.kill();
            finish_killed(&mut child, [(&mut stdout, out_open), (&mut stderr, err_open)], &mut output).await;
            Some("Command aborted".to_owned())
        }
        Ending::TimedOut => {
            group.kill();
            finish_killed(&mut child, [(&mut stdout, out_open), (&mut stderr, err_open)], &mut output).await;
            Some(format!("Command timed out after {} seconds", timeout.as_secs_f64()))
        }
    };
    output.finish(suffix).await
}

fn exit_notice(status: ExitStatus) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(0), _) => None,
        (Some(code), _) => Some(format!("Command exited with code {code}")),
        (None, Some(signal)) => Some(format!("Command was killed by signal {signal}")),
        (None, None) => Some("Command ended without an exit code".to_owned()),
    }
}

/// Reaps the killed shell and keeps what was still in the pipes. Everything in the group is dead, so the pipes
/// reach their end at once; the bound covers a process that left the group (setsid) and still holds them.
async fn finish_killed(
    child: &mut tokio::process::Child,
    pipes: [(&mut (dyn AsyncRead + Unpin + Send), bool); 2],
    output: &mut Output<'_>,
) {
    let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
    let drain = async {
        let mut buf = vec![0u8; 16 * 1024];
        for (pipe, open) in pipes {
            if !open {
                continue;
            }
            loop {
                match pipe.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => output.push(&buf[..n]).await,
                }
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_millis(100), drain).await;
}

/// Kills the command's whole process group unless disarmed, so that a dropped call leaves nothing behind.
struct GroupGuard {
    pgid: rustix::process::Pid,
    armed: bool,
}

impl GroupGuard {
    fn kill(&mut self) {
        if self.armed {
            crate::runtime::child::kill_group(self.pgid);
            self.armed = false;
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Distinguishes log files written in the same second by the same process.
static LOG_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The merged output: all of it while it is small, then its tail in memory and the whole of it in a log file.
struct Output<'w> {
    workspace: &'w Workspace,
    max_bytes: usize,
    log_prefix: &'static str,
    total: u64,
    /// Everything while `total <= max_bytes`; afterwards a tail of more than `max_bytes` bytes.
    buf: Vec<u8>,
    log: Option<Log>,
}

struct Log {
    path: PathBuf,
    /// None after a write failed: the tail is still shown, and the notice says the log is incomplete.
    file: Option<tokio::fs::File>,
}

impl<'w> Output<'w> {
    fn new(workspace: &'w Workspace, max_bytes: usize, log_prefix: &'static str) -> Self {
        Self { workspace, max_bytes, log_prefix, total: 0, buf: Vec::new(), log: None }
    }

    async fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        self.buf.extend_from_slice(bytes);
        if self.log.is_none() && self.total > self.max_bytes as u64 {
            self.log = Some(self.open_log().await);
        } else if let Some(log) = &mut self.log {
            write_log(log, bytes).await;
        }
        // One byte more than shown is kept, so `tail` can tell whether the shown part starts a line.
        if self.log.is_some() && self.buf.len() > 2 * self.max_bytes.max(4096) {
            let excess = self.buf.len() - (self.max_bytes + 1);
            self.buf.drain(..excess);
        }
    }

    /// Opens the log and writes everything seen so far, which is still all in `buf`.
    async fn open_log(&self) -> Log {
        let stamp = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let n = LOG_COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = self.workspace.root().join(".chatwire");
        let path = dir.join(format!("{}-{stamp}-{}-{n}.log", self.log_prefix, std::process::id()));
        let file = match tokio::fs::create_dir_all(&dir).await {
            Ok(()) => tokio::fs::OpenOptions::new().write(true).create_new(true).open(&path).await.ok(),
            Err(_) => None,
        };
        let mut log = Log { path, file };
        write_log(&mut log, &self.buf).await;
        log
    }

    /// The text shown: everything, or the last `max_bytes` cut at a line start.
    fn tail(&self) -> &[u8] {
        if self.total <= self.max_bytes as u64 {
            return &self.buf;
        }
        let tail = &self.buf[self.buf.len().saturating_sub(self.max_bytes)..];
        let starts_line = self.buf.len() == tail.len() || self.buf[self.buf.len() - tail.len() - 1] == b'\n';
        if starts_line {
            return tail;
        }
        match memchr::memchr(b'\n', tail) {
            Some(i) if i + 1 < tail.len() => &tail[i + 1..],
            // One huge line: keep its end, starting on a character boundary.
            _ => {
                let start = tail.iter().position(|&b| (b & 0xC0) != 0x80).unwrap_or(tail.len());
                &tail[start..]
            }
        }
    }

    fn tail_text(&self) -> String {
        String::from_utf8_lossy(self.tail()).into_owned()
    }

    async fn finish(mut self, suffix: Option<String>) -> ToolOutput {
        let shown = self.tail();
        let shown_bytes = shown.len();
        let mut text = String::from_utf8_lossy(shown).into_owned();
        if text.is_empty() {
            text.push_str("(no output)");
        }
        let mut details = None;
        if let Some(log) = &mut self.log {
            if let Some(file) = &mut log.file
                && file.flush().await.is_err()
            {
                log.file = None;
            }
            let path = display_path(self.workspace, &log.path);
            let saved = if log.file.is_some() { "Full output" } else { "Incomplete output (writing the log failed)" };
            text.push_str(&format!("\n\n[Showing the last {shown_bytes} bytes of {}. {saved}: {path}]", self.total));
            details = Some(json!({
                "truncation": { "totalBytes": self.total, "shownBytes": shown_bytes },
                "fullOutputPath": path,
            }));
        }
        let is_error = suffix.is_some();
        if let Some(suffix) = suffix {
            text.push_str("\n\n");
            text.push_str(&suffix);
        }
        ToolOutput { text, details, is_error }
    }
}

async fn write_log(log: &mut Log, bytes: &[u8]) {
    if let Some(file) = &mut log.file
        && file.write_all(bytes).await.is_err()
    {
        log.file = None;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use tokio_util::sync::CancellationToken;

    use super::super::test_support::*;
    use super::*;

    fn tool() -> BashTool {
        BashTool::new(ToolLimits::default())
    }

    #[tokio::test]
    async fn output_and_success() {
        let (_dir, ws) = workspace();
        let out = run(&tool(), &ws, json!({"command": "echo hello; pwd"})).await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(out.text, format!("hello\n{}\n", ws.root().display()));
        assert_eq!(out.details, None);
    }

    #[tokio::test]
    async fn the_command_is_one_argument() {
        let (_dir, ws) = workspace();
        let out = run(&tool(), &ws, json!({"command": "printf '%s|' \"$0\" 'a b' \"it's\""})).await;
        assert_eq!(out.text, "bash|a b|it's|");
    }

    #[tokio::test]
    async fn non_zero_exit_is_an_error_and_stderr_is_captured() {
        let (_dir, ws) = workspace();
        let out = run(&tool(), &ws, json!({"command": "echo out; echo err >&2; exit 3"})).await;
        assert!(out.is_error);
        assert!(out.text.contains("out\n") && out.text.contains("err\n"), "{}", out.text);
        assert!(out.text.ends_with("\n\nCommand exited with code 3"), "{}", out.text);
    }

    #[tokio::test]
    async fn empty_output_says_so() {
        let (_dir, ws) = workspace();
        let out = run(&tool(), &ws, json!({"command": "exit 1"})).await;
        assert_eq!(out.text, "(no output)\n\nCommand exited with code 1");
    }

    #[tokio::test]
    async fn stdin_is_closed() {
        let (_dir, ws) = workspace();
        // `cat` would wait for input forever: ending at all says stdin is closed.
        let out = within_hang_guard(run(&tool(), &ws, json!({"command": "cat; echo done"}))).await;
        assert_eq!(out.text, "done\n");
    }

    #[tokio::test]
    async fn timeout_kills() {
        let (_dir, ws) = workspace();
        let out =
            within_hang_guard(run(&tool(), &ws, json!({"command": "echo before; sleep 1000", "timeout": 1}))).await;
        assert!(out.is_error);
        assert_eq!(out.text, "before\n\n\nCommand timed out after 1 seconds");
    }

    #[tokio::test]
    async fn cancel_kills_the_whole_group() {
        let (dir, ws) = workspace();
        let pid_file = dir.path().join("bg.pid");
        let command = format!("sleep 1000 & echo $! > {}; echo started; sleep 1000", pid_file.display());
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let canceller = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            trigger.cancel();
        });
        let tool = tool();
        let (out, _) = within_hang_guard(run_tool(&tool, &ws, json!({"command": command}), cancel)).await;
        canceller.await.expect("canceller");
        assert!(out.is_error);
        assert_eq!(out.text, "started\n\n\nCommand aborted");

        let pid: i32 = std::fs::read_to_string(&pid_file).expect("pid file").trim().parse().expect("pid");
        wait_until_gone(pid);
    }

    #[tokio::test]
    async fn dropping_the_call_kills_the_group() {
        let (dir, ws) = workspace();
        let pid_file = dir.path().join("bg.pid");
        let command = format!("sleep 30 & echo $! > {}; sleep 30", pid_file.display());
        let tool = tool();
        let call = run(&tool, &ws, json!({"command": command}));
        assert!(tokio::time::timeout(Duration::from_millis(500), call).await.is_err());
        let pid: i32 = std::fs::read_to_string(&pid_file).expect("pid file").trim().parse().expect("pid");
        wait_until_gone(pid);
    }

    fn wait_until_gone(pid: i32) {
        let deadline = Instant::now() + Duration::from_secs(3);
        let pid = rustix::process::Pid::from_raw(pid).expect("a real pid");
        while rustix::process::test_kill_process(pid).is_ok() {
            assert!(Instant::now() < deadline, "background sleep {pid} survived");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[tokio::test]
    async fn a_background_job_does_not_hold_the_call_open() {
        let (dir, ws) = workspace();
        let pid_file = dir.path().join("bg.pid");
        let command = format!("sleep 1000 & echo $! > {}; echo hi", pid_file.display());
        let out = within_hang_guard(run(&tool(), &ws, json!({"command": command}))).await;
        assert_eq!(out.text, "hi\n");
        let pid: i32 = std::fs::read_to_string(&pid_file).expect("pid file").trim().parse().expect("pid");
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid).expect("a real pid"),
            rustix::process::Signal::KILL,
        );
    }

    #[tokio::test]
    async fn progress_is_cumulative() {
        let (_dir, ws) = workspace();
        let tool = tool();
        let (out, progress) =
            run_tool(&tool, &ws, json!({"command": "echo a; sleep 0.3; echo b"}), CancellationToken::new()).await;
        assert_eq!(out.text, "a\nb\n");
        assert!(progress.iter().any(|p| p.text == "a\n"), "{progress:?}");
        for pair in progress.windows(2) {
            assert!(pair[1].text.starts_with(&pair[0].text), "{progress:?}");
        }
    }

    #[tokio::test]
    async fn long_output_keeps_the_tail_and_logs_everything() {
        let (_dir, ws) = workspace();
        let tool = BashTool::new(ToolLimits { max_output_bytes: 1000, ..ToolLimits::default() });
        let out = run(&tool, &ws, json!({"command": "seq 1 2000"})).await;
        let full: String = (1..=2000).map(|i| format!("{i}\n")).collect();
        assert!(!out.is_error);
        let details = out.details.clone().expect("details");
        let path = details["fullOutputPath"].as_str().expect("path");
        assert!(path.starts_with(".chatwire/bash-") && path.ends_with(".log"), "{path}");
        assert_eq!(std::fs::read_to_string(ws.root().join(path)).expect("log"), full);
        assert_eq!(details["truncation"]["totalBytes"], full.len());
        let shown = details["truncation"]["shownBytes"].as_u64().expect("shown") as usize;
        assert!(shown <= 1000 && shown > 900, "{shown}");
        let (body, notice) = out.text.split_once("\n\n[").expect("notice");
        assert_eq!(body.len(), shown);
        assert!(full.ends_with(body) && body.starts_with(|c: char| c.is_ascii_digit()));
        assert!(full.contains(&format!("\n{body}")), "cut at a line start");
        assert_eq!(notice, format!("Showing the last {shown} bytes of {}. Full output: {path}]", full.len()));
    }

    #[tokio::test]
    async fn huge_output_stays_bounded_in_memory() {
        let (_dir, ws) = workspace();
        let tool = BashTool::new(ToolLimits { max_output_bytes: 100, ..ToolLimits::default() });
        let out = run(&tool, &ws, json!({"command": "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo end"})).await;
        assert!(out.text.starts_with("end\n\n\n[Showing the last 4 bytes of 3000005."), "{}", out.text);
    }
}

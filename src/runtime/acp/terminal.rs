//! The terminals an ACP agent asks chatwire to run (`terminal/*`): a command in the session's workspace, in its own
//! process group, whose output the agent reads when it wants and the call's Bash row shows as it comes.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::runtime::tools::Workspace;

/// Output a terminal keeps when the agent names no `outputByteLimit`: its tail, as the agent reads it.
pub const DEFAULT_OUTPUT_LIMIT: usize = 1024 * 1024;
/// How often the Bash row may be told about new output (as often as the built-in bash tool reports progress).
const REPORT_INTERVAL: Duration = Duration::from_millis(100);
/// How long to keep reading after the command exits: a background job that inherited the pipes must not keep the
/// terminal open, and what the command wrote just before it exited is still read.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);

/// How a terminal's command ended, as `terminal/wait_for_exit` and `terminal/output` tell it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    pub code: Option<i32>,
    pub signal: Option<String>,
}

impl Exit {
    fn of(status: std::process::ExitStatus) -> Exit {
        use std::os::unix::process::ExitStatusExt;
        Exit { code: status.code(), signal: status.signal().map(signal_name) }
    }

    pub fn to_json(&self) -> Value {
        json!({"exitCode": self.code, "signal": self.signal})
    }
}

fn signal_name(signal: i32) -> String {
    match signal {
        1 => "SIGHUP".into(),
        2 => "SIGINT".into(),
        9 => "SIGKILL".into(),
        13 => "SIGPIPE".into(),
        15 => "SIGTERM".into(),
        other => format!("signal {other}"),
    }
}

/// What a terminal's command wrote so far (its tail when it wrote more than the limit), and how it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    bytes: Vec<u8>,
    limit: usize,
    pub truncated: bool,
    pub exit: Option<Exit>,
}

impl Captured {
    fn push(&mut self, more: &[u8]) {
        self.bytes.extend_from_slice(more);
        if self.bytes.len() > self.limit {
            // Cut from the front, on a character boundary, as the protocol asks.
            let mut cut = self.bytes.len() - self.limit;
            while cut < self.bytes.len() && (self.bytes[cut] & 0xC0) == 0x80 {
                cut += 1;
            }
            self.bytes.drain(..cut);
            self.truncated = true;
        }
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

struct Terminal {
    captured: Arc<Mutex<Captured>>,
    /// Says `true` once the command has ended and its output is read.
    ended: watch::Receiver<bool>,
    kill: CancellationToken,
}

/// The terminals of one agent process; dropping them kills every command still running.
pub struct Terminals {
    workspace: Workspace,
    open: HashMap<String, Terminal>,
    next: u64,
    /// Bumped (at most every `REPORT_INTERVAL`) when some terminal has new output or ended.
    changes: watch::Sender<u64>,
    seen: watch::Receiver<u64>,
}

/// A refused `terminal/*` request: the JSON-RPC error's message.
pub type Refusal = String;

impl Terminals {
    pub fn new(workspace: Workspace) -> Terminals {
        let (changes, seen) = watch::channel(0);
        Terminals { workspace, open: HashMap::new(), next: 0, changes, seen }
    }

    /// `terminal/create`: starts the command. Without `args` the command is a shell command line run by bash, as a
    /// person would type it; with them it is a program and its arguments.
    pub fn create(&mut self, params: &Value) -> Result<Value, Refusal> {
        let command = params.get("command").and_then(Value::as_str).ok_or("terminal/create needs a `command`")?;
        let args: Vec<&str> = params
            .get("args")
            .and_then(Value::as_array)
            .map(|args| args.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let cwd = match params.get("cwd").and_then(Value::as_str) {
            Some(cwd) => self.workspace.resolve(cwd)?,
            None => self.workspace.root().to_path_buf(),
        };
        let limit = params
            .get("outputByteLimit")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_OUTPUT_LIMIT, |limit| (limit as usize).min(DEFAULT_OUTPUT_LIMIT));
        let mut process = if args.is_empty() {
            let mut bash = Command::new("bash");
            bash.arg("-c").arg(command);
            bash
        } else {
            let mut program = Command::new(command);
            program.args(&args);
            program
        };
        for variable in params.get("env").and_then(Value::as_array).into_iter().flatten() {
            if let (Some(name), Some(value)) =
                (variable.get("name").and_then(Value::as_str), variable.get("value").and_then(Value::as_str))
            {
                process.env(name, value);
            }
        }
        let child = process
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| format!("could not start `{command}`: {error}"))?;
        self.next += 1;
        let id = format!("term-{}", self.next);
        let captured = Arc::new(Mutex::new(Captured { limit, ..Captured::default() }));
        let (ended_sender, ended) = watch::channel(false);
        let kill = CancellationToken::new();
        tokio::spawn(watch_command(child, captured.clone(), ended_sender, kill.clone(), self.changes.clone()));
        self.open.insert(id.clone(), Terminal { captured, ended, kill });
        Ok(json!({"terminalId": id}))
    }

    fn terminal(&self, params: &Value) -> Result<&Terminal, Refusal> {
        let id = params.get("terminalId").and_then(Value::as_str).ok_or("a `terminalId` is needed")?;
        self.open.get(id).ok_or_else(|| format!("no terminal {id} (it was released, or never created)"))
    }

    /// What the terminal holds now: its output and, once it ended, how.
    pub fn captured(&self, terminal_id: &str) -> Option<Captured> {
        Some(self.open.get(terminal_id)?.captured.lock().expect("the output lock is never poisoned").clone())
    }

    /// The ids of the open terminals.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.open.keys().map(String::as_str)
    }

    /// `terminal/output`.
    pub fn output(&self, params: &Value) -> Result<Value, Refusal> {
        let captured = self.terminal(params)?.captured.lock().expect("the output lock is never poisoned").clone();
        let mut answer = json!({"output": captured.text(), "truncated": captured.truncated});
        if let Some(exit) = &captured.exit {
            answer["exitStatus"] = exit.to_json();
        }
        Ok(answer)
    }

    /// `terminal/wait_for_exit`: a future that ends with the answer once the command has ended, so the caller can
    /// answer later without holding up anything else the agent says.
    pub fn wait_for_exit(&self, params: &Value) -> Result<impl Future<Output = Value> + Send + 'static, Refusal> {
        let terminal = self.terminal(params)?;
        let (mut ended, captured) = (terminal.ended.clone(), terminal.captured.clone());
        Ok(async move {
            let _ = ended.wait_for(|ended| *ended).await;
            let exit = captured.lock().expect("the output lock is never poisoned").exit.clone();
            exit.map_or_else(|| json!({"exitCode": null, "signal": null}), |exit| exit.to_json())
        })
    }

    /// `terminal/kill`: the command's whole process group; the terminal stays, for its output.
    pub fn kill(&self, params: &Value) -> Result<Value, Refusal> {
        self.terminal(params)?.kill.cancel();
        Ok(Value::Null)
    }

    /// `terminal/release`: kills the command if it still runs and forgets the terminal.
    pub fn release(&mut self, params: &Value) -> Result<Value, Refusal> {
        self.terminal(params)?.kill.cancel();
        let id = params.get("terminalId").and_then(Value::as_str).unwrap_or_default();
        self.open.remove(id);
        Ok(Value::Null)
    }

    /// Waits until some terminal has new output or ended.
    pub async fn changed(&mut self) {
        if self.seen.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for Terminals {
    fn drop(&mut self) {
        for terminal in self.open.values() {
            terminal.kill.cancel();
        }
    }
}

/// Reads the command's output until it has ended (or is killed), telling `changes` at most every `REPORT_INTERVAL`.
async fn watch_command(
    mut child: tokio::process::Child,
    captured: Arc<Mutex<Captured>>,
    ended: watch::Sender<bool>,
    kill: CancellationToken,
    changes: watch::Sender<u64>,
) {
    let group = child.id().and_then(|pid| rustix::process::Pid::from_raw(pid as i32));
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else { return };
    let (mut out_buf, mut err_buf) = (vec![0u8; 16 * 1024], vec![0u8; 16 * 1024]);
    let (mut out_open, mut err_open) = (true, true);
    let mut status = None;
    let drain = tokio::time::sleep(Duration::MAX);
    tokio::pin!(drain);
    let mut tick = tokio::time::interval(REPORT_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut dirty = false;
    let push = |bytes: &[u8]| captured.lock().expect("the output lock is never poisoned").push(bytes);
    while status.is_none() || out_open || err_open {
        tokio::select! {
            () = kill.cancelled(), if status.is_none() => {
                if let Some(group) = group {
                    crate::runtime::child::kill_group(group);
                }
                status = child.wait().await.ok();
                drain.as_mut().reset(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
            }
            read = stdout.read(&mut out_buf), if out_open => match read {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => { push(&out_buf[..n]); dirty = true; }
            },
            read = stderr.read(&mut err_buf), if err_open => match read {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => { push(&err_buf[..n]); dirty = true; }
            },
            waited = child.wait(), if status.is_none() => {
                status = waited.ok();
                drain.as_mut().reset(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
            }
            () = &mut drain, if status.is_some() => break,
            _ = tick.tick() => if dirty {
                dirty = false;
                changes.send_modify(|count| *count += 1);
            },
        }
    }
    let exit = status.map_or(Exit { code: None, signal: Some("SIGKILL".into()) }, Exit::of);
    captured.lock().expect("the output lock is never poisoned").exit = Some(exit);
    let _ = ended.send(true);
    changes.send_modify(|count| *count += 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_output_is_the_tail_cut_on_a_character_boundary() {
        let mut captured = Captured { limit: 3, ..Captured::default() };
        captured.push(b"ab");
        assert_eq!((captured.text().as_str(), captured.truncated), ("ab", false));
        captured.push("écd".as_bytes());
        // "abécd" is 6 bytes; the last 3 would start inside "é", so the cut moves past it.
        assert_eq!((captured.text().as_str(), captured.truncated), ("cd", true));
    }
}

//! JSON-RPC 2.0 over an ACP agent's stdin and stdout (one object a line, `runtime::child`): our requests wait for
//! their answers by id; the agent's notifications and requests come out of one queue, in the order it wrote them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::runtime::child::{ChildProcess, ChildWriter, Spawned, StdoutLine};

/// How long an agent whose output closed gets to exit before its group is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// What the agent said that is not an answer to us, read ahead of the session's loop.
const INCOMING_QUEUED: usize = 256;

/// What the agent said, other than answers to our requests.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Notification {
        method: String,
        params: Value,
    },
    /// A request the agent waits on: `respond` or `respond_error` with its `id`.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A line that is not a JSON-RPC message: the agent is misbehaving.
    Malformed(String),
    /// Its stdout closed: how it ended, with its last stderr line.
    Closed(String),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RpcError {
    /// The agent answered with an error object.
    #[error("the agent answered `{method}` with error {code}: {message}")]
    Failed { method: String, code: i64, message: String },
    /// The agent is gone (its output closed, or it stopped reading).
    #[error("the agent exited{0}")]
    Exited(String),
}

type Waiting = HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>;

#[derive(Default)]
struct Pending {
    waiting: Waiting,
    /// Set once stdout closed, with how the process ended: no request waits after that.
    closed: Option<String>,
}

/// Writes answers to the agent's requests; a clone of the connection's input side.
#[derive(Clone)]
pub struct Responder {
    writer: ChildWriter,
}

impl Responder {
    pub fn respond(&self, id: &Value, result: Value) {
        let _ = self.writer.send_json(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    pub fn respond_error(&self, id: &Value, code: i64, message: &str) {
        let error = json!({"code": code, "message": message});
        let _ = self.writer.send_json(&json!({"jsonrpc": "2.0", "id": id, "error": error}));
    }
}

/// Our side of the connection. Dropping it kills the agent's process group.
pub struct Peer {
    process: ChildProcess,
    writer: ChildWriter,
    pending: Arc<Mutex<Pending>>,
    next_id: AtomicU64,
}

impl Peer {
    /// Starts reading a spawned agent; what it says besides answers goes to the returned receiver.
    pub fn new(spawned: Spawned) -> (Peer, mpsc::Receiver<Incoming>) {
        let Spawned { process, writer, stdout } = spawned;
        let pending = Arc::new(Mutex::new(Pending::default()));
        let (incoming, receiver) = mpsc::channel(INCOMING_QUEUED);
        let exit = process.exit_watch();
        tokio::spawn(read(stdout, pending.clone(), incoming, exit));
        (Peer { process, writer, pending, next_id: AtomicU64::new(0) }, receiver)
    }

    pub fn is_alive(&self) -> bool {
        self.process.is_alive() && self.lock().closed.is_none()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().expect("the pending lock is never poisoned")
    }

    /// Sends a request; the future resolves with its answer, whenever that comes.
    pub fn send_request(
        &self,
        method: &str,
        params: Value,
    ) -> Result<impl Future<Output = Result<Value, RpcError>> + Send + 'static, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        {
            let mut pending = self.lock();
            if let Some(why) = &pending.closed {
                return Err(RpcError::Exited(why.clone()));
            }
            pending.waiting.insert(id, sender);
        }
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if self.writer.send_json(&message).is_err() {
            self.lock().waiting.remove(&id);
            return Err(RpcError::Exited(" (it stopped reading its input)".into()));
        }
        let method = method.to_owned();
        Ok(async move {
            match receiver.await {
                Ok(Err(RpcError::Failed { code, message, .. })) => Err(RpcError::Failed { method, code, message }),
                Ok(answer) => answer,
                Err(_) => Err(RpcError::Exited(String::new())),
            }
        })
    }

    pub fn notify(&self, method: &str, params: Value) {
        // A closed input means the agent is gone; the reader reports that.
        let _ = self.writer.send_json(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    pub fn respond(&self, id: &Value, result: Value) {
        self.responder().respond(id, result);
    }

    pub fn respond_error(&self, id: &Value, code: i64, message: &str) {
        self.responder().respond_error(id, code, message);
    }

    /// Answers requests from another task, later (`terminal/wait_for_exit`).
    pub fn responder(&self) -> Responder {
        Responder { writer: self.writer.clone() }
    }

    /// Kills the agent's process group: it broke the protocol, or would not stop.
    pub fn kill(&self) {
        self.process.kill();
    }

    /// The agent's last line on stderr, for error messages.
    pub fn last_stderr_line(&self) -> Option<String> {
        self.process.last_stderr_line()
    }
}

/// JSON-RPC's "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC's "invalid params".
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC's "internal error", for a request we understood and could not carry out.
pub const INTERNAL_ERROR: i64 = -32603;

async fn read(
    mut stdout: mpsc::Receiver<StdoutLine>,
    pending: Arc<Mutex<Pending>>,
    incoming: mpsc::Sender<Incoming>,
    exit: crate::runtime::child::ExitWatch,
) {
    while let Some(line) = stdout.recv().await {
        let message = match line {
            StdoutLine::Text { number, text } => parse(number, &text),
            StdoutLine::Unreadable(why) => Err(why),
        };
        let said = match message {
            Ok(Message::Answer { id, answer }) => {
                let waiting = pending.lock().expect("the pending lock is never poisoned").waiting.remove(&id);
                // An answer to a request given up on (timed out) comes late and goes nowhere.
                if let Some(waiting) = waiting {
                    let _ = waiting.send(answer);
                }
                continue;
            }
            Ok(Message::Said(said)) => said,
            Err(why) => Incoming::Malformed(why),
        };
        if incoming.send(said).await.is_err() {
            // The session dropped its side: the agent is being stopped.
            return;
        }
    }
    let why = exit.describe(EXIT_GRACE).await;
    let waiting = {
        let mut pending = pending.lock().expect("the pending lock is never poisoned");
        pending.closed = Some(why.clone());
        std::mem::take(&mut pending.waiting)
    };
    for (_, waiting) in waiting {
        let _ = waiting.send(Err(RpcError::Exited(why.clone())));
    }
    let _ = incoming.send(Incoming::Closed(why)).await;
}

enum Message {
    Answer { id: u64, answer: Result<Value, RpcError> },
    Said(Incoming),
}

/// One line as a JSON-RPC message; `Err` says why it is not one.
fn parse(number: u64, text: &str) -> Result<Message, String> {
    let shown = || text.chars().take(200).collect::<String>();
    let Ok(Value::Object(mut message)) = serde_json::from_str::<Value>(text) else {
        return Err(format!("line {number} is not a JSON-RPC message: {}", shown()));
    };
    let method = message.get("method").and_then(Value::as_str).map(str::to_owned);
    let id = message.remove("id").filter(|id| !id.is_null());
    let params = message.remove("params").unwrap_or(Value::Null);
    match (method, id) {
        (Some(method), Some(id)) => Ok(Message::Said(Incoming::Request { id, method, params })),
        (Some(method), None) => Ok(Message::Said(Incoming::Notification { method, params })),
        (None, Some(id)) => {
            let id = id.as_u64().ok_or_else(|| format!("line {number} answers an id chatwire never sent: {id}"))?;
            let answer = match (message.remove("result"), message.remove("error")) {
                (Some(result), None) => Ok(result),
                (_, Some(error)) => Err(RpcError::Failed {
                    method: String::new(),
                    code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: error.get("message").and_then(Value::as_str).unwrap_or("(no message)").to_owned(),
                }),
                (None, None) => return Err(format!("line {number} is an answer with neither result nor error")),
            };
            Ok(Message::Answer { id, answer })
        }
        (None, None) => Err(format!("line {number} has neither a method nor an id: {}", shown())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_told_apart_by_method_and_id() {
        let request = parse(1, r#"{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{}}"#);
        assert!(
            matches!(request, Ok(Message::Said(Incoming::Request { ref method, .. })) if method == "session/request_permission")
        );
        let notification = parse(2, r#"{"jsonrpc":"2.0","method":"session/update","params":{"a":1}}"#);
        assert!(
            matches!(notification, Ok(Message::Said(Incoming::Notification { ref params, .. })) if params["a"] == 1)
        );
        let answer = parse(3, r#"{"jsonrpc":"2.0","id":4,"result":{"ok":true}}"#);
        assert!(matches!(answer, Ok(Message::Answer { id: 4, answer: Ok(_) })));
        let failed = parse(4, r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32000,"message":"no"}}"#);
        assert!(matches!(failed, Ok(Message::Answer { id: 5, answer: Err(RpcError::Failed { code: -32000, .. }) })));
    }

    #[test]
    fn what_is_not_json_rpc_says_so_with_its_line() {
        for (text, expected) in [
            ("hello", "line 7 is not a JSON-RPC message: hello"),
            ("[1,2]", "line 7 is not a JSON-RPC message: [1,2]"),
            (r#"{"jsonrpc":"2.0"}"#, "line 7 has neither a method nor an id"),
            (r#"{"id":"x","result":1}"#, "line 7 answers an id chatwire never sent"),
            (r#"{"id":1}"#, "line 7 is an answer with neither result nor error"),
        ] {
            let Err(why) = parse(7, text) else { panic!("{text} parsed") };
            assert!(why.starts_with(expected), "{why}");
        }
    }
}

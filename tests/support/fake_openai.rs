//! A fake model server on loopback: answers each request with the next scripted reply (recorded-format event
//! streams from tests/fixtures/providers, inline streams, cut or hanging streams, error statuses) and keeps what it
//! was sent.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::Notify;

pub const KEY: &str = "sk-test-key-never-shown";

pub fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/providers/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// What the fake server answers to one request, in order.
pub enum Reply {
    /// 200 with the fixture as an event stream, written in small pieces that split lines and characters.
    Stream(&'static str),
    /// 200 with the fixture, then the connection is cut.
    Cut(&'static str),
    /// 200 with the fixture, then comments every few milliseconds until the client goes away.
    Hang(&'static str),
    /// 200 with this event stream, written in small pieces like a fixture.
    Sse(String),
    /// A status with headers and a JSON body.
    Status(u16, Vec<(&'static str, &'static str)>, &'static str),
}

/// One request as the fake server saw it.
pub struct Seen {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

pub struct FakeServer {
    pub base_url: String,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Notified when the client closed a `Hang` response.
    pub closed: Arc<Notify>,
}

struct NotifyOnDrop(Arc<Notify>);

impl Drop for NotifyOnDrop {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

/// The fixture in pieces of 7 bytes: lines, JSON tokens and multi-byte characters are all split somewhere.
fn pieces(text: &str) -> Vec<Result<Bytes, std::io::Error>> {
    text.as_bytes().chunks(7).map(|piece| Ok(Bytes::copy_from_slice(piece))).collect()
}

fn event_stream(body: Body) -> Response {
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(body)
        .unwrap()
}

impl FakeServer {
    pub async fn start(replies: Vec<Reply>, api_path: &str) -> FakeServer {
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let closed = Arc::new(Notify::new());
        let handler = {
            let (seen, closed, replies) = (seen.clone(), closed.clone(), replies.clone());
            move |uri: Uri, headers: HeaderMap, body: Bytes| {
                let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                // opencode asks its small model for a thread title before it answers; that request is answered apart,
                // so a test's replies stay the turns it scripts.
                let reply = if asks_for_a_title(&body) {
                    Some(Reply::Sse(openai_text("A test title")))
                } else {
                    seen.lock().unwrap().push(Seen { path: uri.path().to_owned(), headers, body });
                    replies.lock().unwrap().pop_front()
                };
                let closed = closed.clone();
                async move {
                    match reply {
                        None => Response::builder().status(500).body(Body::from("the test gave no reply")).unwrap(),
                        Some(Reply::Sse(body)) => {
                            event_stream(Body::from_stream(futures_util::stream::iter(pieces(&body))))
                        }
                        Some(Reply::Stream(name)) => {
                            event_stream(Body::from_stream(futures_util::stream::iter(pieces(&fixture(name)))))
                        }
                        Some(Reply::Cut(name)) => {
                            // hyper drops what it has not written yet when a body fails; give it time to send.
                            let cut = futures_util::stream::once(async {
                                tokio::time::sleep(Duration::from_millis(50)).await;
                                Err(std::io::Error::other("connection cut"))
                            });
                            let stream = futures_util::stream::iter(pieces(&fixture(name))).chain(cut);
                            event_stream(Body::from_stream(stream))
                        }
                        Some(Reply::Hang(name)) => {
                            let guard = NotifyOnDrop(closed);
                            let comments = futures_util::stream::unfold(guard, |guard| async move {
                                tokio::time::sleep(Duration::from_millis(10)).await;
                                Some((Ok::<_, Infallible>(Bytes::from_static(b": keepalive\n\n")), guard))
                            });
                            let first = futures_util::stream::iter([Ok::<_, Infallible>(Bytes::from(fixture(name)))]);
                            event_stream(Body::from_stream(first.chain(comments)))
                        }
                        Some(Reply::Status(status, headers, body)) => {
                            let mut response = Response::builder()
                                .status(StatusCode::from_u16(status).unwrap())
                                .header("content-type", "application/json");
                            for (name, value) in headers {
                                response = response.header(name, value);
                            }
                            response.body(Body::from(body)).unwrap()
                        }
                    }
                }
            }
        };
        let app = axum::Router::new().fallback(handler);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeServer { base_url: format!("http://{address}{api_path}"), replies, seen, closed }
    }

    /// Adds replies after the ones the server started with (for a test that learns what to answer later).
    pub fn push(&self, replies: impl IntoIterator<Item = Reply>) {
        self.replies.lock().unwrap().extend(replies);
    }

    pub fn requests(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    pub fn body(&self, at: usize) -> Value {
        self.seen.lock().unwrap()[at].body.clone()
    }
}

/// Whether a request is opencode's for a thread title (its system prompt begins so).
fn asks_for_a_title(body: &Value) -> bool {
    let system = body["messages"].as_array().and_then(|messages| messages.first());
    let text = system.map(|message| match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|part| part["text"].as_str()).collect(),
        _ => String::new(),
    });
    text.is_some_and(|text| text.trim_start().starts_with("You are a title generator"))
}

/// An OpenAI Chat Completions stream in which the model thinks (`reasoning_content`, as DeepSeek and vLLM stream
/// it), then answers `text`.
pub fn openai_reasoning_then_text(thought: &str, text: &str) -> String {
    let mut deltas = vec![json!({"role": "assistant", "reasoning_content": thought})];
    deltas.extend(text.split_inclusive(' ').map(|word| json!({"content": word})));
    openai_stream(&deltas, "stop")
}

/// An OpenAI Chat Completions stream in which the model thinks, says `text`, then calls one tool.
pub fn openai_reasoning_text_tool_call(
    thought: &str,
    text: &str,
    call_id: &str,
    name: &str,
    arguments: &Value,
) -> String {
    let arguments = arguments.to_string();
    openai_stream(
        &[
            json!({"role": "assistant", "reasoning_content": thought}),
            json!({"content": text}),
            json!({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                "function": {"name": name, "arguments": arguments}}]}),
        ],
        "tool_calls",
    )
}

/// An OpenAI Chat Completions stream in which the model calls one tool.
pub fn openai_tool_call(call_id: &str, name: &str, arguments: &Value) -> String {
    let arguments = arguments.to_string();
    let (head, tail) = arguments.split_at(arguments.len() / 2);
    openai_stream(
        &[
            json!({"role": "assistant", "content": null, "tool_calls": [
            {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
            json!({"tool_calls": [{"index": 0, "function": {"arguments": head}}]}),
            json!({"tool_calls": [{"index": 0, "function": {"arguments": tail}}]}),
        ],
        "tool_calls",
    )
}

/// An OpenAI Chat Completions stream in which the model answers `text`.
pub fn openai_text(text: &str) -> String {
    let words: Vec<Value> = text.split_inclusive(' ').map(|word| json!({"content": word})).collect();
    openai_stream(&words, "stop")
}

fn openai_stream(deltas: &[Value], finish_reason: &str) -> String {
    let chunk = |delta: &Value, finish: Value| {
        let chunk = json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_800_000_000,
            "model": "fake-model", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let mut body: String = deltas.iter().map(|delta| chunk(delta, Value::Null)).collect();
    body.push_str(&chunk(&json!({}), json!(finish_reason)));
    let usage = json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_800_000_000,
        "model": "fake-model", "choices": [],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}});
    body.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
    body
}

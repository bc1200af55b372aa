//! The browser's side of the HTTP API: sessions, and sends and re-attachments whose NDJSON stream is decoded into
//! frames as it arrives; and the page's requests made with it (`connect`), following the run on screen.

mod activity;
mod batch;
mod follow;
mod following;
mod lists;
pub mod location;
mod notify;
mod page;
mod rare;
mod reach;
mod theme;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use gloo_net::http::{Request, Response};
use js_sys::{Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, ReadableStreamDefaultReader};

pub use self::batch::FrameBatcher;
pub use self::page::connect;
use crate::ndjson::FrameDecoder;
use crate::protocol::*;

/// A stream that has been silent this long is taken for dead: the server writes a keepalive every 15 s.
const STALL_TIMEOUT: Duration = Duration::from_secs(45);
/// How often the stall watchdog looks; a stall is noticed after between `STALL_TIMEOUT` and this much more.
const STALL_CHECK_EVERY: Duration = Duration::from_secs(5);

/// Why a request to the server failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientError {
    #[error("network error: {0}")]
    Network(String),
    #[error("the stream went silent for {} s", STALL_TIMEOUT.as_secs())]
    Stalled,
    #[error("{message} ({status})")]
    Status { status: u16, message: String },
}

impl ClientError {
    /// True when trying again later may work (the server was not reached, or the stream broke off).
    pub fn is_transient(&self) -> bool {
        match self {
            ClientError::Network(_) | ClientError::Stalled => true,
            ClientError::Status { status, .. } => *status >= 500 || *status == 408 || *status == 429,
        }
    }
}

impl From<gloo_net::Error> for ClientError {
    fn from(error: gloo_net::Error) -> Self {
        ClientError::Network(error.to_string())
    }
}

fn js_error(value: JsValue) -> ClientError {
    let text = value
        .as_string()
        .or_else(|| value.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message())))
        .unwrap_or_else(|| format!("{value:?}"));
    ClientError::Network(text)
}

/// A JSON body, decoded as the stream's frames are (straight from the bytes, no `serde_json::Value` in between):
/// the messages of a session are then read by the same decoder as the frames that carry them, and a long session
/// opens without building a `Value` tree of it first.
async fn json<T: serde::de::DeserializeOwned>(response: &Response) -> Result<T, ClientError> {
    serde_json::from_slice(&response.binary().await?).map_err(|error| ClientError::from(gloo_net::Error::from(error)))
}

async fn checked(response: Response) -> Result<Response, ClientError> {
    if response.ok() {
        return Ok(response);
    }
    let status = response.status();
    let message = match json::<ErrorBody>(&response).await {
        Ok(body) => body.message,
        Err(_) => response.status_text(),
    };
    Err(ClientError::Status { status, message })
}

/// A new session on `agent` (`None`: the server binds it by its first send).
pub async fn create_session(agent: Option<String>) -> Result<SessionSummary, ClientError> {
    let request =
        Request::post("/api/sessions").json(&CreateSessionRequest { title: None, agent, conversation: None })?;
    Ok(json::<SessionCreated>(&checked(request.send().await?).await?).await?.session)
}

/// The agent's own conversations New chat can open.
pub async fn agent_conversations(agent: &str) -> Result<AgentConversations, ClientError> {
    let response = Request::get(&format!("/api/agents/{agent}/conversations")).send().await?;
    json::<AgentConversations>(&checked(response).await?).await
}

/// A new session on `agent` holding its own conversation `conversation`, replayed.
pub async fn import_conversation(agent: String, conversation: String) -> Result<SessionSummary, ClientError> {
    let body = CreateSessionRequest { title: None, agent: Some(agent), conversation: Some(conversation) };
    let request = Request::post("/api/sessions").json(&body)?;
    Ok(json::<SessionCreated>(&checked(request.send().await?).await?).await?.session)
}

pub async fn list_sessions() -> Result<Vec<SessionSummary>, ClientError> {
    Ok(json::<SessionList>(&checked(Request::get("/api/sessions").send().await?).await?).await?.sessions)
}

pub async fn health() -> Result<HealthResponse, ClientError> {
    json::<HealthResponse>(&checked(Request::get("/api/health").send().await?).await?).await
}

pub async fn models() -> Result<ModelsResponse, ClientError> {
    json::<ModelsResponse>(&checked(Request::get("/api/models").send().await?).await?).await
}

pub async fn agents() -> Result<AgentsResponse, ClientError> {
    json::<AgentsResponse>(&checked(Request::get("/api/agents").send().await?).await?).await
}

/// Starts a GET now and hands back its promise: the request goes out while the code that reads its answer may still
/// be on its way (a chunk), and [`fetched`] reads it then.
pub fn start_fetch(url: &str) -> js_sys::Promise {
    web_sys::window().expect("the page runs in a window").fetch_with_str(url)
}

/// The JSON answer of a request started with [`start_fetch`].
pub async fn fetched<T: serde::de::DeserializeOwned>(request: js_sys::Promise) -> Result<T, ClientError> {
    let response: web_sys::Response = JsFuture::from(request).await.map_err(js_error)?.unchecked_into();
    json::<T>(&checked(Response::from(response)).await?).await
}

pub async fn session_detail(session_id: &str) -> Result<SessionDetail, ClientError> {
    let response = Request::get(&format!("/api/sessions/{session_id}")).send().await?;
    json::<SessionDetail>(&checked(response).await?).await
}

pub async fn rename_session(session_id: &str, title: &str) -> Result<SessionSummary, ClientError> {
    let body = RenameSessionRequest { title: title.to_owned() };
    let response = Request::patch(&format!("/api/sessions/{session_id}")).json(&body)?.send().await?;
    json::<SessionSummary>(&checked(response).await?).await
}

pub async fn delete_session(session_id: &str) -> Result<(), ClientError> {
    checked(Request::delete(&format!("/api/sessions/{session_id}")).send().await?).await?;
    Ok(())
}

pub async fn search(query: &str) -> Result<SearchResponse, ClientError> {
    let url = format!("/api/search?q={}", String::from(js_sys::encode_uri_component(query)));
    json::<SearchResponse>(&checked(Request::get(&url).send().await?).await?).await
}

/// The workspace paths matching an `@` mention (`GET /api/files`); `session` is `None` for a chat not started yet.
pub async fn files(query: &str, session: Option<&str>) -> Result<FilesResponse, ClientError> {
    let encode = |text: &str| String::from(js_sys::encode_uri_component(text));
    let mut url = format!("/api/files?q={}", encode(query));
    if let Some(session) = session {
        url.push_str(&format!("&session={}", encode(session)));
    }
    json::<FilesResponse>(&checked(Request::get(&url).send().await?).await?).await
}

/// Uploads an attached file as it is (`POST /api/attachments`): the server keeps it and says how to name it.
pub async fn upload_attachment(file: &web_sys::File) -> Result<FilePart, ClientError> {
    let encode = |text: &str| String::from(js_sys::encode_uri_component(text));
    let url = format!("/api/attachments?name={}&type={}", encode(&file.name()), encode(&file.type_()));
    let request =
        Request::post(&url).header("Content-Type", "application/octet-stream").body(JsValue::from(file.clone()))?;
    json::<FilePart>(&checked(request.send().await?).await?).await
}

pub async fn show_branch(session_id: &str, message_id: &str) -> Result<BranchFrame, ClientError> {
    let body = ShowBranchRequest { message_id: message_id.to_owned() };
    let request = Request::post(&format!("/api/sessions/{session_id}/branch")).json(&body)?;
    json::<BranchFrame>(&checked(request.send().await?).await?).await
}

/// Sets one of the options the session's agent offers (`POST /api/sessions/{id}/agent-option`).
pub async fn set_agent_option(session_id: &str, request: &AgentOptionRequest) -> Result<(), ClientError> {
    let request = Request::post(&format!("/api/sessions/{session_id}/agent-option")).json(request)?;
    checked(request.send().await?).await?;
    Ok(())
}

pub async fn restore_files(session_id: &str, message_id: &str) -> Result<RestoreResponse, ClientError> {
    let body = RestoreRequest { message_id: message_id.to_owned() };
    let request = Request::post(&format!("/api/sessions/{session_id}/restore")).json(&body)?;
    json::<RestoreResponse>(&checked(request.send().await?).await?).await
}

pub async fn fork_session(session_id: &str, message_id: &str) -> Result<ForkResponse, ClientError> {
    let body = ForkRequest { message_id: message_id.to_owned() };
    let request = Request::post(&format!("/api/sessions/{session_id}/fork")).json(&body)?;
    json::<ForkResponse>(&checked(request.send().await?).await?).await
}

pub async fn run_changes(session_id: &str, key: &str) -> Result<ChangesResponse, ClientError> {
    let response = Request::get(&format!("/api/sessions/{session_id}/changes/{key}")).send().await?;
    json::<ChangesResponse>(&checked(response).await?).await
}

pub async fn stop(session_id: &str) -> Result<AbortResponse, ClientError> {
    let request = Request::post("/api/chat/abort").json(&AbortRequest { session_id: session_id.to_owned() })?;
    json::<AbortResponse>(&checked(request.send().await?).await?).await
}

pub async fn answer_question(request: &QuestionAnswerRequest) -> Result<(), ClientError> {
    checked(Request::post("/api/chat/question").json(request)?.send().await?).await?;
    Ok(())
}

pub async fn decide_approval(request: &ApprovalRequest) -> Result<(), ClientError> {
    checked(Request::post("/api/chat/approval").json(request)?.send().await?).await?;
    Ok(())
}

/// What the reader of a stream wants after a batch of frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// Everything wanted has arrived; the reader closes the stream.
    Stop,
}

/// How a stream that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// The server ended it.
    Finished,
    /// The reader stopped it because it had what it wanted.
    Stopped,
}

/// One streamed request in flight, cancellable from outside (a session switch, the browser going offline).
#[derive(Clone)]
pub struct StreamHandle {
    controller: AbortController,
}

impl StreamHandle {
    pub fn new() -> Self {
        StreamHandle { controller: AbortController::new().expect("AbortController exists in every supported browser") }
    }

    /// Ends the request; its reader sees a network error.
    pub fn cancel(&self) {
        self.controller.abort();
    }
}

impl Default for StreamHandle {
    fn default() -> Self {
        Self::new()
    }
}

/// Sends a message and hands the frames of the answer to `on_frames`, a batch per network chunk, until the run ends.
pub async fn send(
    request: &ChatRequest,
    handle: &StreamHandle,
    on_frames: impl FnMut(Vec<ChatFrame>) -> Flow,
) -> Result<StreamEnd, ClientError> {
    let builder = Request::post("/api/chat").abort_signal(Some(&handle.controller.signal()));
    let response = checked(builder.json(request)?.send().await.map_err(ClientError::from)?).await?;
    read_stream::<FrameDecoder>(response, handle, on_frames).await
}

/// Re-attaches to a session: the logged frames after `after`, then the live tail, until `on_frames` says stop.
pub async fn events(
    session_id: &str,
    after: Seq,
    handle: &StreamHandle,
    on_frames: impl FnMut(Vec<ChatFrame>) -> Flow,
) -> Result<StreamEnd, ClientError> {
    let url = events_url(session_id, after);
    let response = checked(Request::get(&url).abort_signal(Some(&handle.controller.signal())).send().await?).await?;
    let end = read_stream::<FrameDecoder>(response, handle, on_frames).await?;
    if end == StreamEnd::Stopped {
        // The events route tails forever, so a reader that has what it wanted must cut it off. Browsers report
        // such a request as aborted; this line lets tests (and anyone in DevTools) tell it from a failure.
        web_sys::console::debug_1(&format!("chatwire: closed {url} after the run ended").into());
    }
    Ok(end)
}

pub fn events_url(session_id: &str, after: Seq) -> String {
    format!("/api/sessions/{session_id}/events?after={after}")
}

/// What reads a stream's lines into the items its reader gets: the chat's frames, or the activity feed's events.
trait StreamDecoder: Default {
    type Item;
    type Error: std::fmt::Display;
    fn feed(&mut self, chunk: &[u8]) -> Vec<Result<Self::Item, Self::Error>>;
    /// Ends the stream, decoding a last line that had no LF.
    fn finish(&mut self) -> Vec<Result<Self::Item, Self::Error>>;
}

impl StreamDecoder for FrameDecoder {
    type Item = ChatFrame;
    type Error = crate::ndjson::DecodeError;

    fn feed(&mut self, chunk: &[u8]) -> Vec<Result<ChatFrame, Self::Error>> {
        FrameDecoder::feed(self, chunk)
    }

    fn finish(&mut self) -> Vec<Result<ChatFrame, Self::Error>> {
        FrameDecoder::finish(self)
    }
}

async fn read_stream<D: StreamDecoder>(
    response: Response,
    handle: &StreamHandle,
    mut on_frames: impl FnMut(Vec<D::Item>) -> Flow,
) -> Result<StreamEnd, ClientError> {
    let body = response.body().ok_or_else(|| ClientError::Network("the answer has no body".into()))?;
    // web-sys types `getReader()` loosely; a default reader is what it returns without options.
    let reader: ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    let mut decoder = D::default();
    let mut deliver = |results: Vec<Result<D::Item, D::Error>>| {
        let mut frames = Vec::with_capacity(results.len());
        for result in results {
            match result {
                Ok(frame) => frames.push(frame),
                Err(error) => web_sys::console::warn_1(&format!("skipped a bad line of the stream: {error}").into()),
            }
        }
        if frames.is_empty() { Flow::Continue } else { on_frames(frames) }
    };
    let stalled = Rc::new(Cell::new(false));
    // One interval per stream rather than a timer re-armed per chunk: at hundreds of chunks a second, clearing and
    // setting a timeout each time was a measurable share of the main thread.
    let chunks_read = Rc::new(Cell::new(0_u64));
    let watchdog = {
        let (controller, stalled, chunks_read) = (handle.controller.clone(), stalled.clone(), chunks_read.clone());
        let (seen, silent_checks) = (Cell::new(0_u64), Cell::new(0_u32));
        let checks_to_stall = (STALL_TIMEOUT.as_millis() / STALL_CHECK_EVERY.as_millis()) as u32;
        IntervalGuard(
            leptos::prelude::set_interval_with_handle(
                move || {
                    if seen.replace(chunks_read.get()) != chunks_read.get() {
                        silent_checks.set(0);
                    } else if silent_checks.replace(silent_checks.get() + 1) + 1 >= checks_to_stall {
                        stalled.set(true);
                        controller.abort();
                    }
                },
                STALL_CHECK_EVERY,
            )
            .ok(),
        )
    };
    let outcome = loop {
        let chunk = match JsFuture::from(reader.read()).await {
            Ok(chunk) => chunk,
            Err(_) if stalled.get() => break Err(ClientError::Stalled),
            Err(error) => break Err(js_error(error)),
        };
        chunks_read.set(chunks_read.get() + 1);
        let done = Reflect::get(&chunk, &"done".into()).ok().and_then(|d| d.as_bool()).unwrap_or(true);
        if done {
            break Ok(match deliver(decoder.finish()) {
                Flow::Continue | Flow::Stop => StreamEnd::Finished,
            });
        }
        let value = Reflect::get(&chunk, &"value".into()).map_err(js_error)?;
        if deliver(decoder.feed(&Uint8Array::new(&value).to_vec())) == Flow::Stop {
            let _ = reader.cancel();
            break Ok(StreamEnd::Stopped);
        }
    };
    drop(watchdog);
    outcome
}

/// Clears its interval when dropped, also when the read is abandoned mid-await or ends early with an error.
struct IntervalGuard(Option<leptos::prelude::IntervalHandle>);

impl Drop for IntervalGuard {
    fn drop(&mut self) {
        if let Some(interval) = self.0.take() {
            interval.clear();
        }
    }
}

/// A pause that ends early when `wake` is called: the reconnect back-off, cut short when the tab comes back or
/// the browser goes online.
pub struct Pause {
    resolve: Rc<RefCell<Option<js_sys::Function>>>,
}

impl Pause {
    pub fn new() -> Self {
        Pause { resolve: Rc::new(RefCell::new(None)) }
    }

    pub async fn sleep(&self, duration: Duration) {
        let slot = self.resolve.clone();
        let promise = js_sys::Promise::new(&mut |resolve, _reject| {
            let millis = i32::try_from(duration.as_millis()).unwrap_or(i32::MAX);
            if let Some(window) = web_sys::window() {
                let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, millis);
            }
            *slot.borrow_mut() = Some(resolve);
        });
        let _ = JsFuture::from(promise).await;
        self.resolve.borrow_mut().take();
    }

    /// Ends the current pause now, if there is one.
    pub fn wake(&self) {
        if let Some(resolve) = self.resolve.borrow_mut().take() {
            let _ = resolve.call0(&JsValue::NULL);
        }
    }
}

impl Default for Pause {
    fn default() -> Self {
        Self::new()
    }
}

/// Something that happens once: waiting for it ends at once if it has happened already.
#[derive(Clone)]
pub struct Latch {
    happened: js_sys::Promise,
    resolve: Rc<RefCell<Option<js_sys::Function>>>,
}

impl Latch {
    pub fn new() -> Self {
        let resolve = Rc::new(RefCell::new(None));
        let slot = resolve.clone();
        let happened = js_sys::Promise::new(&mut |resolve, _reject| *slot.borrow_mut() = Some(resolve));
        Latch { happened, resolve }
    }

    /// Says it happened: every wait ends, now and later.
    pub fn release(&self) {
        if let Some(resolve) = self.resolve.borrow_mut().take() {
            let _ = resolve.call0(&JsValue::NULL);
        }
    }

    pub async fn wait(&self) {
        let _ = JsFuture::from(self.happened.clone()).await;
    }
}

impl Default for Latch {
    fn default() -> Self {
        Self::new()
    }
}

/// A fresh id for a send, so that a retry of the same send is recognized by the server.
pub fn request_id() -> String {
    let random = || (js_sys::Math::random() * f64::from(u32::MAX)) as u32;
    format!("req-{:08x}{:08x}{:08x}", random(), random(), js_sys::Date::now() as u32)
}

/// Milliseconds since the Unix epoch, by the browser's clock.
pub fn now_millis() -> f64 {
    js_sys::Date::now()
}

/// Where the browser remembers the picked model.
const MODEL_KEY: &str = "chatwire.model";

/// A value this browser keeps for the page (`localStorage`), if storage is available and the value was kept.
pub fn stored(key: &str) -> Option<String> {
    let storage = web_sys::window()?.local_storage().ok()??;
    storage.get_item(key).ok()?
}

/// Keeps a value for the next visit; a browser without storage (private mode) simply forgets it.
pub fn store(key: &str, value: &str) {
    if let Some(storage) = web_sys::window().and_then(|w| w.local_storage().ok().flatten()) {
        let _ = storage.set_item(key, value);
    }
}

/// The model this browser picked last, if storage is available and one was picked.
pub fn remembered_model() -> Option<String> {
    stored(MODEL_KEY)
}

/// Remembers the picked model for the next visit.
pub fn remember_model(name: &str) {
    store(MODEL_KEY, name);
}

/// Where the browser remembers the agent New chat picked last.
const AGENT_KEY: &str = "chatwire.agent";

/// The agent this browser picked last for a new chat, if storage is available and one was picked.
pub fn remembered_agent() -> Option<String> {
    stored(AGENT_KEY)
}

/// Remembers the picked agent for the next new chat.
pub fn remember_agent(name: &str) {
    store(AGENT_KEY, name);
}

/// True while the page is not shown (a background tab, a minimized window).
pub fn page_hidden() -> bool {
    web_sys::window().and_then(|w| w.document()).is_some_and(|d| d.hidden())
}

//! The browser's side of the HTTP API: sessions, and sends whose NDJSON stream is decoded into frames as it arrives.

use gloo_net::http::{Request, Response};
use js_sys::{Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::ReadableStreamDefaultReader;

use crate::ndjson::FrameDecoder;
use crate::protocol::*;

/// Why a request to the server failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientError {
    #[error("network error: {0}")]
    Network(String),
    #[error("{message} ({status})")]
    Status { status: u16, message: String },
}

impl From<gloo_net::Error> for ClientError {
    fn from(error: gloo_net::Error) -> Self {
        ClientError::Network(error.to_string())
    }
}

fn js_error(value: JsValue) -> ClientError {
    ClientError::Network(value.as_string().unwrap_or_else(|| format!("{value:?}")))
}

async fn checked(response: Response) -> Result<Response, ClientError> {
    if response.ok() {
        return Ok(response);
    }
    let status = response.status();
    let message = match response.json::<ErrorBody>().await {
        Ok(body) => body.message,
        Err(_) => response.status_text(),
    };
    Err(ClientError::Status { status, message })
}

pub async fn create_session() -> Result<SessionSummary, ClientError> {
    let request = Request::post("/api/sessions").json(&CreateSessionRequest::default())?;
    Ok(checked(request.send().await?).await?.json::<SessionCreated>().await?.session)
}

pub async fn list_sessions() -> Result<Vec<SessionSummary>, ClientError> {
    Ok(checked(Request::get("/api/sessions").send().await?).await?.json::<SessionList>().await?.sessions)
}

pub async fn session_detail(session_id: &str) -> Result<SessionDetail, ClientError> {
    let response = Request::get(&format!("/api/sessions/{session_id}")).send().await?;
    Ok(checked(response).await?.json::<SessionDetail>().await?)
}

pub async fn stop(session_id: &str) -> Result<AbortResponse, ClientError> {
    let request = Request::post("/api/chat/abort").json(&AbortRequest { session_id: session_id.to_owned() })?;
    Ok(checked(request.send().await?).await?.json::<AbortResponse>().await?)
}

pub async fn answer_question(request: &QuestionAnswerRequest) -> Result<(), ClientError> {
    checked(Request::post("/api/chat/question").json(request)?.send().await?).await?;
    Ok(())
}

/// Sends a message and hands every frame of the answer to `on_frames`, a batch per network chunk, until the run ends.
pub async fn send(request: &ChatRequest, on_frames: impl FnMut(Vec<ChatFrame>)) -> Result<(), ClientError> {
    let response = checked(Request::post("/api/chat").json(request)?.send().await?).await?;
    read_frames(response, on_frames).await
}

async fn read_frames(response: Response, mut on_frames: impl FnMut(Vec<ChatFrame>)) -> Result<(), ClientError> {
    let body = response.body().ok_or_else(|| ClientError::Network("the answer has no body".into()))?;
    // web-sys types `getReader()` loosely; a default reader is what it returns without options.
    let reader: ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    let mut decoder = FrameDecoder::default();
    let mut deliver = |results: Vec<Result<ChatFrame, crate::ndjson::DecodeError>>| {
        let mut frames = Vec::with_capacity(results.len());
        for result in results {
            match result {
                Ok(frame) => frames.push(frame),
                Err(error) => web_sys::console::warn_1(&format!("skipped a bad line of the stream: {error}").into()),
            }
        }
        if !frames.is_empty() {
            on_frames(frames);
        }
    };
    loop {
        let chunk = JsFuture::from(reader.read()).await.map_err(js_error)?;
        let done = Reflect::get(&chunk, &"done".into()).ok().and_then(|d| d.as_bool()).unwrap_or(true);
        if done {
            break;
        }
        let value = Reflect::get(&chunk, &"value".into()).map_err(js_error)?;
        deliver(decoder.feed(&Uint8Array::new(&value).to_vec()));
    }
    deliver(decoder.finish());
    Ok(())
}

/// A fresh id for a send, so that a retry of the same send is recognized by the server.
pub fn request_id() -> String {
    let random = || (js_sys::Math::random() * f64::from(u32::MAX)) as u32;
    format!("req-{:08x}{:08x}{:08x}", random(), random(), js_sys::Date::now() as u32)
}

/// Puts the session in the address bar, so a reload or a second tab opens it.
pub fn show_session_in_url(session_id: &str) {
    if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
        let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&format!("/s/{session_id}")));
    }
}

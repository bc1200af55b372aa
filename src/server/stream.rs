//! Streaming responses: a session's logged frames after a `seq`, then its live tail, as NDJSON or SSE, with keepalives.
//!
//! The stream reads the log itself, at its own pace: a slow reader holds no
//! buffer of frames in the server, and a dropped connection loses nothing (the
//! client re-attaches with the last `seq` it saw).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use tokio::sync::watch;

use super::chat::{Chat, SessionLive, Tail};
use crate::protocol::{ChatFrame, ErrorFrame, Seq};
use crate::store::LoggedFrame;

/// Streams must not be stored or transformed by caches, but without `no-store`: Chromium reports a
/// `no-store` response read through a stream reader as canceled (`net::ERR_ABORTED`) in about two of
/// three fetches, even when its body was read to the end (docs/decisions.md, "Stream caching").
const STREAM_CACHE_CONTROL: &str = "no-cache, no-transform";

/// How many logged frames one read takes from the store; they go out as one chunk.
const BATCH: usize = 256;

/// A live stream sends at most one chunk per this long: frames that come faster wait (never longer than this) and
/// go out together. The browser applies frames every other animation frame (~33 ms) anyway, and every chunk costs
/// it a network task, a read and a decode: one chunk per frame at 450 frames/s was the largest share of its main
/// thread, and one per 16 ms still cost twice the tasks of one per 32 ms for the same redraws.
const MIN_CHUNK_GAP: Duration = Duration::from_millis(32);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Ndjson,
    Sse,
}

impl Framing {
    pub fn from_accept(headers: &HeaderMap) -> Framing {
        let wants_sse = headers
            .get_all(axum::http::header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains("text/event-stream"));
        if wants_sse { Framing::Sse } else { Framing::Ndjson }
    }

    fn content_type(self) -> &'static str {
        match self {
            Framing::Ndjson => "application/x-ndjson; charset=utf-8",
            Framing::Sse => "text/event-stream; charset=utf-8",
        }
    }

    fn write(self, frame: &LoggedFrame, out: &mut String) {
        match self {
            Framing::Ndjson => {
                out.push_str(&frame.line);
                out.push('\n');
            }
            Framing::Sse => {
                out.push_str(&format!("id: {}\nevent: {}\ndata: {}\n\n", frame.seq, frame.kind, frame.line));
            }
        }
    }

    /// One line of a stream that is not a session's log (the activity feed): NDJSON, or an SSE event named `kind`.
    pub(super) fn write_line(self, kind: &str, line: &str, out: &mut String) {
        match self {
            Framing::Ndjson => {
                out.push_str(line);
                out.push('\n');
            }
            Framing::Sse => out.push_str(&format!("event: {kind}\ndata: {line}\n\n")),
        }
    }

    pub(super) fn keepalive(self) -> &'static str {
        match self {
            Framing::Ndjson => "{\"type\":\"ping\"}\n",
            Framing::Sse => ": ping\n\n",
        }
    }
}

struct TailState {
    chat: Arc<Chat>,
    live: Arc<SessionLive>,
    changes: watch::Receiver<Seq>,
    cursor: Seq,
    until_run: Option<String>,
    framing: Framing,
    keepalive: Duration,
    finished: bool,
    /// When the last chunk of frames went out (keepalives do not count), if that read reached the log's end:
    /// from then on the stream is live and paced. A replay of a long log goes out as fast as it is read.
    live_since: Option<tokio::time::Instant>,
}

/// The streaming response for `tail` of a session.
pub fn tail_response(chat: Arc<Chat>, live: Arc<SessionLive>, tail: Tail, framing: Framing) -> Response {
    let state = TailState {
        keepalive: chat.config.keepalive,
        changes: live.subscribe(),
        chat,
        live,
        cursor: tail.after,
        until_run: tail.until_run,
        framing,
        finished: false,
        live_since: None,
    };
    let stream = futures_util::stream::unfold(state, |mut state| async move {
        let chunk = next_chunk(&mut state).await?;
        Some((Ok::<Bytes, Infallible>(Bytes::from(chunk)), state))
    });
    streaming_response(Body::from_stream(stream), framing)
}

/// A streamed body with the headers every stream carries (DESIGN.md §3): never cached, buffered or compressed.
pub(super) fn streaming_response(body: Body, framing: Framing) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(framing.content_type()));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static(STREAM_CACHE_CONTROL));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

async fn next_chunk(state: &mut TailState) -> Option<String> {
    loop {
        if state.finished {
            return None;
        }
        if let Some(last) = state.live_since {
            tokio::select! {
                () = tokio::time::sleep_until(last + MIN_CHUNK_GAP) => {}
                () = state.chat.streams_end.cancelled() => return None,
            }
        }
        // Mark the current seq seen before reading, so an append after the read always wakes us.
        state.changes.borrow_and_update();
        let frames = match state.chat.store.frames_after(state.live.id(), state.cursor, BATCH).await {
            Ok(frames) => frames,
            Err(error) => {
                state.finished = true;
                let frame = ChatFrame::Error(ErrorFrame {
                    seq: None,
                    message: format!("reading the session log failed: {error}"),
                    run_id: state.until_run.clone(),
                    code: Some("log_unavailable".into()),
                });
                let mut line = crate::ndjson::encode_frame(&frame);
                if state.framing == Framing::Sse {
                    line = format!("event: error\ndata: {}\n", line);
                }
                return Some(line);
            }
        };
        if !frames.is_empty() {
            state.live_since = (frames.len() < BATCH).then(tokio::time::Instant::now);
            let mut chunk = String::new();
            for frame in &frames {
                state.framing.write(frame, &mut chunk);
                state.cursor = frame.seq;
                if let Some(run) = &state.until_run
                    && frame.ends_run(run)
                {
                    state.finished = true;
                    break;
                }
            }
            return Some(chunk);
        }
        tokio::select! {
            changed = tokio::time::timeout(state.keepalive, state.changes.changed()) => match changed {
                Ok(Ok(())) => continue,
                // The session was deleted: nothing more will come.
                Ok(Err(_)) => return None,
                Err(_quiet) => return Some(state.framing.keepalive().to_owned()),
            },
            // The server is shutting down; the viewer re-attaches with its last `seq` when it is back.
            () = state.chat.streams_end.cancelled() => return None,
        }
    }
}

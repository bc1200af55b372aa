//! Following the activity feed (`GET /api/activity`) for as long as the page is open: what happens in the runs of
//! every session, so that a run finishing, failing or waiting for the user in a session not on screen (or while the
//! tab is hidden) is told as the session on screen is (`notify::Notices::activity`), and the sidebar's statuses
//! follow runs that start and end anywhere.
//!
//! Reached only from the page lists' chunk (`lists::load`), which the page fetches once it is live: none of this is
//! in the main module.

use std::cell::Cell;

use gloo_net::http::Request;

use super::follow::{self, Page};
use super::{ClientError, Flow, Pause, StreamDecoder, StreamEnd, StreamHandle, checked, read_stream};
use crate::ndjson::{DEFAULT_MAX_LINE_BYTES, LineEvent, LineSplitter};
use crate::protocol::Activity;

thread_local! {
    /// Whether the feed is followed already: the lists are loaded again when the server comes back, the feed not.
    static FOLLOWING: Cell<bool> = const { Cell::new(false) };
}

/// Follows the feed, opening it again after each end or failure (0.5 s, doubling, at most 8 s); a server that has
/// no feed (an older one: 404) is not asked again.
pub async fn follow(page: Page) {
    if FOLLOWING.with(|following| following.replace(true)) {
        return;
    }
    let pause = Pause::new();
    let mut failures = 0;
    loop {
        let heard = Cell::new(false);
        let outcome = open(&StreamHandle::new(), |activities| {
            heard.set(true);
            for activity in activities {
                follow::take_activity(page, &activity);
            }
            Flow::Continue
        })
        .await;
        match outcome {
            Ok(StreamEnd::Finished | StreamEnd::Stopped) => {}
            Err(error) if error.is_transient() => {}
            Err(error) => {
                web_sys::console::warn_1(&format!("chatwire: the activity feed is not available: {error}").into());
                break;
            }
        }
        failures = if heard.get() { 1 } else { failures + 1 };
        pause.sleep(follow::backoff(failures)).await;
        // What happened while the feed was closed is not told; the sidebar's statuses are read again.
        follow::refresh_sessions(page.state).await;
    }
    FOLLOWING.with(|following| following.set(false));
}

async fn open(handle: &StreamHandle, on_events: impl FnMut(Vec<Activity>) -> Flow) -> Result<StreamEnd, ClientError> {
    let request = Request::get("/api/activity").abort_signal(Some(&handle.controller.signal()));
    let response = checked(request.send().await?).await?;
    read_stream::<ActivityDecoder>(response, handle, on_events).await
}

/// The feed's lines into events; a line that is not one (a newer server's kind of event) is reported and skipped.
struct ActivityDecoder {
    lines: LineSplitter,
}

impl Default for ActivityDecoder {
    fn default() -> Self {
        ActivityDecoder { lines: LineSplitter::new(DEFAULT_MAX_LINE_BYTES) }
    }
}

impl StreamDecoder for ActivityDecoder {
    type Item = Activity;
    type Error = String;

    fn feed(&mut self, chunk: &[u8]) -> Vec<Result<Activity, String>> {
        let mut out = Vec::new();
        self.lines.feed(chunk, |event| out.extend(decoded(event)));
        out
    }

    fn finish(&mut self) -> Vec<Result<Activity, String>> {
        let mut out = Vec::new();
        self.lines.finish(|event| out.extend(decoded(event)));
        out
    }
}

fn decoded(event: LineEvent<'_>) -> Option<Result<Activity, String>> {
    match event {
        LineEvent::Line(line) if line.bytes.iter().all(u8::is_ascii_whitespace) => None,
        LineEvent::Line(line) => {
            Some(serde_json::from_slice(line.bytes).map_err(|error| format!("line {}: {error}", line.number)))
        }
        LineEvent::TooLong { number, limit } => Some(Err(format!("line {number}: longer than {limit} bytes"))),
    }
}

//! `GET /api/activity`: one stream of what happens in every session's runs (a run started, finished, failed, or
//! waits for an approval or an answer), so that a page tells its user of sessions it does not show.
//!
//! The feed reads the logs itself, as a session's tail does, and keeps no buffer of events in the server. It is woken
//! whenever any session's log grows, here or on another instance (the store's wake-ups); a wake-up that was lost is
//! made up for by a look every `SWEEP_EVERY`. Each look lists the sessions, reads what each logged since the feed last
//! looked, and sends the frames that are activity (`chat_state::attention::activity_of`). The feed starts at the
//! logs' ends when it is opened: it tells what happens from then on, not what happened before.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::Response;
use tokio::sync::watch;
use tokio::time::Instant;

use super::chat::{Chat, ChatError};
use super::stream::{Framing, streaming_response};
use crate::chat_state::attention::activity_of;
use crate::protocol::{Activity, Seq};
use crate::store::{LoggedFrame, StoreError};

/// How often the logs are looked at without a wake-up: the most a lost wake-up delays an event.
const SWEEP_EVERY: Duration = Duration::from_secs(2);

/// Frames that come in a burst (an answer streaming) are looked at together, at most once per this long: a page
/// that tells its user of a finished run needs no lower latency, and each look lists every session.
const MIN_GAP: Duration = Duration::from_millis(250);

/// How many logged frames one read takes from the store.
const BATCH: usize = 256;

/// The streaming response of the feed, opened at the logs' ends as the store has them now.
pub async fn activity_response(chat: Arc<Chat>, framing: Framing) -> Result<Response, ChatError> {
    // Subscribed before the logs' ends are read, so that a frame logged after that read always wakes the feed.
    let growth = chat.sessions.growth();
    let cursors = chat.store.sessions().await?.into_iter().map(|s| (s.session_id, s.last_seq)).collect();
    let feed = Feed { chat, growth, cursors, framing, last_sent: Instant::now() };
    let stream = futures_util::stream::unfold(feed, |mut feed| async move {
        let chunk = feed.next_chunk().await?;
        Some((Ok::<Bytes, Infallible>(Bytes::from(chunk)), feed))
    });
    Ok(streaming_response(Body::from_stream(stream), framing))
}

struct Feed {
    chat: Arc<Chat>,
    growth: watch::Receiver<u64>,
    /// How far the feed has read each session's log.
    cursors: HashMap<String, Seq>,
    framing: Framing,
    /// When the feed last sent anything (keepalives too).
    last_sent: Instant,
}

impl Feed {
    async fn next_chunk(&mut self) -> Option<String> {
        loop {
            let keepalive_at = self.last_sent + self.chat.config.keepalive;
            tokio::select! {
                changed = self.growth.changed() => {
                    // The chat is gone: nothing more will grow.
                    changed.ok()?;
                }
                () = tokio::time::sleep(SWEEP_EVERY) => {}
                () = tokio::time::sleep_until(keepalive_at) => {
                    self.last_sent = Instant::now();
                    return Some(self.framing.keepalive().to_owned());
                }
                // The server is shutting down; the page opens the feed again when it is back.
                () = self.chat.streams_end.cancelled() => return None,
            }
            tokio::select! {
                () = tokio::time::sleep(MIN_GAP) => {}
                () = self.chat.streams_end.cancelled() => return None,
            }
            // Marked seen before the logs are read, so that a frame logged during the read wakes the feed again.
            self.growth.borrow_and_update();
            match self.look().await {
                Ok(chunk) if chunk.is_empty() => {}
                Ok(chunk) => {
                    self.last_sent = Instant::now();
                    return Some(chunk);
                }
                // Tried again at the next wake-up or sweep; the cursors only moved past what was sent.
                Err(error) => tracing::warn!("the activity feed could not read the logs: {error}"),
            }
        }
    }

    /// The activity every session logged since the last look, as lines; the cursors move past what they hold.
    async fn look(&mut self) -> Result<String, StoreError> {
        let mut out = String::new();
        let sessions = self.chat.store.sessions().await?;
        let listed: HashSet<&str> = sessions.iter().map(|s| s.session_id.as_str()).collect();
        // Deleted sessions are forgotten; one created since the feed opened is read from its start.
        self.cursors.retain(|id, _| listed.contains(id.as_str()));
        for session in &sessions {
            let id = &session.session_id;
            let mut cursor = self.cursors.get(id).copied().unwrap_or(0);
            while cursor < session.last_seq {
                let frames = self.chat.store.frames_after(id, cursor, BATCH).await?;
                let Some(last) = frames.last() else { break };
                for activity in frames.iter().filter_map(|logged| activity_of_logged(id, logged)) {
                    let kind = activity_kind(&activity);
                    let line = serde_json::to_string(&activity).expect("an activity always serializes");
                    self.framing.write_line(kind, &line, &mut out);
                }
                cursor = last.seq;
                self.cursors.insert(id.clone(), cursor);
            }
        }
        Ok(out)
    }
}

/// The activity a logged frame is. Only the kinds that can be one are parsed: most of a log is deltas and tool
/// output, and a tool frame is one only while it waits for the user.
fn activity_of_logged(session_id: &str, logged: &LoggedFrame) -> Option<Activity> {
    let candidate = match logged.kind.as_str() {
        "start" | "done" | "error" => true,
        "tool" => logged.line.contains("\"approval-requested\"") || logged.line.contains("\"tool-Question\""),
        _ => false,
    };
    if !candidate {
        return None;
    }
    // Lines were validated when they were written; one that no longer parses is skipped, as a replay skips it.
    let frame = crate::protocol::parse_frame(logged.line.as_bytes()).ok()?;
    activity_of(session_id, &frame)
}

/// The `type` of an activity, for SSE `event:` lines.
fn activity_kind(activity: &Activity) -> &'static str {
    match activity {
        Activity::Started(_) => "started",
        Activity::Finished(_) => "finished",
        Activity::Failed(_) => "failed",
        Activity::Approval(_) => "approval",
        Activity::Question(_) => "question",
        Activity::Ping => "ping",
    }
}

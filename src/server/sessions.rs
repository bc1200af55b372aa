//! The session registry: each session's live state (the latest `seq` that wakes its viewers, its active run, its
//! transcript) and `log`, the one way a frame enters a session's log.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, watch};

use super::chat::{ChatError, now_ms};
use super::run::SessionRuntime;
use super::runtime_files::RuntimeFiles;
use crate::chat_state::{ChatSnapshot, apply};
use crate::protocol::*;
use crate::runtime::event::AgentEvent;
use crate::runtime::seam::RunControl;
use crate::store::{Append, Lease, RunStatus, Store};

/// The run a session is running, as the requests that steer, answer or stop it reach it.
pub(super) struct ActiveRun {
    pub run_id: String,
    /// The lease the run holds on its session.
    pub lease: Lease,
    pub control: RunControl,
    pub events: mpsc::UnboundedSender<AgentEvent>,
}

/// A session's live state: who is running, and the latest `seq` for tailing viewers.
pub struct SessionLive {
    id: String,
    /// The agent the session runs on, once it is bound: set once, since a session keeps its agent for life.
    agent: std::sync::OnceLock<String>,
    last_seq: watch::Sender<Seq>,
    /// The registry's count of log growths, which wakes the activity feeds.
    grown: watch::Sender<u64>,
    /// Held while a send decides whether it starts a run or joins the active one: one session's sends are
    /// serialized, and no other session's send waits for it.
    pub(super) sending: tokio::sync::Mutex<()>,
    active: Mutex<Option<ActiveRun>>,
    /// Held by a run for as long as it drives the runtime; the next run waits for it.
    pub(super) runtime: Arc<tokio::sync::Mutex<Option<SessionRuntime>>>,
    /// The transcript as the reducer has built it from the log, once someone asked for it; kept current by every
    /// append, so opening a long session does not replay its whole log.
    transcript: tokio::sync::Mutex<Option<Kept>>,
}

/// What the registry keeps of a session's log, current with every append.
#[derive(Debug, Clone, Default)]
pub(super) struct Kept {
    pub snapshot: ChatSnapshot,
    /// The runtime's files of the conversation, by branch.
    pub runtime_files: RuntimeFiles,
}

impl Kept {
    fn apply(&mut self, frame: &ChatFrame) {
        apply(&mut self.snapshot, frame);
        self.runtime_files.note(frame, &self.snapshot);
    }
}

impl SessionLive {
    fn new(id: &str, last_seq: Seq, agent: Option<String>, grown: watch::Sender<u64>) -> SessionLive {
        SessionLive {
            id: id.to_owned(),
            agent: agent.map(std::sync::OnceLock::from).unwrap_or_default(),
            last_seq: watch::channel(last_seq).0,
            grown,
            sending: Default::default(),
            active: Mutex::new(None),
            runtime: Arc::new(tokio::sync::Mutex::new(None)),
            transcript: tokio::sync::Mutex::new(None),
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// The agent the session is bound to; `None` until it is (the default agent's sessions from before agents had
    /// names, and new sessions before their first send).
    pub fn agent(&self) -> Option<&str> {
        self.agent.get().map(String::as_str)
    }

    /// Notes the agent the store says the session is bound to. Set once: the store binds a session only once, so a
    /// second note (two requests that both read the binding) says the same.
    pub(super) fn set_agent(&self, agent: String) {
        let _ = self.agent.set(agent);
    }

    pub fn subscribe(&self) -> watch::Receiver<Seq> {
        self.last_seq.subscribe()
    }

    /// The `seq` of the session's last logged frame.
    pub fn last_seq(&self) -> Seq {
        *self.last_seq.borrow()
    }

    /// The log reached `seq` (here or on another instance): viewers behind it are woken, and the activity feeds.
    pub(super) fn bump(&self, seq: Seq) {
        let grew = self.last_seq.send_if_modified(|last| {
            let grew = seq > *last;
            if grew {
                *last = seq;
            }
            grew
        });
        if grew {
            self.grown.send_modify(|count| *count = count.wrapping_add(1));
        }
    }

    /// Whether anyone is tailing the session here.
    pub(super) fn is_watched(&self) -> bool {
        self.last_seq.receiver_count() > 0
    }

    pub fn active_run_id(&self) -> Option<String> {
        self.with_active(|run| run.map(|run| run.run_id.clone()))
    }

    /// Looks at the active run under its lock (never held across an await).
    pub(super) fn with_active<T>(&self, look: impl FnOnce(Option<&ActiveRun>) -> T) -> T {
        look(self.active.lock().expect("the active-run lock is never poisoned").as_ref())
    }

    pub(super) fn set_active(&self, run: ActiveRun) {
        *self.active.lock().expect("the active-run lock is never poisoned") = Some(run);
    }

    /// Clears the active run if it is still `run_id`: a send that arrived while that run was ending may already
    /// have started the next one, which stays.
    pub(super) fn clear_active(&self, run_id: &str) {
        let mut active = self.active.lock().expect("the active-run lock is never poisoned");
        if active.as_ref().is_some_and(|run| run.run_id == run_id) {
            *active = None;
        }
    }
}

/// Which frames a response streams: those after `after`, until `until_run` ends (or forever).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tail {
    pub after: Seq,
    pub until_run: Option<String>,
}

/// The sessions this server has touched since it started, by id.
pub struct SessionRegistry {
    store: Arc<dyn Store>,
    live: Mutex<HashMap<String, Arc<SessionLive>>>,
    /// Bumped whenever any session's log grows (or may have, on another instance): what wakes the activity feeds,
    /// which then read the store to learn which session and what.
    grown: watch::Sender<u64>,
}

/// Frames the transcript is rebuilt from per store read.
const SNAPSHOT_BATCH: usize = 1024;

impl SessionRegistry {
    pub(super) fn new(store: Arc<dyn Store>) -> SessionRegistry {
        SessionRegistry { store, live: Mutex::new(HashMap::new()), grown: watch::channel(0).0 }
    }

    /// The live state of an existing session.
    pub(super) async fn live(&self, session_id: &str) -> Result<Arc<SessionLive>, ChatError> {
        if let Some(session) = self.live.lock().expect("the sessions lock is never poisoned").get(session_id) {
            return Ok(session.clone());
        }
        let stored =
            self.store.session(session_id).await?.ok_or_else(|| ChatError::UnknownSession(session_id.to_owned()))?;
        let mut live = self.live.lock().expect("the sessions lock is never poisoned");
        // Another request may have looked the session up meanwhile: the first entry stays, so all share one.
        let session = live.entry(session_id.to_owned()).or_insert_with(|| {
            Arc::new(SessionLive::new(session_id, stored.last_seq, stored.agent, self.grown.clone()))
        });
        Ok(session.clone())
    }

    /// Wakes the activity feeds: some session's log grew, or may have (a wake-up from another instance about a
    /// session this one has no live state for, a listener that reconnected).
    pub(super) fn note_growth(&self) {
        self.grown.send_modify(|count| *count = count.wrapping_add(1));
    }

    /// Changes whenever some session's log grows.
    pub(super) fn growth(&self) -> watch::Receiver<u64> {
        self.grown.subscribe()
    }

    /// Every session this instance has live state for.
    pub(super) fn all(&self) -> Vec<Arc<SessionLive>> {
        self.live.lock().expect("the sessions lock is never poisoned").values().cloned().collect()
    }

    /// The live state of a session if this instance has one (a wake-up for any other session concerns no one here).
    pub(super) fn known(&self, session_id: &str) -> Option<Arc<SessionLive>> {
        self.live.lock().expect("the sessions lock is never poisoned").get(session_id).cloned()
    }

    /// Drops a deleted session, ending what its runtime held.
    pub(super) async fn forget(&self, session_id: &str) {
        let removed = self.live.lock().expect("the sessions lock is never poisoned").remove(session_id);
        if let Some(live) = removed
            && let Some(runtime) = live.runtime.lock().await.as_mut()
        {
            runtime.close().await;
        }
    }

    /// A copy of the session's transcript: built from the log the first time, then kept current by `log` and by
    /// what other instances appended since.
    pub(super) async fn transcript(&self, live: &SessionLive) -> Result<Kept, ChatError> {
        self.read_transcript(live, Kept::clone).await
    }

    /// What `read` takes from the session's transcript, made current as for [`Self::transcript`], read in place:
    /// a long session's detail is built from the kept transcript without copying it first.
    pub(super) async fn read_transcript<T>(
        &self,
        live: &SessionLive,
        read: impl FnOnce(&Kept) -> T,
    ) -> Result<T, ChatError> {
        // Held while building: an append that lands meanwhile waits and is applied after (or, if the build already
        // read it, is recognised by its `seq` and changes nothing).
        let mut transcript = live.transcript.lock().await;
        self.make_current(live, &mut transcript).await?;
        Ok(read(transcript.as_ref().expect("made current just above")))
    }

    /// Builds the kept transcript, or brings it up to the log's end: another instance may have appended (a run it
    /// owned, or the end of a run whose owner died).
    async fn make_current(&self, live: &SessionLive, transcript: &mut Option<Kept>) -> Result<(), ChatError> {
        let kept = transcript.get_or_insert_with(Kept::default);
        let last = self.catch_up(&live.id, kept).await?;
        live.bump(last);
        Ok(())
    }

    /// The transcript rebuilt by the shared reducer from the whole log.
    pub(super) async fn replay(&self, session_id: &str) -> Result<Kept, ChatError> {
        let mut kept = Kept::default();
        self.catch_up(session_id, &mut kept).await?;
        Ok(kept)
    }

    /// Applies the logged frames after `kept`'s last `seq` to it; returns the `seq` it reached.
    async fn catch_up(&self, session_id: &str, kept: &mut Kept) -> Result<Seq, ChatError> {
        loop {
            let frames = self.store.frames_after(session_id, kept.snapshot.last_seq, SNAPSHOT_BATCH).await?;
            let Some(last) = frames.last().map(|frame| frame.seq) else { return Ok(kept.snapshot.last_seq) };
            for logged in &frames {
                // Lines were validated when they were written; one that no longer parses is skipped, not fatal.
                if let Ok(frame) = crate::protocol::parse_frame(logged.line.as_bytes()) {
                    kept.apply(&frame);
                }
            }
            kept.snapshot.last_seq = last;
        }
    }

    /// Logs the frames `make` makes, reducing each once: `make` gets the kept transcript to reduce them into (the
    /// session's mapper does that as it makes them), and the transcript stays locked until they are logged, so
    /// that no reader sees a frame the log does not hold. `ends_run` says whether the batch ends its run, and how.
    /// Returns whether it did.
    pub(super) async fn log_reduced(
        &self,
        live: &SessionLive,
        run_id: &str,
        lease: &Lease,
        ends_run: impl FnOnce(&[ChatFrame]) -> Option<RunStatus>,
        make: impl FnOnce(&mut ChatSnapshot) -> Vec<ChatFrame>,
    ) -> Result<bool, ChatError> {
        let mut transcript = live.transcript.lock().await;
        // No catching up here: while the run holds the lease, no one else appends to the session.
        if transcript.is_none() {
            *transcript = Some(self.replay(&live.id).await?);
        }
        let kept = transcript.as_mut().expect("built just above");
        let frames = make(&mut kept.snapshot);
        if frames.is_empty() {
            return Ok(false);
        }
        let ends_run = ends_run(&frames);
        self.name_after_prompt(live, &frames).await?;
        let append = Append {
            session_id: live.id.clone(),
            run_id: Some(run_id.to_owned()),
            frames,
            ends_run,
            lease: Some(lease.clone()),
            now: now_ms(),
        };
        match self.store.append(append).await {
            Ok(appended) => {
                if let Some(last) = appended.last() {
                    kept.snapshot.last_seq = last.logged.seq;
                    live.bump(last.logged.seq);
                }
                for frame in &appended {
                    kept.runtime_files.note(&frame.frame, &kept.snapshot);
                }
                Ok(ends_run.is_some())
            }
            Err(error) => {
                // The transcript holds frames the log does not: it is rebuilt from the log when next asked for.
                *transcript = None;
                Err(error.into())
            }
        }
    }

    /// Names an unnamed session after the first user message among `frames`.
    async fn name_after_prompt(&self, live: &SessionLive, frames: &[ChatFrame]) -> Result<(), ChatError> {
        for frame in frames {
            if let ChatFrame::Message(MessageFrame { message, .. }) = frame
                && message.role == Role::User
                && let Some(ChatMessagePart::Text(text)) = message.parts.first()
            {
                self.store.title_if_unset(&live.id, &title_from(&text.text)).await?;
            }
        }
        Ok(())
    }

    /// Appends frames made outside a run's mapper (the end of a run whose owner is gone, a branch switch) to the
    /// session's log in one transaction under `lease`, and wakes its viewers; `ends_run` is set when the batch ends
    /// with its run's terminal frame. Returns the last `seq` it logged.
    pub(super) async fn log(
        &self,
        live: &SessionLive,
        run_id: Option<&str>,
        lease: &Lease,
        frames: Vec<ChatFrame>,
        ends_run: Option<RunStatus>,
    ) -> Result<Option<Seq>, ChatError> {
        if frames.is_empty() {
            return Ok(None);
        }
        self.name_after_prompt(live, &frames).await?;
        let append = Append {
            session_id: live.id.clone(),
            run_id: run_id.map(str::to_owned),
            frames,
            ends_run,
            lease: Some(lease.clone()),
            now: now_ms(),
        };
        let mut transcript = live.transcript.lock().await;
        if transcript.is_some() {
            self.make_current(live, &mut transcript).await?;
        }
        let appended = self.store.append(append).await?;
        if let Some(transcript) = transcript.as_mut() {
            for frame in &appended {
                transcript.apply(&frame.frame);
            }
        }
        if let Some(last) = appended.last() {
            live.bump(last.logged.seq);
        }
        Ok(appended.last().map(|last| last.logged.seq))
    }
}

/// A session's title from its first message: the first line, at most 60 characters.
fn title_from(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let mut title: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        title.push('…');
    }
    title
}

#[cfg(test)]
mod tests {
    use super::title_from;

    #[test]
    fn titles_come_from_the_first_line() {
        assert_eq!(title_from("\n  Fix the build  \nplease"), "Fix the build");
        assert_eq!(title_from(&"x".repeat(70)).chars().count(), 61);
    }
}

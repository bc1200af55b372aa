//! Following the run of the session on screen: opening a session, sending, and the re-attach loop that keeps the
//! page on a run across network errors, sleeping tabs and reloads, every frame going through the page's batcher
//! into its snapshot.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use leptos::prelude::*;

use crate::app::{Link, PageState, skips_ahead};
use crate::chat_state::{ChatSnapshot, apply};
use crate::client::notify::Notices;
use crate::client::reach;
use crate::client::{self as api, Flow, FrameBatcher, Latch, Pause, StreamEnd, StreamHandle};
use crate::components::Outgoing;
use crate::i18n::{Key, fill};
use crate::protocol::*;

/// A stream that delivered nothing for this long (keepalives included) is replaced when the tab comes back.
const QUIET_LIMIT_MS: f64 = 20_000.0;

/// Re-attach delays: 0.5 s, doubling, capped at 8 s.
pub(super) fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(500u64.saturating_mul(1 << attempt.saturating_sub(1).min(4)))
}

/// The page as the client drives it: its signals, and what the client keeps beside them.
#[derive(Clone, Copy)]
pub struct Page {
    pub state: PageState,
    live: StoredValue<Rc<Live>, LocalStorage>,
}

impl Page {
    pub fn new(state: PageState) -> Self {
        super::location::watch(state.path);
        Page { state, live: StoredValue::new_local(Live::new()) }
    }

    fn live(self) -> Rc<Live> {
        self.live.get_value()
    }

    /// Resolves once the first session opened is on screen (its transcript built, or its request failed), or
    /// another was opened instead; it waits on the session's chunk, so only once that has loaded.
    pub async fn first_shown(self) {
        let shown = self.live().first_shown.clone();
        shown.wait().await;
    }

    /// Goes to another page path (a new history entry), which the page then opens.
    pub fn navigate(self, path: &str) {
        super::location::navigate(self.state.path, path, false);
    }
}

/// Goes to a session's URL (`None`: a new chat); the page opens what the URL names.
pub fn go_to(page: Page, session_id: Option<String>) {
    let path = session_id.map_or_else(|| "/".to_owned(), |id| format!("/s/{id}"));
    page.navigate(&path);
}

/// Starts the batcher that applies streamed frames to the snapshot, and the listeners that re-attach when the tab
/// comes back or the network returns.
pub fn listen(page: Page) {
    let (state, live) = (page.state, page.live());
    let chat = state.chat;
    *live.batcher.borrow_mut() = Some(FrameBatcher::new(move |frames| {
        // One snapshot update per animation frame, however many frames arrived since the last one.
        let mut gap_after = None;
        chat.update(|snapshot| {
            for frame in &frames {
                if skips_ahead(snapshot, frame) {
                    gap_after.get_or_insert(snapshot.last_seq);
                    continue;
                }
                apply(snapshot, frame);
            }
        });
        if let Some(since) = gap_after {
            attach(page, since);
        }
    }));

    let come_back = move || {
        let live = page.live();
        if live.attached.get() == Some(live.generation.get()) {
            live.pause.wake();
            return;
        }
        let quiet = api::now_millis() - live.last_heard.get() > QUIET_LIMIT_MS;
        let open = !live.streams.borrow().is_empty();
        if open && quiet {
            // Possibly a connection that died while the tab slept: replace it (its reader re-attaches).
            live.cancel_streams();
        } else if !open && state.chat.with_untracked(ChatSnapshot::is_running) {
            attach(page, state.chat.with_untracked(|c| c.last_seq));
        }
    };
    let on_visible = move |_| {
        if !api::page_hidden() {
            page.live().notices.look(state);
            come_back();
        }
    };
    std::mem::forget(window_event_listener_untyped("visibilitychange", on_visible));
    std::mem::forget(window_event_listener_untyped("pageshow", move |_| come_back()));
    std::mem::forget(window_event_listener_untyped("online", move |_| come_back()));
    std::mem::forget(window_event_listener_untyped("offline", move |_| {
        // A dead connection may never report an error; the re-attach waits for `online` instead.
        let live = page.live();
        if !live.streams.borrow().is_empty() {
            state.link.set(Link::Reconnecting { attempt: 1 });
            live.cancel_streams();
        }
    }));
}

/// What the client keeps beside the page's signals: open streams, the per-frame batch, what has been attached.
struct Live {
    /// Bumped when another session is opened: everything started for the previous one stops.
    generation: Cell<u64>,
    /// The session whose transcript is loaded (or being loaded), so opening it again does nothing.
    opened: RefCell<Option<Option<String>>>,
    streams: RefCell<Vec<(u64, StreamHandle)>>,
    next_stream: Cell<u64>,
    /// The generation whose re-attach loop is running, if one is.
    attached: Cell<Option<u64>>,
    /// Highest `seq` of a terminal frame (`done`/`error`) any stream of this session has seen.
    terminal_seq: Cell<Seq>,
    /// When a stream last delivered anything (ms since the epoch).
    last_heard: Cell<f64>,
    pause: Pause,
    batcher: RefCell<Option<FrameBatcher>>,
    /// What happened in runs while the tab was hidden (the title's count, notifications).
    notices: Notices,
    /// Released when the first session opened has been shown.
    first_shown: Latch,
}

impl Live {
    fn new() -> Rc<Live> {
        Rc::new(Live {
            generation: Cell::new(0),
            opened: RefCell::new(None),
            streams: RefCell::new(Vec::new()),
            next_stream: Cell::new(0),
            attached: Cell::new(None),
            terminal_seq: Cell::new(0),
            last_heard: Cell::new(0.0),
            pause: Pause::new(),
            batcher: RefCell::new(None),
            notices: Notices::default(),
            first_shown: Latch::new(),
        })
    }

    fn batcher(&self) -> FrameBatcher {
        self.batcher.borrow().clone().expect("the batcher is made by `start`, before any stream opens")
    }

    fn open_stream(&self) -> (u64, StreamHandle) {
        let id = self.next_stream.get() + 1;
        self.next_stream.set(id);
        let handle = StreamHandle::new();
        self.streams.borrow_mut().push((id, handle.clone()));
        self.last_heard.set(api::now_millis());
        (id, handle)
    }

    fn close_stream(&self, id: u64) {
        self.streams.borrow_mut().retain(|(open, _)| *open != id);
    }

    fn cancel_streams(&self) {
        for (_, handle) in self.streams.borrow_mut().drain(..) {
            handle.cancel();
        }
    }

    /// Notes what a batch of frames means for attachment, queues it for the next animation frame, and says
    /// whether the batch holds a terminal frame.
    fn take_frames(&self, frames: Vec<ChatFrame>) -> bool {
        self.last_heard.set(api::now_millis());
        let mut terminal = false;
        for frame in &frames {
            if frame.is_terminal() {
                terminal = true;
                if let Some(seq) = frame.seq() {
                    self.terminal_seq.set(self.terminal_seq.get().max(seq));
                }
            }
        }
        self.batcher().push(frames);
        terminal
    }
}

/// A batch of the session's frames as it arrives: what needs the user is noticed at once (a hidden tab applies
/// nothing until it is shown), then the frames go to the batcher. True when the batch holds a terminal frame.
fn take_frames(page: Page, session_id: &str, frames: Vec<ChatFrame>) -> bool {
    let live = page.live();
    live.notices.frames(page.state, session_id, &frames, move |id| go_to(page, Some(id)));
    live.take_frames(frames)
}

/// An event of the activity feed (`client::activity`): told as the frames of the session on screen are, and the
/// sidebar's statuses read again when a run started or ended.
pub(super) fn take_activity(page: Page, activity: &Activity) {
    let state = page.state;
    page.live().notices.activity(state, activity, move |id| go_to(page, Some(id)));
    if activity.changes_status() {
        leptos::task::spawn_local(refresh_sessions(state));
    }
}

pub fn open(page: Page, session_id: Option<String>) {
    let (state, live) = (page.state, page.live());
    if live.opened.borrow().as_ref() == Some(&session_id) {
        return;
    }
    *live.opened.borrow_mut() = Some(session_id.clone());
    let generation = live.generation.get() + 1;
    live.generation.set(generation);
    live.cancel_streams();
    // None before the code that follows runs has loaded (`listen` makes it): then there is nothing to drop.
    if let Some(batcher) = live.batcher.borrow().as_ref() {
        batcher.clear();
    }
    live.attached.set(None);
    live.terminal_seq.set(0);
    live.pause.wake();
    state.session_id.set(session_id.clone());
    live.notices.look(state);
    state.chat.set(ChatSnapshot::default());
    state.link.set(Link::Idle);
    state.problem.set(None);
    let Some(session_id) = session_id else { return };
    // The transcript's request goes out now, beside the fetch of the code that reads it.
    let detail = api::start_fetch(&format!("/api/sessions/{session_id}"));
    leptos::task::spawn_local(async move {
        let following = super::following::load(page).await;
        if live.generation.get() == generation {
            (following.load)(page, generation, detail).await;
        }
        live.first_shown.release();
    });
}

/// Shows the transcript of session `generation` once its requested `detail` has come, and follows its run if one is
/// going on (reached only from the chunk of `client::following`).
pub(super) async fn show_detail(page: Page, generation: u64, detail: js_sys::Promise) {
    let (state, live) = (page.state, page.live());
    let detail = api::fetched::<SessionDetail>(detail).await;
    if live.generation.get() != generation {
        return;
    }
    match detail {
        Ok(detail) => {
            let running = detail.session.status == SessionStatus::Running;
            let last_seq = detail.last_seq;
            state.chat.set(ChatSnapshot::from_detail(detail));
            if running {
                attach(page, last_seq);
            }
        }
        Err(error) if reach::lost(state, &error) => {}
        Err(error) => state.problem.set(Some(error.to_string())),
    }
}

/// Opens the session on screen again, as if for the first time: its transcript could not be loaded before.
pub fn reopen(page: Page) {
    *page.live().opened.borrow_mut() = None;
    open(page, page.state.session_id.get_untracked());
}

/// Follows the session's run with `GET /api/sessions/{id}/events?after=<last seq>` until a terminal frame newer
/// than `since` has been applied, re-attaching with back-off after each failure. At most one such loop runs.
fn attach(page: Page, since: Seq) {
    let (state, live) = (page.state, page.live());
    let generation = live.generation.get();
    if live.attached.get() == Some(generation) {
        live.pause.wake();
        return;
    }
    live.attached.set(Some(generation));
    leptos::task::spawn_local(async move {
        let mut failures = 0;
        while live.generation.get() == generation {
            live.batcher().flush();
            let after = state.chat.with_untracked(|c| c.last_seq);
            let terminal = live.terminal_seq.get();
            if terminal > since && after >= terminal {
                break;
            }
            let Some(session_id) = state.session_id.get_untracked() else { break };
            let (stream, handle) = live.open_stream();
            let heard = Cell::new(false);
            let outcome = api::events(&session_id, after, &handle, |frames| {
                if live.generation.get() != generation {
                    return Flow::Stop;
                }
                if !heard.replace(true) {
                    state.link.set(Link::Live);
                }
                if take_frames(page, &session_id, frames) { Flow::Stop } else { Flow::Continue }
            })
            .await;
            live.close_stream(stream);
            if live.generation.get() != generation {
                return;
            }
            match outcome {
                Ok(StreamEnd::Stopped) => break,
                Ok(StreamEnd::Finished) => {}
                Err(error) if error.is_transient() => {}
                Err(error) => {
                    state.problem.set(Some(error.to_string()));
                    // Nothing more will come for this run; do not show it as running forever.
                    state.chat.update(|snapshot| {
                        snapshot.run = None;
                        snapshot.activity = None;
                    });
                    break;
                }
            }
            failures = if heard.get() { 1 } else { failures + 1 };
            state.link.set(Link::Reconnecting { attempt: failures });
            live.pause.sleep(backoff(failures)).await;
        }
        if live.generation.get() == generation {
            live.attached.set(None);
            live.batcher().flush();
            state.link.set(Link::Idle);
            refresh_sessions(state).await;
        }
    });
}

/// Shows the branch through `message_id`: the server logs the switch, and the transcript applies the frame it
/// answers with (or, if the page is behind the log, loads the session again).
pub async fn show_branch(page: Page, message_id: String) {
    let state = page.state;
    let Some(session_id) = state.session_id.get_untracked() else { return };
    state.problem.set(None);
    let generation = page.live().generation.get();
    let switched = api::show_branch(&session_id, &message_id).await;
    if page.live().generation.get() != generation {
        return;
    }
    match switched {
        Ok(frame) => {
            page.live().batcher().flush();
            let frame = ChatFrame::Branch(frame);
            if state.chat.with_untracked(|chat| skips_ahead(chat, &frame)) {
                match api::session_detail(&session_id).await {
                    Ok(detail) if page.live().generation.get() == generation => {
                        state.chat.set(ChatSnapshot::from_detail(detail))
                    }
                    Ok(_) => {}
                    Err(error) => state.problem.set(Some(error.to_string())),
                }
            } else {
                state.chat.update(|chat| {
                    apply(chat, &frame);
                });
            }
        }
        Err(error) => state.problem.set(Some(fill(Key::VersionFailed, &[("error", &error.to_string())]))),
    }
}

/// Puts the workspace's files back as they were before `message_id` ran, and says what that changed; true when
/// it did.
pub async fn restore_files(page: Page, message_id: String) -> bool {
    let state = page.state;
    let Some(session_id) = state.session_id.get_untracked() else { return false };
    state.problem.set(None);
    state.notice.set(None);
    match api::restore_files(&session_id, &message_id).await {
        Ok(restored) => {
            state.notice.set(Some(crate::app::restore_summary(restored)));
            true
        }
        Err(error) => {
            state.problem.set(Some(fill(Key::RestoreFailed, &[("error", &error.to_string())])));
            false
        }
    }
}

/// Puts a session just made at the top of the list, once: a refresh of the list that was on its way may have
/// listed it already (seen as the forked session's row twice in the sidebar for a moment).
fn list_first(sessions: &mut Vec<SessionSummary>, session: SessionSummary) {
    sessions.retain(|listed| listed.session_id != session.session_id);
    sessions.insert(0, session);
}

/// Forks the session at a message into a new session and opens it: the notice line says what its files are, and a
/// fork at a user message hands that message's text to the composer.
pub async fn fork(page: Page, message_id: String) {
    let state = page.state;
    let Some(session_id) = state.session_id.get_untracked() else { return };
    state.problem.set(None);
    state.notice.set(None);
    match api::fork_session(&session_id, &message_id).await {
        Ok(fork) => {
            state.sessions.update(|sessions| list_first(sessions, fork.session.clone()));
            go_to(page, Some(fork.session.session_id.clone()));
            state.notice.set(Some(crate::app::fork_summary(&fork)));
            if let Some(draft) = fork.draft {
                state.handed.set(Some(draft));
            }
        }
        Err(error) => state.problem.set(Some(fill(Key::ForkFailed, &[("error", &error.to_string())]))),
    }
}

/// Opens one of an agent's own conversations as a new session, and shows it.
pub async fn open_conversation(page: Page, agent: String, conversation: String) {
    let state = page.state;
    state.problem.set(None);
    match api::import_conversation(agent, conversation).await {
        Ok(session) => {
            state.sessions.update(|sessions| list_first(sessions, session.clone()));
            go_to(page, Some(session.session_id));
        }
        Err(error) => state.problem.set(Some(fill(Key::OpenOwnFailed, &[("error", &error.to_string())]))),
    }
}

pub async fn send(page: Page, outgoing: Outgoing) {
    let (state, live) = (page.state, page.live());
    state.problem.set(None);
    let session_id = match state.session_id.get_untracked() {
        Some(id) => id,
        None => match api::create_session(state.agent.get_untracked()).await {
            Ok(session) => {
                let id = session.session_id.clone();
                // Listed at once, so the sidebar and the header name its agent before the run's first frame.
                state.sessions.update(|sessions| list_first(sessions, session));
                // The page already shows this (empty) session: navigating to its URL must not reload it.
                *live.opened.borrow_mut() = Some(Some(id.clone()));
                state.session_id.set(Some(id.clone()));
                super::location::navigate(state.path, &format!("/s/{id}"), true);
                id
            }
            Err(error) => {
                state.problem.set(Some(error.to_string()));
                return;
            }
        },
    };
    let generation = live.generation.get();
    let joins_run = state.busy_untracked();
    let request = ChatRequest {
        session_id,
        message: outgoing.text,
        request_id: Some(api::request_id()),
        mode: Some(outgoing.mode),
        plan_action: outgoing.plan_action,
        // An agent that picks its own model is sent none.
        model: state
            .model
            .get_untracked()
            .filter(|_| untrack(|| state.agent_info()).is_none_or(|a| a.models.is_some())),
        streaming_behavior: joins_run.then_some(outgoing.behavior),
        attachments: (!outgoing.attachments.is_empty()).then_some(outgoing.attachments),
        rerun: outgoing.rerun,
        command: outgoing.command,
        agent: None,
    };
    live.batcher().flush();
    let since = state.chat.with_untracked(|c| c.last_seq);
    let mut failures = 0;
    loop {
        let (stream, handle) = live.open_stream();
        let answered = Cell::new(false);
        let mut terminal = false;
        let outcome = api::send(&request, &handle, |frames| {
            if live.generation.get() != generation {
                return Flow::Stop;
            }
            if !answered.replace(true) && !joins_run {
                state.link.set(Link::Live);
                leptos::task::spawn_local(refresh_sessions(state));
            }
            terminal |= take_frames(page, &request.session_id, frames);
            // The server ends a send's stream right after the run's last frame; reading on to that end
            // lets the request finish normally instead of being cut off.
            Flow::Continue
        })
        .await;
        live.close_stream(stream);
        if live.generation.get() != generation {
            return;
        }
        match outcome {
            _ if terminal => break,
            // The server has the message: whatever is missing comes from the session's log.
            Ok(StreamEnd::Finished | StreamEnd::Stopped) => return attach(page, since),
            Err(error) if answered.get() && error.is_transient() => return attach(page, since),
            Err(error) if error.is_transient() => {
                // The message may not have reached the server: the same request id makes a retry safe.
                failures += 1;
                state.link.set(Link::Reconnecting { attempt: failures });
                live.pause.sleep(backoff(failures)).await;
                if live.generation.get() != generation {
                    return;
                }
            }
            Err(error) => {
                state.problem.set(Some(error.to_string()));
                break;
            }
        }
    }
    live.batcher().flush();
    if !joins_run && live.attached.get() != Some(generation) {
        state.link.set(Link::Idle);
    }
    refresh_sessions(state).await;
}

pub async fn refresh_sessions(state: PageState) {
    match api::list_sessions().await {
        Ok(sessions) => {
            state.now.set(api::now_millis());
            state.sessions.set(sessions);
        }
        Err(error) if reach::lost(state, &error) => {}
        Err(error) => state.problem.set(Some(error.to_string())),
    }
}

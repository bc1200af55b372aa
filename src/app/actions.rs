//! What the chat page does in the browser: open a session, send, stop, answer, rename, delete — and keep the page
//! attached to a session's run across network errors, sleeping tabs and reloads.
//!
//! These run only in the browser (from effects and event handlers); the
//! server renders the page without them, so their bodies exist only in the
//! `hydrate` build.

use leptos::prelude::*;

use crate::chat_state::ChatSnapshot;
use crate::components::Outgoing;
use crate::protocol::{ModelInfo, QuestionAnswer, SessionSummary};

/// The page's connection to the run of the session on screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Link {
    /// No run is being followed.
    #[default]
    Idle,
    /// A stream of the run is open.
    Live,
    /// The stream broke off; the page is attaching again (this many attempts so far).
    Reconnecting { attempt: u32 },
}

/// The page's state, and the requests that change it.
#[derive(Clone, Copy)]
pub struct ChatActions {
    pub chat: RwSignal<ChatSnapshot>,
    pub sessions: RwSignal<Vec<SessionSummary>>,
    pub session_id: RwSignal<Option<String>>,
    /// The last request that failed, shown above the composer.
    pub problem: RwSignal<Option<String>>,
    pub link: RwSignal<Link>,
    /// The browser's clock (ms since the epoch), ticking slowly for the sidebar's relative times; 0 until hydrated.
    pub now: RwSignal<f64>,
    /// The models the server offers (`GET /api/models`); empty until loaded.
    pub models: RwSignal<Vec<ModelInfo>>,
    /// The model sends name: the one this browser picked last if the server still offers it, else the server's
    /// default; `None` until the list is loaded (the server then uses its default).
    pub model: RwSignal<Option<String>>,
    #[cfg(feature = "hydrate")]
    live: StoredValue<std::rc::Rc<browser::Live>, LocalStorage>,
}

impl ChatActions {
    /// Must be called inside the router: navigation to a new session's URL goes through it.
    pub fn new(session_id: Option<String>) -> Self {
        ChatActions {
            chat: RwSignal::new(ChatSnapshot::default()),
            sessions: RwSignal::new(Vec::new()),
            session_id: RwSignal::new(session_id),
            problem: RwSignal::new(None),
            link: RwSignal::new(Link::Idle),
            now: RwSignal::new(0.0),
            models: RwSignal::new(Vec::new()),
            model: RwSignal::new(None),
            #[cfg(feature = "hydrate")]
            live: StoredValue::new_local(browser::Live::new(leptos_router::hooks::use_navigate())),
        }
    }

    /// True while a run is active or the page is re-attaching to one: Stop is offered, sends steer or follow up.
    pub fn busy(self) -> bool {
        self.chat.with(ChatSnapshot::is_running) || self.link.with(|link| *link != Link::Idle)
    }

    /// Starts the browser-side machinery once the page is interactive: the sessions list, the clock, and the
    /// listeners that re-attach when the tab comes back or the network returns.
    pub fn start(self) {
        #[cfg(feature = "hydrate")]
        browser::start(self);
    }

    /// Shows a session (or, with `None`, a new empty chat): loads its transcript and follows its run if one is active.
    pub fn open(self, session_id: Option<String>) {
        #[cfg(feature = "hydrate")]
        browser::open(self, session_id);
        #[cfg(not(feature = "hydrate"))]
        let _ = session_id;
    }

    /// Sends a message: starts a run, or steers or follows up the running one.
    pub fn send(self, outgoing: Outgoing) {
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(browser::send(self, outgoing));
        #[cfg(not(feature = "hydrate"))]
        let _ = outgoing;
    }

    /// Picks the model later sends run on, and remembers it in this browser.
    pub fn pick_model(self, name: String) {
        #[cfg(feature = "hydrate")]
        crate::client::remember_model(&name);
        self.model.set(Some(name));
    }

    pub fn stop(self) {
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            let Some(id) = self.session_id.get_untracked() else { return };
            if let Err(error) = crate::client::stop(&id).await {
                self.problem.set(Some(error.to_string()));
            }
        });
    }

    /// Answers a question card. `sending` is set while the answer travels and cleared again if it failed (the
    /// card is usable again; the problem line says why); on success the card changes with the run's frames.
    pub fn answer(self, tool_call_id: String, answer: QuestionAnswer, sending: RwSignal<bool>) {
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            let Some(session_id) = self.session_id.get_untracked() else { return sending.set(false) };
            let request = crate::protocol::QuestionAnswerRequest { session_id, tool_call_id, answer };
            if let Err(error) = crate::client::answer_question(&request).await {
                self.problem.set(Some(format!("The answer was not taken: {error}")));
                sending.set(false);
            }
        });
        #[cfg(not(feature = "hydrate"))]
        let _ = (tool_call_id, answer, sending);
    }

    /// Approves or denies a tool call waiting for approval; `sending` as for [`ChatActions::answer`].
    pub fn approve(self, tool_call_id: String, approve: bool, sending: RwSignal<bool>) {
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            let Some(session_id) = self.session_id.get_untracked() else { return sending.set(false) };
            let request = crate::protocol::ApprovalRequest { session_id, tool_call_id, approve };
            if let Err(error) = crate::client::decide_approval(&request).await {
                self.problem.set(Some(format!("The decision was not taken: {error}")));
                sending.set(false);
            }
        });
        #[cfg(not(feature = "hydrate"))]
        let _ = (tool_call_id, approve, sending);
    }

    pub fn rename(self, session_id: String, title: String) {
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            match crate::client::rename_session(&session_id, &title).await {
                Ok(renamed) => self.sessions.update(|sessions| {
                    if let Some(entry) = sessions.iter_mut().find(|s| s.session_id == renamed.session_id) {
                        *entry = renamed;
                    }
                }),
                Err(error) => self.problem.set(Some(format!("Could not rename the session: {error}"))),
            }
        });
        #[cfg(not(feature = "hydrate"))]
        let _ = (session_id, title);
    }

    pub fn delete(self, session_id: String) {
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(browser::delete(self, session_id));
        #[cfg(not(feature = "hydrate"))]
        let _ = session_id;
    }
}

/// The model to preselect: the remembered one if the server still offers it, else the server's default.
#[cfg(any(feature = "hydrate", test))]
pub fn preselected_model(models: &crate::protocol::ModelsResponse, remembered: Option<&str>) -> String {
    remembered
        .filter(|name| models.models.iter().any(|model| model.name == *name))
        .unwrap_or(&models.default)
        .to_owned()
}

/// True when a frame's `seq` leaves a hole after the snapshot's last one. Two streams of one run (a steering
/// send's answer and the run's own stream) may run ahead of each other; applying the one ahead would make the
/// reducer drop the frames in between as already seen. Such frames wait: the stream behind, or a re-attach
/// from the last applied `seq`, brings everything in order.
#[cfg(any(feature = "hydrate", test))]
pub fn skips_ahead(snapshot: &ChatSnapshot, frame: &crate::protocol::ChatFrame) -> bool {
    frame.seq().is_some_and(|seq| seq > snapshot.last_seq + 1)
}

#[cfg(feature = "hydrate")]
mod browser {
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;
    use std::time::Duration;

    use leptos::prelude::*;
    use leptos_router::NavigateOptions;

    use super::{ChatActions, Link, Outgoing, preselected_model, skips_ahead};
    use crate::chat_state::{ChatSnapshot, apply};
    use crate::client::{self, ClientError, Flow, FrameBatcher, Pause, StreamEnd, StreamHandle};
    use crate::protocol::*;

    /// How often the sidebar's relative times are brought up to date.
    const CLOCK_TICK: Duration = Duration::from_secs(30);
    /// A stream that delivered nothing for this long (keepalives included) is replaced when the tab comes back.
    const QUIET_LIMIT_MS: f64 = 20_000.0;

    /// Re-attach delays: 0.5 s, doubling, capped at 8 s.
    fn backoff(attempt: u32) -> Duration {
        Duration::from_millis(500u64.saturating_mul(1 << attempt.saturating_sub(1).min(4)))
    }

    /// The router's `navigate`.
    type Navigate = Box<dyn Fn(&str, NavigateOptions)>;

    /// The browser-only side of the page: open streams, the per-frame batch, what has been attached.
    pub struct Live {
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
        navigate: Navigate,
    }

    impl Live {
        pub fn new(navigate: impl Fn(&str, NavigateOptions) + 'static) -> Rc<Live> {
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
                navigate: Box::new(navigate),
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
            self.last_heard.set(client::now_millis());
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
            self.last_heard.set(client::now_millis());
            let mut terminal = false;
            for frame in &frames {
                match frame {
                    ChatFrame::Done(_) | ChatFrame::Error(_) => {
                        terminal = true;
                        if let Some(seq) = frame.seq() {
                            self.terminal_seq.set(self.terminal_seq.get().max(seq));
                        }
                    }
                    ChatFrame::Start(_)
                    | ChatFrame::Message(_)
                    | ChatFrame::Delta(_)
                    | ChatFrame::Thinking(_)
                    | ChatFrame::ToolDraft(_)
                    | ChatFrame::ToolArgsDelta(_)
                    | ChatFrame::Tool(_)
                    | ChatFrame::Plan(_)
                    | ChatFrame::State(_)
                    | ChatFrame::Queue(_)
                    | ChatFrame::Compaction(_)
                    | ChatFrame::Retry(_)
                    | ChatFrame::Ping => {}
                }
            }
            self.batcher().push(frames);
            terminal
        }
    }

    fn state(actions: ChatActions) -> Rc<Live> {
        actions.live.get_value()
    }

    /// The transcript of a session as `GET /api/sessions/{id}` gives it, with its run still open when it is running.
    pub fn snapshot_of(detail: SessionDetail) -> ChatSnapshot {
        ChatSnapshot::from_detail(detail)
    }

    pub fn start(actions: ChatActions) {
        let live = state(actions);
        let chat = actions.chat;
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
                attach(actions, since);
            }
        }));
        actions.now.set(client::now_millis());
        set_interval(move || actions.now.set(client::now_millis()), CLOCK_TICK);

        let come_back = move || {
            let live = state(actions);
            if live.attached.get() == Some(live.generation.get()) {
                live.pause.wake();
                return;
            }
            let quiet = client::now_millis() - live.last_heard.get() > QUIET_LIMIT_MS;
            let open = !live.streams.borrow().is_empty();
            if open && quiet {
                // Possibly a connection that died while the tab slept: replace it (its reader re-attaches).
                live.cancel_streams();
            } else if !open && actions.chat.with_untracked(ChatSnapshot::is_running) {
                attach(actions, actions.chat.with_untracked(|c| c.last_seq));
            }
        };
        let on_visible = move |_| {
            if !client::page_hidden() {
                come_back();
            }
        };
        std::mem::forget(window_event_listener_untyped("visibilitychange", on_visible));
        std::mem::forget(window_event_listener_untyped("pageshow", move |_| come_back()));
        std::mem::forget(window_event_listener_untyped("online", move |_| come_back()));
        std::mem::forget(window_event_listener_untyped("offline", move |_| {
            // A dead connection may never report an error; the re-attach waits for `online` instead.
            let live = state(actions);
            if !live.streams.borrow().is_empty() {
                actions.link.set(Link::Reconnecting { attempt: 1 });
                live.cancel_streams();
            }
        }));
        leptos::task::spawn_local(refresh_sessions(actions));
        leptos::task::spawn_local(load_models(actions));
    }

    async fn load_models(actions: ChatActions) {
        match client::models().await {
            Ok(models) => {
                actions.model.set(Some(preselected_model(&models, client::remembered_model().as_deref())));
                actions.models.set(models.models);
            }
            Err(error) => actions.problem.set(Some(format!("Could not load the list of models: {error}"))),
        }
    }

    pub fn open(actions: ChatActions, session_id: Option<String>) {
        let live = state(actions);
        if live.opened.borrow().as_ref() == Some(&session_id) {
            return;
        }
        *live.opened.borrow_mut() = Some(session_id.clone());
        let generation = live.generation.get() + 1;
        live.generation.set(generation);
        live.cancel_streams();
        live.batcher().clear();
        live.attached.set(None);
        live.terminal_seq.set(0);
        live.pause.wake();
        actions.session_id.set(session_id.clone());
        actions.chat.set(ChatSnapshot::default());
        actions.link.set(Link::Idle);
        actions.problem.set(None);
        let Some(session_id) = session_id else { return };
        // Its messages need the markdown parser's chunk: both are fetched at once, not one after the other.
        crate::components::prefetch_parser();
        leptos::task::spawn_local(async move {
            let detail = client::session_detail(&session_id).await;
            if live.generation.get() != generation {
                return;
            }
            match detail {
                Ok(detail) => {
                    let running = detail.session.status == SessionStatus::Running;
                    let last_seq = detail.last_seq;
                    actions.chat.set(snapshot_of(detail));
                    if running {
                        attach(actions, last_seq);
                    }
                }
                Err(error) => actions.problem.set(Some(error.to_string())),
            }
        });
    }

    /// Follows the session's run with `GET /api/sessions/{id}/events?after=<last seq>` until a terminal frame newer
    /// than `since` has been applied, re-attaching with back-off after each failure. At most one such loop runs.
    fn attach(actions: ChatActions, since: Seq) {
        let live = state(actions);
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
                let after = actions.chat.with_untracked(|c| c.last_seq);
                let terminal = live.terminal_seq.get();
                if terminal > since && after >= terminal {
                    break;
                }
                let Some(session_id) = actions.session_id.get_untracked() else { break };
                let (stream, handle) = live.open_stream();
                let heard = Cell::new(false);
                let outcome = client::events(&session_id, after, &handle, |frames| {
                    if live.generation.get() != generation {
                        return Flow::Stop;
                    }
                    if !heard.replace(true) {
                        actions.link.set(Link::Live);
                    }
                    if live.take_frames(frames) { Flow::Stop } else { Flow::Continue }
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
                        actions.problem.set(Some(error.to_string()));
                        // Nothing more will come for this run; do not show it as running forever.
                        actions.chat.update(|snapshot| {
                            snapshot.run = None;
                            snapshot.activity = None;
                        });
                        break;
                    }
                }
                failures = if heard.get() { 1 } else { failures + 1 };
                actions.link.set(Link::Reconnecting { attempt: failures });
                live.pause.sleep(backoff(failures)).await;
            }
            if live.generation.get() == generation {
                live.attached.set(None);
                live.batcher().flush();
                actions.link.set(Link::Idle);
                refresh_sessions(actions).await;
            }
        });
    }

    pub async fn send(actions: ChatActions, outgoing: Outgoing) {
        let live = state(actions);
        actions.problem.set(None);
        let session_id = match actions.session_id.get_untracked() {
            Some(id) => id,
            None => match client::create_session().await {
                Ok(session) => {
                    let id = session.session_id;
                    // The page already shows this (empty) session: navigating to its URL must not reload it.
                    *live.opened.borrow_mut() = Some(Some(id.clone()));
                    actions.session_id.set(Some(id.clone()));
                    (live.navigate)(&format!("/s/{id}"), NavigateOptions { replace: true, ..Default::default() });
                    id
                }
                Err(error) => {
                    actions.problem.set(Some(error.to_string()));
                    return;
                }
            },
        };
        let generation = live.generation.get();
        let joins_run = actions.busy_untracked();
        let request = ChatRequest {
            session_id,
            message: outgoing.text,
            request_id: Some(client::request_id()),
            mode: Some(outgoing.mode),
            plan_action: outgoing.plan_action,
            model: actions.model.get_untracked(),
            streaming_behavior: joins_run.then_some(outgoing.behavior),
            attachments: None,
        };
        live.batcher().flush();
        let since = actions.chat.with_untracked(|c| c.last_seq);
        let mut failures = 0;
        loop {
            let (stream, handle) = live.open_stream();
            let answered = Cell::new(false);
            let mut terminal = false;
            let outcome = client::send(&request, &handle, |frames| {
                if live.generation.get() != generation {
                    return Flow::Stop;
                }
                if !answered.replace(true) && !joins_run {
                    actions.link.set(Link::Live);
                    leptos::task::spawn_local(refresh_sessions(actions));
                }
                terminal |= live.take_frames(frames);
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
                Ok(StreamEnd::Finished | StreamEnd::Stopped) => return attach(actions, since),
                Err(error) if answered.get() && error.is_transient() => return attach(actions, since),
                Err(error) if error.is_transient() => {
                    // The message may not have reached the server: the same request id makes a retry safe.
                    failures += 1;
                    actions.link.set(Link::Reconnecting { attempt: failures });
                    live.pause.sleep(backoff(failures)).await;
                    if live.generation.get() != generation {
                        return;
                    }
                }
                Err(error) => {
                    actions.problem.set(Some(error.to_string()));
                    break;
                }
            }
        }
        live.batcher().flush();
        if !joins_run && live.attached.get() != Some(generation) {
            actions.link.set(Link::Idle);
        }
        refresh_sessions(actions).await;
    }

    pub async fn delete(actions: ChatActions, session_id: String) {
        match client::delete_session(&session_id).await {
            Ok(()) => {
                if actions.session_id.get_untracked().as_deref() == Some(session_id.as_str()) {
                    (state(actions).navigate)("/", NavigateOptions::default());
                }
                refresh_sessions(actions).await;
            }
            Err(ClientError::Status { status: 409, .. }) => actions
                .problem
                .set(Some("This session has a run in progress: stop it before deleting the session.".into())),
            Err(error) => actions.problem.set(Some(format!("Could not delete the session: {error}"))),
        }
    }

    async fn refresh_sessions(actions: ChatActions) {
        match client::list_sessions().await {
            Ok(sessions) => {
                actions.now.set(client::now_millis());
                actions.sessions.set(sessions);
            }
            Err(error) => actions.problem.set(Some(error.to_string())),
        }
    }

    impl ChatActions {
        fn busy_untracked(self) -> bool {
            self.chat.with_untracked(ChatSnapshot::is_running) || self.link.with_untracked(|l| *l != Link::Idle)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{preselected_model, skips_ahead};
    use crate::chat_state::{ChatSnapshot, apply};
    use crate::protocol::{ChatFrame, DeltaFrame, ModelInfo, ModelsResponse};

    #[test]
    fn the_remembered_model_is_preselected_only_while_the_server_offers_it() {
        let model = |name: &str| ModelInfo {
            name: name.into(),
            provider: "scripted".into(),
            model: "demo".into(),
            context_window: 1000,
        };
        let models = ModelsResponse { default: "a".into(), models: vec![model("a"), model("b")] };
        assert_eq!(preselected_model(&models, None), "a");
        assert_eq!(preselected_model(&models, Some("b")), "b");
        assert_eq!(preselected_model(&models, Some("gone")), "a", "a model no longer configured");
    }

    fn delta(seq: u64) -> ChatFrame {
        ChatFrame::Delta(DeltaFrame { seq: Some(seq), text: format!("{seq} "), message_id: None })
    }

    #[test]
    fn only_the_next_seq_or_an_older_one_is_applied_in_order() {
        let mut snapshot = ChatSnapshot::default();
        assert!(!skips_ahead(&snapshot, &delta(1)), "a new session starts at 1");
        assert!(skips_ahead(&snapshot, &delta(3)), "2 is missing");
        apply(&mut snapshot, &delta(1));
        assert!(!skips_ahead(&snapshot, &delta(1)), "an old frame is left to the reducer, which ignores it");
        assert!(!skips_ahead(&snapshot, &delta(2)));
        assert!(skips_ahead(&snapshot, &delta(3)));
        assert!(!skips_ahead(&snapshot, &ChatFrame::Ping), "frames without a seq are never held back");
    }
}

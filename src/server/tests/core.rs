//! The chat core without HTTP: runs at their edges, the kept transcript, restarts, the request-id purge.

use std::sync::Arc;
use std::time::Duration;

use super::app::{chat_on, chat_playing, chat_request, until_idle};
use super::gate::GatedRuntime;
use crate::protocol::*;
use crate::runtime::builtin::AgentRuntime;
use crate::server::chat::{Chat, ChatError};
use crate::store::{Append, RequestClaim, RequestRecord, RunStatus, SqliteStore, Store};

fn request(session_id: &str, message: &str, streaming_behavior: Option<StreamingBehavior>) -> ChatRequest {
    ChatRequest { streaming_behavior, ..chat_request(session_id, message) }
}

fn user_texts(detail: &SessionDetail) -> Vec<String> {
    detail
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .filter_map(|m| match m.parts.first()? {
            ChatMessagePart::Text(text) => Some(text.text.clone()),
            ChatMessagePart::Thinking(_)
            | ChatMessagePart::Error(_)
            | ChatMessagePart::File(_)
            | ChatMessagePart::Tool(_) => None,
        })
        .collect()
}

#[tokio::test]
async fn a_message_for_a_run_that_is_ending_starts_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let chat =
        chat_playing(r#"{"delayMs": 50, "turns": [{"text": "One two three four five six."}]}"#, dir.path()).await;
    let session = chat.create_session(None, None).await.unwrap().session_id;
    let first = chat.send(request(&session, "first", None)).await.unwrap();
    let live = chat.live(&session).await.unwrap();
    // What the agent does once it has decided to stop, done here while the run is still streaming.
    live.with_active(|run| run.unwrap().control.queues.lock().unwrap().closed = true);

    let steered = chat.send(request(&session, "steer", Some(StreamingBehavior::Steer))).await.unwrap();
    assert_ne!(steered.until_run, first.until_run, "the steer was not queued into the ending run");
    let next = chat.send(request(&session, "plain", None)).await;
    assert!(matches!(next, Err(ChatError::RunInProgress)), "the steer's run is active and open: {next:?}");

    until_idle(&live).await;
    assert_eq!(user_texts(&chat.detail(&session).await.unwrap()), ["first", "steer"]);
}

#[tokio::test]
async fn the_kept_transcript_equals_a_replay_of_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let chat =
        chat_playing(r#"{"delayMs": 5, "chunkChars": 3, "turns": [{"text": "One two three."}]}"#, dir.path()).await;
    let session = chat.create_session(None, None).await.unwrap().session_id;
    chat.send(request(&session, "first", None)).await.unwrap();
    let live = chat.live(&session).await.unwrap();
    // Built while the run streams; every later append must keep it equal to a replay.
    let during = chat.detail(&session).await.unwrap();
    assert!(during.pending.is_some(), "the run was still going");
    until_idle(&live).await;
    let kept = chat.sessions.transcript(&live).await.unwrap().snapshot;
    let replayed = chat.sessions.replay(&session).await.unwrap().snapshot;
    assert_eq!(kept.last_seq, replayed.last_seq);
    assert_eq!(kept.messages, replayed.messages);
    assert!(kept.last_seq > during.last_seq);
}

#[tokio::test]
async fn a_restart_gives_no_second_terminal_frame_to_a_run_whose_done_was_logged() {
    let dir = tempfile::tempdir().unwrap();
    {
        // What a crash between logging a `done` and recording the run's end left behind, before the two were one
        // transaction.
        let store = SqliteStore::open(dir.path()).unwrap();
        store.create_session("s1", "", None, 1).await.unwrap();
        store.start_run("r1", "s1", "a-server-that-crashed", std::time::Duration::from_secs(60), 1).await.unwrap();
        let message = ChatMessage {
            id: "m".into(),
            role: Role::Assistant,
            parts: vec![ChatMessagePart::text("hi")],
            created_at: None,
            changes: None,
            usage: None,
        };
        let done = ChatFrame::Done(DoneFrame {
            seq: None,
            run_id: "r1".into(),
            message,
            session_id: "s1".into(),
            session_file: None,
            session_reset: None,
        });
        let append = Append {
            session_id: "s1".into(),
            run_id: Some("r1".into()),
            frames: vec![done],
            ends_run: None,
            lease: None,
            now: 2,
        };
        store.append(append).await.unwrap();
    }
    let chat = chat_playing(r#"{"turns": [{"text": "unused"}]}"#, dir.path()).await;
    let kinds: Vec<String> = chat.store.frames_after("s1", 0, 10).await.unwrap().into_iter().map(|f| f.kind).collect();
    assert_eq!(kinds, ["done"], "one terminal frame, no interrupted error after it");
    assert_eq!(chat.store.run_status("r1").await.unwrap(), Some(RunStatus::Done));
    assert_eq!(chat.store.session("s1").await.unwrap().unwrap().status, SessionStatus::Idle);
}

#[tokio::test]
async fn a_restart_ends_a_run_cut_off_mid_way_with_one_interrupted_error() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = SqliteStore::open(dir.path()).unwrap();
        store.create_session("s1", "", None, 1).await.unwrap();
        store.start_run("r1", "s1", "a-server-that-crashed", std::time::Duration::from_secs(60), 1).await.unwrap();
    }
    let chat: Arc<Chat> = chat_playing(r#"{"turns": [{"text": "unused"}]}"#, dir.path()).await;
    let frames = chat.store.frames_after("s1", 0, 10).await.unwrap();
    assert_eq!(frames.len(), 1);
    assert!(frames[0].line.contains(r#""code":"interrupted""#), "{}", frames[0].line);
    assert_eq!(chat.store.run_status("r1").await.unwrap(), Some(RunStatus::Interrupted));
    assert_eq!(chat.store.session("s1").await.unwrap().unwrap().status, SessionStatus::Interrupted);
}

#[tokio::test(start_paused = true)]
async fn request_ids_older_than_a_day_are_purged_by_the_periodic_task() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path()).unwrap());
    store.create_session("s1", "", None, 1).await.unwrap();
    let record = RequestRecord { session_id: "s1".into(), body_hash: "h".into(), run_id: "r".into(), after_seq: 0 };
    let day: u64 = 24 * 60 * 60 * 1000;
    let start = 10 * day;
    store.claim_request("old", &record, start - day - 1).await.unwrap();
    store.claim_request("recent", &record, start - 1000).await.unwrap();
    // The task's clock runs with tokio's paused one, so the test can let a day pass.
    let epoch = tokio::time::Instant::now();
    let clock = move || start + epoch.elapsed().as_millis() as u64;
    let purging = tokio::spawn(crate::server::purge::forget_old_requests(store.clone(), clock));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let claimed = |id: &'static str| {
        let store = store.clone();
        let record = record.clone();
        async move { store.claim_request(id, &record, start).await.unwrap() == RequestClaim::Claimed }
    };
    assert!(claimed("old").await, "a request id older than 24 h was forgotten at the first tick");
    store.release_request("old").await.unwrap();
    assert!(!claimed("recent").await, "a recent one is kept");
    tokio::time::sleep(Duration::from_secs(24 * 60 * 60)).await;
    assert!(claimed("recent").await, "a day later, it is forgotten too");
    purging.abort();
}

/// Waits for the session's run to end (20 s at most) and gives its log's frame types.
async fn logged_kinds(chat: &Chat, session: &str) -> Vec<String> {
    until_idle(&chat.live(session).await.unwrap()).await;
    chat.store.frames_after(session, 0, 1000).await.unwrap().into_iter().map(|frame| frame.kind).collect()
}

const QUICK: &str = r#"{"delayMs": 0, "turns": [{"text": "Hello there."}]}"#;

#[tokio::test]
async fn a_send_waiting_for_its_runtime_holds_up_no_other_session() {
    let dir = tempfile::tempdir().unwrap();
    let gated = GatedRuntime::new(Arc::new(AgentRuntime::new(super::app::scripted_models(QUICK))));
    let runtime = gated.clone();
    let chat = chat_on(QUICK, dir.path(), Duration::from_secs(15), move |_| runtime).await;
    let a = chat.create_session(None, None).await.unwrap().session_id;
    let b = chat.create_session(None, None).await.unwrap().session_id;
    let gate = gated.close(&a);

    let send_a = tokio::spawn({
        let (chat, a) = (chat.clone(), a.clone());
        async move { chat.send(request(&a, "first", None)).await }
    });
    gate.reached().await;
    let send_b = tokio::time::timeout(Duration::from_secs(10), chat.send(request(&b, "second", None))).await;
    assert!(send_b.expect("B's send did not wait for A's runtime").is_ok());
    assert_eq!(logged_kinds(&chat, &b).await.last().map(String::as_str), Some("done"), "B ran to its end");
    assert!(!send_a.is_finished(), "A is still held at its gate");

    gate.open();
    send_a.await.unwrap().unwrap();
    assert_eq!(logged_kinds(&chat, &a).await.last().map(String::as_str), Some("done"));
}

#[tokio::test]
async fn sends_with_one_request_id_make_one_run_while_the_first_waits_for_its_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let gated = GatedRuntime::new(Arc::new(AgentRuntime::new(super::app::scripted_models(QUICK))));
    let runtime = gated.clone();
    let chat = chat_on(QUICK, dir.path(), Duration::from_secs(15), move |_| runtime).await;
    let a = chat.create_session(None, None).await.unwrap().session_id;
    let other = chat.create_session(None, None).await.unwrap().session_id;
    let gate = gated.close(&a);
    let with_id = |session: &str| ChatRequest { request_id: Some("req-1".into()), ..request(session, "go", None) };

    let first = tokio::spawn({
        let (chat, body) = (chat.clone(), with_id(&a));
        async move { chat.send(body).await }
    });
    gate.reached().await;
    // The same id for another session was claimed by the first send: refused, not a second run.
    let elsewhere = tokio::time::timeout(Duration::from_secs(10), chat.send(with_id(&other))).await.expect("no wait");
    assert!(matches!(elsewhere, Err(ChatError::RequestIdReused(_))), "{elsewhere:?}");
    // The same send again waits for the first (one session's sends are serialized), then attaches to its run.
    let again = tokio::spawn({
        let (chat, body) = (chat.clone(), with_id(&a));
        async move { chat.send(body).await }
    });
    gate.open();
    let (first, again) = (first.await.unwrap().unwrap(), again.await.unwrap().unwrap());
    assert_eq!(first, again);
    let kinds = logged_kinds(&chat, &a).await;
    assert_eq!(kinds.iter().filter(|kind| *kind == "start").count(), 1, "one run: {kinds:?}");
    assert!(logged_kinds(&chat, &other).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transcript_read_during_a_run_holds_exactly_the_logged_frames_up_to_its_last_seq() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"{"delayMs": 1, "chunkChars": 2, "turns": [{"thinking": "Let me see.", "text": "One two three four five six seven eight nine ten."}]}"#;
    let chat = chat_playing(script, dir.path()).await;
    let session = chat.create_session(None, None).await.unwrap().session_id;
    chat.send(request(&session, "count", None)).await.unwrap();
    let live = chat.live(&session).await.unwrap();
    let mut reads = 0;
    while live.active_run_id().is_some() {
        let detail = chat.detail(&session).await.unwrap();
        // What a viewer that replays the log up to that seq sees.
        let logged = chat.store.frames_after(&session, 0, detail.last_seq as usize).await.unwrap();
        let mut replayed = crate::chat_state::ChatSnapshot::default();
        for frame in logged.iter().filter(|frame| frame.seq <= detail.last_seq) {
            crate::chat_state::apply(&mut replayed, &crate::protocol::parse_frame(frame.line.as_bytes()).unwrap());
        }
        let mut shown = detail.messages.clone();
        shown.extend(detail.pending.clone());
        assert_eq!(shown, replayed.messages, "a read at seq {} shows what the log holds up to it", detail.last_seq);
        reads += 1;
        tokio::task::yield_now().await;
    }
    assert!(reads > 3, "the transcript was read while the run streamed ({reads} reads)");
}

//! Two chat cores on one PostgreSQL database, in process: what an instance that lost its lease may still do
//! (nothing), and a run's frames reaching the other instance's tail.

use std::sync::Arc;
use std::time::Duration;

use super::app::{chat_over, chat_request};
use crate::protocol::*;
use crate::runtime::builtin::AgentRuntime;
use crate::server::chat::Chat;
use crate::store::{PostgresStore, Store};

/// A slow answer: about three seconds of deltas.
const SLOW: &str = r#"{"chunkChars": 2, "delayMs": 20, "turns": [{"text": "A slow answer that streams for a few seconds, so that its session can be taken over in the middle of it by another server."}]}"#;

async fn two_instances(dir: &std::path::Path) -> (Arc<Chat>, Arc<Chat>) {
    let url = crate::store::postgres::test_server::server().fresh_database().await;
    let mut chats = Vec::new();
    for _ in 0..2 {
        let store: Arc<dyn Store> = Arc::new(PostgresStore::open(&url).await.unwrap());
        let chat = chat_over(store, SLOW, dir, Duration::from_secs(15), |models| Arc::new(AgentRuntime::new(models)));
        chats.push(chat.await);
    }
    let b = chats.pop().unwrap();
    (chats.pop().unwrap(), b)
}

fn send(session_id: &str) -> ChatRequest {
    chat_request(session_id, "go")
}

async fn kinds(chat: &Chat, session: &str) -> Vec<String> {
    chat.store.frames_after(session, 0, 10_000).await.unwrap().into_iter().map(|frame| frame.kind).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_session_was_taken_over_stops_and_logs_nothing_more() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_instances(dir.path()).await;
    let session = a.create_session(None, None).await.unwrap().session_id;
    let tail = a.send(send(&session)).await.unwrap();
    let run_id = tail.until_run.unwrap();
    while kinds(&a, &session).await.iter().filter(|kind| *kind == "delta").count() < 5 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // What a paused or cut-off instance looks like from the database: its lease ran out.
    a.store.expire_leases(&a.instance).await.unwrap();
    assert!(b.end_stale_run(&session, &run_id).await.unwrap(), "B takes the expired lease and ends the run");
    let ended = kinds(&a, &session).await;
    assert_eq!(ended.last().map(String::as_str), Some("error"));

    let live = a.live(&session).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while live.active_run_id().is_some() {
        assert!(tokio::time::Instant::now() < deadline, "A's run went on after losing its lease");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(kinds(&a, &session).await, ended, "A logged nothing after B ended the run");
    let frames = a.store.frames_after(&session, 0, 10_000).await.unwrap();
    assert_eq!(frames.iter().filter(|frame| frame.ends_run(&run_id)).count(), 1, "one terminal frame");
    assert!(frames.last().unwrap().line.contains(r#""code":"interrupted""#));
    assert_eq!(a.store.session(&session).await.unwrap().unwrap().status, SessionStatus::Interrupted);

    // The session is usable again, from either instance.
    let next = b.send(send(&session)).await.unwrap();
    assert_ne!(next.until_run, Some(run_id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_instance_sees_a_run_as_running_and_relays_its_stop() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_instances(dir.path()).await;
    let session = a.create_session(None, None).await.unwrap().session_id;
    a.send(send(&session)).await.unwrap();
    let refused = b.send(send(&session)).await;
    assert!(matches!(refused, Err(crate::server::chat::ChatError::RunInProgress)), "{refused:?}");
    assert!(matches!(b.delete(&session).await, Err(crate::server::chat::ChatError::SessionBusy)));
    assert!(b.abort(&session).await.unwrap(), "B's Stop reached A's run");
    let live = a.live(&session).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while live.active_run_id().is_some() {
        assert!(tokio::time::Instant::now() < deadline, "the run did not stop");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!b.abort(&session).await.unwrap(), "nothing left to stop");
    let last = b.store.frames_after(&session, 0, 10_000).await.unwrap().pop().unwrap();
    assert!(last.kind == "done" || last.line.contains(r#""code":"aborted""#), "ended as a Stop ends it: {}", last.line);
    let detail = b.detail(&session).await.unwrap();
    assert_eq!(detail.last_seq, a.store.last_seq(&session).await.unwrap().unwrap(), "B's transcript caught up");
    assert!(detail.pending.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_activity_feed_of_one_instance_tells_of_a_run_on_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_instances(dir.path()).await;
    let session = a.create_session(None, None).await.unwrap().session_id;
    let app = super::app::TestApp::over(b, tempfile::tempdir().unwrap());
    let feed = app.call(super::app::get("/api/activity")).await;
    assert_eq!(feed.status(), axum::http::StatusCode::OK);
    let run_id = a.send(send(&session)).await.unwrap().until_run.unwrap();
    let mut body = feed.into_body().into_data_stream();
    let mut text = String::new();
    // The slow answer streams for about three seconds; the guard only stops a hang.
    while !text.contains("\"type\":\"finished\"") {
        let chunk = tokio::time::timeout(Duration::from_secs(60), futures_util::StreamExt::next(&mut body))
            .await
            .unwrap_or_else(|_| panic!("no end of the run came: {text}"))
            .unwrap()
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .filter(|activity: &serde_json::Value| activity["type"] != "ping")
        .collect();
    assert_eq!(
        lines,
        [
            serde_json::json!({"type": "started", "sessionId": session, "runId": run_id}),
            serde_json::json!({"type": "finished", "sessionId": session, "runId": run_id}),
        ]
    );
}

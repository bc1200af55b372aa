//! The activity feed (`GET /api/activity`): every session's runs starting, ending and waiting for the user, from the
//! moment the feed opened, on SQLite (paused clock) and across two instances on one PostgreSQL.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Response, StatusCode};
use futures_util::StreamExt;
use serde_json::{Value, json};

use super::app::{TestApp, body_bytes, get, post};

/// Reads the feed until `count` activities (keepalives left out) have come, on a generous guard against a hang.
async fn activities(body: &mut axum::body::BodyDataStream, count: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let mut pending = String::new();
    // One deadline for the whole read: keepalives keep coming, so a guard per chunk would never end a hang.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while out.len() < count {
        let chunk = tokio::time::timeout_at(deadline, body.next())
            .await
            .unwrap_or_else(|_| panic!("only {} activities came: {out:?}", out.len()))
            .expect("the feed does not end")
            .expect("the feed does not fail");
        pending.push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
        while let Some(end) = pending.find('\n') {
            let line: String = pending.drain(..=end).collect();
            let activity: Value = serde_json::from_str(line.trim_end()).expect("each line is JSON");
            if activity["type"] != "ping" {
                out.push(activity);
            }
        }
    }
    out
}

async fn run_id_of(response: Response<Body>) -> String {
    let body = String::from_utf8(body_bytes(response).await).unwrap();
    let start: Value = serde_json::from_str(body.lines().next().expect("a first frame")).unwrap();
    assert_eq!(start["type"], "start", "{body}");
    start["runId"].as_str().unwrap().to_owned()
}

fn send(session: &str) -> axum::http::Request<Body> {
    post("/api/chat", &json!({"sessionId": session, "message": "go"}).to_string())
}

/// The activities of one session, in the order they came (one look of the feed lists sessions by recency, not by
/// the order their frames were logged in).
fn of_session(activities: &[Value], session: &str) -> Vec<Value> {
    activities.iter().filter(|activity| activity["sessionId"] == session).cloned().collect()
}

async fn open_feed(app: &TestApp) -> axum::body::BodyDataStream {
    let feed = app.call(get("/api/activity")).await;
    assert_eq!(feed.status(), StatusCode::OK);
    assert_eq!(feed.headers()["content-type"], "application/x-ndjson; charset=utf-8");
    feed.into_body().into_data_stream()
}

#[tokio::test(start_paused = true)]
async fn the_feed_tells_of_every_sessions_runs_from_when_it_opened() {
    // The k-th model call of a session plays turn k: a first run answers, a second asks.
    let script = json!({"turns": [
        {"text": "Hello."},
        {"toolCalls": [{"name": "question", "arguments": {"question": "Which colour?", "options": [
            {"id": "red", "label": "Red"}, {"id": "blue", "label": "Blue"}
        ]}}]}
    ]});
    let app = TestApp::playing(&script.to_string()).await;
    let (a, b) = (app.new_session().await, app.new_session().await);
    let before = run_id_of(app.call(send(&a)).await).await;

    let mut feed = open_feed(&app).await;
    let finished = run_id_of(app.call(send(&b)).await).await;
    // A's run stays waiting for its answer; its send's stream is dropped, and the run goes on without a viewer.
    drop(app.call(send(&a)).await);
    let got = activities(&mut feed, 4).await;
    assert!(got.iter().all(|activity| activity["runId"] != before), "the run before the feed opened: {got:?}");
    assert_eq!(
        of_session(&got, &b),
        [
            json!({"type": "started", "sessionId": b, "runId": finished}),
            json!({"type": "finished", "sessionId": b, "runId": finished}),
        ]
    );
    let asked = of_session(&got, &a);
    assert_eq!(asked.len(), 2, "{got:?}");
    assert_eq!(asked[0]["type"], "started");
    assert_eq!((&asked[1]["type"], &asked[1]["question"]), (&json!("question"), &json!("Which colour?")));
    assert!(asked[1]["toolCallId"].is_string());
}

#[tokio::test(start_paused = true)]
async fn a_failed_run_is_told_with_its_error() {
    let script = json!({"turns": [{"text": "never shown", "fail": {"status": 400, "message": "The model refused", "times": 99}}]});
    let app = TestApp::playing(&script.to_string()).await;
    let session = app.new_session().await;
    let mut feed = open_feed(&app).await;
    let failed = run_id_of(app.call(send(&session)).await).await;
    let got = activities(&mut feed, 2).await;
    assert_eq!(got[0], json!({"type": "started", "sessionId": session, "runId": failed}));
    assert_eq!((&got[1]["type"], &got[1]["runId"]), (&json!("failed"), &json!(failed)), "{got:?}");
    assert!(got[1]["message"].as_str().unwrap().contains("The model refused"), "{got:?}");
    assert!(got[1]["seq"].is_u64());
}

#[tokio::test(start_paused = true)]
async fn a_quiet_feed_gets_keepalives_and_sse_names_each_event() {
    let app = TestApp::with_keepalive(r#"{"turns": [{"text": "Hi."}]}"#, Duration::from_secs(1)).await;
    let session = app.new_session().await;
    let sse =
        super::app::request("GET", "/api/activity").header("accept", "text/event-stream").body(Body::empty()).unwrap();
    let feed = app.call(sse).await;
    assert_eq!(feed.headers()["content-type"], "text/event-stream; charset=utf-8");
    let mut feed = feed.into_body().into_data_stream();
    let first = tokio::time::timeout(Duration::from_secs(5), feed.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(&first[..], b": ping\n\n", "a quiet feed is kept alive");
    run_id_of(app.call(send(&session)).await).await;
    let mut text = String::new();
    while !text.contains("event: finished") {
        let chunk = tokio::time::timeout(Duration::from_secs(60), feed.next()).await.unwrap().unwrap().unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert!(text.contains("event: started\ndata: {\"type\":\"started\""), "{text}");
}

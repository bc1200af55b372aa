//! Stream pacing and keepalives, on tokio's paused clock: the scripted provider and the stream share it, so time is
//! exact and the machine's load does not matter.

use std::time::Duration;

use axum::http::StatusCode;
use futures_util::StreamExt;
use tokio::time::Instant;

use super::app::{TestApp, get, post};

/// Reads a streaming body to its end (or `limit` chunks): each chunk with when it came, on the paused clock.
async fn read_chunks(response: axum::http::Response<axum::body::Body>, limit: usize) -> Vec<(Duration, String)> {
    let began = Instant::now();
    let mut body = response.into_body().into_data_stream();
    let mut out = Vec::new();
    while out.len() < limit {
        let Some(chunk) = tokio::time::timeout(Duration::from_secs(60), body.next()).await.expect("a chunk in time")
        else {
            break;
        };
        out.push((began.elapsed(), String::from_utf8(chunk.unwrap().to_vec()).unwrap()));
    }
    out
}

fn kind(line: &str) -> String {
    serde_json::from_str::<serde_json::Value>(line).unwrap()["type"].as_str().unwrap().to_owned()
}

#[tokio::test(start_paused = true)]
async fn frames_faster_than_a_display_frame_share_a_chunk_and_none_is_lost() {
    let text: String = (0..400).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let script = serde_json::json!({"chunkChars": 1, "delayMs": 1, "turns": [{"text": text}]}).to_string();
    let app = TestApp::playing(&script).await;
    let session = app.new_session().await;
    let response = app.call(post("/api/chat", &format!(r#"{{"sessionId": "{session}", "message": "go"}}"#))).await;
    assert_eq!(response.status(), StatusCode::OK);
    let chunks = read_chunks(response, usize::MAX).await;
    let elapsed = chunks.last().unwrap().0;
    let lines: Vec<String> = chunks.iter().flat_map(|(_, chunk)| chunk.lines().map(str::to_owned)).collect();
    let streamed: String = lines
        .iter()
        .filter(|line| kind(line) == "delta")
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(streamed, text, "every delta arrived, in order");
    assert_eq!(kind(lines.last().unwrap()), "done");
    // One chunk per 32 ms at most, after the first; without the pacing each of the 400 deltas is its own chunk.
    for pair in chunks.windows(2) {
        assert!(pair[1].0 - pair[0].0 >= Duration::from_millis(32), "chunks at {:?} and {:?}", pair[0].0, pair[1].0);
    }
    assert!(chunks.len() < lines.len() / 4, "{} chunks for {} frames over {elapsed:?}", chunks.len(), lines.len());
}

#[tokio::test(start_paused = true)]
async fn a_replay_of_a_long_log_is_not_paced() {
    let text: String = (0..1200).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let script = serde_json::json!({"chunkChars": 1, "delayMs": 0, "turns": [{"text": text}]}).to_string();
    let app = TestApp::playing(&script).await;
    let session = app.new_session().await;
    let run = app.call(post("/api/chat", &format!(r#"{{"sessionId": "{session}", "message": "go"}}"#))).await;
    read_chunks(run, usize::MAX).await;
    let replay = read_chunks(app.call(get(&format!("/api/sessions/{session}/events?after=0"))).await, 5).await;
    assert!(replay.len() >= 5, "1200 frames come in batches of 256");
    assert!(replay[4].0 < Duration::from_millis(32), "the batches of the log went out back to back: {:?}", replay[4].0);
}

#[tokio::test(start_paused = true)]
async fn quiet_streams_get_keepalives_at_the_configured_interval() {
    // The provider waits 3.5 s before its only piece: a quiet run, as behind a slow model or a long tool.
    let script = r#"{"delayMs": 3500, "chunkChars": 100, "turns": [{"text": "Finally."}]}"#;
    let app = TestApp::with_keepalive(script, Duration::from_secs(1)).await;
    let session = app.new_session().await;
    let response = app.call(post("/api/chat", &format!(r#"{{"sessionId": "{session}", "message": "wait"}}"#))).await;
    let chunks = read_chunks(response, usize::MAX).await;
    let pings: Vec<Duration> =
        chunks.iter().filter(|(_, chunk)| chunk == "{\"type\":\"ping\"}\n").map(|(at, _)| *at).collect();
    assert_eq!(pings.len(), 3, "3 keepalives during 3.5 s of silence at 1 s: {chunks:?}");
    for (ping, second) in pings.iter().zip(1..) {
        assert!(ping.as_millis() >= second * 1000 && ping.as_millis() < second * 1000 + 100, "a ping at {ping:?}");
    }
    assert!(chunks.last().unwrap().1.contains("\"type\":\"done\""));

    // An idle session's events stream is kept alive the same way.
    let idle = app.new_session().await;
    let idle = read_chunks(app.call(get(&format!("/api/sessions/{idle}/events"))).await, 2).await;
    assert_eq!(idle.iter().map(|(_, chunk)| chunk.as_str()).collect::<Vec<_>>(), ["{\"type\":\"ping\"}\n"; 2]);
    assert!(idle[1].0 >= Duration::from_secs(2));
}

//! Every route of DESIGN §3 in-process, with each status it can answer: the happy paths, and each refusal with its
//! `{ message }`.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use futures_util::StreamExt;
use serde_json::{Value, json};

use super::app::{TestApp, get, json_body, post, request};

/// Slow enough that the run is still going while the test sends its other requests.
const SLOW: &str =
    r#"{"delayMs": 100, "chunkChars": 2, "turns": [{"text": "A slow answer that takes a few seconds."}]}"#;

fn with_json(method: &str, uri: &str, body: &Value) -> Request<Body> {
    request(method, uri).header("content-type", "application/json").body(Body::from(body.to_string())).unwrap()
}

async fn status_and_body(app: &TestApp, request: Request<Body>) -> (StatusCode, Value) {
    let response = app.call(request).await;
    let status = response.status();
    (status, json_body(response).await)
}

/// Asserts a refusal: its status, and a `{ message }` that says something.
async fn refused(app: &TestApp, what: &str, request: Request<Body>, status: StatusCode) {
    let (got, body) = status_and_body(app, request).await;
    assert_eq!(got, status, "{what}: {body}");
    assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}: {body}");
}

async fn until_idle(app: &TestApp, session: &str) {
    for _ in 0..400 {
        let (_, sessions) = status_and_body(app, get("/api/sessions")).await;
        let status =
            sessions["sessions"].as_array().unwrap().iter().find(|s| s["sessionId"] == session).unwrap()["status"]
                .clone();
        if status != "running" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the run of {session} never ended");
}

#[tokio::test]
async fn each_route_answers_each_status_of_the_design() {
    let app = TestApp::playing(SLOW).await;

    let (status, health) = status_and_body(&app, get("/api/health")).await;
    assert_eq!((status, &health["status"], &health["runtime"]), (StatusCode::OK, &json!("ok"), &json!("agent")));
    let (status, models) = status_and_body(&app, get("/api/models")).await;
    assert_eq!((status, &models["default"]), (StatusCode::OK, &json!("scripted")));

    let (status, created) = status_and_body(&app, post("/api/sessions", r#"{"title": "First"}"#)).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(created["messages"], json!([]));
    let session = created["session"]["sessionId"].as_str().unwrap().to_owned();
    let (status, listed) = status_and_body(&app, get("/api/sessions")).await;
    assert_eq!((status, listed["sessions"].as_array().unwrap().len()), (StatusCode::OK, 1));
    let (status, detail) = status_and_body(&app, get(&format!("/api/sessions/{session}"))).await;
    assert_eq!((status, &detail["lastSeq"]), (StatusCode::OK, &json!(0)));

    let path = format!("/api/sessions/{session}");
    let (status, renamed) = status_and_body(&app, with_json("PATCH", &path, &json!({"title": "Renamed"}))).await;
    assert_eq!((status, &renamed["title"]), (StatusCode::OK, &json!("Renamed")));
    refused(&app, "an empty title", with_json("PATCH", &path, &json!({"title": "  "})), StatusCode::BAD_REQUEST).await;
    let nowhere = json!({"title": "x"});
    refused(&app, "renaming no session", with_json("PATCH", "/api/sessions/none", &nowhere), StatusCode::NOT_FOUND)
        .await;

    let chat = |body: Value| with_json("POST", "/api/chat", &body);
    refused(&app, "an empty message", chat(json!({"sessionId": session, "message": " "})), StatusCode::BAD_REQUEST)
        .await;
    refused(&app, "no such session", chat(json!({"sessionId": "none", "message": "hi"})), StatusCode::NOT_FOUND).await;
    let unknown_model = chat(json!({"sessionId": session, "message": "hi", "model": "gamma"}));
    refused(&app, "an unknown model", unknown_model, StatusCode::BAD_REQUEST).await;

    // A run in progress.
    let first = chat(json!({"sessionId": session, "message": "go", "requestId": "req-1"}));
    let response = app.call(first).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "application/x-ndjson; charset=utf-8");
    let mut stream = response.into_body().into_data_stream();
    assert!(stream.next().await.is_some(), "the run's first frames");
    let again = chat(json!({"sessionId": session, "message": "another"}));
    refused(&app, "a second send while a run is active", again, StatusCode::CONFLICT).await;
    let reused = chat(json!({"sessionId": session, "message": "something else", "requestId": "req-1"}));
    refused(&app, "a request id with another body", reused, StatusCode::UNPROCESSABLE_ENTITY).await;
    let steer = app.call(chat(json!({"sessionId": session, "message": "also this", "streamingBehavior": "steer"})));
    assert_eq!(steer.await.status(), StatusCode::OK, "a steer joins the run");
    refused(
        &app,
        "deleting a running session",
        request("DELETE", &path).body(Body::empty()).unwrap(),
        StatusCode::CONFLICT,
    )
    .await;
    let question = json!({"sessionId": session, "toolCallId": "nope", "answer": {"kind": "skip"}});
    refused(&app, "no such question", with_json("POST", "/api/chat/question", &question), StatusCode::NOT_FOUND).await;
    let approval = json!({"sessionId": session, "toolCallId": "nope", "approve": true});
    refused(&app, "no such approval", with_json("POST", "/api/chat/approval", &approval), StatusCode::NOT_FOUND).await;
    let sse = request("GET", &format!("{path}/events")).header("accept", "text/event-stream").body(Body::empty());
    let sse = app.call(sse.unwrap()).await;
    assert_eq!(
        (sse.status(), &sse.headers()["content-type"]),
        (StatusCode::OK, &"text/event-stream; charset=utf-8".parse().unwrap())
    );

    let abort = json!({"sessionId": session});
    let (status, stopped) = status_and_body(&app, with_json("POST", "/api/chat/abort", &abort)).await;
    assert_eq!((status, &stopped), (StatusCode::OK, &json!({"ok": true, "aborted": true})));
    until_idle(&app, &session).await;
    let (status, again) = status_and_body(&app, with_json("POST", "/api/chat/abort", &abort)).await;
    assert_eq!((status, &again), (StatusCode::OK, &json!({"ok": true, "aborted": false})), "Stop is idempotent");
    refused(
        &app,
        "stopping no session",
        with_json("POST", "/api/chat/abort", &json!({"sessionId": "none"})),
        StatusCode::NOT_FOUND,
    )
    .await;

    let (status, deleted) = status_and_body(&app, request("DELETE", &path).body(Body::empty()).unwrap()).await;
    assert_eq!((status, &deleted), (StatusCode::OK, &json!({"ok": true})));
    refused(&app, "a deleted session", get(&path), StatusCode::NOT_FOUND).await;
}

#[tokio::test]
async fn a_session_exports_as_markdown_and_as_json_named_after_its_title() {
    let app = TestApp::playing(r#"{"delayMs": 0, "turns": [{"text": "The answer is **42**."}]}"#).await;
    let session = app.new_session().await;
    let sent = app.call(post("/api/chat", &json!({"sessionId": session, "message": "Why 42?"}).to_string())).await;
    super::app::body_bytes(sent).await;
    until_idle(&app, &session).await;

    let markdown = app.call(get(&format!("/api/sessions/{session}/export?format=md"))).await;
    assert_eq!(markdown.status(), StatusCode::OK);
    assert_eq!(markdown.headers()["content-type"], "text/markdown; charset=utf-8");
    assert_eq!(markdown.headers()["content-disposition"], "attachment; filename=\"why-42.md\"");
    let text = String::from_utf8(super::app::body_bytes(markdown).await).unwrap();
    assert_eq!(text, "# Why 42?\n\n## You\n\nWhy 42?\n\n## Assistant\n\nThe answer is **42**.\n\n");

    let json = app.call(get(&format!("/api/sessions/{session}/export?format=json"))).await;
    assert_eq!(json.headers()["content-disposition"], "attachment; filename=\"why-42.json\"");
    let (_, detail) = status_and_body(&app, get(&format!("/api/sessions/{session}"))).await;
    assert_eq!(json_body(json).await, detail, "the JSON export is the session as the API returns it");

    let xml = get(&format!("/api/sessions/{session}/export?format=xml"));
    refused(&app, "an unknown format", xml, StatusCode::BAD_REQUEST).await;
    refused(&app, "an unknown session", get("/api/sessions/nope/export"), StatusCode::NOT_FOUND).await;
}

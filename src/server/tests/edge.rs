//! Hostile input at the HTTP edge: each row gets its status and a `{ message }` body, and the server stays healthy.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use futures_util::StreamExt;

use super::app::{HOST, TOKEN, TestApp, body_bytes, get, json_body, post, request};

const QUICK: &str = r#"{"delayMs": 0, "turns": [{"text": "Hello there."}]}"#;

struct Row {
    what: &'static str,
    request: Request<Body>,
    status: StatusCode,
    /// The `Allow` header a 405 must carry.
    allow: Option<&'static str>,
}

fn row(what: &'static str, request: Request<Body>, status: StatusCode) -> Row {
    Row { what, request, status, allow: None }
}

fn events(session: &str, query: &str) -> Request<Body> {
    get(&format!("/api/sessions/{session}/events?{query}"))
}

/// `text` as one query-string value.
fn encoded(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => char::from(byte).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

fn search(query: &str) -> Request<Body> {
    get(&format!("/api/search?{query}"))
}

fn hostile_rows(session: &str) -> Vec<Row> {
    let bad = StatusCode::BAD_REQUEST;
    let two_hosts = request("GET", "/api/sessions").header("host", "evil.example").body(Body::empty()).unwrap();
    let absolute_elsewhere = Request::builder()
        .uri("http://evil.example/api/sessions")
        .header("host", HOST)
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .unwrap();
    let two_origins = request("POST", "/api/sessions")
        .header("content-type", "application/json")
        .header("origin", format!("http://{HOST}"))
        .header("origin", "http://evil.example")
        .body(Body::from("{}"))
        .unwrap();
    let last_event_id = |value: &'static str| {
        request("GET", &format!("/api/sessions/{session}/events")).header("last-event-id", value).body(Body::empty())
    };
    let mut foreign_host = get("/api/sessions");
    foreign_host.headers_mut().insert("host", axum::http::HeaderValue::from_static("evil.example"));
    let oversized = request("POST", "/api/chat")
        .header("content-type", "application/json")
        .header("content-length", (9 * 1024 * 1024).to_string())
        .body(Body::from("{}"))
        .unwrap();
    vec![
        row("after is not a number", events(session, "after=abc"), bad),
        row("after is negative", events(session, "after=-1"), bad),
        row("after is empty", events(session, "after="), bad),
        row("after in exponent form", events(session, "after=1e3"), bad),
        row("after beyond u64", events(session, "after=99999999999999999999999"), bad),
        row("after given twice", events(session, "after=1&after=2"), bad),
        row("a search without q", search("limit=5"), bad),
        row("a search of 10 KB", search(&format!("q={}", encoded(&"needle ".repeat(1500)))), bad),
        row("a search limit of 0", search("q=x&limit=0"), bad),
        row("a search limit over the cap", search("q=x&limit=1000"), bad),
        row("a search limit that is not a number", search("q=x&limit=ten"), bad),
        row("q given twice", search("q=a&q=b"), bad),
        row("Last-Event-ID is not a number", last_event_id("abc").unwrap(), bad),
        row("Last-Event-ID is negative", last_event_id("-3").unwrap(), bad),
        row("a path segment that is not UTF-8", get("/api/sessions/%ff"), bad),
        row("the same under /events", get("/api/sessions/%ff/events"), bad),
        Row {
            what: "GET on a POST route",
            request: get("/api/chat"),
            status: StatusCode::METHOD_NOT_ALLOWED,
            allow: Some("POST"),
        },
        Row {
            what: "PUT on the sessions list",
            request: request("PUT", "/api/sessions")
                .header("content-type", "application/json")
                .body(Body::from("{}"))
                .unwrap(),
            status: StatusCode::METHOD_NOT_ALLOWED,
            allow: Some("GET,HEAD,POST"),
        },
        Row {
            what: "DELETE on a static file",
            request: request("DELETE", "/favicon.svg").body(Body::empty()).unwrap(),
            status: StatusCode::METHOD_NOT_ALLOWED,
            allow: Some("GET, HEAD"),
        },
        row("two Host headers", two_hosts, bad),
        row("an absolute-form target naming another host", absolute_elsewhere, bad),
        row("two Origin headers", two_origins, bad),
        row("a foreign Host", foreign_host, StatusCode::FORBIDDEN),
        row(
            "a foreign Origin",
            request("POST", "/api/sessions")
                .header("content-type", "application/json")
                .header("origin", "http://evil.example")
                .body(Body::from("{}"))
                .unwrap(),
            StatusCode::FORBIDDEN,
        ),
        row(
            "no token",
            Request::get("/api/sessions").header("host", HOST).body(Body::empty()).unwrap(),
            StatusCode::UNAUTHORIZED,
        ),
        row(
            "a wrong token",
            Request::get("/api/sessions")
                .header("host", HOST)
                .header("authorization", "Bearer nope")
                .body(Body::empty())
                .unwrap(),
            StatusCode::UNAUTHORIZED,
        ),
        row(
            "a simple-request content type",
            request("POST", "/api/sessions").header("content-type", "text/plain").body(Body::from("{}")).unwrap(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        row("a body announced over the cap", oversized, StatusCode::PAYLOAD_TOO_LARGE),
        row("malformed JSON", post("/api/chat", "{not json"), bad),
        row("a body of the wrong shape", post("/api/chat", r#"{"sessionId": 7}"#), bad),
        row("an unknown session", get("/api/sessions/no-such-session"), StatusCode::NOT_FOUND),
        row("events of an unknown session", get("/api/sessions/no-such-session/events"), StatusCode::NOT_FOUND),
        row("an unknown API route", get("/api/nothing-here"), StatusCode::NOT_FOUND),
        row("an unknown file", get("/no-such-file.txt"), StatusCode::NOT_FOUND),
    ]
}

#[tokio::test]
async fn hostile_requests_get_their_status_and_a_json_message_and_the_server_stays_healthy() {
    let app = TestApp::playing(QUICK).await;
    let session = app.new_session().await;
    for Row { what, request, status, allow } in hostile_rows(&session) {
        let response = app.call(request).await;
        assert_eq!(response.status(), status, "{what}");
        assert_eq!(response.headers().get("allow").and_then(|v| v.to_str().ok()), allow, "{what}: the Allow header");
        let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
        assert!(content_type.starts_with("application/json"), "{what}: answered as {content_type:?}");
        let body = json_body(response).await;
        let message = body["message"].as_str().unwrap_or_default();
        assert!(!message.is_empty(), "{what}: no message in {body}");

        assert_eq!(app.call(get("/api/health")).await.status(), StatusCode::OK, "healthy after: {what}");
    }
    let detail = json_body(app.call(get(&format!("/api/sessions/{session}"))).await).await;
    assert_eq!(detail["lastSeq"], 0, "no hostile request changed the session");
}

#[tokio::test]
async fn searches_with_query_syntax_are_answered_as_plain_words() {
    let app = TestApp::playing(QUICK).await;
    let session = app.new_session().await;
    finished_run(&app, &session).await;
    // What each finds of the run's "hi" and "Hello there.": every word must match, so a syntax word that is not
    // in the text (NEAR, AND, text, x) leaves nothing.
    let queries = [
        ("", 0),
        ("   ", 0),
        ("\"", 0),
        ("\"hello", 1),
        ("hello\"", 1),
        ("*", 0),
        ("hel*", 1),
        ("there:hello", 1),
        ("text:hello", 0),
        ("(hello", 1),
        ("hello)", 1),
        ("NEAR(hello there)", 0),
        ("-hello", 1),
        ("^hello", 1),
        ("hello AND OR NOT", 0),
        ("'hello", 1),
        ("hello & !there | x:*", 0),
        ("\\", 0),
        ("\u{1F600}", 0),
    ];
    for (query, expected) in queries {
        let response = app.call(search(&format!("q={}", encoded(query)))).await;
        assert_eq!(response.status(), StatusCode::OK, "{query:?}");
        let body = json_body(response).await;
        let hits = body["hits"].as_array().unwrap_or_else(|| panic!("{query:?}: {body}"));
        assert_eq!(hits.len(), expected, "{query:?}: {body}");
    }
    let body = json_body(app.call(search("q=THERE")).await).await;
    let hit = &body["hits"][0];
    assert_eq!(hit["sessionId"], session.as_str());
    assert!(hit["seq"].as_u64().is_some() && hit["messageId"].is_string(), "{hit}");
    assert_eq!(
        hit["snippet"],
        serde_json::json!([{ "text": "Hello " }, { "text": "there", "highlight": true }, { "text": "." }])
    );
    let longest = "hello ".repeat(crate::store::search::MAX_QUERY_CHARS / 6);
    assert_eq!(app.call(search(&format!("q={}", encoded(&longest)))).await.status(), StatusCode::OK);
}

/// Runs the quick script to its end in `session`; returns the session's last seq.
async fn finished_run(app: &TestApp, session: &str) -> u64 {
    let response = app.call(post("/api/chat", &format!(r#"{{"sessionId": "{session}", "message": "hi"}}"#))).await;
    assert_eq!(response.status(), StatusCode::OK);
    let text = String::from_utf8(body_bytes(response).await).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "done");
    last["seq"].as_u64().unwrap()
}

/// The first chunk of a tailing response, within `wait` of the (paused) clock.
async fn first_chunk(response: axum::http::Response<Body>, wait: Duration) -> (String, axum::body::BodyDataStream) {
    let mut stream = response.into_body().into_data_stream();
    let chunk = tokio::time::timeout(wait, stream.next()).await.expect("a chunk in time").expect("the stream is open");
    (String::from_utf8(chunk.unwrap().to_vec()).unwrap(), stream)
}

#[tokio::test(start_paused = true)]
async fn a_cursor_past_every_seq_sends_nothing_of_the_log_then_tails() {
    let app = TestApp::playing(QUICK).await;
    let session = app.new_session().await;
    let last = finished_run(&app, &session).await;
    for cursor in [u64::MAX.to_string(), (i64::MAX as u64 + 1).to_string(), (last + 1000).to_string()] {
        let response = app.call(events(&session, &format!("after={cursor}"))).await;
        assert_eq!(response.status(), StatusCode::OK);
        let (chunk, _stream) = first_chunk(response, Duration::from_secs(20)).await;
        assert_eq!(chunk, "{\"type\":\"ping\"}\n", "after={cursor}: only a keepalive, nothing of the log");
    }
    // The tail goes on: a frame appended after the request reaches it.
    let response = app.call(events(&session, &format!("after={}", u64::MAX))).await;
    let mut stream = response.into_body().into_data_stream();
    finished_run(&app, &session).await;
    let chunk =
        tokio::time::timeout(Duration::from_secs(1), stream.next()).await.expect("the new frames come").unwrap();
    let text = String::from_utf8(chunk.unwrap().to_vec()).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["seq"], last + 1, "the tail starts right after the log's end: {text}");
}

#[tokio::test]
async fn last_event_id_and_after_resume_from_the_larger_of_the_two() {
    let app = TestApp::playing(QUICK).await;
    let session = app.new_session().await;
    let last = finished_run(&app, &session).await;
    assert!(last > 3, "the run logs several frames");
    let cases = [("after=0", Some("2"), 3), ("after=2", Some("1"), 3), ("after=1", None, 2), ("", Some("3"), 4)];
    for (query, header, first_seq) in cases {
        let mut builder = request("GET", &format!("/api/sessions/{session}/events?{query}"));
        if let Some(value) = header {
            builder = builder.header("last-event-id", value);
        }
        let response = app.call(builder.body(Body::empty()).unwrap()).await;
        assert_eq!(response.status(), StatusCode::OK);
        let (chunk, _stream) = first_chunk(response, Duration::from_secs(20)).await;
        let first: serde_json::Value = serde_json::from_str(chunk.lines().next().unwrap()).unwrap();
        assert_eq!(first["seq"], first_seq, "?{query} with Last-Event-ID {header:?}");
    }
}

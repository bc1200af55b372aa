//! `GET /api/files` (the composer's `@` mentions) and `/compact` sent as a command, in-process.

use std::fs;
use std::os::unix::fs::symlink;

use axum::http::StatusCode;
use serde_json::Value;

use super::app::{TestApp, body_bytes, get, json_body, post};

const QUICK: &str = r#"{"delayMs": 0, "turns": [{"text": "Noted: the login form needs a fix."}]}"#;

fn files(query: &str) -> String {
    format!("/api/files?{query}")
}

/// The paths an answer lists, after checking it is a 200 whose every path is relative and inside.
async fn listed(app: &TestApp, uri: &str) -> Vec<String> {
    let response = app.call(get(uri)).await;
    let status = response.status();
    let body = json_body(response).await;
    assert_eq!(status, StatusCode::OK, "{uri}: {body}");
    let paths: Vec<String> =
        body["files"].as_array().unwrap().iter().map(|file| file["path"].as_str().unwrap().to_owned()).collect();
    for path in &paths {
        assert!(!path.starts_with('/') && !path.split('/').any(|name| name == ".."), "{uri} listed {path}");
    }
    paths
}

#[tokio::test]
async fn a_mention_lists_the_sessions_workspace_and_nothing_outside_it() {
    let app = TestApp::playing(QUICK).await;
    let session = app.new_session().await;
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("passwd"), "root").unwrap();
    let workspace = app.data_dir().join("workspaces").join(&session);
    fs::create_dir_all(workspace.join("src")).unwrap();
    fs::write(workspace.join("src/login.rs"), "fn main() {}").unwrap();
    fs::write(workspace.join("README.md"), "hi").unwrap();
    fs::write(workspace.join("build.log"), "noise").unwrap();
    fs::write(workspace.join(".gitignore"), "*.log\n").unwrap();
    symlink(outside.path().join("passwd"), workspace.join("passwd")).unwrap();
    symlink(outside.path(), workspace.join("up")).unwrap();

    assert_eq!(listed(&app, &files(&format!("q=login&session={session}"))).await, vec!["src/login.rs"]);
    let everything = listed(&app, &files(&format!("session={session}"))).await;
    assert_eq!(everything, vec!["src/", "README.md", "src/login.rs"], "gitignored and outside entries left out");
    for hostile in ["..%2F..%2Fpasswd", "%2Fetc%2Fpasswd", "passwd", "up", "%00", "%E2%80%AE%F0%9F%98%80", "%25s%25n"] {
        let found = listed(&app, &files(&format!("q={hostile}&session={session}"))).await;
        assert!(found.iter().all(|path| everything.contains(path)), "{hostile}: {found:?}");
    }
}

#[tokio::test]
async fn a_mention_query_is_refused_only_for_an_unknown_session_or_its_length() {
    let app = TestApp::playing(QUICK).await;
    let refusals = [
        (files("q=a&session=no-such-session"), StatusCode::NOT_FOUND),
        (files("q=a&session=..%2F..%2F..%2Fetc"), StatusCode::NOT_FOUND),
        (files(&format!("q={}", "a".repeat(201))), StatusCode::BAD_REQUEST),
        (files("q=a&q=b"), StatusCode::BAD_REQUEST),
    ];
    for (uri, status) in refusals {
        let response = app.call(get(&uri)).await;
        assert_eq!(response.status(), status, "{uri}");
        let body = json_body(response).await;
        assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()), "{uri}: {body}");
    }
    // A chat not started yet has no workspace of its own (no shared `--workspace` here): nothing to list, no error.
    assert!(listed(&app, &files("q=")).await.is_empty());
    assert!(listed(&app, &files("q=x&session=")).await.is_empty());
}

/// The frames of a send's stream.
async fn frames(app: &TestApp, body: &str) -> Vec<Value> {
    let response = app.call(post("/api/chat", body)).await;
    assert_eq!(response.status(), StatusCode::OK, "{body}");
    let bytes = body_bytes(response).await;
    String::from_utf8(bytes).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn of_type<'a>(frames: &'a [Value], kind: &str) -> Vec<&'a Value> {
    frames.iter().filter(|frame| frame["type"] == kind).collect()
}

#[tokio::test]
async fn compact_summarizes_the_conversation_as_a_run_that_shows_the_summary() {
    let app = TestApp::playing(QUICK).await;
    let session = app.new_session().await;
    let too_early = frames(&app, &format!(r#"{{"sessionId":"{session}","message":"","command":"compact"}}"#)).await;
    let error = of_type(&too_early, "error");
    assert!(error[0]["message"].as_str().unwrap().contains("nothing to compact yet"), "{too_early:?}");

    frames(&app, &format!(r#"{{"sessionId":"{session}","message":"Fix the login form"}}"#)).await;
    let body = format!(r#"{{"sessionId":"{session}","message":"keep the file names","command":"compact"}}"#);
    let compacted = frames(&app, &body).await;
    let prompt = &of_type(&compacted, "message")[0]["message"]["parts"][0]["text"];
    assert_eq!(prompt, "/compact keep the file names", "the transcript shows the command as typed");
    let phases: Vec<(&Value, &Value)> =
        of_type(&compacted, "compaction").iter().map(|frame| (&frame["phase"], &frame["reason"])).collect();
    assert_eq!(phases.len(), 2, "{compacted:?}");
    assert!(phases.iter().all(|(_, reason)| *reason == "manual"));
    let done = of_type(&compacted, "done");
    let answer = done[0]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(answer.starts_with("Compacted the conversation."), "{answer}");
    assert!(answer.contains("Noted"), "the model's summary is shown: {answer}");

    let after = frames(&app, &format!(r#"{{"sessionId":"{session}","message":"Go on"}}"#)).await;
    assert_eq!(of_type(&after, "done").len(), 1, "the session goes on from the summary");
}

#[tokio::test]
async fn compact_is_refused_mixed_with_queueing_or_a_plan_action() {
    let app = TestApp::playing(QUICK).await;
    let session = app.new_session().await;
    for extra in [r#""streamingBehavior":"steer""#, r#""planAction":"execute""#] {
        let body = format!(r#"{{"sessionId":"{session}","message":"","command":"compact",{extra}}}"#);
        let response = app.call(post("/api/chat", &body)).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
        assert!(json_body(response).await["message"].as_str().unwrap().contains("/compact"));
    }
    let unknown = format!(r#"{{"sessionId":"{session}","message":"","command":"explode"}}"#);
    assert_eq!(app.call(post("/api/chat", &unknown)).await.status(), StatusCode::BAD_REQUEST);
}

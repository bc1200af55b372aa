//! Checkpoints through the chat core (DESIGN §11): one taken before each run that a message starts, and Restore
//! putting the workspace back as it was before a message, whatever tool changed it.

use std::path::Path;

use super::app::{chat_playing, chat_request, until_idle};
use crate::protocol::*;
use crate::server::chat::{Chat, ChatError};

/// Two runs of shell commands: the first writes two files, the second changes one, adds one and deletes one.
const SHELL: &str = r#"{"delayMs": 1, "turns": [
  {"toolCalls": [{"name": "bash", "arguments": {"command": "echo one > a.txt && echo keep > keep.txt && mkdir -p d && echo x > d/x.txt"}}]},
  {"text": "Wrote them."},
  {"toolCalls": [{"name": "bash", "arguments": {"command": "echo two > a.txt && echo new > b.txt && rm keep.txt && rm -r d"}}]},
  {"text": "Changed them."}
]}"#;

async fn run(chat: &std::sync::Arc<Chat>, session: &str, message: &str) -> String {
    chat.send(chat_request(session, message)).await.expect("the send starts a run");
    until_idle(&chat.live(session).await.unwrap()).await;
    let detail = chat.detail(session).await.unwrap();
    detail.messages.iter().rev().find(|m| m.role == Role::User).map(|m| m.id.clone()).unwrap()
}

fn files(workspace: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for entry in walk(workspace) {
        let relative = entry.strip_prefix(workspace).unwrap().to_string_lossy().into_owned();
        found.push((relative, std::fs::read_to_string(&entry).unwrap()));
    }
    found.sort();
    found
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().is_some_and(|name| name == ".chatwire") {
            continue;
        }
        if path.is_dir() { out.extend(walk(&path)) } else { out.push(path) }
    }
    out
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected.iter().map(|(path, text)| (path.to_string(), text.to_string())).collect()
}

#[tokio::test]
async fn restore_puts_back_what_a_shell_command_changed_created_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let chat = chat_playing(SHELL, dir.path()).await;
    let session = chat.create_session(None, None).await.unwrap().session_id;
    let workspace = dir.path().join("workspaces").join(&session);
    let first = run(&chat, &session, "write them").await;
    let second = run(&chat, &session, "change them").await;
    assert_eq!(files(&workspace), pairs(&[("a.txt", "two\n"), ("b.txt", "new\n")]));
    std::fs::write(workspace.join("mine.txt"), "written by the user after the runs").unwrap();

    let restored = chat.restore_files(&session, &second).await.unwrap();
    assert_eq!(restored.changed, ["a.txt"]);
    assert_eq!(restored.removed, ["b.txt"]);
    let mut recreated = restored.recreated.clone();
    recreated.sort();
    assert_eq!(recreated, ["d/x.txt", "keep.txt"]);
    assert_eq!(
        files(&workspace),
        pairs(&[
            ("a.txt", "one\n"),
            ("d/x.txt", "x\n"),
            ("keep.txt", "keep\n"),
            ("mine.txt", "written by the user after the runs"),
        ]),
        "what the runs changed is put back; the user's own file, which no run touched, is left alone"
    );

    let to_start = chat.restore_files(&session, &first).await.unwrap();
    assert!(to_start.changed.is_empty());
    assert_eq!(files(&workspace).len(), 1, "only the user's own file stays: {:?}", files(&workspace));
}

#[tokio::test]
async fn restore_is_refused_while_a_run_is_going_and_for_a_message_without_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let chat = chat_playing(r#"{"delayMs": 200, "chunkChars": 1, "turns": [{"text": "slowly"}]}"#, dir.path()).await;
    let session = chat.create_session(None, None).await.unwrap().session_id;
    let unknown = chat.restore_files(&session, "msg-nope").await.map(|_| ());
    assert!(matches!(unknown, Err(ChatError::NoCheckpoint(_))), "{unknown:?}");
    chat.send(chat_request(&session, "one")).await.unwrap();
    let asked = chat.detail(&session).await.unwrap().messages[0].id.clone();
    let busy = chat.restore_files(&session, &asked).await.map(|_| ());
    assert!(matches!(busy, Err(ChatError::RestoreWhileRunning)), "{busy:?}");
}

#[tokio::test]
async fn a_deleted_session_takes_its_checkpoints_along_and_leaves_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let chat = chat_playing(SHELL, dir.path()).await;
    let session = chat.create_session(None, None).await.unwrap().session_id;
    run(&chat, &session, "write them").await;
    let checkpoints = dir.path().join("checkpoints").join(&session);
    assert!(checkpoints.join("runs").is_dir(), "the run was checkpointed");
    chat.delete(&session).await.unwrap();
    assert!(!checkpoints.exists(), "the checkpoints went with the session");
    let workspace = dir.path().join("workspaces").join(&session);
    assert_eq!(std::fs::read_to_string(workspace.join("a.txt")).unwrap(), "one\n", "the files are the user's");
}

/// The frames of a session's log, decoded.
async fn logged(chat: &Chat, session: &str) -> Vec<ChatFrame> {
    let frames = chat.store.frames_after(session, 0, 10_000).await.unwrap();
    frames.iter().map(|frame| parse_frame(frame.line.as_bytes()).unwrap()).collect()
}

/// Three runs: one writes a file of three lines, one adds a file and edits a line of the first, one only talks.
const EDITS: &str = r#"{"delayMs": 1, "turns": [
  {"toolCalls": [{"name": "bash", "arguments": {"command": "printf 'one\\ntwo\\nthree\\n' > edit.txt"}}]},
  {"text": "Wrote it."},
  {"toolCalls": [{"name": "bash", "arguments": {"command": "printf 'new\\n' > new.txt && printf 'one\\nTWO\\nthree\\n' > edit.txt"}}]},
  {"text": "Changed them."},
  {"text": "Nothing to change."}
]}"#;

#[tokio::test]
async fn a_run_that_changes_files_logs_its_changes_before_its_end_and_one_that_changes_none_logs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let chat = chat_playing(EDITS, dir.path()).await;
    let session = chat.create_session(None, None).await.unwrap().session_id;
    run(&chat, &session, "write it").await;
    let second = run(&chat, &session, "change them").await;
    run(&chat, &session, "and now?").await;

    let frames = logged(&chat, &session).await;
    let changes: Vec<&ChangesFrame> = frames
        .iter()
        .filter_map(|frame| match frame {
            ChatFrame::Changes(changes) => Some(changes),
            _ => None,
        })
        .collect();
    assert_eq!(changes.len(), 2, "the run that only talked changed nothing, and says nothing of it");
    let edited = changes[1];
    assert_eq!(edited.checkpoint, second);
    let mut files: Vec<(&str, ChangeStatus, u32, u32)> =
        edited.files.iter().map(|file| (file.path.as_str(), file.status, file.additions, file.deletions)).collect();
    files.sort_by_key(|file| file.0);
    assert_eq!(files, [("edit.txt", ChangeStatus::Modified, 1, 1), ("new.txt", ChangeStatus::Added, 1, 0)]);
    assert_eq!((edited.additions, edited.deletions), (2, 1));
    // Right before the run's end: nothing but the settling lifecycle frame between it and `done`.
    let at = frames.iter().position(|frame| matches!(frame, ChatFrame::Changes(c) if c.checkpoint == second)).unwrap();
    let end = frames[at..].iter().position(ChatFrame::is_terminal).unwrap() + at;
    assert!(matches!(frames[end], ChatFrame::Done(_)), "{:?}", frames[end]);
    assert!(frames[at + 1..end].iter().all(|frame| matches!(frame, ChatFrame::State(_))), "{:?}", &frames[at..=end]);

    let detail = chat.detail(&session).await.unwrap();
    let answer = detail.messages.iter().skip_while(|m| m.id != second).nth(1).unwrap();
    assert_eq!(answer.changes.as_deref().map(RunChanges::summary).as_deref(), Some("2 files changed, +2 −1"));
    assert!(detail.messages.last().unwrap().changes.is_none(), "the last run changed nothing");

    let served = chat.run_changes(&session, &second).await.unwrap();
    assert_eq!((served.files.len(), served.additions, served.deletions, served.truncated), (2, 2, 1, false));
    assert!(served.diff.contains("diff --git a/edit.txt b/edit.txt"), "{}", served.diff);
    assert!(served.diff.contains("\n-two\n+TWO\n"), "{}", served.diff);
    assert!(served.diff.contains("+++ b/new.txt\n@@ -0,0 +1 @@\n+new\n"), "{}", served.diff);
    let unknown = chat.run_changes(&session, "msg-nope").await.map(|_| ());
    assert!(matches!(unknown, Err(ChatError::NoChanges(_))), "{unknown:?}");
}

#[tokio::test]
async fn the_changes_route_answers_the_diff_and_404_with_a_message_for_an_unknown_run() {
    use axum::http::StatusCode;

    use super::app::{TestApp, get, json_body};

    let app = TestApp::playing(EDITS).await;
    let session = app.new_session().await;
    let response = app.call(super::app::post("/api/chat", &chat_body(&session, "write it"))).await;
    assert_eq!(response.status(), StatusCode::OK);
    let frames =
        String::from_utf8(axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap().to_vec()).unwrap();
    let key = frames
        .lines()
        .filter_map(|line| match parse_frame(line.as_bytes()).unwrap() {
            ChatFrame::Changes(changes) => Some(changes.checkpoint),
            _ => None,
        })
        .next()
        .expect("the run's stream carries its changes");

    let response = app.call(get(&format!("/api/sessions/{session}/changes/{key}"))).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body = json_body(response).await;
    assert_eq!(body["files"][0]["path"], "edit.txt");
    assert_eq!(body["files"][0]["status"], "added");
    assert_eq!((body["additions"].as_u64(), body["deletions"].as_u64()), (Some(3), Some(0)));
    assert_eq!(body["truncated"], false);
    assert!(body["diff"].as_str().unwrap().contains("+one\n+two\n+three\n"), "{body}");

    for uri in [format!("/api/sessions/{session}/changes/msg-nope"), "/api/sessions/nope/changes/msg-nope".to_owned()] {
        let response = app.call(get(&uri)).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{uri}");
        let body = json_body(response).await;
        assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()), "{uri}: {body}");
    }
}

fn chat_body(session: &str, message: &str) -> String {
    serde_json::to_string(&chat_request(session, message)).unwrap()
}

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
    let session = chat.create_session(None).await.unwrap().session_id;
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
    let session = chat.create_session(None).await.unwrap().session_id;
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
    let session = chat.create_session(None).await.unwrap().session_id;
    run(&chat, &session, "write them").await;
    let checkpoints = dir.path().join("checkpoints").join(&session);
    assert!(checkpoints.join("runs").is_dir(), "the run was checkpointed");
    chat.delete(&session).await.unwrap();
    assert!(!checkpoints.exists(), "the checkpoints went with the session");
    let workspace = dir.path().join("workspaces").join(&session);
    assert_eq!(std::fs::read_to_string(workspace.join("a.txt")).unwrap(), "one\n", "the files are the user's");
}

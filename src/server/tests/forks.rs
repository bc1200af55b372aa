//! Fork to a new session through the chat core and the route (DESIGN §11): what the fork holds, the files it
//! works on, the conversation its runtime goes on from, and what is refused.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;

use super::app::{TestApp, chat_playing, chat_request, json_body, post, scripted_models, until_idle};
use crate::protocol::*;
use crate::runtime::builtin::AgentRuntime;
use crate::runtime::registry::Agents;
use crate::server::chat::{Chat, ChatConfig, ChatError};
use crate::store::SqliteStore;

/// Two runs of shell commands: the first writes two files, the second changes one, adds one and deletes one.
const SHELL: &str = r#"{"delayMs": 1, "turns": [
  {"toolCalls": [{"name": "bash", "arguments": {"command": "echo one > a.txt && echo keep > keep.txt"}}]},
  {"text": "Wrote them."},
  {"toolCalls": [{"name": "bash", "arguments": {"command": "echo two > a.txt && echo new > b.txt && rm keep.txt"}}]},
  {"text": "Changed them."}
]}"#;

/// Each answer says how many answers the model saw before it.
const COUNTING: &str =
    r#"{"delayMs": 1, "turns": [{"text": "saw 0"}, {"text": "saw 1"}, {"text": "saw 2"}, {"text": "saw 3"}]}"#;

async fn run(chat: &Arc<Chat>, session: &str, message: &str) -> SessionDetail {
    chat.send(chat_request(session, message)).await.expect("the send starts a run");
    until_idle(&chat.live(session).await.unwrap()).await;
    chat.detail(session).await.unwrap()
}

fn shown(detail: &SessionDetail) -> Vec<String> {
    detail.messages.iter().map(ChatMessage::text).collect()
}

fn id_of(detail: &SessionDetail, text: &str) -> String {
    detail.messages.iter().find(|m| m.text() == text).map(|m| m.id.clone()).expect("the message is shown")
}

/// The workspace's files and their contents, sorted (chatwire's own `.chatwire` left out).
fn files(workspace: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(workspace).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name != ".chatwire" && path.is_file() {
            found.push(format!("{name}: {}", std::fs::read_to_string(&path).unwrap().trim()));
        }
    }
    found.sort();
    found
}

#[tokio::test]
async fn forking_at_an_answer_copies_the_branch_and_the_files_as_they_stood_there() {
    let dir = tempfile::tempdir().unwrap();
    let chat = chat_playing(SHELL, dir.path()).await;
    let session = chat.create_session(Some("Shell work".into()), None).await.unwrap().session_id;
    run(&chat, &session, "write them").await;
    let both = run(&chat, &session, "change them").await;
    let workspace = |id: &str| dir.path().join("workspaces").join(id);
    assert_eq!(files(&workspace(&session)), ["a.txt: two", "b.txt: new"]);

    let fork = chat.fork_session(&session, &id_of(&both, "Wrote them.")).await.unwrap();
    let forked = fork.session.session_id.clone();
    assert_ne!(forked, session);
    assert_eq!(fork.session.title, "Shell work (fork)");
    assert_eq!(fork.draft, None);
    let detail = chat.detail(&forked).await.unwrap();
    assert_eq!(shown(&detail), ["write them", "Wrote them."]);
    let tools = |detail: &SessionDetail| {
        detail.messages.iter().flat_map(|m| &m.parts).filter(|p| matches!(p, ChatMessagePart::Tool(_))).count()
    };
    assert_eq!(tools(&detail), 1, "the fork keeps the answer's tool call");
    let ForkedWorkspace::Copied { restored: Some(restored) } = &fork.workspace else {
        panic!("a per-session workspace is copied and put back: {:?}", fork.workspace)
    };
    assert_eq!(
        (restored.changed.as_slice(), restored.removed.as_slice()),
        (&["a.txt".to_owned()][..], &["b.txt".to_owned()][..])
    );
    assert_eq!(
        files(&workspace(&forked)),
        ["a.txt: one", "keep.txt: keep"],
        "the files as they stood after that answer"
    );
    assert_eq!(files(&workspace(&session)), ["a.txt: two", "b.txt: new"], "the first session's files are untouched");

    // The fork's checkpoints came along: Restore files works on the messages it holds.
    let to_start = chat.restore_files(&forked, &id_of(&detail, "write them")).await.unwrap();
    assert_eq!(to_start.removed.len(), 2, "{to_start:?}");
    assert_eq!(files(&workspace(&forked)), Vec::<String>::new());
    assert_eq!(files(&workspace(&session)), ["a.txt: two", "b.txt: new"]);
    assert_eq!(
        shown(&chat.detail(&session).await.unwrap()),
        ["write them", "Wrote them.", "change them", "Changed them."]
    );
}

#[tokio::test]
async fn forking_at_a_user_message_holds_what_came_before_it_and_hands_its_text_back() {
    let dir = tempfile::tempdir().unwrap();
    let chat = chat_playing(SHELL, dir.path()).await;
    let session = chat.create_session(None, None).await.unwrap().session_id;
    run(&chat, &session, "write them").await;
    let both = run(&chat, &session, "change them").await;

    let fork = chat.fork_session(&session, &id_of(&both, "change them")).await.unwrap();
    assert_eq!(fork.draft.as_deref(), Some("change them"));
    assert_eq!(fork.session.title, "write them (fork)", "the first session was named after its first message");
    assert_eq!(shown(&chat.detail(&fork.session.session_id).await.unwrap()), ["write them", "Wrote them."]);
    let forked_files = files(&dir.path().join("workspaces").join(&fork.session.session_id));
    assert_eq!(forked_files, ["a.txt: one", "keep.txt: keep"], "the files as they stood before that message");

    let at_first = chat.fork_session(&session, &id_of(&both, "write them")).await.unwrap();
    assert_eq!(at_first.draft.as_deref(), Some("write them"));
    assert!(chat.detail(&at_first.session.session_id).await.unwrap().messages.is_empty());
    assert_eq!(files(&dir.path().join("workspaces").join(&at_first.session.session_id)), Vec::<String>::new());
}

#[tokio::test]
async fn a_fork_goes_on_from_its_own_conversation_and_leaves_the_first_session_alone() {
    let dir = tempfile::tempdir().unwrap();
    let chat = chat_playing(COUNTING, dir.path()).await;
    let session = chat.create_session(None, None).await.unwrap().session_id;
    run(&chat, &session, "one").await;
    let before = run(&chat, &session, "two").await;
    let fork = chat.fork_session(&session, &id_of(&before, "saw 0")).await.unwrap();
    assert!(
        matches!(&fork.workspace, ForkedWorkspace::Copied { restored: Some(restored) } if restored.changed.is_empty()),
        "put back to before \"two\", which changed no file: {:?}",
        fork.workspace
    );
    let at_the_end = chat.fork_session(&session, &id_of(&before, "saw 1")).await.unwrap();
    assert_eq!(at_the_end.workspace, ForkedWorkspace::Copied { restored: None }, "nothing follows the last answer");
    let forked = run(&chat, &fork.session.session_id, "deux").await;
    assert_eq!(shown(&forked), ["one", "saw 0", "deux", "saw 1"], "the fork's runtime saw one answer");
    assert_eq!(shown(&chat.detail(&session).await.unwrap()), ["one", "saw 0", "two", "saw 1"]);
    let kept = chat.sessions.transcript(&chat.live(&fork.session.session_id).await.unwrap()).await.unwrap().snapshot;
    assert_eq!(
        kept,
        chat.sessions.replay(&fork.session.session_id).await.unwrap().snapshot,
        "the fork's log rebuilds it"
    );
}

#[tokio::test]
async fn with_a_shared_workspace_a_fork_works_on_the_same_files() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    let models = scripted_models(SHELL);
    let config = ChatConfig {
        data_dir: dir.path().into(),
        workspace: Some(shared.clone()),
        keepalive: Duration::from_secs(15),
        lease_ttl: Duration::from_secs(15),
        checkpoint_file_limit: 1 << 20,
        attachments: crate::protocol::AttachmentLimits::default(),
    };
    let store = Arc::new(SqliteStore::open(dir.path()).unwrap());
    let chat =
        Chat::open(store, Agents::single(Arc::new(AgentRuntime::new(models.clone()))), models, config).await.unwrap();
    let session = chat.create_session(None, None).await.unwrap().session_id;
    let first = run(&chat, &session, "write them").await;
    let fork = chat.fork_session(&session, &id_of(&first, "Wrote them.")).await.unwrap();
    assert_eq!(fork.workspace, ForkedWorkspace::Shared);
    assert_eq!(files(&shared), ["a.txt: one", "keep.txt: keep"], "nothing is copied or put back");
    assert!(!dir.path().join("workspaces").join(&fork.session.session_id).exists());
}

#[tokio::test]
async fn a_fork_names_a_message_of_the_session_and_waits_for_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let chat = chat_playing(r#"{"delayMs": 200, "chunkChars": 1, "turns": [{"text": "slowly"}]}"#, dir.path()).await;
    let session = chat.create_session(None, None).await.unwrap().session_id;
    let unknown = chat.fork_session(&session, "msg-nope").await.map(|_| ());
    assert!(matches!(unknown, Err(ChatError::UnknownMessage(_))), "{unknown:?}");
    chat.send(chat_request(&session, "one")).await.unwrap();
    let asked = id_of(&chat.detail(&session).await.unwrap(), "one");
    let sessions_before = chat.store.sessions().await.unwrap().len();
    let busy = chat.fork_session(&session, &asked).await.map(|_| ());
    assert!(matches!(busy, Err(ChatError::SessionBusy)), "{busy:?}");
    assert_eq!(chat.store.sessions().await.unwrap().len(), sessions_before, "a refused fork makes no session");
    chat.abort(&session).await.unwrap();
}

#[tokio::test]
async fn the_fork_route_answers_the_new_session_or_a_message() {
    let app = TestApp::playing(COUNTING).await;
    let session = app.new_session().await;
    let missing = app.call(post(&format!("/api/sessions/{session}/fork"), r#"{"messageId": "msg-nope"}"#)).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(json_body(missing).await["message"].as_str().unwrap().contains("msg-nope"));
    let malformed = app.call(post(&format!("/api/sessions/{session}/fork"), r#"{"message": 1}"#)).await;
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);
    assert!(json_body(malformed).await["message"].is_string());
    let unknown_session = app.call(post("/api/sessions/nope/fork", r#"{"messageId": "m"}"#)).await;
    assert_eq!(unknown_session.status(), StatusCode::NOT_FOUND);
}

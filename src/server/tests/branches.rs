//! Edit, regenerate and branch switches through the chat core and the route (DESIGN §11): what the log records,
//! what the runtime is given, and what is refused.

use axum::http::StatusCode;

use super::app::{TestApp, chat_playing, chat_request, json_body, post, until_idle};
use crate::protocol::*;
use crate::server::chat::{Chat, ChatError};

/// Each answer says how many answers the model saw before it (the scripted provider plays turn k of a
/// conversation that holds k answers): the runtime's context, told by the transcript.
const COUNTING: &str =
    r#"{"delayMs": 1, "turns": [{"text": "saw 0"}, {"text": "saw 1"}, {"text": "saw 2"}, {"text": "saw 3"}]}"#;

fn send(session_id: &str, message: &str, rerun: Option<Rerun>) -> ChatRequest {
    ChatRequest { rerun, ..chat_request(session_id, message) }
}

fn edit(message_id: &str) -> Option<Rerun> {
    Some(Rerun { kind: RerunKind::Edit, message_id: message_id.into() })
}

fn regenerate(message_id: &str) -> Option<Rerun> {
    Some(Rerun { kind: RerunKind::Regenerate, message_id: message_id.into() })
}

/// Sends and waits for the run to end; the transcript shown after it.
async fn run(chat: &std::sync::Arc<Chat>, request: ChatRequest) -> SessionDetail {
    let session = request.session_id.clone();
    chat.send(request).await.expect("the send starts a run");
    until_idle(&chat.live(&session).await.unwrap()).await;
    chat.detail(&session).await.unwrap()
}

fn shown(detail: &SessionDetail) -> Vec<String> {
    detail.messages.iter().map(ChatMessage::text).collect()
}

fn id_of(detail: &SessionDetail, text: &str) -> String {
    detail.messages.iter().find(|m| m.text() == text).map(|m| m.id.clone()).expect("the message is shown")
}

#[tokio::test]
async fn editing_the_first_message_runs_without_the_conversation_after_it_and_keeps_the_old_branch() {
    let dir = tempfile::tempdir().unwrap();
    let chat = chat_playing(COUNTING, dir.path()).await;
    let session = chat.create_session(None, None).await.unwrap().session_id;
    run(&chat, send(&session, "one", None)).await;
    let before = run(&chat, send(&session, "two", None)).await;
    assert_eq!(shown(&before), ["one", "saw 0", "two", "saw 1"]);

    let edited = run(&chat, send(&session, "uno", edit(&id_of(&before, "one")))).await;
    assert_eq!(shown(&edited), ["uno", "saw 0"], "the edited message is answered from an empty conversation");
    let branches = edited.branches.clone().expect("the old branch is kept");
    assert_eq!(branches.forks.len(), 1);
    assert_eq!(branches.forks[0].parent_id, None);
    assert_eq!(branches.forks[0].children, [id_of(&before, "one"), id_of(&edited, "uno")]);
    let kept: Vec<String> = branches.shelved.iter().map(|s| s.message.text()).collect();
    assert_eq!(kept, ["one", "saw 0", "two", "saw 1"]);

    // Back to the first version: the runtime follows the branch on screen.
    let switched = chat.show_branch(&session, &id_of(&before, "one")).await.unwrap();
    assert_eq!(switched.message_id, id_of(&before, "saw 1"), "the switch shows the branch down to its end");
    assert!(switched.seq.is_some());
    let back = run(&chat, send(&session, "three", None)).await;
    assert_eq!(shown(&back), ["one", "saw 0", "two", "saw 1", "three", "saw 2"]);

    let live = chat.live(&session).await.unwrap();
    let kept = chat.sessions.transcript(&live).await.unwrap().snapshot;
    assert_eq!(kept, chat.sessions.replay(&session).await.unwrap().snapshot, "the log rebuilds the same tree");
}

#[tokio::test]
async fn editing_a_later_message_keeps_what_came_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let chat = chat_playing(COUNTING, dir.path()).await;
    let session = chat.create_session(None, None).await.unwrap().session_id;
    run(&chat, send(&session, "one", None)).await;
    let before = run(&chat, send(&session, "two", None)).await;
    let edited = run(&chat, send(&session, "dos", edit(&id_of(&before, "two")))).await;
    assert_eq!(shown(&edited), ["one", "saw 0", "dos", "saw 1"]);
}

#[tokio::test]
async fn regenerating_answers_the_same_message_again_as_a_sibling_answer() {
    let dir = tempfile::tempdir().unwrap();
    let chat = chat_playing(COUNTING, dir.path()).await;
    let session = chat.create_session(None, None).await.unwrap().session_id;
    run(&chat, send(&session, "one", None)).await;
    let before = run(&chat, send(&session, "two", None)).await;
    let again = run(&chat, send(&session, "", regenerate(&id_of(&before, "two")))).await;
    assert_eq!(shown(&again), ["one", "saw 0", "two", "saw 1"], "no second copy of the question");
    let answers = &again.branches.as_ref().expect("the old answer is kept").forks[0];
    assert_eq!(answers.parent_id.as_deref(), Some(id_of(&before, "two").as_str()));
    assert_eq!(answers.children.len(), 2);
    assert_eq!(answers.children[0], id_of(&before, "saw 1"));
    assert_ne!(answers.children[1], answers.children[0]);

    let log = chat.sessions.replay(&session).await.unwrap().snapshot;
    assert_eq!(log.tree.siblings(&answers.children[1]).map(|s| s.ids.len()), Some(2));
}

#[tokio::test]
async fn a_rerun_names_a_user_message_of_the_session_and_waits_for_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let chat = chat_playing(r#"{"delayMs": 200, "chunkChars": 1, "turns": [{"text": "slowly"}]}"#, dir.path()).await;
    let session = chat.create_session(None, None).await.unwrap().session_id;
    let unknown = chat.send(send(&session, "x", edit("msg-nope"))).await.map(|_| ());
    assert!(matches!(unknown, Err(ChatError::UnknownMessage(_))), "{unknown:?}");

    chat.send(send(&session, "one", None)).await.unwrap();
    let detail = chat.detail(&session).await.unwrap();
    let asked = id_of(&detail, "one");
    let busy = chat.send(send(&session, "uno", edit(&asked))).await.map(|_| ());
    assert!(matches!(busy, Err(ChatError::RunInProgress)), "{busy:?}");
    let steering =
        ChatRequest { streaming_behavior: Some(StreamingBehavior::Steer), ..send(&session, "uno", edit(&asked)) };
    assert!(matches!(chat.send(steering).await.map(|_| ()), Err(ChatError::RerunWhileStreaming)));
    let switch = chat.show_branch(&session, &asked).await.map(|_| ());
    assert!(matches!(switch, Err(ChatError::SessionBusy)), "{switch:?}");

    chat.abort(&session).await.unwrap();
    until_idle(&chat.live(&session).await.unwrap()).await;
    let answer = chat.detail(&session).await.unwrap().messages[1].id.clone();
    let not_user = chat.send(send(&session, "x", edit(&answer))).await.map(|_| ());
    assert!(matches!(not_user, Err(ChatError::NotAUserMessage(_))), "{not_user:?}");
    let unknown = chat.show_branch(&session, "msg-nope").await.map(|_| ());
    assert!(matches!(unknown, Err(ChatError::UnknownMessage(_))), "{unknown:?}");
}

#[tokio::test]
async fn the_branch_route_answers_the_logged_frame_or_a_message() {
    let app = TestApp::playing(COUNTING).await;
    let session = app.new_session().await;
    let missing = app.call(post(&format!("/api/sessions/{session}/branch"), r#"{"messageId": "msg-nope"}"#)).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(json_body(missing).await["message"].as_str().unwrap().contains("msg-nope"));
    let malformed = app.call(post(&format!("/api/sessions/{session}/branch"), r#"{"id": 1}"#)).await;
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);
    assert!(json_body(malformed).await["message"].is_string());
    let models = json_body(app.call(super::app::get("/api/models")).await).await;
    assert!(models.get("rerunUnavailable").is_none(), "the built-in agent can branch: {models}");
}

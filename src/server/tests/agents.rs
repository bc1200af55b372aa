//! Agents chosen per session (DESIGN §12), through the router: a session is bound to its agent when it is created or
//! by its first send, keeps it for life (forks too), and a send that names another, an unknown one, or one the server
//! no longer offers is refused with a message that says which agents there are.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};

use super::app::{TestApp, body_bytes, get, json_body, post, scripted_models};
use crate::protocol::*;
use crate::runtime::builtin::AgentRuntime;
use crate::runtime::pi::{PiConfig, PiRuntime};
use crate::runtime::registry::{AgentEntry, Agents};
use crate::server::chat::{Chat, ChatConfig};
use crate::store::{Append, SqliteStore};

/// Each built-in agent of the app plays a script that names it, so an answer says which agent ran.
fn answering(name: &str) -> String {
    format!(r#"{{"delayMs": 1, "turns": [{{"text": "Answered by {name}."}}]}}"#)
}

/// An app offering the built-in agent as `agent` and again as `other` (each answering with its name), and pi (never
/// started here: it shows an agent that cannot compact and picks its own models); `default` names the default.
async fn app_with_agents(default: Option<&str>) -> (TestApp, Arc<Chat>) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = Arc::new(SqliteStore::open(dir.path()).expect("the store opens"));
    let builtin = |name: &str| AgentEntry {
        name: name.to_owned(),
        runtime: Arc::new(AgentRuntime::new(scripted_models(&answering(name)))),
    };
    let pi = AgentEntry { name: "pi".into(), runtime: Arc::new(PiRuntime::new(PiConfig::default())) };
    let agents = Agents::new(vec![builtin("agent"), builtin("other"), pi], default).expect("three agents");
    let config = ChatConfig {
        data_dir: dir.path().into(),
        workspace: None,
        keepalive: Duration::from_secs(15),
        lease_ttl: Duration::from_secs(15),
        checkpoint_file_limit: 1 << 20,
        attachments: AttachmentLimits::default(),
    };
    let chat = Chat::open(store, agents, scripted_models(&answering("agent")), config).await.expect("the chat opens");
    (TestApp::over(chat.clone(), dir), chat)
}

async fn answer(app: &TestApp, request: Request<Body>) -> (StatusCode, Value) {
    let response = app.call(request).await;
    let status = response.status();
    (status, json_body(response).await)
}

/// Creates a session with `body` (`POST /api/sessions`) and returns it.
async fn created(app: &TestApp, body: Value) -> Value {
    let (status, created) = answer(app, post("/api/sessions", &body.to_string())).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    created["session"].clone()
}

/// Sends `message` to the session, naming `agent` if given, and reads the run's stream to its end (so the run is
/// over); the status, and the body of a refusal.
async fn send(app: &TestApp, session: &str, message: &str, agent: Option<&str>) -> (StatusCode, Option<Value>) {
    let mut body = json!({ "sessionId": session, "message": message });
    if let Some(agent) = agent {
        body["agent"] = json!(agent);
    }
    let response = app.call(post("/api/chat", &body.to_string())).await;
    let status = response.status();
    let bytes = body_bytes(response).await;
    let refusal = (status != StatusCode::OK).then(|| serde_json::from_slice(&bytes).expect("a refusal is JSON"));
    (status, refusal)
}

async fn detail(app: &TestApp, session: &str) -> Value {
    let (status, detail) = answer(app, get(&format!("/api/sessions/{session}"))).await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    detail
}

/// The texts of the session's messages, in order.
async fn said(app: &TestApp, session: &str) -> Vec<String> {
    let detail = detail(app, session).await;
    let messages: Vec<ChatMessage> = serde_json::from_value(detail["messages"].clone()).expect("messages");
    messages.iter().map(ChatMessage::text).collect()
}

/// The session's agent as the sidebar's list says it (`GET /api/sessions`).
async fn listed_agent(app: &TestApp, session: &str) -> Value {
    let (_, list) = answer(app, get("/api/sessions")).await;
    let listed = list["sessions"].as_array().unwrap().iter().find(|s| s["sessionId"] == session).cloned();
    listed.expect("the session is listed").get("agent").cloned().unwrap_or(Value::Null)
}

fn id(session: &Value) -> String {
    session["sessionId"].as_str().expect("a session id").to_owned()
}

/// Asserts a 422 whose message says all of `words`.
fn refused_saying(answer: (StatusCode, Option<Value>), words: &[&str]) {
    let (status, body) = answer;
    let message = body.as_ref().and_then(|body| body["message"].as_str()).unwrap_or_default().to_owned();
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{message}");
    for word in words {
        assert!(message.contains(word), "{message:?} does not say {word:?}");
    }
}

#[tokio::test]
async fn a_session_created_with_an_agent_runs_on_it() {
    let (app, _chat) = app_with_agents(None).await;
    let session = created(&app, json!({ "agent": "other" })).await;
    assert_eq!(session["agent"], "other");
    let session = id(&session);
    assert_eq!(send(&app, &session, "hello", None).await.0, StatusCode::OK);
    assert_eq!(said(&app, &session).await, ["hello", "Answered by other."]);
    assert_eq!(send(&app, &session, "again", Some("other")).await.0, StatusCode::OK, "naming its own agent is fine");
    assert_eq!(listed_agent(&app, &session).await, "other");
    assert_eq!(detail(&app, &session).await["session"]["agent"], "other");
}

#[tokio::test]
async fn the_first_send_binds_a_session_without_an_agent_to_the_one_it_names_or_the_default() {
    let (app, _chat) = app_with_agents(Some("other")).await;
    let named = created(&app, json!({})).await;
    assert!(named.get("agent").is_none(), "no agent until the first send: {named}");
    let named = id(&named);
    assert_eq!(send(&app, &named, "hello", Some("agent")).await.0, StatusCode::OK);
    assert_eq!(said(&app, &named).await, ["hello", "Answered by agent."]);
    assert_eq!(listed_agent(&app, &named).await, "agent");

    let unnamed = id(&created(&app, json!({})).await);
    assert_eq!(send(&app, &unnamed, "hello", None).await.0, StatusCode::OK);
    assert_eq!(said(&app, &unnamed).await, ["hello", "Answered by other."], "--default-agent other");
    assert_eq!(listed_agent(&app, &unnamed).await, "other");
}

#[tokio::test]
async fn a_send_naming_another_agent_than_the_sessions_is_refused_and_changes_nothing() {
    let (app, _chat) = app_with_agents(None).await;
    let session = id(&created(&app, json!({ "agent": "other" })).await);
    refused_saying(send(&app, &session, "hello", Some("agent")).await, &["this session runs on other", "agent"]);
    assert!(said(&app, &session).await.is_empty(), "nothing was logged");

    // Bound by a first send, the same holds.
    let bound = id(&created(&app, json!({})).await);
    assert_eq!(send(&app, &bound, "hello", None).await.0, StatusCode::OK);
    refused_saying(send(&app, &bound, "switch", Some("other")).await, &["this session runs on agent"]);
    assert_eq!(said(&app, &bound).await.len(), 2, "the refused send logged nothing");
    assert_eq!(listed_agent(&app, &bound).await, "agent");
}

#[tokio::test]
async fn an_unknown_agent_is_refused_with_the_list_of_agents() {
    let (app, _chat) = app_with_agents(None).await;
    let (status, body) = answer(&app, post("/api/sessions", r#"{"agent": "goose"}"#)).await;
    refused_saying((status, Some(body)), &["goose", "agent, other, pi"]);
    let (_, list) = answer(&app, get("/api/sessions")).await;
    assert_eq!(list["sessions"], json!([]), "no session was made");

    let session = id(&created(&app, json!({})).await);
    refused_saying(send(&app, &session, "hello", Some("goose")).await, &["goose", "agent, other, pi"]);
    assert_eq!(listed_agent(&app, &session).await, Value::Null, "a refused send binds nothing");
}

#[tokio::test]
async fn the_agents_route_lists_each_agent_with_its_models_and_what_it_cannot_do() {
    let (app, _chat) = app_with_agents(Some("other")).await;
    let (status, agents) = answer(&app, get("/api/agents")).await;
    assert_eq!(status, StatusCode::OK);
    let agents: AgentsResponse = serde_json::from_value(agents).expect("an AgentsResponse");
    assert_eq!(agents.default, "other");
    let names: Vec<&str> = agents.agents.iter().map(|agent| agent.name.as_str()).collect();
    assert_eq!(names, ["agent", "other", "pi"], "in the order the server offers them");
    assert_eq!(agents.agents[0].models, Some(vec!["scripted".to_owned()]), "the built-in agent's catalog");
    assert_eq!((&agents.agents[0].rerun_unavailable, &agents.agents[0].compact_unavailable), (&None, &None));
    let pi = &agents.agents[2];
    assert_eq!(pi.models, None, "pi picks its own model");
    assert!(pi.compact_unavailable.as_deref().is_some_and(|why| why.contains("compact")), "{pi:?}");
    assert_eq!(answer(&app, get("/api/health")).await.1["runtime"], "agent", "the default agent's runtime");
}

#[tokio::test]
async fn a_fork_keeps_the_agent_of_the_session_it_came_from() {
    let (app, _chat) = app_with_agents(None).await;
    let session = id(&created(&app, json!({ "agent": "other" })).await);
    assert_eq!(send(&app, &session, "hello", None).await.0, StatusCode::OK);
    let answer_id = detail(&app, &session).await["messages"][1]["id"].as_str().unwrap().to_owned();
    let (status, fork) =
        answer(&app, post(&format!("/api/sessions/{session}/fork"), &json!({ "messageId": answer_id }).to_string()))
            .await;
    assert_eq!(status, StatusCode::CREATED, "{fork}");
    assert_eq!(fork["session"]["agent"], "other");
    let fork = id(&fork["session"]);
    assert_eq!(send(&app, &fork, "and then", None).await.0, StatusCode::OK);
    assert_eq!(said(&app, &fork).await, ["hello", "Answered by other.", "and then", "Answered by other."]);
}

/// A user message logged as a session from before agents had names logged it.
fn old_prompt(session: &str) -> Append {
    let message = ChatMessage {
        id: "old-1".into(),
        role: Role::User,
        parts: vec![ChatMessagePart::Text(TextPart { text: "from before".into() })],
        created_at: Some(1),
        changes: None,
        usage: None,
    };
    Append {
        session_id: session.into(),
        run_id: None,
        frames: vec![ChatFrame::Message(MessageFrame { seq: None, message })],
        ends_run: None,
        lease: None,
        now: 1,
    }
}

#[tokio::test]
async fn a_session_from_before_agents_had_names_runs_on_the_default_and_stays_on_it() {
    let (app, chat) = app_with_agents(Some("other")).await;
    chat.store.create_session("old", "Old", None, 1).await.unwrap();
    chat.store.append(old_prompt("old")).await.unwrap();
    assert_eq!(listed_agent(&app, "old").await, Value::Null);
    refused_saying(send(&app, "old", "switch", Some("agent")).await, &["this session runs on other"]);
    assert_eq!(listed_agent(&app, "old").await, Value::Null, "a refused send binds nothing");

    assert_eq!(send(&app, "old", "hello", None).await.0, StatusCode::OK);
    assert_eq!(said(&app, "old").await, ["from before", "hello", "Answered by other."]);
    assert_eq!(listed_agent(&app, "old").await, "other", "its next send bound it to the agent it ran on");
}

#[tokio::test]
async fn a_session_whose_agent_is_no_longer_offered_is_refused_by_name_and_never_moved() {
    let (app, chat) = app_with_agents(None).await;
    chat.store.create_session("gone", "", Some("goose"), 1).await.unwrap();
    chat.store.append(old_prompt("gone")).await.unwrap();
    refused_saying(send(&app, "gone", "hello", None).await, &["runs on goose", "agent, other, pi"]);
    assert_eq!(said(&app, "gone").await, ["from before"], "nothing ran, and the transcript still opens");
    assert_eq!(listed_agent(&app, "gone").await, "goose");
    let (status, body) = answer(&app, post("/api/sessions/gone/fork", r#"{"messageId": "old-1"}"#)).await;
    refused_saying((status, Some(body)), &["runs on goose"]);
}

#[tokio::test]
async fn an_agent_without_conversations_of_its_own_says_so_and_an_import_needs_an_agent() {
    let (app, _chat) = app_with_agents(None).await;
    let (_, agents) = answer(&app, get("/api/agents")).await;
    let why = agents["agents"][2]["openUnavailable"].as_str().expect("pi cannot open its own sessions here");
    assert!(why.contains("pi"), "{why}");
    let (status, body) = answer(&app, get("/api/agents/pi/conversations")).await;
    assert_eq!((status, body["message"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some(why)));
    let (status, body) = answer(&app, get("/api/agents/goose/conversations")).await;
    refused_saying((status, Some(body)), &["goose", "agent, other, pi"]);
    let (status, body) = answer(&app, post("/api/sessions", r#"{"agent": "pi", "conversation": "ses_1"}"#)).await;
    assert_eq!((status, body["message"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some(why)));
    let (status, body) = answer(&app, post("/api/sessions", r#"{"conversation": "ses_1"}"#)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["message"].as_str().unwrap().contains("agent"), "{body}");
    let (_, list) = answer(&app, get("/api/sessions")).await;
    assert_eq!(list["sessions"], json!([]), "no session was made");
}

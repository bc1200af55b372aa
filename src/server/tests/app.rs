//! A whole app over a temporary data dir, on the scripted provider, and the requests the tests send it.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response, StatusCode};
use tower::ServiceExt;

use crate::runtime::Runtime;
use crate::runtime::agent::{Agent, AgentConfig};
use crate::runtime::builtin::AgentRuntime;
use crate::runtime::models::{ModelCatalog, ModelEntry};
use crate::runtime::registry::Agents;
use crate::runtime::scripted::{Script, ScriptedProvider};
use crate::server::assets::SiteAssets;
use crate::server::chat::{Chat, ChatConfig};
use crate::server::http::{AppState, router};
use crate::server::security::Security;
use crate::store::SqliteStore;

pub const TOKEN: &str = "in-process-token";
pub const HOST: &str = "127.0.0.1:3000";

pub struct TestApp {
    pub router: Router,
    _dir: tempfile::TempDir,
}

impl TestApp {
    /// An app playing `script` (the scripted provider's JSON).
    pub async fn playing(script: &str) -> TestApp {
        TestApp::with_keepalive(script, Duration::from_secs(15)).await
    }

    /// Like `playing`, with quiet streams getting a keepalive every `keepalive`.
    pub async fn with_keepalive(script: &str, keepalive: Duration) -> TestApp {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let chat = chat_with(script, dir.path(), keepalive).await;
        TestApp::over(chat, dir)
    }

    /// The app of a chat the test made over `dir` (which the app keeps until it is dropped).
    pub fn over(chat: Arc<Chat>, dir: tempfile::TempDir) -> TestApp {
        let security = Arc::new(Security {
            token: Some(TOKEN.into()),
            allowed_hosts: vec!["127.0.0.1".into(), "localhost".into()],
        });
        let leptos = leptos::prelude::LeptosOptions::builder().output_name("chatwire").site_root("target/site").build();
        let assets = SiteAssets::detect(dir.path().join("no-site"));
        let state = AppState { leptos, assets, chat, security };
        TestApp { router: router(state), _dir: dir }
    }

    /// The data dir: sessions' workspaces are `workspaces/<session id>` in it.
    pub fn data_dir(&self) -> &std::path::Path {
        self._dir.path()
    }

    pub async fn call(&self, request: Request<Body>) -> Response<Body> {
        self.router.clone().oneshot(request).await.expect("the router is infallible")
    }

    pub async fn new_session(&self) -> String {
        let response = self.call(post("/api/sessions", "{}")).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let body = json_body(response).await;
        body["session"]["sessionId"].as_str().expect("a session id").to_owned()
    }
}

/// The chat core over a store in `dir`, playing `script` (the scripted provider's JSON).
pub async fn chat_playing(script: &str, dir: &std::path::Path) -> Arc<Chat> {
    chat_with(script, dir, Duration::from_secs(15)).await
}

async fn chat_with(script: &str, dir: &std::path::Path, keepalive: Duration) -> Arc<Chat> {
    chat_on(script, dir, keepalive, |models| Arc::new(AgentRuntime::new(models))).await
}

/// A plain send of `message` to the session: no request id, mode, model, queueing or rerun.
pub fn chat_request(session_id: &str, message: &str) -> crate::protocol::ChatRequest {
    crate::protocol::ChatRequest {
        session_id: session_id.into(),
        message: message.into(),
        request_id: None,
        mode: None,
        plan_action: None,
        model: None,
        streaming_behavior: None,
        attachments: None,
        rerun: None,
        command: None,
        agent: None,
    }
}

/// Waits (up to 20 s) until the session has no run in progress.
pub async fn until_idle(live: &crate::server::chat::SessionLive) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while live.active_run_id().is_some() {
        assert!(tokio::time::Instant::now() < deadline, "the session's runs never ended");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The scripted models of `script`, for a runtime the test builds itself.
pub fn scripted_models(script: &str) -> Arc<ModelCatalog> {
    let provider = Arc::new(ScriptedProvider::new(Script::parse(script).expect("the test's script parses")));
    let agent = Arc::new(Agent::new(provider, AgentConfig::default()));
    let entry = ModelEntry {
        name: "scripted".into(),
        provider: "scripted".into(),
        model: "test".into(),
        context_window: 128_000,
        agent,
    };
    Arc::new(ModelCatalog::new(vec![entry]).expect("one model is a catalog"))
}

/// The chat core over a store in `dir`, on the runtime `runtime` makes of the scripted models.
pub async fn chat_on(
    script: &str,
    dir: &std::path::Path,
    keepalive: Duration,
    runtime: impl FnOnce(Arc<ModelCatalog>) -> Arc<dyn Runtime>,
) -> Arc<Chat> {
    let store = Arc::new(SqliteStore::open(dir).expect("the store opens"));
    chat_over(store, script, dir, keepalive, runtime).await
}

/// The chat core over `store` (which other chats may share), keeping workspaces in `dir`.
pub async fn chat_over(
    store: Arc<dyn crate::store::Store>,
    script: &str,
    dir: &std::path::Path,
    keepalive: Duration,
    runtime: impl FnOnce(Arc<ModelCatalog>) -> Arc<dyn Runtime>,
) -> Arc<Chat> {
    let models = scripted_models(script);
    let config = ChatConfig {
        data_dir: dir.into(),
        workspace: None,
        keepalive,
        lease_ttl: Duration::from_secs(15),
        checkpoint_file_limit: 1 << 20,
        attachments: crate::protocol::AttachmentLimits::default(),
    };
    Chat::open(store, Agents::single(runtime(models.clone())), models, config).await.expect("the chat opens")
}

/// A request the guard lets through: the right Host and token.
pub fn request(method: &str, uri: &str) -> axum::http::request::Builder {
    Request::builder().method(method).uri(uri).header("host", HOST).header("authorization", format!("Bearer {TOKEN}"))
}

pub fn get(uri: &str) -> Request<Body> {
    request("GET", uri).body(Body::empty()).expect("a valid request")
}

pub fn post(uri: &str, json: &str) -> Request<Body> {
    request("POST", uri)
        .header("content-type", "application/json")
        .body(Body::from(json.to_owned()))
        .expect("a valid request")
}

pub async fn body_bytes(response: Response<Body>) -> Vec<u8> {
    axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("the body is read").to_vec()
}

pub async fn json_body(response: Response<Body>) -> serde_json::Value {
    let bytes = body_bytes(response).await;
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)))
}

//! Attachments in-process: `POST /api/attachments` and what it refuses, `GET /api/attachments/{id}`, and a send's
//! files logged with its message and handed to the model (or refused by a model that takes no images).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::app::{TestApp, body_bytes, chat_request, json_body, post, request, until_idle};
use crate::protocol::*;
use crate::runtime::agent::{Agent, AgentConfig};
use crate::runtime::builtin::AgentRuntime;
use crate::runtime::models::{ModelCatalog, ModelEntry};
use crate::runtime::provider::{ModelMessage, ModelRequest, ModelStop, Provider, ProviderFuture, StreamEvent};
use crate::runtime::registry::Agents;
use crate::server::chat::{Chat, ChatConfig, ChatError};
use crate::store::SqliteStore;

const QUICK: &str = r#"{"delayMs": 0, "turns": [{"text": "Seen."}]}"#;
/// The smallest PNG there is: a 1×1 transparent pixel.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc\xf8\x0f\0\x01\x01\x01\0\x18\xdd\x8d\xb4\0\0\0\0IEND\xaeB`\x82";

fn upload(name: &str, declared: &str, bytes: &[u8]) -> Request<Body> {
    let uri = format!("/api/attachments?name={}&type={}", name.replace(' ', "%20"), declared.replace('+', "%2B"));
    let request = request("POST", &uri).header("content-type", "application/octet-stream");
    request.body(Body::from(bytes.to_vec())).expect("a request")
}

async fn uploaded(app: &TestApp, name: &str, content_type: &str, bytes: &[u8]) -> (StatusCode, Value) {
    let response = app.call(upload(name, content_type, bytes)).await;
    let status = response.status();
    (status, json_body(response).await)
}

#[tokio::test]
async fn an_image_is_kept_by_its_bytes_and_served_back_as_it_was() {
    let app = TestApp::playing(QUICK).await;
    let (status, kept) = uploaded(&app, "dot.png", "image/png", PNG).await;
    assert_eq!(status, StatusCode::OK, "{kept}");
    let id = kept["id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 64);
    assert_eq!(kept, json!({"id": id, "name": "dot.png", "mediaType": "image/png", "size": PNG.len()}));
    // The same bytes again are the same file, under whatever name.
    let (_, again) = uploaded(&app, "copy.png", "image/png", PNG).await;
    assert_eq!(again["id"], kept["id"]);

    let response = app.call(super::app::get(&format!("/api/attachments/{id}"))).await;
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    assert_eq!(headers["content-type"], "image/png");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert!(headers["content-security-policy"].to_str().unwrap().starts_with("sandbox"));
    assert!(headers["cache-control"].to_str().unwrap().contains("immutable"));
    assert_eq!(body_bytes(response).await, PNG);

    let (status, text) = uploaded(&app, "notes.md", "text/markdown", "# Notes\n<script>x</script>\n".as_bytes()).await;
    assert_eq!((status, text["mediaType"].as_str()), (StatusCode::OK, Some("text/plain")));
    let served = app.call(super::app::get(&format!("/api/attachments/{}", text["id"].as_str().unwrap()))).await;
    assert_eq!(served.headers()["content-type"], "text/plain; charset=utf-8");

    for missing in ["0".repeat(64), "../../etc/passwd".into(), "abc".into()] {
        let response = app.call(super::app::get(&format!("/api/attachments/{missing}"))).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{missing}");
        assert!(json_body(response).await["message"].is_string());
    }
}

#[tokio::test]
async fn bad_uploads_are_refused_with_a_message_that_names_the_file() {
    let app = TestApp::playing(QUICK).await;
    let too_big = vec![b'a'; (AttachmentLimits::default().per_file + 1) as usize];
    let cases: [(&str, &str, &[u8], StatusCode, &str); 6] = [
        ("fake.png", "image/png", b"not a png at all", StatusCode::BAD_REQUEST, "fake.png is not a PNG image"),
        ("fake.jpg", "", b"hello", StatusCode::BAD_REQUEST, "fake.jpg is not a JPEG image"),
        ("empty.txt", "text/plain", b"", StatusCode::BAD_REQUEST, "empty.txt is empty"),
        ("a.out", "application/octet-stream", b"\x7fELF\0\x01", StatusCode::BAD_REQUEST, "a.out is neither an image"),
        ("logo.svg", "image/svg+xml", b"<svg/>", StatusCode::BAD_REQUEST, "logo.svg is image/svg+xml"),
        (
            "huge.log",
            "text/plain",
            &too_big,
            StatusCode::PAYLOAD_TOO_LARGE,
            "huge.log is 5 MiB; a file may be at most 5 MiB",
        ),
    ];
    for (name, content_type, bytes, status, words) in cases {
        let (got, body) = uploaded(&app, name, content_type, bytes).await;
        assert_eq!(got, status, "{name}: {body}");
        let message = body["message"].as_str().unwrap();
        assert!(message.starts_with(words), "{name}: {message}");
    }
    let (status, body) = uploaded(&app, "%2F..%2F", "text/plain", b"x").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let nameless = request("POST", "/api/attachments").header("content-type", "application/octet-stream");
    assert_eq!(app.call(nameless.body(Body::from("x")).unwrap()).await.status(), StatusCode::BAD_REQUEST);
    // A form of another site can send text/plain; an upload must come as bytes, which it cannot.
    let as_form = request("POST", "/api/attachments?name=a.txt").header("content-type", "text/plain");
    assert_eq!(app.call(as_form.body(Body::from("x")).unwrap()).await.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

#[tokio::test]
async fn a_send_logs_its_files_with_the_message_and_refuses_ones_it_does_not_keep() {
    let app = TestApp::playing(QUICK).await;
    let session = app.new_session().await;
    let (_, image) = uploaded(&app, "dot.png", "image/png", PNG).await;
    let (_, text) = uploaded(&app, "notes.txt", "text/plain", b"remember the milk").await;
    let refs = json!([{"id": image["id"], "name": "dot.png"}, {"id": text["id"], "name": "notes.txt"}]);
    let send = |attachments: Value, message: &str| {
        post("/api/chat", &json!({"sessionId": session, "message": message, "attachments": attachments}).to_string())
    };
    let unknown = json!([{"id": "f".repeat(64), "name": "gone.png"}]);
    let response = app.call(send(unknown, "look")).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(json_body(response).await["message"].as_str().unwrap().starts_with("gone.png is not kept on this server"));

    // Files alone are a message.
    let response = app.call(send(refs.clone(), "")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let _ = body_bytes(response).await;
    let detail = json_body(app.call(super::app::get(&format!("/api/sessions/{session}"))).await).await;
    let prompt = &detail["messages"][0];
    assert_eq!(prompt["role"], "user");
    assert_eq!(
        prompt["parts"],
        json!([
            {"type": "file", "id": image["id"], "name": "dot.png", "mediaType": "image/png", "size": PNG.len()},
            {"type": "file", "id": text["id"], "name": "notes.txt", "mediaType": "text/plain", "size": 17},
        ])
    );
    // A steer cannot carry files: they start a run of their own.
    let steer = json!({"sessionId": session, "message": "and this", "attachments": refs, "streamingBehavior": "steer"});
    let response = app.call(post("/api/chat", &steer.to_string())).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
}

/// A provider that answers "ok" and keeps what each call was sent.
#[derive(Default)]
struct Recording {
    requests: Mutex<Vec<ModelRequest>>,
}

impl Provider for Recording {
    fn name(&self) -> &str {
        "recording"
    }

    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
        sink: &'a mut (dyn FnMut(StreamEvent) + Send),
        _cancel: &'a CancellationToken,
    ) -> ProviderFuture<'a> {
        self.requests.lock().unwrap().push(request.clone());
        sink(StreamEvent::TextDelta("ok".into()));
        Box::pin(std::future::ready(Ok(ModelStop::Stop)))
    }
}

fn entry(name: &str, provider: Arc<Recording>, takes_images: bool) -> ModelEntry {
    let agent = Arc::new(Agent::new(provider, AgentConfig { takes_images, ..AgentConfig::default() }));
    ModelEntry { name: name.into(), provider: "recording".into(), model: name.into(), context_window: 8_000, agent }
}

async fn recording_chat(dir: &std::path::Path, provider: &Arc<Recording>) -> Arc<Chat> {
    let models = Arc::new(
        ModelCatalog::new(vec![entry("sees", provider.clone(), true), entry("blind", provider.clone(), false)])
            .unwrap(),
    );
    let config = ChatConfig {
        data_dir: dir.into(),
        workspace: None,
        keepalive: Duration::from_secs(15),
        lease_ttl: Duration::from_secs(15),
        checkpoint_file_limit: 0,
        attachments: AttachmentLimits::default(),
    };
    let store = Arc::new(SqliteStore::open(dir).unwrap());
    Chat::open(store, Agents::single(Arc::new(AgentRuntime::new(models.clone()))), models, config).await.unwrap()
}

#[tokio::test]
async fn the_model_gets_images_as_images_and_text_files_in_the_text_also_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(Recording::default());
    let chat = recording_chat(dir.path(), &provider).await;
    let image = chat.keep_attachment("dot.png", "image/png", PNG.to_vec()).await.unwrap();
    let text = chat.keep_attachment("notes.txt", "", b"remember the milk".to_vec()).await.unwrap();
    let session = chat.create_session(None, None).await.unwrap().session_id;
    let refs = [&image, &text].map(|file| AttachmentRef { id: file.id.clone(), name: file.name.clone() });
    let send = ChatRequest { attachments: Some(refs.to_vec()), ..chat_request(&session, "what is this?") };
    chat.send(send).await.unwrap();
    until_idle(&chat.live(&session).await.unwrap()).await;
    let sent = |at: usize| provider.requests.lock().unwrap()[at].messages[0].clone();
    let ModelMessage::User { text: prompt, images } = sent(0) else { panic!("a user message first") };
    assert_eq!(prompt, "what is this?\n\n```notes.txt\nremember the milk\n```");
    assert_eq!(images.len(), 1);
    assert_eq!((images[0].media_type.as_str(), &*images[0].bytes), ("image/png", PNG));

    // A new chat core over the same store rebuilds the conversation from the log, files and all.
    drop(chat);
    let chat = recording_chat(dir.path(), &provider).await;
    chat.send(chat_request(&session, "and now?")).await.unwrap();
    until_idle(&chat.live(&session).await.unwrap()).await;
    assert_eq!(sent(1), sent(0), "the first message reaches the model the same after the restart");
}

#[tokio::test]
async fn a_model_that_takes_no_images_ends_the_run_with_an_error_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(Recording::default());
    let chat = recording_chat(dir.path(), &provider).await;
    let image = chat.keep_attachment("dot.png", "image/png", PNG.to_vec()).await.unwrap();
    let session = chat.create_session(None, None).await.unwrap().session_id;
    let refs = vec![AttachmentRef { id: image.id.clone(), name: "dot.png".into() }];
    let send = ChatRequest { attachments: Some(refs), model: Some("blind".into()), ..chat_request(&session, "see?") };
    chat.send(send).await.unwrap();
    until_idle(&chat.live(&session).await.unwrap()).await;
    assert!(provider.requests.lock().unwrap().is_empty(), "the model was not called");
    let detail = chat.detail(&session).await.unwrap();
    let error = detail.messages.iter().flat_map(|m| &m.parts).find_map(|part| match part {
        ChatMessagePart::Error(error) => Some(error.message.clone()),
        ChatMessagePart::Text(_)
        | ChatMessagePart::Thinking(_)
        | ChatMessagePart::File(_)
        | ChatMessagePart::Tool(_) => None,
    });
    let error = error.expect("the run ended with an error part");
    assert!(error.starts_with("the model blind does not take images, so it cannot see dot.png"), "{error}");

    // Earlier images reach such a model as a note, so a text question still gets an answer.
    let send = ChatRequest { model: Some("blind".into()), ..chat_request(&session, "then just say hi") };
    chat.send(send).await.unwrap();
    until_idle(&chat.live(&session).await.unwrap()).await;
    let first = provider.requests.lock().unwrap().last().expect("the model was called").messages[0].clone();
    assert_eq!(first, ModelMessage::user("see?\n\n[images left out, this model takes none: dot.png]"));
    let refused = chat.send(ChatRequest {
        attachments: Some(vec![AttachmentRef { id: "no".into(), name: "x.png".into() }]),
        ..chat_request(&session, "x")
    });
    assert!(matches!(refused.await, Err(ChatError::Attachment(_))));
}

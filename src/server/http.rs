//! The axum router: the server-rendered app, the JSON API of DESIGN.md §3, and the web assets.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, FromRef, Request, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_LENGTH, CONTENT_SECURITY_POLICY, CONTENT_TYPE, LINK, VARY, X_CONTENT_TYPE_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router, middleware};
use leptos::prelude::{LeptosOptions, use_context};
use leptos_axum::{ResponseOptions, render_app_to_stream_with_context};
use serde::Deserialize;
use tower_http::compression::{CompressionLayer, CompressionLevel};

use super::assets::SiteAssets;
use super::caught_panic::answer_panics;
use super::chat::{Chat, ChatError};
use super::error::ApiError;
use super::extract::{ApiJson, ApiPath, ApiQuery, MAX_BODY_BYTES};
use super::security::{Security, guard};
use super::stream::{Framing, tail_response};
use crate::app::{page_path, shell};
use crate::protocol::*;

/// Every API route, for the test that checks each one is closed without the token (all but the health check).
pub const API_ROUTES: &[&str] = &[
    "/api/health",
    "/api/models",
    "/api/agents",
    "/api/agents/{name}/conversations",
    "/api/chat",
    "/api/chat/abort",
    "/api/chat/question",
    "/api/chat/approval",
    "/api/sessions",
    "/api/sessions/{id}",
    "/api/sessions/{id}/events",
    "/api/sessions/{id}/export",
    "/api/sessions/{id}/branch",
    "/api/sessions/{id}/agent-option",
    "/api/sessions/{id}/restore",
    "/api/sessions/{id}/fork",
    "/api/sessions/{id}/changes/{key}",
    "/api/activity",
    "/api/search",
    "/api/files",
    "/api/attachments",
    "/api/attachments/{id}",
    "/api/{*rest}",
];

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub leptos: LeptosOptions,
    pub assets: SiteAssets,
    pub chat: Arc<Chat>,
    pub security: Arc<Security>,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos.clone()
    }
}

/// The whole HTTP surface as one function, so tests can build it and call it without a socket.
pub fn router(state: AppState) -> Router {
    // The page's two paths (`App` draws both); anything else is a file or a 404.
    // Compressed as it is sent, at a quality that costs well under a millisecond for its ~40 KB (the stylesheet is
    // in it): the files are compressed at build time, the API's answers are small or streamed.
    let page = get(page_handler(state.clone())).layer(CompressionLayer::new().quality(CompressionLevel::Precise(5)));
    Router::new()
        .route("/api/health", get(health))
        .route("/api/models", get(models))
        .route("/api/agents", get(agents))
        .route("/api/agents/{name}/conversations", get(agent_conversations))
        .route("/api/chat", post(send))
        .route("/api/chat/abort", post(abort))
        .route("/api/chat/question", post(answer_question))
        .route("/api/chat/approval", post(approve))
        .route("/api/sessions", get(list_sessions).post(create_session))
        .route("/api/sessions/{id}", get(session_detail).patch(rename_session).delete(delete_session))
        .route("/api/sessions/{id}/events", get(session_events))
        .route("/api/sessions/{id}/export", get(export_session))
        .route("/api/sessions/{id}/branch", post(show_branch))
        .route("/api/sessions/{id}/agent-option", post(set_agent_option))
        .route("/api/sessions/{id}/restore", post(restore_files))
        .route("/api/sessions/{id}/fork", post(fork_session))
        .route("/api/sessions/{id}/changes/{key}", get(run_changes))
        .route("/api/activity", get(activity))
        .route("/api/search", get(search))
        .route("/api/files", get(mention_files))
        .route("/api/attachments", post(upload_attachment))
        .route("/api/attachments/{id}", get(attachment_file))
        .route("/api/{*rest}", axum::routing::any(unknown_api_route))
        .route("/", page.clone())
        .route("/s/{id}", page)
        .fallback(static_file)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(state.security.clone(), guard))
        .layer(middleware::from_fn(answer_panics))
        .with_state(state)
}

/// Renders the page (streamed, out of order) for the request's path.
fn page_handler(
    state: AppState,
) -> impl Fn(Request) -> Pin<Box<dyn Future<Output = Response> + Send>> + Clone + Send + Sync + 'static {
    // Leptos runs the rendering's tasks on the executor it is given; tokio's, once per process.
    let _ = any_spawner::Executor::init_tokio();
    render_app_to_stream_with_context(
        || {},
        move || {
            let options = state.leptos.clone();
            let page_assets = state.assets.page_assets(&options.output_name, &options.site_pkg_dir);
            if page_assets.is_none() {
                tracing::error!("the page's script, WASM or stylesheet is missing from {}", state.assets.describe());
            }
            set_page_policy(&options);
            if let Some(response) = use_context::<ResponseOptions>() {
                // The page is in the language these headers pick: a cache must keep one copy per language.
                response.insert_header(VARY, HeaderValue::from_static("Accept-Language, Cookie"));
                if let Some(links) = page_assets
                    .as_ref()
                    .and_then(|assets| HeaderValue::from_str(&assets.preload_header(&page_path())).ok())
                {
                    response.insert_header(LINK, links);
                }
            }
            shell(options, page_assets)
        },
    )
}

/// The page's Content-Security-Policy, allowing exactly the inline scripts and stylesheet that carry this response's
/// nonce.
fn set_page_policy(options: &LeptosOptions) {
    let (Some(nonce), Some(response)) = (leptos::nonce::use_nonce(), use_context::<ResponseOptions>()) else {
        return;
    };
    // `cargo leptos watch` reloads the page over a websocket on its own port.
    let live_reload = if std::env::var_os("LEPTOS_WATCH").is_some() {
        format!(" ws://*:{}", options.reload_port)
    } else {
        String::new()
    };
    let policy = format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; style-src 'self' 'nonce-{nonce}'; \
         img-src 'self' data:; connect-src 'self'{live_reload}; frame-ancestors 'none'; base-uri 'none'; \
         object-src 'none'; form-action 'self'"
    );
    if let Ok(value) = HeaderValue::from_str(&policy) {
        response.insert_header(CONTENT_SECURITY_POLICY, value);
    }
}

async fn health(State(state): State<AppState>) -> Json<HealthResponse> {
    Json(HealthResponse {
        status: "ok".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        runtime: state.chat.agents.default_entry().runtime.name().into(),
    })
}

async fn models(State(state): State<AppState>) -> Json<ModelsResponse> {
    let catalog = &state.chat.models;
    let models = catalog
        .entries()
        .iter()
        .map(|entry| ModelInfo {
            name: entry.name.clone(),
            provider: entry.provider.clone(),
            model: entry.model.clone(),
            context_window: entry.context_window,
            images: entry.agent.takes_images(),
        })
        .collect();
    let rerun_unavailable = state.chat.agents.default_entry().runtime.capabilities().rerun.reason().map(str::to_owned);
    Json(ModelsResponse {
        default: catalog.default_entry().name.clone(),
        models,
        rerun_unavailable,
        attachment_limits: state.chat.config.attachments,
    })
}

/// `GET /api/agents`: what a session can run on, each with what it can do.
async fn agents(State(state): State<AppState>) -> Json<AgentsResponse> {
    let agents = &state.chat.agents;
    let agents_info = agents
        .entries()
        .iter()
        .map(|entry| {
            let capabilities = entry.runtime.capabilities();
            AgentInfo {
                name: entry.name.clone(),
                models: entry.runtime.models(),
                rerun_unavailable: capabilities.rerun.reason().map(str::to_owned),
                compact_unavailable: capabilities.compact.reason().map(str::to_owned),
                steer_unavailable: capabilities.steering.reason().map(str::to_owned),
                open_unavailable: entry
                    .runtime
                    .own_conversations(state.chat.config.workspace.as_deref())
                    .reason()
                    .map(str::to_owned),
            }
        })
        .collect();
    Json(AgentsResponse { default: agents.default_entry().name.clone(), agents: agents_info })
}

/// `GET /api/agents/{name}/conversations`: the agent's own conversations New chat can open.
async fn agent_conversations(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<AgentConversations>, ApiError> {
    Ok(Json(state.chat.agent_conversations(&name).await?))
}

async fn send(State(state): State<AppState>, headers: HeaderMap, ApiJson(request): ApiJson<ChatRequest>) -> Response {
    let session = request.session_id.clone();
    let framing = Framing::from_accept(&headers);
    let started = async {
        let tail = state.chat.send(request).await?;
        Ok::<_, ChatError>((state.chat.live(&session).await?, tail))
    };
    match started.await {
        Ok((live, tail)) => tail_response(state.chat.clone(), live, tail, framing),
        Err(error) => ApiError::from(error).into_response(),
    }
}

async fn abort(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<AbortRequest>,
) -> Result<Json<AbortResponse>, ApiError> {
    let aborted = state.chat.abort(&request.session_id).await?;
    Ok(Json(AbortResponse { ok: true, aborted }))
}

async fn answer_question(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<QuestionAnswerRequest>,
) -> Result<Json<OkResponse>, ApiError> {
    if state.chat.answer(&request.session_id, &request.tool_call_id, &request.answer).await? {
        Ok(Json(OkResponse { ok: true }))
    } else {
        Err(ApiError::NotFound(format!("question {} is no longer pending", request.tool_call_id)))
    }
}

async fn approve(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ApprovalRequest>,
) -> Result<Json<OkResponse>, ApiError> {
    if state.chat.decide(&request.session_id, &request).await? {
        Ok(Json(OkResponse { ok: true }))
    } else {
        Err(ApiError::NotFound(format!("no approval is pending for {}", request.tool_call_id)))
    }
}

async fn list_sessions(State(state): State<AppState>) -> Result<Json<SessionList>, ApiError> {
    Ok(Json(SessionList { sessions: state.chat.store.sessions().await? }))
}

async fn create_session(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<CreateSessionRequest>,
) -> Result<(StatusCode, Json<SessionCreated>), ApiError> {
    let CreateSessionRequest { title, agent, conversation } = request;
    if let Some(conversation) = conversation {
        let Some(agent) = agent else {
            return Err(ApiError::BadRequest("`conversation` needs the `agent` whose conversation it is".into()));
        };
        return Ok((StatusCode::CREATED, Json(state.chat.import_conversation(&agent, &conversation, title).await?)));
    }
    let session = state.chat.create_session(title, agent).await?;
    Ok((StatusCode::CREATED, Json(SessionCreated { session, messages: Vec::new() })))
}

async fn session_detail(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<SessionDetail>, ApiError> {
    Ok(Json(state.chat.detail(&id).await?))
}

#[derive(Deserialize)]
struct ExportQuery {
    format: Option<String>,
}

/// `GET /api/sessions/{id}/export?format=md|json`: the conversation as a download named after its title, as
/// Markdown (readable, `crate::export`) or as JSON (the session as `GET /api/sessions/{id}` returns it).
async fn export_session(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<ExportQuery>,
) -> Result<Response, ApiError> {
    let format = query.format.as_deref().unwrap_or("md");
    if format != "md" && format != "json" {
        return Err(ApiError::BadRequest(format!("unknown export format {format:?}: use md or json")));
    }
    let detail = state.chat.detail(&id).await?;
    let name = file_name(&detail.session.title);
    let (body, content_type) = if format == "json" {
        let json = serde_json::to_string_pretty(&detail).map_err(|error| ApiError::Internal(error.to_string()))?;
        (json, "application/json")
    } else {
        let messages: Vec<ChatMessage> = detail.messages.into_iter().chain(detail.pending).collect();
        (crate::export::session_markdown(&detail.session.title, &messages), "text/markdown; charset=utf-8")
    };
    let disposition = format!("attachment; filename=\"{name}.{format}\"");
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(axum::http::header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    let disposition = HeaderValue::from_str(&disposition).map_err(|error| ApiError::Internal(error.to_string()))?;
    headers.insert(axum::http::header::CONTENT_DISPOSITION, disposition);
    Ok(response)
}

/// A download's name from a session's title: letters, digits and dashes only (any other run of characters becomes
/// one dash), at most 60, so no header or file system can be surprised by it.
fn file_name(title: &str) -> String {
    let mut name = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c.to_ascii_lowercase());
        } else if !name.ends_with('-') && !name.is_empty() {
            name.push('-');
        }
        if name.len() >= 60 {
            break;
        }
    }
    let name = name.trim_end_matches('-');
    if name.is_empty() { "conversation".to_owned() } else { name.to_owned() }
}

async fn rename_session(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<RenameSessionRequest>,
) -> Result<Json<SessionSummary>, ApiError> {
    Ok(Json(state.chat.rename(&id, &request.title).await?))
}

async fn show_branch(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<ShowBranchRequest>,
) -> Result<Json<BranchFrame>, ApiError> {
    Ok(Json(state.chat.show_branch(&id, &request.message_id).await?))
}

async fn set_agent_option(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<AgentOptionRequest>,
) -> Result<Json<OkResponse>, ApiError> {
    state.chat.set_agent_option(&id, request.config_id, request.value).await?;
    Ok(Json(OkResponse { ok: true }))
}

async fn restore_files(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<RestoreRequest>,
) -> Result<Json<RestoreResponse>, ApiError> {
    Ok(Json(state.chat.restore_files(&id, &request.message_id).await?))
}

async fn fork_session(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<ForkRequest>,
) -> Result<(StatusCode, Json<ForkResponse>), ApiError> {
    Ok((StatusCode::CREATED, Json(state.chat.fork_session(&id, &request.message_id).await?)))
}

async fn run_changes(
    State(state): State<AppState>,
    ApiPath((id, key)): ApiPath<(String, String)>,
) -> Result<Json<ChangesResponse>, ApiError> {
    Ok(Json(state.chat.run_changes(&id, &key).await?))
}

async fn delete_session(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<OkResponse>, ApiError> {
    state.chat.delete(&id).await?;
    Ok(Json(OkResponse { ok: true }))
}

#[derive(Deserialize)]
struct EventsQuery {
    after: Option<Seq>,
}

async fn session_events(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<EventsQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let last_event_id = last_event_id(&headers)?;
    let live = state.chat.live(&id).await?;
    // An `EventSource` keeps its first URL (`?after=0`) and adds `Last-Event-ID` when it reconnects: the larger of
    // the two is what the client has. A cursor past the end of the log is the end of the log: nothing of it is
    // sent again, and the tail goes on from there. The end is the store's: this instance's view of it may lag
    // another instance's appends, and clamping to that would send frames the client has again.
    let end = state.chat.store.last_seq(&id).await?.unwrap_or_else(|| live.last_seq());
    let after = query.after.max(last_event_id).unwrap_or(0).min(end);
    let tail = super::chat::Tail { after, until_run: None };
    Ok(tail_response(state.chat.clone(), live, tail, Framing::from_accept(&headers)))
}

/// What happens in every session's runs, from now on (`activity::activity_response`).
async fn activity(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    Ok(super::activity::activity_response(state.chat.clone(), Framing::from_accept(&headers)).await?)
}

/// The SSE resume header, which must be a `seq` when it is given at all.
fn last_event_id(headers: &HeaderMap) -> Result<Option<Seq>, ApiError> {
    let mut values = headers.get_all("last-event-id").iter();
    let value = match (values.next(), values.next()) {
        (None, _) => return Ok(None),
        (Some(value), None) => value,
        (Some(_), Some(_)) => return Err(ApiError::BadRequest("give Last-Event-ID at most once".into())),
    };
    let text = value.to_str().unwrap_or_default().trim();
    text.parse().map(Some).map_err(|_| {
        ApiError::BadRequest(format!("Last-Event-ID must be the seq of a frame (0 to {}), not {text:?}", Seq::MAX))
    })
}

/// Hits a search answers when the request names no `limit`, and the most it names.
const SEARCH_LIMIT: usize = 20;
const MAX_SEARCH_LIMIT: usize = 50;

#[derive(Deserialize)]
struct SearchQuery {
    q: String,
    limit: Option<usize>,
}

/// A query without a word (empty, blank, only punctuation) finds nothing and is no error: the search box asks as the
/// user types, and a lone `"` is a normal moment of typing. An over-long one is a 400, not cut: a cut query would
/// answer a different question than was asked.
async fn search(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<SearchQuery>,
) -> Result<Json<SearchResponse>, ApiError> {
    use crate::store::search::MAX_QUERY_CHARS;
    if query.q.chars().count() > MAX_QUERY_CHARS {
        return Err(ApiError::BadRequest(format!("a search is at most {MAX_QUERY_CHARS} characters long")));
    }
    let limit = match query.limit.unwrap_or(SEARCH_LIMIT) {
        limit @ 1..=MAX_SEARCH_LIMIT => limit,
        limit => {
            return Err(ApiError::BadRequest(format!("limit must be 1 to {MAX_SEARCH_LIMIT}, not {limit}")));
        }
    };
    Ok(Json(SearchResponse { hits: state.chat.store.search(&query.q, limit).await? }))
}

#[derive(Deserialize)]
struct FilesQuery {
    #[serde(default)]
    q: String,
    session: Option<String>,
}

/// `GET /api/files?q=…&session=…`: the workspace paths an `@` mention offers. Any query is fine (it is only compared
/// with the paths found); only an over-long one is a 400.
async fn mention_files(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<FilesQuery>,
) -> Result<Json<FilesResponse>, ApiError> {
    use super::files::MAX_QUERY_CHARS;
    if query.q.chars().count() > MAX_QUERY_CHARS {
        return Err(ApiError::BadRequest(format!("a file query is at most {MAX_QUERY_CHARS} characters long")));
    }
    let session = query.session.as_deref().filter(|id| !id.is_empty());
    Ok(Json(FilesResponse { files: state.chat.mention_files(session, query.q).await? }))
}

#[derive(Deserialize)]
struct UploadQuery {
    name: String,
    /// The type the browser gives the file, a hint: images are known by their bytes.
    #[serde(default, rename = "type")]
    declared: String,
}

/// `POST /api/attachments?name=…&type=…`: the file's bytes are the body (`application/octet-stream`). The body is
/// read only up to the limit, so a huge one costs nothing but the refusal.
async fn upload_attachment(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<UploadQuery>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Result<Json<FilePart>, ApiError> {
    use futures_util::StreamExt;
    let limits = state.chat.config.attachments;
    let name = query.name.as_str();
    let too_large = |size: u64| limits.file_refused(name, size).map(ApiError::TooLargeBecause);
    let announced = headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
    if let Some(refused) = announced.filter(|size| *size > 0).and_then(too_large) {
        return Err(refused);
    }
    let declared = query.declared.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    let mut bytes = Vec::new();
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|error| ApiError::BadRequest(format!("the upload of {name} broke off: {error}")))?;
        bytes.extend_from_slice(&chunk);
        if let Some(refused) = too_large(bytes.len() as u64).filter(|_| !bytes.is_empty()) {
            return Err(refused);
        }
    }
    Ok(Json(state.chat.keep_attachment(name, &declared, bytes).await?))
}

/// `GET /api/attachments/{id}`: an attached file's bytes. Kept under their hash, so they never change: cached for a
/// year. Sandboxed and never sniffed, so a text file that looks like HTML stays text.
async fn attachment_file(State(state): State<AppState>, ApiPath(id): ApiPath<String>) -> Result<Response, ApiError> {
    let missing = || ApiError::NotFound(format!("no attachment {id}"));
    if !super::attachments::is_attachment_id(&id) {
        return Err(missing());
    }
    let stored = state.chat.store.attachment(&id).await?.ok_or_else(missing)?;
    let content_type = match stored.media_type.as_str() {
        "text/plain" => "text/plain; charset=utf-8".to_owned(),
        other => other.to_owned(),
    };
    let headers = [
        (CONTENT_TYPE, content_type),
        (CACHE_CONTROL, "private, max-age=31536000, immutable".to_owned()),
        (X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
        (CONTENT_SECURITY_POLICY, "sandbox; default-src 'none'".to_owned()),
    ];
    Ok((headers, stored.bytes).into_response())
}

async fn unknown_api_route(request: Request) -> Response {
    ApiError::NotFound(format!("no API route {} {}", request.method(), request.uri().path())).into_response()
}

/// A route that exists, asked with a method it does not take; the router adds the `Allow` header.
async fn method_not_allowed(request: Request) -> ApiError {
    ApiError::MethodNotAllowed(format!(
        "{} {} is not a route; see the Allow header",
        request.method(),
        request.uri().path()
    ))
}

async fn static_file(State(state): State<AppState>, request: Request) -> Response {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = ApiError::MethodNotAllowed("only GET and HEAD are served here".into()).into_response();
        response.headers_mut().insert(axum::http::header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let (texts, texts_path) = crate::i18n::zh_cn_wire();
    if request.uri().path() == texts_path {
        // Named by its hash: a new table is a new path, so this one can be kept for good.
        let headers =
            [(CONTENT_TYPE, "text/plain; charset=utf-8"), (CACHE_CONTROL, "public, max-age=31536000, immutable")];
        return (headers, texts.clone()).into_response();
    }
    match state.assets.respond(request.uri().path(), request.headers()) {
        Some(response) => response,
        None => ApiError::NotFound(format!("no file {}", request.uri().path())).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::{API_ROUTES, file_name};

    #[test]
    fn download_names_keep_letters_and_digits_only() {
        assert_eq!(file_name("Fix the build: \"now\"\r\n"), "fix-the-build-now");
        assert_eq!(file_name("日本語"), "conversation");
        assert_eq!(file_name(""), "conversation");
        assert_eq!(file_name(&"a".repeat(100)).len(), 60);
    }

    #[test]
    fn api_routes_lists_every_route_of_the_router() {
        let source = include_str!("http.rs");
        let registered: Vec<&str> = source
            .split(".route(\"")
            .skip(1)
            .map(|rest| rest.split('"').next().expect("a route literal ends with a quote"))
            .filter(|route| route.starts_with("/api/"))
            .collect();
        assert_eq!(registered, API_ROUTES, "keep API_ROUTES in step with the router");
    }
}

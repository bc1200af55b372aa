//! The axum router: the server-rendered app, the JSON API, and the web assets.

use axum::Json;
use axum::Router;
use axum::extract::{FromRef, Request, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use leptos::prelude::LeptosOptions;
use leptos_axum::{LeptosRoutes, generate_route_list};

use super::assets::SiteAssets;
use crate::app::{App, shell};
use crate::protocol::{ErrorBody, HealthResponse};

/// What every handler can reach.
#[derive(Debug, Clone)]
pub struct AppState {
    pub leptos: LeptosOptions,
    pub assets: SiteAssets,
    pub runtime_name: &'static str,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos.clone()
    }
}

/// The whole HTTP surface as one function, so tests can build it and call it without a socket.
pub fn router(state: AppState) -> Router {
    let routes = generate_route_list(App);
    let render_state = state.clone();
    Router::new()
        .route("/api/health", get(health))
        .route("/api/{*rest}", axum::routing::any(unknown_api_route))
        .leptos_routes(&state, routes, move || {
            let options = render_state.leptos.clone();
            let page_assets = render_state.assets.page_assets(&options.output_name, &options.site_pkg_dir);
            if page_assets.is_none() {
                tracing::error!(
                    "the page's script, WASM or stylesheet is missing from {}",
                    render_state.assets.describe()
                );
            }
            shell(options, page_assets)
        })
        .fallback(static_file)
        .with_state(state)
}

async fn health(State(state): State<AppState>) -> Json<HealthResponse> {
    Json(HealthResponse {
        status: "ok".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        runtime: state.runtime_name.into(),
    })
}

async fn unknown_api_route(request: Request) -> Response {
    let body = ErrorBody { message: format!("no API route {} {}", request.method(), request.uri().path()) };
    (StatusCode::NOT_FOUND, Json(body)).into_response()
}

async fn static_file(State(state): State<AppState>, request: Request) -> Response {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return (StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD are served here\n").into_response();
    }
    match state.assets.respond(request.uri().path(), request.headers()) {
        Some(response) => response,
        None => (StatusCode::NOT_FOUND, "not found\n").into_response(),
    }
}

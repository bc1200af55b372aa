//! A handler that panics is answered with a 500 `{ "message" }` and logged, instead of a dropped connection.
//!
//! Without this, hyper ends the connection when a request's task unwinds: the browser sees a network failure it
//! cannot tell from a dead server, and the panic's text is only on the server's stderr.

use std::any::Any;
use std::panic::AssertUnwindSafe;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;

use super::error::ApiError;

/// The middleware: runs the rest of the stack and turns an unwind into `ApiError::Internal`.
pub async fn answer_panics(request: Request, next: Next) -> Response {
    let route = format!("{} {}", request.method(), request.uri().path());
    match AssertUnwindSafe(next.run(request)).catch_unwind().await {
        Ok(response) => response,
        Err(panic) => {
            let why = panic_text(panic.as_ref());
            tracing::error!("{route} panicked: {why}");
            ApiError::Internal(format!("the server failed on {route}")).into_response()
        }
    }
}

/// A panic's payload as text: `panic!` gives a `&str` or a `String`; anything else has no text to show.
fn panic_text(payload: &(dyn Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        "a panic without a message"
    }
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use axum::middleware;
    use axum::routing::get;
    use tower::ServiceExt;

    use super::answer_panics;

    #[tokio::test]
    async fn a_panicking_handler_is_answered_with_a_message_and_the_next_request_is_served() {
        async fn fails() -> &'static str {
            panic!("a bug in a handler")
        }
        let app = Router::new()
            .route("/fails", get(fails))
            .route("/works", get(|| async { "fine" }))
            .layer(middleware::from_fn(answer_panics));

        let response = app.clone().oneshot(Request::get("/fails").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body: serde_json::Value =
            serde_json::from_slice(&axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap()).unwrap();
        assert_eq!(body["message"], "internal error: the server failed on GET /fails");

        let response = app.oneshot(Request::get("/works").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
}

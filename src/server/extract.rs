//! The app's own extractors for bodies, paths and query strings: every rejection is an `ApiError`, so a bad
//! request gets `{ message }` like every other error (axum's own extractors answer in plain text).

use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Query};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// Largest accepted request body.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// A JSON body: 415 without a JSON content type, 413 over the size cap, 400 when malformed.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(request, state).await {
            Ok(Json(value)) => Ok(ApiJson(value)),
            Err(JsonRejection::MissingJsonContentType(_)) => {
                Err(ApiError::UnsupportedMediaType("send the body as Content-Type: application/json".into()))
            }
            Err(JsonRejection::BytesRejection(rejection)) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::TooLarge(MAX_BODY_BYTES))
            }
            Err(JsonRejection::JsonDataError(error)) => Err(ApiError::BadRequest(error.body_text())),
            Err(JsonRejection::JsonSyntaxError(error)) => Err(ApiError::BadRequest(error.body_text())),
            Err(other) => Err(ApiError::BadRequest(other.body_text())),
        }
    }
}

/// Path parameters: a segment that is not UTF-8 (`%ff`) or does not parse is a 400.
pub struct ApiPath<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(ApiPath(value)),
            Err(rejection) => Err(path_error(rejection)),
        }
    }
}

fn path_error(rejection: PathRejection) -> ApiError {
    // A server error here is a handler asking for parameters its route does not have: our bug, not the client's.
    if rejection.status().is_server_error() {
        ApiError::Internal(rejection.body_text())
    } else {
        ApiError::BadRequest(rejection.body_text())
    }
}

/// A query string: a value that does not parse, or a key given twice, is a 400.
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let rejected = |rejection: QueryRejection| ApiError::BadRequest(rejection.body_text());
        Query::<T>::from_request_parts(parts, state).await.map(|Query(value)| ApiQuery(value)).map_err(rejected)
    }
}

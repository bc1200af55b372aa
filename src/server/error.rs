//! `ApiError`: every failure of an HTTP request before its stream starts, answered as `{ message }` with a fitting status.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::chat::ChatError;
use crate::protocol::ErrorBody;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("{0}")]
    Conflict(String),
    #[error("the request body is larger than the limit of {0} bytes")]
    TooLarge(usize),
    /// Over a limit that has its own words (an attachment's).
    #[error("{0}")]
    TooLargeBecause(String),
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("{0}")]
    Unprocessable(String),
    #[error("{0}")]
    Unavailable(String),
    /// Something the server asked of failed (an agent that exited or answered with an error).
    #[error("{0}")]
    BadGateway(String),
    #[error("storage failed: {0}")]
    Store(#[from] StoreError),
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::TooLarge(_) | ApiError::TooLargeBecause(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::BadGateway(_) => StatusCode::BAD_GATEWAY,
            ApiError::Store(_) | ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<ChatError> for ApiError {
    fn from(error: ChatError) -> ApiError {
        let message = error.to_string();
        match error {
            ChatError::UnknownSession(_)
            | ChatError::UnknownMessage(_)
            | ChatError::NoCheckpoint(_)
            | ChatError::NoChanges(_)
            | ChatError::UnknownConversation(_) => ApiError::NotFound(message),
            ChatError::AgentFailed(_) => ApiError::BadGateway(message),
            ChatError::RestoreWhileRunning => ApiError::Conflict(message),
            ChatError::Checkpoint(_) => ApiError::Internal(message),
            ChatError::EmptyMessage | ChatError::EmptyTitle | ChatError::UnknownModel { .. } => {
                ApiError::BadRequest(message)
            }
            ChatError::RunInProgress | ChatError::SessionBusy => ApiError::Conflict(message),
            ChatError::RequestIdReused(_)
            | ChatError::NotAUserMessage(_)
            | ChatError::CannotBranch(_)
            | ChatError::Fork(_) => ApiError::Unprocessable(message),
            ChatError::RerunWhileStreaming | ChatError::CommandMixed(_) => ApiError::BadRequest(message),
            ChatError::Unsupported(_)
            | ChatError::UnknownAgent { .. }
            | ChatError::AgentMismatch { .. }
            | ChatError::AgentGone { .. }
            | ChatError::UnknownApprovalOption { .. }
            | ChatError::ApprovalContradicts { .. } => ApiError::Unprocessable(message),
            ChatError::NoDecision => ApiError::BadRequest(message),
            ChatError::Workspace { .. } => ApiError::Internal(message),
            ChatError::OwnerUnreachable => ApiError::Unavailable(message),
            ChatError::Attachment(super::attachments::AttachmentError::TooLarge(_)) => {
                ApiError::TooLargeBecause(message)
            }
            ChatError::Attachment(super::attachments::AttachmentError::Refused(_))
            | ChatError::AttachmentsWhileStreaming => ApiError::BadRequest(message),
            ChatError::Option(
                crate::runtime::seam::OptionError::UnknownOption { .. }
                | crate::runtime::seam::OptionError::UnknownValue { .. }
                | crate::runtime::seam::OptionError::Unsupported(_),
            ) => ApiError::Unprocessable(message),
            // The agent did not start, or did not take it: as a gateway whose upstream failed.
            ChatError::Option(crate::runtime::seam::OptionError::Agent(_)) => ApiError::Unavailable(message),
            ChatError::Store(error) => ApiError::Store(error),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::error!("{self}");
        }
        (status, Json(ErrorBody { message: self.to_string() })).into_response()
    }
}

//! How failures become HTTP responses: a status and `{"error": "<message>"}`.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use slice_core::wire::ErrorBody;
use slice_core::{ParseError, SliceError, StoreError};

/// A failed request. Every variant but `Internal` is the client's doing and changes nothing.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error(transparent)]
    Slice(#[from] SliceError),
    #[error("not found")]
    NoRoute,
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("request body too large: at most {limit} bytes are accepted")]
    PayloadTooLarge { limit: usize },
    /// A declared state of more records than one apply takes (`max_apply_records`).
    #[error(
        "the declared state holds {records} records (slices, ports and MAC addresses), \
         more than the {limit} one apply takes; apply it in parts, or raise max_apply_records"
    )]
    TooManyRecords { records: usize, limit: usize },
    #[error("unsupported content type {0:?}: send application/json or application/x-www-form-urlencoded")]
    UnsupportedMediaType(String),
    /// The request is not one this daemon takes from this client (a foreign `Host`, a
    /// cross-origin write).
    #[error("{0}")]
    Forbidden(String),
    /// A trusted proxy's identity headers cannot be believed (one came twice, or is not
    /// text). The reason names the header, never its value. The answer that carries it
    /// is what the audit trail tells (see `audit::proxy_refused`), once per request.
    #[error("the proxy's headers are refused: {0}")]
    ProxyRefused(String),
    /// A browser sent a body without saying what it is.
    #[error(
        "missing content type: a request from a browser must send Content-Type: application/json"
    )]
    MissingContentType,
    /// The body did not arrive in time; the connection is closed after the answer.
    #[error("the request body did not arrive within {seconds} s")]
    RequestTimeout { seconds: u64 },
    /// The request contradicts how the daemon was set up (a fabric its settings declare).
    #[error("{0}")]
    Conflict(String),
    /// A part of the daemon that the request needs is not running, or the store cannot
    /// serve the request now (a cluster without a quorum).
    #[error("{0}")]
    Unavailable(String),
    /// The daemon's settings are wrong in a way only its operator can fix (a login
    /// provider that refuses the daemon's client secret): the server's fault, not the
    /// client's, so a 500, but one that says what is wrong, as it names no secret.
    #[error("{0}")]
    Misconfigured(String),
    /// The server's own failure (the disk, a worker pool); the message is logged, not sent.
    #[error("internal error")]
    Internal(String),
}

impl From<ParseError> for ApiError {
    fn from(err: ParseError) -> Self {
        Self::BadRequest(err.to_string())
    }
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Slice(err) => Self::Slice(err),
            StoreError::Plan(err) => Self::BadRequest(err.to_string()),
            StoreError::Unbindable(err) => Self::BadRequest(err.to_string()),
            StoreError::Unavailable(err) => Self::Unavailable(err.to_string()),
            StoreError::Failed(err) => Self::Internal(err.to_string()),
            // A kind of failure slice-core may add later is the server's own until it has
            // a status of its own here.
            other => Self::Internal(other.to_string()),
        }
    }
}

impl From<actix_web::error::BlockingError> for ApiError {
    fn from(err: actix_web::error::BlockingError) -> Self {
        Self::Internal(err.to_string())
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Slice(err) => {
                StatusCode::from_u16(err.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            }
            Self::NoRoute => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::PayloadTooLarge { .. } | Self::TooManyRecords { .. } => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            Self::UnsupportedMediaType(_) | Self::MissingContentType => {
                StatusCode::UNSUPPORTED_MEDIA_TYPE
            }
            Self::Forbidden(_) | Self::ProxyRefused(_) => StatusCode::FORBIDDEN,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::RequestTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Misconfigured(_) | Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        if let Self::Internal(detail) = self {
            log::error!("request failed: {detail}");
        }
        let mut response = HttpResponse::build(self.status_code());
        if let Self::RequestTimeout { .. } = self {
            // The rest of the body may still come; the connection cannot be reused.
            response.force_close();
        }
        response.json(ErrorBody {
            error: self.to_string(),
        })
    }
}

//! Why the etcd store or the election failed, and which failures are worth retrying:
//! transient ones become `StoreError::Unavailable` (HTTP 503), the rest
//! `StoreError::Failed`.

use slice_core::StoreError;
use tonic::Code;

use crate::access::{Access, AccessError};
use crate::connection::REQUEST_TIMEOUT;
use crate::session_key::{MAX_SESSION_KEY_LEN, SESSION_KEY_LEN};

/// Why the etcd store failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "etcd did not answer within {REQUEST_TIMEOUT:?}; a write may or may not have been applied"
    )]
    Timeout,
    #[error("etcd: {0}")]
    Etcd(#[from] etcd_client::Error),
    #[error("etcd did not confirm the change ({0}); it may or may not have been applied")]
    Unconfirmed(etcd_client::Error),
    #[error(
        "etcd committed the change at revision {0}, but this instance has not seen it come \
         back within {REQUEST_TIMEOUT:?}"
    )]
    NotSeen(i64),
    #[error("etcd answered without the revision of its answer")]
    NoRevision,
    #[error("cannot start the etcd client's runtime: {0}")]
    Runtime(std::io::Error),
    #[error("the etcd store's runtime has stopped")]
    Stopped,
    #[error(
        "the session key in etcd is {0} bytes long; it must be {SESSION_KEY_LEN} to          {MAX_SESSION_KEY_LEN} (remove it to have a new one made)"
    )]
    BadSessionKey(usize),
    #[error("no random source for a new session key: {0}")]
    Random(String),
    #[error(transparent)]
    Access(#[from] AccessError),
    #[error("etcd refused this client: {cause}{hint}")]
    Refused { cause: String, hint: &'static str },
}

impl Error {
    /// Whether retrying later may succeed (HTTP 503) rather than the store being broken.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Timeout | Error::NotSeen(_) | Error::Stopped | Error::Unconfirmed(_) => true,
            Error::Etcd(err) => transient(err),
            Error::NoRevision
            | Error::Runtime(_)
            | Error::BadSessionKey(_)
            | Error::Random(_)
            | Error::Access(_)
            | Error::Refused { .. } => false,
        }
    }

    /// This error, met while opening with `access`, as an operator reads it: what etcd
    /// said without the gRPC wrapping, and a hint where the likely cause is a setting.
    /// Errors that are not refusals (timeouts, a lost quorum) pass unchanged.
    pub(crate) fn explain_refusal(self, access: &Access, endpoints: &[String]) -> Error {
        let Error::Etcd(etcd_client::Error::GRpcStatus(status)) = &self else {
            return self;
        };
        let source = std::error::Error::source(status);
        let Some(hint) = access.refusal_hint(endpoints, source.is_some()) else {
            return self;
        };
        let mut cause = status.message().to_owned();
        if let Some(source) = source {
            cause = format!("{cause}: {source}");
        }
        Error::Refused { cause, hint }
    }
}

/// Whether etcd's answer means "not now" rather than "never": a connection lost, or
/// Cancelled, Unknown (what a member answers when it lost its leader mid-request),
/// DeadlineExceeded, ResourceExhausted and Unavailable.
pub(crate) fn transient(err: &etcd_client::Error) -> bool {
    match err {
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => true,
        etcd_client::Error::GRpcStatus(status) => matches!(
            status.code(),
            Code::Cancelled
                | Code::Unknown
                | Code::DeadlineExceeded
                | Code::ResourceExhausted
                | Code::Unavailable
        ),
        _ => false,
    }
}

impl From<Error> for StoreError {
    fn from(err: Error) -> Self {
        if err.is_transient() {
            StoreError::Unavailable(Box::new(err))
        } else {
            StoreError::Failed(Box::new(err))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_etcd_did_not_confirm_is_unavailable_and_says_it_may_have_been_applied() {
        let lost = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        let err = Error::Unconfirmed(etcd_client::Error::IoError(lost));
        assert!(
            err.to_string().contains("may or may not have been applied"),
            "{err}"
        );
        assert!(matches!(StoreError::from(err), StoreError::Unavailable(_)));
        let refused = Error::Etcd(etcd_client::Error::InvalidArgs("bad".into()));
        assert!(matches!(StoreError::from(refused), StoreError::Failed(_)));
    }

    #[test]
    fn only_the_grpc_codes_that_mean_not_now_are_transient() {
        let status = |code| etcd_client::Error::GRpcStatus(tonic::Status::new(code, "x"));
        for code in [Code::Cancelled, Code::Unknown, Code::DeadlineExceeded] {
            assert!(transient(&status(code)), "{code:?}");
        }
        for code in [Code::ResourceExhausted, Code::Unavailable] {
            assert!(transient(&status(code)), "{code:?}");
        }
        for code in [
            Code::InvalidArgument,
            Code::PermissionDenied,
            Code::NotFound,
        ] {
            assert!(!transient(&status(code)), "{code:?}");
        }
    }
}

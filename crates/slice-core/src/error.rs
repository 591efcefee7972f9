//! Errors of the slice contract and of identifier parsing.

use crate::{MacAddress, PortId, SliceName};

/// A violation of the slice contract: something exists that should not, or is missing.
///
/// The `Display` texts are the messages of the specification, word for word; clients
/// match on them, so they must never change.
///
/// ```
/// use slice_core::{PortId, SliceError};
/// let err = SliceError::PortNotFound(PortId::new(0xab, 1));
/// assert_eq!(err.to_string(), "Port 0xab:1 not found");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SliceError {
    #[error("Slice {0} already exists")]
    SliceExists(SliceName),
    #[error("Slice {0} not found")]
    SliceNotFound(SliceName),
    #[error("Port {0} already exists")]
    PortExists(PortId),
    #[error("Port {0} not found")]
    PortNotFound(PortId),
    #[error("MAC address {0} already exists")]
    MacExists(MacAddress),
    #[error("MAC address {0} not found")]
    MacNotFound(MacAddress),
}

impl SliceError {
    /// True for the "already exists" kinds (HTTP 409), false for "not found" (HTTP 404).
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            Self::SliceExists(_) | Self::PortExists(_) | Self::MacExists(_)
        )
    }
}

/// An identifier that does not have the required form. The message says what is wrong and
/// quotes the offending input, so that it can be shown to a user as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("invalid slice name {input:?}: {reason}")]
    SliceName { input: String, reason: &'static str },
    #[error("invalid port name {input:?}: {reason}")]
    PortName { input: String, reason: &'static str },
    #[error("invalid MAC address {input:?}: {reason}")]
    MacAddress { input: String, reason: &'static str },
}

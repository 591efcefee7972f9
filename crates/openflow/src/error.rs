//! The one error type of the crate.

use crate::Version;

/// Why a buffer could not be decoded, or a value could not be encoded.
///
/// The `&'static str` fields name the structure or field concerned, so that a log line
/// says where a peer's message went wrong without needing the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The buffer ends before the structure does.
    #[error("truncated {what}: needs {needed} bytes, only {available} present")]
    Truncated {
        /// The structure being read.
        what: &'static str,
        /// How many bytes it needs.
        needed: usize,
        /// How many bytes there were.
        available: usize,
    },
    /// A length field (or a frame's size) that the layout does not allow.
    #[error("{what} has an invalid length of {length} bytes")]
    BadLength {
        /// The structure whose length is wrong.
        what: &'static str,
        /// The offending length.
        length: usize,
    },
    /// A message, or a request to encode one, in a version this crate does not speak.
    #[error("unsupported OpenFlow wire version {0:#04x}")]
    UnsupportedVersion(Version),
    /// A field whose value has no meaning here (an unknown command, match type, ...).
    #[error("{what} has the unknown value {value}")]
    UnknownValue {
        /// The field.
        what: &'static str,
        /// Its value.
        value: u32,
    },
    /// A message lacks a field the specification requires.
    #[error("{what} is missing")]
    MissingField {
        /// The field.
        what: &'static str,
    },
    /// A value too large for the wire field it has to travel in.
    #[error("{what} {value:#x} does not fit its wire field")]
    OutOfRange {
        /// The field.
        what: &'static str,
        /// The value that does not fit.
        value: u64,
    },
    /// A message that the requested version cannot express at all.
    #[error("{what} cannot be expressed in wire version {version:#04x}")]
    NotInVersion {
        /// The message or field.
        what: &'static str,
        /// The wire version asked for.
        version: Version,
    },
    /// An encoding longer than its 16-bit length field can state.
    #[error("{what} would be {length} bytes, more than its 16-bit length field allows")]
    TooLong {
        /// The structure being encoded.
        what: &'static str,
        /// Its encoded length.
        length: usize,
    },
}

impl Error {
    /// Checks that `buffer` holds at least `needed` bytes.
    pub(crate) fn need(what: &'static str, buffer: &[u8], needed: usize) -> Result<(), Error> {
        if buffer.len() < needed {
            return Err(Error::Truncated {
                what,
                needed,
                available: buffer.len(),
            });
        }
        Ok(())
    }
}

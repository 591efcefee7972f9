//! Errors of the slice contract and of identifier parsing.

use crate::{MacAddress, PortId, SliceName};

/// A violation of the slice contract: something exists that should not, or is missing.
///
/// The `Display` texts are the messages of the specification, word for word; clients
/// match on them, so they must never change. [`SliceError::from_message`] is their
/// inverse: keep the two in step (the round-trip test below checks every variant).
///
/// ```
/// use slice_core::{PortId, SliceError};
/// let err = SliceError::PortNotFound(PortId::new(0xab, 1));
/// assert_eq!(err.to_string(), "Port 0xab:1 not found");
/// ```
///
/// Non-exhaustive, like every error enum of this crate, so that a new kind of refusal is
/// not a breaking change; [`SliceError::http_status`] covers every kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SliceError {
    /// A slice of this name exists already.
    #[error("Slice {0} already exists")]
    SliceExists(SliceName),
    /// No slice has this name.
    #[error("Slice {0} not found")]
    SliceNotFound(SliceName),
    /// The slice holds this port already.
    #[error("Port {0} already exists")]
    PortExists(PortId),
    /// The slice does not hold this port.
    #[error("Port {0} not found")]
    PortNotFound(PortId),
    /// The port holds this MAC address already.
    #[error("MAC address {0} already exists")]
    MacExists(MacAddress),
    /// The port does not hold this MAC address.
    #[error("MAC address {0} not found")]
    MacNotFound(MacAddress),
}

// The templates' fixed parts, as `from_message` strips them; the `#[error]` texts above
// are these, around the identifier.
const SLICE: &str = "Slice ";
const PORT: &str = "Port ";
const MAC: &str = "MAC address ";
const EXISTS: &str = " already exists";
const NOT_FOUND: &str = " not found";

impl SliceError {
    /// True for the "already exists" kinds (HTTP 409), false for "not found" (HTTP 404).
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            Self::SliceExists(_) | Self::PortExists(_) | Self::MacExists(_)
        )
    }

    /// The HTTP status the specification pairs with this error: 409 or 404.
    pub fn http_status(&self) -> u16 {
        if self.is_conflict() {
            409
        } else {
            404
        }
    }

    /// Reads an error back from its message: the inverse of `Display`, so that a client
    /// of the API gets the very error the daemon reported. `None` when `message` is not
    /// one of the specification's, or names an identifier that is not valid.
    ///
    /// ```
    /// use slice_core::{SliceError, SliceName};
    /// let name: SliceName = "lab.1".parse()?;
    /// assert_eq!(
    ///     SliceError::from_message("Slice lab.1 not found"),
    ///     Some(SliceError::SliceNotFound(name))
    /// );
    /// assert_eq!(SliceError::from_message("not found"), None);
    /// # Ok::<(), slice_core::ParseError>(())
    /// ```
    pub fn from_message(message: &str) -> Option<Self> {
        fn split<'m>(message: &'m str, kind: &str) -> Option<(&'m str, bool)> {
            let rest = message.strip_prefix(kind)?;
            rest.strip_suffix(EXISTS)
                .map(|id| (id, true))
                .or_else(|| rest.strip_suffix(NOT_FOUND).map(|id| (id, false)))
        }
        if let Some((id, exists)) = split(message, SLICE) {
            let name: SliceName = id.parse().ok()?;
            return Some(if exists {
                Self::SliceExists(name)
            } else {
                Self::SliceNotFound(name)
            });
        }
        if let Some((id, exists)) = split(message, PORT) {
            let port: PortId = id.parse().ok()?;
            return Some(if exists {
                Self::PortExists(port)
            } else {
                Self::PortNotFound(port)
            });
        }
        let (id, exists) = split(message, MAC)?;
        let mac: MacAddress = id.parse().ok()?;
        Some(if exists {
            Self::MacExists(mac)
        } else {
            Self::MacNotFound(mac)
        })
    }
}

/// An identifier that does not have the required form. The message says what is wrong and
/// quotes the offending input, so that it can be shown to a user as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// Not a [`SliceName`].
    #[error("invalid slice name {input:?}: {reason}")]
    SliceName {
        /// The text as given.
        input: String,
        /// What rule it breaks.
        reason: &'static str,
    },
    /// Not a [`PortId`] in its text form.
    #[error("invalid port name {input:?}: {reason}")]
    PortName {
        /// The text as given.
        input: String,
        /// What rule it breaks.
        reason: &'static str,
    },
    /// A [`PortId`] written without the `0x` before its datapath id, such as `1:1`.
    #[error(
        "invalid port name {input:?}: the datapath id is written in hexadecimal after 0x; \
         did you mean {suggestion}?"
    )]
    PortNameWithoutPrefix {
        /// The text as given.
        input: String,
        /// The port name or names the text likely meant, as the message shows them.
        suggestion: String,
    },
    /// Not a [`MacAddress`] in its text form.
    #[error("invalid MAC address {input:?}: {reason}")]
    MacAddress {
        /// The text as given.
        input: String,
        /// What rule it breaks.
        reason: &'static str,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SLICE_NAME_MAX_LEN;

    fn every_variant(slice: SliceName, port: PortId, mac: MacAddress) -> [SliceError; 6] {
        [
            SliceError::SliceExists(slice.clone()),
            SliceError::SliceNotFound(slice),
            SliceError::PortExists(port),
            SliceError::PortNotFound(port),
            SliceError::MacExists(mac),
            SliceError::MacNotFound(mac),
        ]
    }

    #[test]
    fn every_message_reads_back_as_its_error() {
        // Names that look like the templates' own words, or are made only of the
        // grammar's punctuation, must not confuse the inverse.
        let longest = "x".repeat(SLICE_NAME_MAX_LEN);
        let names = [
            "a",
            "-",
            "_",
            "...",
            ".a",
            "a.",
            "Slice",
            "found",
            "exists",
            "not",
            "MAC",
            "lab.42_a-b",
            "0xab:1",
            &longest,
        ];
        let ports = [
            PortId::new(0, 0),
            PortId::new(0xab, 1),
            PortId::new(u64::MAX, u32::MAX),
        ];
        let macs = [
            MacAddress::new([0; 6]),
            MacAddress::new([0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff]),
        ];
        let mut checked = 0;
        for name in names {
            let Ok(slice) = name.parse::<SliceName>() else {
                continue;
            };
            for (port, mac) in ports.into_iter().zip(macs.into_iter().cycle()) {
                for err in every_variant(slice.clone(), port, mac) {
                    let message = err.to_string();
                    assert_eq!(SliceError::from_message(&message), Some(err), "{message}");
                    checked += 1;
                }
            }
        }
        assert!(checked >= 13 * 3 * 6, "only {checked} messages checked");
    }

    #[test]
    fn the_messages_are_the_specifications() {
        let [slice_exists, slice_missing, port_exists, port_missing, mac_exists, mac_missing] =
            every_variant(
                "blue".parse().unwrap(),
                PortId::new(0xab, 1),
                MacAddress::new([0, 0, 0, 0, 0, 1]),
            )
            .map(|err| (err.to_string(), err.http_status()));
        assert_eq!(slice_exists, ("Slice blue already exists".into(), 409));
        assert_eq!(slice_missing, ("Slice blue not found".into(), 404));
        assert_eq!(port_exists, ("Port 0xab:1 already exists".into(), 409));
        assert_eq!(port_missing, ("Port 0xab:1 not found".into(), 404));
        assert_eq!(
            mac_exists,
            ("MAC address 00:00:00:00:00:01 already exists".into(), 409)
        );
        assert_eq!(
            mac_missing,
            ("MAC address 00:00:00:00:00:01 not found".into(), 404)
        );
    }

    #[test]
    fn other_messages_are_not_contract_errors() {
        for other in [
            "",
            "not found",
            "Slice  not found",
            "Slice a b not found",
            "Slice . not found",
            "slice a not found",
            "Slice a not found ",
            "Port 1:1 not found",
            "Port 0x1:1 is gone",
            "MAC address 00:00 already exists",
            "MAC address 00:00:00:00:00:01 not found\n",
            "Slice a was eaten",
            "internal error",
            "invalid request body: x",
        ] {
            assert_eq!(SliceError::from_message(other), None, "{other:?}");
        }
    }
}

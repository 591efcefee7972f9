//! OpenFlow wire versions and their negotiation.

use core::fmt;

enum_with_unknown! {
    /// The wire version in every message's header.
    ///
    /// The codec speaks [`Version::Of10`] and [`Version::Of13`]. Any other version
    /// parses (as [`Version::Unknown`]) so that a HELLO from a newer or older peer can
    /// be read and answered; [`crate::Message::emit`] refuses it for every message but
    /// HELLO, whose encoding is the same in all versions.
    pub enum Version(u8) {
        /// OpenFlow 1.0, wire version 0x01.
        Of10 = 0x01,
        /// OpenFlow 1.3, wire version 0x04.
        Of13 = 0x04,
    }
}

/// Formats the wire number, so that `{:#04x}` reads as the header byte does.
impl fmt::LowerHex for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(&u8::from(*self), f)
    }
}

/// The version to speak with a peer: the highest version in `ours` that the peer
/// supports.
///
/// With a HELLO version bitmap (`versions`, bit n for wire version n) that is the
/// highest of `ours` whose bit is set. Without one, the peer speaks its header version
/// and, by the 1.0 rules, anything below; so the answer is the lower of
/// `header_version` and our highest version, provided that is one of ours. `None`
/// means there is no common version.
pub fn negotiate(
    ours: &[Version],
    header_version: Version,
    versions: Option<u32>,
) -> Option<Version> {
    // Versions are ordered by their wire numbers, so negotiation works on those.
    let ours_wire = ours.iter().map(|&version| u8::from(version));
    let chosen = match versions {
        Some(bitmap) => ours_wire
            .filter(|&v| {
                1u32.checked_shl(u32::from(v))
                    .is_some_and(|bit| bitmap & bit != 0)
            })
            .max(),
        None => {
            let candidate = u8::from(header_version).min(ours_wire.max()?);
            ours.contains(&Version::from(candidate))
                .then_some(candidate)
        }
    };
    chosen.map(Version::from)
}

impl Version {
    /// This version's bit in a HELLO version bitmap (bit n for wire version n).
    pub fn bitmap_bit(self) -> u32 {
        1u32.checked_shl(u32::from(u8::from(self))).unwrap_or(0)
    }
}

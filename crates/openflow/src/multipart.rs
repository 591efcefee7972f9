//! 1.3 MULTIPART_REQUEST / MULTIPART_REPLY framing. `OFPMP_PORT_DESC`, `OFPMP_FLOW` (in
//! [`crate::flow_stats`]) and
//! `OFPMP_METER_FEATURES` are modelled; other multipart types are handed on as [`crate::Message::Other`].

use crate::wire::tail;
use crate::Error;

/// Byte offsets of `ofp_multipart_request` / `ofp_multipart_reply`, header included
/// (4 pad bytes after the flags).
mod field {
    pub(super) const TYPE: usize = 8;
    pub(super) const FLAGS: usize = 10;
    pub(super) const BODY: usize = 16;
}

/// Length of the multipart header, OpenFlow header included.
pub const MULTIPART_HEADER_LEN: usize = field::BODY;

/// `OFPMP_METER_FEATURES`.
pub const MULTIPART_METER_FEATURES: u16 = 11;
/// `OFPMP_PORT_DESC`.
pub const MULTIPART_PORT_DESC: u16 = 13;
/// `OFPMPF_REQ_MORE` / `OFPMPF_REPLY_MORE`: more parts follow.
pub const FLAG_MORE: u16 = 1 << 0;

view! {
    /// A view of a MULTIPART_REQUEST or MULTIPART_REPLY message, header included.
    Multipart
}

fields!(Multipart {
    /// `OFPMP_*` type.
    multipart_type / set_multipart_type: u16 = field::TYPE;
    /// `OFPMPF_*` flags.
    flags / set_flags: u16 = field::FLAGS;
});

impl<T: AsRef<[u8]>> Multipart<T> {
    /// Checks that the buffer holds the multipart header.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need(
            "multipart message",
            self.buffer.as_ref(),
            MULTIPART_HEADER_LEN,
        )
    }

    /// The type-specific body.
    pub fn body(&self) -> &[u8] {
        tail(self.buffer.as_ref(), field::BODY)
    }
}

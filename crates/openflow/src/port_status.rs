//! PORT_STATUS: a port was added, removed or changed. A reason byte, 7 pad bytes and
//! the version's port description.

use crate::wire::tail;
use crate::Error;

/// Byte offsets of `ofp_port_status`, header included.
mod field {
    pub(super) const REASON: usize = 8;
    pub(super) const DESC: usize = 16;
}

/// Length of `ofp_port_status` before the port description.
pub const PORT_STATUS_HEADER_LEN: usize = field::DESC;

enum_with_unknown! {
    /// Why a PORT_STATUS was sent (`ofp_port_reason`, the same in both versions).
    pub enum PortReason(u8) {
        /// `OFPPR_ADD`: the port appeared.
        Add = 0,
        /// `OFPPR_DELETE`: the port is gone.
        Delete = 1,
        /// `OFPPR_MODIFY`: an attribute of the port changed.
        Modify = 2,
    }
}

view! {
    /// A view of a PORT_STATUS message, header included.
    PortStatus
}

fields!(PortStatus {
    /// `OFPPR_*` reason; see [`PortReason`].
    reason / set_reason: u8 = field::REASON;
});

impl<T: AsRef<[u8]>> PortStatus<T> {
    /// Checks that the buffer reaches the port description (whose own view checks the
    /// rest).
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("PORT_STATUS", self.buffer.as_ref(), PORT_STATUS_HEADER_LEN)
    }

    /// The port description.
    pub fn desc(&self) -> &[u8] {
        tail(self.buffer.as_ref(), field::DESC)
    }
}

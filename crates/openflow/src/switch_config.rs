//! SET_CONFIG (and GET_CONFIG_REPLY): `ofp_switch_config`, the same in both versions.

use crate::Error;

/// Length of `ofp_switch_config`, header included.
pub const SWITCH_CONFIG_LEN: usize = 12;

view! {
    /// A view of a SET_CONFIG message, header included.
    SwitchConfig
}

fields!(SwitchConfig {
    /// `OFPC_FRAG_*` fragment handling.
    flags / set_flags: u16 = 8;
    /// Bytes of a table-miss packet to send to the controller.
    miss_send_len / set_miss_send_len: u16 = 10;
});

impl<T: AsRef<[u8]>> SwitchConfig<T> {
    /// Checks that the buffer holds the whole structure.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("SET_CONFIG", self.buffer.as_ref(), SWITCH_CONFIG_LEN)
    }
}

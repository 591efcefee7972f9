//! FEATURES_REPLY: `ofp_switch_features`, 32 bytes in both versions. 1.0 follows it
//! with the port list; 1.3 has an auxiliary connection id instead and leaves the ports
//! to the PORT_DESC multipart exchange.

use crate::port_desc::{self, PortDesc, PHY_PORT_V10_LEN};
use crate::wire::{tail, tail_mut};
use crate::Error;

/// Byte offsets of `ofp_switch_features`, header included.
mod field {
    pub(super) const DATAPATH_ID: usize = 8;
    pub(super) const N_BUFFERS: usize = 16;
    pub(super) const N_TABLES: usize = 20;
    /// 1.3 only; padding on 1.0.
    pub(super) const AUXILIARY_ID: usize = 21;
    pub(super) const CAPABILITIES: usize = 24;
    /// 1.0's supported-actions bitmap; reserved on 1.3.
    pub(super) const ACTIONS: usize = 28;
    /// 1.0 only.
    pub(super) const PORTS: usize = 32;
}

/// Length of `ofp_switch_features`, header included.
pub const FEATURES_REPLY_LEN: usize = 32;

view! {
    /// A view of a FEATURES_REPLY message, header included. The same 32-byte layout
    /// serves both versions: 1.0 has padding where 1.3 has `auxiliary_id`, and port
    /// descriptions after it.
    FeaturesReplyView
}

fields!(FeaturesReplyView {
    /// Datapath id; its low 48 bits are usually a MAC address of the switch.
    datapath_id / set_datapath_id: u64 = field::DATAPATH_ID;
    /// Packets the switch can buffer for the controller.
    n_buffers / set_n_buffers: u32 = field::N_BUFFERS;
    /// Number of flow tables.
    n_tables / set_n_tables: u8 = field::N_TABLES;
    /// 1.3 auxiliary connection id (0 on the main connection).
    auxiliary_id / set_auxiliary_id: u8 = field::AUXILIARY_ID;
    /// `OFPC_*` capability bits.
    capabilities / set_capabilities: u32 = field::CAPABILITIES;
    /// 1.0 `OFPAT_*` bitmap of supported actions (reserved on 1.3).
    actions / set_actions: u32 = field::ACTIONS;
});

impl<T: AsRef<[u8]>> FeaturesReplyView<T> {
    /// Checks that the buffer holds the fixed part.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("FEATURES_REPLY", self.buffer.as_ref(), FEATURES_REPLY_LEN)
    }

    /// The 1.0 port descriptions after the fixed part.
    pub fn ports(&self) -> &[u8] {
        tail(self.buffer.as_ref(), field::PORTS)
    }
}

/// A switch's answer to FEATURES_REQUEST.
///
/// Per version: 1.0 has no `auxiliary_id` (0 after parsing, not sent) and sends its
/// `actions` bitmap as 0 (ignored on parsing); 1.3 has no `ports` (empty after
/// parsing, not sent: ask with [`crate::Message::PortDescRequest`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeaturesReply {
    /// Datapath id.
    pub datapath_id: u64,
    /// Packets the switch can buffer.
    pub n_buffers: u32,
    /// Number of flow tables.
    pub n_tables: u8,
    /// Auxiliary connection id (1.3).
    pub auxiliary_id: u8,
    /// `OFPC_*` capability bits.
    pub capabilities: u32,
    /// The switch's ports (1.0).
    pub ports: Vec<PortDesc>,
}

impl FeaturesReply {
    /// Reads a 1.0 FEATURES_REPLY; the ports must fill the rest of the message.
    pub fn parse_v10<T: AsRef<[u8]>>(view: &FeaturesReplyView<T>) -> Result<Self, Error> {
        view.check_len()?;
        Ok(FeaturesReply {
            auxiliary_id: 0,
            ports: port_desc::parse_list_v10(view.ports())?,
            ..Self::parse_common(view)
        })
    }

    /// Reads a 1.3 FEATURES_REPLY; bytes past the fixed part are ignored.
    pub fn parse_v13<T: AsRef<[u8]>>(view: &FeaturesReplyView<T>) -> Result<Self, Error> {
        view.check_len()?;
        Ok(Self::parse_common(view))
    }

    fn parse_common<T: AsRef<[u8]>>(view: &FeaturesReplyView<T>) -> Self {
        FeaturesReply {
            datapath_id: view.datapath_id(),
            n_buffers: view.n_buffers(),
            n_tables: view.n_tables(),
            auxiliary_id: view.auxiliary_id(),
            capabilities: view.capabilities(),
            ports: Vec::new(),
        }
    }

    /// Length of the 1.0 message, header included.
    pub fn buffer_len_v10(&self) -> usize {
        FEATURES_REPLY_LEN.saturating_add(self.ports.len().saturating_mul(PHY_PORT_V10_LEN))
    }

    /// Writes the 1.0 body into a zeroed view of [`Self::buffer_len_v10`] bytes (the
    /// header is the caller's). Fails when a port number has no 1.0 form.
    pub fn emit_v10<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        view: &mut FeaturesReplyView<T>,
    ) -> Result<(), Error> {
        self.emit_common(view);
        view.set_auxiliary_id(0);
        view.set_actions(0);
        port_desc::emit_list_v10(&self.ports, tail_mut(view.buffer.as_mut(), field::PORTS))
    }

    /// Length of the 1.3 message, header included.
    pub fn buffer_len_v13(&self) -> usize {
        FEATURES_REPLY_LEN
    }

    /// Writes the 1.3 body into a zeroed view of [`Self::buffer_len_v13`] bytes.
    /// `ports` is not sent.
    pub fn emit_v13<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut FeaturesReplyView<T>) {
        self.emit_common(view);
        view.set_auxiliary_id(self.auxiliary_id);
    }

    fn emit_common<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut FeaturesReplyView<T>) {
        view.set_datapath_id(self.datapath_id);
        view.set_n_buffers(self.n_buffers);
        view.set_n_tables(self.n_tables);
        view.set_capabilities(self.capabilities);
    }
}

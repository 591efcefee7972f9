//! PACKET_OUT: the controller sends a packet (or a switch-buffered one) through a list
//! of actions.

use crate::action::{self, Action};
use crate::packet_in::{buffer_id_from_wire, buffer_id_to_wire};
use crate::wire::{length_u16, sub, tail, tail_mut, write_slice};
use crate::{port, Error, Version};

/// Byte offsets of 1.0's `ofp_packet_out`, header included.
mod field_v10 {
    pub(super) const BUFFER_ID: usize = 8;
    pub(super) const IN_PORT: usize = 12;
    pub(super) const ACTIONS_LEN: usize = 14;
    pub(super) const ACTIONS: usize = 16;
}

/// Byte offsets of 1.3's `ofp_packet_out`, header included (6 pad bytes after the
/// actions length).
mod field_v13 {
    pub(super) const BUFFER_ID: usize = 8;
    pub(super) const IN_PORT: usize = 12;
    pub(super) const ACTIONS_LEN: usize = 16;
    pub(super) const ACTIONS: usize = 24;
}

/// Length of 1.0's `ofp_packet_out` before the actions.
pub const PACKET_OUT_V10_LEN: usize = field_v10::ACTIONS;
/// Length of 1.3's `ofp_packet_out` before the actions.
pub const PACKET_OUT_V13_LEN: usize = field_v13::ACTIONS;

view! {
    /// A view of a 1.0 PACKET_OUT message, header included.
    PacketOutV10
}

fields!(PacketOutV10 {
    /// Switch buffer to send, or `OFP_NO_BUFFER` when the data is the packet.
    buffer_id / set_buffer_id: u32 = field_v10::BUFFER_ID;
    /// 16-bit port the packet is treated as arriving on.
    in_port / set_in_port: u16 = field_v10::IN_PORT;
    /// Length of the action list.
    actions_len / set_actions_len: u16 = field_v10::ACTIONS_LEN;
});

impl<T: AsRef<[u8]>> PacketOutV10<T> {
    /// Checks that the buffer holds the fixed part and the action list.
    pub fn check_len(&self) -> Result<(), Error> {
        let needed = PACKET_OUT_V10_LEN + usize::from(self.actions_len());
        Error::need("PACKET_OUT", self.buffer.as_ref(), PACKET_OUT_V10_LEN)?;
        Error::need("PACKET_OUT actions", self.buffer.as_ref(), needed)
    }

    /// The action list.
    pub fn actions(&self) -> &[u8] {
        let end = PACKET_OUT_V10_LEN + usize::from(self.actions_len());
        sub(self.buffer.as_ref(), PACKET_OUT_V10_LEN, end)
    }

    /// The packet bytes after the actions.
    pub fn data(&self) -> &[u8] {
        tail(
            self.buffer.as_ref(),
            PACKET_OUT_V10_LEN + usize::from(self.actions_len()),
        )
    }
}

view! {
    /// A view of a 1.3 PACKET_OUT message, header included.
    PacketOutV13
}

fields!(PacketOutV13 {
    /// Switch buffer to send, or `OFP_NO_BUFFER` when the data is the packet.
    buffer_id / set_buffer_id: u32 = field_v13::BUFFER_ID;
    /// 32-bit port the packet is treated as arriving on.
    in_port / set_in_port: u32 = field_v13::IN_PORT;
    /// Length of the action list.
    actions_len / set_actions_len: u16 = field_v13::ACTIONS_LEN;
});

impl<T: AsRef<[u8]>> PacketOutV13<T> {
    /// Checks that the buffer holds the fixed part and the action list.
    pub fn check_len(&self) -> Result<(), Error> {
        let needed = PACKET_OUT_V13_LEN + usize::from(self.actions_len());
        Error::need("PACKET_OUT", self.buffer.as_ref(), PACKET_OUT_V13_LEN)?;
        Error::need("PACKET_OUT actions", self.buffer.as_ref(), needed)
    }

    /// The action list.
    pub fn actions(&self) -> &[u8] {
        let end = PACKET_OUT_V13_LEN + usize::from(self.actions_len());
        sub(self.buffer.as_ref(), PACKET_OUT_V13_LEN, end)
    }

    /// The packet bytes after the actions.
    pub fn data(&self) -> &[u8] {
        tail(
            self.buffer.as_ref(),
            PACKET_OUT_V13_LEN + usize::from(self.actions_len()),
        )
    }
}

/// A packet for the switch to send.
///
/// `buffer_id: Some(OFP_NO_BUFFER)` encodes exactly like `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketOut {
    /// Switch buffer to send; `None` when `data` is the packet.
    pub buffer_id: Option<u32>,
    /// Port the packet is treated as arriving on (often [`port::CONTROLLER`]).
    pub in_port: u32,
    /// What to do with the packet.
    pub actions: Vec<Action>,
    /// The packet, when not buffered.
    pub data: Vec<u8>,
}

impl PacketOut {
    /// Reads a 1.0 PACKET_OUT.
    pub fn parse_v10<T: AsRef<[u8]>>(view: &PacketOutV10<T>) -> Result<Self, Error> {
        view.check_len()?;
        Ok(PacketOut {
            buffer_id: buffer_id_from_wire(view.buffer_id()),
            in_port: port::from_v10(view.in_port()),
            actions: action::parse_list(Version::Of10, view.actions())?,
            data: view.data().to_vec(),
        })
    }

    /// Length of the 1.0 message, header included.
    pub fn buffer_len_v10(&self) -> usize {
        PACKET_OUT_V10_LEN
            .saturating_add(action::list_len(Version::Of10, &self.actions))
            .saturating_add(self.data.len())
    }

    /// Writes the 1.0 body into a zeroed view of [`Self::buffer_len_v10`] bytes. Fails
    /// when a port has no 1.0 form.
    pub fn emit_v10<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        view: &mut PacketOutV10<T>,
    ) -> Result<(), Error> {
        let actions_len = action::list_len(Version::Of10, &self.actions);
        view.set_buffer_id(buffer_id_to_wire(self.buffer_id));
        view.set_in_port(port::encode_v10("packet-out in_port", self.in_port)?);
        view.set_actions_len(length_u16("PACKET_OUT actions", actions_len)?);
        let buffer = tail_mut(view.buffer.as_mut(), PACKET_OUT_V10_LEN);
        action::emit_list(Version::Of10, &self.actions, &mut *buffer)?;
        write_slice(buffer, actions_len, &self.data);
        Ok(())
    }

    /// Reads a 1.3 PACKET_OUT.
    pub fn parse_v13<T: AsRef<[u8]>>(view: &PacketOutV13<T>) -> Result<Self, Error> {
        view.check_len()?;
        Ok(PacketOut {
            buffer_id: buffer_id_from_wire(view.buffer_id()),
            in_port: view.in_port(),
            actions: action::parse_list(Version::Of13, view.actions())?,
            data: view.data().to_vec(),
        })
    }

    /// Length of the 1.3 message, header included.
    pub fn buffer_len_v13(&self) -> usize {
        PACKET_OUT_V13_LEN
            .saturating_add(action::list_len(Version::Of13, &self.actions))
            .saturating_add(self.data.len())
    }

    /// Writes the 1.3 body into a zeroed view of [`Self::buffer_len_v13`] bytes.
    pub fn emit_v13<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        view: &mut PacketOutV13<T>,
    ) -> Result<(), Error> {
        let actions_len = action::list_len(Version::Of13, &self.actions);
        view.set_buffer_id(buffer_id_to_wire(self.buffer_id));
        view.set_in_port(self.in_port);
        view.set_actions_len(length_u16("PACKET_OUT actions", actions_len)?);
        let buffer = tail_mut(view.buffer.as_mut(), PACKET_OUT_V13_LEN);
        action::emit_list(Version::Of13, &self.actions, &mut *buffer)?;
        write_slice(buffer, actions_len, &self.data);
        Ok(())
    }
}

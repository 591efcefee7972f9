//! Ethernet II framing: destination, source, EtherType, payload (no FCS).

use super::EtherType;
use crate::wire::tail;
use crate::Error;

/// Length of the Ethernet II header.
pub const HEADER_LEN: usize = 14;
/// Shortest frame on the wire without its FCS; shorter ones are padded up to it.
pub const MIN_FRAME_LEN: usize = 60;

view! {
    /// A view of an Ethernet II frame.
    EthernetFrame
}

fields!(EthernetFrame {
    /// Destination address.
    dst / set_dst: [u8; 6] = 0;
    /// Source address.
    src / set_src: [u8; 6] = 6;
    /// EtherType of the payload (or of the 802.1Q tag).
    ethertype / set_ethertype: u16 = 12;
});

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Checks that the buffer holds the header.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("Ethernet header", self.buffer.as_ref(), HEADER_LEN)
    }

    /// The bytes after the header.
    pub fn payload(&self) -> &[u8] {
        tail(self.buffer.as_ref(), HEADER_LEN)
    }
}

/// The decoded Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EthernetRepr {
    /// Destination address.
    pub dst: [u8; 6],
    /// Source address.
    pub src: [u8; 6],
    /// EtherType.
    pub ethertype: EtherType,
}

impl EthernetRepr {
    /// Reads the header of a frame.
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> Result<Self, Error> {
        frame.check_len()?;
        Ok(EthernetRepr {
            dst: frame.dst(),
            src: frame.src(),
            ethertype: EtherType::from(frame.ethertype()),
        })
    }

    /// Bytes the header takes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into a frame view.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut EthernetFrame<T>) {
        frame.set_dst(self.dst);
        frame.set_src(self.src);
        frame.set_ethertype(u16::from(self.ethertype));
    }
}

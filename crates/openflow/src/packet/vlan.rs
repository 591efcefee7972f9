//! The 802.1Q tag that follows an EtherType of 0x8100: priority, drop eligibility and
//! VLAN id packed in 16 bits, then the inner EtherType.

use super::EtherType;
use crate::wire::tail;
use crate::Error;

/// Length of the tag after the outer EtherType.
pub const TAG_LEN: usize = 4;

view! {
    /// A view of an 802.1Q tag and what follows it.
    VlanTag
}

fields!(VlanTag {
    /// Tag control information: PCP (3 bits), DEI (1), VID (12).
    tci / set_tci: u16 = 0;
    /// EtherType of the payload.
    ethertype / set_ethertype: u16 = 2;
});

impl<T: AsRef<[u8]>> VlanTag<T> {
    /// Checks that the buffer holds the tag.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("802.1Q tag", self.buffer.as_ref(), TAG_LEN)
    }

    /// The 12-bit VLAN id.
    pub fn vid(&self) -> u16 {
        self.tci() & 0x0fff
    }

    /// The bytes after the tag.
    pub fn payload(&self) -> &[u8] {
        tail(self.buffer.as_ref(), TAG_LEN)
    }
}

/// A decoded 802.1Q tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VlanRepr {
    /// Priority code point, 0..=7.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN id, 0..=4095.
    pub vid: u16,
    /// Inner EtherType.
    pub ethertype: EtherType,
}

impl VlanRepr {
    /// Reads a tag.
    pub fn parse<T: AsRef<[u8]>>(tag: &VlanTag<T>) -> Result<Self, Error> {
        tag.check_len()?;
        let tci = tag.tci();
        Ok(VlanRepr {
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            vid: tci & 0x0fff,
            ethertype: EtherType::from(tag.ethertype()),
        })
    }

    /// Bytes the tag takes.
    pub const fn buffer_len(&self) -> usize {
        TAG_LEN
    }

    /// Writes the tag; fails when the priority or the id is too wide for its bits.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, tag: &mut VlanTag<T>) -> Result<(), Error> {
        if self.pcp > 7 {
            return Err(Error::OutOfRange {
                what: "VLAN priority",
                value: u64::from(self.pcp),
            });
        }
        if self.vid > 0x0fff {
            return Err(Error::OutOfRange {
                what: "VLAN id",
                value: u64::from(self.vid),
            });
        }
        let tci = (u16::from(self.pcp) << 13) | (u16::from(self.dei) << 12) | self.vid;
        tag.set_tci(tci);
        tag.set_ethertype(u16::from(self.ethertype));
        Ok(())
    }
}

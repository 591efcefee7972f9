//! The key layout of the one sled tree.
//!
//! Every key starts with a tag byte that names the record kind; numbers are big-endian so
//! that byte order is numeric order, which makes prefix scans return insertion order:
//!
//! | tag | key after the tag               | value            |
//! |-----|---------------------------------|------------------|
//! | `!` | meta name                       | meta value       |
//! | `n` | slice name                      | slice id         |
//! | `s` | slice id                        | slice name       |
//! | `p` | slice id, dpid, port_no         | port seq         |
//! | `q` | slice id, port seq              | dpid, port_no    |
//! | `m` | slice id, dpid, port_no, mac    | mac seq          |
//! | `o` | slice id, dpid, port_no, mac seq| mac              |
//!
//! Ids and seqs come from sled's monotonic id generator, so a later insert sorts later.
//! A slice id is never reused: a slice deleted and made again starts from nothing.

use slice_core::{MacAddress, PortId, SliceName, SLICE_NAME_MAX_LEN};

#[derive(Debug, Clone, Copy)]
#[repr(u8)]
pub(crate) enum Tag {
    Meta = b'!',
    SliceName = b'n',
    SliceOrder = b's',
    PortIndex = b'p',
    PortOrder = b'q',
    MacIndex = b'm',
    MacOrder = b'o',
}

/// Room for the longest key: a tag and a slice name, or a tag, id, port and seq.
const KEY_CAPACITY: usize = 1 + SLICE_NAME_MAX_LEN;

/// A key built on the stack, so that reads and writes allocate no key.
#[derive(Clone, Copy)]
pub(crate) struct Key {
    bytes: [u8; KEY_CAPACITY],
    len: usize,
}

impl Key {
    pub(crate) fn tag(tag: Tag) -> Self {
        let empty = Self {
            bytes: [0; KEY_CAPACITY],
            len: 0,
        };
        empty.push(&[tag as u8])
    }

    pub(crate) fn meta(name: &str) -> Self {
        Self::tag(Tag::Meta).push(name.as_bytes())
    }

    pub(crate) fn name(self, name: &SliceName) -> Self {
        self.push(name.as_str().as_bytes())
    }

    pub(crate) fn id(self, id: u64) -> Self {
        self.push(&id.to_be_bytes())
    }

    pub(crate) fn seq(self, seq: u64) -> Self {
        self.push(&seq.to_be_bytes())
    }

    pub(crate) fn port(self, port: PortId) -> Self {
        self.push(&encode_port(port))
    }

    pub(crate) fn mac(self, mac: MacAddress) -> Self {
        self.push(&mac.octets())
    }

    // The longest chain of pushes (tag, id, port, seq: 29 bytes; tag and name: 65) fits
    // KEY_CAPACITY by construction, so the slice bounds below cannot be exceeded.
    #[must_use]
    fn push(mut self, part: &[u8]) -> Self {
        let end = self.len + part.len();
        self.bytes[self.len..end].copy_from_slice(part);
        self.len = end;
        self
    }
}

impl AsRef<[u8]> for Key {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

pub(crate) fn encode_port(port: PortId) -> [u8; 12] {
    let mut bytes = [0; 12];
    bytes[..8].copy_from_slice(&port.dpid.to_be_bytes());
    bytes[8..].copy_from_slice(&port.port_no.to_be_bytes());
    bytes
}

pub(crate) fn decode_port(bytes: &[u8]) -> Option<PortId> {
    let dpid = bytes.get(..8)?.try_into().ok().map(u64::from_be_bytes)?;
    let port_no = bytes.get(8..12)?.try_into().ok().map(u32::from_be_bytes)?;
    (bytes.len() == 12).then_some(PortId::new(dpid, port_no))
}

pub(crate) fn decode_u64(bytes: &[u8]) -> Option<u64> {
    bytes.try_into().ok().map(u64::from_be_bytes)
}

/// The id that follows the tag byte of a key.
pub(crate) fn id_after_tag(key: &[u8]) -> Option<u64> {
    key.get(1..9).and_then(decode_u64)
}

/// The slice id and sequence number after the tag of a port order key.
pub(crate) fn id_and_seq_after_tag(key: &[u8]) -> Option<(u64, u64)> {
    if key.len() != 1 + 8 + 8 {
        return None;
    }
    Some((
        key.get(1..9).and_then(decode_u64)?,
        key.get(9..17).and_then(decode_u64)?,
    ))
}

/// The slice id, port and sequence number of a MAC order key.
pub(crate) fn mac_order_parts(key: &[u8]) -> Option<(u64, PortId, u64)> {
    if key.len() != 1 + 8 + 12 + 8 {
        return None;
    }
    let id = key.get(1..9).and_then(decode_u64)?;
    let port = decode_port(key.get(9..21)?)?;
    let seq = key.get(21..29).and_then(decode_u64)?;
    Some((id, port, seq))
}

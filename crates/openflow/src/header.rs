//! The 8-byte header every OpenFlow message starts with (the same in all versions),
//! and framing of a byte stream into messages.

use crate::wire::sub;
use crate::{Error, Version};

/// Byte offsets of `ofp_header`.
mod field {
    pub(super) const VERSION: usize = 0;
    pub(super) const TYPE: usize = 1;
    pub(super) const LENGTH: usize = 2;
    pub(super) const XID: usize = 4;
}

/// Length of `ofp_header`.
pub const HEADER_LEN: usize = 8;

view! {
    /// A view of a whole OpenFlow message: its `ofp_header` and the body after it.
    Header
}

fields!(Header {
    /// Wire version (0x01 for 1.0, 0x04 for 1.3).
    version / set_version: u8 = field::VERSION;
    /// Message type; numbering depends on the version, see [`crate::msg_type`].
    msg_type / set_msg_type: u8 = field::TYPE;
    /// Length of the whole message, header included.
    length / set_length: u16 = field::LENGTH;
    /// Transaction id, echoed by replies.
    xid / set_xid: u32 = field::XID;
});

impl<T: AsRef<[u8]>> Header<T> {
    /// Checks that the buffer holds the header, that the length field is at least the
    /// header's own size, and that the buffer holds the whole message it announces.
    pub fn check_len(&self) -> Result<(), Error> {
        let buffer = self.buffer.as_ref();
        Error::need("OpenFlow header", buffer, HEADER_LEN)?;
        let length = usize::from(self.length());
        if length < HEADER_LEN {
            return Err(Error::BadLength {
                what: "OpenFlow message",
                length,
            });
        }
        Error::need("OpenFlow message", buffer, length)
    }

    /// The body: the bytes after the header, up to the header's length.
    pub fn body(&self) -> &[u8] {
        sub(self.buffer.as_ref(), HEADER_LEN, usize::from(self.length()))
    }
}

/// The decoded `ofp_header`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HeaderRepr {
    /// Wire version.
    pub version: Version,
    /// Message type, in the numbering of `version`.
    pub msg_type: u8,
    /// Length of the whole message, header included.
    pub length: u16,
    /// Transaction id.
    pub xid: u32,
}

impl HeaderRepr {
    /// Reads the header fields of a view.
    pub fn parse<T: AsRef<[u8]>>(header: &Header<T>) -> HeaderRepr {
        HeaderRepr {
            version: Version::from(header.version()),
            msg_type: header.msg_type(),
            length: header.length(),
            xid: header.xid(),
        }
    }

    /// Writes the header fields into a view.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, header: &mut Header<T>) {
        header.set_version(u8::from(self.version));
        header.set_msg_type(self.msg_type);
        header.set_length(self.length);
        header.set_xid(self.xid);
    }
}

/// `Some(len)` when `bytes` starts with a complete message of `len` bytes (by its
/// header's length field), `None` when more bytes are needed first, and `Err` when the
/// length field is below 8: such a stream can never be split into messages again.
pub fn frame_len(bytes: &[u8]) -> Result<Option<usize>, Error> {
    // The length field sits at bytes 2..4; judge it as soon as it has arrived.
    if bytes.len() < field::LENGTH + 2 {
        return Ok(None);
    }
    let length = usize::from(Header::new_unchecked(bytes).length());
    if length < HEADER_LEN {
        return Err(Error::BadLength {
            what: "OpenFlow message",
            length,
        });
    }
    Ok((bytes.len() >= length).then_some(length))
}

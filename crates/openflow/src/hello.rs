//! HELLO elements (1.3.1 and later): a list of TLVs, each padded to 8 bytes, of which
//! `OFPHET_VERSIONBITMAP` says which wire versions the sender speaks.

use crate::wire::{pad8, read_field, sub, tail, write_field};
use crate::Error;

/// `OFPHET_VERSIONBITMAP`.
pub const ELEMENT_VERSION_BITMAP: u16 = 1;
/// Length of the type-and-length header of an element.
pub const ELEMENT_HEADER_LEN: usize = 4;
/// Length of a version bitmap element carrying one 32-bit word (no padding needed).
pub const VERSION_BITMAP_LEN: usize = 8;

view! {
    /// A view of one HELLO element: type, length (without padding), body, padding.
    HelloElement
}

fields!(HelloElement {
    /// `OFPHET_*` element type.
    element_type / set_element_type: u16 = 0;
    /// Length of header and body, without the padding.
    length / set_length: u16 = 2;
});

impl<T: AsRef<[u8]>> HelloElement<T> {
    /// Checks that the length covers the header and that the buffer holds the element
    /// (the padding of the last element may be missing).
    pub fn check_len(&self) -> Result<(), Error> {
        let buffer = self.buffer.as_ref();
        Error::need("HELLO element", buffer, ELEMENT_HEADER_LEN)?;
        let length = usize::from(self.length());
        if length < ELEMENT_HEADER_LEN {
            return Err(Error::BadLength {
                what: "HELLO element",
                length,
            });
        }
        Error::need("HELLO element", buffer, length)
    }

    /// The bytes after the header, without padding.
    pub fn body(&self) -> &[u8] {
        sub(
            self.buffer.as_ref(),
            ELEMENT_HEADER_LEN,
            usize::from(self.length()),
        )
    }
}

/// The decoded HELLO body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HelloRepr {
    /// The first word of the version bitmap (bit n set: wire version n spoken), when
    /// the sender included one.
    pub versions: Option<u32>,
}

impl HelloRepr {
    /// Reads the elements of a HELLO body.
    ///
    /// HELLO is how peers of different versions meet, so the body is read leniently:
    /// unknown elements are skipped, a bitmap element without a whole word is ignored,
    /// and a malformed element ends the scan instead of failing the message (a 1.0 peer
    /// may send anything there). Only the first 32-bit word of a bitmap is kept.
    pub fn parse(body: &[u8]) -> HelloRepr {
        let mut versions = None;
        let mut rest = body;
        while let Ok(element) = HelloElement::new_checked(rest) {
            if element.element_type() == ELEMENT_VERSION_BITMAP && element.body().len() >= 4 {
                versions = Some(read_field(element.body(), 0));
                break;
            }
            rest = tail(rest, pad8(usize::from(element.length())));
        }
        HelloRepr { versions }
    }

    /// Bytes the body takes.
    pub fn buffer_len(&self) -> usize {
        if self.versions.is_some() {
            VERSION_BITMAP_LEN
        } else {
            0
        }
    }

    /// Writes the body into a buffer of [`Self::buffer_len`] bytes.
    pub fn emit(&self, buffer: &mut [u8]) {
        if let Some(versions) = self.versions {
            let mut element = HelloElement::new_unchecked(&mut *buffer);
            element.set_element_type(ELEMENT_VERSION_BITMAP);
            element.set_length(VERSION_BITMAP_LEN as u16);
            write_field(buffer, ELEMENT_HEADER_LEN, versions);
        }
    }
}

//! Actions: the generic `ofp_action_header` TLV and the output action, whose layout
//! differs between 1.0 (8 bytes, 16-bit port) and 1.3 (16 bytes, 32-bit port).

use crate::wire::{length_u16, sub, tail, tail_mut, write_slice};
use crate::{port, Error, Version};

/// `OFPAT_OUTPUT`, the same number in both versions.
pub const ACTION_OUTPUT: u16 = 0;
/// Length of the type-and-length header every action starts with.
pub const ACTION_HEADER_LEN: usize = 4;
/// Length of 1.0's `ofp_action_output`.
pub const OUTPUT_V10_LEN: usize = 8;
/// Length of 1.3's `ofp_action_output`.
pub const OUTPUT_V13_LEN: usize = 16;

view! {
    /// A view of any action: `ofp_action_header`'s type and length, then the body.
    /// Action lengths are multiples of 8 in both versions.
    ActionHeader
}

fields!(ActionHeader {
    /// `OFPAT_*` action type.
    action_type / set_action_type: u16 = 0;
    /// Length of the whole action, header included.
    length / set_length: u16 = 2;
});

impl<T: AsRef<[u8]>> ActionHeader<T> {
    /// Checks that the length field is a non-zero multiple of 8 and that the buffer
    /// holds that many bytes.
    pub fn check_len(&self) -> Result<(), Error> {
        let buffer = self.buffer.as_ref();
        Error::need("action header", buffer, ACTION_HEADER_LEN)?;
        let length = usize::from(self.length());
        if length == 0 || length % 8 != 0 {
            return Err(Error::BadLength {
                what: "action",
                length,
            });
        }
        Error::need("action", buffer, length)
    }

    /// The bytes after the 4-byte header, up to the action's length.
    pub fn body(&self) -> &[u8] {
        sub(
            self.buffer.as_ref(),
            ACTION_HEADER_LEN,
            usize::from(self.length()),
        )
    }
}

view! {
    /// A view of OpenFlow 1.0's `ofp_action_output` (8 bytes).
    OutputV10
}

fields!(OutputV10 {
    /// `OFPAT_OUTPUT`.
    action_type / set_action_type: u16 = 0;
    /// 8.
    length / set_length: u16 = 2;
    /// 16-bit output port.
    port / set_port: u16 = 4;
    /// Bytes of the packet to send when the port is the controller.
    max_len / set_max_len: u16 = 6;
});

impl<T: AsRef<[u8]>> OutputV10<T> {
    /// Checks the buffer length and the action's own length field.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("output action", self.buffer.as_ref(), OUTPUT_V10_LEN)?;
        exact_length(self.length(), OUTPUT_V10_LEN)
    }
}

view! {
    /// A view of OpenFlow 1.3's `ofp_action_output` (16 bytes, the last 6 padding).
    OutputV13
}

fields!(OutputV13 {
    /// `OFPAT_OUTPUT`.
    action_type / set_action_type: u16 = 0;
    /// 16.
    length / set_length: u16 = 2;
    /// 32-bit output port.
    port / set_port: u32 = 4;
    /// Bytes of the packet to send when the port is the controller.
    max_len / set_max_len: u16 = 8;
});

impl<T: AsRef<[u8]>> OutputV13<T> {
    /// Checks the buffer length and the action's own length field.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("output action", self.buffer.as_ref(), OUTPUT_V13_LEN)?;
        exact_length(self.length(), OUTPUT_V13_LEN)
    }
}

fn exact_length(length: u16, expected: usize) -> Result<(), Error> {
    if usize::from(length) != expected {
        return Err(Error::BadLength {
            what: "output action",
            length: usize::from(length),
        });
    }
    Ok(())
}

/// `max_len` of an output to the controller that sends the whole packet and buffers
/// nothing (`OFPCML_NO_BUFFER` on 1.3; on 1.0 the largest length, so the same effect). Also
/// the `miss_send_len` of a SET_CONFIG that asks for whole packets.
pub const WHOLE_PACKET: u16 = 0xffff;

/// An action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send the packet out of `port`; `max_len` bounds what reaches the controller.
    Output {
        /// Output port, 32-bit numbering.
        port: u32,
        /// Bytes of the packet to send to the controller ([`WHOLE_PACKET`]: all).
        max_len: u16,
    },
    /// Any other action, kept as its type and the bytes after the 4-byte header
    /// (so `4 + body.len()` must be a multiple of 8 to be emitted). Emitted verbatim;
    /// an `Other` whose `kind` is a modelled type parses back as that type.
    Other {
        /// `OFPAT_*` type.
        kind: u16,
        /// Bytes after the type and length fields, padding included.
        body: Vec<u8>,
    },
}

impl Action {
    /// Reads one action at the start of `bytes` in wire `version`; gives the action and
    /// its length.
    pub fn parse(version: Version, bytes: &[u8]) -> Result<(Action, usize), Error> {
        let header = ActionHeader::new_checked(bytes)?;
        let length = usize::from(header.length());
        let own = sub(bytes, 0, length);
        let action = match (header.action_type(), version) {
            (ACTION_OUTPUT, Version::Of10) => {
                let view = OutputV10::new_checked(own)?;
                Action::Output {
                    port: port::from_v10(view.port()),
                    max_len: view.max_len(),
                }
            }
            (ACTION_OUTPUT, Version::Of13) => {
                let view = OutputV13::new_checked(own)?;
                Action::Output {
                    port: view.port(),
                    max_len: view.max_len(),
                }
            }
            (kind, _) => Action::Other {
                kind,
                body: header.body().to_vec(),
            },
        };
        Ok((action, length))
    }

    /// Bytes this action takes in wire `version`.
    pub fn buffer_len(&self, version: Version) -> usize {
        match self {
            Action::Output { .. } if version == Version::Of10 => OUTPUT_V10_LEN,
            Action::Output { .. } => OUTPUT_V13_LEN,
            Action::Other { body, .. } => ACTION_HEADER_LEN.saturating_add(body.len()),
        }
    }

    /// Writes the action for wire `version` into a zeroed buffer of
    /// [`Self::buffer_len`] bytes.
    pub fn emit(&self, version: Version, buffer: &mut [u8]) -> Result<(), Error> {
        match self {
            Action::Output { port, max_len } if version == Version::Of10 => {
                let mut view = OutputV10::new_unchecked(buffer);
                view.set_action_type(ACTION_OUTPUT);
                view.set_length(OUTPUT_V10_LEN as u16);
                view.set_port(port::encode_v10("output port", *port)?);
                view.set_max_len(*max_len);
            }
            Action::Output { port, max_len } => {
                let mut view = OutputV13::new_unchecked(buffer);
                view.set_action_type(ACTION_OUTPUT);
                view.set_length(OUTPUT_V13_LEN as u16);
                view.set_port(*port);
                view.set_max_len(*max_len);
            }
            Action::Other { kind, body } => {
                let length = self.buffer_len(version);
                if length % 8 != 0 {
                    return Err(Error::BadLength {
                        what: "action",
                        length,
                    });
                }
                let mut view = ActionHeader::new_unchecked(&mut *buffer);
                view.set_action_type(*kind);
                view.set_length(length_u16("action", length)?);
                write_slice(buffer, ACTION_HEADER_LEN, body);
            }
        }
        Ok(())
    }
}

/// Parses an action list that fills `bytes` exactly.
pub(crate) fn parse_list(version: Version, mut bytes: &[u8]) -> Result<Vec<Action>, Error> {
    let mut actions = Vec::new();
    while !bytes.is_empty() {
        let (action, length) = Action::parse(version, bytes)?;
        actions.push(action);
        bytes = tail(bytes, length);
    }
    Ok(actions)
}

/// Bytes an action list takes in wire `version`.
pub(crate) fn list_len(version: Version, actions: &[Action]) -> usize {
    actions
        .iter()
        .fold(0, |sum: usize, a| sum.saturating_add(a.buffer_len(version)))
}

/// Writes an action list into a zeroed buffer of [`list_len`] bytes.
pub(crate) fn emit_list(
    version: Version,
    actions: &[Action],
    mut buffer: &mut [u8],
) -> Result<(), Error> {
    for action in actions {
        action.emit(version, buffer)?;
        buffer = tail_mut(buffer, action.buffer_len(version));
    }
    Ok(())
}

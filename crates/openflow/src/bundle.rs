//! Bundles: a group of changes the switch applies together, or not at all.
//!
//! OpenFlow 1.4 made them messages of their own, `OFPT_BUNDLE_CONTROL` (type 33: open,
//! close, commit, discard and their replies) and `OFPT_BUNDLE_ADD_MESSAGE` (type 34:
//! one message into an open bundle). On 1.3, Open vSwitch accepts the same bodies as
//! the ONF extension 230: `OFPT_EXPERIMENTER` messages of experimenter [`ONF_ID`] whose
//! experimenter type is [`ONFT_BUNDLE_CONTROL`] or [`ONFT_BUNDLE_ADD_MESSAGE`]. Only the
//! framing differs ([`Framing`]), so the views here cover the body, from the bundle id
//! on, and [`crate::Message`] frames it for the version it speaks (1.3: the extension).
//!
//! Refusals come as `OFPET_BUNDLE_FAILED` errors on 1.4 and as ONF experimenter errors
//! on 1.3, whose experimenter type is 2300 plus the same code; [`bundle_failure`] reads
//! either.

use crate::error_msg::ErrorType;
use crate::header::HEADER_LEN;
use crate::wire::{read_field, tail};
use crate::Error;

/// Byte offsets of the bundle body (`ofp_bundle_ctrl_msg` / `ofp_bundle_add_msg` after
/// their header).
mod field {
    pub(super) const BUNDLE_ID: usize = 0;
    /// The control type; unused (zero) in an add.
    pub(super) const TYPE: usize = 4;
    pub(super) const FLAGS: usize = 6;
    /// An add's encapsulated message, header included.
    pub(super) const MESSAGE: usize = 8;
}

/// Length of a bundle body before an add's message (and of a control body without
/// properties).
pub const BUNDLE_BODY_LEN: usize = field::MESSAGE;

/// `OFPT_BUNDLE_CONTROL`, the 1.4 message type.
pub const OFPT_BUNDLE_CONTROL: u8 = 33;
/// `OFPT_BUNDLE_ADD_MESSAGE`, the 1.4 message type.
pub const OFPT_BUNDLE_ADD_MESSAGE: u8 = 34;
/// `ONF_EXPERIMENTER_ID`: the experimenter id of the Open Networking Foundation's
/// extensions ("ONF\0").
pub const ONF_ID: u32 = 0x4f4e_4600;
/// `ONFT_BUNDLE_CONTROL`: the experimenter type of a bundle control message on 1.3.
pub const ONFT_BUNDLE_CONTROL: u32 = 2300;
/// `ONFT_BUNDLE_ADD_MESSAGE`: the experimenter type of a bundle add on 1.3.
pub const ONFT_BUNDLE_ADD_MESSAGE: u32 = 2301;
/// The ONF experimenter error type of `OFPBFC_UNKNOWN` on 1.3; code n is this plus n.
pub const ONF_BUNDLE_ERROR_BASE: u16 = 2300;

/// `OFPBF_ATOMIC`: the switch applies the whole bundle or none of it.
pub const FLAG_ATOMIC: u16 = 1 << 0;
/// `OFPBF_ORDERED`: the switch applies the messages in the order they were added.
pub const FLAG_ORDERED: u16 = 1 << 1;

/// Byte offsets of the experimenter header of a 1.3 message, header included.
mod exp_field {
    pub(super) const EXPERIMENTER: usize = 8;
    pub(super) const EXP_TYPE: usize = 12;
    pub(super) const BODY: usize = 16;
}

/// How a bundle body travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// OpenFlow 1.4 and later: message types 33 and 34, the body right after the header.
    Of14,
    /// OpenFlow 1.3 with the ONF extension 230: an `OFPT_EXPERIMENTER` message, the body
    /// after the experimenter id and type.
    Onf13,
}

impl Framing {
    /// Where the bundle body starts in the whole message.
    pub const fn body_offset(self) -> usize {
        match self {
            Framing::Of14 => HEADER_LEN,
            Framing::Onf13 => exp_field::BODY,
        }
    }
}

/// Which bundle message a 1.3 experimenter message is, by its experimenter id and type
/// (the 8 bytes after the header); None for any other experimenter message or one too
/// short to say.
pub fn onf_bundle_kind(frame: &[u8]) -> Option<u32> {
    if frame.len() < exp_field::BODY {
        return None;
    }
    let experimenter: u32 = read_field(frame, exp_field::EXPERIMENTER);
    let exp_type: u32 = read_field(frame, exp_field::EXP_TYPE);
    (experimenter == ONF_ID && matches!(exp_type, ONFT_BUNDLE_CONTROL | ONFT_BUNDLE_ADD_MESSAGE))
        .then_some(exp_type)
}

/// Writes the 1.3 experimenter id and type of a bundle message of `exp_type` into a
/// frame (header included).
pub(crate) fn emit_onf_header(frame: &mut [u8], exp_type: u32) {
    crate::wire::write_field(frame, exp_field::EXPERIMENTER, ONF_ID);
    crate::wire::write_field(frame, exp_field::EXP_TYPE, exp_type);
}

enum_with_unknown! {
    /// `OFPBCT_*`: what a bundle control message asks or answers.
    pub enum BundleCtrlType(u16) {
        /// `OFPBCT_OPEN_REQUEST`: open a bundle.
        OpenRequest = 0,
        /// `OFPBCT_OPEN_REPLY`: the bundle is open.
        OpenReply = 1,
        /// `OFPBCT_CLOSE_REQUEST`: no more messages will be added.
        CloseRequest = 2,
        /// `OFPBCT_CLOSE_REPLY`: the bundle is closed.
        CloseReply = 3,
        /// `OFPBCT_COMMIT_REQUEST`: apply the bundle.
        CommitRequest = 4,
        /// `OFPBCT_COMMIT_REPLY`: the bundle was applied.
        CommitReply = 5,
        /// `OFPBCT_DISCARD_REQUEST`: drop the bundle unapplied.
        DiscardRequest = 6,
        /// `OFPBCT_DISCARD_REPLY`: the bundle was dropped.
        DiscardReply = 7,
    }
}

enum_with_unknown! {
    /// `ofp_bundle_failed_code`: the codes of `OFPET_BUNDLE_FAILED` (1.4), and, plus
    /// [`ONF_BUNDLE_ERROR_BASE`], the ONF experimenter error types of 1.3.
    pub enum BundleFailedCode(u16) {
        /// `OFPBFC_UNKNOWN`: unspecified error.
        Unspecified = 0,
        /// `OFPBFC_EPERM`: permissions error.
        Eperm = 1,
        /// `OFPBFC_BAD_ID`: no bundle of that id.
        BadId = 2,
        /// `OFPBFC_BUNDLE_EXIST`: a bundle of that id is open already.
        BundleExist = 3,
        /// `OFPBFC_BUNDLE_CLOSED`: the bundle is closed.
        BundleClosed = 4,
        /// `OFPBFC_OUT_OF_BUNDLES`: too many bundles open.
        OutOfBundles = 5,
        /// `OFPBFC_BAD_TYPE`: a control type the switch does not know.
        BadType = 6,
        /// `OFPBFC_BAD_FLAGS`: flags the switch does not support, or inconsistent ones.
        BadFlags = 7,
        /// `OFPBFC_MSG_BAD_LEN`: an added message's length is wrong.
        MsgBadLen = 8,
        /// `OFPBFC_MSG_BAD_XID`: an added message's xid is not its add's.
        MsgBadXid = 9,
        /// `OFPBFC_MSG_UNSUP`: a message that cannot go in a bundle.
        MsgUnsup = 10,
        /// `OFPBFC_MSG_CONFLICT`: messages that cannot go in one bundle together.
        MsgConflict = 11,
        /// `OFPBFC_MSG_TOO_MANY`: more messages than the switch takes in one bundle.
        MsgTooMany = 12,
        /// `OFPBFC_MSG_FAILED`: a message of the bundle failed (its own error came
        /// first), so the commit did nothing.
        MsgFailed = 13,
        /// `OFPBFC_TIMEOUT`: the bundle took too long.
        Timeout = 14,
        /// `OFPBFC_BUNDLE_IN_PROGRESS`: another bundle holds what this one needs.
        BundleInProgress = 15,
    }
}

/// Why a bundle failed, if `(err_type, code, data)` is a bundle error: 1.4's
/// `OFPET_BUNDLE_FAILED`, or 1.3's ONF experimenter error (type `0xffff`, its "code"
/// the experimenter type 2300 + n, its data starting with [`ONF_ID`]).
pub fn bundle_failure(err_type: ErrorType, code: u16, data: &[u8]) -> Option<BundleFailedCode> {
    match err_type {
        ErrorType::BundleFailed => Some(BundleFailedCode::from(code)),
        ErrorType::Experimenter if data.len() >= 4 && read_field::<u32>(data, 0) == ONF_ID => code
            .checked_sub(ONF_BUNDLE_ERROR_BASE)
            .filter(|n| *n <= u16::from(BundleFailedCode::BundleInProgress))
            .map(BundleFailedCode::from),
        _ => None,
    }
}

view! {
    /// A view of a bundle body (control or add), from the bundle id on: the whole
    /// message from [`Framing::body_offset`].
    BundleBody
}

fields!(BundleBody {
    /// The bundle's id, chosen by the controller.
    bundle_id / set_bundle_id: u32 = field::BUNDLE_ID;
    /// `OFPBCT_*` of a control message; see [`BundleCtrlType`]. Zero in an add.
    ctrl_type / set_ctrl_type: u16 = field::TYPE;
    /// `OFPBF_*` flags.
    flags / set_flags: u16 = field::FLAGS;
});

impl<T: AsRef<[u8]>> BundleBody<T> {
    /// Checks that the buffer holds the fixed part.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("bundle message", self.buffer.as_ref(), BUNDLE_BODY_LEN)
    }

    /// An add's encapsulated message (header included); a control message's properties.
    pub fn message(&self) -> &[u8] {
        tail(self.buffer.as_ref(), field::MESSAGE)
    }
}

/// A bundle control message: a request to open, close, commit or discard, or the
/// switch's reply. Properties are not modelled: none are emitted, and any a switch sends
/// are skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BundleControl {
    /// The bundle.
    pub bundle_id: u32,
    /// What is asked or answered.
    pub ctrl_type: BundleCtrlType,
    /// `OFPBF_*` flags; the same on every control message of one bundle.
    pub flags: u16,
}

impl BundleControl {
    /// Reads the repr from a checked view.
    pub fn parse<T: AsRef<[u8]>>(view: &BundleBody<T>) -> Self {
        BundleControl {
            bundle_id: view.bundle_id(),
            ctrl_type: BundleCtrlType::from(view.ctrl_type()),
            flags: view.flags(),
        }
    }

    /// Writes the repr into a zeroed view of [`BUNDLE_BODY_LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut BundleBody<T>) {
        view.set_bundle_id(self.bundle_id);
        view.set_ctrl_type(u16::from(self.ctrl_type));
        view.set_flags(self.flags);
    }
}

/// A message added to an open bundle. The encapsulated message is kept as bytes (its
/// header included), so that a bundle inside a bundle costs no recursion to parse. Its
/// header's xid must be the add's own (a switch refuses it otherwise with
/// `OFPBFC_MSG_BAD_XID`): the bytes are written as given, so that what parses emits the
/// same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleAdd {
    /// The bundle.
    pub bundle_id: u32,
    /// `OFPBF_*` flags: the bundle's, as given when it was opened.
    pub flags: u16,
    /// The whole encapsulated message, at least an 8-byte header whose length is its
    /// own.
    pub message: Vec<u8>,
}

impl BundleAdd {
    /// Reads the repr from a checked view; the encapsulated message must be a whole
    /// message (its header's length is where it ends; properties after it are skipped).
    pub fn parse<T: AsRef<[u8]>>(view: &BundleBody<T>) -> Result<Self, Error> {
        let inner = view.message();
        let header = crate::header::Header::new_checked(inner)?;
        let length = usize::from(header.length());
        Ok(BundleAdd {
            bundle_id: view.bundle_id(),
            flags: view.flags(),
            message: crate::wire::sub(inner, 0, length).to_vec(),
        })
    }

    /// Length of the body: the fixed part and the message.
    pub fn buffer_len(&self) -> usize {
        BUNDLE_BODY_LEN.saturating_add(self.message.len())
    }

    /// Writes the repr into a zeroed view of [`Self::buffer_len`] bytes. Fails for a
    /// message shorter than a header or whose header's length is not its own.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        view: &mut BundleBody<T>,
    ) -> Result<(), Error> {
        let header = crate::header::Header::new_checked(&self.message[..])?;
        if usize::from(header.length()) != self.message.len() {
            return Err(Error::BadLength {
                what: "message added to a bundle",
                length: self.message.len(),
            });
        }
        view.set_bundle_id(self.bundle_id);
        view.set_flags(self.flags);
        crate::wire::write_slice(view.buffer.as_mut(), field::MESSAGE, &self.message);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_control_body_reads_back_in_both_framings() {
        let control = BundleControl {
            bundle_id: 0x0102_0304,
            ctrl_type: BundleCtrlType::CommitRequest,
            flags: FLAG_ATOMIC | FLAG_ORDERED,
        };
        for framing in [Framing::Of14, Framing::Onf13] {
            let mut frame = vec![0u8; framing.body_offset() + BUNDLE_BODY_LEN];
            let at = framing.body_offset();
            control.emit(&mut BundleBody::new_unchecked(&mut frame[at..]));
            assert_eq!(&frame[at..], &[1, 2, 3, 4, 0, 4, 0, 3]);
            let view = BundleBody::new_checked(&frame[at..]).unwrap();
            assert_eq!(BundleControl::parse(&view), control);
        }
    }

    #[test]
    fn an_add_carries_its_message_as_given() {
        let inner = vec![4, 20, 0, 8, 0, 0, 0, 77];
        let add = BundleAdd {
            bundle_id: 9,
            flags: FLAG_ATOMIC,
            message: inner,
        };
        let mut body = vec![0u8; add.buffer_len()];
        add.emit(&mut BundleBody::new_unchecked(&mut body[..]))
            .unwrap();
        assert_eq!(body, [0, 0, 0, 9, 0, 0, 0, 1, 4, 20, 0, 8, 0, 0, 0, 77]);
        let parsed = BundleAdd::parse(&BundleBody::new_checked(&body[..]).unwrap()).unwrap();
        assert_eq!(parsed.message, [4, 20, 0, 8, 0, 0, 0, 77]);
        // An add without a whole message in it is refused both ways.
        let short = BundleAdd {
            message: vec![4, 20, 0, 9],
            ..add
        };
        let mut body = vec![0u8; short.buffer_len()];
        assert!(short
            .emit(&mut BundleBody::new_unchecked(&mut body[..]))
            .is_err());
        assert!(BundleAdd::parse(&BundleBody::new_unchecked(&body[..])).is_err());
    }

    #[test]
    fn on_1_3_bundles_are_onf_experimenter_messages() {
        use crate::{Message, Version};
        let open = Message::BundleControl(BundleControl {
            bundle_id: 5,
            ctrl_type: BundleCtrlType::OpenRequest,
            flags: FLAG_ATOMIC | FLAG_ORDERED,
        });
        let mut out = Vec::new();
        open.emit(Version::Of13, 0x10, &mut out).unwrap();
        #[rustfmt::skip]
        let expected = [
            4, 4, 0, 24, 0, 0, 0, 0x10, // 1.3 OFPT_EXPERIMENTER, 24 bytes
            0x4f, 0x4e, 0x46, 0x00, 0, 0, 0x08, 0xfc, // ONF, ONFT_BUNDLE_CONTROL (2300)
            0, 0, 0, 5, 0, 0, 0, 3, // bundle 5, OPEN_REQUEST, ATOMIC | ORDERED
        ];
        assert_eq!(out, expected);
        assert_eq!(Message::parse(&out).unwrap().1, open);
        let add = Message::BundleAdd(BundleAdd {
            bundle_id: 5,
            flags: FLAG_ATOMIC | FLAG_ORDERED,
            message: vec![4, 20, 0, 8, 0, 0, 0, 0x11],
        });
        out.clear();
        add.emit(Version::Of13, 0x11, &mut out).unwrap();
        assert_eq!(Message::parse(&out).unwrap().1, add);
        assert_eq!(&out[..4], &[4, 4, 0, 32]);
        assert_eq!(&out[8..16], &[0x4f, 0x4e, 0x46, 0x00, 0, 0, 0x08, 0xfd]);
        assert_eq!(&out[24..], &[4, 20, 0, 8, 0, 0, 0, 0x11]);
        // 1.0 has no bundles; another experimenter's message stays unmodelled.
        assert!(open.emit(Version::Of10, 1, &mut Vec::new()).is_err());
        out[8] = 0;
        assert!(matches!(
            Message::parse(&out).unwrap().1,
            Message::Other { msg_type: 4, .. }
        ));
    }

    #[test]
    fn bundle_errors_read_alike_on_1_4_and_on_1_3() {
        let onf = ONF_ID.to_be_bytes();
        assert_eq!(
            bundle_failure(ErrorType::BundleFailed, 13, &[]),
            Some(BundleFailedCode::MsgFailed)
        );
        assert_eq!(
            bundle_failure(ErrorType::Experimenter, 2313, &onf),
            Some(BundleFailedCode::MsgFailed)
        );
        assert_eq!(
            bundle_failure(ErrorType::Experimenter, 2300, &onf),
            Some(BundleFailedCode::Unspecified)
        );
        // Another experimenter's, or an ONF error past the bundle codes, is not one.
        assert_eq!(
            bundle_failure(ErrorType::Experimenter, 2313, &[0, 0, 0x23, 0x20]),
            None
        );
        assert_eq!(bundle_failure(ErrorType::Experimenter, 2316, &onf), None);
        assert_eq!(bundle_failure(ErrorType::Experimenter, 13, &onf), None);
        assert_eq!(bundle_failure(ErrorType::BadRequest, 13, &onf), None);
    }
}

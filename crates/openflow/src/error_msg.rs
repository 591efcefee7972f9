//! ERROR: `ofp_error_msg`, the same in both versions.

use crate::wire::tail;
use crate::Error;

/// Byte offsets of `ofp_error_msg`, header included.
mod field {
    pub const TYPE: usize = 8;
    pub const CODE: usize = 10;
    pub const DATA: usize = 12;
}

/// Length of `ofp_error_msg` before its data.
pub const ERROR_MSG_LEN: usize = field::DATA;

/// `OFPET_HELLO_FAILED`.
pub const ERROR_TYPE_HELLO_FAILED: u16 = 0;
/// `OFPHFC_INCOMPATIBLE`: no common version.
pub const HELLO_FAILED_INCOMPATIBLE: u16 = 0;

/// `OFPET_BAD_REQUEST`.
pub const ERROR_TYPE_BAD_REQUEST: u16 = 1;
/// `OFPBRC_BAD_MULTIPART`: a multipart type the switch does not serve.
pub const BAD_REQUEST_BAD_MULTIPART: u16 = 2;
/// `OFPET_METER_MOD_FAILED` (1.3).
pub const ERROR_TYPE_METER_MOD_FAILED: u16 = 12;
/// `OFPMMFC_METER_EXISTS`: an add for a meter id that is taken.
pub const METER_MOD_FAILED_METER_EXISTS: u16 = 1;
/// `OFPMMFC_UNKNOWN_METER`: a modify or delete of a meter that does not exist.
pub const METER_MOD_FAILED_UNKNOWN_METER: u16 = 3;
/// `OFPMMFC_BAD_FLAGS`: flags the switch does not support.
pub const METER_MOD_FAILED_BAD_FLAGS: u16 = 5;
/// `OFPMMFC_BAD_RATE`: a rate the switch does not support.
pub const METER_MOD_FAILED_BAD_RATE: u16 = 6;
/// `OFPMMFC_OUT_OF_METERS`: no room for another meter.
pub const METER_MOD_FAILED_OUT_OF_METERS: u16 = 10;

view! {
    /// A view of an ERROR message, header included. (1.3's experimenter errors put an
    /// experimenter id where `code` and the data begin; they read as a code and data.)
    ErrorMsg
}

fields!(ErrorMsg {
    /// `OFPET_*` error type.
    err_type / set_err_type: u16 = field::TYPE;
    /// Type-specific code.
    code / set_code: u16 = field::CODE;
});

impl<T: AsRef<[u8]>> ErrorMsg<T> {
    /// Checks that the buffer holds type and code.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("ERROR", self.buffer.as_ref(), ERROR_MSG_LEN)
    }

    /// What failed: usually the start of the offending message.
    pub fn data(&self) -> &[u8] {
        tail(self.buffer.as_ref(), field::DATA)
    }
}

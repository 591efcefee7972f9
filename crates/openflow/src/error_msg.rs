//! ERROR: `ofp_error_msg`, the same in both versions.

use crate::wire::tail;
use crate::Error;

/// Byte offsets of `ofp_error_msg`, header included.
mod field {
    pub(super) const TYPE: usize = 8;
    pub(super) const CODE: usize = 10;
    pub(super) const DATA: usize = 12;
}

/// Length of `ofp_error_msg` before its data.
pub const ERROR_MSG_LEN: usize = field::DATA;

enum_with_unknown! {
    /// The `OFPET_*` error type.
    ///
    /// 1.0 and 1.3 number their error types alike only up to `OFPET_BAD_ACTION`; past
    /// it they part ways. Since [`crate::Message::Error`] does not depend on the
    /// version, only the numbers that mean the same in both are named (1.3's
    /// `OFPET_ROLE_REQUEST_FAILED` is 11 and `OFPET_METER_MOD_FAILED` 12, which 1.0 does
    /// not use, and Open vSwitch's `NXET_VENDOR` is a number no version uses); the rest
    /// read as `Unknown`.
    pub enum ErrorType(u16) {
        /// `OFPET_HELLO_FAILED`: the handshake failed; codes are [`HelloFailedCode`].
        HelloFailed = 0,
        /// `OFPET_BAD_REQUEST`: the request was not understood; codes are
        /// [`BadRequestCode`].
        BadRequest = 1,
        /// `OFPET_BAD_ACTION`: an action list was refused.
        BadAction = 2,
        /// `OFPET_ROLE_REQUEST_FAILED` (1.3): a ROLE_REQUEST was refused; codes are
        /// [`RoleRequestFailedCode`].
        RoleRequestFailed = 11,
        /// `OFPET_METER_MOD_FAILED` (1.3): a METER_MOD was refused; codes are
        /// [`MeterModFailedCode`].
        MeterModFailed = 12,
        /// `OFPET_BUNDLE_FAILED` (1.4): a bundle was refused; codes are
        /// [`crate::bundle::BundleFailedCode`]. On 1.3 Open vSwitch sends these as
        /// [`ErrorType::Experimenter`] errors (see [`crate::bundle::bundle_failure`]).
        BundleFailed = 17,
        /// `NXET_VENDOR` (Open vSwitch, 1.0): an error 1.0 has no code for; the data
        /// starts with a [`crate::role::NxVendorError`] naming it.
        NiciraVendor = 0xb0c2,
        /// `OFPET_EXPERIMENTER` (1.2 and later): an experimenter's error; the code is the
        /// experimenter's own type and the data starts with its experimenter id.
        Experimenter = 0xffff,
    }
}

enum_with_unknown! {
    /// Codes of [`ErrorType::HelloFailed`] (`ofp_hello_failed_code`).
    pub enum HelloFailedCode(u16) {
        /// `OFPHFC_INCOMPATIBLE`: no common version.
        Incompatible = 0,
        /// `OFPHFC_EPERM`: permissions error.
        Eperm = 1,
    }
}

enum_with_unknown! {
    /// Codes of [`ErrorType::BadRequest`] (`ofp_bad_request_code`; the names are 1.3's,
    /// the numbers used here mean the same in 1.0).
    pub enum BadRequestCode(u16) {
        /// `OFPBRC_BAD_VERSION`: the header's version is not supported.
        BadVersion = 0,
        /// `OFPBRC_BAD_TYPE`: the message type is not supported.
        BadType = 1,
        /// `OFPBRC_BAD_MULTIPART` (1.0's `OFPBRC_BAD_STAT`): a multipart type the switch
        /// does not serve.
        BadMultipart = 2,
        /// `OFPBRC_BAD_EXPERIMENTER` (1.0's `OFPBRC_BAD_VENDOR`): an experimenter (vendor)
        /// id the switch does not know.
        BadExperimenter = 3,
        /// `OFPBRC_BAD_EXP_TYPE` (1.0's `OFPBRC_BAD_SUBTYPE`): an experimenter type the
        /// switch does not know for that experimenter.
        BadExpType = 4,
        /// `OFPBRC_EPERM`: permissions error. Open vSwitch answers a 1.0 slave's
        /// FLOW_MOD or PACKET_OUT with it (1.0 has no `IS_SLAVE`).
        Eperm = 5,
        /// `OFPBRC_IS_SLAVE` (1.3): the request would change the switch, and this
        /// controller is a slave.
        IsSlave = 10,
        /// `NXBRC_BAD_ROLE` (Open vSwitch's code, 0x201): a Nicira role request named no
        /// valid role.
        NxBadRole = 0x201,
    }
}

enum_with_unknown! {
    /// Codes of [`ErrorType::RoleRequestFailed`] (`ofp_role_request_failed_code`, 1.3).
    pub enum RoleRequestFailedCode(u16) {
        /// `OFPRRFC_STALE`: the generation id is older than one the switch has seen;
        /// another controller was made master since.
        Stale = 0,
        /// `OFPRRFC_UNSUP`: the switch does not support changing roles.
        Unsupported = 1,
        /// `OFPRRFC_BAD_ROLE`: the role is not valid.
        BadRole = 2,
    }
}

enum_with_unknown! {
    /// Codes of [`ErrorType::MeterModFailed`] (`ofp_meter_mod_failed_code`, 1.3).
    pub enum MeterModFailedCode(u16) {
        /// `OFPMMFC_UNKNOWN`: unspecified error.
        Unspecified = 0,
        /// `OFPMMFC_METER_EXISTS`: an add for a meter id that is taken.
        MeterExists = 1,
        /// `OFPMMFC_INVALID_METER`: the meter id is not valid.
        InvalidMeter = 2,
        /// `OFPMMFC_UNKNOWN_METER`: a modify or delete of a meter that does not exist.
        UnknownMeter = 3,
        /// `OFPMMFC_BAD_COMMAND`: an unsupported or unknown command.
        BadCommand = 4,
        /// `OFPMMFC_BAD_FLAGS`: flags the switch does not support.
        BadFlags = 5,
        /// `OFPMMFC_BAD_RATE`: a rate the switch does not support.
        BadRate = 6,
        /// `OFPMMFC_BAD_BURST`: a burst size the switch does not support.
        BadBurst = 7,
        /// `OFPMMFC_BAD_BAND`: a band type the switch does not support.
        BadBand = 8,
        /// `OFPMMFC_BAD_BAND_VALUE`: a band value the switch does not support.
        BadBandValue = 9,
        /// `OFPMMFC_OUT_OF_METERS`: no room for another meter.
        OutOfMeters = 10,
        /// `OFPMMFC_OUT_OF_BANDS`: more bands than the switch supports.
        OutOfBands = 11,
    }
}

view! {
    /// A view of an ERROR message, header included. (1.3's experimenter errors put an
    /// experimenter id where `code` and the data begin; they read as a code and data.)
    ErrorMsg
}

fields!(ErrorMsg {
    /// `OFPET_*` error type; see [`ErrorType`].
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

/// `OFPET_FLOW_MOD_FAILED` and its full-table code in each version: 1.0 numbers its
/// error types differently past `OFPET_BAD_ACTION`, so [`ErrorType`] leaves them unnamed.
const V10_FLOW_MOD_FAILED: u16 = 3;
const V10_ALL_TABLES_FULL: u16 = 0;
const V13_FLOW_MOD_FAILED: u16 = 5;
const V13_TABLE_FULL: u16 = 1;

/// Whether an ERROR from a switch speaking `version` refuses a FLOW_MOD because the
/// table is full (1.0's `OFPFMFC_ALL_TABLES_FULL`, 1.3's `OFPFMFC_TABLE_FULL`).
pub fn is_table_full(version: crate::Version, err_type: ErrorType, code: u16) -> bool {
    let err_type = u16::from(err_type);
    match version {
        crate::Version::Of10 => err_type == V10_FLOW_MOD_FAILED && code == V10_ALL_TABLES_FULL,
        _ => err_type == V13_FLOW_MOD_FAILED && code == V13_TABLE_FULL,
    }
}

#[cfg(test)]
mod table_full_tests {
    use super::*;
    use crate::Version;

    #[test]
    fn a_full_table_reads_as_such_in_its_own_version_only() {
        assert!(is_table_full(Version::Of10, ErrorType::from(3), 0));
        assert!(is_table_full(Version::Of13, ErrorType::from(5), 1));
        // (5, 1) is a PORT_MOD failure on 1.0; (3, 0) a bad instruction on 1.3.
        assert!(!is_table_full(Version::Of10, ErrorType::from(5), 1));
        assert!(!is_table_full(Version::Of13, ErrorType::from(3), 0));
        assert!(!is_table_full(Version::Of13, ErrorType::from(5), 0));
    }
}

//! Controller roles: 1.3's ROLE_REQUEST / ROLE_REPLY (`ofp_role_request`) and, for 1.0,
//! Open vSwitch's Nicira extension (`nx_role_request` in `nicira-ext.h`, a vendor
//! message), which 1.0 needs since it has no roles of its own.
//!
//! The two differ in more than framing: 1.3 numbers the roles from `NOCHANGE` and
//! carries a generation id by which the switch refuses a stale master; the Nicira request
//! has neither (the switch demotes the old master when a new one claims MASTER). So they
//! are separate reprs, and the caller picks the one its version speaks.

use crate::Error;

/// Byte offsets of `ofp_role_request` (1.3), header included (4 pad bytes after the role).
mod field {
    pub(super) const ROLE: usize = 8;
    pub(super) const GENERATION_ID: usize = 16;
    pub(super) const END: usize = 24;
}

/// Byte offsets of `nicira_header` and `nx_role_request`, header included.
mod nx_field {
    pub(super) const VENDOR: usize = 8;
    pub(super) const SUBTYPE: usize = 12;
    pub(super) const ROLE: usize = 16;
    pub(super) const END: usize = 20;
}

/// Length of a 1.3 ROLE_REQUEST or ROLE_REPLY, header included.
pub const ROLE_MSG_LEN: usize = field::END;
/// Length of a `nicira_header` (the vendor header of every Nicira message).
pub const NICIRA_HEADER_LEN: usize = nx_field::ROLE;
/// Length of a Nicira role request or reply, header included.
pub const NX_ROLE_MSG_LEN: usize = nx_field::END;

/// `NX_VENDOR_ID`: the vendor (1.3: experimenter) id of Nicira's extensions.
pub const NX_VENDOR_ID: u32 = 0x0000_2320;
/// `NXT_ROLE_REQUEST`: the Nicira subtype of a role request.
pub const NXT_ROLE_REQUEST: u32 = 10;
/// `NXT_ROLE_REPLY`: the Nicira subtype of a role reply.
pub const NXT_ROLE_REPLY: u32 = 11;

enum_with_unknown! {
    /// `OFPCR_ROLE_*` (1.3): the role a controller asks for or is given.
    pub enum ControllerRole(u32) {
        /// `OFPCR_ROLE_NOCHANGE`: ask for the current role without changing it.
        NoChange = 0,
        /// `OFPCR_ROLE_EQUAL`: full access, as every controller has by default.
        Equal = 1,
        /// `OFPCR_ROLE_MASTER`: full access; the switch makes every other master a slave.
        Master = 2,
        /// `OFPCR_ROLE_SLAVE`: read-only access; no PACKET_INs.
        Slave = 3,
    }
}

enum_with_unknown! {
    /// `NX_ROLE_*`: the roles of the Nicira role request.
    pub enum NxRole(u32) {
        /// `NX_ROLE_OTHER`: full access, the default (1.3's EQUAL).
        Other = 0,
        /// `NX_ROLE_MASTER`: full access; the switch makes every other master a slave.
        Master = 1,
        /// `NX_ROLE_SLAVE`: read-only access; no PACKET_INs.
        Slave = 2,
    }
}

/// The body of a 1.3 ROLE_REQUEST or ROLE_REPLY.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoleMsg {
    /// The role asked for (request) or held (reply).
    pub role: ControllerRole,
    /// The master election's generation: a switch refuses a MASTER or SLAVE request whose
    /// generation is older than the newest it saw (wrapping comparison) with
    /// `OFPRRFC_STALE`. Ignored by the switch with `NOCHANGE` and `EQUAL`.
    pub generation_id: u64,
}

view! {
    /// A view of a 1.3 ROLE_REQUEST or ROLE_REPLY, header included.
    RoleMsgView
}

fields!(RoleMsgView {
    /// `OFPCR_ROLE_*`; see [`ControllerRole`].
    role / set_role: u32 = field::ROLE;
    /// The generation id.
    generation_id / set_generation_id: u64 = field::GENERATION_ID;
});

impl<T: AsRef<[u8]>> RoleMsgView<T> {
    /// Checks that the buffer holds the whole structure.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("role message", self.buffer.as_ref(), ROLE_MSG_LEN)
    }
}

impl RoleMsg {
    /// Reads the repr from a checked view.
    pub fn parse<T: AsRef<[u8]>>(view: &RoleMsgView<T>) -> Self {
        RoleMsg {
            role: ControllerRole::from(view.role()),
            generation_id: view.generation_id(),
        }
    }

    /// Writes the repr into a zeroed view of [`ROLE_MSG_LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut RoleMsgView<T>) {
        view.set_role(u32::from(self.role));
        view.set_generation_id(self.generation_id);
    }
}

view! {
    /// A view of a Nicira vendor message (`nicira_header`), header included: the vendor
    /// id, then the subtype that says which extension message follows.
    NiciraHeader
}

fields!(NiciraHeader {
    /// The vendor id; [`NX_VENDOR_ID`] for Nicira's messages.
    vendor / set_vendor: u32 = nx_field::VENDOR;
    /// `NXT_*` subtype.
    subtype / set_subtype: u32 = nx_field::SUBTYPE;
    /// The role of a role request or reply (past the vendor header).
    role / set_role: u32 = nx_field::ROLE;
});

impl<T: AsRef<[u8]>> NiciraHeader<T> {
    /// Checks that the buffer holds the vendor header.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need(
            "Nicira vendor header",
            self.buffer.as_ref(),
            NICIRA_HEADER_LEN,
        )
    }

    /// Checks that the buffer holds a whole role request or reply.
    pub fn check_role_len(&self) -> Result<(), Error> {
        Error::need("Nicira role message", self.buffer.as_ref(), NX_ROLE_MSG_LEN)
    }

    /// Whether this is a Nicira message of `subtype`.
    pub fn is_nicira(&self, subtype: u32) -> bool {
        self.vendor() == NX_VENDOR_ID && self.subtype() == subtype
    }
}

/// Byte offsets of `nx_vendor_error`, relative to the ERROR message's data.
mod nx_error_field {
    pub(super) const VENDOR: usize = 0;
    pub(super) const TYPE: usize = 4;
    pub(super) const CODE: usize = 6;
    pub(super) const END: usize = 8;
}

/// Length of `nx_vendor_error`, which opens the data of a [`crate::ErrorType::NiciraVendor`]
/// error before the start of the failed request.
pub const NX_VENDOR_ERROR_LEN: usize = nx_error_field::END;

view! {
    /// A view of `nx_vendor_error`: on 1.0, Open vSwitch reports an error that 1.0 has no
    /// code for as type `NXET_VENDOR` whose data starts with this (the vendor's own type
    /// and code), then the failed request.
    NxVendorError
}

fields!(NxVendorError {
    /// The vendor id; [`NX_VENDOR_ID`] for Open vSwitch's errors.
    vendor / set_vendor: u32 = nx_error_field::VENDOR;
    /// The error type in the vendor's numbering (`OFPET_*` with Nicira codes).
    err_type / set_err_type: u16 = nx_error_field::TYPE;
    /// The error code in the vendor's numbering.
    code / set_code: u16 = nx_error_field::CODE;
});

impl<T: AsRef<[u8]>> NxVendorError<T> {
    /// Checks that the buffer holds the structure.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need(
            "Nicira vendor error",
            self.buffer.as_ref(),
            NX_VENDOR_ERROR_LEN,
        )
    }
}

//! Reserved port numbers, in OpenFlow 1.3's 32-bit numbering.
//!
//! OpenFlow 1.0 numbers ports in 16 bits, with its reserved ports at `0xff00..=0xffff`.
//! This crate always speaks 32-bit numbers and converts at the wire: a 1.0 number at or
//! above `0xff00` becomes `0xffff_0000 | n`, which lands each 1.0 reserved port on its
//! 1.3 namesake (1.0's `OFPP_NONE`, `0xffff`, becomes [`ANY`]). Numbers in
//! `0xff00..0xffff_ff00` have no 1.0 form; encoding one for 1.0 is an error.

use crate::Error;

/// Highest number of a physical port (`OFPP_MAX`).
pub const MAX: u32 = 0xffff_ff00;
/// Back out of the port the packet came in on (`OFPP_IN_PORT`).
pub const IN_PORT: u32 = 0xffff_fff8;
/// Run the packet through the flow table (`OFPP_TABLE`, packet-out only).
pub const TABLE: u32 = 0xffff_fff9;
/// The switch's own non-OpenFlow forwarding (`OFPP_NORMAL`).
pub const NORMAL: u32 = 0xffff_fffa;
/// Every port but the input one and those with flooding disabled (`OFPP_FLOOD`).
pub const FLOOD: u32 = 0xffff_fffb;
/// Every port but the input one (`OFPP_ALL`).
pub const ALL: u32 = 0xffff_fffc;
/// To the controller, as a packet-in (`OFPP_CONTROLLER`).
pub const CONTROLLER: u32 = 0xffff_fffd;
/// The switch's local networking stack (`OFPP_LOCAL`).
pub const LOCAL: u32 = 0xffff_fffe;
/// No port, or any port in a filter (`OFPP_ANY`; 1.0's `OFPP_NONE`).
pub const ANY: u32 = 0xffff_ffff;

/// First 16-bit number that 1.0 reserves.
const V10_RESERVED: u16 = 0xff00;
/// What 1.0's reserved range is shifted by to reach 1.3's.
const V10_TO_V13: u32 = 0xffff_0000;

/// A 1.0 wire port number in 32-bit numbering.
pub fn from_v10(port: u16) -> u32 {
    if port >= V10_RESERVED {
        V10_TO_V13 | u32::from(port)
    } else {
        u32::from(port)
    }
}

/// A 32-bit port number as 1.0 puts it on the wire, or `None` when 1.0 has no such
/// port.
pub fn to_v10(port: u32) -> Option<u16> {
    if port >= MAX {
        // The low 16 bits of 0xffff_ff00..=0xffff_ffff are 1.0's reserved range.
        u16::try_from(port & 0xffff).ok()
    } else {
        u16::try_from(port).ok().filter(|&p| p < V10_RESERVED)
    }
}

/// [`to_v10`], as an encoding error for `what` when there is no 1.0 form.
pub(crate) fn encode_v10(what: &'static str, port: u32) -> Result<u16, Error> {
    to_v10(port).ok_or(Error::OutOfRange {
        what,
        value: u64::from(port),
    })
}

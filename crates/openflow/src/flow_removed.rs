//! FLOW_REMOVED: a flow with `OFPFF_SEND_FLOW_REM` expired or was deleted.

use crate::flow_match::{self, Match, MatchV10, OxmMatch, MATCH_V10_LEN};
use crate::wire::{sub, tail, tail_mut};
use crate::Error;

/// Byte offsets of 1.0's `ofp_flow_removed`, header included.
mod field_v10 {
    pub(super) const MATCH: usize = 8;
    pub(super) const COOKIE: usize = 48;
    pub(super) const PRIORITY: usize = 56;
    pub(super) const REASON: usize = 58;
    pub(super) const DURATION_SEC: usize = 60;
    pub(super) const DURATION_NSEC: usize = 64;
    pub(super) const IDLE_TIMEOUT: usize = 68;
    pub(super) const PACKET_COUNT: usize = 72;
    pub(super) const BYTE_COUNT: usize = 80;
}

enum_with_unknown! {
    /// Why a flow was removed (`ofp_flow_removed_reason`; 1.3 adds `GroupDelete`).
    pub enum FlowRemovedReason(u8) {
        /// `OFPRR_IDLE_TIMEOUT`: no packet matched for the idle timeout.
        IdleTimeout = 0,
        /// `OFPRR_HARD_TIMEOUT`: the hard timeout ran out.
        HardTimeout = 1,
        /// `OFPRR_DELETE`: a FLOW_MOD deleted it.
        Delete = 2,
        /// `OFPRR_GROUP_DELETE` (1.3): its group was deleted.
        GroupDelete = 3,
    }
}

/// Length of 1.0's `ofp_flow_removed`, header and match included.
pub const FLOW_REMOVED_V10_LEN: usize = 88;

/// Byte offsets of 1.3's `ofp_flow_removed`, header included.
mod field_v13 {
    pub(super) const COOKIE: usize = 8;
    pub(super) const PRIORITY: usize = 16;
    pub(super) const REASON: usize = 18;
    pub(super) const TABLE_ID: usize = 19;
    pub(super) const DURATION_SEC: usize = 20;
    pub(super) const DURATION_NSEC: usize = 24;
    pub(super) const IDLE_TIMEOUT: usize = 28;
    pub(super) const HARD_TIMEOUT: usize = 30;
    pub(super) const PACKET_COUNT: usize = 32;
    pub(super) const BYTE_COUNT: usize = 40;
    pub(super) const MATCH: usize = 48;
}

/// Length of 1.3's `ofp_flow_removed` before the match, header included.
pub const FLOW_REMOVED_V13_LEN: usize = field_v13::MATCH;

view! {
    /// A view of a 1.0 FLOW_REMOVED message, header included.
    FlowRemovedV10
}

fields!(FlowRemovedV10 {
    /// The flow's cookie.
    cookie / set_cookie: u64 = field_v10::COOKIE;
    /// The flow's priority.
    priority / set_priority: u16 = field_v10::PRIORITY;
    /// `OFPRR_*` reason.
    reason / set_reason: u8 = field_v10::REASON;
    /// Seconds the flow lived.
    duration_sec / set_duration_sec: u32 = field_v10::DURATION_SEC;
    /// Nanoseconds beyond `duration_sec`.
    duration_nsec / set_duration_nsec: u32 = field_v10::DURATION_NSEC;
    /// The flow's idle timeout.
    idle_timeout / set_idle_timeout: u16 = field_v10::IDLE_TIMEOUT;
    /// Packets the flow matched.
    packet_count / set_packet_count: u64 = field_v10::PACKET_COUNT;
    /// Bytes the flow matched.
    byte_count / set_byte_count: u64 = field_v10::BYTE_COUNT;
});

impl<T: AsRef<[u8]>> FlowRemovedV10<T> {
    /// Checks that the buffer holds the whole structure.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("FLOW_REMOVED", self.buffer.as_ref(), FLOW_REMOVED_V10_LEN)
    }

    /// The 40-byte match.
    pub fn match_bytes(&self) -> &[u8] {
        sub(
            self.buffer.as_ref(),
            field_v10::MATCH,
            field_v10::MATCH + MATCH_V10_LEN,
        )
    }
}

view! {
    /// A view of a 1.3 FLOW_REMOVED message, header included.
    FlowRemovedV13
}

fields!(FlowRemovedV13 {
    /// The flow's cookie.
    cookie / set_cookie: u64 = field_v13::COOKIE;
    /// The flow's priority.
    priority / set_priority: u16 = field_v13::PRIORITY;
    /// `OFPRR_*` reason.
    reason / set_reason: u8 = field_v13::REASON;
    /// The flow's table.
    table_id / set_table_id: u8 = field_v13::TABLE_ID;
    /// Seconds the flow lived.
    duration_sec / set_duration_sec: u32 = field_v13::DURATION_SEC;
    /// Nanoseconds beyond `duration_sec`.
    duration_nsec / set_duration_nsec: u32 = field_v13::DURATION_NSEC;
    /// The flow's idle timeout.
    idle_timeout / set_idle_timeout: u16 = field_v13::IDLE_TIMEOUT;
    /// The flow's hard timeout.
    hard_timeout / set_hard_timeout: u16 = field_v13::HARD_TIMEOUT;
    /// Packets the flow matched.
    packet_count / set_packet_count: u64 = field_v13::PACKET_COUNT;
    /// Bytes the flow matched.
    byte_count / set_byte_count: u64 = field_v13::BYTE_COUNT;
});

impl<T: AsRef<[u8]>> FlowRemovedV13<T> {
    /// Checks that the buffer holds the fixed part and a well-formed match.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("FLOW_REMOVED", self.buffer.as_ref(), FLOW_REMOVED_V13_LEN)?;
        OxmMatch::new_checked(self.match_bytes()).map(|_| ())
    }

    /// The match and anything after it.
    pub fn match_bytes(&self) -> &[u8] {
        tail(self.buffer.as_ref(), field_v13::MATCH)
    }
}

/// A removed flow's report.
///
/// Per version: 1.0 has no `table_id` or `hard_timeout` (0 after parsing, not sent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowRemoved {
    /// The flow's cookie.
    pub cookie: u64,
    /// The flow's priority.
    pub priority: u16,
    /// Why the flow was removed.
    pub reason: FlowRemovedReason,
    /// The flow's table (1.3).
    pub table_id: u8,
    /// Seconds the flow lived.
    pub duration_sec: u32,
    /// Nanoseconds beyond `duration_sec`.
    pub duration_nsec: u32,
    /// The flow's idle timeout.
    pub idle_timeout: u16,
    /// The flow's hard timeout (1.3).
    pub hard_timeout: u16,
    /// Packets the flow matched.
    pub packet_count: u64,
    /// Bytes the flow matched.
    pub byte_count: u64,
    /// The flow's match.
    pub r#match: Match,
}

impl FlowRemoved {
    /// Reads a 1.0 FLOW_REMOVED.
    pub fn parse_v10<T: AsRef<[u8]>>(view: &FlowRemovedV10<T>) -> Result<Self, Error> {
        view.check_len()?;
        Ok(FlowRemoved {
            cookie: view.cookie(),
            priority: view.priority(),
            reason: FlowRemovedReason::from(view.reason()),
            table_id: 0,
            duration_sec: view.duration_sec(),
            duration_nsec: view.duration_nsec(),
            idle_timeout: view.idle_timeout(),
            hard_timeout: 0,
            packet_count: view.packet_count(),
            byte_count: view.byte_count(),
            r#match: Match::parse_v10(&MatchV10::new_checked(view.match_bytes())?)?,
        })
    }

    /// Length of the 1.0 message, header included.
    pub fn buffer_len_v10(&self) -> usize {
        FLOW_REMOVED_V10_LEN
    }

    /// Writes the 1.0 body into a zeroed view of [`Self::buffer_len_v10`] bytes. Fails
    /// when the match cannot be expressed in 1.0.
    pub fn emit_v10<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        view: &mut FlowRemovedV10<T>,
    ) -> Result<(), Error> {
        view.set_cookie(self.cookie);
        view.set_priority(self.priority);
        view.set_reason(u8::from(self.reason));
        view.set_duration_sec(self.duration_sec);
        view.set_duration_nsec(self.duration_nsec);
        view.set_idle_timeout(self.idle_timeout);
        view.set_packet_count(self.packet_count);
        view.set_byte_count(self.byte_count);
        let buffer = tail_mut(view.buffer.as_mut(), field_v10::MATCH);
        self.r#match.emit_v10(&mut MatchV10::new_unchecked(buffer))
    }

    /// Reads a 1.3 FLOW_REMOVED.
    pub fn parse_v13<T: AsRef<[u8]>>(view: &FlowRemovedV13<T>) -> Result<Self, Error> {
        view.check_len()?;
        let (r#match, _) = flow_match::parse_prefix_v13(view.match_bytes())?;
        Ok(FlowRemoved {
            cookie: view.cookie(),
            priority: view.priority(),
            reason: FlowRemovedReason::from(view.reason()),
            table_id: view.table_id(),
            duration_sec: view.duration_sec(),
            duration_nsec: view.duration_nsec(),
            idle_timeout: view.idle_timeout(),
            hard_timeout: view.hard_timeout(),
            packet_count: view.packet_count(),
            byte_count: view.byte_count(),
            r#match,
        })
    }

    /// Length of the 1.3 message, header included.
    pub fn buffer_len_v13(&self) -> usize {
        FLOW_REMOVED_V13_LEN.saturating_add(self.r#match.buffer_len_v13())
    }

    /// Writes the 1.3 body into a zeroed view of [`Self::buffer_len_v13`] bytes.
    pub fn emit_v13<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        view: &mut FlowRemovedV13<T>,
    ) -> Result<(), Error> {
        view.set_cookie(self.cookie);
        view.set_priority(self.priority);
        view.set_reason(u8::from(self.reason));
        view.set_table_id(self.table_id);
        view.set_duration_sec(self.duration_sec);
        view.set_duration_nsec(self.duration_nsec);
        view.set_idle_timeout(self.idle_timeout);
        view.set_hard_timeout(self.hard_timeout);
        view.set_packet_count(self.packet_count);
        view.set_byte_count(self.byte_count);
        let buffer = tail_mut(view.buffer.as_mut(), field_v13::MATCH);
        self.r#match.emit_v13(&mut OxmMatch::new_unchecked(buffer))
    }
}

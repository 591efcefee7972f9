//! FLOW_MOD: add, change or delete flows.

use crate::action::{self, Action};
use crate::flow_match::{self, Masked, Match, MatchV10, OxmMatch, MATCH_V10_LEN};
use crate::instruction::{self, InstructionsRef};
use crate::packet_in::{buffer_id_from_wire, buffer_id_to_wire};
use crate::wire::{sub, tail, tail_mut};
use crate::{port, Error, Version};

/// Byte offsets of 1.0's `ofp_flow_mod`, header included.
mod field_v10 {
    pub(super) const MATCH: usize = 8;
    pub(super) const COOKIE: usize = 48;
    pub(super) const COMMAND: usize = 56;
    pub(super) const IDLE_TIMEOUT: usize = 58;
    pub(super) const HARD_TIMEOUT: usize = 60;
    pub(super) const PRIORITY: usize = 62;
    pub(super) const BUFFER_ID: usize = 64;
    pub(super) const OUT_PORT: usize = 68;
    pub(super) const FLAGS: usize = 70;
    pub(super) const ACTIONS: usize = 72;
}

/// `OFPTT_ALL`: the table id of a 1.3 delete that empties every table.
pub const TABLE_ALL: u8 = 0xff;

/// Length of 1.0's `ofp_flow_mod` (header and match included) before the actions.
pub const FLOW_MOD_V10_LEN: usize = field_v10::ACTIONS;

/// Byte offsets of 1.3's `ofp_flow_mod`, header included (2 pad bytes after the flags).
mod field_v13 {
    pub(super) const COOKIE: usize = 8;
    pub(super) const COOKIE_MASK: usize = 16;
    pub(super) const TABLE_ID: usize = 24;
    pub(super) const COMMAND: usize = 25;
    pub(super) const IDLE_TIMEOUT: usize = 26;
    pub(super) const HARD_TIMEOUT: usize = 28;
    pub(super) const PRIORITY: usize = 30;
    pub(super) const BUFFER_ID: usize = 32;
    pub(super) const OUT_PORT: usize = 36;
    pub(super) const OUT_GROUP: usize = 40;
    pub(super) const FLAGS: usize = 44;
    pub(super) const MATCH: usize = 48;
}

/// Length of 1.3's `ofp_flow_mod` before the match (header included). The
/// specification's `sizeof` of 56 counts a minimal 8-byte match on top.
pub const FLOW_MOD_V13_LEN: usize = field_v13::MATCH;

/// `OFPFF_SEND_FLOW_REM`: report the flow's removal with FLOW_REMOVED.
pub const FLAG_SEND_FLOW_REM: u16 = 1 << 0;

/// `OFPFC_*`: what a FLOW_MOD does. The numbers are the same in both versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlowModCommand {
    /// Add a flow (replacing an identical one).
    Add,
    /// Change the actions of every matching flow.
    Modify,
    /// Change the actions of the flow with exactly this match and priority.
    ModifyStrict,
    /// Delete every matching flow.
    Delete,
    /// Delete the flow with exactly this match and priority.
    DeleteStrict,
}

impl FlowModCommand {
    /// The wire number.
    pub fn to_wire(self) -> u8 {
        match self {
            FlowModCommand::Add => 0,
            FlowModCommand::Modify => 1,
            FlowModCommand::ModifyStrict => 2,
            FlowModCommand::Delete => 3,
            FlowModCommand::DeleteStrict => 4,
        }
    }

    /// The command with wire number `value`.
    pub fn from_wire(value: u16) -> Result<Self, Error> {
        Ok(match value {
            0 => FlowModCommand::Add,
            1 => FlowModCommand::Modify,
            2 => FlowModCommand::ModifyStrict,
            3 => FlowModCommand::Delete,
            4 => FlowModCommand::DeleteStrict,
            _ => {
                return Err(Error::UnknownValue {
                    what: "FLOW_MOD command",
                    value: u32::from(value),
                })
            }
        })
    }
}

view! {
    /// A view of a 1.0 FLOW_MOD message, header included.
    FlowModV10
}

fields!(FlowModV10 {
    /// Opaque controller-chosen id.
    cookie / set_cookie: u64 = field_v10::COOKIE;
    /// `OFPFC_*` command, 16 bits on 1.0.
    command / set_command: u16 = field_v10::COMMAND;
    /// Seconds without traffic before the flow expires (0: never).
    idle_timeout / set_idle_timeout: u16 = field_v10::IDLE_TIMEOUT;
    /// Seconds before the flow expires regardless (0: never).
    hard_timeout / set_hard_timeout: u16 = field_v10::HARD_TIMEOUT;
    /// Priority among overlapping flows.
    priority / set_priority: u16 = field_v10::PRIORITY;
    /// Buffered packet to apply the flow to, or `OFP_NO_BUFFER`.
    buffer_id / set_buffer_id: u32 = field_v10::BUFFER_ID;
    /// For deletes: only flows that output to this 16-bit port (`OFPP_NONE`: any).
    out_port / set_out_port: u16 = field_v10::OUT_PORT;
    /// `OFPFF_*` flags.
    flags / set_flags: u16 = field_v10::FLAGS;
});

impl<T: AsRef<[u8]>> FlowModV10<T> {
    /// Checks that the buffer holds the fixed part.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("FLOW_MOD", self.buffer.as_ref(), FLOW_MOD_V10_LEN)
    }

    /// The 40-byte match.
    pub fn match_bytes(&self) -> &[u8] {
        sub(
            self.buffer.as_ref(),
            field_v10::MATCH,
            field_v10::MATCH + MATCH_V10_LEN,
        )
    }

    /// The action list.
    pub fn actions(&self) -> &[u8] {
        tail(self.buffer.as_ref(), field_v10::ACTIONS)
    }
}

view! {
    /// A view of a 1.3 FLOW_MOD message, header included.
    FlowModV13
}

fields!(FlowModV13 {
    /// Opaque controller-chosen id.
    cookie / set_cookie: u64 = field_v13::COOKIE;
    /// For modify and delete: which cookie bits must match.
    cookie_mask / set_cookie_mask: u64 = field_v13::COOKIE_MASK;
    /// Table to act on (`0xff`: all, for deletes).
    table_id / set_table_id: u8 = field_v13::TABLE_ID;
    /// `OFPFC_*` command, 8 bits on 1.3.
    command / set_command: u8 = field_v13::COMMAND;
    /// Seconds without traffic before the flow expires (0: never).
    idle_timeout / set_idle_timeout: u16 = field_v13::IDLE_TIMEOUT;
    /// Seconds before the flow expires regardless (0: never).
    hard_timeout / set_hard_timeout: u16 = field_v13::HARD_TIMEOUT;
    /// Priority among overlapping flows.
    priority / set_priority: u16 = field_v13::PRIORITY;
    /// Buffered packet to apply the flow to, or `OFP_NO_BUFFER`.
    buffer_id / set_buffer_id: u32 = field_v13::BUFFER_ID;
    /// For deletes: only flows that output to this port (`OFPP_ANY`: any).
    out_port / set_out_port: u32 = field_v13::OUT_PORT;
    /// For deletes: only flows that output to this group (`OFPG_ANY`: any).
    out_group / set_out_group: u32 = field_v13::OUT_GROUP;
    /// `OFPFF_*` flags.
    flags / set_flags: u16 = field_v13::FLAGS;
});

impl<T: AsRef<[u8]>> FlowModV13<T> {
    /// Checks that the buffer holds the fixed part and a well-formed match.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("FLOW_MOD", self.buffer.as_ref(), FLOW_MOD_V13_LEN)?;
        OxmMatch::new_checked(self.match_bytes()).map(|_| ())
    }

    /// The match and everything after it.
    pub fn match_bytes(&self) -> &[u8] {
        tail(self.buffer.as_ref(), field_v13::MATCH)
    }

    /// The instruction list after the match's padding.
    pub fn instructions(&self) -> &[u8] {
        let match_len = OxmMatch::new_unchecked(self.match_bytes()).padded_len();
        tail(self.match_bytes(), match_len)
    }
}

/// A flow table change.
///
/// Per version: 1.0 has no `cookie_mask`, `table_id` or `out_group` (not sent; 0, 0 and
/// [`port::ANY`] after parsing). On 1.3 the actions travel in one `APPLY_ACTIONS`
/// instruction, and no actions means no instruction (a drop flow); a meter travels in a
/// `METER` instruction before it. Parsing collects the actions of every `APPLY_ACTIONS`
/// instruction, takes the first `METER` instruction's meter and skips other
/// instructions. 1.0 has no meters: `meter_id` is None after parsing 1.0, and emitting
/// a FLOW_MOD with a meter on 1.0 fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowMod {
    /// What to do.
    pub command: FlowModCommand,
    /// Which packets.
    pub r#match: Match,
    /// Opaque controller-chosen id.
    pub cookie: u64,
    /// Cookie bits that must match, for modify and delete (1.3).
    pub cookie_mask: u64,
    /// Table (1.3).
    pub table_id: u8,
    /// Idle expiry in seconds (0: never).
    pub idle_timeout: u16,
    /// Hard expiry in seconds (0: never).
    pub hard_timeout: u16,
    /// Priority.
    pub priority: u16,
    /// Buffered packet to apply the flow to.
    pub buffer_id: Option<u32>,
    /// Output port filter for deletes ([`port::ANY`]: none).
    pub out_port: u32,
    /// Output group filter for deletes (1.3; `0xffffffff`: none).
    pub out_group: u32,
    /// `OFPFF_*` flags.
    pub flags: u16,
    /// Meter for matching packets to pass first (1.3).
    pub meter_id: Option<u32>,
    /// Actions for matching packets (empty, and no next table: drop).
    pub actions: Vec<Action>,
    /// Metadata for the next table to match (1.3).
    pub write_metadata: Option<Masked<u64>>,
    /// The table that goes on with matching packets (1.3).
    pub goto_table: Option<u8>,
}

/// An ADD of a priority-0 flow that matches everything and does nothing: no cookie, table
/// 0, no timeouts, no buffered packet, `out_port` and `out_group` [`port::ANY`], no flags,
/// no meter and no actions. Callers set what differs: `FlowMod { priority: 100,
/// ..FlowMod::default() }`.
impl Default for FlowMod {
    fn default() -> Self {
        Self {
            command: FlowModCommand::Add,
            r#match: Match::default(),
            cookie: 0,
            cookie_mask: 0,
            table_id: 0,
            idle_timeout: 0,
            hard_timeout: 0,
            priority: 0,
            buffer_id: None,
            out_port: port::ANY,
            out_group: port::ANY,
            flags: 0,
            meter_id: None,
            actions: Vec::new(),
            write_metadata: None,
            goto_table: None,
        }
    }
}

impl FlowMod {
    /// Reads a 1.0 FLOW_MOD.
    pub fn parse_v10<T: AsRef<[u8]>>(view: &FlowModV10<T>) -> Result<Self, Error> {
        view.check_len()?;
        Ok(FlowMod {
            command: FlowModCommand::from_wire(view.command())?,
            r#match: Match::parse_v10(&MatchV10::new_checked(view.match_bytes())?)?,
            cookie: view.cookie(),
            cookie_mask: 0,
            table_id: 0,
            idle_timeout: view.idle_timeout(),
            hard_timeout: view.hard_timeout(),
            priority: view.priority(),
            buffer_id: buffer_id_from_wire(view.buffer_id()),
            out_port: port::from_v10(view.out_port()),
            out_group: port::ANY,
            flags: view.flags(),
            meter_id: None,
            actions: action::parse_list(Version::Of10, view.actions())?,
            write_metadata: None,
            goto_table: None,
        })
    }

    /// Length of the 1.0 message, header included.
    pub fn buffer_len_v10(&self) -> usize {
        FLOW_MOD_V10_LEN.saturating_add(action::list_len(Version::Of10, &self.actions))
    }

    /// Writes the 1.0 body into a zeroed view of [`Self::buffer_len_v10`] bytes. Fails
    /// when a port has no 1.0 form, the match cannot be expressed, or there is a meter.
    pub fn emit_v10<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        view: &mut FlowModV10<T>,
    ) -> Result<(), Error> {
        for (what, present) in [
            ("FLOW_MOD meter", self.meter_id.is_some()),
            ("FLOW_MOD metadata", self.write_metadata.is_some()),
            ("FLOW_MOD next table", self.goto_table.is_some()),
        ] {
            if present {
                return Err(Error::NotInVersion {
                    what,
                    version: Version::Of10,
                });
            }
        }
        view.set_cookie(self.cookie);
        view.set_command(u16::from(self.command.to_wire()));
        view.set_idle_timeout(self.idle_timeout);
        view.set_hard_timeout(self.hard_timeout);
        view.set_priority(self.priority);
        view.set_buffer_id(buffer_id_to_wire(self.buffer_id));
        view.set_out_port(port::encode_v10("FLOW_MOD out_port", self.out_port)?);
        view.set_flags(self.flags);
        let buffer = view.buffer.as_mut();
        self.r#match
            .emit_v10(&mut MatchV10::new_unchecked(tail_mut(
                buffer,
                field_v10::MATCH,
            )))?;
        action::emit_list(
            Version::Of10,
            &self.actions,
            tail_mut(buffer, field_v10::ACTIONS),
        )
    }

    /// Reads a 1.3 FLOW_MOD.
    pub fn parse_v13<T: AsRef<[u8]>>(view: &FlowModV13<T>) -> Result<Self, Error> {
        view.check_len()?;
        let (r#match, _) = flow_match::parse_prefix_v13(view.match_bytes())?;
        let instructions = instruction::parse_list(view.instructions())?;
        Ok(FlowMod {
            command: FlowModCommand::from_wire(u16::from(view.command()))?,
            r#match,
            cookie: view.cookie(),
            cookie_mask: view.cookie_mask(),
            table_id: view.table_id(),
            idle_timeout: view.idle_timeout(),
            hard_timeout: view.hard_timeout(),
            priority: view.priority(),
            buffer_id: buffer_id_from_wire(view.buffer_id()),
            out_port: view.out_port(),
            out_group: view.out_group(),
            flags: view.flags(),
            meter_id: instructions.meter_id,
            actions: instructions.actions,
            write_metadata: instructions.write_metadata,
            goto_table: instructions.goto_table,
        })
    }

    /// Length of the 1.3 message, header included.
    pub fn buffer_len_v13(&self) -> usize {
        FLOW_MOD_V13_LEN
            .saturating_add(self.r#match.buffer_len_v13())
            .saturating_add(instruction::list_len(self.instructions()))
    }

    /// Writes the 1.3 body into a zeroed view of [`Self::buffer_len_v13`] bytes.
    pub fn emit_v13<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        view: &mut FlowModV13<T>,
    ) -> Result<(), Error> {
        view.set_cookie(self.cookie);
        view.set_cookie_mask(self.cookie_mask);
        view.set_table_id(self.table_id);
        view.set_command(self.command.to_wire());
        view.set_idle_timeout(self.idle_timeout);
        view.set_hard_timeout(self.hard_timeout);
        view.set_priority(self.priority);
        view.set_buffer_id(buffer_id_to_wire(self.buffer_id));
        view.set_out_port(self.out_port);
        view.set_out_group(self.out_group);
        view.set_flags(self.flags);
        let buffer = tail_mut(view.buffer.as_mut(), field_v13::MATCH);
        self.r#match
            .emit_v13(&mut OxmMatch::new_unchecked(&mut *buffer))?;
        let instructions = tail_mut(buffer, self.r#match.buffer_len_v13());
        instruction::emit_list(self.instructions(), instructions)
    }

    fn instructions(&self) -> InstructionsRef<'_> {
        InstructionsRef {
            meter_id: self.meter_id,
            actions: &self.actions,
            write_metadata: self.write_metadata,
            goto_table: self.goto_table,
        }
    }
}

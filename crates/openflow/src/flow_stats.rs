//! Reading a switch's flow table back: the flow statistics request and reply (1.0's
//! `OFPT_STATS_*` of type `OFPST_FLOW`, 1.3's multipart `OFPMP_FLOW`), and a strict
//! delete of a flow by the match bytes the switch reported ([`RawFlowDelete`]).
//!
//! A reply entry keeps the match and the action (1.0) or instruction (1.3) list as the
//! switch sent them, so that a flow nobody here models can be deleted exactly and the
//! entry encodes back to the same bytes; what the controller compares is summarised
//! beside them when the entry is parsed ([`StatsMatch`], [`FlowOutput`]).

use crate::action::{self, Action};
use crate::flow_match::{
    oxm_field, wildcards, Match, MatchV10, Oxm, OxmMatch, MATCH_V10_LEN, OXM_CLASS_BASIC,
};
use crate::flow_mod::{FlowMod, FlowModCommand, FLOW_MOD_V10_LEN, FLOW_MOD_V13_LEN};
use crate::header::{Header, HeaderRepr, HEADER_LEN};
use crate::instruction::{Instruction, INSTRUCTION_APPLY_ACTIONS, INSTRUCTION_METER};
use crate::msg_type::{v10, v13};
use crate::wire::{grow, length_u16, read_field, sub, tail, write_slice};
use crate::{port, Error, Version};

/// `OFPST_FLOW` (1.0) and `OFPMP_FLOW` (1.3): the same number in both versions.
pub const STATS_FLOW: u16 = 1;

/// Byte offsets of 1.0's `ofp_stats_request` / `ofp_stats_reply`, header included.
mod stats_v10 {
    pub(super) const TYPE: usize = 8;
    pub(super) const FLAGS: usize = 10;
    pub(super) const BODY: usize = 12;
}

/// Length of 1.0's stats header, OpenFlow header included.
pub const STATS_V10_HEADER_LEN: usize = stats_v10::BODY;

view! {
    /// A view of a 1.0 STATS_REQUEST or STATS_REPLY message, header included.
    StatsV10
}

fields!(StatsV10 {
    /// `OFPST_*` type.
    stats_type / set_stats_type: u16 = stats_v10::TYPE;
    /// `OFPSF_REPLY_MORE` in a reply: more parts follow.
    flags / set_flags: u16 = stats_v10::FLAGS;
});

impl<T: AsRef<[u8]>> StatsV10<T> {
    /// Checks that the buffer holds the stats header.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("stats message", self.buffer.as_ref(), STATS_V10_HEADER_LEN)
    }

    /// The type-specific body.
    pub fn body(&self) -> &[u8] {
        tail(self.buffer.as_ref(), stats_v10::BODY)
    }
}

/// Length of 1.0's `ofp_flow_stats_request`: a match, the table, a pad byte, the port.
pub const FLOW_STATS_REQUEST_V10_LEN: usize = MATCH_V10_LEN + 4;
/// Length of 1.3's `ofp_flow_stats_request` with the empty match (8 bytes) it is sent
/// with.
pub const FLOW_STATS_REQUEST_V13_LEN: usize = 40;

/// Writes the body of a flow statistics request for every flow of every table: match
/// all, table all, no port (and on 1.3 no group, no cookie filter).
pub(crate) fn emit_request_body(version: Version, body: &mut [u8]) -> Result<(), Error> {
    if version == Version::Of10 {
        let mut matcher = MatchV10::new_unchecked(&mut *body);
        Match::default().emit_v10(&mut matcher)?;
        write_slice(body, MATCH_V10_LEN, &[crate::flow_mod::TABLE_ALL, 0]);
        let no_port = port::encode_v10("flow stats out_port", port::ANY)?;
        write_slice(body, MATCH_V10_LEN + 2, &no_port.to_be_bytes());
    } else {
        // table_id, 3 pad bytes, out_port, out_group, 4 pad, cookie, cookie_mask (0).
        write_slice(body, 0, &[crate::flow_mod::TABLE_ALL]);
        write_slice(body, 4, &port::ANY.to_be_bytes());
        write_slice(body, 8, &port::ANY.to_be_bytes());
        Match::default().emit_v13(&mut OxmMatch::new_unchecked(crate::wire::tail_mut(
            body,
            FLOW_STATS_REQUEST_V13_LEN - 8,
        )))?;
    }
    Ok(())
}

/// Byte offsets of 1.0's `ofp_flow_stats`.
mod entry_v10 {
    pub(super) const LENGTH: usize = 0;
    pub(super) const TABLE_ID: usize = 2;
    pub(super) const MATCH: usize = 4;
    pub(super) const DURATION_SEC: usize = 44;
    pub(super) const DURATION_NSEC: usize = 48;
    pub(super) const PRIORITY: usize = 52;
    pub(super) const IDLE_TIMEOUT: usize = 54;
    pub(super) const HARD_TIMEOUT: usize = 56;
    pub(super) const COOKIE: usize = 64;
    pub(super) const PACKET_COUNT: usize = 72;
    pub(super) const BYTE_COUNT: usize = 80;
    pub(super) const ACTIONS: usize = 88;
}

/// Length of 1.0's `ofp_flow_stats` before its actions.
pub const FLOW_STATS_V10_LEN: usize = entry_v10::ACTIONS;

/// Byte offsets of 1.3's `ofp_flow_stats`.
mod entry_v13 {
    pub(super) const LENGTH: usize = 0;
    pub(super) const TABLE_ID: usize = 2;
    pub(super) const DURATION_SEC: usize = 4;
    pub(super) const DURATION_NSEC: usize = 8;
    pub(super) const PRIORITY: usize = 12;
    pub(super) const IDLE_TIMEOUT: usize = 14;
    pub(super) const HARD_TIMEOUT: usize = 16;
    pub(super) const FLAGS: usize = 18;
    pub(super) const COOKIE: usize = 24;
    pub(super) const PACKET_COUNT: usize = 32;
    pub(super) const BYTE_COUNT: usize = 40;
    pub(super) const MATCH: usize = 48;
}

/// Length of 1.3's `ofp_flow_stats` before its match.
pub const FLOW_STATS_V13_LEN: usize = entry_v13::MATCH;

view! {
    /// A view of one 1.0 `ofp_flow_stats` entry, from its length field to the end of its
    /// actions.
    FlowStatsV10
}

fields!(FlowStatsV10 {
    /// Length of this entry, actions included.
    length / set_length: u16 = entry_v10::LENGTH;
    /// The flow's table.
    table_id / set_table_id: u8 = entry_v10::TABLE_ID;
    /// Seconds the flow has lived.
    duration_sec / set_duration_sec: u32 = entry_v10::DURATION_SEC;
    /// Nanoseconds beyond `duration_sec`.
    duration_nsec / set_duration_nsec: u32 = entry_v10::DURATION_NSEC;
    /// The flow's priority.
    priority / set_priority: u16 = entry_v10::PRIORITY;
    /// The flow's idle timeout.
    idle_timeout / set_idle_timeout: u16 = entry_v10::IDLE_TIMEOUT;
    /// The flow's hard timeout.
    hard_timeout / set_hard_timeout: u16 = entry_v10::HARD_TIMEOUT;
    /// The flow's cookie.
    cookie / set_cookie: u64 = entry_v10::COOKIE;
    /// Packets the flow matched.
    packet_count / set_packet_count: u64 = entry_v10::PACKET_COUNT;
    /// Bytes the flow matched.
    byte_count / set_byte_count: u64 = entry_v10::BYTE_COUNT;
});

impl<T: AsRef<[u8]>> FlowStatsV10<T> {
    /// Checks that the length field covers the fixed part and that the buffer holds
    /// that many bytes.
    pub fn check_len(&self) -> Result<(), Error> {
        let buffer = self.buffer.as_ref();
        Error::need("flow stats entry", buffer, 2)?;
        let length = usize::from(self.length());
        if length < FLOW_STATS_V10_LEN {
            return Err(Error::BadLength {
                what: "flow stats entry",
                length,
            });
        }
        Error::need("flow stats entry", buffer, length)
    }

    /// The 40-byte match.
    pub fn match_bytes(&self) -> &[u8] {
        sub(
            self.buffer.as_ref(),
            entry_v10::MATCH,
            entry_v10::MATCH + MATCH_V10_LEN,
        )
    }

    /// The action list.
    pub fn actions(&self) -> &[u8] {
        sub(
            self.buffer.as_ref(),
            entry_v10::ACTIONS,
            usize::from(self.length()),
        )
    }
}

view! {
    /// A view of one 1.3 `ofp_flow_stats` entry, from its length field to the end of its
    /// instructions.
    FlowStatsV13
}

fields!(FlowStatsV13 {
    /// Length of this entry, match and instructions included.
    length / set_length: u16 = entry_v13::LENGTH;
    /// The flow's table.
    table_id / set_table_id: u8 = entry_v13::TABLE_ID;
    /// Seconds the flow has lived.
    duration_sec / set_duration_sec: u32 = entry_v13::DURATION_SEC;
    /// Nanoseconds beyond `duration_sec`.
    duration_nsec / set_duration_nsec: u32 = entry_v13::DURATION_NSEC;
    /// The flow's priority.
    priority / set_priority: u16 = entry_v13::PRIORITY;
    /// The flow's idle timeout.
    idle_timeout / set_idle_timeout: u16 = entry_v13::IDLE_TIMEOUT;
    /// The flow's hard timeout.
    hard_timeout / set_hard_timeout: u16 = entry_v13::HARD_TIMEOUT;
    /// `OFPFF_*` flags.
    flags / set_flags: u16 = entry_v13::FLAGS;
    /// The flow's cookie.
    cookie / set_cookie: u64 = entry_v13::COOKIE;
    /// Packets the flow matched.
    packet_count / set_packet_count: u64 = entry_v13::PACKET_COUNT;
    /// Bytes the flow matched.
    byte_count / set_byte_count: u64 = entry_v13::BYTE_COUNT;
});

impl<T: AsRef<[u8]>> FlowStatsV13<T> {
    /// Checks that the length field covers the fixed part and a well-formed match, and
    /// that the buffer holds that many bytes.
    pub fn check_len(&self) -> Result<(), Error> {
        let buffer = self.buffer.as_ref();
        Error::need("flow stats entry", buffer, 2)?;
        let length = usize::from(self.length());
        if length < FLOW_STATS_V13_LEN {
            return Err(Error::BadLength {
                what: "flow stats entry",
                length,
            });
        }
        Error::need("flow stats entry", buffer, length)?;
        let matcher = OxmMatch::new_checked(sub(buffer, entry_v13::MATCH, length))?;
        // The length must cover the padded match: the instructions start after it.
        Error::need(
            "flow stats entry",
            sub(buffer, 0, length),
            entry_v13::MATCH.saturating_add(matcher.padded_len()),
        )
    }

    /// The match, padding included.
    pub fn match_bytes(&self) -> &[u8] {
        let own = sub(self.buffer.as_ref(), 0, usize::from(self.length()));
        let rest = tail(own, entry_v13::MATCH);
        let padded = OxmMatch::new_unchecked(rest).padded_len();
        sub(rest, 0, padded)
    }

    /// The instruction list after the match.
    pub fn instructions(&self) -> &[u8] {
        let own = sub(self.buffer.as_ref(), 0, usize::from(self.length()));
        tail(
            own,
            entry_v13::MATCH.saturating_add(self.match_bytes().len()),
        )
    }
}

/// The part of a flow's match the controller compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct StatsMatch {
    /// Input port, 32-bit numbering.
    pub in_port: Option<u32>,
    /// Ethernet source.
    pub eth_src: Option<[u8; 6]>,
    /// Ethernet destination.
    pub eth_dst: Option<[u8; 6]>,
    /// Whether the match constrains anything else (another field, a mask, a field
    /// twice): then it is not a flow the three fields above describe.
    pub other_fields: bool,
}

/// Where a flow sends what it matches, as far as the controller cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlowOutput {
    /// No action: the packets are dropped.
    Drop,
    /// One output action and nothing else (on 1.3, in `APPLY_ACTIONS`, possibly after a
    /// `METER` instruction).
    Port(u32),
    /// Anything else: several actions, other actions or instructions.
    Other,
}

/// One entry of a flow statistics reply.
///
/// `raw_match` and `raw_actions` are the switch's own bytes (the 40-byte 1.0 match or
/// the padded 1.3 OXM match; the 1.0 action list or the 1.3 instruction list), so they
/// belong to the version they were parsed from; `r#match` and `output` summarise them
/// and are derived from them on parsing. On 1.0 `flags` is 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowStats {
    /// The flow's table.
    pub table_id: u8,
    /// Seconds the flow has lived.
    pub duration_sec: u32,
    /// Nanoseconds beyond `duration_sec`.
    pub duration_nsec: u32,
    /// The flow's priority.
    pub priority: u16,
    /// Idle expiry in seconds (0: never).
    pub idle_timeout: u16,
    /// Hard expiry in seconds (0: never).
    pub hard_timeout: u16,
    /// `OFPFF_*` flags (1.3).
    pub flags: u16,
    /// The flow's cookie.
    pub cookie: u64,
    /// Packets the flow matched.
    pub packet_count: u64,
    /// Bytes the flow matched.
    pub byte_count: u64,
    /// What `raw_match` matches, in the controller's terms.
    pub r#match: StatsMatch,
    /// What `raw_actions` does, in the controller's terms.
    pub output: FlowOutput,
    /// The match as the switch sent it.
    pub raw_match: Vec<u8>,
    /// The action list (1.0) or instruction list (1.3) as the switch sent it.
    pub raw_actions: Vec<u8>,
}

impl FlowStats {
    /// The entry a switch speaking `version` reports for the flow `flow_mod` adds, with
    /// zero counters: what tests and emulators build replies from.
    pub fn of_flow(version: Version, flow_mod: &FlowMod) -> Result<FlowStats, Error> {
        let (raw_match, raw_actions) = if version == Version::Of10 {
            let mut frame = vec![0; flow_mod.buffer_len_v10()];
            flow_mod.emit_v10(&mut crate::flow_mod::FlowModV10::new_unchecked(&mut frame))?;
            (
                sub(&frame, HEADER_LEN, HEADER_LEN + MATCH_V10_LEN).to_vec(),
                tail(&frame, FLOW_MOD_V10_LEN).to_vec(),
            )
        } else {
            let mut frame = vec![0; flow_mod.buffer_len_v13()];
            flow_mod.emit_v13(&mut crate::flow_mod::FlowModV13::new_unchecked(&mut frame))?;
            let match_len = flow_mod.r#match.buffer_len_v13();
            let after_match = FLOW_MOD_V13_LEN + match_len;
            (
                sub(&frame, FLOW_MOD_V13_LEN, after_match).to_vec(),
                tail(&frame, after_match).to_vec(),
            )
        };
        Ok(FlowStats {
            table_id: flow_mod.table_id,
            duration_sec: 0,
            duration_nsec: 0,
            priority: flow_mod.priority,
            idle_timeout: flow_mod.idle_timeout,
            hard_timeout: flow_mod.hard_timeout,
            flags: if version == Version::Of10 {
                0
            } else {
                flow_mod.flags
            },
            cookie: flow_mod.cookie,
            packet_count: 0,
            byte_count: 0,
            r#match: summarise_match(version, &raw_match)?,
            output: summarise_output(version, &raw_actions)?,
            raw_match,
            raw_actions,
        })
    }

    /// The ADD that would put this entry into a switch speaking `version`: its match and
    /// its actions or instructions decoded whole, where [`Self::r#match`] and
    /// [`Self::output`] summarise them. Counters, durations and the command's delete
    /// filters are not part of a flow and come out as [`FlowMod::default`] has them.
    pub fn flow_mod(&self, version: Version) -> Result<FlowMod, Error> {
        let mut flow_mod = FlowMod {
            command: FlowModCommand::Add,
            cookie: self.cookie,
            table_id: self.table_id,
            idle_timeout: self.idle_timeout,
            hard_timeout: self.hard_timeout,
            priority: self.priority,
            flags: self.flags,
            ..FlowMod::default()
        };
        if version == Version::Of10 {
            flow_mod.r#match = Match::parse_v10(&MatchV10::new_checked(&self.raw_match[..])?)?;
            flow_mod.actions = action::parse_list(Version::Of10, &self.raw_actions)?;
        } else {
            let (r#match, _) = crate::flow_match::parse_prefix_v13(&self.raw_match)?;
            let instructions = crate::instruction::parse_list(&self.raw_actions)?;
            flow_mod.r#match = r#match;
            flow_mod.meter_id = instructions.meter_id;
            flow_mod.actions = instructions.actions;
            flow_mod.write_metadata = instructions.write_metadata;
            flow_mod.goto_table = instructions.goto_table;
        }
        Ok(flow_mod)
    }

    /// Reads a 1.0 entry.
    pub fn parse_v10<T: AsRef<[u8]>>(view: &FlowStatsV10<T>) -> Result<FlowStats, Error> {
        view.check_len()?;
        let raw_match = view.match_bytes().to_vec();
        let raw_actions = view.actions().to_vec();
        Ok(FlowStats {
            table_id: view.table_id(),
            duration_sec: view.duration_sec(),
            duration_nsec: view.duration_nsec(),
            priority: view.priority(),
            idle_timeout: view.idle_timeout(),
            hard_timeout: view.hard_timeout(),
            flags: 0,
            cookie: view.cookie(),
            packet_count: view.packet_count(),
            byte_count: view.byte_count(),
            r#match: summarise_match(Version::Of10, &raw_match)?,
            output: summarise_output(Version::Of10, &raw_actions)?,
            raw_match,
            raw_actions,
        })
    }

    /// Reads a 1.3 entry.
    pub fn parse_v13<T: AsRef<[u8]>>(view: &FlowStatsV13<T>) -> Result<FlowStats, Error> {
        view.check_len()?;
        let raw_match = view.match_bytes().to_vec();
        let raw_actions = view.instructions().to_vec();
        Ok(FlowStats {
            table_id: view.table_id(),
            duration_sec: view.duration_sec(),
            duration_nsec: view.duration_nsec(),
            priority: view.priority(),
            idle_timeout: view.idle_timeout(),
            hard_timeout: view.hard_timeout(),
            flags: view.flags(),
            cookie: view.cookie(),
            packet_count: view.packet_count(),
            byte_count: view.byte_count(),
            r#match: summarise_match(Version::Of13, &raw_match)?,
            output: summarise_output(Version::Of13, &raw_actions)?,
            raw_match,
            raw_actions,
        })
    }

    /// Bytes the entry takes in `version`.
    pub fn buffer_len(&self, version: Version) -> usize {
        let fixed = if version == Version::Of10 {
            FLOW_STATS_V10_LEN
        } else {
            FLOW_STATS_V13_LEN.saturating_add(self.raw_match.len())
        };
        fixed.saturating_add(self.raw_actions.len())
    }

    /// Writes the entry for `version` into a zeroed buffer of [`Self::buffer_len`]
    /// bytes. Fails when the raw match is not one of that version.
    pub fn emit(&self, version: Version, buffer: &mut [u8]) -> Result<(), Error> {
        check_raw_match(version, &self.raw_match)?;
        let length = length_u16("flow stats entry", self.buffer_len(version))?;
        if version == Version::Of10 {
            let mut view = FlowStatsV10::new_unchecked(&mut *buffer);
            view.set_length(length);
            view.set_table_id(self.table_id);
            view.set_duration_sec(self.duration_sec);
            view.set_duration_nsec(self.duration_nsec);
            view.set_priority(self.priority);
            view.set_idle_timeout(self.idle_timeout);
            view.set_hard_timeout(self.hard_timeout);
            view.set_cookie(self.cookie);
            view.set_packet_count(self.packet_count);
            view.set_byte_count(self.byte_count);
            write_slice(buffer, entry_v10::MATCH, &self.raw_match);
            write_slice(buffer, entry_v10::ACTIONS, &self.raw_actions);
        } else {
            let mut view = FlowStatsV13::new_unchecked(&mut *buffer);
            view.set_length(length);
            view.set_table_id(self.table_id);
            view.set_duration_sec(self.duration_sec);
            view.set_duration_nsec(self.duration_nsec);
            view.set_priority(self.priority);
            view.set_idle_timeout(self.idle_timeout);
            view.set_hard_timeout(self.hard_timeout);
            view.set_flags(self.flags);
            view.set_cookie(self.cookie);
            view.set_packet_count(self.packet_count);
            view.set_byte_count(self.byte_count);
            write_slice(buffer, entry_v13::MATCH, &self.raw_match);
            write_slice(
                buffer,
                entry_v13::MATCH + self.raw_match.len(),
                &self.raw_actions,
            );
        }
        Ok(())
    }
}

/// The entries of a flow statistics reply body, in order. Each entry's length is
/// checked before it is read; a malformed entry (a zero, short or overlong length, a
/// bad match or action list) is yielded as an error and ends the iteration.
#[derive(Debug, Clone)]
pub struct FlowStatsEntries<'a> {
    version: Version,
    rest: &'a [u8],
}

impl<'a> FlowStatsEntries<'a> {
    /// The entries of `body` (what follows the stats or multipart header) in `version`.
    pub fn new(version: Version, body: &'a [u8]) -> Self {
        Self {
            version,
            rest: body,
        }
    }
}

impl Iterator for FlowStatsEntries<'_> {
    type Item = Result<FlowStats, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let parsed = if self.version == Version::Of10 {
            FlowStatsV10::new_checked(self.rest).and_then(|view| {
                let length = usize::from(view.length());
                FlowStats::parse_v10(&view).map(|entry| (entry, length))
            })
        } else {
            FlowStatsV13::new_checked(self.rest).and_then(|view| {
                let length = usize::from(view.length());
                FlowStats::parse_v13(&view).map(|entry| (entry, length))
            })
        };
        match parsed {
            Ok((entry, length)) => {
                self.rest = tail(self.rest, length);
                Some(Ok(entry))
            }
            Err(error) => {
                self.rest = &[];
                Some(Err(error))
            }
        }
    }
}

/// Parses every entry of a reply body, failing on the first malformed one.
pub(crate) fn parse_list(version: Version, body: &[u8]) -> Result<Vec<FlowStats>, Error> {
    FlowStatsEntries::new(version, body).collect()
}

/// Bytes the entries take in `version`.
pub(crate) fn list_len(version: Version, flows: &[FlowStats]) -> usize {
    flows.iter().fold(0, |sum: usize, flow| {
        sum.saturating_add(flow.buffer_len(version))
    })
}

/// Writes the entries into a zeroed buffer of [`list_len`] bytes.
pub(crate) fn emit_list(
    version: Version,
    flows: &[FlowStats],
    mut buffer: &mut [u8],
) -> Result<(), Error> {
    for flow in flows {
        flow.emit(version, buffer)?;
        buffer = crate::wire::tail_mut(buffer, flow.buffer_len(version));
    }
    Ok(())
}

/// The wildcard bits of the 1.0 fields other than the three a [`StatsMatch`] holds.
const V10_OTHER_FIELDS: u32 = wildcards::DL_VLAN
    | wildcards::DL_TYPE
    | wildcards::NW_PROTO
    | wildcards::TP_SRC
    | wildcards::TP_DST
    | wildcards::DL_VLAN_PCP
    | wildcards::NW_TOS;
/// How many low bits of an IP address 1.0 ignores when the address is wildcarded.
const V10_IP_ADDRESS_BITS: u32 = 32;

fn summarise_match(version: Version, raw: &[u8]) -> Result<StatsMatch, Error> {
    if version == Version::Of10 {
        let view = MatchV10::new_checked(raw)?;
        let wildcarded = view.wildcards();
        let exact = |bit: u32| wildcarded & bit == 0;
        let ignored_bits = |shift: u32| (wildcarded >> shift) & 0x3f;
        Ok(StatsMatch {
            in_port: exact(wildcards::IN_PORT).then(|| port::from_v10(view.in_port())),
            eth_src: exact(wildcards::DL_SRC).then(|| view.dl_src()),
            eth_dst: exact(wildcards::DL_DST).then(|| view.dl_dst()),
            other_fields: wildcarded & V10_OTHER_FIELDS != V10_OTHER_FIELDS
                || ignored_bits(8) < V10_IP_ADDRESS_BITS
                || ignored_bits(14) < V10_IP_ADDRESS_BITS,
        })
    } else {
        let view = OxmMatch::new_checked(raw)?;
        if view.match_type() != crate::flow_match::MATCH_TYPE_OXM {
            return Err(Error::UnknownValue {
                what: "match type",
                value: u32::from(view.match_type()),
            });
        }
        let mut summary = StatsMatch::default();
        let mut rest = view.oxm_fields();
        while !rest.is_empty() {
            let oxm = Oxm::new_checked(rest)?;
            rest = tail(rest, oxm.total_len());
            let value = oxm.payload();
            let basic = oxm.class() == OXM_CLASS_BASIC && !oxm.has_mask();
            let taken = match oxm.field() {
                oxm_field::IN_PORT if basic && value.len() == 4 && summary.in_port.is_none() => {
                    summary.in_port = Some(read_field(value, 0));
                    true
                }
                oxm_field::ETH_SRC if basic && value.len() == 6 && summary.eth_src.is_none() => {
                    summary.eth_src = Some(read_field(value, 0));
                    true
                }
                oxm_field::ETH_DST if basic && value.len() == 6 && summary.eth_dst.is_none() => {
                    summary.eth_dst = Some(read_field(value, 0));
                    true
                }
                _ => false,
            };
            summary.other_fields |= !taken;
        }
        Ok(summary)
    }
}

fn summarise_output(version: Version, raw: &[u8]) -> Result<FlowOutput, Error> {
    let actions: Vec<Action> = if version == Version::Of10 {
        action::parse_list(Version::Of10, raw)?
    } else {
        let mut actions = Vec::new();
        let mut other = false;
        let mut rest = raw;
        while !rest.is_empty() {
            let instruction = Instruction::new_checked(rest)?;
            match instruction.instruction_type() {
                INSTRUCTION_APPLY_ACTIONS => {
                    actions.extend(action::parse_list(Version::Of13, instruction.actions())?)
                }
                // A meter limits the rate; the flow still goes where its actions say.
                INSTRUCTION_METER => {}
                _ => other = true,
            }
            rest = tail(rest, usize::from(instruction.length()));
        }
        if other {
            return Ok(FlowOutput::Other);
        }
        actions
    };
    Ok(match actions.as_slice() {
        [] => FlowOutput::Drop,
        [Action::Output { port, .. }] => FlowOutput::Port(*port),
        _ => FlowOutput::Other,
    })
}

/// Checks that `raw` is a whole match of `version`, so that it can travel as one.
fn check_raw_match(version: Version, raw: &[u8]) -> Result<(), Error> {
    let fits = if version == Version::Of10 {
        raw.len() == MATCH_V10_LEN
    } else {
        OxmMatch::new_checked(raw).is_ok_and(|view| view.padded_len() == raw.len())
    };
    if fits {
        Ok(())
    } else {
        Err(Error::BadLength {
            what: "raw match",
            length: raw.len(),
        })
    }
}

/// A strict delete (`OFPFC_DELETE_STRICT`) of the flow with exactly this match, as the
/// switch reported it in a flow statistics entry, this priority and (1.3) this table:
/// how a flow the controller did not install, whatever it matches, is removed and
/// nothing else with it. It parses back as a [`FlowMod`] whose match holds the fields
/// [`Match`] models.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RawFlowDelete {
    /// The flow's table (1.3; 1.0 has one).
    pub table_id: u8,
    /// The flow's priority.
    pub priority: u16,
    /// [`FlowStats::raw_match`] of the flow.
    pub raw_match: Vec<u8>,
}

impl RawFlowDelete {
    /// Appends the FLOW_MOD for `version` with transaction id `xid` to `out`; fails,
    /// leaving `out` as it was, when the raw match is not one of `version`.
    pub fn emit(&self, version: Version, xid: u32, out: &mut Vec<u8>) -> Result<(), Error> {
        check_raw_match(version, &self.raw_match)?;
        let template = FlowMod {
            command: FlowModCommand::DeleteStrict,
            table_id: self.table_id,
            priority: self.priority,
            ..FlowMod::default()
        };
        let (msg_type, fixed_len) = match version {
            Version::Of10 => (v10::FLOW_MOD, FLOW_MOD_V10_LEN),
            Version::Of13 => (v13::FLOW_MOD, FLOW_MOD_V13_LEN),
            Version::Unknown(_) => return Err(Error::UnsupportedVersion(version)),
        };
        let length = if version == Version::Of10 {
            fixed_len
        } else {
            fixed_len + self.raw_match.len()
        };
        let header = HeaderRepr {
            version,
            msg_type,
            length: length_u16("FLOW_MOD", length)?,
            xid,
        };
        let start = out.len();
        let frame = grow(out, length);
        // The template's fields, with an empty match that the raw one then replaces.
        let written = if version == Version::Of10 {
            let mut scratch = vec![0; template.buffer_len_v10()];
            template
                .emit_v10(&mut crate::flow_mod::FlowModV10::new_unchecked(
                    &mut scratch,
                ))
                .map(|()| {
                    write_slice(frame, 0, &scratch);
                    write_slice(frame, HEADER_LEN, &self.raw_match);
                })
        } else {
            let mut scratch = vec![0; FLOW_MOD_V13_LEN + Match::default().buffer_len_v13()];
            template
                .emit_v13(&mut crate::flow_mod::FlowModV13::new_unchecked(
                    &mut scratch,
                ))
                .map(|()| {
                    write_slice(frame, 0, sub(&scratch, 0, FLOW_MOD_V13_LEN));
                    write_slice(frame, FLOW_MOD_V13_LEN, &self.raw_match);
                })
        };
        match written {
            Ok(()) => {
                header.emit(&mut Header::new_unchecked(frame));
                Ok(())
            }
            Err(error) => {
                out.truncate(start);
                Err(error)
            }
        }
    }
}

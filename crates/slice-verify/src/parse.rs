//! Decoding a flow entry as the switch reported it (its raw match and its raw action or
//! instruction list) into a [`Rule`]: every match field with its mask, every instruction
//! and action that decides where a frame goes. The openflow crate's `FlowMod` keeps only
//! the fields the controller writes; a verifier must see everything else too, since an
//! entry someone else wrote can use any of it.
//!
//! Never panics: every read goes through `get`, every length is checked first.

use openflow::action::ActionHeader;
use openflow::flow_match::{MatchV10, Oxm, OxmMatch, OXM_CLASS_BASIC};
use openflow::instruction::Instruction;
use openflow::{port, FlowStats, Version};

/// A header field a host chooses, which the verifier splits into atoms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum FieldKey {
    EthDst,
    EthSrc,
    EthType,
    /// 1.3's VLAN_VID: `OFPVID_PRESENT` (0x1000) and the 12-bit id; 0 is untagged.
    Vlan,
    /// Any other OXM field, by class and number, matched on its bytes.
    Oxm {
        class: u16,
        field: u8,
    },
}

impl FieldKey {
    /// Bits of the field's value (an opaque OXM field: its value's, up to 128).
    pub(crate) fn fixed_width(self) -> Option<u32> {
        match self {
            FieldKey::EthDst | FieldKey::EthSrc => Some(48),
            FieldKey::EthType => Some(16),
            FieldKey::Vlan => Some(13),
            FieldKey::Oxm { .. } => None,
        }
    }

    fn name(self) -> String {
        match self {
            FieldKey::EthDst => "dl_dst".into(),
            FieldKey::EthSrc => "dl_src".into(),
            FieldKey::EthType => "dl_type".into(),
            FieldKey::Vlan => "vlan_tci".into(),
            FieldKey::Oxm { class, field } => format!("oxm({class:#x}:{field})"),
        }
    }
}

/// Basic-class OXM numbers the 1.0 match's extra fields correspond to, so that a frame
/// judged by a 1.0 and a 1.3 switch is one header.
mod oxm_numbers {
    pub(super) const VLAN_PCP: u8 = 7;
    pub(super) const IP_DSCP: u8 = 8;
    pub(super) const IP_PROTO: u8 = 10;
    pub(super) const IPV4_SRC: u8 = 11;
    pub(super) const IPV4_DST: u8 = 12;
    pub(super) const TCP_SRC: u8 = 13;
    pub(super) const TCP_DST: u8 = 14;
    pub(super) const IN_PORT: u8 = 0;
    pub(super) const METADATA: u8 = 2;
    pub(super) const ETH_DST: u8 = 3;
    pub(super) const ETH_SRC: u8 = 4;
    pub(super) const ETH_TYPE: u8 = 5;
    pub(super) const VLAN_VID: u8 = 6;
}

fn basic(field: u8) -> FieldKey {
    FieldKey::Oxm {
        class: OXM_CLASS_BASIC,
        field,
    }
}

/// A ternary predicate on one field: the bits of `mask` must equal `value`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Pred {
    pub value: u128,
    pub mask: u128,
}

impl Pred {
    pub(crate) fn new(value: u128, mask: u128) -> Pred {
        Pred {
            value: value & mask,
            mask,
        }
    }

    pub(crate) fn exact(value: u128, width: u32) -> Pred {
        Pred::new(value, ones(width))
    }

    pub(crate) fn holds(&self, value: u128) -> bool {
        value & self.mask == self.value
    }
}

pub(crate) fn ones(width: u32) -> u128 {
    if width >= 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    }
}

/// An action, in the terms that decide where a frame goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Act {
    Output(u32),
    SetField(FieldKey, u128),
    PushVlan,
    PopVlan,
    /// Something the verifier does not model (a group, NORMAL, MPLS...): the frames that
    /// reach it have an unknown fate, reported as such.
    Unsupported(String),
}

/// One flow entry, decoded whole.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Rule {
    pub table: u8,
    pub priority: u16,
    pub cookie: u64,
    pub in_port: Option<u32>,
    /// (value, mask); mask 0 matches any.
    pub metadata: (u64, u64),
    /// The host-chosen fields it matches, each once.
    pub fields: Vec<(FieldKey, Pred, u32)>,
    pub apply: Vec<Act>,
    pub clear: bool,
    pub write: Vec<Act>,
    pub write_metadata: Option<(u64, u64)>,
    pub goto: Option<u8>,
    pub match_text: String,
    pub actions_text: String,
}

/// Why an entry could not be read.
pub(crate) type Refusal = String;

fn be(bytes: &[u8]) -> Option<u128> {
    if bytes.len() > 16 {
        return None;
    }
    Some(
        bytes
            .iter()
            .fold(0u128, |acc, b| (acc << 8) | u128::from(*b)),
    )
}

fn read_u16(bytes: &[u8], at: usize) -> u16 {
    let hi = bytes.get(at).copied().unwrap_or(0);
    let lo = bytes.get(at + 1).copied().unwrap_or(0);
    u16::from_be_bytes([hi, lo])
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    (u32::from(read_u16(bytes, at)) << 16) | u32::from(read_u16(bytes, at + 2))
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    (u64::from(read_u32(bytes, at)) << 32) | u64::from(read_u32(bytes, at + 4))
}

fn read_mac(bytes: &[u8], at: usize) -> u128 {
    (u128::from(read_u16(bytes, at)) << 32) | u128::from(read_u32(bytes, at + 2))
}

/// Decodes one entry of a switch speaking `version`.
pub(crate) fn rule(version: Version, entry: &FlowStats) -> Result<Rule, Refusal> {
    let mut rule = Rule {
        table: entry.table_id,
        priority: entry.priority,
        cookie: entry.cookie,
        in_port: None,
        metadata: (0, 0),
        fields: Vec::new(),
        apply: Vec::new(),
        clear: false,
        write: Vec::new(),
        write_metadata: None,
        goto: None,
        match_text: String::new(),
        actions_text: String::new(),
    };
    if version == Version::Of10 {
        match_v10(&entry.raw_match, &mut rule)?;
        rule.apply = actions(Version::Of10, &entry.raw_actions)?;
    } else {
        match_v13(&entry.raw_match, &mut rule)?;
        instructions(&entry.raw_actions, &mut rule)?;
    }
    rule.match_text = match_text(&rule);
    rule.actions_text = actions_text(&rule);
    Ok(rule)
}

fn add_field(rule: &mut Rule, key: FieldKey, pred: Pred, width: u32) -> Result<(), Refusal> {
    if pred.mask == 0 {
        return Ok(());
    }
    if rule.fields.iter().any(|(k, _, _)| *k == key) {
        return Err(format!("the match has {} twice", key.name()));
    }
    rule.fields.push((key, pred, width));
    Ok(())
}

fn match_v10(raw: &[u8], rule: &mut Rule) -> Result<(), Refusal> {
    let view = MatchV10::new_checked(raw).map_err(|e| format!("1.0 match: {e}"))?;
    let w = view.wildcards();
    let exact = |bit: u32| w & bit == 0;
    use openflow::flow_match::wildcards as wc;
    if exact(wc::IN_PORT) {
        rule.in_port = Some(port::from_v10(view.in_port()));
    }
    let mac = |m: [u8; 6]| be(&m).unwrap_or(0);
    if exact(wc::DL_SRC) {
        add_field(
            rule,
            FieldKey::EthSrc,
            Pred::exact(mac(view.dl_src()), 48),
            48,
        )?;
    }
    if exact(wc::DL_DST) {
        add_field(
            rule,
            FieldKey::EthDst,
            Pred::exact(mac(view.dl_dst()), 48),
            48,
        )?;
    }
    if exact(wc::DL_VLAN) {
        let vid = view.dl_vlan();
        let value = if vid == 0xffff {
            0
        } else {
            0x1000 | u128::from(vid & 0x0fff)
        };
        add_field(rule, FieldKey::Vlan, Pred::exact(value, 13), 13)?;
    }
    if exact(wc::DL_TYPE) {
        add_field(
            rule,
            FieldKey::EthType,
            Pred::exact(u128::from(view.dl_type()), 16),
            16,
        )?;
    }
    let opaque: [(u32, u8, u128, u32); 5] = [
        (
            wc::DL_VLAN_PCP,
            oxm_numbers::VLAN_PCP,
            u128::from(view.dl_vlan_pcp()),
            8,
        ),
        (
            wc::NW_TOS,
            oxm_numbers::IP_DSCP,
            u128::from(view.nw_tos()),
            8,
        ),
        (
            wc::NW_PROTO,
            oxm_numbers::IP_PROTO,
            u128::from(view.nw_proto()),
            8,
        ),
        (
            wc::TP_SRC,
            oxm_numbers::TCP_SRC,
            u128::from(view.tp_src()),
            16,
        ),
        (
            wc::TP_DST,
            oxm_numbers::TCP_DST,
            u128::from(view.tp_dst()),
            16,
        ),
    ];
    for (bit, number, value, width) in opaque {
        if exact(bit) {
            add_field(rule, basic(number), Pred::exact(value, width), width)?;
        }
    }
    // A 6-bit count of ignored low bits; 32 or more ignores the address.
    for (shift, number, value) in [
        (8, oxm_numbers::IPV4_SRC, view.nw_src()),
        (14, oxm_numbers::IPV4_DST, view.nw_dst()),
    ] {
        let ignored = (w >> shift) & 0x3f;
        if ignored < 32 {
            let mask = u128::from(u32::MAX << ignored);
            add_field(rule, basic(number), Pred::new(u128::from(value), mask), 32)?;
        }
    }
    Ok(())
}

fn match_v13(raw: &[u8], rule: &mut Rule) -> Result<(), Refusal> {
    let view = OxmMatch::new_checked(raw).map_err(|e| format!("1.3 match: {e}"))?;
    if view.match_type() != openflow::flow_match::MATCH_TYPE_OXM {
        return Err(format!("match type {} is not OXM", view.match_type()));
    }
    let mut rest = view.oxm_fields();
    let mut seen_port = false;
    let mut seen_metadata = false;
    while !rest.is_empty() {
        let oxm = Oxm::new_checked(rest).map_err(|e| format!("OXM field: {e}"))?;
        let total = oxm.total_len();
        let payload = oxm.payload();
        rest = rest.get(total..).unwrap_or(&[]);
        let (value, mask) = if oxm.has_mask() {
            let half = payload.len() / 2;
            if payload.len() % 2 != 0 || half == 0 {
                return Err(format!("masked OXM field of {} bytes", payload.len()));
            }
            (&payload[..half], Some(&payload[half..]))
        } else {
            (payload, None)
        };
        let width = u32::try_from(value.len() * 8).unwrap_or(u32::MAX);
        let too_long = || format!("OXM field of {} bytes", value.len());
        let v = be(value).ok_or_else(too_long)?;
        let m = match mask {
            Some(mask) => be(mask).ok_or_else(too_long)?,
            None => ones(width),
        };
        let class = oxm.class();
        let field = oxm.field();
        if class == OXM_CLASS_BASIC {
            match field {
                oxm_numbers::IN_PORT => {
                    if value.len() != 4 || mask.is_some() || seen_port {
                        return Err("malformed in_port".into());
                    }
                    seen_port = true;
                    rule.in_port = Some(read_u32(value, 0));
                    continue;
                }
                oxm_numbers::METADATA => {
                    if value.len() != 8 || seen_metadata {
                        return Err("malformed metadata".into());
                    }
                    seen_metadata = true;
                    let m = mask.map_or(u64::MAX, |mask| read_u64(mask, 0));
                    rule.metadata = (read_u64(value, 0) & m, m);
                    continue;
                }
                oxm_numbers::ETH_DST
                | oxm_numbers::ETH_SRC
                | oxm_numbers::ETH_TYPE
                | oxm_numbers::VLAN_VID => {
                    let (key, expect) = match field {
                        oxm_numbers::ETH_DST => (FieldKey::EthDst, 48),
                        oxm_numbers::ETH_SRC => (FieldKey::EthSrc, 48),
                        oxm_numbers::ETH_TYPE => (FieldKey::EthType, 16),
                        _ => (FieldKey::Vlan, 16),
                    };
                    if width != expect {
                        return Err(format!("{} of {} bytes", key.name(), value.len()));
                    }
                    // VLAN_VID carries 13 meaningful bits: the present flag and the id.
                    let (v, m, width) = if key == FieldKey::Vlan {
                        (v & 0x1fff, m & 0x1fff, 13)
                    } else {
                        (v, m, width)
                    };
                    add_field(rule, key, Pred::new(v, m), width)?;
                    continue;
                }
                _ => {}
            }
        }
        add_field(rule, FieldKey::Oxm { class, field }, Pred::new(v, m), width)?;
    }
    Ok(())
}

const OFPIT_GOTO_TABLE: u16 = 1;
const OFPIT_WRITE_METADATA: u16 = 2;
const OFPIT_WRITE_ACTIONS: u16 = 3;
const OFPIT_APPLY_ACTIONS: u16 = 4;
const OFPIT_CLEAR_ACTIONS: u16 = 5;
const OFPIT_METER: u16 = 6;

fn instructions(mut bytes: &[u8], rule: &mut Rule) -> Result<(), Refusal> {
    while !bytes.is_empty() {
        let instruction =
            Instruction::new_checked(bytes).map_err(|e| format!("instruction: {e}"))?;
        let length = usize::from(instruction.length());
        let own = bytes.get(..length).unwrap_or(&[]);
        match instruction.instruction_type() {
            OFPIT_GOTO_TABLE if length == 8 => {
                rule.goto = own.get(4).copied();
            }
            OFPIT_WRITE_METADATA if length == 24 => {
                let mask = read_u64(own, 16);
                rule.write_metadata = Some((read_u64(own, 8) & mask, mask));
            }
            OFPIT_APPLY_ACTIONS => rule
                .apply
                .extend(actions(Version::Of13, instruction.actions())?),
            OFPIT_WRITE_ACTIONS => rule
                .write
                .extend(actions(Version::Of13, instruction.actions())?),
            OFPIT_CLEAR_ACTIONS => rule.clear = true,
            // A meter limits a rate; it never sends a frame elsewhere.
            OFPIT_METER => {}
            kind @ (OFPIT_GOTO_TABLE | OFPIT_WRITE_METADATA) => {
                return Err(format!("instruction {kind} of {length} bytes"))
            }
            kind => rule
                .apply
                .push(Act::Unsupported(format!("instruction type {kind}"))),
        }
        bytes = bytes.get(length..).unwrap_or(&[]);
    }
    Ok(())
}

fn actions(version: Version, mut bytes: &[u8]) -> Result<Vec<Act>, Refusal> {
    let mut list = Vec::new();
    while !bytes.is_empty() {
        let header = ActionHeader::new_checked(bytes).map_err(|e| format!("action: {e}"))?;
        let length = usize::from(header.length());
        let own = bytes.get(..length).unwrap_or(&[]);
        let kind = header.action_type();
        let act = if version == Version::Of10 {
            action_v10(kind, own)
        } else {
            action_v13(kind, own)?
        };
        if let Some(act) = act {
            list.push(act);
        }
        bytes = bytes.get(length..).unwrap_or(&[]);
    }
    Ok(list)
}

fn action_v10(kind: u16, own: &[u8]) -> Option<Act> {
    let opaque = |number: u8, value: u128| Act::SetField(basic(number), value);
    Some(match kind {
        0 | 11 => Act::Output(port::from_v10(read_u16(own, 4))),
        1 => Act::SetField(
            FieldKey::Vlan,
            0x1000 | u128::from(read_u16(own, 4) & 0x0fff),
        ),
        2 => opaque(
            oxm_numbers::VLAN_PCP,
            u128::from(own.get(4).copied().unwrap_or(0)),
        ),
        3 => Act::PopVlan,
        4 => Act::SetField(FieldKey::EthSrc, read_mac(own, 4)),
        5 => Act::SetField(FieldKey::EthDst, read_mac(own, 4)),
        6 => opaque(oxm_numbers::IPV4_SRC, u128::from(read_u32(own, 4))),
        7 => opaque(oxm_numbers::IPV4_DST, u128::from(read_u32(own, 4))),
        8 => opaque(
            oxm_numbers::IP_DSCP,
            u128::from(own.get(4).copied().unwrap_or(0)),
        ),
        9 => opaque(oxm_numbers::TCP_SRC, u128::from(read_u16(own, 4))),
        10 => opaque(oxm_numbers::TCP_DST, u128::from(read_u16(own, 4))),
        other => Act::Unsupported(format!("1.0 action type {other}")),
    })
}

fn action_v13(kind: u16, own: &[u8]) -> Result<Option<Act>, Refusal> {
    Ok(Some(match kind {
        0 => Act::Output(read_u32(own, 4)),
        17 => Act::PushVlan,
        18 => Act::PopVlan,
        // TTL copies and decrements and the queue change no field a slice is judged by.
        11 | 12 | 15 | 16 | 21 | 23 | 24 => return Ok(None),
        22 => Act::Unsupported(format!("group {}", read_u32(own, 4))),
        25 => {
            let oxm_bytes = own.get(4..).unwrap_or(&[]);
            let oxm = Oxm::new_checked(oxm_bytes).map_err(|e| format!("set_field: {e}"))?;
            if oxm.has_mask() {
                return Ok(Some(Act::Unsupported("masked set_field".into())));
            }
            let value = oxm.payload();
            let Some(v) = be(value) else {
                return Err(format!("set_field of {} bytes", value.len()));
            };
            let key = match (oxm.class(), oxm.field()) {
                (OXM_CLASS_BASIC, oxm_numbers::ETH_DST) => FieldKey::EthDst,
                (OXM_CLASS_BASIC, oxm_numbers::ETH_SRC) => FieldKey::EthSrc,
                (OXM_CLASS_BASIC, oxm_numbers::ETH_TYPE) => FieldKey::EthType,
                (OXM_CLASS_BASIC, oxm_numbers::VLAN_VID) => {
                    return Ok(Some(Act::SetField(FieldKey::Vlan, 0x1000 | (v & 0x0fff))))
                }
                (OXM_CLASS_BASIC, oxm_numbers::METADATA | oxm_numbers::IN_PORT) => {
                    return Ok(Some(Act::Unsupported(
                        "set_field of a pipeline field".into(),
                    )))
                }
                (class, field) => FieldKey::Oxm { class, field },
            };
            Act::SetField(key, v)
        }
        other => Act::Unsupported(format!("action type {other}")),
    }))
}

fn value_text(key: FieldKey, value: u128, width: u32) -> String {
    match key {
        FieldKey::EthDst | FieldKey::EthSrc => {
            let b = value.to_be_bytes();
            format!(
                "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
                b[10], b[11], b[12], b[13], b[14], b[15]
            )
        }
        FieldKey::EthType => format!("{value:#06x}"),
        _ => {
            let _ = width;
            format!("{value:#x}")
        }
    }
}

fn match_text(rule: &Rule) -> String {
    let mut parts = Vec::new();
    if let Some(p) = rule.in_port {
        parts.push(format!("in_port={}", port_text(p)));
    }
    for (key, pred, width) in &rule.fields {
        let mut text = format!("{}={}", key.name(), value_text(*key, pred.value, *width));
        if pred.mask != ones(*width) {
            text.push('/');
            text.push_str(&value_text(*key, pred.mask, *width));
        }
        parts.push(text);
    }
    let (value, mask) = rule.metadata;
    if mask == u64::MAX {
        parts.push(format!("metadata={value:#x}"));
    } else if mask != 0 {
        parts.push(format!("metadata={value:#x}/{mask:#x}"));
    }
    parts.join(",")
}

fn port_text(p: u32) -> String {
    match p {
        port::IN_PORT => "IN_PORT".into(),
        port::TABLE => "TABLE".into(),
        port::NORMAL => "NORMAL".into(),
        port::FLOOD => "FLOOD".into(),
        port::ALL => "ALL".into(),
        port::CONTROLLER => "CONTROLLER".into(),
        port::LOCAL => "LOCAL".into(),
        port::ANY => "ANY".into(),
        n => n.to_string(),
    }
}

fn act_text(act: &Act) -> String {
    match act {
        Act::Output(p) => format!("output:{}", port_text(*p)),
        Act::SetField(key, v) => format!("set_field:{}->{}", value_text(*key, *v, 128), key.name()),
        Act::PushVlan => "push_vlan".into(),
        Act::PopVlan => "pop_vlan".into(),
        Act::Unsupported(what) => format!("unsupported({what})"),
    }
}

fn actions_text(rule: &Rule) -> String {
    let mut parts: Vec<String> = rule.apply.iter().map(act_text).collect();
    if rule.clear {
        parts.push("clear_actions".into());
    }
    if !rule.write.is_empty() {
        let inner: Vec<String> = rule.write.iter().map(act_text).collect();
        parts.push(format!("write_actions({})", inner.join(",")));
    }
    if let Some((value, mask)) = rule.write_metadata {
        parts.push(format!("write_metadata:{value:#x}/{mask:#x}"));
    }
    if let Some(table) = rule.goto {
        parts.push(format!("goto_table:{table}"));
    }
    if parts.is_empty() {
        "drop".into()
    } else {
        parts.join(",")
    }
}

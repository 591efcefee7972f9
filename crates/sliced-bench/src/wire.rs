//! The few OpenFlow 1.0 and 1.3 messages a benchmark switch needs, encoded by hand.
//!
//! Like cbench, the emulator does not use the codec under test: it builds the handful of
//! messages a switch sends (handshake replies, PACKET_IN) and reads only the header of
//! what the controller sends, plus the data of a PACKET_OUT. This keeps the emulator's
//! cost per message small and keeps a codec bug from hiding on both sides of the wire.

pub(crate) const OFP10: u8 = 0x01;
pub(crate) const OFP13: u8 = 0x04;

pub(crate) const HEADER_LEN: usize = 8;

// Message types with the same number in 1.0 and 1.3.
pub(crate) const HELLO: u8 = 0;
pub(crate) const ERROR: u8 = 1;
pub(crate) const ECHO_REQUEST: u8 = 2;
pub(crate) const ECHO_REPLY: u8 = 3;
pub(crate) const FEATURES_REQUEST: u8 = 5;
pub(crate) const FEATURES_REPLY: u8 = 6;
pub(crate) const GET_CONFIG_REQUEST: u8 = 7;
pub(crate) const GET_CONFIG_REPLY: u8 = 8;
pub(crate) const PACKET_IN: u8 = 10;
pub(crate) const PACKET_OUT: u8 = 13;
pub(crate) const FLOW_MOD: u8 = 14;

// 1.0 only.
const V10_STATS_REQUEST: u8 = 16;
const V10_STATS_REPLY: u8 = 17;
const V10_BARRIER_REQUEST: u8 = 18;
const V10_BARRIER_REPLY: u8 = 19;

// 1.3 only.
const V13_MULTIPART_REQUEST: u8 = 18;
const V13_MULTIPART_REPLY: u8 = 19;
const V13_BARRIER_REQUEST: u8 = 20;
const V13_BARRIER_REPLY: u8 = 21;
const V13_ROLE_REQUEST: u8 = 24;
const V13_ROLE_REPLY: u8 = 25;
const V13_GET_ASYNC_REQUEST: u8 = 26;
const V13_GET_ASYNC_REPLY: u8 = 27;

const STATS_DESC: u16 = 0;
const MULTIPART_PORT_DESC: u16 = 13;
const MULTIPART_METER_FEATURES: u16 = 11;

/// The ethertype of the emulator's frames (IEEE 802 local experimental), so that no
/// controller tries to parse them as IP and none mistakes them for LLDP.
pub(crate) const PROBE_ETHERTYPE: u16 = 0x88b5;
/// Length of an emulated host's frame: the 60-byte minimum Ethernet frame.
pub(crate) const PROBE_LEN: usize = 60;

/// The header of an OpenFlow message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub version: u8,
    pub kind: u8,
    pub length: u16,
    pub xid: u32,
}

impl Header {
    pub(crate) fn parse(bytes: &[u8]) -> Option<Header> {
        if bytes.len() < HEADER_LEN {
            return None;
        }
        Some(Header {
            version: bytes[0],
            kind: bytes[1],
            length: u16::from_be_bytes([bytes[2], bytes[3]]),
            xid: u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
        })
    }
}

/// The length of the first whole message in `buffer`, if it is all there. A length field
/// below the header's size is an error: the stream cannot be framed any more.
pub(crate) fn frame_len(buffer: &[u8]) -> Result<Option<usize>, String> {
    let Some(header) = Header::parse(buffer) else {
        return Ok(None);
    };
    let len = usize::from(header.length);
    if len < HEADER_LEN {
        return Err(format!("message length {len} below the header size"));
    }
    Ok((buffer.len() >= len).then_some(len))
}

/// Starts a message: writes a header whose length is fixed up by [`finish`].
fn start(out: &mut Vec<u8>, version: u8, kind: u8, xid: u32) -> usize {
    let at = out.len();
    out.extend_from_slice(&[version, kind, 0, 0]);
    out.extend_from_slice(&xid.to_be_bytes());
    at
}

fn finish(out: &mut [u8], at: usize) {
    let len = out.len() - at;
    // Every message built here is far below 64 KiB: the largest is a port description
    // list of at most 255 ports of 64 bytes.
    let len = u16::try_from(len).unwrap_or(u16::MAX);
    out[at + 2..at + 4].copy_from_slice(&len.to_be_bytes());
}

/// HELLO offering only `version` (with a version bitmap on 1.3).
pub(crate) fn hello(out: &mut Vec<u8>, version: u8) {
    let at = start(out, version, HELLO, 1);
    if version >= OFP13 {
        out.extend_from_slice(&1u16.to_be_bytes()); // OFPHET_VERSIONBITMAP
        out.extend_from_slice(&8u16.to_be_bytes());
        out.extend_from_slice(&(1u32 << version).to_be_bytes());
    }
    finish(out, at);
}

fn port_name(port_no: u16) -> [u8; 16] {
    let mut name = [0u8; 16];
    let text = format!("eth{port_no}");
    name[..text.len()].copy_from_slice(text.as_bytes());
    name
}

fn port_mac(dpid: u64, port_no: u16) -> [u8; 6] {
    let d = dpid.to_be_bytes();
    [0x0a, d[5], d[6], d[7], 0, port_no as u8]
}

/// FEATURES_REPLY; on 1.0 it lists ports 1..=ports, on 1.3 ports come by PORT_DESC.
pub(crate) fn features_reply(out: &mut Vec<u8>, version: u8, xid: u32, dpid: u64, ports: u16) {
    let at = start(out, version, FEATURES_REPLY, xid);
    out.extend_from_slice(&dpid.to_be_bytes());
    out.extend_from_slice(&0u32.to_be_bytes()); // n_buffers: whole packets come up
    out.push(1); // n_tables
    if version >= OFP13 {
        out.extend_from_slice(&[0, 0, 0]); // auxiliary_id, pad
        out.extend_from_slice(&0u32.to_be_bytes()); // capabilities
        out.extend_from_slice(&0u32.to_be_bytes()); // reserved
    } else {
        out.extend_from_slice(&[0, 0, 0]);
        out.extend_from_slice(&0u32.to_be_bytes()); // capabilities
        out.extend_from_slice(&1u32.to_be_bytes()); // actions: output
        for port_no in 1..=ports {
            out.extend_from_slice(&port_no.to_be_bytes());
            out.extend_from_slice(&port_mac(dpid, port_no));
            out.extend_from_slice(&port_name(port_no));
            out.extend_from_slice(&[0u8; 24]); // config, state (up), curr..peer
        }
    }
    finish(out, at);
}

fn port_desc_reply(out: &mut Vec<u8>, xid: u32, dpid: u64, ports: u16) {
    let at = start(out, OFP13, V13_MULTIPART_REPLY, xid);
    out.extend_from_slice(&MULTIPART_PORT_DESC.to_be_bytes());
    out.extend_from_slice(&[0u8; 6]); // flags, pad
    for port_no in 1..=ports {
        out.extend_from_slice(&u32::from(port_no).to_be_bytes());
        out.extend_from_slice(&[0u8; 4]);
        out.extend_from_slice(&port_mac(dpid, port_no));
        out.extend_from_slice(&[0u8; 2]);
        out.extend_from_slice(&port_name(port_no));
        out.extend_from_slice(&[0u8; 32]); // config, state (live), features, speeds
    }
    finish(out, at);
}

/// A stats (1.0) or multipart (1.3) reply: the switch description for DESC, the port
/// list for PORT_DESC, meter features for METER_FEATURES, an empty body otherwise.
fn stats_reply(out: &mut Vec<u8>, version: u8, xid: u32, kind: u16, dpid: u64, ports: u16) {
    if version >= OFP13 && kind == MULTIPART_PORT_DESC {
        port_desc_reply(out, xid, dpid, ports);
        return;
    }
    let reply = if version >= OFP13 {
        V13_MULTIPART_REPLY
    } else {
        V10_STATS_REPLY
    };
    let at = start(out, version, reply, xid);
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&[0u8; 2]); // flags
    if version >= OFP13 {
        out.extend_from_slice(&[0u8; 4]);
    }
    if version >= OFP13 && kind == MULTIPART_METER_FEATURES {
        // Like Open vSwitch's userspace datapath: meters with drop bands, in packets per
        // second with bursts, so that sliced takes the same path as on a real 1.3 switch
        // (a metered table-miss flow). The emulator does not enforce the meter.
        out.extend_from_slice(&65536u32.to_be_bytes()); // max_meter
        out.extend_from_slice(&(1u32 << 1).to_be_bytes()); // band types: drop
        out.extend_from_slice(&0b1111u32.to_be_bytes()); // kbps, pktps, burst, stats
        out.extend_from_slice(&[1, 0, 0, 0]); // max_bands, max_color, pad
    }
    if kind == STATS_DESC {
        for (text, len) in [
            ("sliced-bench", 256),
            ("emulated switch", 256),
            ("sliced-bench", 256),
            ("0", 32),
            ("emulated", 256),
        ] {
            let mut field = vec![0u8; len];
            field[..text.len()].copy_from_slice(text.as_bytes());
            out.extend_from_slice(&field);
        }
    }
    finish(out, at);
}

/// What a switch answers to a controller's request, appended to `out`; None for a
/// message that needs no answer.
pub(crate) fn answer(out: &mut Vec<u8>, message: &[u8], dpid: u64, ports: u16) -> Option<()> {
    let header = Header::parse(message)?;
    let (version, xid) = (header.version, header.xid);
    let body = &message[HEADER_LEN..];
    match (header.kind, version >= OFP13) {
        (ECHO_REQUEST, _) => {
            let at = start(out, version, ECHO_REPLY, xid);
            out.extend_from_slice(body);
            finish(out, at);
        }
        (FEATURES_REQUEST, _) => features_reply(out, version, xid, dpid, ports),
        (GET_CONFIG_REQUEST, _) => {
            let at = start(out, version, GET_CONFIG_REPLY, xid);
            out.extend_from_slice(&0u16.to_be_bytes());
            out.extend_from_slice(&0xffffu16.to_be_bytes());
            finish(out, at);
        }
        (V10_STATS_REQUEST, false) | (V13_MULTIPART_REQUEST, true) => {
            let kind = u16::from_be_bytes([*body.first()?, *body.get(1)?]);
            stats_reply(out, version, xid, kind, dpid, ports);
        }
        (V10_BARRIER_REQUEST, false) => {
            let at = start(out, version, V10_BARRIER_REPLY, xid);
            finish(out, at);
        }
        (V13_BARRIER_REQUEST, true) => {
            let at = start(out, version, V13_BARRIER_REPLY, xid);
            finish(out, at);
        }
        (V13_ROLE_REQUEST, true) => {
            let at = start(out, version, V13_ROLE_REPLY, xid);
            out.extend_from_slice(body);
            finish(out, at);
        }
        (V13_GET_ASYNC_REQUEST, true) => {
            let at = start(out, version, V13_GET_ASYNC_REPLY, xid);
            out.extend_from_slice(&[0u8; 24]);
            finish(out, at);
        }
        _ => return None,
    }
    Some(())
}

/// The MAC address of emulated host `port_no` of switch `dpid`: unique across switches,
/// locally administered, unicast.
pub(crate) fn host_mac(dpid: u64, port_no: u16) -> [u8; 6] {
    let d = dpid.to_be_bytes();
    [0x02, 0, d[5], d[6], d[7], port_no as u8]
}

pub(crate) fn mac_text(mac: [u8; 6]) -> String {
    mac.iter()
        .map(|octet| format!("{octet:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// A host's frame from `src` to `dst` carrying a sequence number.
pub(crate) fn probe_frame(dst: [u8; 6], src: [u8; 6], seq: u64) -> [u8; PROBE_LEN] {
    let mut frame = [0u8; PROBE_LEN];
    frame[0..6].copy_from_slice(&dst);
    frame[6..12].copy_from_slice(&src);
    frame[12..14].copy_from_slice(&PROBE_ETHERTYPE.to_be_bytes());
    frame[14..22].copy_from_slice(&seq.to_be_bytes());
    frame
}

/// The sequence number of a probe frame, None for any other frame (LLDP, say).
pub(crate) fn probe_seq(frame: &[u8]) -> Option<u64> {
    if frame.len() < 22 || frame[12..14] != PROBE_ETHERTYPE.to_be_bytes() {
        return None;
    }
    let mut seq = [0u8; 8];
    seq.copy_from_slice(&frame[14..22]);
    Some(u64::from_be_bytes(seq))
}

/// A PACKET_IN of a whole frame (no buffer) that arrived on `in_port`.
pub(crate) fn packet_in(out: &mut Vec<u8>, version: u8, xid: u32, in_port: u16, frame: &[u8]) {
    let at = start(out, version, PACKET_IN, xid);
    out.extend_from_slice(&u32::MAX.to_be_bytes()); // buffer_id: none
    out.extend_from_slice(&(frame.len() as u16).to_be_bytes()); // total_len
    if version >= OFP13 {
        out.push(0); // reason: no match
        out.push(0); // table_id
        out.extend_from_slice(&0u64.to_be_bytes()); // cookie
                                                    // An OXM match with only OFPXMT_OFB_IN_PORT: 4 + 8 bytes, padded to 16.
        out.extend_from_slice(&1u16.to_be_bytes());
        out.extend_from_slice(&12u16.to_be_bytes());
        out.extend_from_slice(&0x8000_0004u32.to_be_bytes());
        out.extend_from_slice(&u32::from(in_port).to_be_bytes());
        out.extend_from_slice(&[0u8; 4]);
        out.extend_from_slice(&[0u8; 2]); // pad before the frame
    } else {
        out.extend_from_slice(&in_port.to_be_bytes());
        out.push(0); // reason
        out.push(0); // pad
    }
    out.extend_from_slice(frame);
    finish(out, at);
}

/// The frame a PACKET_OUT carries, if it carries one.
pub(crate) fn packet_out_data(message: &[u8]) -> Option<&[u8]> {
    let header = Header::parse(message)?;
    let (actions_len_at, actions_at) = if header.version >= OFP13 {
        (16, 24)
    } else {
        (14, 16)
    };
    let actions_len = u16::from_be_bytes([
        *message.get(actions_len_at)?,
        *message.get(actions_len_at + 1)?,
    ]);
    message.get(actions_at + usize::from(actions_len)..)
}

/// What the membership-change test needs to know about an OpenFlow 1.3 FLOW_MOD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FlowMod {
    pub command: u8,
    pub eth_src: Option<[u8; 6]>,
    pub eth_dst: Option<[u8; 6]>,
    /// Whether an instruction outputs the packet somewhere; a drop flow has none.
    pub outputs: bool,
}

pub(crate) const FLOW_MOD_ADD: u8 = 0;
pub(crate) const FLOW_MOD_DELETE: u8 = 3;
pub(crate) const FLOW_MOD_DELETE_STRICT: u8 = 4;

impl FlowMod {
    pub(crate) fn deletes(&self) -> bool {
        matches!(self.command, FLOW_MOD_DELETE | FLOW_MOD_DELETE_STRICT)
    }

    /// Whether it is about traffic from `src` to `dst`.
    pub(crate) fn between(&self, src: [u8; 6], dst: [u8; 6]) -> bool {
        self.eth_src == Some(src) && self.eth_dst == Some(dst)
    }
}

// Offsets in an OpenFlow 1.3 ofp_flow_mod (section 7.3.4.1 of the specification).
const V13_FLOW_MOD_COMMAND: usize = 25;
const V13_FLOW_MOD_MATCH: usize = 48;
const OXM_CLASS_OPENFLOW_BASIC: u16 = 0x8000;
const OXM_ETH_DST: u8 = 3;
const OXM_ETH_SRC: u8 = 4;
const INSTRUCTION_WRITE_ACTIONS: u16 = 3;
const INSTRUCTION_APPLY_ACTIONS: u16 = 4;
const ACTION_OUTPUT: u16 = 0;

/// Reads an OpenFlow 1.3 FLOW_MOD: its command, the Ethernet addresses of its match and
/// whether it outputs; None for anything else or a message too short for its lengths.
pub(crate) fn flow_mod_13(message: &[u8]) -> Option<FlowMod> {
    let header = Header::parse(message)?;
    if header.version != OFP13 || header.kind != FLOW_MOD {
        return None;
    }
    let message = message.get(..usize::from(header.length))?;
    let command = *message.get(V13_FLOW_MOD_COMMAND)?;
    let match_len = usize::from(be16(message, V13_FLOW_MOD_MATCH + 2)?);
    // The match's length covers its 4-byte header and the OXM fields, not the padding
    // to a multiple of 8 that follows.
    let oxms = message.get(V13_FLOW_MOD_MATCH + 4..V13_FLOW_MOD_MATCH + match_len)?;
    let (mut eth_src, mut eth_dst) = (None, None);
    let mut at = 0;
    while at + 4 <= oxms.len() {
        let class = be16(oxms, at)?;
        let field = oxms[at + 2] >> 1;
        let has_mask = oxms[at + 2] & 1 == 1;
        let len = usize::from(oxms[at + 3]);
        let value = oxms.get(at + 4..at + 4 + len)?;
        if class == OXM_CLASS_OPENFLOW_BASIC && !has_mask && len == 6 {
            let mut mac = [0u8; 6];
            mac.copy_from_slice(value);
            match field {
                OXM_ETH_DST => eth_dst = Some(mac),
                OXM_ETH_SRC => eth_src = Some(mac),
                _ => {}
            }
        }
        at += 4 + len;
    }
    let mut outputs = false;
    let mut at = V13_FLOW_MOD_MATCH + match_len.div_ceil(8) * 8;
    while at + 4 <= message.len() {
        let (kind, len) = (be16(message, at)?, usize::from(be16(message, at + 2)?));
        if len < 8 {
            return None;
        }
        if matches!(kind, INSTRUCTION_WRITE_ACTIONS | INSTRUCTION_APPLY_ACTIONS) {
            let actions = message.get(at + 8..at + len)?;
            let mut action = 0;
            while action + 4 <= actions.len() {
                let action_len = usize::from(be16(actions, action + 2)?);
                if action_len < 8 {
                    return None;
                }
                outputs |= be16(actions, action)? == ACTION_OUTPUT;
                action += action_len;
            }
        }
        at += len;
    }
    Some(FlowMod {
        command,
        eth_src,
        eth_dst,
        outputs,
    })
}

fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*bytes.get(at)?, *bytes.get(at + 1)?]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_cut_by_the_length_field() {
        let mut out = Vec::new();
        hello(&mut out, OFP13);
        hello(&mut out, OFP10);
        assert_eq!(frame_len(&out), Ok(Some(16)));
        assert_eq!(frame_len(&out[16..]), Ok(Some(8)));
        assert_eq!(frame_len(&out[..5]), Ok(None));
        assert!(frame_len(&[1, 0, 0, 4, 0, 0, 0, 0]).is_err());
    }

    #[test]
    fn features_replies_have_the_spec_sizes() {
        let mut v10 = Vec::new();
        features_reply(&mut v10, OFP10, 7, 0x1234, 4);
        assert_eq!(v10.len(), 32 + 4 * 48);
        assert_eq!(Header::parse(&v10).map(|h| h.length), Some(224));
        let mut v13 = Vec::new();
        features_reply(&mut v13, OFP13, 7, 0x1234, 4);
        assert_eq!(v13.len(), 32);
        assert_eq!(&v13[8..16], &0x1234u64.to_be_bytes());
    }

    #[test]
    fn port_desc_requests_get_one_64_byte_entry_per_port() {
        let request = [
            OFP13,
            V13_MULTIPART_REQUEST,
            0,
            16,
            0,
            0,
            0,
            9,
            0,
            13,
            0,
            0,
            0,
            0,
            0,
            0,
        ];
        let mut out = Vec::new();
        answer(&mut out, &request, 1, 3).expect("answered");
        assert_eq!(out.len(), 16 + 3 * 64);
        assert_eq!(Header::parse(&out).map(|h| (h.kind, h.xid)), Some((19, 9)));
    }

    #[test]
    fn packet_ins_carry_the_frame_where_each_version_puts_it() {
        let frame = probe_frame([0xff; 6], host_mac(3, 2), 42);
        for (version, offset) in [(OFP10, 18), (OFP13, 42)] {
            let mut out = Vec::new();
            packet_in(&mut out, version, 1, 2, &frame);
            assert_eq!(out.len(), offset + PROBE_LEN);
            assert_eq!(probe_seq(&out[offset..]), Some(42));
        }
    }

    #[test]
    fn packet_out_data_skips_the_actions() {
        // 1.3: header, buffer_id, in_port, actions_len 16, pad, one output action, frame.
        let frame = probe_frame([2; 6], [4; 6], 7);
        let mut message = vec![OFP13, PACKET_OUT, 0, 0, 0, 0, 0, 1];
        message.extend_from_slice(&u32::MAX.to_be_bytes());
        message.extend_from_slice(&1u32.to_be_bytes());
        message.extend_from_slice(&16u16.to_be_bytes());
        message.extend_from_slice(&[0u8; 6]);
        message.extend_from_slice(&[0u8; 16]);
        message.extend_from_slice(&frame);
        assert_eq!(packet_out_data(&message), Some(&frame[..]));
        assert_eq!(probe_seq(&frame), Some(7));
        assert_eq!(probe_seq(&[0u8; 60]), None);
    }

    #[test]
    fn host_macs_are_unique_unicast_and_printed_lowercase() {
        assert_eq!(mac_text(host_mac(0xab, 4)), "02:00:00:00:ab:04");
        assert_ne!(host_mac(1, 2), host_mac(2, 1));
        assert_eq!(host_mac(9, 9)[0] & 1, 0);
    }

    /// A 1.3 FLOW_MOD as the specification lays it out: match on in_port, eth_dst and
    /// eth_src, then the given instructions.
    fn flow_mod_bytes(command: u8, instructions: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let at = start(&mut out, OFP13, FLOW_MOD, 5);
        out.extend_from_slice(&[0u8; 16]); // cookie, cookie_mask
        out.extend_from_slice(&[0, command]); // table_id, command
        out.extend_from_slice(&[0u8; 22]); // timeouts .. pad
        assert_eq!(out.len() - at, V13_FLOW_MOD_MATCH);
        // type OXM, length 4 + 8 + 10 + 10 = 32: already a multiple of 8.
        out.extend_from_slice(&[0, 1, 0, 32]);
        out.extend_from_slice(&[0x80, 0, 0, 4, 0, 0, 0, 1]); // in_port 1
        out.extend_from_slice(&[0x80, 0, OXM_ETH_DST << 1, 6, 2, 0, 0, 0, 0, 2]);
        out.extend_from_slice(&[0x80, 0, OXM_ETH_SRC << 1, 6, 2, 0, 0, 0, 0, 1]);
        out.extend_from_slice(instructions);
        finish(&mut out, at);
        out
    }

    #[test]
    fn flow_mods_are_read_for_their_command_addresses_and_output() {
        // APPLY_ACTIONS with one OUTPUT action to port 2.
        let mut apply = vec![0, 4, 0, 24, 0, 0, 0, 0];
        apply.extend_from_slice(&[0, 0, 0, 16, 0, 0, 0, 2, 0xff, 0xff, 0, 0, 0, 0, 0, 0]);
        let add = flow_mod_13(&flow_mod_bytes(FLOW_MOD_ADD, &apply)).expect("a flow mod");
        assert_eq!(add.command, FLOW_MOD_ADD);
        assert!(add.outputs && !add.deletes());
        assert!(add.between([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]));
        assert!(!add.between([2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1]));

        let drop = flow_mod_13(&flow_mod_bytes(FLOW_MOD_ADD, &[])).expect("a flow mod");
        assert!(!drop.outputs);
        // APPLY_ACTIONS with a GROUP action only: it outputs nothing itself.
        let group = [0, 4, 0, 16, 0, 0, 0, 0, 0, 22, 0, 8, 0, 0, 0, 1];
        let grouped = flow_mod_13(&flow_mod_bytes(FLOW_MOD_ADD, &group)).expect("a flow mod");
        assert!(!grouped.outputs);
        let delete = flow_mod_13(&flow_mod_bytes(FLOW_MOD_DELETE_STRICT, &[])).expect("a flow mod");
        assert!(delete.deletes());

        let mut hello_message = Vec::new();
        hello(&mut hello_message, OFP13);
        assert_eq!(flow_mod_13(&hello_message), None);
        let whole = flow_mod_bytes(FLOW_MOD_ADD, &apply);
        let mut cut = whole[..60].to_vec();
        cut[2..4].copy_from_slice(&60u16.to_be_bytes());
        assert_eq!(flow_mod_13(&cut), None);
    }
}

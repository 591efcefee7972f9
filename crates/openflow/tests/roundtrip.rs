//! Property tests: arbitrary messages survive `emit` then `parse` on both versions.
//!
//! A version drops the fields it has no room for, so the expected value is the
//! original with those fields set to what parsing that version yields
//! ([`normalise`]): on 1.0 the 1.3-only fields (features `auxiliary_id`, port speeds,
//! packet-in `table_id`/`cookie`, flow-mod `cookie_mask`/`table_id`/`out_group`,
//! flow-removed `table_id`/`hard_timeout`), on 1.3 the features reply's port list.
//! PORT_DESC, meter and role messages, and FLOW_MODs with a meter, do not exist on 1.0
//! and must fail to emit there; the Nicira role messages are modelled on 1.0 only and
//! must fail to emit on 1.3. Bundle messages travel as 1.3's ONF extension only.

use openflow::{
    frame_len, port, Action, ErrorType, FeaturesReply, FlowMod, FlowModCommand, FlowRemoved,
    FlowRemovedReason, Masked, Match, Message, MeterBand, MeterFeatures, MeterMod, MeterModCommand,
    PacketIn, PacketInReason, PacketOut, PortDesc, PortReason, Version,
};
use openflow::{BundleAdd, BundleControl, BundleCtrlType};
use openflow::{ControllerRole, NxRole, RoleMsg};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

/// Port numbers both versions can carry: 1.0's 16-bit range, mapped.
fn port_no() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..0xff00, 0xffff_ff00u32..=u32::MAX]
}

/// Buffer ids; `OFP_NO_BUFFER` is `None`.
fn buffer_id() -> impl Strategy<Value = Option<u32>> {
    option::of(0u32..u32::MAX)
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..max)
}

fn port_desc() -> impl Strategy<Value = PortDesc> {
    (
        (port_no(), any::<[u8; 6]>(), "[a-z0-9-]{0,15}"),
        any::<[u32; 8]>(),
    )
        .prop_map(|((port_no, hw_addr, name), fields)| {
            let [config, state, curr, advertised, supported, peer, curr_speed, max_speed] = fields;
            PortDesc {
                port_no,
                hw_addr,
                name,
                config,
                state,
                curr,
                advertised,
                supported,
                peer,
                curr_speed,
                max_speed,
            }
        })
}

/// A metadata value and mask as they read back: an all-ones mask is an exact match.
fn masked_u64() -> impl Strategy<Value = Masked<u64>> {
    prop_oneof![
        any::<u64>().prop_map(Masked::exact),
        (any::<u64>(), any::<u64>()).prop_map(|(value, mask)| Masked { value, mask }),
    ]
}

fn flow_match() -> impl Strategy<Value = Match> {
    (
        option::of(port_no()),
        option::of((any::<[u8; 6]>(), option::of(any::<[u8; 6]>()))),
        option::of(any::<[u8; 6]>()),
        option::of(any::<u16>()),
        option::of(0u16..=0x0fff),
        option::of(masked_u64()),
    )
        .prop_map(
            |(in_port, eth_dst, eth_src, eth_type, vlan_vid, metadata)| Match {
                in_port,
                eth_dst: eth_dst.map(|(dst, _)| dst),
                // As it reads back: a mask only with a destination, and never all ones.
                eth_dst_mask: eth_dst
                    .and_then(|(_, mask)| mask)
                    .filter(|mask| *mask != [0xff; 6]),
                eth_src,
                eth_type,
                vlan_vid,
                metadata,
            },
        )
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        (port_no(), any::<u16>()).prop_map(|(port, max_len)| Action::Output { port, max_len }),
        // Any type but OUTPUT, with a body that makes the action a multiple of 8 long.
        (1u16..=u16::MAX, 0usize..3, any::<u8>()).prop_map(|(kind, words, fill)| {
            Action::Other {
                kind,
                body: vec![fill; 4 + 8 * words],
            }
        }),
    ]
}

fn command() -> impl Strategy<Value = FlowModCommand> {
    prop_oneof![
        Just(FlowModCommand::Add),
        Just(FlowModCommand::Modify),
        Just(FlowModCommand::ModifyStrict),
        Just(FlowModCommand::Delete),
        Just(FlowModCommand::DeleteStrict),
    ]
}

fn flow_mod() -> impl Strategy<Value = FlowMod> {
    (
        (
            command(),
            flow_match(),
            any::<u64>(),
            any::<u64>(),
            any::<u8>(),
        ),
        (any::<[u16; 4]>(), buffer_id(), port_no(), any::<u32>()),
        (
            option::of(any::<u32>()),
            vec(action(), 0..4),
            option::of(masked_u64()),
            option::of(any::<u8>()),
        ),
    )
        .prop_map(
            |(
                (command, r#match, cookie, cookie_mask, table_id),
                ([idle_timeout, hard_timeout, priority, flags], buffer_id, out_port, out_group),
                (meter_id, actions, write_metadata, goto_table),
            )| FlowMod {
                command,
                r#match,
                cookie,
                cookie_mask,
                table_id,
                idle_timeout,
                hard_timeout,
                priority,
                buffer_id,
                out_port,
                out_group,
                flags,
                meter_id,
                actions,
                write_metadata,
                goto_table,
            },
        )
}

fn meter_band() -> impl Strategy<Value = MeterBand> {
    prop_oneof![
        (any::<u32>(), any::<u32>())
            .prop_map(|(rate, burst_size)| MeterBand::Drop { rate, burst_size }),
        (any::<u32>(), any::<u32>(), any::<u8>()).prop_map(|(rate, burst_size, prec_level)| {
            MeterBand::DscpRemark {
                rate,
                burst_size,
                prec_level,
            }
        }),
        // Any other type, with a body that makes the band a multiple of 8 long.
        (
            3u16..=u16::MAX,
            any::<u32>(),
            any::<u32>(),
            0usize..3,
            any::<u8>()
        )
            .prop_map(
                |(band_type, rate, burst_size, words, fill)| MeterBand::Other {
                    band_type,
                    rate,
                    burst_size,
                    body: vec![fill; 4 + 8 * words],
                }
            ),
    ]
}

fn meter_mod() -> impl Strategy<Value = MeterMod> {
    (
        any::<u16>(),
        any::<u16>(),
        any::<u32>(),
        vec(meter_band(), 0..4),
    )
        .prop_map(|(command, flags, meter_id, bands)| MeterMod {
            command: MeterModCommand::from_wire(command),
            flags,
            meter_id,
            bands,
        })
}

fn meter_features() -> impl Strategy<Value = MeterFeatures> {
    (any::<[u32; 3]>(), any::<u8>(), any::<u8>()).prop_map(
        |([max_meter, band_types, capabilities], max_bands, max_color)| MeterFeatures {
            max_meter,
            band_types,
            capabilities,
            max_bands,
            max_color,
        },
    )
}

fn flow_removed() -> impl Strategy<Value = FlowRemoved> {
    (
        (any::<u64>(), any::<u16>(), any::<u8>(), any::<u8>()),
        (any::<[u32; 2]>(), any::<[u16; 2]>(), any::<[u64; 2]>()),
        flow_match(),
    )
        .prop_map(
            |(
                (cookie, priority, reason, table_id),
                (
                    [duration_sec, duration_nsec],
                    [idle_timeout, hard_timeout],
                    [packet_count, byte_count],
                ),
                r#match,
            )| FlowRemoved {
                cookie,
                priority,
                reason: FlowRemovedReason::from(reason),
                table_id,
                duration_sec,
                duration_nsec,
                idle_timeout,
                hard_timeout,
                packet_count,
                byte_count,
                r#match,
            },
        )
}

fn packet_in() -> impl Strategy<Value = PacketIn> {
    (
        buffer_id(),
        any::<u16>(),
        port_no(),
        any::<[u8; 2]>(),
        any::<u64>(),
        bytes(200),
    )
        .prop_map(
            |(buffer_id, total_len, in_port, [reason, table_id], cookie, data)| PacketIn {
                buffer_id,
                total_len,
                in_port,
                reason: PacketInReason::from(reason),
                table_id,
                cookie,
                data,
            },
        )
}

fn packet_out() -> impl Strategy<Value = PacketOut> {
    (buffer_id(), port_no(), vec(action(), 0..4), bytes(200)).prop_map(
        |(buffer_id, in_port, actions, data)| PacketOut {
            buffer_id,
            in_port,
            actions,
            data,
        },
    )
}

fn features_reply() -> impl Strategy<Value = FeaturesReply> {
    (
        any::<u64>(),
        any::<u32>(),
        any::<[u8; 2]>(),
        any::<u32>(),
        vec(port_desc(), 0..4),
    )
        .prop_map(
            |(datapath_id, n_buffers, [n_tables, auxiliary_id], capabilities, ports)| {
                FeaturesReply {
                    datapath_id,
                    n_buffers,
                    n_tables,
                    auxiliary_id,
                    capabilities,
                    ports,
                }
            },
        )
}

/// Message types neither version models, so an `Other` of them comes back as `Other`.
fn unmodelled_type() -> impl Strategy<Value = u8> {
    // Not 16 and 17 (1.0's statistics messages, whose flow type is modelled), nor 24
    // and 25 (1.3's role messages), nor 29 (1.3's METER_MOD).
    prop_oneof![
        Just(4u8),
        Just(7),
        Just(8),
        Just(15),
        22u8..=23,
        26u8..=28,
        30u8..=u8::MAX
    ]
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        option::of(any::<u32>()).prop_map(|versions| Message::Hello { versions }),
        (any::<u16>(), any::<u16>(), bytes(64)).prop_map(|(err_type, code, data)| {
            Message::Error {
                err_type: ErrorType::from(err_type),
                code,
                data,
            }
        }),
        bytes(64).prop_map(Message::EchoRequest),
        bytes(64).prop_map(Message::EchoReply),
        Just(Message::FeaturesRequest),
        features_reply().prop_map(Message::FeaturesReply),
        (any::<u16>(), any::<u16>()).prop_map(|(flags, miss_send_len)| Message::SetConfig {
            flags,
            miss_send_len
        }),
        packet_in().prop_map(Message::PacketIn),
        packet_out().prop_map(Message::PacketOut),
        flow_mod().prop_map(Message::FlowMod),
        flow_removed().prop_map(Message::FlowRemoved),
        (any::<u8>(), port_desc()).prop_map(|(reason, desc)| Message::PortStatus {
            reason: PortReason::from(reason),
            desc
        }),
        Just(Message::BarrierRequest),
        Just(Message::BarrierReply),
        Just(Message::PortDescRequest),
        Just(Message::FlowStatsRequest),
        meter_mod().prop_map(Message::MeterMod),
        Just(Message::MeterFeaturesRequest),
        meter_features().prop_map(Message::MeterFeaturesReply),
        (vec(port_desc(), 0..4), any::<bool>())
            .prop_map(|(ports, more)| Message::PortDescReply { ports, more }),
        (any::<u32>(), any::<u64>()).prop_map(|(role, generation_id)| Message::RoleRequest(
            RoleMsg {
                role: ControllerRole::from(role),
                generation_id
            }
        )),
        (any::<u32>(), any::<u64>()).prop_map(|(role, generation_id)| Message::RoleReply(
            RoleMsg {
                role: ControllerRole::from(role),
                generation_id
            }
        )),
        any::<u32>().prop_map(|role| Message::NxRoleRequest(NxRole::from(role))),
        any::<u32>().prop_map(|role| Message::NxRoleReply(NxRole::from(role))),
        (unmodelled_type(), bytes(64))
            .prop_map(|(msg_type, body)| Message::Other { msg_type, body }),
        (any::<u32>(), any::<u16>(), any::<u16>()).prop_map(|(bundle_id, ctrl_type, flags)| {
            Message::BundleControl(BundleControl {
                bundle_id,
                ctrl_type: BundleCtrlType::from(ctrl_type),
                flags,
            })
        }),
        (any::<u32>(), any::<u16>(), flow_mod()).prop_map(|(bundle_id, flags, flow_mod)| {
            // The message inside is a 1.3 FLOW_MOD, as sliced adds them.
            let mut message = Vec::new();
            Message::FlowMod(flow_mod)
                .emit(Version::Of13, 0, &mut message)
                .expect("a 1.3 FLOW_MOD encodes");
            Message::BundleAdd(BundleAdd {
                bundle_id,
                flags,
                message,
            })
        }),
    ]
}

fn v10_port(mut desc: PortDesc) -> PortDesc {
    desc.curr_speed = 0;
    desc.max_speed = 0;
    desc
}

/// What `message` should parse back as after a trip through `version`.
fn normalise(message: Message, version: Version) -> Message {
    match (message, version) {
        (Message::FeaturesReply(mut features), Version::Of10) => {
            features.auxiliary_id = 0;
            features.ports = features.ports.into_iter().map(v10_port).collect();
            Message::FeaturesReply(features)
        }
        (Message::FeaturesReply(mut features), _) => {
            features.ports.clear();
            Message::FeaturesReply(features)
        }
        (Message::PacketIn(mut packet), Version::Of10) => {
            packet.table_id = 0;
            packet.cookie = 0;
            Message::PacketIn(packet)
        }
        (Message::FlowMod(mut flow_mod), Version::Of10) => {
            flow_mod.cookie_mask = 0;
            flow_mod.table_id = 0;
            flow_mod.out_group = port::ANY;
            Message::FlowMod(flow_mod)
        }
        (Message::FlowRemoved(mut removed), Version::Of10) => {
            removed.table_id = 0;
            removed.hard_timeout = 0;
            Message::FlowRemoved(removed)
        }
        (Message::PortStatus { reason, desc }, Version::Of10) => Message::PortStatus {
            reason,
            desc: v10_port(desc),
        },
        (message, _) => message,
    }
}

fn exists_in(message: &Message, version: Version) -> bool {
    if matches!(message, Message::NxRoleRequest(_) | Message::NxRoleReply(_)) {
        return version == Version::Of10;
    }
    if matches!(message, Message::BundleControl(_) | Message::BundleAdd(_)) {
        return version == Version::Of13;
    }
    version == Version::Of13
        || !matches!(
            message,
            Message::PortDescRequest
                | Message::PortDescReply { .. }
                | Message::MeterMod(_)
                | Message::MeterFeaturesRequest
                | Message::MeterFeaturesReply(_)
                | Message::RoleRequest(_)
                | Message::RoleReply(_)
        ) && !message_needs_1_3_tables(message)
}

/// A flow or flow removal with what only 1.3's tables have: a meter, metadata, a next
/// table, a masked destination.
fn message_needs_1_3_tables(message: &Message) -> bool {
    let needs = |r#match: &Match| r#match.metadata.is_some() || r#match.eth_dst_mask.is_some();
    match message {
        Message::FlowMod(flow_mod) => {
            flow_mod.meter_id.is_some()
                || flow_mod.write_metadata.is_some()
                || flow_mod.goto_table.is_some()
                || needs(&flow_mod.r#match)
        }
        Message::FlowRemoved(removed) => needs(&removed.r#match),
        _ => false,
    }
}

proptest! {
    #[test]
    fn messages_round_trip_on_both_versions(message in message(), xid in any::<u32>()) {
        for version in [Version::Of10, Version::Of13] {
            // Emit after some earlier bytes, as a connection's write buffer would.
            let mut out = vec![0x55; 3];
            let result = message.emit(version, xid, &mut out);
            if !exists_in(&message, version) {
                prop_assert!(result.is_err());
                prop_assert_eq!(&out, &vec![0x55; 3]);
                continue;
            }
            prop_assert_eq!(result, Ok(()));
            prop_assert_eq!(&out[..3], &[0x55; 3]);
            let frame = &out[3..];
            prop_assert_eq!(frame_len(frame), Ok(Some(frame.len())));
            let (header, parsed) = Message::parse(frame).expect("an emitted message parses");
            prop_assert_eq!(header.version, version);
            prop_assert_eq!(header.xid, xid);
            prop_assert_eq!(usize::from(header.length), frame.len());
            prop_assert_eq!(header.msg_type, message.msg_type(version).unwrap());
            prop_assert_eq!(parsed, normalise(message.clone(), version));
        }
    }

    #[test]
    fn ports_beyond_16_bits_do_not_emit_on_1_0(port in 0xff00u32..0xffff_ff00) {
        let message = Message::PacketOut(PacketOut {
            buffer_id: None,
            in_port: port,
            actions: Vec::new(),
            data: Vec::new(),
        });
        let mut out = Vec::new();
        prop_assert!(message.emit(Version::Of10, 1, &mut out).is_err());
        prop_assert!(out.is_empty());
        prop_assert!(message.emit(Version::Of13, 1, &mut out).is_ok());
    }
}

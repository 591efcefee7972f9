//! What a switch the engine knows sends: PACKET_INs within the rate limits, port status,
//! removed flows, role replies and refusals, and the errors that mean something.

use std::time::Instant;

use bytes::{Buf, Bytes, BytesMut};
use openflow::error_msg::{BadRequestCode, RoleRequestFailedCode};
use openflow::packet_in::{PacketInV10, PacketInV13};
use openflow::role::NxVendorError;
use openflow::{
    ControllerRole, ErrorType, HeaderRepr, Message, NxRole, PacketIn, PortReason, RoleMsg, Version,
};
use slice_core::MacAddress;

use super::{port_state, SwitchSession};
use crate::protocol::{FlowsRead, Role, RoleRefusal, Rule, SwitchEvent};
use crate::topology::is_physical;

impl SwitchSession {
    /// A message once the engine knows the switch.
    pub(super) fn open_message(&mut self, header: HeaderRepr, message: Message, now: Instant) {
        let version = self.version;
        let Some(open) = self.open_mut() else {
            return;
        };
        if let Some(step) = open.meter.handle(header.xid, &message) {
            return self.apply_meter_step(step);
        }
        let dpid = open.dpid;
        let event = match message {
            // A PACKET_IN in the other version than the negotiated one: off the hot path.
            Message::PacketIn(packet) => {
                return self.packet_in(packet.in_port, Bytes::from(packet.data), now)
            }
            Message::PortStatus { reason, desc } if is_physical(desc.port_no) => {
                // A deleted port is gone altogether; an added or changed one has a state.
                let deleted = reason == PortReason::Delete;
                SwitchEvent::PortStatus {
                    port_no: desc.port_no,
                    state: (!deleted).then(|| port_state(&desc)),
                }
            }
            Message::FlowRemoved(removed) => {
                let m = removed.r#match;
                let (Some(in_port), Some(src), Some(dst)) = (m.in_port, m.eth_src, m.eth_dst)
                else {
                    return;
                };
                SwitchEvent::FlowRemoved {
                    rule: Rule {
                        in_port,
                        eth_src: MacAddress::new(src),
                        eth_dst: MacAddress::new(dst),
                    },
                    priority: removed.priority,
                }
            }
            // Only the answer to the latest request counts: a late MASTER reply to a
            // request since superseded (by one for SLAVE) must not open the write gate.
            Message::RoleReply(_) | Message::NxRoleReply(_)
                if open.role_request != Some(header.xid) =>
            {
                return log::debug!("switch {dpid:#x}: a reply to an earlier role request");
            }
            Message::RoleReply(RoleMsg { role, .. }) => match controller_role(role) {
                Some(role) => {
                    open.role_request = None;
                    self.role_confirmed(role);
                    SwitchEvent::RoleChanged { role }
                }
                None => return log::warn!("switch {dpid:#x} replied with role {role:?}"),
            },
            Message::NxRoleReply(role) => match nicira_role(role) {
                Some(role) => {
                    open.role_request = None;
                    self.role_confirmed(role);
                    SwitchEvent::RoleChanged { role }
                }
                None => return log::warn!("switch {dpid:#x} replied with Nicira role {role:?}"),
            },
            Message::FlowStatsReply { flows, more } => {
                return self.flow_stats_part(header, flows, more)
            }
            Message::BundleControl(control) => {
                return open.bundles.reply(header.xid, &control);
            }
            // Replies come in order: the latest pipeline barrier's says every write
            // before it was taken. An earlier barrier's reply says nothing new.
            Message::BarrierReply if open.pipeline_barrier == Some(header.xid) => {
                open.pipeline_barrier = None;
                SwitchEvent::PipelineWritten
            }
            Message::BarrierReply => match open.probe_barrier_answered(header.xid) {
                Some(round) => SwitchEvent::ProbeRoundAnswered { round },
                None => return,
            },
            Message::Error {
                err_type,
                code,
                data,
            } => {
                if let Some(event) = open
                    .bundles
                    .error(version, header.xid, err_type, code, &data)
                {
                    match &event {
                        Some(SwitchEvent::BundlesUnsupported) => log::info!(
                            "switch {dpid:#x} does not take bundles: writing its pipeline \
                             one FLOW_MOD per entry"
                        ),
                        Some(_) => log::warn!(
                            "switch {dpid:#x} refused a bundle of the pipeline (error type \
                             {err_type:?} code {code}): it keeps its table, and is filled \
                             again later"
                        ),
                        None => {}
                    }
                    let Some(event) = event else { return };
                    event
                } else if open.role_request == Some(header.xid) {
                    open.role_request = None;
                    let reason = role_refusal(err_type, code, &data);
                    self.close_gate();
                    SwitchEvent::RoleRefused { reason }
                } else if open
                    .flow_read
                    .as_ref()
                    .is_some_and(|read| read.xid == header.xid)
                {
                    log::warn!(
                        "switch {dpid:#x} refused to list its flows: error type {err_type:?} code {code}"
                    );
                    // The switch will not say what it holds: the engine flushes it.
                    open.flow_read = None;
                    SwitchEvent::FlowsRead(FlowsRead {
                        entries: Vec::new(),
                        complete: false,
                        raw: None,
                    })
                } else if openflow::error_msg::is_table_full(version, err_type, code) {
                    SwitchEvent::TableFull
                } else if is_slave_refusal(err_type, code, &data) {
                    open.refused_writes += 1;
                    if open.refused_writes == 1 {
                        log::info!(
                            "switch {dpid:#x} refuses this instance's writes: it is its slave"
                        );
                    }
                    return;
                } else {
                    return log::warn!(
                        "switch {dpid:#x} reported error type {err_type:?} code {code}"
                    );
                }
            }
            _ => return,
        };
        self.events.push_back(event);
    }

    /// A PACKET_IN: dropped if it carries no Ethernet frame or is over the rate limits,
    /// else an event that shares `data` with the read buffer.
    pub(super) fn packet_in(&mut self, in_port: u32, data: Bytes, now: Instant) {
        let Ok(frame) = openflow::packet::EthernetFrame::new_checked(&data[..]) else {
            return;
        };
        let (dst, src) = (MacAddress::new(frame.dst()), MacAddress::new(frame.src()));
        let report_delay = self.config.echo_interval;
        let Some(open) = self.open_mut() else {
            return;
        };
        if !open.packet_ins.admit(in_port, &data, now) {
            open.unreported += 1;
            open.report_due.get_or_insert(now + report_delay);
            return;
        }
        let unreported = std::mem::take(&mut open.unreported);
        open.report_due = None;
        let probe = openflow::packet::parse_probe(&data);
        self.events.push_back(SwitchEvent::PacketIn {
            in_port,
            dst,
            src,
            probe,
            data,
        });
        if unreported > 0 {
            self.events
                .push_back(SwitchEvent::PacketInsRateLimited { count: unreported });
        }
    }
}

fn controller_role(role: ControllerRole) -> Option<Role> {
    match role {
        ControllerRole::Master => Some(Role::Master),
        ControllerRole::Slave => Some(Role::Slave),
        ControllerRole::Equal => Some(Role::Equal),
        ControllerRole::NoChange | ControllerRole::Unknown(_) => None,
    }
}

fn nicira_role(role: NxRole) -> Option<Role> {
    match role {
        NxRole::Master => Some(Role::Master),
        NxRole::Slave => Some(Role::Slave),
        NxRole::Other => Some(Role::Equal),
        NxRole::Unknown(_) => None,
    }
}

/// What an error answering a role request means. 1.0 switches without Nicira's
/// extension answer BAD_REQUEST with `BAD_VENDOR` (3) or `BAD_SUBTYPE` (4); Open vSwitch
/// wraps an error 1.0 has no code for in `NXET_VENDOR`.
fn role_refusal(err_type: ErrorType, code: u16, data: &[u8]) -> RoleRefusal {
    const BAD_VENDOR: u16 = 3;
    const BAD_SUBTYPE: u16 = 4;
    let (err_type, code) = unwrap_vendor_error(err_type, code, data);
    match (err_type, code) {
        (ErrorType::RoleRequestFailed, code) => match RoleRequestFailedCode::from(code) {
            RoleRequestFailedCode::Stale => RoleRefusal::Stale,
            RoleRequestFailedCode::Unsupported => RoleRefusal::Unsupported,
            _ => RoleRefusal::Other { err_type, code },
        },
        (ErrorType::BadRequest, BAD_VENDOR | BAD_SUBTYPE) => RoleRefusal::Unsupported,
        (err_type, code) => RoleRefusal::Other { err_type, code },
    }
}

/// Whether an error says a write was refused because this controller is a slave: 1.3's
/// `OFPBRC_IS_SLAVE`, and `OFPBRC_EPERM`, which Open vSwitch sends a 1.0 slave.
fn is_slave_refusal(err_type: ErrorType, code: u16, data: &[u8]) -> bool {
    let (err_type, code) = unwrap_vendor_error(err_type, code, data);
    err_type == ErrorType::BadRequest
        && matches!(
            BadRequestCode::from(code),
            BadRequestCode::IsSlave | BadRequestCode::Eperm
        )
}

/// The type and code of an Open vSwitch vendor error (its data begins with them), else
/// the error's own.
fn unwrap_vendor_error(err_type: ErrorType, code: u16, data: &[u8]) -> (ErrorType, u16) {
    if err_type != ErrorType::NiciraVendor {
        return (err_type, code);
    }
    match NxVendorError::new_checked(data) {
        Ok(vendor) if vendor.vendor() == openflow::role::NX_VENDOR_ID => {
            (ErrorType::from(vendor.err_type()), vendor.code())
        }
        _ => (err_type, code),
    }
}

/// The input port and the payload of a PACKET_IN frame in `version`, the payload in
/// `frame`'s buffer. The fixed part is parsed by the codec with the payload cut off, so
/// parsing copies nothing.
pub(super) fn packet_in_parts(
    version: Version,
    mut frame: BytesMut,
) -> Result<(u32, Bytes), openflow::Error> {
    let payload_len = if version == Version::Of10 {
        PacketInV10::new_checked(&frame[..])?.data().len()
    } else {
        PacketInV13::new_checked(&frame[..])?.data().len()
    };
    let payload_at = frame.len() - payload_len;
    let fixed = &frame[..payload_at];
    let in_port = if version == Version::Of10 {
        PacketIn::parse_v10(&PacketInV10::new_unchecked(fixed))?.in_port
    } else {
        PacketIn::parse_v13(&PacketInV13::new_unchecked(fixed))?.in_port
    };
    // Moving the start rather than slicing leaves the buffer's shared count alone: it is
    // touched from the engine's thread too, so every change of it costs.
    frame.advance(payload_at);
    Ok((in_port, frame.freeze()))
}

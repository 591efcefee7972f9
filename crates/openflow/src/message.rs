//! Whole messages: [`Message`] and the dispatch on version and type.

use crate::bundle::{
    self, BundleAdd, BundleBody, BundleControl, Framing, BUNDLE_BODY_LEN, ONFT_BUNDLE_ADD_MESSAGE,
    ONFT_BUNDLE_CONTROL,
};
use crate::error_msg::{ErrorMsg, ErrorType, ERROR_MSG_LEN};
use crate::features::{FeaturesReply, FeaturesReplyView};
use crate::flow_mod::{FlowMod, FlowModV10, FlowModV13};
use crate::flow_removed::{FlowRemoved, FlowRemovedV10, FlowRemovedV13};
use crate::flow_stats::{
    self, FlowStats, StatsV10, FLOW_STATS_REQUEST_V10_LEN, FLOW_STATS_REQUEST_V13_LEN, STATS_FLOW,
    STATS_V10_HEADER_LEN,
};
use crate::header::{Header, HeaderRepr, HEADER_LEN};
use crate::hello::HelloRepr;
use crate::meter::{MeterFeatures, MeterFeaturesView, MeterMod, MeterModView, METER_FEATURES_LEN};
use crate::msg_type::{v10, v13};
use crate::multipart::{
    Multipart, FLAG_MORE, MULTIPART_HEADER_LEN, MULTIPART_METER_FEATURES, MULTIPART_PORT_DESC,
};
use crate::packet_in::{PacketIn, PacketInV10, PacketInV13};
use crate::packet_out::{PacketOut, PacketOutV10, PacketOutV13};
use crate::port_desc::{self, PhyPortV10, PortDesc, PortV13, PHY_PORT_V10_LEN, PORT_V13_LEN};
use crate::port_status::{PortReason, PortStatus, PORT_STATUS_HEADER_LEN};
use crate::role::{
    NiciraHeader, NxRole, RoleMsg, RoleMsgView, NXT_ROLE_REPLY, NXT_ROLE_REQUEST, NX_ROLE_MSG_LEN,
    NX_VENDOR_ID, ROLE_MSG_LEN,
};
use crate::switch_config::{SwitchConfig, SWITCH_CONFIG_LEN};
use crate::wire::{grow, length_u16, tail, tail_mut, write_slice};
use crate::{Error, Version};

/// An OpenFlow message, in terms common to 1.0 and 1.3.
///
/// Fields one version does not carry are documented on each type: emitting ignores
/// them and parsing fills in a fixed value, so a round trip through 1.0 loses them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// HELLO, with the first word of an `OFPHET_VERSIONBITMAP` element when present
    /// (bit n set: wire version n spoken). Emitted with the element whenever `Some`,
    /// on any version; unknown elements are ignored on parsing.
    Hello {
        /// Version bitmap, bit n for wire version n.
        versions: Option<u32>,
    },
    /// ERROR.
    Error {
        /// What kind of error.
        err_type: ErrorType,
        /// Type-specific code: [`HelloFailedCode`], [`BadRequestCode`] or
        /// [`MeterModFailedCode`] or [`RoleRequestFailedCode`] as a number, by `err_type`.
        ///
        /// [`HelloFailedCode`]: crate::error_msg::HelloFailedCode
        /// [`BadRequestCode`]: crate::error_msg::BadRequestCode
        /// [`MeterModFailedCode`]: crate::error_msg::MeterModFailedCode
        /// [`RoleRequestFailedCode`]: crate::error_msg::RoleRequestFailedCode
        code: u16,
        /// Usually the start of the message that failed.
        data: Vec<u8>,
    },
    /// ECHO_REQUEST with its payload.
    EchoRequest(Vec<u8>),
    /// ECHO_REPLY with the request's payload.
    EchoReply(Vec<u8>),
    /// FEATURES_REQUEST.
    FeaturesRequest,
    /// FEATURES_REPLY.
    FeaturesReply(FeaturesReply),
    /// SET_CONFIG.
    SetConfig {
        /// `OFPC_FRAG_*` flags.
        flags: u16,
        /// Bytes of table-miss packets sent to the controller.
        miss_send_len: u16,
    },
    /// PACKET_IN.
    PacketIn(PacketIn),
    /// PACKET_OUT.
    PacketOut(PacketOut),
    /// FLOW_MOD.
    FlowMod(FlowMod),
    /// FLOW_REMOVED.
    FlowRemoved(FlowRemoved),
    /// PORT_STATUS.
    PortStatus {
        /// Whether the port was added, deleted or modified.
        reason: PortReason,
        /// The port.
        desc: PortDesc,
    },
    /// BARRIER_REQUEST.
    BarrierRequest,
    /// BARRIER_REPLY.
    BarrierReply,
    /// 1.3 MULTIPART_REQUEST of type `OFPMP_PORT_DESC`. 1.0 has no such request.
    PortDescRequest,
    /// 1.3 MULTIPART_REPLY of type `OFPMP_PORT_DESC`. 1.0 has no such reply.
    PortDescReply {
        /// The ports in this part.
        ports: Vec<PortDesc>,
        /// `OFPMPF_REPLY_MORE`: more parts follow.
        more: bool,
    },
    /// 1.3 METER_MOD. 1.0 has no meters.
    MeterMod(MeterMod),
    /// 1.3 MULTIPART_REQUEST of type `OFPMP_METER_FEATURES`. 1.0 has no such request.
    MeterFeaturesRequest,
    /// 1.3 MULTIPART_REPLY of type `OFPMP_METER_FEATURES`. 1.0 has no such reply.
    MeterFeaturesReply(MeterFeatures),
    /// 1.3 ROLE_REQUEST. 1.0 has no roles: see [`Message::NxRoleRequest`].
    RoleRequest(RoleMsg),
    /// 1.3 ROLE_REPLY.
    RoleReply(RoleMsg),
    /// 1.0 vendor message `NXT_ROLE_REQUEST`, Open vSwitch's role request for 1.0 (not
    /// modelled on 1.3, which has its own).
    NxRoleRequest(NxRole),
    /// 1.0 vendor message `NXT_ROLE_REPLY`.
    NxRoleReply(NxRole),
    /// A flow statistics request for every flow of every table: 1.0's STATS_REQUEST of
    /// type `OFPST_FLOW`, 1.3's MULTIPART_REQUEST of type `OFPMP_FLOW`. Any flow
    /// statistics request parses as this one (its filters are not kept).
    FlowStatsRequest,
    /// A flow statistics reply (one part of it): 1.0's STATS_REPLY of type
    /// `OFPST_FLOW`, 1.3's MULTIPART_REPLY of type `OFPMP_FLOW`.
    FlowStatsReply {
        /// The flows in this part, in the version they were parsed from (see
        /// [`FlowStats`]).
        flows: Vec<FlowStats>,
        /// `OFPSF_REPLY_MORE` / `OFPMPF_REPLY_MORE`: more parts follow.
        more: bool,
    },
    /// A bundle control message (1.4's `OFPT_BUNDLE_CONTROL`), framed on 1.3 as the ONF
    /// extension's experimenter message. 1.0 has no bundles.
    BundleControl(BundleControl),
    /// A message added to a bundle (1.4's `OFPT_BUNDLE_ADD_MESSAGE`), framed on 1.3 as
    /// the ONF extension's experimenter message. The message inside should carry this
    /// message's xid; it is written as given.
    BundleAdd(BundleAdd),
    /// Any message type not modelled above (vendor and experimenter messages, other
    /// statistics and multipart types, ...), so that callers can skip it. `body` is
    /// everything after the 8-byte header. Emitted verbatim; an `Other` whose type is a
    /// modelled one parses back as that message.
    Other {
        /// Message type number, in the numbering of the version it came in.
        msg_type: u8,
        /// The bytes after the header.
        body: Vec<u8>,
    },
}

impl Message {
    /// Parses one whole message. `frame` must be exactly the header's length long, as
    /// [`crate::frame_len`] cuts it: a shorter frame is [`Error::Truncated`] and a
    /// longer one [`Error::BadLength`] (extra bytes would be a framing bug upstream).
    ///
    /// Versions 1.0 and 1.3 parse fully. A HELLO of any other version parses too, so
    /// that a newer peer can be negotiated down; any other message of such a version
    /// is [`Error::UnsupportedVersion`]. Unmodelled types come back as
    /// [`Message::Other`]. Bytes after the fixed part of a fixed-size message are
    /// ignored.
    pub fn parse(frame: &[u8]) -> Result<(HeaderRepr, Message), Error> {
        let view = Header::new_checked(frame)?;
        let header = HeaderRepr::parse(&view);
        if frame.len() != usize::from(header.length) {
            return Err(Error::BadLength {
                what: "frame (longer than its header says)",
                length: frame.len(),
            });
        }
        let message = match header.version {
            Version::Of10 => parse_v10(header.msg_type, frame)?,
            Version::Of13 => parse_v13(header.msg_type, frame)?,
            _ if header.msg_type == v13::HELLO => parse_hello(frame),
            version => return Err(Error::UnsupportedVersion(version)),
        };
        Ok((header, message))
    }

    /// Appends the encoding of the message for wire `version` ([`Version::Of10`] or
    /// [`Version::Of13`]; HELLO, the same in every version, may use any) with transaction id `xid` to `out`.
    ///
    /// Fails, leaving `out` as it was, when the version cannot express the message
    /// (PORT_DESC on 1.0, a 32-bit port number on 1.0, ...), when a length overflows its
    /// 16-bit field, or for a malformed [`crate::Action::Other`].
    pub fn emit(&self, version: Version, xid: u32, out: &mut Vec<u8>) -> Result<(), Error> {
        let msg_type = self.msg_type(version)?;
        let length = self.buffer_len(version);
        let header = HeaderRepr {
            version,
            msg_type,
            length: length_u16("OpenFlow message", length)?,
            xid,
        };
        let start = out.len();
        let frame = grow(out, length);
        match self.emit_body(version, frame) {
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

    /// The wire type number in `version`; fails for a version or message the version
    /// cannot carry.
    pub fn msg_type(&self, version: Version) -> Result<u8, Error> {
        let (v10_type, v13_type) = match self {
            Message::Hello { .. } => return Ok(v13::HELLO),
            Message::Error { .. } => (v10::ERROR, v13::ERROR),
            Message::EchoRequest(_) => (v10::ECHO_REQUEST, v13::ECHO_REQUEST),
            Message::EchoReply(_) => (v10::ECHO_REPLY, v13::ECHO_REPLY),
            Message::FeaturesRequest => (v10::FEATURES_REQUEST, v13::FEATURES_REQUEST),
            Message::FeaturesReply(_) => (v10::FEATURES_REPLY, v13::FEATURES_REPLY),
            Message::SetConfig { .. } => (v10::SET_CONFIG, v13::SET_CONFIG),
            Message::PacketIn(_) => (v10::PACKET_IN, v13::PACKET_IN),
            Message::PacketOut(_) => (v10::PACKET_OUT, v13::PACKET_OUT),
            Message::FlowMod(_) => (v10::FLOW_MOD, v13::FLOW_MOD),
            Message::FlowRemoved(_) => (v10::FLOW_REMOVED, v13::FLOW_REMOVED),
            Message::PortStatus { .. } => (v10::PORT_STATUS, v13::PORT_STATUS),
            Message::BarrierRequest => (v10::BARRIER_REQUEST, v13::BARRIER_REQUEST),
            Message::BarrierReply => (v10::BARRIER_REPLY, v13::BARRIER_REPLY),
            Message::PortDescRequest | Message::PortDescReply { .. }
                if version == Version::Of10 =>
            {
                return Err(Error::NotInVersion {
                    what: "PORT_DESC multipart message",
                    version,
                })
            }
            Message::MeterMod(_)
            | Message::MeterFeaturesRequest
            | Message::MeterFeaturesReply(_)
                if version == Version::Of10 =>
            {
                return Err(Error::NotInVersion {
                    what: "meter message",
                    version,
                })
            }
            Message::RoleRequest(_) | Message::RoleReply(_) if version == Version::Of10 => {
                return Err(Error::NotInVersion {
                    what: "ROLE_REQUEST or ROLE_REPLY",
                    version,
                })
            }
            Message::NxRoleRequest(_) | Message::NxRoleReply(_) if version == Version::Of13 => {
                return Err(Error::NotInVersion {
                    what: "Nicira role message",
                    version,
                })
            }
            Message::BundleControl(_) | Message::BundleAdd(_) if version == Version::Of10 => {
                return Err(Error::NotInVersion {
                    what: "bundle message",
                    version,
                })
            }
            Message::BundleControl(_) | Message::BundleAdd(_) => (0, v13::EXPERIMENTER),
            Message::RoleRequest(_) => (0, v13::ROLE_REQUEST),
            Message::RoleReply(_) => (0, v13::ROLE_REPLY),
            Message::NxRoleRequest(_) | Message::NxRoleReply(_) => (v10::VENDOR, 0),
            Message::FlowStatsRequest => (v10::STATS_REQUEST, v13::MULTIPART_REQUEST),
            Message::FlowStatsReply { .. } => (v10::STATS_REPLY, v13::MULTIPART_REPLY),
            Message::MeterMod(_) => (0, v13::METER_MOD),
            Message::PortDescRequest | Message::MeterFeaturesRequest => (0, v13::MULTIPART_REQUEST),
            Message::MeterFeaturesReply(_) => (0, v13::MULTIPART_REPLY),
            Message::PortDescReply { .. } => (0, v13::MULTIPART_REPLY),
            Message::Other { msg_type, .. } => (*msg_type, *msg_type),
        };
        match version {
            Version::Of10 => Ok(v10_type),
            Version::Of13 => Ok(v13_type),
            Version::Unknown(_) => Err(Error::UnsupportedVersion(version)),
        }
    }

    /// Length of the message in `version`, header included (only meaningful for a
    /// version [`Self::msg_type`] accepts).
    fn buffer_len(&self, version: Version) -> usize {
        let v10 = version == Version::Of10;
        let body = match self {
            Message::Hello { versions } => HelloRepr {
                versions: *versions,
            }
            .buffer_len(),
            Message::Error { data, .. } => {
                return ERROR_MSG_LEN.saturating_add(data.len());
            }
            Message::EchoRequest(data) | Message::EchoReply(data) => data.len(),
            Message::FeaturesRequest | Message::BarrierRequest | Message::BarrierReply => 0,
            Message::FeaturesReply(features) if v10 => return features.buffer_len_v10(),
            Message::FeaturesReply(features) => return features.buffer_len_v13(),
            Message::SetConfig { .. } => return SWITCH_CONFIG_LEN,
            Message::PacketIn(packet) if v10 => return packet.buffer_len_v10(),
            Message::PacketIn(packet) => return packet.buffer_len_v13(),
            Message::PacketOut(packet) if v10 => return packet.buffer_len_v10(),
            Message::PacketOut(packet) => return packet.buffer_len_v13(),
            Message::FlowMod(flow_mod) if v10 => return flow_mod.buffer_len_v10(),
            Message::FlowMod(flow_mod) => return flow_mod.buffer_len_v13(),
            Message::FlowRemoved(removed) if v10 => return removed.buffer_len_v10(),
            Message::FlowRemoved(removed) => return removed.buffer_len_v13(),
            Message::PortStatus { .. } if v10 => {
                return PORT_STATUS_HEADER_LEN + PHY_PORT_V10_LEN;
            }
            Message::PortStatus { .. } => return PORT_STATUS_HEADER_LEN + PORT_V13_LEN,
            Message::PortDescRequest | Message::MeterFeaturesRequest => {
                return MULTIPART_HEADER_LEN
            }
            Message::MeterFeaturesReply(_) => return MULTIPART_HEADER_LEN + METER_FEATURES_LEN,
            Message::MeterMod(meter_mod) => return meter_mod.buffer_len(),
            Message::PortDescReply { ports, .. } => {
                return MULTIPART_HEADER_LEN
                    .saturating_add(ports.len().saturating_mul(PORT_V13_LEN));
            }
            Message::RoleRequest(_) | Message::RoleReply(_) => return ROLE_MSG_LEN,
            Message::NxRoleRequest(_) | Message::NxRoleReply(_) => return NX_ROLE_MSG_LEN,
            Message::FlowStatsRequest if v10 => {
                return STATS_V10_HEADER_LEN + FLOW_STATS_REQUEST_V10_LEN
            }
            Message::FlowStatsRequest => return MULTIPART_HEADER_LEN + FLOW_STATS_REQUEST_V13_LEN,
            Message::FlowStatsReply { flows, .. } => {
                let header = if v10 {
                    STATS_V10_HEADER_LEN
                } else {
                    MULTIPART_HEADER_LEN
                };
                return header.saturating_add(flow_stats::list_len(version, flows));
            }
            Message::BundleControl(_) => {
                return Framing::Onf13.body_offset() + BUNDLE_BODY_LEN;
            }
            Message::BundleAdd(add) => {
                return Framing::Onf13
                    .body_offset()
                    .saturating_add(add.buffer_len());
            }
            Message::Other { body, .. } => body.len(),
        };
        HEADER_LEN.saturating_add(body)
    }

    /// Writes everything but the header into a zeroed frame of [`Self::buffer_len`]
    /// bytes.
    fn emit_body(&self, version: Version, frame: &mut [u8]) -> Result<(), Error> {
        let v10 = version == Version::Of10;
        match self {
            Message::Hello { versions } => HelloRepr {
                versions: *versions,
            }
            .emit(tail_mut(frame, HEADER_LEN)),
            Message::Error {
                err_type,
                code,
                data,
            } => {
                let mut view = ErrorMsg::new_unchecked(&mut *frame);
                view.set_err_type(u16::from(*err_type));
                view.set_code(*code);
                write_slice(frame, ERROR_MSG_LEN, data);
            }
            Message::EchoRequest(data) | Message::EchoReply(data) => {
                write_slice(frame, HEADER_LEN, data);
            }
            Message::Other { body, .. } => write_slice(frame, HEADER_LEN, body),
            Message::FeaturesRequest | Message::BarrierRequest | Message::BarrierReply => {}
            Message::FeaturesReply(features) => {
                let mut view = FeaturesReplyView::new_unchecked(frame);
                if v10 {
                    features.emit_v10(&mut view)?;
                } else {
                    features.emit_v13(&mut view);
                }
            }
            Message::SetConfig {
                flags,
                miss_send_len,
            } => {
                let mut view = SwitchConfig::new_unchecked(frame);
                view.set_flags(*flags);
                view.set_miss_send_len(*miss_send_len);
            }
            Message::PacketIn(packet) if v10 => {
                packet.emit_v10(&mut PacketInV10::new_unchecked(frame))?;
            }
            Message::PacketIn(packet) => {
                packet.emit_v13(&mut PacketInV13::new_unchecked(frame))?;
            }
            Message::PacketOut(packet) if v10 => {
                packet.emit_v10(&mut PacketOutV10::new_unchecked(frame))?;
            }
            Message::PacketOut(packet) => {
                packet.emit_v13(&mut PacketOutV13::new_unchecked(frame))?;
            }
            Message::FlowMod(flow_mod) if v10 => {
                flow_mod.emit_v10(&mut FlowModV10::new_unchecked(frame))?;
            }
            Message::FlowMod(flow_mod) => {
                flow_mod.emit_v13(&mut FlowModV13::new_unchecked(frame))?;
            }
            Message::FlowRemoved(removed) if v10 => {
                removed.emit_v10(&mut FlowRemovedV10::new_unchecked(frame))?;
            }
            Message::FlowRemoved(removed) => {
                removed.emit_v13(&mut FlowRemovedV13::new_unchecked(frame))?;
            }
            Message::PortStatus { reason, desc } => {
                PortStatus::new_unchecked(&mut *frame).set_reason(u8::from(*reason));
                let desc_bytes = tail_mut(frame, PORT_STATUS_HEADER_LEN);
                if v10 {
                    desc.emit_v10(&mut PhyPortV10::new_unchecked(desc_bytes))?;
                } else {
                    desc.emit_v13(&mut PortV13::new_unchecked(desc_bytes));
                }
            }
            Message::PortDescRequest => {
                Multipart::new_unchecked(frame).set_multipart_type(MULTIPART_PORT_DESC);
            }
            Message::PortDescReply { ports, more } => {
                let mut view = Multipart::new_unchecked(&mut *frame);
                view.set_multipart_type(MULTIPART_PORT_DESC);
                view.set_flags(if *more { FLAG_MORE } else { 0 });
                port_desc::emit_list_v13(ports, tail_mut(frame, MULTIPART_HEADER_LEN));
            }
            Message::FlowStatsRequest if v10 => {
                StatsV10::new_unchecked(&mut *frame).set_stats_type(STATS_FLOW);
                flow_stats::emit_request_body(version, tail_mut(frame, STATS_V10_HEADER_LEN))?;
            }
            Message::FlowStatsRequest => {
                Multipart::new_unchecked(&mut *frame).set_multipart_type(STATS_FLOW);
                flow_stats::emit_request_body(version, tail_mut(frame, MULTIPART_HEADER_LEN))?;
            }
            Message::FlowStatsReply { flows, more } if v10 => {
                let mut view = StatsV10::new_unchecked(&mut *frame);
                view.set_stats_type(STATS_FLOW);
                view.set_flags(if *more { FLAG_MORE } else { 0 });
                flow_stats::emit_list(version, flows, tail_mut(frame, STATS_V10_HEADER_LEN))?;
            }
            Message::FlowStatsReply { flows, more } => {
                let mut view = Multipart::new_unchecked(&mut *frame);
                view.set_multipart_type(STATS_FLOW);
                view.set_flags(if *more { FLAG_MORE } else { 0 });
                flow_stats::emit_list(version, flows, tail_mut(frame, MULTIPART_HEADER_LEN))?;
            }
            Message::MeterMod(meter_mod) => {
                meter_mod.emit(&mut MeterModView::new_unchecked(frame))?;
            }
            Message::RoleRequest(role) | Message::RoleReply(role) => {
                role.emit(&mut RoleMsgView::new_unchecked(frame));
            }
            Message::NxRoleRequest(role) | Message::NxRoleReply(role) => {
                let subtype = if matches!(self, Message::NxRoleRequest(_)) {
                    NXT_ROLE_REQUEST
                } else {
                    NXT_ROLE_REPLY
                };
                let mut view = NiciraHeader::new_unchecked(frame);
                view.set_vendor(NX_VENDOR_ID);
                view.set_subtype(subtype);
                view.set_role(u32::from(*role));
            }
            Message::MeterFeaturesRequest => {
                Multipart::new_unchecked(frame).set_multipart_type(MULTIPART_METER_FEATURES);
            }
            Message::BundleControl(control) => {
                bundle::emit_onf_header(frame, ONFT_BUNDLE_CONTROL);
                let body = tail_mut(frame, Framing::Onf13.body_offset());
                control.emit(&mut BundleBody::new_unchecked(body));
            }
            Message::BundleAdd(add) => {
                bundle::emit_onf_header(frame, ONFT_BUNDLE_ADD_MESSAGE);
                let body = tail_mut(frame, Framing::Onf13.body_offset());
                add.emit(&mut BundleBody::new_unchecked(body))?;
            }
            Message::MeterFeaturesReply(features) => {
                Multipart::new_unchecked(&mut *frame).set_multipart_type(MULTIPART_METER_FEATURES);
                features.emit(&mut MeterFeaturesView::new_unchecked(tail_mut(
                    frame,
                    MULTIPART_HEADER_LEN,
                )));
            }
        }
        Ok(())
    }
}

fn parse_hello(frame: &[u8]) -> Message {
    let versions = HelloRepr::parse(tail(frame, HEADER_LEN)).versions;
    Message::Hello { versions }
}

fn parse_error(frame: &[u8]) -> Result<Message, Error> {
    let view = ErrorMsg::new_checked(frame)?;
    Ok(Message::Error {
        err_type: ErrorType::from(view.err_type()),
        code: view.code(),
        data: view.data().to_vec(),
    })
}

fn parse_set_config(frame: &[u8]) -> Result<Message, Error> {
    let view = SwitchConfig::new_checked(frame)?;
    Ok(Message::SetConfig {
        flags: view.flags(),
        miss_send_len: view.miss_send_len(),
    })
}

fn other(msg_type: u8, frame: &[u8]) -> Message {
    Message::Other {
        msg_type,
        body: tail(frame, HEADER_LEN).to_vec(),
    }
}

/// A 1.0 vendor message: Nicira's role messages are modelled, any other vendor or
/// subtype (or a message too short for a vendor header) is [`Message::Other`].
fn parse_vendor(frame: &[u8]) -> Result<Message, Error> {
    let Ok(view) = NiciraHeader::new_checked(frame) else {
        return Ok(other(v10::VENDOR, frame));
    };
    let request = view.is_nicira(NXT_ROLE_REQUEST);
    if !request && !view.is_nicira(NXT_ROLE_REPLY) {
        return Ok(other(v10::VENDOR, frame));
    }
    view.check_role_len()?;
    let role = NxRole::from(view.role());
    Ok(if request {
        Message::NxRoleRequest(role)
    } else {
        Message::NxRoleReply(role)
    })
}

/// A 1.3 experimenter message: the ONF extension's bundle messages are modelled, any
/// other is [`Message::Other`].
fn parse_experimenter(frame: &[u8]) -> Result<Message, Error> {
    let body = tail(frame, Framing::Onf13.body_offset());
    Ok(match bundle::onf_bundle_kind(frame) {
        Some(ONFT_BUNDLE_CONTROL) => {
            Message::BundleControl(BundleControl::parse(&BundleBody::new_checked(body)?))
        }
        Some(_) => Message::BundleAdd(BundleAdd::parse(&BundleBody::new_checked(body)?)?),
        None => other(v13::EXPERIMENTER, frame),
    })
}

fn parse_v10(msg_type: u8, frame: &[u8]) -> Result<Message, Error> {
    Ok(match msg_type {
        v10::HELLO => parse_hello(frame),
        v10::ERROR => parse_error(frame)?,
        v10::ECHO_REQUEST => Message::EchoRequest(tail(frame, HEADER_LEN).to_vec()),
        v10::ECHO_REPLY => Message::EchoReply(tail(frame, HEADER_LEN).to_vec()),
        v10::FEATURES_REQUEST => Message::FeaturesRequest,
        v10::FEATURES_REPLY => Message::FeaturesReply(FeaturesReply::parse_v10(
            &FeaturesReplyView::new_checked(frame)?,
        )?),
        v10::SET_CONFIG => parse_set_config(frame)?,
        v10::PACKET_IN => {
            Message::PacketIn(PacketIn::parse_v10(&PacketInV10::new_checked(frame)?)?)
        }
        v10::FLOW_REMOVED => Message::FlowRemoved(FlowRemoved::parse_v10(
            &FlowRemovedV10::new_checked(frame)?,
        )?),
        v10::PORT_STATUS => {
            let view = PortStatus::new_checked(frame)?;
            let desc = PortDesc::parse_v10(&PhyPortV10::new_checked(view.desc())?)?;
            Message::PortStatus {
                reason: PortReason::from(view.reason()),
                desc,
            }
        }
        v10::PACKET_OUT => {
            Message::PacketOut(PacketOut::parse_v10(&PacketOutV10::new_checked(frame)?)?)
        }
        v10::FLOW_MOD => Message::FlowMod(FlowMod::parse_v10(&FlowModV10::new_checked(frame)?)?),
        v10::STATS_REQUEST | v10::STATS_REPLY => {
            let view = StatsV10::new_checked(frame)?;
            match (view.stats_type(), msg_type) {
                (STATS_FLOW, v10::STATS_REQUEST) => Message::FlowStatsRequest,
                (STATS_FLOW, _) => Message::FlowStatsReply {
                    flows: flow_stats::parse_list(Version::Of10, view.body())?,
                    more: view.flags() & FLAG_MORE != 0,
                },
                _ => other(msg_type, frame),
            }
        }
        v10::BARRIER_REQUEST => Message::BarrierRequest,
        v10::BARRIER_REPLY => Message::BarrierReply,
        v10::VENDOR => parse_vendor(frame)?,
        _ => other(msg_type, frame),
    })
}

fn parse_v13(msg_type: u8, frame: &[u8]) -> Result<Message, Error> {
    Ok(match msg_type {
        v13::HELLO => parse_hello(frame),
        v13::ERROR => parse_error(frame)?,
        v13::ECHO_REQUEST => Message::EchoRequest(tail(frame, HEADER_LEN).to_vec()),
        v13::ECHO_REPLY => Message::EchoReply(tail(frame, HEADER_LEN).to_vec()),
        v13::FEATURES_REQUEST => Message::FeaturesRequest,
        v13::FEATURES_REPLY => Message::FeaturesReply(FeaturesReply::parse_v13(
            &FeaturesReplyView::new_checked(frame)?,
        )?),
        v13::SET_CONFIG => parse_set_config(frame)?,
        v13::PACKET_IN => {
            Message::PacketIn(PacketIn::parse_v13(&PacketInV13::new_checked(frame)?)?)
        }
        v13::FLOW_REMOVED => Message::FlowRemoved(FlowRemoved::parse_v13(
            &FlowRemovedV13::new_checked(frame)?,
        )?),
        v13::PORT_STATUS => {
            let view = PortStatus::new_checked(frame)?;
            let desc = PortDesc::parse_v13(&PortV13::new_checked(view.desc())?)?;
            Message::PortStatus {
                reason: PortReason::from(view.reason()),
                desc,
            }
        }
        v13::PACKET_OUT => {
            Message::PacketOut(PacketOut::parse_v13(&PacketOutV13::new_checked(frame)?)?)
        }
        v13::FLOW_MOD => Message::FlowMod(FlowMod::parse_v13(&FlowModV13::new_checked(frame)?)?),
        v13::MULTIPART_REQUEST | v13::MULTIPART_REPLY => {
            let view = Multipart::new_checked(frame)?;
            match (view.multipart_type(), msg_type) {
                (MULTIPART_PORT_DESC, v13::MULTIPART_REQUEST) => Message::PortDescRequest,
                (MULTIPART_PORT_DESC, _) => Message::PortDescReply {
                    ports: port_desc::parse_list_v13(view.body())?,
                    more: view.flags() & FLAG_MORE != 0,
                },
                (STATS_FLOW, v13::MULTIPART_REQUEST) => Message::FlowStatsRequest,
                (STATS_FLOW, _) => Message::FlowStatsReply {
                    flows: flow_stats::parse_list(Version::Of13, view.body())?,
                    more: view.flags() & FLAG_MORE != 0,
                },
                (MULTIPART_METER_FEATURES, v13::MULTIPART_REQUEST) => Message::MeterFeaturesRequest,
                (MULTIPART_METER_FEATURES, _) => Message::MeterFeaturesReply(MeterFeatures::parse(
                    &MeterFeaturesView::new_checked(view.body())?,
                )?),
                _ => other(msg_type, frame),
            }
        }
        v13::METER_MOD => Message::MeterMod(MeterMod::parse(&MeterModView::new_checked(frame)?)?),
        v13::BARRIER_REQUEST => Message::BarrierRequest,
        v13::BARRIER_REPLY => Message::BarrierReply,
        v13::ROLE_REQUEST => {
            Message::RoleRequest(RoleMsg::parse(&RoleMsgView::new_checked(frame)?))
        }
        v13::ROLE_REPLY => Message::RoleReply(RoleMsg::parse(&RoleMsgView::new_checked(frame)?)),
        v13::EXPERIMENTER => parse_experimenter(frame)?,
        _ => other(msg_type, frame),
    })
}

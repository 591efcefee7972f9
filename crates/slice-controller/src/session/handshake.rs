//! The handshake: HELLO and version negotiation, the features and the port list (bounded
//! in ports and bytes), the allow-list, and the switch handed to the engine as connected.

use std::collections::BTreeMap;
use std::time::Instant;

use openflow::error_msg::HelloFailedCode;
use openflow::{ErrorType, HeaderRepr, Message, PortDesc, Version};

use super::{
    port_state, CloseReason, Discovery, Open, State, SwitchSession, WriteGate, OUR_VERSIONS,
};
use crate::limits::PacketInLimiter;
use crate::meter::MeterSetup;
use crate::protocol::{SwitchEvent, SwitchProfile};
use crate::topology::{is_physical, PortState};

impl SwitchSession {
    pub(super) fn hello(&mut self, header: HeaderRepr, message: Message) {
        let Message::Hello { versions } = message else {
            self.close(CloseReason::NoHello(header.msg_type));
            return self.refuse_hello(
                header.xid,
                HelloFailedCode::Eperm,
                b"the first message must be HELLO",
            );
        };
        let Some(version) = openflow::negotiate(&OUR_VERSIONS, header.version, versions) else {
            self.close(CloseReason::NoCommonVersion(header.version));
            return self.refuse_hello(
                header.xid,
                HelloFailedCode::Incompatible,
                b"sliced speaks OpenFlow 1.0 and 1.3",
            );
        };
        self.version = version;
        self.state = State::Features(Discovery::default());
        self.send(&Message::FeaturesRequest);
    }

    /// The farewell of a failed handshake, after `close` emptied the queue: said in the
    /// lowest common dialect, since no version was agreed.
    fn refuse_hello(&mut self, xid: u32, code: HelloFailedCode, why: &[u8]) {
        self.version = Version::Of10;
        let refusal = Message::Error {
            err_type: ErrorType::HelloFailed,
            code: code.into(),
            data: why.to_vec(),
        };
        // An ERROR always encodes; were it not to, the close stands without it.
        let _ = refusal.emit(self.version, xid, &mut self.outbound);
    }

    pub(super) fn features(
        &mut self,
        header: HeaderRepr,
        message: Message,
        mut discovery: Discovery,
        now: Instant,
    ) {
        match message {
            Message::FeaturesReply(features) => {
                // 1.3 features replies carry no ports; 1.0's carry them all.
                if let Err(reason) = self.add_ports(&mut discovery, &features.ports) {
                    return self.close(reason);
                }
                let dpid = features.datapath_id;
                let needs_port_list = self.version == Version::Of13;
                if needs_port_list {
                    self.send(&Message::PortDescRequest);
                }
                self.send(&Message::SetConfig {
                    flags: 0,
                    miss_send_len: openflow::action::WHOLE_PACKET,
                });
                if needs_port_list {
                    self.state = State::PortDesc { dpid, discovery };
                } else {
                    self.connected(dpid, discovery.ports, now);
                }
            }
            // A port list sent before it was asked for still counts.
            Message::PortDescReply { ports, .. } => {
                match self.port_part(&mut discovery, header, &ports) {
                    Ok(()) => self.state = State::Features(discovery),
                    Err(reason) => self.close(reason),
                }
            }
            Message::Error { err_type, code, .. } => {
                self.close(CloseReason::HandshakeError { err_type, code })
            }
            _ => self.state = State::Features(discovery),
        }
    }

    pub(super) fn port_desc(
        &mut self,
        header: HeaderRepr,
        message: Message,
        dpid: u64,
        mut discovery: Discovery,
        now: Instant,
    ) {
        match message {
            Message::PortDescReply { ports, more } => {
                if let Err(reason) = self.port_part(&mut discovery, header, &ports) {
                    return self.close(reason);
                }
                if more {
                    self.state = State::PortDesc { dpid, discovery };
                } else {
                    self.connected(dpid, discovery.ports, now);
                }
            }
            Message::Error { err_type, code, .. } => {
                self.close(CloseReason::HandshakeError { err_type, code })
            }
            _ => self.state = State::PortDesc { dpid, discovery },
        }
    }

    /// One part of the port list, within the multipart and port bounds.
    fn port_part(
        &self,
        discovery: &mut Discovery,
        header: HeaderRepr,
        ports: &[PortDesc],
    ) -> Result<(), CloseReason> {
        let max_bytes = self.config.max_multipart_bytes;
        discovery.multipart_bytes = discovery
            .multipart_bytes
            .saturating_add(usize::from(header.length));
        if discovery.multipart_bytes > max_bytes {
            return Err(CloseReason::MultipartTooLong(max_bytes));
        }
        self.add_ports(discovery, ports)
    }

    fn add_ports(&self, discovery: &mut Discovery, ports: &[PortDesc]) -> Result<(), CloseReason> {
        for desc in ports.iter().filter(|desc| is_physical(desc.port_no)) {
            discovery.ports.insert(desc.port_no, port_state(desc));
        }
        let max_ports = self.config.max_ports_per_switch;
        if discovery.ports.len() > max_ports {
            return Err(CloseReason::TooManyPorts(max_ports));
        }
        Ok(())
    }

    /// The handshake is over: tell the engine, and start the meter setup.
    fn connected(&mut self, dpid: u64, ports: BTreeMap<u32, PortState>, now: Instant) {
        if let Some(allowed) = &self.config.allowed_dpids {
            if !allowed.contains(&dpid) {
                return self.close(CloseReason::NotAllowed(dpid));
            }
        }
        let config = &self.config;
        // A meter is a write: in a cluster it waits until the switch confirms this
        // instance as master (`WriteGate`), and is set up then.
        let (meter, step) = if config.role_gated {
            MeterSetup::deferred(
                "in a cluster, set up once the switch confirms this instance as master",
                now,
            )
        } else {
            MeterSetup::start(
                self.version,
                config.packet_in_rate,
                config.packet_in_burst,
                now,
                config.handshake_timeout,
            )
        };
        let gate = if config.role_gated {
            WriteGate::closed()
        } else {
            WriteGate::Open
        };
        let open = Box::new(Open {
            dpid,
            meter,
            packet_ins: PacketInLimiter::new(
                config.packet_in_rate,
                config.packet_in_burst,
                config.packet_in_port_rate,
                config.lldp_port_rate,
                config.max_ports_per_switch,
                now,
            ),
            unreported: 0,
            report_due: None,
            last_heard: now,
            echo_due: now + config.echo_interval,
            role_request: None,
            refused_writes: 0,
            flow_read: None,
            bundles: Default::default(),
            pipeline_barrier: None,
            probe_barriers: Default::default(),
            gate,
        });
        let profile = SwitchProfile {
            needs_table_miss_flow: self.version == Version::Of13,
            protocol: self.version,
            pipeline: self.version == Version::Of13,
        };
        self.state = State::MeterSetup(open);
        self.events.push_back(SwitchEvent::Connected {
            dpid,
            ports,
            profile,
        });
        self.apply_meter_step(step);
    }
}

//! What goes to the switch: the engine's commands encoded for the negotiated version,
//! the meter setup's messages, role requests, PACKET_OUTs that copy their payload once,
//! and the bound on bytes waiting to be written.

use openflow::header::Header;
use openflow::{
    port, Action, ControllerRole, FlowMod, FlowModCommand, Match, Message, NxRole, PacketOut,
    RoleMsg, Version,
};

use super::{CloseReason, State, SwitchSession, WriteGate};
use crate::meter::{MeterDecision, MeterSetup, MeterStep};
use crate::protocol::{Command, FlowHandle, Role, Rule, SwitchEvent};

impl SwitchSession {
    /// Encodes a command from the engine for the switch. A closed session drops it.
    pub fn queue(&mut self, command: Command) {
        if self.closed.is_some() {
            return;
        }
        if command.writes() && self.hold_until_master(&command) {
            return;
        }
        let message = match command {
            Command::SetRole { role, generation } => {
                if role != Role::Master {
                    // Whatever the switch answers, this instance stops writing now.
                    self.close_gate();
                }
                self.send_role_request(role, generation);
                return;
            }
            Command::ClearFlows => Message::FlowMod(FlowMod {
                command: FlowModCommand::Delete,
                // 1.3 has several tables and deletes from all of them at once.
                table_id: if self.version == Version::Of13 {
                    openflow::flow_mod::TABLE_ALL
                } else {
                    0
                },
                ..FlowMod::default()
            }),
            Command::TableMiss => match self.open_mut().and_then(|open| open.meter.table_miss()) {
                Some(table_miss) => table_miss,
                // Held until the meter setup decides; its step then carries the flow.
                None => return,
            },
            Command::FlowAdd {
                rule,
                out_port,
                priority,
                idle_timeout,
                hard_timeout,
                notify_removal,
                cookie,
            } => Message::FlowMod(FlowMod {
                command: FlowModCommand::Add,
                r#match: rule_match(rule),
                cookie,
                priority,
                idle_timeout,
                hard_timeout,
                flags: if notify_removal {
                    openflow::flow_mod::FLAG_SEND_FLOW_REM
                } else {
                    0
                },
                actions: out_port
                    .map(|port| Action::Output { port, max_len: 0 })
                    .into_iter()
                    .collect(),
                ..FlowMod::default()
            }),
            Command::FlowDelete { rule, priority } => Message::FlowMod(FlowMod {
                command: FlowModCommand::DeleteStrict,
                r#match: rule_match(rule),
                priority,
                ..FlowMod::default()
            }),
            Command::ReadFlows => return self.read_flows(),
            Command::FlowDeleteExact(FlowHandle(delete)) => {
                self.next_xid = self.next_xid.wrapping_add(1);
                return match delete.emit(self.version, self.next_xid, &mut self.outbound) {
                    Ok(()) => self.check_outbound(),
                    // A match of the other version (the switch reconnected speaking
                    // another): that flow is not in this table.
                    Err(err) => log::debug!("not deleting a flow read back: {err}"),
                };
            }
            Command::PacketOut { out_port, data } => {
                return self.send_packet_out(&[out_port], &data)
            }
            Command::Flood { out_ports, data } => {
                for ports in out_ports.chunks(MAX_PORTS_PER_PACKET_OUT) {
                    self.send_packet_out(ports, &data);
                }
                return;
            }
            Command::Pipeline(flow_mods) if self.version == Version::Of13 => {
                return self.write_pipeline(flow_mods);
            }
            Command::Pipeline(_) => {
                // The engine writes the pipeline only to switches that said they can hold it.
                return log::warn!(
                    "not sending a 1.3 pipeline change to a {:#04x} switch",
                    self.version
                );
            }
            Command::ProbeRoundSent { round } => return self.send_probe_barrier(round),
            Command::Discovery { port_no, proof } => {
                let Some(dpid) = self.open_mut().map(|open| open.dpid) else {
                    return;
                };
                let mut frame = std::mem::take(&mut self.discovery_frame);
                frame.clear();
                openflow::packet::signed_discovery_frame(
                    dpid,
                    port_no,
                    DISCOVERY_SOURCE,
                    &proof,
                    &mut frame,
                );
                self.send_packet_out(&[port_no], &frame);
                self.discovery_frame = frame;
                return;
            }
        };
        self.send(&message);
    }

    /// A barrier after a round of probes ([`Command::ProbeRoundSent`]).
    fn send_probe_barrier(&mut self, round: u64) {
        self.send(&Message::BarrierRequest);
        let xid = self.next_xid;
        if let Some(open) = self.open_mut() {
            open.probe_barrier_sent(xid, round);
        }
    }

    /// Queues the meter setup's messages and, once decided, logs the outcome and tells
    /// the engine; the session is then ready.
    pub(super) fn apply_meter_step(&mut self, step: MeterStep) {
        for (xid, message) in &step.send {
            self.send_reply(message, *xid);
        }
        if let Some(table_miss) = &step.table_miss {
            self.send(table_miss);
        }
        let Some(decision) = step.decided else {
            return;
        };
        self.state = match std::mem::replace(&mut self.state, State::Hello) {
            State::MeterSetup(open) => State::Ready(open),
            other => other,
        };
        let dpid = self.dpid().unwrap_or_default();
        match &decision {
            MeterDecision::Metered {
                meter_id,
                rate,
                burst,
            } => log::info!(
                "switch {dpid:#x}: PACKET_INs limited in the switch by meter {meter_id} \
                 ({rate}/s, burst {})",
                burst.map_or_else(|| "not supported".to_owned(), |burst| burst.to_string())
            ),
            MeterDecision::Unmetered(reason) => log::info!(
                "switch {dpid:#x}: no PACKET_IN meter ({reason}); the controller's rate \
                 limits alone apply"
            ),
        }
        self.events.push_back(SwitchEvent::PacketInMeter {
            metered: decision.is_metered(),
        });
    }

    /// Holds a write while the switch has not confirmed this instance as its master (in a
    /// cluster); true when held. Past the outbound bound the session closes, as it would
    /// with that much unwritten.
    fn hold_until_master(&mut self, command: &Command) -> bool {
        let max = self.config.max_outbound_bytes;
        let Some(open) = self.open_mut() else {
            return false;
        };
        let WriteGate::AwaitingMaster { held, held_bytes } = &mut open.gate else {
            return false;
        };
        *held_bytes = held_bytes.saturating_add(held_size(command));
        held.push_back(command.clone());
        if *held_bytes > max {
            self.close(CloseReason::OutboundFull(max));
        }
        true
    }

    /// The switch confirmed `role` for this instance: as master, the meter is set up if
    /// it is not, and the writes held meanwhile go out in order; as anything else, they
    /// are dropped and writes stay held.
    pub(super) fn role_confirmed(&mut self, role: Role) {
        if role != Role::Master {
            return self.close_gate();
        }
        let Some(open) = self.open_mut() else {
            return;
        };
        let held = match std::mem::replace(&mut open.gate, WriteGate::Master) {
            WriteGate::AwaitingMaster { held, .. } => held,
            // A single instance, or confirmed already (a claim with a new generation).
            gate @ (WriteGate::Open | WriteGate::Master) => {
                open.gate = gate;
                return;
            }
        };
        self.set_up_meter_again();
        for command in held {
            self.queue(command);
        }
    }

    /// Stops writing until the switch confirms this instance as master again: on a
    /// request for another role, a refusal, or a reply with another role. What was held
    /// is dropped.
    pub(super) fn close_gate(&mut self) {
        let dpid = self.dpid().unwrap_or_default();
        let Some(open) = self.open_mut() else {
            return;
        };
        if matches!(open.gate, WriteGate::Open) {
            return;
        }
        if let WriteGate::AwaitingMaster { held, .. } = &open.gate {
            if !held.is_empty() {
                log::info!(
                    "switch {dpid:#x}: {} writes dropped: it did not confirm this instance \
                     as master",
                    held.len()
                );
            }
        }
        open.gate = WriteGate::closed();
    }

    /// On 1.3, a switch that went without the PACKET_IN meter gets another try once it
    /// confirms this controller as its master: in a cluster the setup waits for that
    /// (`WriteGate`), and the table-miss flow it is about to send as master must not
    /// replace the old master's metered one with an unmetered one. The setup is held to the
    /// connection's patience from the last time the switch was heard (the session has
    /// no clock here), and the table-miss flow waits for its decision as on connect.
    pub(super) fn set_up_meter_again(&mut self) {
        let version = self.version;
        let (rate, burst, patience) = (
            self.config.packet_in_rate,
            self.config.packet_in_burst,
            self.config.handshake_timeout,
        );
        let Some(open) = self.open_mut() else {
            return;
        };
        if version != Version::Of13 || !open.meter.is_decided() || open.meter.meter_id().is_some() {
            return;
        }
        let (meter, step) = MeterSetup::start(version, rate, burst, open.last_heard, patience);
        open.meter = meter;
        self.state = match std::mem::replace(&mut self.state, State::Hello) {
            State::Ready(open) => State::MeterSetup(open),
            other => other,
        };
        self.apply_meter_step(step);
    }

    /// Queues a role request in the version's own form and remembers its xid.
    pub(super) fn send_role_request(&mut self, role: Role, generation: u64) {
        let message = if self.version == Version::Of10 {
            Message::NxRoleRequest(match role {
                Role::Master => NxRole::Master,
                Role::Slave => NxRole::Slave,
                Role::Equal => NxRole::Other,
            })
        } else {
            Message::RoleRequest(RoleMsg {
                role: match role {
                    Role::Master => ControllerRole::Master,
                    Role::Slave => ControllerRole::Slave,
                    Role::Equal => ControllerRole::Equal,
                },
                generation_id: generation,
            })
        };
        self.send(&message);
        let xid = self.next_xid;
        if let Some(open) = self.open_mut() {
            open.role_request = Some(xid);
        }
    }

    /// Queues a message with the next transaction id.
    pub(super) fn send(&mut self, message: &Message) {
        self.next_xid = self.next_xid.wrapping_add(1);
        self.send_reply(message, self.next_xid);
    }

    /// Queues a message with a given transaction id.
    pub(super) fn send_reply(&mut self, message: &Message, xid: u32) {
        match message.emit(self.version, xid, &mut self.outbound) {
            Ok(()) => self.check_outbound(),
            Err(err) => self.close(err.into()),
        }
    }

    /// Queues a PACKET_OUT of `data` out of each of `out_ports`. The message is encoded
    /// without the data, which is then appended and the length fixed up, so that the
    /// payload is copied once, into the write buffer, and never into a `Vec` of its own.
    pub(super) fn send_packet_out(&mut self, out_ports: &[u32], data: &[u8]) {
        let start = self.outbound.len();
        let shell = Message::PacketOut(PacketOut {
            buffer_id: None,
            in_port: port::CONTROLLER,
            actions: out_ports
                .iter()
                .map(|&port| Action::Output { port, max_len: 0 })
                .collect(),
            data: Vec::new(),
        });
        self.send(&shell);
        if self.closed.is_some() {
            return;
        }
        let length = self.outbound.len() - start + data.len();
        let Ok(length) = u16::try_from(length) else {
            self.outbound.truncate(start);
            return self.close(CloseReason::Malformed(openflow::Error::BadLength {
                what: "PACKET_OUT",
                length,
            }));
        };
        self.outbound.extend_from_slice(data);
        Header::new_unchecked(&mut self.outbound[start..]).set_length(length);
        self.check_outbound();
    }

    /// A switch that does not take what it is sent cannot make the session hold more.
    pub(super) fn check_outbound(&mut self) {
        let max = self.config.max_outbound_bytes;
        if self.outbound.len() > max {
            self.close(CloseReason::OutboundFull(max));
        }
    }
}

/// About what a held command costs in memory, to bound the writes held for a role.
fn held_size(command: &Command) -> usize {
    let payload = match command {
        Command::PacketOut { data, .. } | Command::Flood { data, .. } => data.len(),
        Command::Pipeline(flow_mods) => flow_mods.len() * PIPELINE_FLOW_MOD_BYTES,
        _ => 0,
    };
    std::mem::size_of::<Command>() + payload
}

pub(super) fn rule_match(rule: Rule) -> Match {
    Match {
        in_port: Some(rule.in_port),
        eth_src: Some(rule.eth_src.octets()),
        eth_dst: Some(rule.eth_dst.octets()),
        ..Match::default()
    }
}

/// About what one FLOW_MOD of the pipeline takes held in memory (the value, its
/// actions and its bundle framing): to bound the writes held for a role.
pub(crate) const PIPELINE_FLOW_MOD_BYTES: usize = 256;

/// Output actions in one PACKET_OUT of a flood: 256 take 4 KiB on 1.3, far from the
/// 64 KiB a message may hold with the frame; a larger flood goes in several.
pub(crate) const MAX_PORTS_PER_PACKET_OUT: usize = 256;

/// Source MAC of the LLDP frames the controller sends: locally administered.
const DISCOVERY_SOURCE: [u8; 6] = [0x02, 0x5c, 0x1c, 0xed, 0x00, 0x01];

//! The flow-table read-back: one request at a time, its statistics parts gathered into
//! one [`FlowsRead`] within [`MAX_FLOWS_READ`] entries and [`MAX_FLOW_READ_BYTES`].

use std::time::{Duration, Instant};

use openflow::{HeaderRepr, Message, Version};
use slice_core::MacAddress;

use super::SwitchSession;
use crate::cookie::FlowKind;
use crate::protocol::{
    FlowAction, FlowEntry, FlowHandle, FlowsRead, RawTable, SwitchEvent, MAX_FLOWS_READ,
};

impl SwitchSession {
    /// Asks for the whole flow table, unless a read-back is under way: its answer,
    /// judged when it arrives, serves this request as well.
    pub(super) fn read_flows(&mut self) {
        let Some(open) = self.open_mut() else {
            return;
        };
        if open.flow_read.is_some() {
            return;
        }
        // The session has no clock of its own outside `handle_*`: the last time the
        // switch spoke is at most a moment before now, which only shortens the deadline.
        let deadline = open.last_heard + FLOW_READ_TIMEOUT;
        self.send(&Message::FlowStatsRequest);
        let xid = self.next_xid;
        if let Some(open) = self.open_mut() {
            open.flow_read = Some(FlowRead {
                xid,
                entries: Vec::new(),
                raw: Vec::new(),
                bytes: 0,
                complete: true,
                deadline,
            });
        }
    }

    /// One part of the flow table; the last one hands the whole to the engine.
    pub(super) fn flow_stats_part(
        &mut self,
        header: HeaderRepr,
        flows: Vec<openflow::FlowStats>,
        more: bool,
    ) {
        let dpid = self.dpid().unwrap_or_default();
        let version = self.version;
        let Some(open) = self.open_mut() else {
            return;
        };
        let Some(read) = open
            .flow_read
            .as_mut()
            .filter(|read| read.xid == header.xid)
        else {
            return;
        };
        read.bytes = read.bytes.saturating_add(usize::from(header.length));
        if read.complete {
            if read.bytes > MAX_FLOW_READ_BYTES
                || read.entries.len().saturating_add(flows.len()) > MAX_FLOWS_READ
            {
                log::warn!(
                    "switch {dpid:#x}: flow table larger than {MAX_FLOWS_READ} flows or \
                     {MAX_FLOW_READ_BYTES} bytes"
                );
                read.complete = false;
                read.entries = Vec::new();
                read.raw = Vec::new();
            } else {
                read.entries
                    .extend(flows.iter().map(|flow| flow_entry(version, flow)));
                read.raw.extend(flows);
            }
        }
        if more {
            return;
        }
        if let Some(read) = open.flow_read.take() {
            let raw = read.complete.then_some(RawTable {
                version,
                flows: read.raw,
            });
            self.events.push_back(SwitchEvent::FlowsRead(FlowsRead {
                entries: read.entries,
                complete: read.complete,
                raw,
            }));
        }
    }
}

/// A flow statistics entry of a switch speaking `version`, in the engine's terms.
fn flow_entry(version: Version, flow: &openflow::FlowStats) -> FlowEntry {
    // Only the pipeline's entries are decoded whole: the engine needs nothing more of
    // the others, and a read-back may hold 65,536 of them.
    let pipeline = (FlowKind::of_cookie(flow.cookie) == Some(FlowKind::Pipeline))
        .then(|| flow.flow_mod(version).ok())
        .flatten()
        .and_then(|flow_mod| crate::pipeline::Entry::of_flow_mod(&flow_mod));
    let action = match flow.output {
        openflow::FlowOutput::Drop => FlowAction::Drop,
        openflow::FlowOutput::Port(port) => FlowAction::Output(port),
        openflow::FlowOutput::Other => FlowAction::Other,
    };
    FlowEntry {
        cookie: flow.cookie,
        table_id: flow.table_id,
        priority: flow.priority,
        in_port: flow.r#match.in_port,
        eth_src: flow.r#match.eth_src.map(MacAddress::new),
        eth_dst: flow.r#match.eth_dst.map(MacAddress::new),
        other_fields: flow.r#match.other_fields,
        action,
        idle_timeout: flow.idle_timeout,
        hard_timeout: flow.hard_timeout,
        handle: FlowHandle(openflow::RawFlowDelete {
            table_id: flow.table_id,
            priority: flow.priority,
            raw_match: flow.raw_match.clone(),
        }),
        pipeline,
    }
}

/// A read-back of the flow table, part by part.
#[derive(Debug)]
pub(super) struct FlowRead {
    /// The request's transaction id, which every part of the answer carries.
    pub(super) xid: u32,
    entries: Vec<FlowEntry>,
    /// The same flows as reported, for the verifier: within the same bounds, since
    /// [`MAX_FLOW_READ_BYTES`] counts the wire bytes they were parsed from.
    raw: Vec<openflow::FlowStats>,
    bytes: usize,
    /// False once the answer crossed a bound or the switch refused the request; the
    /// entries are then dropped, and the parts still coming only counted out.
    complete: bool,
    /// When the read is given up as incomplete if the last part has not come.
    pub(super) deadline: Instant,
}

/// The most bytes of flow statistics parts one read-back of the flow table takes in;
/// beyond them, as beyond [`MAX_FLOWS_READ`] entries, the read is incomplete and the
/// engine flushes the switch. Far above what [`MAX_FLOWS_READ`] of sliced's own flows
/// take (under 120 bytes each), it bounds what entries with long foreign matches hold.
pub(super) const MAX_FLOW_READ_BYTES: usize = 16 * 1024 * 1024;

/// How long a switch may take to answer a read-back of its flow table. Open vSwitch lists
/// [`MAX_FLOWS_READ`] flows in well under a second; a switch that keeps answering echoes
/// but not this would otherwise keep whatever it holds unjudged, and every later read
/// would wait on this one. Past it the read is incomplete, and the engine flushes.
pub(super) const FLOW_READ_TIMEOUT: Duration = Duration::from_secs(10);

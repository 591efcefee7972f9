//! Entries sliced did not write, as an operator reads them: switch, table, priority,
//! cookie, match and actions, in `ovs-ofctl`'s words where it has them.

use std::fmt::Write as _;

use openflow::{Action, FlowStats, Match, Version};
use serde::Serialize;

use crate::cookie::FlowKind;
use crate::protocol::{FlowEntry, RawTable};

/// A flow entry found in a switch that sliced did not write: its cookie is not sliced's,
/// or it carries the pipeline's cookie in a shape the pipeline never writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ForeignEntry {
    pub dpid: u64,
    pub table_id: u8,
    pub priority: u16,
    pub cookie: u64,
    pub r#match: String,
    pub actions: String,
}

/// The entries of `raw` sliced did not write; `entries` are the same flows in the
/// engine's terms, in the same order.
pub(super) fn foreign(dpid: u64, raw: &RawTable, entries: &[FlowEntry]) -> Vec<ForeignEntry> {
    raw.flows
        .iter()
        .zip(entries)
        .filter(|(_, entry)| is_foreign(entry))
        .map(|(flow, _)| describe(dpid, raw.version, flow))
        .collect()
}

fn is_foreign(entry: &FlowEntry) -> bool {
    match FlowKind::of_cookie(entry.cookie) {
        None => true,
        Some(FlowKind::Pipeline) => entry.pipeline.is_none(),
        Some(_) => false,
    }
}

fn describe(dpid: u64, version: Version, flow: &FlowStats) -> ForeignEntry {
    let (r#match, actions) = match flow.flow_mod(version) {
        Ok(flow_mod) => (
            match_text(&flow_mod.r#match),
            actions_text(&flow_mod.actions, flow_mod.goto_table),
        ),
        // Kept whole, so that an operator can still tell it by its bytes.
        Err(_) => (hex(&flow.raw_match), hex(&flow.raw_actions)),
    };
    ForeignEntry {
        dpid,
        table_id: flow.table_id,
        priority: flow.priority,
        cookie: flow.cookie,
        r#match,
        actions,
    }
}

fn mac(bytes: [u8; 6]) -> String {
    slice_core::MacAddress::new(bytes).to_string()
}

pub(super) fn match_text(m: &Match) -> String {
    let mut fields = Vec::new();
    if let Some(port) = m.in_port {
        fields.push(format!("in_port={port}"));
    }
    if let Some(src) = m.eth_src {
        fields.push(format!("dl_src={}", mac(src)));
    }
    if let Some(dst) = m.eth_dst {
        let mut text = format!("dl_dst={}", mac(dst));
        if let Some(mask) = m.eth_dst_mask {
            let _ = write!(text, "/{}", mac(mask));
        }
        fields.push(text);
    }
    if let Some(eth_type) = m.eth_type {
        fields.push(format!("dl_type={eth_type:#06x}"));
    }
    if let Some(vid) = m.vlan_vid {
        fields.push(format!("dl_vlan={vid}"));
    }
    if let Some(metadata) = &m.metadata {
        fields.push(format!(
            "metadata={:#x}/{:#x}",
            metadata.value, metadata.mask
        ));
    }
    if fields.is_empty() {
        "any".into()
    } else {
        fields.join(",")
    }
}

fn actions_text(actions: &[Action], goto_table: Option<u8>) -> String {
    let mut parts: Vec<String> = actions
        .iter()
        .map(|action| match action {
            Action::Output { port, .. } => match *port {
                openflow::port::CONTROLLER => "CONTROLLER".to_owned(),
                openflow::port::FLOOD => "FLOOD".to_owned(),
                openflow::port::ALL => "ALL".to_owned(),
                openflow::port::IN_PORT => "IN_PORT".to_owned(),
                port => format!("output:{port}"),
            },
            Action::Other { kind, .. } => format!("action_type_{kind}"),
        })
        .collect();
    if let Some(table) = goto_table {
        parts.push(format!("goto_table:{table}"));
    }
    if parts.is_empty() {
        "drop".into()
    } else {
        parts.join(",")
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut text, byte| {
        let _ = write!(text, "{byte:02x}");
        text
    })
}

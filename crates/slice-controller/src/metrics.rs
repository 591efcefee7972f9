//! The controller's Prometheus counters.
//!
//! Every label set is resolved once, here, into a counter handle (an `Arc` around one
//! atomic), so that counting a PACKET_IN or a FLOW_MOD is a relaxed `fetch_add` with no
//! lock, no hashing and no allocation. The gauges of the network's size are not here:
//! they are read from the engine when Prometheus scrapes (see the binary's `metrics.rs`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::notice::Notice;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EventLabel {
    event: &'static str,
}

/// What became of a PACKET_IN.
#[derive(Debug, Clone)]
pub struct PacketInOutcomes {
    /// Sent along a path to a known destination in a shared slice.
    pub routed: Counter,
    /// Between hosts that share no slice: a drop flow goes in.
    pub dropped_no_slice: Counter,
    /// Broadcast or unknown destination, flooded to the sender's slices.
    pub flooded: Counter,
    /// An LLDP probe, genuine or not.
    pub lldp: Counter,
    /// Refused by the connection's rate limit before the engine saw it.
    pub rate_limited: Counter,
    /// Anything else: a standby's, traffic on a link port, a refused host.
    pub ignored: Counter,
}

/// Counters of the controller, shared by the engine task and every connection.
#[derive(Debug, Clone)]
pub struct ControllerMetrics {
    pub packet_ins: PacketInOutcomes,
    /// PACKET_INs that made the engine install flows (a path or a drop).
    pub flow_setups: Counter,
    pub flow_mods_sent: Counter,
    pub packet_outs_sent: Counter,
    pub paths_installed: Counter,
    pub paths_deleted: Counter,
    /// FLOW_MODs switches refused because a table was full.
    pub flow_mods_table_full: Counter,
    /// Bundles of the pipeline switches refused (a full table included).
    pub bundles_refused: Counter,
    /// OpenFlow connections closed as soon as accepted, at the cap of open connections.
    pub switch_connections_refused: Counter,
    /// Links held out of use for flapping (each time one is).
    pub links_held: Counter,
    link_up: Counter,
    link_down: Counter,
    pub verification: VerificationMetrics,
}

/// What the data-plane verification found ([`crate::verification`]): the violations of
/// its latest run by kind (`foreign`: entries sliced did not write, in the latest
/// read-back of each switch), its runs and what read-backs repaired.
#[derive(Debug, Clone)]
pub struct VerificationMetrics {
    pub leaks: Gauge,
    pub black_holes: Gauge,
    pub loops: Gauge,
    pub foreign_now: Gauge,
    pub runs: Counter,
    pub seconds: Histogram,
    pub repairs: Counter,
    pub foreign: Counter,
}

impl VerificationMetrics {
    fn register(registry: &mut Registry) -> Self {
        let violations = Family::<KindLabel, Gauge>::default();
        let kind = |kind| violations.get_or_create(&KindLabel { kind }).clone();
        let metrics = Self {
            leaks: kind("leak"),
            black_holes: kind("black_hole"),
            loops: kind("loop"),
            foreign_now: kind("foreign"),
            runs: Counter::default(),
            // 10 µs to about 2.6 s.
            seconds: Histogram::new(exponential_buckets(1e-5, 4.0, 10)),
            repairs: Counter::default(),
            foreign: Counter::default(),
        };
        registry.register(
            "verification_violations",
            "What the latest data-plane verification found, by kind",
            violations,
        );
        registry.register(
            "verification_runs",
            "Data-plane verifications run",
            metrics.runs.clone(),
        );
        registry.register(
            "verification_seconds",
            "How long each data-plane verification took",
            metrics.seconds.clone(),
        );
        registry.register(
            "verification_repairs",
            "Flow entries written again or removed because a read-back found them missing, wrong or foreign",
            metrics.repairs.clone(),
        );
        registry.register(
            "verification_foreign_entries",
            "Flow entries sliced did not write, found in switches and removed",
            metrics.foreign.clone(),
        );
        metrics
    }
}

impl Default for ControllerMetrics {
    /// Counters that nobody reads: for an engine run without a registry (tests, benches).
    fn default() -> Self {
        Self::register(&mut Registry::default())
    }
}

impl ControllerMetrics {
    /// Creates the counters and registers them under `registry` (names get no prefix
    /// here: the caller's registry carries `sliced_`).
    pub fn register(registry: &mut Registry) -> Self {
        let packet_ins = Family::<OutcomeLabel, Counter>::default();
        let outcome = |outcome| packet_ins.get_or_create(&OutcomeLabel { outcome }).clone();
        let outcomes = PacketInOutcomes {
            routed: outcome("routed"),
            dropped_no_slice: outcome("dropped_no_slice"),
            flooded: outcome("flooded"),
            lldp: outcome("lldp"),
            rate_limited: outcome("rate_limited"),
            ignored: outcome("ignored"),
        };
        registry.register(
            "packet_ins",
            "PACKET_IN messages from switches, by what became of them",
            packet_ins,
        );
        let link_events = Family::<EventLabel, Counter>::default();
        let link_up = link_events
            .get_or_create(&EventLabel { event: "up" })
            .clone();
        let link_down = link_events
            .get_or_create(&EventLabel { event: "down" })
            .clone();
        registry.register(
            "link_events",
            "Links between switches discovered (up) or lost (down)",
            link_events,
        );
        let counter = |registry: &mut Registry, name: &str, help: &str| {
            let counter = Counter::default();
            registry.register(name, help, counter.clone());
            counter
        };
        Self {
            packet_ins: outcomes,
            flow_setups: counter(
                registry,
                "flow_setups",
                "PACKET_INs that made the controller install flows (a path or a drop)",
            ),
            flow_mods_sent: counter(registry, "flow_mods_sent", "FLOW_MOD messages sent"),
            packet_outs_sent: counter(registry, "packet_outs_sent", "PACKET_OUT messages sent"),
            paths_installed: counter(
                registry,
                "paths_installed",
                "Paths between two hosts installed (a new or changed route)",
            ),
            paths_deleted: counter(registry, "paths_deleted", "Paths between two hosts deleted"),
            flow_mods_table_full: counter(
                registry,
                "flow_mods_table_full",
                "FLOW_MODs switches refused because a flow table was full",
            ),
            bundles_refused: counter(
                registry,
                "bundles_refused",
                "Bundles of pipeline changes switches refused (each left the table as it was)",
            ),
            switch_connections_refused: counter(
                registry,
                "switch_connections_refused",
                "OpenFlow connections closed as soon as accepted, at the cap of open connections",
            ),
            links_held: counter(
                registry,
                "links_held",
                "Links held out of use for flapping, until their penalty decays",
            ),
            link_up,
            link_down,
            verification: VerificationMetrics::register(registry),
        }
    }

    /// Counts what a change of the network tells (paths and links).
    pub fn count_notice(&self, notice: &Notice) {
        match notice {
            Notice::PathInstalled { .. } => self.paths_installed.inc(),
            Notice::PathDeleted { .. } => self.paths_deleted.inc(),
            Notice::LinkUp { .. } => self.link_up.inc(),
            Notice::LinkDown { .. } => self.link_down.inc(),
            _ => 0,
        };
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;
    use std::time::Instant;

    use bytes::Bytes;
    use openflow::packet::Probe;
    use openflow::Version;
    use slice_core::{MacAddress, Membership, PortId, SliceName};

    use super::*;
    use crate::engine::{Engine, EngineConfig, Frame, SwitchProfile};
    use crate::topology::PortState;

    fn frame(src: u8, dst: u8, probe: Option<Probe>) -> Frame {
        Frame {
            dst: MacAddress::new([0, 0, 0, 0, 0, dst]),
            src: MacAddress::new([0, 0, 0, 0, 0, src]),
            probe,
            data: Bytes::from_static(&[0; 60]),
        }
    }

    #[test]
    fn each_packet_in_is_counted_under_what_became_of_it() {
        let mut membership = Membership::default();
        let (blue, red): (SliceName, SliceName) = ("blue".parse().unwrap(), "red".parse().unwrap());
        membership.add_slice(&blue);
        membership.add_slice(&red);
        membership.add_mac(
            &blue,
            PortId::new(1, 1),
            MacAddress::new([0, 0, 0, 0, 0, 1]),
        );
        membership.add_mac(&red, PortId::new(1, 2), MacAddress::new([0, 0, 0, 0, 0, 2]));
        let mut engine = Engine::new(EngineConfig::default(), membership);
        let metrics = Arc::new(ControllerMetrics::default());
        engine.set_metrics(Arc::clone(&metrics));
        let ports: BTreeMap<u32, PortState> = (1..=2)
            .map(|n| {
                let state = PortState {
                    name: format!("eth{n}"),
                    live: true,
                };
                (n, state)
            })
            .collect();
        let profile = SwitchProfile {
            needs_table_miss_flow: false,
            protocol: Version::Of10,
            pipeline: false,
        };
        let now = Instant::now();
        engine.switch_connected(1, profile, ports, now);
        // Host 2 announces itself; host 1, in another slice, then sends to it.
        engine.packet_in(1, 2, frame(2, 0xff, None), now);
        engine.packet_in(1, 1, frame(1, 2, None), now);
        let unsigned = Probe {
            dpid: 9,
            port_no: 9,
            proof: None,
        };
        engine.packet_in(1, 1, frame(3, 0xff, Some(unsigned)), now);
        engine.packet_ins_rate_limited(1, 5, now);
        let counted = &metrics.packet_ins;
        assert_eq!(counted.flooded.get(), 1);
        assert_eq!(counted.dropped_no_slice.get(), 1);
        assert_eq!(metrics.flow_setups.get(), 1);
        assert_eq!(counted.lldp.get(), 1);
        assert_eq!(counted.rate_limited.get(), 5);
        assert_eq!(counted.routed.get(), 0);
    }
}

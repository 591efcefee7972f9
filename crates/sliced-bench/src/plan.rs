//! The fixed settings of a run that the report quotes: connection and client counts,
//! sliced's flags for flow setup, and the parts' names.

use std::time::Duration;

/// The REST connection count of the read runs.
pub(crate) const READ_CONNECTIONS: usize = 64;
/// Concurrent clients of the durable-write runs.
pub(crate) const WRITE_CLIENTS: [usize; 3] = [1, 16, 64];
/// Emulated switch counts of the flow-setup runs.
pub(crate) const SWITCH_COUNTS: [u64; 3] = [1, 16, 64];

/// sliced's flags for the flow-setup runs (see `flows`); the report quotes them. With
/// `--per-pair-flows` on top (`flows_part::PER_PAIR_FLOWS`) for the runs against peers.
pub(crate) const SLICED_FLOW_ARGS: [&str; 8] = [
    "--lldp-interval-ms",
    "60000",
    "--packet-in-rate",
    "100000000",
    "--packet-in-burst",
    "100000000",
    "--packet-in-port-rate",
    "100000000",
];
/// sliced's flags for the pipeline's first packet (`first_packet`): the same PACKET_IN
/// limits lifted, and LLDP every 3 s, since the emulated cables are found by it: at the
/// default 1 s, probes to 64 emulated switches on a loaded 2-core machine came back
/// later than the 3.5 intervals a link waits, and the links flapped under the samples.
pub(crate) const SLICED_FIRST_PACKET_ARGS: [&str; 8] = [
    "--lldp-interval-ms",
    "3000",
    "--packet-in-rate",
    "100000000",
    "--packet-in-burst",
    "100000000",
    "--packet-in-port-rate",
    "100000000",
];
/// The LLDP interval of `SLICED_FIRST_PACKET_ARGS`.
pub(crate) const FIRST_PACKET_LLDP: Duration = Duration::from_secs(3);
/// How long each raw flush loop runs.
pub(crate) const RAW_FLUSH_TIME: Duration = Duration::from_secs(2);
/// Concurrent REST clients that create the scale test's slices.
pub(crate) const SCALE_CLIENTS: usize = 64;
/// Digits of the scale test's slice numbers (`scale-00000`).
pub(crate) const SCALE_NAME_WIDTH: usize = 5;

/// The parts as the report and the other-work watcher name them.
pub(crate) const PART_REST: &str = "REST reads and writes";
pub(crate) const PART_FLOWS: &str = "flow setup";
pub(crate) const PART_SCALE: &str = "scale";
pub(crate) const PART_MILLION: &str = "a million bindings";
pub(crate) const PART_ROUTING: &str = "routing (criterion)";

/// A benchmark slice's name: `prefix` and `index` in `width` digits (`scale-00000`).
pub(crate) fn slice_name(prefix: &str, index: usize, width: usize) -> String {
    format!("{prefix}-{index:0width$}")
}

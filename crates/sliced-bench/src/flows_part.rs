//! Part 3: flow setup, the switch emulator against sliced, ovs-testcontroller, the
//! os-ken learning switch and the no-logic floor, and the OpenFlow 1.3 pipeline's own
//! first-packet cost (`first_packet`).
//!
//! The peers set up a flow per conversation as its first packet arrives; sliced does
//! that only with per-pair flows (`--per-pair-flows` on 1.3, always on 1.0). With its
//! default pipeline the switches forward bound hosts by themselves and the emulator's
//! PACKET_INs would go unanswered, so the comparison runs sliced with per-pair flows, and
//! the pipeline is measured on what does reach its controller.

use std::path::Path;
use std::time::Duration;

use crate::args::RunArgs;
use crate::emulator::{FlowConfig, FlowResult};
use crate::measure::{outcome, record_peak, Outcome};
use crate::page::version_text;
use crate::peers::Peer;
use crate::plan::{SLICED_FIRST_PACKET_ARGS, SLICED_FLOW_ARGS, SWITCH_COUNTS};
use crate::sliced::Sliced;
use crate::{emulator, first_packet, round_trips, sliced, wire};

/// The flag that turns sliced's 1.3 switches to per-pair flows, as its peers work.
pub(crate) const PER_PAIR_FLOWS: &str = "--per-pair-flows";

pub(crate) struct FlowRow {
    pub controller: String,
    pub version: u8,
    pub switches: u64,
    pub throughput: Outcome<FlowResult>,
    pub latency: Outcome<FlowResult>,
}

pub(crate) struct Flows {
    pub rows: Vec<FlowRow>,
    /// Controllers that could not be measured at all, with why.
    pub skipped: Vec<(String, String)>,
    /// The one-switch round trips in paired rounds, per version (empty if sliced or no
    /// peer could run), and how many rounds.
    pub round_trips: Vec<round_trips::RoundTripRow>,
    pub round_trip_rounds: usize,
    /// The pipeline's first packet, per switch count.
    pub first_packet: Vec<first_packet::FirstPacketRow>,
}

impl Flows {
    /// The controllers measured besides sliced, in the order they ran.
    pub(crate) fn peer_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for row in &self.rows {
            if row.controller != "sliced" && !names.contains(&row.controller) {
                names.push(row.controller.clone());
            }
        }
        names
    }

    /// The row of one controller at one version and switch count.
    pub(crate) fn find(&self, controller: &str, version: u8, switches: u64) -> Option<&FlowRow> {
        self.rows
            .iter()
            .find(|r| r.controller == controller && r.version == version && r.switches == switches)
    }
}

/// Part 3: the emulator against sliced, ovs-testcontroller and the os-ken learning switch.
pub(crate) fn flows(
    args: &RunArgs,
    binary: &Path,
    tmp: &Path,
    memory: &mut Vec<(String, String, u64)>,
) -> anyhow::Result<Flows> {
    let max_switches = *SWITCH_COUNTS.iter().max().unwrap_or(&1);
    let mut rows = Vec::new();
    let mut skipped = Vec::new();

    // sliced: every emulated host in a slice, one slice per switch. LLDP every minute so
    // that discovery probes stay out of the measurement. The PACKET_IN limits, a defence
    // against flooding hosts, are lifted far above what the emulator can send: this
    // measures the decision path, and the peers have no such limits.
    let per_pair: Vec<&str> = SLICED_FLOW_ARGS
        .iter()
        .copied()
        .chain([PER_PAIR_FLOWS])
        .collect();
    let ours = (|| -> anyhow::Result<Sliced> {
        let dir = tmp.join("flows-sliced");
        let sliced = Sliced::start(binary, &dir, &per_pair)?;
        eprintln!("sliced-bench: putting the emulated hosts in slices");
        let switches: Vec<u64> = (1..=max_switches).collect();
        let hosts = args.hosts;
        sliced::parallel(&sliced.base, switches, 8, |agent, base, dpid| {
            let slice = format!("of-{dpid}");
            sliced::create_slice(agent, base, &slice)?;
            for port in 1..=hosts {
                let mac = wire::mac_text(wire::host_mac(*dpid, port));
                sliced::add_mac(agent, base, &slice, &format!("{dpid:#x}:{port}"), &mac)?;
            }
            Ok(())
        })?;
        measure_controller(
            args,
            "sliced",
            sliced.openflow,
            &[wire::OFP13, wire::OFP10],
            None,
            &mut rows,
        );
        Ok(sliced)
    })();
    // sliced stays up for the paired round trips below.
    let ours = match ours {
        Ok(sliced) => Some(sliced),
        Err(err) => {
            eprintln!("sliced-bench: sliced's flow setup not measured: {err:#}");
            skipped.push(("sliced".to_owned(), format!("{err:#}")));
            None
        }
    };

    for peer in [Peer::OvsTestController, Peer::OsKen, Peer::Floor] {
        let started = peer.start(&tmp.join(format!("flows-{peer:?}")));
        match started {
            Ok((server, addr)) => {
                measure_controller(
                    args,
                    peer.name(),
                    addr,
                    peer.versions(),
                    peer.max_switches(),
                    &mut rows,
                );
                record_peak(memory, "flow setup", peer.name(), &server);
                server.stop()?;
            }
            Err(err) => {
                eprintln!("sliced-bench: {} not measured: {err:#}", peer.name());
                skipped.push((peer.name().to_owned(), format!("{err:#}")));
            }
        }
    }

    let mut round_trips = Vec::new();
    if let Some(sliced) = ours {
        round_trips = paired_round_trips(args, &sliced, tmp)?;
        record_peak(memory, "flow setup", "sliced", &sliced.server);
        sliced.server.stop()?;
    }
    // The pipeline as sliced runs by default, but for the PACKET_IN limits.
    let first_packet = first_packet::run(
        binary,
        tmp,
        &SWITCH_COUNTS,
        args.hosts,
        &SLICED_FIRST_PACKET_ARGS,
    );
    Ok(Flows {
        rows,
        skipped,
        round_trips,
        round_trip_rounds: args.rtt_rounds as usize,
        first_packet,
    })
}

/// The one-switch round trips of sliced, ovs-testcontroller and the no-logic floor in
/// paired rounds (see `round_trips`); os-ken, five times slower, would add nothing to
/// the comparison the rounds are for. A peer that does not start is left out.
fn paired_round_trips(
    args: &RunArgs,
    sliced: &Sliced,
    tmp: &Path,
) -> anyhow::Result<Vec<round_trips::RoundTripRow>> {
    let mut peers = Vec::new();
    for peer in [Peer::OvsTestController, Peer::Floor] {
        match peer.start(&tmp.join(format!("round-trips-{peer:?}"))) {
            Ok((server, addr)) => peers.push((peer, server, addr)),
            Err(err) => eprintln!(
                "sliced-bench: {} left out of the rounds: {err:#}",
                peer.name()
            ),
        }
    }
    if peers.is_empty() {
        return Ok(Vec::new());
    }
    let sliced_versions = [wire::OFP13, wire::OFP10];
    let mut contenders = vec![round_trips::Contender {
        name: "sliced",
        addr: sliced.openflow,
        versions: &sliced_versions,
    }];
    contenders.extend(peers.iter().map(|(peer, _, addr)| round_trips::Contender {
        name: peer.name(),
        addr: *addr,
        versions: peer.versions(),
    }));
    let rows = round_trips::measure(
        &contenders,
        &round_trips::Rounds {
            rounds: args.rtt_rounds as usize,
            hosts: args.hosts,
            duration: Duration::from_secs(args.flow_duration),
        },
    );
    for (_, server, _) in peers {
        server.stop()?;
    }
    rows
}

fn measure_controller(
    args: &RunArgs,
    name: &str,
    addr: std::net::SocketAddr,
    versions: &[u8],
    max_switches: Option<(u64, &str)>,
    rows: &mut Vec<FlowRow>,
) {
    for &version in versions {
        for switches in SWITCH_COUNTS {
            if let Some((max, why)) = max_switches.filter(|(max, _)| switches > *max) {
                eprintln!("sliced-bench: {name}, {switches} switches: skipped, over {max}");
                rows.push(FlowRow {
                    controller: name.to_owned(),
                    version,
                    switches,
                    throughput: Err(why.to_owned()),
                    latency: Err(why.to_owned()),
                });
                continue;
            }
            let one = |window: usize, mode: &str| {
                eprintln!(
                    "sliced-bench: {name}, OpenFlow {}, {switches} switches, {mode}",
                    version_text(version)
                );
                let config = FlowConfig {
                    controller: addr,
                    version,
                    switches,
                    hosts: args.hosts,
                    window,
                    duration: Duration::from_secs(args.flow_duration),
                };
                let result = outcome(emulator::run(&config), name);
                // Let the controller see the switches go before the next run.
                std::thread::sleep(Duration::from_millis(500));
                result
            };
            let throughput = one(args.window, "throughput");
            let latency = one(1, "latency");
            rows.push(FlowRow {
                controller: name.to_owned(),
                version,
                switches,
                throughput,
                latency,
            });
        }
    }
}

//! The data-plane verification part (issue 37 item 5): slice-verify over the entries
//! sliced's OpenFlow 1.3 pipeline puts in every switch (`pipeline::build`, each entry
//! encoded as the switch would report it), on Mininet's tree depth 2 fanout 10 and on a
//! k=8 fat tree: a full verification, and an incremental one after one binding change.
//! In-process, no sockets, no daemon.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use openflow::{FlowStats, Version};
use slice_controller::pipeline::{self, Fabric};
use slice_core::{MacAddress, Membership, PortId, SliceName};
use slice_verify::{Report, Verifier};

use crate::measure::Outcome;
use crate::page::{display_args, disturbed, not_measured, thousands, Stamp};

pub(crate) const PART: &str = "data-plane verification";
const HEADING: &str = "## 11. Data-plane verification";
const HEADING_NUMBER: &str = "## 11. ";
const NEXT_HEADING: &str = "## Method notes";
/// Slices the hosts are spread over, round robin.
const SLICES: usize = 4;
/// Runs of each measurement; the median is shown.
const RUNS: usize = 7;

/// A switched network: its switches, both directions of every cable, its hosts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Net {
    pub switches: Vec<u64>,
    pub links: Vec<(PortId, PortId)>,
    pub hosts: Vec<(PortId, MacAddress)>,
}

pub(crate) fn host_mac(index: usize) -> MacAddress {
    let i = index as u64 + 1;
    let bytes = i.to_be_bytes();
    MacAddress::new([0x02, 0, bytes[4], bytes[5], bytes[6], bytes[7]])
}

impl Net {
    pub(crate) fn cable(&mut self, a: PortId, b: PortId) {
        self.links.push((a, b));
        self.links.push((b, a));
    }

    pub(crate) fn host(&mut self, at: PortId) {
        let mac = host_mac(self.hosts.len());
        self.hosts.push((at, mac));
    }

    /// Mininet's `tree,depth=2,fanout=n`: switch 1 at the root, its port i cabled to
    /// switch i + 1's port n + 1, hosts on the leaves' ports 1..=n.
    pub(crate) fn tree(fanout: u32) -> Net {
        let mut net = Net {
            switches: (1..=u64::from(fanout) + 1).collect(),
            ..Net::default()
        };
        for leaf in 1..=fanout {
            let dpid = u64::from(leaf) + 1;
            net.cable(PortId::new(1, leaf), PortId::new(dpid, fanout + 1));
            for port_no in 1..=fanout {
                net.host(PortId::new(dpid, port_no));
            }
        }
        net
    }

    /// A k-ary fat tree: (k/2)² cores, k pods of k/2 aggregation and k/2 edge switches,
    /// k/2 hosts on each edge switch.
    pub(crate) fn fat_tree(k: u32) -> Net {
        let half = k / 2;
        let core = |i: u32| 0x100 + u64::from(i);
        let agg = |pod: u32, i: u32| 0x1000 + u64::from(pod) * 0x100 + u64::from(i);
        let edge = |pod: u32, i: u32| 0x2000 + u64::from(pod) * 0x100 + u64::from(i);
        let mut net = Net::default();
        net.switches.extend((0..half * half).map(core));
        for pod in 0..k {
            for i in 0..half {
                net.switches.push(agg(pod, i));
                net.switches.push(edge(pod, i));
            }
            for e in 0..half {
                for h in 0..half {
                    net.host(PortId::new(edge(pod, e), h + 1));
                }
                for a in 0..half {
                    net.cable(
                        PortId::new(edge(pod, e), half + a + 1),
                        PortId::new(agg(pod, a), e + 1),
                    );
                }
            }
            for a in 0..half {
                for c in 0..half {
                    net.cable(
                        PortId::new(agg(pod, a), half + c + 1),
                        PortId::new(core(a * half + c), pod + 1),
                    );
                }
            }
        }
        net
    }

    pub(crate) fn fabric(&self) -> Fabric {
        let mut fabric = Fabric::default();
        for dpid in &self.switches {
            fabric.add_switch(*dpid, []);
        }
        for (port, _) in &self.hosts {
            fabric.add_switch(port.dpid, [port.port_no]);
        }
        for (src, dst) in &self.links {
            fabric.add_link(*src, *dst);
        }
        fabric
    }
}

pub(crate) fn slice_name(index: usize) -> SliceName {
    // A short lowercase name with a number is always a valid slice name.
    format!("s{index}")
        .parse()
        .unwrap_or_else(|_| unreachable!())
}

/// Every switch's pipeline entries as a 1.3 switch reports them.
pub(crate) fn tables(
    fabric: &Fabric,
    membership: &Membership,
) -> anyhow::Result<BTreeMap<u64, Vec<FlowStats>>> {
    let mut out = BTreeMap::new();
    for (dpid, entries) in pipeline::build(fabric, membership) {
        let stats = entries
            .iter()
            .map(|entry| FlowStats::of_flow(Version::Of13, &entry.flow_mod(Some(1))))
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("encoding the entries of {dpid:#x}"))?;
        out.insert(dpid, stats);
    }
    Ok(out)
}

/// A verifier loaded with `net`'s tables, links and hosts under `membership`.
pub(crate) fn load(
    net: &Net,
    membership: &Membership,
    tables: &BTreeMap<u64, Vec<FlowStats>>,
) -> anyhow::Result<Verifier> {
    let mut verifier = Verifier::new();
    for (dpid, entries) in tables {
        let unreadable = verifier.set_tables(*dpid, Version::Of13, entries.clone());
        ensure!(unreadable.is_empty(), "unreadable entries: {unreadable:?}");
    }
    verifier.set_links(net.links.iter().copied());
    verifier.set_hosts(membership, served(net, membership));
    Ok(verifier)
}

/// Where each bound MAC is served: its one port.
pub(crate) fn served<'a>(
    net: &'a Net,
    membership: &'a Membership,
) -> impl Iterator<Item = (MacAddress, PortId)> + 'a {
    net.hosts
        .iter()
        .filter(|(port, mac)| {
            membership.is_member(&slice_core::Host {
                port: *port,
                mac: *mac,
            })
        })
        .map(|(port, mac)| (*mac, *port))
}

fn round_robin(net: &Net) -> Membership {
    let mut membership = Membership::default();
    for (i, (port, mac)) in net.hosts.iter().enumerate() {
        let slice = slice_name(i % SLICES);
        membership.add_slice(&slice);
        membership.add_mac(&slice, *port, *mac);
    }
    membership
}

pub(crate) struct Row {
    pub name: &'static str,
    pub goal_full: Duration,
    pub switches: usize,
    pub hosts: usize,
    pub entries: usize,
    pub pairs: usize,
    pub traces: usize,
    /// `verify` alone, on a verifier loaded with every table.
    pub full: Duration,
    /// Decoding every table (`set_tables`) and the verification.
    pub load_and_full: Duration,
    /// After one binding change: the verification.
    pub incremental: Duration,
    /// The same with the changed switches' tables decoded again before it.
    pub decode_and_incremental: Duration,
    pub incremental_traced: usize,
    pub changed_switches: usize,
}

pub(crate) struct Verification {
    pub rows: Vec<Row>,
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

fn clean(report: &Report, what: &str) -> anyhow::Result<()> {
    ensure!(
        report.is_clean(),
        "{what}: the pipeline's own entries do not verify: {} leaks, {} black holes, {} loops, \
         {:?}",
        report.leaks_total,
        report.black_holes_total,
        report.loops_total,
        report.incomplete
    );
    Ok(())
}

fn measure(name: &'static str, net: &Net, goal_full: Duration) -> anyhow::Result<Row> {
    let fabric = net.fabric();
    let membership = round_robin(net);
    let before = tables(&fabric, &membership)?;
    let mut full = Vec::new();
    let mut load_and_full = Vec::new();
    let mut first = None;
    for _ in 0..RUNS {
        let started = Instant::now();
        let mut verifier = load(net, &membership, &before)?;
        let loaded = Instant::now();
        let report = verifier.verify();
        full.push(loaded.elapsed());
        load_and_full.push(started.elapsed());
        clean(&report, name)?;
        first = Some((verifier, report));
    }
    let (mut verifier, report) = first.context("no run")?;

    // One binding: the first host joins a second slice, then leaves it again.
    let (port, mac) = *net.hosts.first().context("no hosts")?;
    let extra = slice_name(1);
    let mut changed = membership.clone();
    changed.add_mac(&extra, port, mac);
    let after = tables(&fabric, &changed)?;
    let differs: Vec<u64> = after
        .keys()
        .filter(|dpid| before.get(dpid) != after.get(dpid))
        .copied()
        .collect();
    let mut incremental = Vec::new();
    let mut decode_and_incremental = Vec::new();
    let mut traced = 0;
    for run in 0..RUNS {
        let (state, held) = if run % 2 == 0 {
            (&changed, &after)
        } else {
            (&membership, &before)
        };
        let started = Instant::now();
        for dpid in &differs {
            if let Some(entries) = held.get(dpid) {
                verifier.set_tables(*dpid, Version::Of13, entries.clone());
            }
        }
        verifier.set_hosts(state, served(net, state));
        let decoded = Instant::now();
        let report = verifier.verify();
        incremental.push(decoded.elapsed());
        decode_and_incremental.push(started.elapsed());
        clean(&report, name)?;
        traced = traced.max(report.traced);
    }
    Ok(Row {
        name,
        goal_full,
        switches: report.switches,
        hosts: report.hosts,
        entries: report.entries,
        pairs: report.pairs_checked,
        traces: report.traced,
        full: median(full),
        load_and_full: median(load_and_full),
        incremental: median(incremental),
        decode_and_incremental: median(decode_and_incremental),
        incremental_traced: traced,
        changed_switches: differs.len(),
    })
}

pub(crate) fn run() -> anyhow::Result<Verification> {
    let mut rows = Vec::new();
    eprintln!("sliced-bench: verify, the Mininet tree 2×10");
    rows.push(measure(
        "Mininet tree depth 2 fanout 10",
        &Net::tree(10),
        Duration::from_millis(100),
    )?);
    eprintln!("sliced-bench: verify, the k=8 fat tree");
    rows.push(measure(
        "fat tree k=8",
        &Net::fat_tree(8),
        Duration::from_secs(1),
    )?);
    Ok(Verification { rows })
}

fn ms(duration: Duration) -> String {
    let ms = duration.as_secs_f64() * 1e3;
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 1.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{:.0} µs", ms * 1e3)
    }
}

fn verdict(took: Duration, goal: Duration) -> &'static str {
    if took < goal {
        "met"
    } else {
        "**missed**"
    }
}

/// `doc` with this part's section written in place of the one there (or before the
/// method notes); `doc` as it was when it is not a benchmarks page.
pub(crate) fn in_place(doc: &str, outcome: &Outcome<Verification>, stamp: &Stamp) -> String {
    if !crate::in_place::is_benchmarks_page(doc) {
        return doc.to_owned();
    }
    let mut text = String::new();
    section(&mut text, outcome, stamp);
    crate::in_place::splice(doc, HEADING_NUMBER, NEXT_HEADING, &text)
}

fn section(doc: &mut String, outcome: &Outcome<Verification>, stamp: &Stamp) {
    let _ = writeln!(doc, "{HEADING}\n");
    disturbed(doc, stamp.other_work, PART);
    let _ = writeln!(
        doc,
        "Run of {}: `{}`. Rerun this part alone with `cargo xtask bench --only verify`, \
         which rewrites this section in place and leaves the rest of the page as it was.\n",
        stamp.started,
        display_args(stamp.args)
    );
    let verification = match outcome {
        Ok(verification) => verification,
        Err(why) => return not_measured(doc, why),
    };
    let _ = writeln!(
        doc,
        "How long slice-verify (docs/verification.md) takes to prove the slices from the \
         tables the switches hold: every entry of sliced's OpenFlow 1.3 pipeline \
         (`pipeline::build`), encoded as a switch reports it in a flow-stats reply, decoded \
         and traced. In-process, single-threaded, no sockets. The hosts are spread round \
         robin over {SLICES} slices. *Full* is `Verifier::verify` on a verifier holding \
         every table; *decode + full* adds `set_tables` of every switch. *One binding* is \
         the first host joining a second slice (then leaving it, alternately): the tables \
         of the switches whose entries changed decoded again and the hosts given again \
         (*decode + one binding*), then `verify` (*one binding*), which compiles only the \
         entries that changed and traces and judges again only what the change can touch. \
         Every run must prove \
         isolation (no leak, black hole or loop) or the part fails. Median of {RUNS} runs.\n"
    );
    let _ = writeln!(
        doc,
        "| network | switches | hosts | entries | pairs checked | traces | full | decode + full \
         | goal | one binding: switches changed | traces run | one binding | goal \
         | decode + one binding |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---:|"
    );
    for row in &verification.rows {
        let _ = writeln!(
            doc,
            "| {} | {} | {} | {} | {} | {} | {} | {} | < {} {} | {} | {} | {} | < 10 ms {} | {} |",
            row.name,
            row.switches,
            row.hosts,
            thousands(row.entries as f64),
            thousands(row.pairs as f64),
            thousands(row.traces as f64),
            ms(row.full),
            ms(row.load_and_full),
            ms(row.goal_full),
            verdict(row.full, row.goal_full),
            row.changed_switches,
            row.incremental_traced,
            ms(row.incremental),
            verdict(row.incremental, Duration::from_millis(10)),
            ms(row.decode_and_incremental),
        );
    }
    let _ = writeln!(doc);
}

#[cfg(test)]
mod tests;

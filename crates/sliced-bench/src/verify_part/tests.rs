//! The verifier's oracle: sliced's real pipeline on random networks and slices must
//! verify with no violation and every pair judged, and a random tampering must show as
//! exactly the violation it makes.

use openflow::{Action, FlowMod, FlowModCommand, Match};
use slice_core::Host;
use slice_verify::{Endpoint, FrameKind};

use super::*;

/// xorshift64*: reproducible without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// 2 to 6 switches on a random spanning tree plus a few extra cables (so cycles), one
/// to three hosts on each; each host in zero, one or two of three slices.
fn random(seed: u64) -> (Net, Membership) {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let n = 2 + rng.below(5);
    let mut net = Net {
        switches: (1..=n as u64).collect(),
        ..Net::default()
    };
    let mut next_port = vec![1u32; n + 1];
    let cable = |net: &mut Net, a: usize, b: usize, next_port: &mut Vec<u32>| {
        let (pa, pb) = (next_port[a], next_port[b]);
        next_port[a] += 1;
        next_port[b] += 1;
        net.cable(PortId::new(a as u64, pa), PortId::new(b as u64, pb));
    };
    for s in 2..=n {
        let parent = 1 + rng.below(s - 1);
        cable(&mut net, parent, s, &mut next_port);
    }
    for _ in 0..rng.below(3) {
        let (a, b) = (1 + rng.below(n), 1 + rng.below(n));
        if a != b {
            cable(&mut net, a, b, &mut next_port);
        }
    }
    for (s, next) in next_port.iter_mut().enumerate().skip(1) {
        for _ in 0..1 + rng.below(3) {
            net.host(PortId::new(s as u64, *next));
            *next += 1;
        }
    }
    let mut membership = Membership::default();
    for i in 0..3 {
        membership.add_slice(&slice_name(i));
    }
    for (port, mac) in &net.hosts {
        for _ in 0..rng.below(3) {
            membership.add_mac(&slice_name(rng.below(3)), *port, *mac);
        }
    }
    (net, membership)
}

fn bound_hosts(net: &Net, membership: &Membership) -> Vec<Host> {
    net.hosts
        .iter()
        .map(|(port, mac)| Host {
            port: *port,
            mac: *mac,
        })
        .filter(|h| membership.is_member(h))
        .collect()
}

fn verify(net: &Net, membership: &Membership, tables: &BTreeMap<u64, Vec<FlowStats>>) -> Report {
    load(net, membership, tables).expect("loads").verify()
}

#[test]
fn the_pipeline_verifies_on_random_networks_and_slices() {
    for seed in 0..60 {
        let (net, membership) = random(seed);
        let tables = tables(&net.fabric(), &membership).expect("tables");
        let report = verify(&net, &membership, &tables);
        assert!(report.is_clean(), "seed {seed}: {report:#?}");
        let hosts = bound_hosts(&net, &membership);
        let same_port = hosts
            .iter()
            .flat_map(|a| hosts.iter().filter(move |b| a != *b && a.port == b.port))
            .count();
        // No leak and no black hole over every ordered pair: the verifier's relation is
        // shares_slice, pair by pair.
        assert_eq!(
            report.pairs_checked,
            hosts.len() * hosts.len().saturating_sub(1) - same_port,
            "seed {seed}"
        );
    }
}

#[test]
fn the_pipeline_verifies_on_the_bench_networks() {
    for net in [Net::tree(4), Net::fat_tree(4)] {
        let membership = round_robin(&net);
        let tables = tables(&net.fabric(), &membership).expect("tables");
        let report = verify(&net, &membership, &tables);
        assert!(report.is_clean(), "{report:#?}");
        assert_eq!(report.hosts, net.hosts.len());
    }
}

fn is_forward_to(entry: &FlowStats, mac: MacAddress) -> bool {
    let flow = entry.flow_mod(Version::Of13).expect("decodes");
    flow.table_id == pipeline::FORWARDING_TABLE && flow.r#match.eth_dst == Some(mac.octets())
}

#[test]
fn a_deleted_forward_entry_black_holes_exactly_its_pairs() {
    let mut tried = 0;
    for seed in 0..60 {
        let (net, membership) = random(seed);
        let hosts = bound_hosts(&net, &membership);
        let mut rng = Rng(seed + 7);
        let Some(victim) = hosts.get(rng.below(hosts.len())).copied() else {
            continue;
        };
        let mut tables = tables(&net.fabric(), &membership).expect("tables");
        let Some(held) = tables.get_mut(&victim.port.dpid) else {
            continue;
        };
        let before = held.len();
        held.retain(|entry| !is_forward_to(entry, victim.mac));
        if held.len() == before {
            continue;
        }
        let report = verify(&net, &membership, &tables);
        let mut expected: Vec<Host> = hosts
            .iter()
            .filter(|a| a.port != victim.port && membership.shares_slice(a, &victim))
            .copied()
            .collect();
        expected.sort();
        let mut found: Vec<Host> = report
            .black_holes
            .iter()
            .map(|v| {
                assert_eq!(v.frame, FrameKind::Unicast, "seed {seed}: {v:?}");
                assert_eq!(
                    v.dst,
                    Some(Endpoint::Host {
                        mac: victim.mac,
                        port: victim.port
                    })
                );
                match v.src {
                    Endpoint::Host { mac, port } => Host { port, mac },
                    Endpoint::Unbound { .. } => panic!("seed {seed}: {v:?}"),
                }
            })
            .collect();
        found.sort();
        assert_eq!(found, expected, "seed {seed}");
        assert!(
            report.leaks.is_empty() && report.loops.is_empty(),
            "seed {seed}: {report:#?}"
        );
        tried += 1;
    }
    assert!(
        tried > 20,
        "only {tried} networks had a forward entry to delete"
    );
}

#[test]
fn an_added_entry_between_two_slices_is_a_leak() {
    let mut tried = 0;
    for seed in 0..80 {
        let (net, membership) = random(seed);
        let hosts = bound_hosts(&net, &membership);
        // Two bound hosts on one switch that share no slice.
        let Some((a, b)) = hosts.iter().find_map(|a| {
            hosts
                .iter()
                .find(|b| {
                    b.port.dpid == a.port.dpid && b.port != a.port && !membership.shares_slice(a, b)
                })
                .map(|b| (*a, *b))
        }) else {
            continue;
        };
        let mut tables = tables(&net.fabric(), &membership).expect("tables");
        // What `ovs-ofctl add-flow` of an intruder would hold: a to b, straight out.
        let intruder = FlowMod {
            command: FlowModCommand::Add,
            r#match: Match {
                in_port: Some(a.port.port_no),
                eth_dst: Some(b.mac.octets()),
                ..Match::default()
            },
            priority: 1000,
            actions: vec![Action::Output {
                port: b.port.port_no,
                max_len: 0,
            }],
            ..FlowMod::default()
        };
        let entry = FlowStats::of_flow(Version::Of13, &intruder).expect("encodes");
        tables.entry(a.port.dpid).or_default().push(entry);
        let report = verify(&net, &membership, &tables);
        assert!(report.black_holes.is_empty(), "seed {seed}: {report:#?}");
        let leak = report
            .leaks
            .iter()
            .find(|v| {
                v.src
                    == Endpoint::Host {
                        mac: a.mac,
                        port: a.port,
                    }
            })
            .unwrap_or_else(|| panic!("seed {seed}: {report:#?}"));
        assert_eq!(
            leak.dst,
            Some(Endpoint::Host {
                mac: b.mac,
                port: b.port
            })
        );
        assert_eq!(leak.frame, FrameKind::Unicast);
        assert_eq!(leak.entries.len(), 1);
        assert_eq!(leak.entries[0].priority, 1000);
        for v in &report.leaks {
            // The only other senders it lets through are those faking a MAC at a's port.
            assert_eq!(
                v.dst,
                Some(Endpoint::Host {
                    mac: b.mac,
                    port: b.port
                }),
                "seed {seed}"
            );
            assert!(
                v.src
                    == Endpoint::Host {
                        mac: a.mac,
                        port: a.port
                    }
                    || v.src == Endpoint::Unbound { port: a.port },
                "seed {seed}: {v:?}"
            );
        }
        tried += 1;
    }
    assert!(tried > 10, "only {tried} networks had two such hosts");
}

#[test]
fn a_binding_change_reruns_few_traces_and_agrees_with_a_full_run() {
    let net = Net::fat_tree(4);
    let membership = round_robin(&net);
    let fabric = net.fabric();
    let before = tables(&fabric, &membership).expect("tables");
    let mut verifier = load(&net, &membership, &before).expect("loads");
    let full = verifier.verify();
    assert!(full.is_clean());
    let (port, mac) = net.hosts[0];
    let mut changed = membership.clone();
    changed.add_mac(&slice_name(1), port, mac);
    let after = tables(&fabric, &changed).expect("tables");
    for (dpid, entries) in &after {
        if before.get(dpid) != Some(entries) {
            verifier.set_tables(*dpid, Version::Of13, entries.clone());
        }
    }
    verifier.set_hosts(&changed, served(&net, &changed));
    let incremental = verifier.verify();
    assert!(incremental.is_clean(), "{incremental:#?}");
    assert!(
        incremental.traced < full.traced,
        "{} of {}",
        incremental.traced,
        full.traced
    );
    let fresh = verify(&net, &changed, &after);
    assert_eq!(fresh.traced, full.traced);
    assert_eq!(
        (
            &incremental.leaks,
            &incremental.black_holes,
            incremental.pairs_checked
        ),
        (&fresh.leaks, &fresh.black_holes, fresh.pairs_checked)
    );
    // Tampering after the change is still found incrementally.
    let dpid = port.dpid;
    let mut held = after[&dpid].clone();
    held.retain(|entry| {
        let flow = entry.flow_mod(Version::Of13).expect("decodes");
        !(flow.table_id == pipeline::ADMISSION_TABLE && flow.r#match.eth_src == Some(mac.octets()))
    });
    let held_copy = held.clone();
    verifier.set_tables(dpid, Version::Of13, held);
    let tampered = verifier.verify();
    assert!(!tampered.black_holes.is_empty(), "{tampered:#?}");
    assert!(tampered
        .black_holes
        .iter()
        .all(|v| v.src == Endpoint::Host { mac, port }));
    let mut from_scratch = BTreeMap::clone(&after);
    from_scratch.insert(dpid, held_copy);
    let fresh = verify(&net, &changed, &from_scratch);
    assert_eq!(
        (&tampered.leaks, &tampered.black_holes, &tampered.loops),
        (&fresh.leaks, &fresh.black_holes, &fresh.loops)
    );
}

/// A report as a full run gives it: `traced` says how much ran, which differs.
fn outcome(mut report: Report) -> Report {
    report.traced = 0;
    report
}

#[test]
fn incremental_runs_agree_with_full_ones_after_random_single_changes() {
    let mut changes = 0;
    for seed in 0..40 {
        let (net, mut membership) = random(seed);
        let fabric = net.fabric();
        let mut held = tables(&fabric, &membership).expect("tables");
        let mut verifier = load(&net, &membership, &held).expect("loads");
        verifier.verify();
        let mut rng = Rng(seed ^ 0x5eed);
        for step in 0..8 {
            let before = held.clone();
            match rng.below(4) {
                // A binding added or removed: sliced's pipeline for the new slices.
                0 | 1 => {
                    let (port, mac) = net.hosts[rng.below(net.hosts.len())];
                    let slice = slice_name(rng.below(3));
                    let host = Host { port, mac };
                    if membership.slices_of(&host).contains(&slice) {
                        membership.remove_mac(&slice, port, mac);
                    } else {
                        membership.add_mac(&slice, port, mac);
                    }
                    held = tables(&fabric, &membership).expect("tables");
                }
                // An entry deleted.
                2 => {
                    let dpid = net.switches[rng.below(net.switches.len())];
                    if let Some(list) = held.get_mut(&dpid).filter(|l| !l.is_empty()) {
                        let at = rng.below(list.len());
                        list.remove(at);
                    }
                }
                // An entry added that sends what it takes somewhere else.
                _ => {
                    let dpid = net.switches[rng.below(net.switches.len())];
                    let (_, mac) = net.hosts[rng.below(net.hosts.len())];
                    let intruder = FlowMod {
                        command: FlowModCommand::Add,
                        r#match: Match {
                            eth_dst: Some(mac.octets()),
                            ..Match::default()
                        },
                        priority: 500 + rng.below(1000) as u16,
                        actions: vec![Action::Output {
                            port: 1 + rng.below(4) as u32,
                            max_len: 0,
                        }],
                        ..FlowMod::default()
                    };
                    let entry = FlowStats::of_flow(Version::Of13, &intruder).expect("encodes");
                    held.entry(dpid).or_default().push(entry);
                }
            }
            for (dpid, entries) in &held {
                if before.get(dpid) != Some(entries) {
                    verifier.set_tables(*dpid, Version::Of13, entries.clone());
                }
            }
            verifier.set_hosts(&membership, served(&net, &membership));
            let incremental = verifier.verify();
            let full = verify(&net, &membership, &held);
            assert_eq!(
                outcome(incremental),
                outcome(full),
                "seed {seed} step {step}"
            );
            changes += 1;
        }
    }
    assert_eq!(changes, 320);
}

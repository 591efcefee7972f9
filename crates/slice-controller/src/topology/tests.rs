//! The topology: paths hop by hop, edge and link ports, links made, expired and gone with their ports.

use super::*;

fn ports(numbers: &[u32]) -> BTreeMap<u32, PortState> {
    numbers
        .iter()
        .map(|n| {
            (
                *n,
                PortState {
                    name: format!("eth{n}"),
                    live: true,
                },
            )
        })
        .collect()
}

fn p(dpid: u64, port_no: u32) -> PortId {
    PortId::new(dpid, port_no)
}

/// Both directions of a cable, as LLDP would find them.
fn cable(topology: &mut Topology, a: PortId, b: PortId) {
    let now = Instant::now();
    topology.link_seen(a, b, now);
    topology.link_seen(b, a, now);
}

/// s1 - s2 - s3 in a line; hosts on port 1 of each; links on ports 2 and 3.
fn line() -> Topology {
    let mut topology = Topology::default();
    for dpid in 1..=3 {
        topology.add_switch(dpid, Version::Of13, ports(&[1, 2, 3]));
    }
    cable(&mut topology, p(1, 2), p(2, 2));
    cable(&mut topology, p(2, 3), p(3, 2));
    topology
}

fn hop(dpid: u64, in_port: u32, out_port: u32) -> Hop {
    Hop {
        dpid,
        in_port,
        out_port,
    }
}

#[test]
fn a_path_on_one_switch_is_one_hop() {
    let mut topology = line();
    assert_eq!(
        topology.shortest_path(p(1, 1), p(1, 3)),
        Some(vec![hop(1, 1, 3)])
    );
}

#[test]
fn a_path_crosses_the_line_hop_by_hop() {
    let mut topology = line();
    assert_eq!(
        topology.shortest_path(p(1, 1), p(3, 1)),
        Some(vec![hop(1, 1, 2), hop(2, 2, 3), hop(3, 2, 1)])
    );
    assert_eq!(
        topology.shortest_path(p(3, 1), p(1, 1)),
        Some(vec![hop(3, 1, 2), hop(2, 3, 2), hop(1, 2, 1)])
    );
}

#[test]
fn edge_ports_are_live_ports_without_links() {
    let topology = line();
    let edges: Vec<PortId> = topology.edge_ports().collect();
    assert_eq!(edges, vec![p(1, 1), p(1, 3), p(2, 1), p(3, 1), p(3, 3)]);
    assert!(!topology.is_edge(p(2, 2)));
}

#[test]
fn ties_break_to_the_lowest_dpid_then_port() {
    // A square: 1 - 2 - 4 and 1 - 3 - 4, plus a second cable 1 - 2 on higher ports.
    let mut topology = Topology::default();
    for dpid in 1..=4 {
        topology.add_switch(dpid, Version::Of13, ports(&[1, 2, 3, 4]));
    }
    cable(&mut topology, p(1, 3), p(3, 2));
    cable(&mut topology, p(1, 4), p(2, 4));
    cable(&mut topology, p(1, 2), p(2, 2));
    cable(&mut topology, p(2, 3), p(4, 2));
    cable(&mut topology, p(3, 3), p(4, 3));
    let path = topology.shortest_path(p(1, 1), p(4, 1)).unwrap();
    assert_eq!(path, vec![hop(1, 1, 2), hop(2, 2, 3), hop(4, 2, 1)]);
    for _ in 0..10 {
        assert_eq!(topology.shortest_path(p(1, 1), p(4, 1)).unwrap(), path);
    }
}

/// Three switches with ports 1 to 3, cabled in a triangle on ports 2 and 3.
fn triangle() -> Topology {
    let mut topology = Topology::default();
    for dpid in 1..=3 {
        topology.add_switch(dpid, Version::Of13, ports(&[1, 2, 3]));
    }
    cable(&mut topology, p(1, 2), p(2, 2));
    cable(&mut topology, p(2, 3), p(3, 3));
    cable(&mut topology, p(1, 3), p(3, 2));
    topology
}

#[test]
fn a_port_going_down_removes_its_links_and_paths_go_around() {
    let mut topology = triangle();
    assert_eq!(topology.shortest_path(p(1, 1), p(2, 1)).unwrap().len(), 2);
    let removed = topology.update_port(
        p(1, 2),
        Some(PortState {
            name: "eth2".into(),
            live: false,
        }),
    );
    assert_eq!(removed.len(), 2, "both directions of the cable");
    assert_eq!(
        topology.shortest_path(p(1, 1), p(2, 1)),
        Some(vec![hop(1, 1, 3), hop(3, 2, 3), hop(2, 3, 1)])
    );
}

#[test]
fn no_path_between_islands_or_from_a_dead_port() {
    let mut topology = line();
    topology.add_switch(9, Version::Of10, ports(&[1]));
    assert_eq!(topology.shortest_path(p(1, 1), p(9, 1)), None);
    assert_eq!(topology.shortest_path(p(1, 7), p(2, 1)), None);
}

#[test]
fn lldp_through_a_dead_port_makes_no_link() {
    let mut topology = line();
    let down = PortState {
        name: "eth2".into(),
        live: false,
    };
    let removed = topology.update_port(p(2, 2), Some(down));
    assert_eq!(removed.len(), 2, "both directions of the link go");
    let now = Instant::now();
    assert_eq!(topology.link_seen(p(1, 2), p(2, 2), now), (false, None));
    assert_eq!(topology.link_seen(p(2, 2), p(1, 2), now), (false, None));
    assert_eq!(topology.links().count(), 2);
}

#[test]
fn links_expire_unless_seen_again() {
    let mut topology = line();
    let later = Instant::now() + std::time::Duration::from_secs(5);
    for _ in 0..2 {
        topology.start_probe_round();
    }
    topology.link_seen(p(1, 2), p(2, 2), later);
    let age = |_, _| std::time::Duration::from_secs(4);
    assert!(
        topology.expire_links(later, 2, age, |_, _| true).is_empty(),
        "old by the clock, but only one round missed"
    );
    topology.start_probe_round();
    let expired = topology.expire_links(later, 2, age, |_, _| true);
    assert_eq!(expired.len(), 3);
    assert_eq!(
        topology.links().collect::<Vec<_>>(),
        vec![Link {
            src: p(1, 2),
            dst: p(2, 2)
        }]
    );
    assert!(!topology.is_edge(p(1, 2)));
    assert!(
        !topology.is_edge(p(2, 2)),
        "the far end of a one-way link is no edge"
    );
}

#[test]
fn removing_a_switch_removes_its_links() {
    let mut topology = line();
    let removed = topology.remove_switch(2);
    assert_eq!(removed.len(), 4);
    assert_eq!(topology.links().count(), 0);
    assert!(
        topology.is_edge(p(1, 2)),
        "an orphaned link port becomes an edge"
    );
}

#[test]
fn a_link_whose_source_moves_replaces_the_old_one() {
    let mut topology = line();
    let (new, replaced) = topology.link_seen(p(1, 2), p(3, 3), Instant::now());
    assert!(new);
    assert_eq!(
        replaced,
        Some(Link {
            src: p(1, 2),
            dst: p(2, 2)
        })
    );
}

#[test]
fn a_sources_tree_is_reused_for_every_destination() {
    let mut topology = line();
    assert_eq!(
        topology.shortest_path(p(1, 1), p(3, 1)),
        Some(vec![hop(1, 1, 2), hop(2, 2, 3), hop(3, 2, 1)])
    );
    assert_eq!(topology.trees.searches, 1);
    assert_eq!(
        topology.shortest_path(p(1, 3), p(2, 1)),
        Some(vec![hop(1, 3, 2), hop(2, 2, 1)])
    );
    assert_eq!(topology.shortest_path(p(1, 1), p(3, 3)).unwrap().len(), 3);
    assert_eq!(topology.trees.searches, 1, "same source switch, same tree");
    topology.shortest_path(p(3, 1), p(1, 1));
    assert_eq!(topology.trees.searches, 2, "another source grows its own");
    // LLDP confirming a known link changes nothing.
    topology.link_seen(p(1, 2), p(2, 2), Instant::now());
    topology.shortest_path(p(1, 1), p(2, 1));
    assert_eq!(topology.trees.searches, 2);
}

#[test]
fn a_link_going_down_or_up_replaces_the_trees() {
    let mut topology = triangle();
    let direct = vec![hop(1, 1, 2), hop(2, 2, 1)];
    assert_eq!(
        topology.shortest_path(p(1, 1), p(2, 1)),
        Some(direct.clone())
    );
    let down = PortState {
        name: "eth2".into(),
        live: false,
    };
    topology.update_port(p(2, 2), Some(down));
    assert_eq!(
        topology.shortest_path(p(1, 1), p(2, 1)),
        Some(vec![hop(1, 1, 3), hop(3, 2, 3), hop(2, 3, 1)]),
        "around the dead link"
    );
    let up = PortState {
        name: "eth2".into(),
        live: true,
    };
    topology.update_port(p(2, 2), Some(up));
    assert_eq!(
        topology.shortest_path(p(1, 1), p(2, 1)).unwrap().len(),
        3,
        "a live port is no link until LLDP finds one"
    );
    cable(&mut topology, p(1, 2), p(2, 2));
    assert_eq!(topology.shortest_path(p(1, 1), p(2, 1)), Some(direct));
    // Down, and the cable found again; the port coming up changed no link.
    assert_eq!(topology.trees.searches, 3);
    topology.remove_switch(3);
    assert_eq!(topology.shortest_path(p(1, 1), p(3, 1)), None);
}

#[test]
fn the_cache_holds_at_most_its_bound_and_drops_the_least_recently_used() {
    let mut topology = Topology::default();
    for dpid in 1..=5 {
        topology.add_switch(dpid, Version::Of13, ports(&[1, 2, 3]));
    }
    for dpid in 1..5 {
        cable(&mut topology, p(dpid, 3), p(dpid + 1, 2));
    }
    // Room for the trees of two sources on five switches.
    topology.trees.entries = 2 * 5;
    for source in [1, 2, 1, 3, 4, 5, 4] {
        topology.shortest_path(p(source, 1), p(6 - source, 1));
        assert!(topology.trees.cached <= 2);
        assert!(topology.trees.trees.iter().flatten().count() <= 2);
    }
    // Cached now: 5 and 4 (4 used last). 5 stays, 1 is grown again.
    let searches = topology.trees.searches;
    topology.shortest_path(p(5, 1), p(1, 1));
    assert_eq!(topology.trees.searches, searches);
    topology.shortest_path(p(1, 1), p(5, 1));
    assert_eq!(topology.trees.searches, searches + 1);
    assert_eq!(topology.trees.cached, 2);
}

/// The search as it was before trees were cached: from scratch per pair, stopping at
/// the destination.
fn path_from_scratch(topology: &Topology, from: PortId, to: PortId) -> Option<Vec<Hop>> {
    if !topology.is_live(from) || !topology.is_live(to) {
        return None;
    }
    if from.dpid == to.dpid {
        return Some(vec![hop(from.dpid, from.port_no, to.port_no)]);
    }
    let mut parent: HashMap<u64, (u64, u32, u32)> = HashMap::new();
    let mut queue = std::collections::VecDeque::from([from.dpid]);
    parent.insert(from.dpid, (from.dpid, 0, 0));
    while let Some(dpid) = queue.pop_front() {
        if dpid == to.dpid {
            break;
        }
        for &(next, out_port, in_port) in topology.adjacency.get(&dpid).into_iter().flatten() {
            if let std::collections::hash_map::Entry::Vacant(entry) = parent.entry(next) {
                entry.insert((dpid, out_port, in_port));
                queue.push_back(next);
            }
        }
    }
    parent.get(&to.dpid)?;
    let mut hops = Vec::new();
    let (mut dpid, mut out_port) = (to.dpid, to.port_no);
    while dpid != from.dpid {
        let (previous, previous_out, in_port) = parent[&dpid];
        hops.push(hop(dpid, in_port, out_port));
        dpid = previous;
        out_port = previous_out;
    }
    hops.push(hop(from.dpid, from.port_no, out_port));
    hops.reverse();
    Some(hops)
}

#[test]
fn cached_trees_choose_the_paths_a_search_from_scratch_chooses() {
    // Random graphs with parallel cables and ties, cables failing one by one.
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut random = move |below: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % below
    };
    for _ in 0..20 {
        let mut topology = Topology::default();
        let switches = 2 + random(12);
        for dpid in 1..=switches {
            topology.add_switch(dpid, Version::Of13, ports(&(1..=9).collect::<Vec<_>>()));
        }
        let mut cables = Vec::new();
        for _ in 0..random(3 * switches) {
            let (a, b) = (1 + random(switches), 1 + random(switches));
            let (a, b) = (p(a, 2 + random(8) as u32), p(b, 2 + random(8) as u32));
            if a != b && topology.link_from(a).is_none() && topology.link_from(b).is_none() {
                cable(&mut topology, a, b);
                cables.push(a);
            }
        }
        loop {
            for _ in 0..30 {
                let (from, to) = (p(1 + random(switches), 1), p(1 + random(switches), 1));
                let expected = path_from_scratch(&topology, from, to);
                assert_eq!(topology.shortest_path(from, to), expected);
            }
            let Some(failing) = cables.pop() else { break };
            let down = PortState {
                name: "eth".into(),
                live: false,
            };
            topology.update_port(failing, Some(down));
        }
    }
}

/// A silent link's silence is its own only when most of its neighbours (the other links
/// out of its sender, the other links into its receiver) were confirmed two rounds or
/// more after it: one neighbour heard among many proves nothing of a stalled switch.
#[test]
fn silence_is_a_link_s_own_only_when_most_of_its_neighbours_were_heard_since() {
    // Switch 1's ports 1 to 4 cabled to switches 2 to 5; switch 2's ports 1 to 4 to
    // switches 1, 3, 4 and 5 (its ports 11 to 13 on their side).
    let mut topology = Topology::default();
    for dpid in 1..=5 {
        topology.add_switch(dpid, Version::Of13, ports(&[1, 2, 3, 4, 11, 12, 13]));
    }
    for far in 2..=5 {
        cable(&mut topology, p(1, far as u32 - 1), p(far, 1));
    }
    for (port, far) in [(2, 3), (3, 4), (4, 5)] {
        cable(&mut topology, p(2, port), p(far, 10 + port));
    }
    let (silent, at) = (p(1, 1), p(2, 1));
    assert!(
        !topology.neighbours_heard_since(silent, at, 0),
        "nothing heard since"
    );
    let heard = |topology: &mut Topology, links: &[(PortId, PortId)]| {
        for _ in 0..NEIGHBOURS_LATER_BY {
            topology.start_probe_round();
        }
        for (src, dst) in links {
            topology.link_seen(*src, *dst, Instant::now());
        }
    };
    // One link out of switch 1 and one into switch 2 heard again: one of three each.
    heard(&mut topology, &[(p(1, 2), p(3, 1)), (p(3, 12), p(2, 2))]);
    assert!(!topology.neighbours_heard_since(silent, at, 0));
    // Two of three out of switch 1, still one of three into switch 2.
    heard(&mut topology, &[(p(1, 3), p(4, 1))]);
    assert!(!topology.neighbours_heard_since(silent, at, 0));
    heard(&mut topology, &[(p(4, 13), p(2, 3))]);
    assert!(topology.neighbours_heard_since(silent, at, 0));
    // Heard, but not two rounds after the silent link's last confirmation.
    let last = topology.probe_round - 1;
    assert!(!topology.neighbours_heard_since(silent, at, last));
    // A switch with no other link has no neighbour to hear.
    let mut pair = Topology::default();
    for dpid in 1..=2 {
        pair.add_switch(dpid, Version::Of13, ports(&[1]));
    }
    cable(&mut pair, p(1, 1), p(2, 1));
    pair.start_probe_round();
    pair.start_probe_round();
    assert!(!pair.neighbours_heard_since(p(1, 1), p(2, 1), 0));
}

//! Path computation and rerouting at data-centre scale, on the engine's own APIs.
//!
//! Two graphs: a k=16 fat-tree (64 core, 128 aggregation and 128 edge switches, 2,048
//! cables, 8 hosts per edge switch) and a connected random graph of 1,000 switches (a
//! random spanning tree plus random extra cables, 2,000 cables in all, one host per
//! switch). For each:
//!
//! - `shortest_path`: `Topology::shortest_path` between two hosts far apart;
//! - `route`: `Engine::packet_in` of a unicast between two known hosts that share a slice
//!   (path search, one flow per switch, the packet-out), as a flow setup costs the engine;
//! - `link_failure_withdraw`: with 1,000 host pairs routed, the cable that carries the most
//!   of them goes down (`Engine::port_changed`): the engine finds and deletes those paths;
//! - `link_failure_reroute`: the same, plus the next packet of every affected pair, so
//!   that each gets a new path around the failure: the full reroute.
//!
//! The link comes back between iterations (outside the timing) and the pairs are routed
//! back onto it, so every iteration fails the same, fully loaded cable. sliced-bench runs
//! this with `cargo bench -p slice-controller --bench routing` and reads the lines starting
//! with `routing-info:` that describe each graph.

use std::collections::{BTreeMap, HashMap};
use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion};
use openflow::Version;
use slice_controller::{Engine, EngineConfig, Frame, PortState, SwitchProfile, Topology};
use slice_core::{MacAddress, Membership, PortId, SliceName};

/// A network to build: switches with their port counts, cables, and host ports.
struct Graph {
    name: &'static str,
    ports: BTreeMap<u64, u32>,
    cables: Vec<(PortId, PortId)>,
    hosts: Vec<PortId>,
}

/// splitmix64: a small deterministic generator, so every run builds the same graphs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The k-ary fat-tree: k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores.
/// Edge switch ports 1..=k/2 hold hosts, k/2+1..=k go up; aggregation ports 1..=k/2 go
/// down, the rest up; core port p+1 leads to pod p.
fn fat_tree(k: u32) -> Graph {
    let half = k / 2;
    let core = |c: u32| 0x1_0000 + u64::from(c);
    let agg = |pod: u32, i: u32| 0x2_0000 + u64::from(pod * half + i);
    let edge = |pod: u32, i: u32| 0x3_0000 + u64::from(pod * half + i);
    let mut graph = Graph {
        name: "fat_tree_k16",
        ports: BTreeMap::new(),
        cables: Vec::new(),
        hosts: Vec::new(),
    };
    for c in 0..half * half {
        graph.ports.insert(core(c), k);
    }
    for pod in 0..k {
        for i in 0..half {
            graph.ports.insert(agg(pod, i), k);
            graph.ports.insert(edge(pod, i), k);
            for host in 1..=half {
                graph.hosts.push(PortId::new(edge(pod, i), host));
            }
            for j in 0..half {
                // Edge i's uplink j goes to aggregation switch j of the pod.
                graph.cables.push((
                    PortId::new(edge(pod, i), half + 1 + j),
                    PortId::new(agg(pod, j), i + 1),
                ));
                // Aggregation i's uplink j goes to core i * k/2 + j.
                graph.cables.push((
                    PortId::new(agg(pod, i), half + 1 + j),
                    PortId::new(core(i * half + j), pod + 1),
                ));
            }
        }
    }
    graph
}

/// A connected random graph: switch i > 1 is cabled to a random earlier switch, then
/// random extra cables (no self-loops, no duplicates) up to `cables`. Port 1 holds a host.
fn random_graph(switches: u64, cables: usize) -> Graph {
    let mut rng = Rng(0x5eed_1000);
    let mut next_port: HashMap<u64, u32> = (1..=switches).map(|s| (s, 2)).collect();
    let mut seen = std::collections::HashSet::new();
    let mut graph = Graph {
        name: "random_1000",
        ports: BTreeMap::new(),
        cables: Vec::new(),
        hosts: (1..=switches).map(|s| PortId::new(s, 1)).collect(),
    };
    let mut cable = |a: u64, b: u64, graph: &mut Graph| {
        if a == b || !seen.insert((a.min(b), a.max(b))) {
            return false;
        }
        let mut take = |s: u64| {
            let port = next_port
                .get_mut(&s)
                .expect("every switch has a port counter");
            *port += 1;
            PortId::new(s, *port - 1)
        };
        let (pa, pb) = (take(a), take(b));
        graph.cables.push((pa, pb));
        true
    };
    for s in 2..=switches {
        let earlier = 1 + rng.below(s as usize - 1) as u64;
        cable(s, earlier, &mut graph);
    }
    while graph.cables.len() < cables {
        let a = 1 + rng.below(switches as usize) as u64;
        let b = 1 + rng.below(switches as usize) as u64;
        cable(a, b, &mut graph);
    }
    for (s, port) in next_port {
        graph.ports.insert(s, port - 1);
    }
    graph
}

fn port_map(count: u32) -> BTreeMap<u32, PortState> {
    (1..=count)
        .map(|n| {
            (
                n,
                PortState {
                    name: format!("eth{n}"),
                    live: true,
                },
            )
        })
        .collect()
}

fn host_mac(index: usize) -> MacAddress {
    let i = index as u32;
    MacAddress::from([0x02, 0, (i >> 16) as u8, (i >> 8) as u8, i as u8, 1])
}

fn topology(graph: &Graph) -> Topology {
    let mut topology = Topology::default();
    for (dpid, ports) in &graph.ports {
        topology.add_switch(*dpid, Version::Of13, port_map(*ports));
    }
    let now = Instant::now();
    for (a, b) in &graph.cables {
        topology.link_seen(*a, *b, now);
        topology.link_seen(*b, *a, now);
    }
    topology
}

fn frame(src: MacAddress, dst: MacAddress) -> Frame {
    Frame {
        dst,
        src,
        probe: None,
        data: Bytes::new(),
    }
}

/// Both directions of a cable, as LLDP finds them.
fn discover(engine: &mut Engine, a: PortId, b: PortId, now: Instant) {
    for (from, at) in [(a, b), (b, a)] {
        let lldp = Frame {
            dst: MacAddress::from([0x01, 0x80, 0xc2, 0, 0, 0x0e]),
            src: MacAddress::from([0x02, 0, 0, 0, 0, 0xfe]),
            probe: Some(engine.probe_from(from, now)),
            data: Bytes::new(),
        };
        engine.packet_in(at.dpid, at.port_no, lldp, now);
    }
}

/// An engine that knows the whole graph and every host, all hosts in one slice, with
/// `pairs` host pairs routed. Returns the engine and the pairs as (src index, dst index).
fn engine(graph: &Graph, pairs: usize) -> (Engine, Vec<(usize, usize)>) {
    let slice: SliceName = "all".parse().expect("a valid slice name");
    let mut membership = Membership::default();
    membership.add_slice(&slice);
    for (index, port) in graph.hosts.iter().enumerate() {
        membership.add_mac(&slice, *port, host_mac(index));
    }
    let config = EngineConfig {
        link_max_age: Duration::from_secs(3600),
        ..EngineConfig::default()
    };
    let mut engine = Engine::new(config, membership);
    let now = Instant::now();
    for (dpid, ports) in &graph.ports {
        engine.switch_connected(
            *dpid,
            SwitchProfile {
                needs_table_miss_flow: true,
                protocol: Version::Of13,
                pipeline: false,
            },
            port_map(*ports),
            now,
        );
    }
    for (a, b) in &graph.cables {
        discover(&mut engine, *a, *b, now);
    }
    let broadcast = MacAddress::from([0xff; 6]);
    for (index, port) in graph.hosts.iter().enumerate() {
        engine.packet_in(
            port.dpid,
            port.port_no,
            frame(host_mac(index), broadcast),
            now,
        );
    }
    let mut rng = Rng(0xfa11_0001);
    // The first pair is the one the `route` benchmark sends again and again.
    let mut routed = vec![(0, graph.hosts.len() - 1)];
    send(&mut engine, graph, 0, graph.hosts.len() - 1, now);
    while routed.len() < pairs {
        let (a, b) = (rng.below(graph.hosts.len()), rng.below(graph.hosts.len()));
        if a != b {
            send(&mut engine, graph, a, b, now);
            routed.push((a, b));
        }
    }
    engine.take_commands();
    (engine, routed)
}

fn send(engine: &mut Engine, graph: &Graph, src: usize, dst: usize, now: Instant) {
    let port = graph.hosts[src];
    engine.packet_in(
        port.dpid,
        port.port_no,
        frame(host_mac(src), host_mac(dst)),
        now,
    );
}

/// The cable (by one of its ports, and its far end) that carries the most paths, and the
/// pairs whose paths use it in either direction.
fn busiest_cable(
    engine: &Engine,
    graph: &Graph,
    pairs: &[(usize, usize)],
) -> (PortId, PortId, Vec<(usize, usize)>) {
    let peer: HashMap<PortId, PortId> = graph
        .cables
        .iter()
        .flat_map(|(a, b)| [(*a, *b), (*b, *a)])
        .collect();
    let mut load: HashMap<(PortId, PortId), usize> = HashMap::new();
    for path in engine.paths() {
        // hops are [in, out, in, out, ...]: each out followed by the next switch's in.
        for step in path.hops[1..].chunks(2) {
            if let [out, next_in] = step {
                let key = if out < next_in {
                    (*out, *next_in)
                } else {
                    (*next_in, *out)
                };
                *load.entry(key).or_default() += 1;
            }
        }
    }
    let ((a, b), _) = load
        .into_iter()
        .max_by_key(|(key, count)| (*count, std::cmp::Reverse(*key)))
        .expect("some path crosses a cable");
    assert_eq!(peer.get(&a), Some(&b), "a path step follows a cable");
    let uses = |path: &slice_controller::PathView| {
        path.hops
            .windows(2)
            .any(|w| (w[0] == a && w[1] == b) || (w[0] == b && w[1] == a))
    };
    let affected_macs: Vec<(MacAddress, MacAddress)> = engine
        .paths()
        .into_iter()
        .filter(|path| uses(path))
        .map(|path| (path.src, path.dst))
        .collect();
    let affected = pairs
        .iter()
        .copied()
        .filter(|(s, d)| affected_macs.contains(&(host_mac(*s), host_mac(*d))))
        .collect();
    (a, b, affected)
}

fn link_down(engine: &mut Engine, port: PortId) {
    engine.port_changed(
        port,
        Some(PortState {
            name: format!("eth{}", port.port_no),
            live: false,
        }),
        Instant::now(),
    );
}

/// Brings the cable back and routes the affected pairs onto it again (untimed).
fn restore(
    engine: &mut Engine,
    graph: &Graph,
    (a, b): (PortId, PortId),
    affected: &[(usize, usize)],
) {
    let now = Instant::now();
    engine.port_changed(
        a,
        Some(PortState {
            name: format!("eth{}", a.port_no),
            live: true,
        }),
        now,
    );
    discover(engine, a, b, now);
    for (s, d) in affected {
        send(engine, graph, *s, *d, now);
    }
    engine.take_commands();
}

fn bench_graph(c: &mut Criterion, graph: &Graph) {
    let pairs = 1000;
    let mut topology = topology(graph);
    let (from, to) = (graph.hosts[0], graph.hosts[graph.hosts.len() - 1]);
    let far = topology
        .shortest_path(from, to)
        .expect("the graph is connected");
    let (mut engine, routed) = engine(graph, pairs);
    let (a, b, affected) = busiest_cable(&engine, graph, &routed);
    let mean_hops = engine
        .paths()
        .iter()
        .map(|path| path.hops.len() / 2)
        .sum::<usize>() as f64
        / engine.paths().len() as f64;
    println!(
        "routing-info: {} switches={} cables={} hosts={} far_path_switches={} \
         routed_pairs={} mean_path_switches={:.2} failed_cable={}-{} affected_paths={}",
        graph.name,
        graph.ports.len(),
        graph.cables.len(),
        graph.hosts.len(),
        far.len(),
        engine.paths().len(),
        mean_hops,
        a,
        b,
        affected.len()
    );

    let mut group = c.benchmark_group(graph.name);
    group.bench_function("shortest_path", |bench| {
        bench.iter(|| black_box(topology.shortest_path(black_box(from), black_box(to))))
    });

    let (src, dst) = (0, graph.hosts.len() - 1);
    group.bench_function("route", |bench| {
        let now = Instant::now();
        bench.iter(|| {
            send(&mut engine, graph, src, dst, now);
            black_box(engine.take_commands())
        })
    });

    group.bench_function("link_failure_withdraw", |bench| {
        bench.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let started = Instant::now();
                link_down(&mut engine, a);
                black_box(engine.take_commands());
                timed += started.elapsed();
                restore(&mut engine, graph, (a, b), &affected);
            }
            timed
        })
    });

    group.bench_function("link_failure_reroute", |bench| {
        bench.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let started = Instant::now();
                link_down(&mut engine, a);
                let now = Instant::now();
                for (s, d) in &affected {
                    send(&mut engine, graph, *s, *d, now);
                }
                black_box(engine.take_commands());
                timed += started.elapsed();
                restore(&mut engine, graph, (a, b), &affected);
            }
            timed
        })
    });
    group.finish();
}

fn routing(c: &mut Criterion) {
    bench_graph(c, &fat_tree(16));
    bench_graph(c, &random_graph(1000, 2000));
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = routing
}
criterion_main!(benches);

//! The registry of the lab's scenarios, in the order they run: the one module that knows
//! every scenario. Each runs on a fresh sliced and a fresh network, once per OpenFlow
//! version, and proves one claim of the product with real switches and pings; each lives
//! in its own file (or its family's), which uses the fixture (`stage`) and no other
//! scenario.

use super::stage::Stage;

pub(super) struct Scenario {
    pub name: &'static str,
    pub about: &'static str,
    pub run: fn(&mut Stage) -> anyhow::Result<()>,
    /// Part of a run that names no scenario (`failover` is a measurement, run by `cargo
    /// xtask failover`).
    pub default_run: bool,
    /// Runs a cluster, so needs the `etcd` binary.
    pub needs_etcd: bool,
    /// Runs Mininet (`contrib/mininet/sliced_mininet.py`), so needs `mininet` and `fping`.
    pub needs_mininet: bool,
}

pub(super) const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "no-slices",
        about: "without slices no host reaches another (line of three)",
        run: super::isolation::no_slices,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "slice-tool",
        about: "two hosts put in a slice with the slice tool reach each other, a third neither",
        run: super::isolation::slice_tool,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "rest-isolation",
        about: "two slices made over REST are isolated, broadcasts included (tcpdump)",
        run: super::isolation::rest_isolation,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "tls",
        about: "rest-isolation with Open vSwitch connected over TLS (ssl:, set-ssl) only",
        run: super::isolation::tls,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "withdrawal",
        about: "removing a MAC, a port or a slice stops traffic and removes its flows",
        run: super::withdrawal::withdrawal,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "reroute",
        about: "cutting the link a path uses: traffic resumes over another (full mesh)",
        run: super::reroute::reroute,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "forged-lldp",
        about: "hosts forging or relaying LLDP make no link and break no isolation",
        run: super::isolation::forged_lldp,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "fake-link",
        about: "two unbound hosts relaying genuine LLDP (and every frame) between their \
                ports: no link past the discovery window or off a declared fabric; on 1.3 \
                a link relayed within the window goes on its first unbound unicast frame",
        run: super::fake_link::fake_link,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "packet-in-meter",
        about: "on 1.3 the table-miss flow passes a meter in the switch; hosts still reach",
        run: super::meter::packet_in_meter,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "tag-collision",
        about: "two slices whose names hash alike (the pipeline's old slice-set tag): \
                both pairs reach across the cable, neither reaches the other",
        run: super::hostile::tag_collision,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "lldp-flood",
        about: "a host floods LLDP, then random sources, at 8000 frames/s: the cable never \
                expires and a ping across it every 50 ms loses nothing",
        run: super::hostile::lldp_flood,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "table-full",
        about: "a table that refuses entries past a limit: refusals counted, slices still \
                apart, every pair reaches its peer once the limit is lifted",
        run: super::tables::table_full,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "bundles",
        about: "a bulk write reaches Open vSwitch as bundles, no FLOW_MOD of its own, and \
                leaves every table right and the slices apart",
        run: super::bundles::bundles,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "tamper",
        about: "a leak planted with ovs-ofctl and a deleted forwarding entry are each \
                reported by the verification within one period, with the entry, and repaired",
        run: super::tamper::tamper,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "restart",
        about: "kill -9 and restart of sliced: a ping every 20 ms loses nothing, its flows \
                stay, a pair forbidden meanwhile loses its flows",
        run: super::restart::restart,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "daemon",
        about: "operator flow: sliced -d, slices with the tool, ping, SIGTERM via the pid file",
        run: super::daemon::daemon,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "random",
        about: "seeded random slices, bindings, cable cuts and restarts; every pair's ping \
                matches the slices after each step (MESH4X2)",
        run: super::random::random,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "random-cluster",
        about: "random on three sliced and three etcd members, kill -9 of the master among \
                the operations (`cargo xtask soak --cluster` runs it long)",
        run: super::random::random_cluster,
        default_run: true,
        needs_etcd: true,
        needs_mininet: false,
    },
    Scenario {
        name: "cluster",
        about: "three etcd, three sliced: shared writes, racing creates, kill -9 of the \
                master under traffic, etcd member and quorum lost and back",
        run: super::cluster::cluster,
        default_run: true,
        needs_etcd: true,
        needs_mininet: false,
    },
    Scenario {
        name: "failover",
        about: "the master killed --runs times: time to new master, packets lost, new \
                pair's time; REST latency etcd vs sled (cargo xtask failover)",
        run: super::cluster::failover_report,
        default_run: false,
        needs_etcd: true,
        needs_mininet: false,
    },
    Scenario {
        name: "pause-master",
        about: "the master paused (SIGSTOP) for three leases, then resumed: a standby \
                takes over, no packet of an established pair lost, writes go on, the \
                woken instance stands by",
        run: super::faults::pause_master,
        default_run: true,
        needs_etcd: true,
        needs_mininet: false,
    },
    Scenario {
        name: "standby-wakes",
        about: "two sliced with different PACKET_IN meters; the standby, then the master, \
                paused until Open vSwitch drops it and woken: from Open vSwitch's own \
                message log, it writes nothing, the master's meter stays, it ends slave",
        run: super::standby_wakes::standby_wakes,
        default_run: true,
        needs_etcd: true,
        needs_mininet: false,
    },
    Scenario {
        name: "etcd-cut",
        about: "the master cut off from etcd (a proxy black-holes it) for three leases, \
                then restored: a standby takes over, the cut one answers 503 and stands \
                by, no packet of an established pair lost",
        run: super::faults::etcd_cut,
        default_run: true,
        needs_etcd: true,
        needs_mininet: false,
    },
    Scenario {
        name: "mininet-tree",
        about: "Mininet's tree,depth=2,fanout=10 (100 hosts) with sliced_mininet.py: every \
                cable found, fping over IPv4 and IPv6 as the slices say, a cut, a host out",
        run: super::mininet::tree,
        default_run: true,
        needs_etcd: false,
        needs_mininet: true,
    },
    Scenario {
        name: "mininet-linear",
        about: "the same on Mininet's linear,20, cut in the middle",
        run: super::mininet::linear,
        default_run: true,
        needs_etcd: false,
        needs_mininet: true,
    },
    Scenario {
        name: "mininet-torus",
        about: "the same on Mininet's torus,3,3: a cut cable on a pair's shortest path \
                reroutes",
        run: super::mininet::torus,
        default_run: true,
        needs_etcd: false,
        needs_mininet: true,
    },
    Scenario {
        name: "mininet-netns",
        about: "sliced_mininet.py in a second network namespace (as in a container) with \
                an Open vSwitch there: refuses over leftover slices, names them; with \
                --replace it replaces them, comes up and pings as it printed",
        run: super::mininet_netns::mininet_netns,
        default_run: true,
        needs_etcd: false,
        needs_mininet: true,
    },
    Scenario {
        name: "readme-cluster",
        about: "the README's three-node cluster block run as written (bash, in a namespace \
                with an Open vSwitch of its own): one cluster, br0 on all three, the slice \
                on every instance, a new master after kill -9",
        run: super::readme_cluster::readme_cluster,
        default_run: true,
        needs_etcd: true,
        needs_mininet: false,
    },
];

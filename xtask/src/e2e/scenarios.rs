//! The scenarios of the lab. Each runs on a fresh sliced and a fresh network, once per
//! OpenFlow version, and proves one claim of the product with real switches and pings.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use serde_json::json;

use super::net::{self, Port};
use super::ovs::OfVersion;
use super::stage::Stage;
use super::topologies::{LINE3, MESH4, PAIR, SINGLE};

pub struct Scenario {
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

pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "no-slices",
        about: "without slices no host reaches another (line of three)",
        run: no_slices,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "slice-tool",
        about: "two hosts put in a slice with the slice tool reach each other, a third neither",
        run: slice_tool,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "rest-isolation",
        about: "two slices made over REST are isolated, broadcasts included (tcpdump)",
        run: rest_isolation,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "tls",
        about: "rest-isolation with Open vSwitch connected over TLS (ssl:, set-ssl) only",
        run: tls,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "withdrawal",
        about: "removing a MAC, a port or a slice stops traffic and removes its flows",
        run: withdrawal,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "reroute",
        about: "cutting the link a path uses: traffic resumes over another (full mesh)",
        run: reroute,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "forged-lldp",
        about: "hosts forging or relaying LLDP make no link and break no isolation",
        run: forged_lldp,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "packet-in-meter",
        about: "on 1.3 the table-miss flow passes a meter in the switch; hosts still reach",
        run: packet_in_meter,
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
        name: "restart",
        about: "kill -9 and restart of sliced: a ping every 20 ms loses nothing, its flows \
                stay, a pair forbidden meanwhile loses its flows",
        run: restart,
        default_run: true,
        needs_etcd: false,
        needs_mininet: false,
    },
    Scenario {
        name: "daemon",
        about: "operator flow: sliced -d, slices with the tool, ping, SIGTERM via the pid file",
        run: daemon,
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
];

fn mac(host: u8) -> String {
    net::mac(host)
}

/// In the scenarios with two slices, hosts 1 and 2 are red, 3 and 4 blue.
fn slice_of(host: u8) -> &'static str {
    if host <= 2 {
        "red"
    } else {
        "blue"
    }
}

/// No red host reaches a blue one by ping, nor the other way round.
fn red_and_blue_isolated(stage: &mut Stage) -> anyhow::Result<()> {
    let across: Vec<(u8, u8)> = [(1, 3), (1, 4), (2, 3), (2, 4)]
        .into_iter()
        .flat_map(|(a, b)| [(a, b), (b, a)])
        .collect();
    stage.isolated(&across)
}

/// Fails if `receiver` captured a frame from a host of the other slice.
fn ensure_no_foreign_frame(receiver: u8, seen: &[net::Seen]) -> anyhow::Result<()> {
    for frame in seen {
        for sender in [1, 2, 3, 4] {
            ensure!(
                !(frame.src == mac(sender) && slice_of(sender) != slice_of(receiver)),
                "h{receiver} ({}) received a frame of h{sender} ({}): {}",
                slice_of(receiver),
                slice_of(sender),
                frame.line
            );
        }
    }
    Ok(())
}

/// Puts a host's MAC address on its port in `slice` through REST.
fn add_member(stage: &mut Stage, slice: &str, host: u8) -> anyhow::Result<()> {
    let port = port_of(stage, host)?;
    stage.rest(
        "POST",
        &format!("/slices/{slice}/ports/{port}/mac_addresses"),
        Some(json!({ "name": mac(host) })),
        201,
    )?;
    Ok(())
}

/// The slice port name of a host's port.
fn port_of(stage: &Stage, host: u8) -> anyhow::Result<String> {
    Ok(stage.net()?.host_port(host)?.slice_name())
}

/// Scenario 1, no slices: nobody reaches anybody, and nothing of one host arrives at another,
/// although the controller does see the hosts (it learned them from their packets).
fn no_slices(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    stage.build(LINE3)?;
    let hosts = [1, 2, 3];
    let mut captures = Vec::new();
    for host in hosts {
        captures.push(stage.capture(host)?);
    }
    let pairs: Vec<(u8, u8)> = hosts
        .iter()
        .flat_map(|&a| hosts.iter().filter(move |&&b| b != a).map(move |&b| (a, b)))
        .collect();
    stage.isolated(&pairs)?;
    for capture in captures {
        let receiver = capture.host;
        for seen in capture.finish()? {
            let from_host = hosts.iter().find(|&&h| h != receiver && mac(h) == seen.src);
            if let Some(sender) = from_host {
                anyhow::bail!("h{receiver} received a frame of h{sender}: {}", seen.line);
            }
        }
    }
    stage.step("no host received a frame of another");
    // The pings did reach the controller, which chose to forward nothing.
    let known = stage.ctl()?.view("/topology/hosts")?;
    for host in hosts {
        let port = port_of(stage, host)?;
        let learned = known.as_array().into_iter().flatten().any(|h| {
            h.get("mac").and_then(|m| m.as_str()) == Some(mac(host).as_str())
                && h.get("port").and_then(|p| p.as_str()) == Some(port.as_str())
        });
        ensure!(
            learned,
            "sliced did not learn h{host} at {port}: GET /topology/hosts gave {known}"
        );
    }
    stage.step("sliced learned every host at its port");
    Ok(())
}

/// The PACKET_IN meter: on 1.3 sliced asks Open vSwitch for its meter features and puts
/// meter 1 (a drop band at the PACKET_IN rate, 1000 packets per second by default, burst
/// 2000) in front of the table-miss flow, which `dump-meters` and `dump-flows` show and
/// `GET /topology/switches` reports; 1.0 has no meters and keeps its plain behaviour.
/// Either way the misses still reach sliced: a slice's hosts ping each other.
fn packet_in_meter(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    stage.build(SINGLE)?;
    let metered = stage.version == OfVersion::Of13;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let switches = loop {
        let switches = stage.ctl()?.view("/topology/switches")?;
        let reported = switches
            .get(0)
            .and_then(|s| s.get("packet_in_meter"))
            .and_then(|m| m.as_bool());
        if reported == Some(metered) || std::time::Instant::now() > deadline {
            break switches;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let reported = switches.get(0).and_then(|s| s.get("packet_in_meter"));
    ensure!(
        reported == Some(&json!(metered)),
        "GET /topology/switches gave {switches}, expected packet_in_meter {metered}"
    );
    stage.step(format!("sliced reports packet_in_meter {metered}"));
    if metered {
        let meters = stage.meters(1)?;
        let meter = meters
            .lines()
            .skip_while(|line| !line.starts_with("meter=1 "))
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        ensure!(
            meter.contains("pktps")
                && meter.contains("type=drop")
                && meter.contains("rate=1000")
                && meter.contains("burst_size=2000"),
            "ovs-ofctl dump-meters shows no meter 1 dropping above 1000 pktps: {meters}"
        );
        stage.step(format!("dump-meters: {meter}"));
    }
    let flows = stage.flows(1)?;
    let table_miss = flows
        .iter()
        // Priority 0 and no match: the parser keeps `priority=0` among the fields, and
        // the cookie sliced marks its flows with.
        .find(|flow| {
            flow.priority == 0
                && flow
                    .fields
                    .keys()
                    .all(|key| key == "priority" || key == "cookie")
        });
    match (metered, table_miss) {
        (true, Some(flow)) => {
            ensure!(
                flow.actions.split(',').any(|action| action == "meter:1")
                    && flow.actions.contains("CONTROLLER"),
                "the table-miss flow does not pass meter 1: {}",
                flow.line
            );
            stage.step(format!("table-miss flow: {}", flow.line));
        }
        (true, None) => anyhow::bail!("no table-miss flow: {flows:?}"),
        (false, _) => {
            ensure!(
                !flows.iter().any(|flow| flow.actions.contains("meter:")),
                "a flow uses a meter on 1.0: {flows:?}"
            );
        }
    }
    stage.rest("POST", "/slices", Some(json!({ "name": "metered" })), 201)?;
    for host in [1, 2] {
        let port = port_of(stage, host)?;
        stage.rest(
            "POST",
            &format!("/slices/metered/ports/{port}/mac_addresses"),
            Some(json!({ "name": mac(host) })),
            201,
        )?;
    }
    stage.reach_both(1, 2)?;
    Ok(())
}

/// Scenario 2, a slice made with the `slice` tool while the daemon runs: its two hosts reach each
/// other both ways over the whole line (with the path flows on every switch), the host
/// outside reaches neither and is reached by neither.
fn slice_tool(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    stage.build(LINE3)?;
    let (p1, p3) = (port_of(stage, 1)?, port_of(stage, 3)?);
    stage.tool(&["add", "tool"])?;
    stage.tool(&["add_port", "--port", &p1, "--slice", "tool"])?;
    stage.tool(&[
        "add_host",
        "--mac",
        &mac(1),
        "--port",
        &p1,
        "--slice",
        "tool",
    ])?;
    // add_host creates the port when the slice lacks it.
    stage.tool(&["add_host", "-m", &mac(3), "-p", &p3, "-s", "tool"])?;
    let listed = stage.tool(&["list"])?;
    let expected = format!("tool\n  {p1}\n    {}\n  {p3}\n    {}\n", mac(1), mac(3));
    ensure!(
        listed == expected,
        "slice list printed {listed:?}, expected {expected:?}"
    );

    stage.reach_both(1, 3)?;
    stage.expect_path(1, 3, &[(1, 1, 2), (2, 2, 3), (3, 2, 1)])?;
    stage.expect_path(3, 1, &[(3, 1, 2), (2, 3, 2), (1, 2, 1)])?;
    stage.isolated(&[(2, 1), (2, 3), (1, 2), (3, 2)])
}

/// Scenario 3, two slices made over REST (one port added on its own, the others with their MAC
/// address): each pair talks, no pair across, and no frame of one slice, ARP broadcasts
/// included, reaches a host of the other, while the own slice does see them.
fn rest_isolation(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    stage.build(SINGLE)?;
    for (slice, hosts) in [("red", [1u8, 2]), ("blue", [3, 4])] {
        stage.rest("POST", "/slices", Some(json!({ "name": slice })), 201)?;
        let first = stage.net()?.host_port(hosts[0])?;
        stage.rest(
            "POST",
            &format!("/slices/{slice}/ports"),
            Some(json!({ "dpid": first.dpid, "port_no": first.port })),
            201,
        )?;
        for host in hosts {
            add_member(stage, slice, host)?;
        }
    }
    let slices = stage.rest("GET", "/slices", None, 200)?;
    let slices: serde_json::Value = serde_json::from_str(&slices).context("GET /slices")?;
    ensure!(
        slices == json!([{ "name": "red" }, { "name": "blue" }]),
        "GET /slices gave {slices}"
    );

    let mut captures = Vec::new();
    for host in [1, 2, 3, 4] {
        captures.push(stage.capture(host)?);
    }
    stage.reach_both(1, 2)?;
    stage.reach_both(3, 4)?;
    red_and_blue_isolated(stage)?;

    for capture in captures {
        let receiver = capture.host;
        let seen = capture.finish()?;
        ensure_no_foreign_frame(receiver, &seen)?;
        // The own slice's broadcasts do arrive: the check above is not vacuous.
        let partner = match receiver {
            1 => 2,
            2 => 1,
            3 => 4,
            _ => 3,
        };
        let broadcast = seen
            .iter()
            .any(|f| f.src == mac(partner) && f.dst == "ff:ff:ff:ff:ff:ff");
        ensure!(
            broadcast,
            "h{receiver} never saw a broadcast of h{partner}, its own slice's member"
        );
    }
    stage.step("no frame crossed between red and blue; each slice saw its own broadcasts");
    Ok(())
}

/// Scenario 3 again over an authenticated channel: sliced listens for TLS only and every
/// bridge connects with `ssl:` and the certificate `set-ssl` gave it, so the isolation
/// holds with real Open vSwitch speaking TLS.
fn tls(stage: &mut Stage) -> anyhow::Result<()> {
    stage.use_tls()?;
    rest_isolation(stage)?;
    let log = std::fs::read_to_string(stage.ctl()?.log_path()).unwrap_or_default();
    ensure!(
        !log.contains("unauthenticated"),
        "sliced had a plain TCP port open during the TLS run"
    );
    stage.step("sliced served the switches over TLS only");
    Ok(())
}

/// Scenario 4, withdrawal three ways, each undone before the next: the MAC address (REST), the
/// port (slice tool), the slice (REST). Each time the flows for the withdrawn host
/// vanish from every switch within the deadline, pings fail, and no switch forwards for
/// it afterwards; re-adding it makes the pair talk again.
fn withdrawal(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    stage.build(LINE3)?;
    let (p1, p3) = (port_of(stage, 1)?, port_of(stage, 3)?);
    stage.rest("POST", "/slices", Some(json!({ "name": "w" })), 201)?;
    for (port, host) in [(&p1, 1), (&p3, 3)] {
        stage.rest(
            "POST",
            &format!("/slices/w/ports/{port}/mac_addresses"),
            Some(json!({ "name": mac(host) })),
            201,
        )?;
    }
    let path_13 = [(1, 1, 2), (2, 2, 3), (3, 2, 1)];
    let path_31 = [(3, 1, 2), (2, 3, 2), (1, 2, 1)];
    let both_ways = |stage: &mut Stage| -> anyhow::Result<()> {
        stage.reach_both(1, 3)?;
        stage.expect_path(1, 3, &path_13)?;
        stage.expect_path(3, 1, &path_31)
    };
    both_ways(stage)?;

    // a. The MAC address.
    let mac3_path = format!("/slices/w/ports/{p3}/mac_addresses");
    stage.rest("DELETE", &mac3_path, Some(json!({ "name": mac(3) })), 200)?;
    stage.expect_no_flows(&[3])?;
    stage.isolated(&[(1, 3), (3, 1)])?;
    stage.expect_no_forwarding(&[3])?;
    stage.rest("POST", &mac3_path, Some(json!({ "name": mac(3) })), 201)?;
    both_ways(stage)?;

    // b. The port.
    stage.tool(&["delete_port", "--port", &p3, "--slice", "w"])?;
    stage.expect_no_flows(&[3])?;
    stage.isolated(&[(1, 3), (3, 1)])?;
    stage.expect_no_forwarding(&[3])?;
    stage.tool(&["add_host", "--mac", &mac(3), "--port", &p3, "--slice", "w"])?;
    both_ways(stage)?;

    // c. The whole slice.
    stage.rest("DELETE", "/slices", Some(json!({ "name": "w" })), 200)?;
    stage.expect_no_flows(&[1, 3])?;
    stage.isolated(&[(1, 3), (3, 1)])?;
    stage.expect_no_forwarding(&[1, 3])
}

/// Scenario 5, reroute: on the full mesh, h1 and h2 talk over the direct link s1-s2; cutting that link
/// (whichever one the path uses) moves the traffic to another path within a few pings,
/// and the new flows avoid the cut port.
fn reroute(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    stage.build(MESH4)?;
    let (p1, p2) = (port_of(stage, 1)?, port_of(stage, 2)?);
    stage.tool(&["add", "mesh"])?;
    stage.tool(&["add_host", "-m", &mac(1), "-p", &p1, "-s", "mesh"])?;
    stage.tool(&["add_host", "-m", &mac(2), "-p", &p2, "-s", "mesh"])?;
    stage.reach_both(1, 2)?;
    // The shortest path is the direct cable.
    stage.expect_path(1, 2, &[(1, 1, 2), (2, 2, 1)])?;
    stage.expect_path(2, 1, &[(2, 1, 2), (1, 2, 1)])?;

    let used = first_hop(stage, 1, 2)?;
    let peer = stage
        .net()?
        .peer(used)
        .with_context(|| format!("the path leaves s1 at {used}, which is not a link"))?;
    stage.step(format!("the path h1->h2 uses the link {used}-{peer}"));
    stage.set_port(used, false)?;

    // Traffic resumes: the controller dropped the broken path, the next packet is routed.
    let attempts = 8;
    let mut resumed = None;
    for attempt in 1..=attempts {
        if stage.net()?.ping(1, 2)? {
            resumed = Some(attempt);
            break;
        }
    }
    let Some(attempt) = resumed else {
        anyhow::bail!("h1 still cannot reach h2 after {attempts} pings with {used} down");
    };
    stage.step(format!(
        "h1 reaches h2 again with the link down (attempt {attempt})"
    ));
    stage.reach(2, 1)?;
    let now = first_hop(stage, 1, 2)?;
    ensure!(
        now != used,
        "the path h1->h2 still leaves s1 at {used}, the cut link"
    );
    let back = first_hop(stage, 2, 1)?;
    ensure!(
        back != peer,
        "the path h2->h1 still leaves s2 at {peer}, the cut link"
    );
    stage.step(format!(
        "h1->h2 now leaves s1 at {now}, h2->h1 leaves s2 at {back}"
    ));
    Ok(())
}

/// How often the restart scenario's ping goes out, and how many: long enough to span the
/// kill, the restart and the reconnection of every switch with time to spare.
const RESTART_PING_INTERVAL: Duration = Duration::from_millis(20);
const RESTART_PING_COUNT: u32 = 750;
/// Pings that must still go out after sliced has the network back, for the loss count to
/// prove anything about the reconciliation.
const PINGS_AFTER_RESTART: Duration = Duration::from_secs(2);

/// Scenario, a restart: on the line of three, h1 and h2 share slice "r" and h1 and h3 slice
/// "gone", both pairs talk, with static ARP so that no packet of the ping needs the
/// controller. While h1 pings h2 every 20 ms, sliced is killed with SIGKILL, h3 is taken
/// out of "gone" with the slice tool directly on the database, and sliced starts again
/// on the same data directory. Asserted: the ping lost nothing; the path flows of h1 and
/// h2 on every switch are older than the restart (kept, not flushed and installed
/// again); the flows of h1 and h3 are gone and the pair no longer reaches.
fn restart(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    stage.build(LINE3)?;
    let (p1, p2, p3) = (port_of(stage, 1)?, port_of(stage, 2)?, port_of(stage, 3)?);
    for (slice, members) in [("r", [(1, &p1), (2, &p2)]), ("gone", [(1, &p1), (3, &p3)])] {
        stage.tool(&["add", slice])?;
        for (host, port) in members {
            stage.tool(&["add_host", "-m", &mac(host), "-p", port, "-s", slice])?;
        }
    }
    for (a, b) in [(1, 2), (2, 1), (1, 3), (3, 1)] {
        stage.net()?.pin_neighbour(a, b)?;
    }
    stage.reach_both(1, 2)?;
    stage.reach_both(1, 3)?;
    let path_12 = [(1, 1, 2), (2, 2, 1)];
    stage.expect_path(1, 2, &path_12)?;
    stage.expect_path(1, 3, &[(1, 1, 2), (2, 2, 3), (3, 2, 1)])?;

    let summary = stage.dir().join("ping-h1-h2.txt");
    stage.step(format!(
        "h1 pings h2 {RESTART_PING_COUNT} times, every {} ms",
        RESTART_PING_INTERVAL.as_millis()
    ));
    let ping_started = Instant::now();
    let mut ping =
        stage
            .net()?
            .ping_stream(1, 2, RESTART_PING_INTERVAL, RESTART_PING_COUNT, &summary)?;
    stage.kill_controller()?;
    let killed = Instant::now();
    stage.tool(&["delete_host", "-m", &mac(3), "-p", &p3, "-s", "gone"])?;
    stage.restart_controller()?;
    let back = ping_started.elapsed();
    stage.expect_no_flows(&[3])?;

    let ping_length = RESTART_PING_INTERVAL * RESTART_PING_COUNT;
    ensure!(
        back + PINGS_AFTER_RESTART <= ping_length,
        "sliced had the network back only {} ms into a {} ms ping: too late to judge",
        back.as_millis(),
        ping_length.as_millis()
    );
    for &(dpid, in_port, _) in &path_12 {
        let flows = stage.flows_with_stats(dpid)?;
        let flow = stage
            .path_flow(&flows, 1, 2, in_port)
            .with_context(|| format!("the path flow h1->h2 on s{dpid} is gone"))?;
        let age = flow.duration().context("a flow without its age")?;
        ensure!(
            age > killed.elapsed(),
            "the path flow h1->h2 on s{dpid} is {} ms old, younger than the restart \
             ({} ms ago): it was installed again, not kept: {}",
            age.as_millis(),
            killed.elapsed().as_millis(),
            flow.line
        );
    }
    stage.step("the path flows of h1 -> h2 predate the restart");

    let finished = super::sys::poll(ping_length * 2, Duration::from_millis(100), || {
        Ok(ping.exited())
    })?;
    ensure!(finished.is_some(), "the ping did not end");
    let output = std::fs::read_to_string(&summary)?;
    let (sent, received) = net::ping_summary(&output)
        .with_context(|| format!("no summary in the ping's output: {output}"))?;
    ensure!(
        sent == RESTART_PING_COUNT && received == sent,
        "h1 -> h2 across the restart: {received} of {sent} pings answered"
    );
    stage.step(format!(
        "h1 -> h2: {received} of {sent} pings answered across the restart"
    ));
    stage.isolated(&[(1, 3), (3, 1)])?;
    stage.reach_both(1, 2)
}

/// The port where the path flow from `src` leaves the switch of `src`.
fn first_hop(stage: &Stage, src: u8, dst: u8) -> anyhow::Result<Port> {
    let at = stage.net()?.host_port(src)?;
    let flows = stage.flows(at.dpid)?;
    let flow = stage
        .path_flow(&flows, src, dst, at.port)
        .with_context(|| format!("no path flow h{src}->h{dst} on s{}", at.dpid))?;
    match flow.outputs()[..] {
        [port] => Ok(Port {
            dpid: at.dpid,
            port,
        }),
        _ => anyhow::bail!(
            "the path flow h{src}->h{dst} has odd actions: {}",
            flow.line
        ),
    }
}

/// Scenario 6, what an operator does: `sliced -d --pid-file`, slices with the tool, traffic,
/// then SIGTERM to the pid in the pid file. The daemon exits, removes its pid file and
/// socket, and the slices are still in the database (read by the tool without daemon).
fn daemon(stage: &mut Stage) -> anyhow::Result<()> {
    let pid_file = stage.dir().join("sliced.pid");
    let printed = stage.start_daemon(&pid_file)?;
    let recorded = std::fs::read_to_string(&pid_file)
        .with_context(|| format!("sliced -d returned but wrote no {}", pid_file.display()))?;
    ensure!(
        recorded.trim() == printed.to_string(),
        "sliced -d printed pid {printed} but the pid file says {recorded:?}"
    );
    stage.build(SINGLE)?;
    let (p1, p2) = (port_of(stage, 1)?, port_of(stage, 2)?);
    stage.tool(&["add", "ops"])?;
    stage.tool(&["add_host", "-m", &mac(1), "-p", &p1, "-s", "ops"])?;
    stage.tool(&["add_host", "-m", &mac(2), "-p", &p2, "-s", "ops"])?;
    stage.reach_both(1, 2)?;
    stage.isolated(&[(3, 1), (3, 2), (1, 3)])?;

    let pid: u32 = std::fs::read_to_string(&pid_file)?
        .trim()
        .parse()
        .context("the pid file holds no pid")?;
    stage.step(format!("kill -TERM {pid} (from {})", pid_file.display()));
    super::sys::signal(pid, libc::SIGTERM);
    let exited = super::sys::wait_gone(pid, std::time::Duration::from_secs(10));
    ensure!(exited, "sliced (pid {pid}) still runs 10 s after SIGTERM");
    stage.step("sliced exited");
    let data = stage.ctl()?.data_dir().to_owned();
    ensure!(
        !pid_file.exists(),
        "sliced left its pid file {}",
        pid_file.display()
    );
    let socket = data.join("sliced.sock");
    ensure!(
        !socket.exists(),
        "sliced left its socket {}",
        socket.display()
    );
    let listed = stage.tool(&["list"])?;
    let expected = format!("ops\n  {p1}\n    {}\n  {p2}\n    {}\n", mac(1), mac(2));
    ensure!(
        listed == expected,
        "after the stop, slice list printed {listed:?}, expected {expected:?}"
    );
    Ok(())
}

/// Scenario: hostile hosts try to poison the topology with LLDP. h3 and h4 (slice blue)
/// send probes in sliced's old unsigned format claiming to come from each other's port
/// and from h1's, then, once they are hosts, relay genuine signed probes captured at
/// their ports to each other. Unprotected, either makes a link s1:2 <-> s2:2 over which
/// red's traffic would be routed to the attackers. Asserted: sliced knows only the
/// cable, counted the forgeries, still knows h1, routes h1 <-> h2 over the cable, and the
/// slices stay isolated, broadcasts included (tcpdump).
fn forged_lldp(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    stage.build(PAIR)?;
    for (slice, hosts) in [("red", [1u8, 2]), ("blue", [3, 4])] {
        stage.rest("POST", "/slices", Some(json!({ "name": slice })), 201)?;
        for host in hosts {
            add_member(stage, slice, host)?;
        }
    }
    let mut captures = Vec::new();
    for host in [1, 2, 3, 4] {
        captures.push(stage.capture(host)?);
    }
    let (h1, h3, h4) = {
        let net = stage.net()?;
        (net.host_port(1)?, net.host_port(3)?, net.host_port(4)?)
    };
    let forge = |from: Port| {
        [
            "forge".to_string(),
            "eth0".to_string(),
            format!("{:x}", from.dpid),
            from.port.to_string(),
            "5".to_string(),
            "200".to_string(),
        ]
    };
    // While the attackers are still silent.
    for (host, claimed) in [(3, h4), (4, h3), (4, h1)] {
        let args = forge(claimed);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        stage.attack(host, &args)?;
    }
    stage.reach_both(1, 2)?;
    stage.reach_both(3, 4)?;
    // Genuine probes, relayed between the attackers' ports.
    let dir = stage.dir().to_path_buf();
    for (capturer, replayer) in [(3u8, 4u8), (4, 3)] {
        let file = dir.join(format!("probe-at-h{capturer}.bin"));
        let file = file.display().to_string();
        stage.attack(capturer, &["capture", "eth0", &file])?;
        stage.attack(replayer, &["replay", "eth0", &file, "5", "200"])?;
    }

    let found = stage.ctl()?.links()?;
    let expected =
        [("0x1:3", "0x2:3"), ("0x2:3", "0x1:3")].map(|(src, dst)| (src.into(), dst.into()));
    ensure!(
        found == expected.into(),
        "the controller knows the links {found:?}, not only the cable"
    );
    stage.step("sliced knows only the cable");

    let switches = stage.ctl()?.view("/topology/switches")?;
    let lldp_refused = |dpid: u64| -> u64 {
        switches
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s.get("dpid").and_then(|d| d.as_u64()) == Some(dpid))
            .filter_map(|s| s.get("dropped"))
            .flat_map(|d| {
                [
                    "lldp_unsigned",
                    "lldp_forged",
                    "lldp_stale",
                    "lldp_at_host_port",
                ]
                .map(|cause| d.get(cause).and_then(|n| n.as_u64()).unwrap_or(0))
            })
            .sum()
    };
    ensure!(
        lldp_refused(1) > 0 && lldp_refused(2) > 0,
        "sliced did not count the forged LLDP: GET /topology/switches gave {switches}"
    );
    stage.step(format!(
        "sliced refused {} LLDP frames at s1 and {} at s2",
        lldp_refused(1),
        lldp_refused(2)
    ));

    let known = stage.ctl()?.view("/topology/hosts")?;
    let h1_known = known.as_array().into_iter().flatten().any(|h| {
        h.get("mac").and_then(|m| m.as_str()) == Some(mac(1).as_str())
            && h.get("port").and_then(|p| p.as_str()) == Some(h1.slice_name().as_str())
    });
    ensure!(h1_known, "h1 vanished: GET /topology/hosts gave {known}");
    stage.step("h1 is still a host at its port");

    stage.reach_both(1, 2)?;
    stage.expect_path(1, 2, &[(1, 1, 3), (2, 3, 1)])?;
    stage.expect_path(2, 1, &[(2, 1, 3), (1, 3, 1)])?;
    red_and_blue_isolated(stage)?;
    for capture in captures {
        ensure_no_foreign_frame(capture.host, &capture.finish()?)?;
    }
    stage.step("no host received a frame of the other slice");
    Ok(())
}

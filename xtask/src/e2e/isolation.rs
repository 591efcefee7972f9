//! Slices keep their hosts apart: without slices nobody talks, a slice's hosts do
//! (made with the slice tool or over REST, over TCP or TLS), no frame crosses between
//! slices, broadcasts included, and hosts forging or relaying LLDP make no link.

use anyhow::{ensure, Context};
use serde_json::json;

use super::net::{self, mac, Port};
use super::stage::Stage;
use super::topologies::{LINE3, PAIR, SINGLE};

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

/// Scenario 1, no slices: nobody reaches anybody, and nothing of one host arrives at another,
/// although the controller does see the hosts (it learned them from their packets).
pub(super) fn no_slices(stage: &mut Stage) -> anyhow::Result<()> {
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
        let port = stage.port_of(host)?;
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

/// Scenario 2, a slice made with the `slice` tool while the daemon runs: its two hosts reach each
/// other both ways over the whole line (with the path flows on every switch), the host
/// outside reaches neither and is reached by neither.
pub(super) fn slice_tool(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    stage.build(LINE3)?;
    let (p1, p3) = (stage.port_of(1)?, stage.port_of(3)?);
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
pub(super) fn rest_isolation(stage: &mut Stage) -> anyhow::Result<()> {
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
            stage.add_member(slice, host)?;
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
pub(super) fn tls(stage: &mut Stage) -> anyhow::Result<()> {
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

/// Scenario: hostile hosts try to poison the topology with LLDP. h3 and h4 (slice blue)
/// send probes in sliced's old unsigned format claiming to come from each other's port
/// and from h1's, then, once they are hosts, relay genuine signed probes captured at
/// their ports to each other. Unprotected, either makes a link s1:2 <-> s2:2 over which
/// red's traffic would be routed to the attackers. Asserted: sliced knows only the
/// cable, counted the forgeries, still knows h1, routes h1 <-> h2 over the cable, and the
/// slices stay isolated, broadcasts included (tcpdump).
pub(super) fn forged_lldp(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    stage.build(PAIR)?;
    for (slice, hosts) in [("red", [1u8, 2]), ("blue", [3, 4])] {
        stage.rest("POST", "/slices", Some(json!({ "name": slice })), 201)?;
        for host in hosts {
            stage.add_member(slice, host)?;
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
    stage.pings_agree_with_verifier(&[1, 2, 3, 4])
}

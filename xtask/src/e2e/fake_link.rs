//! Issue 33: two hosts bound in no slice, h5 on s1 and h6 on s2, relay the controller's
//! genuine LLDP probes to each other over a channel of their own (`xtask relay run`, a
//! packet socket in each namespace), so that a link s1:5 <-> s2:5 would form and every
//! slice's traffic would be routed through them. Slice A is h1 (s1) and h2 (s2), slice B
//! h3 (s1) and h4 (s2); the one cable is s1:10 - s2:10.
//!
//! 1. Discovery past its window (`--discovery-window 4`, relayed 6 s after the switches
//!    connected): only the cable, refused probes counted as `lldp_off_fabric` on both
//!    switches; again after the attackers flap their links; again relaying every frame.
//! 2. With that relay running: both slices ping, h5 hears nothing of theirs, h2 nothing of
//!    slice B, and frames h6 sends in h1's name to h2 never arrive.
//! 3. A declared fabric (`--fabric`), relayed from the first round: never a link at the
//!    attackers' ports, the probes counted as `lldp_off_fabric`.
//! 4. The residual docs/security.md names: within the default 30 s window the relayed
//!    link does form (both versions). On OpenFlow 1.3's pipeline only (skipped on 1.0,
//!    as a step line says): h6's first unicast frame over it makes sliced withdraw it
//!    for good, and slice A still pings.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use serde_json::{json, Value};

use super::net::mac;
use super::sliced::LLDP_INTERVAL_MS;
use super::stage::Stage;
use super::sys::{self, Daemon};
use super::topologies::PAIR_WITH_ATTACKERS;

const A1: u8 = 1;
const A2: u8 = 2;
const B1: u8 = 3;
const B2: u8 = 4;
const X1: u8 = 5;
const X2: u8 = 6;
/// The cable, as `--fabric` and GET /topology/links name its ends.
const CABLE: (&str, &str) = ("0x1:10", "0x2:10");
/// The attackers' ports.
const X_PORTS: [&str; 2] = ["0x1:5", "0x2:5"];
/// The discovery window of step 1, and how long after the switches connected the relay
/// starts (the window and a margin).
const WINDOW_SECS: u64 = 4;
const PAST_WINDOW: Duration = Duration::from_secs(6);
/// LLDP rounds relayed each way in each phase.
const ROUNDS: u64 = 8;
/// How long a relay may run at most; the scenario stops it sooner.
const RELAY_MILLIS: &str = "60000";

/// The fake-link scenario (see the module's documentation).
pub(super) fn fake_link(stage: &mut Stage) -> anyhow::Result<()> {
    past_the_window(stage)?;
    declared_fabric(stage)?;
    residual_within_the_window(stage)
}

/// Steps 1 and 2: a discovery window of 4 s, the relay started well after it closed.
fn past_the_window(stage: &mut Stage) -> anyhow::Result<()> {
    let window = WINDOW_SECS.to_string();
    stage.start_controller_with("window", &["--discovery-window", &window])?;
    stage.build(PAIR_WITH_ATTACKERS)?;
    let ready = Instant::now();
    make_slices(stage)?;
    only_the_cable(stage, "before any relay")?;
    std::thread::sleep(PAST_WINDOW.saturating_sub(ready.elapsed()));
    stage.step(format!(
        "{} ms since the cable was found: the {WINDOW_SECS} s window after the switches \
         connected is closed",
        ready.elapsed().as_millis()
    ));

    let mut relay = Relay::start(stage, false, "window-lldp")?;
    relay_phase(stage, &mut relay, "LLDP relayed past the window")?;
    drop(relay);

    for host in [X1, X2] {
        flap(stage, host)?;
    }
    let mut relay = Relay::start(stage, false, "window-flapped")?;
    relay_phase(
        stage,
        &mut relay,
        "LLDP relayed after the attackers flapped their links",
    )?;
    drop(relay);

    // Started after the flaps: tcpdump ends when its interface goes down.
    let x1_capture = stage.capture(X1)?;
    let mut relay = Relay::start(stage, true, "window-all")?;
    relay_phase(stage, &mut relay, "every frame relayed")?;
    slices_unharmed(stage, &mut relay, x1_capture)?;
    let counts = relay.stop()?;
    stage.step(format!("the relay of every frame stopped: {counts}"));
    Ok(())
}

/// Step 2, while `relay` relays every frame: both slices work, the attackers and the
/// other slice hear nothing of a slice, and frames in h1's name from h6 go nowhere.
fn slices_unharmed(
    stage: &mut Stage,
    relay: &mut Relay,
    x1_capture: super::net::Capture,
) -> anyhow::Result<()> {
    let a2_capture = stage.capture(A2)?;
    let b2_capture = stage.capture(B2)?;
    for host in [A1, A2, B1, B2] {
        stage.net()?.flush_neighbours(host)?;
    }
    stage.reach_both(A1, A2)?;
    stage.reach_both(B1, B2)?;
    let members = [A1, A2, B1, B2].map(mac);
    let heard_by_x1 = x1_capture.finish()?;
    let leaked: Vec<&str> = heard_by_x1
        .iter()
        .filter(|seen| members.contains(&seen.src))
        .map(|seen| seen.line.as_str())
        .collect();
    ensure!(
        leaked.is_empty(),
        "h5 (bound nowhere, relaying) received frames of the slices' hosts:\n  {}",
        leaked.join("\n  ")
    );
    stage.step(format!(
        "h5 heard none of h1..h4's frames, unicast or broadcast ({} frames seen in all)",
        heard_by_x1.len()
    ));
    let heard_by_a2 = a2_capture.finish()?;
    let heard_by_b2 = b2_capture.finish()?;
    let foreign: Vec<&str> = heard_by_a2
        .iter()
        .filter(|seen| seen.src == mac(B1) || seen.src == mac(B2))
        .map(|seen| seen.line.as_str())
        .collect();
    ensure!(
        foreign.is_empty(),
        "h2 (slice A) received frames of slice B:\n  {}",
        foreign.join("\n  ")
    );
    for (heard, receiver, sender) in [(&heard_by_a2, A2, A1), (&heard_by_b2, B2, B1)] {
        let broadcast = heard
            .iter()
            .any(|seen| seen.src == mac(sender) && seen.dst == "ff:ff:ff:ff:ff:ff");
        ensure!(
            broadcast,
            "h{receiver} never heard a broadcast of h{sender}, its own slice's member: the \
             check above would prove nothing"
        );
    }
    stage.step("h2 heard no frame of slice B (h3's broadcasts reached h4 only)");

    // A genuine frame of h1's to h2 arrives: the watch sees what it is asked to.
    let genuine = watch(stage, A2, "fake-link-genuine", |stage| {
        send(stage, A1, mac(A1), mac(A2), "fake-link-genuine", 3)
    })?;
    ensure!(
        genuine > 0,
        "h2 received none of 3 frames h1 sent it itself (marker fake-link-genuine)"
    );
    let spoofed = watch(stage, A2, "fake-link-spoof", |stage| {
        send(stage, X2, mac(A1), mac(A2), "fake-link-spoof", 5)
    })?;
    ensure!(
        spoofed == 0,
        "h2 received {spoofed} of the 5 frames h6 sent in h1's name (marker fake-link-spoof)"
    );
    stage.step(format!(
        "h2 received {genuine} of h1's own 3 marked frames and none of the 5 h6 sent with \
         h1's source address"
    ));
    stage.reach(A1, A2)?;
    // The relay carries whatever the attackers' ports send: pings between the two are
    // theirs, and the verifier judges no frame to a host bound nowhere.
    stage.pings_agree_with_verifier(&[A1, A2, B1, B2, X1, X2])?;
    relay.check_running()?;
    only_the_cable(stage, "after the spoofed frames")
}

/// Step 3: `--fabric` with the cable, the relay running before the switches connect.
fn declared_fabric(stage: &mut Stage) -> anyhow::Result<()> {
    let cable = format!("{}-{}", CABLE.0, CABLE.1);
    let mut relay = fresh_controller(stage, "fabric", &["--fabric", &cable], false)?;
    wait_for_cable(stage, &relay)?;
    relay_phase(stage, &mut relay, "LLDP relayed from the first round")?;
    let counts = relay.stop()?;
    never_discovered_at_x_ports(stage)?;
    stage.step(format!(
        "with --fabric {cable}: no link ever formed at h5's or h6's port ({counts})"
    ));
    Ok(())
}

/// Step 4: the default window, relayed from the first round: the link forms (both
/// versions); on OpenFlow 1.3's pipeline the first unbound unicast frame over it takes it
/// away for good.
fn residual_within_the_window(stage: &mut Stage) -> anyhow::Result<()> {
    let mut relay = fresh_controller(stage, "default", &[], true)?;
    let fake = [(X_PORTS[0], X_PORTS[1]), (X_PORTS[1], X_PORTS[0])]
        .map(|(src, dst)| (src.to_owned(), dst.to_owned()));
    let started = Instant::now();
    let formed = sys::poll(Duration::from_secs(10), Duration::from_millis(50), || {
        relay.check_running()?;
        let found = stage.ctl()?.links()?;
        let cable = cable_links().iter().all(|link| found.contains(link));
        Ok((cable && fake.iter().all(|link| found.contains(link))).then_some(found))
    })?;
    let Some(found) = formed else {
        bail!(
            "the relayed link {0}<->{1} did not form within 10 s of the default window: \
             GET /topology/links gives {2:?} (relay: {3})",
            X_PORTS[0],
            X_PORTS[1],
            stage.ctl()?.links()?,
            relay.counts()?
        );
    };
    stage.step(format!(
        "within the default 30 s window the relayed link DID form after {} ms (the residual \
         docs/security.md names): {found:?}",
        started.elapsed().as_millis()
    ));

    if !stage.runs_pipeline() {
        let counts = relay.stop()?;
        stage.step(format!(
            "the rest of step 4 skipped on {}: withdrawing a relayed link on the first \
             unicast frame from an unbound address over it is the OpenFlow 1.3 pipeline's \
             (its transit table); the relayed link is left standing ({counts})",
            stage.version.short()
        ));
        return Ok(());
    }
    // The link in s2's pipeline: what arrives at port 5 goes to the transit table.
    let transit = sys::poll(Duration::from_secs(5), Duration::from_millis(50), || {
        let flows = stage.flows(2)?;
        Ok(flows
            .iter()
            .any(|f| {
                f.field("table").is_none()
                    && f.field("in_port") == Some("5")
                    && f.field("dl_src").is_none()
                    && f.actions.contains("goto_table:1")
            })
            .then_some(()))
    })?;
    ensure!(
        transit.is_some(),
        "s2 never sent what arrives at port 5 to its transit table; its flows:\n{}",
        stage
            .flows(2)?
            .iter()
            .map(|f| format!("  {}", f.line))
            .collect::<Vec<_>>()
            .join("\n")
    );
    stage.step("s2's pipeline takes port 5 for a link end (in_port=5 goto_table:1)");

    send(stage, X2, mac(X2), mac(A2), "fake-link-unicast", 1)?;
    let sent = Instant::now();
    let gone = sys::poll(Duration::from_secs(5), Duration::from_millis(50), || {
        let found = stage.ctl()?.links()?;
        Ok((!found.iter().any(at_x_port)).then_some(()))
    })?;
    ensure!(
        gone.is_some(),
        "5 s after h6's unicast frame the relayed link is still there: {:?}",
        stage.ctl()?.links()?
    );
    let log = std::fs::read_to_string(stage.ctl()?.log_path()).unwrap_or_default();
    let withdrawn: Vec<&str> = log.lines().filter(|l| l.contains("withdrawn")).collect();
    ensure!(
        withdrawn
            .iter()
            .any(|l| X_PORTS.iter().any(|x| l.contains(x))),
        "the relayed link is gone but sliced logged no withdrawal of it: {withdrawn:?}"
    );
    stage.step(format!(
        "{} ms after h6's one unicast frame from its own address the link was withdrawn: {}",
        sent.elapsed().as_millis(),
        withdrawn.first().map_or("", |l| l.trim())
    ));

    let at_host_port = dropped(stage, "lldp_at_host_port")?;
    relay_rounds(stage, &mut relay, 5, "relayed after the withdrawal")?;
    let later = dropped(stage, "lldp_at_host_port")?;
    let counts = relay.stop()?;
    ensure!(
        later[0] > at_host_port[0] && later[1] > at_host_port[1],
        "the probes relayed after the withdrawal were not refused at the host ports: \
         lldp_at_host_port went from {at_host_port:?} to {later:?} (relay: {counts})"
    );
    stage.step(format!(
        "5 more rounds relayed: the link stayed gone, lldp_at_host_port {at_host_port:?} -> \
         {later:?} ({counts})"
    ));
    stage.reach_both(A1, A2)
}

/// Stops the stage's controller, starts a fresh one with `extra` flags (and the slices
/// when `slices`), starts an LLDP relay, and only then points both switches (their
/// flows deleted) at the new controller: the relay runs from its first round.
fn fresh_controller(
    stage: &mut Stage,
    name: &str,
    extra: &[&str],
    slices: bool,
) -> anyhow::Result<Relay> {
    stage.step("stop sliced");
    drop(stage.take_controller(0)?);
    stage.start_controller_with(name, extra)?;
    if slices {
        make_slices(stage)?;
    }
    let relay = Relay::start(stage, false, name)?;
    let (port, tls) = {
        let ctl = stage.ctl()?;
        (ctl.openflow_port, ctl.tls)
    };
    let target = format!(
        "target=\"{}:127.0.0.1:{port}\"",
        if tls { "ssl" } else { "tcp" }
    );
    let bridges: Vec<String> = stage.net()?.bridges().map(|(_, b)| b).collect();
    for bridge in &bridges {
        stage
            .ovs()
            .ofctl(stage.version, &["del-flows", bridge.as_str()])?;
        let records = stage
            .ovs()
            .vsctl(&["get", "bridge", bridge, "controller"])?;
        let record = records.trim().trim_start_matches('[').trim_end_matches(']');
        ensure!(
            !record.is_empty() && !record.contains(','),
            "{bridge} has controllers {records:?}, not one"
        );
        stage.ovs().vsctl(&["set", "controller", record, &target])?;
    }
    stage.step(format!(
        "the switches' flows deleted, both switches pointed at the new sliced ({target})"
    ));
    Ok(relay)
}

/// Waits until the fresh controller knows both switches and the cable, checking at every
/// poll that no link touches the attackers' ports.
fn wait_for_cable(stage: &mut Stage, relay: &Relay) -> anyhow::Result<()> {
    let started = Instant::now();
    let found = sys::poll(Duration::from_secs(15), Duration::from_millis(50), || {
        let found = stage.ctl()?.links()?;
        let fake: Vec<_> = found.iter().filter(|l| at_x_port(l)).collect();
        ensure!(
            fake.is_empty(),
            "a link formed at an attacker's port: {fake:?} (relay: {})",
            relay.counts()?
        );
        Ok(cable_links()
            .iter()
            .all(|l| found.contains(l))
            .then_some(()))
    })?;
    ensure!(
        found.is_some(),
        "the fresh sliced did not find the cable within 15 s: {:?}",
        stage.ctl()?.links()?
    );
    let topo = stage.net()?.topo.clone();
    stage.wait_ready(&topo)?;
    stage.step(format!(
        "the cable found {} ms after the switches were pointed at it, no link at h5's or \
         h6's port meanwhile",
        started.elapsed().as_millis()
    ));
    Ok(())
}

/// No `link discovered` line of the current controller names an attacker's port.
fn never_discovered_at_x_ports(stage: &Stage) -> anyhow::Result<()> {
    let log = std::fs::read_to_string(stage.ctl()?.log_path()).unwrap_or_default();
    let fake: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("link discovered") && X_PORTS.iter().any(|x| l.contains(x)))
        .collect();
    ensure!(
        fake.is_empty(),
        "sliced discovered links at the attackers' ports: {fake:?}"
    );
    Ok(())
}

/// One phase of relaying: [`ROUNDS`] rounds of probes relayed each way while the links
/// stay the cable alone, then the links once more two rounds later, and
/// `lldp_off_fabric` grown on both switches.
fn relay_phase(stage: &mut Stage, relay: &mut Relay, what: &str) -> anyhow::Result<()> {
    let before = dropped(stage, "lldp_off_fabric")?;
    let counts = relay_rounds(stage, relay, ROUNDS, what)?;
    std::thread::sleep(round() * 2);
    only_the_cable(stage, &format!("after {what}"))?;
    let after = dropped(stage, "lldp_off_fabric")?;
    ensure!(
        after[0] > before[0] && after[1] > before[1],
        "{what}: lldp_off_fabric did not grow on both switches: {before:?} -> {after:?} \
         (relay: {counts})"
    );
    stage.step(format!(
        "{what}, {ROUNDS} rounds: GET /topology/links held only the cable throughout; \
         lldp_off_fabric at s1, s2 {before:?} -> {after:?} ({counts})"
    ));
    Ok(())
}

/// Lets the relay pass `rounds` probes each way, checking every 100 ms that the
/// controller knows only the cable; returns the relay's counts.
fn relay_rounds(
    stage: &Stage,
    relay: &mut Relay,
    rounds: u64,
    what: &str,
) -> anyhow::Result<Counts> {
    let start = relay.counts()?;
    let limit = round() * u32::try_from(rounds * 4)? + Duration::from_secs(3);
    let started = Instant::now();
    loop {
        only_the_cable(stage, &format!("while {what}"))?;
        relay.check_running()?;
        let now = relay.counts()?;
        if now.lldp_there >= start.lldp_there + rounds && now.lldp_back >= start.lldp_back + rounds
        {
            return Ok(now);
        }
        ensure!(
            started.elapsed() < limit,
            "{what}: the relay passed fewer than {rounds} probes each way within {limit:?}: \
             {now}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One LLDP round in the lab.
fn round() -> Duration {
    Duration::from_millis(LLDP_INTERVAL_MS.parse().unwrap_or(200))
}

fn cable_links() -> BTreeSet<(String, String)> {
    [(CABLE.0, CABLE.1), (CABLE.1, CABLE.0)]
        .into_iter()
        .map(|(src, dst)| (src.to_owned(), dst.to_owned()))
        .collect()
}

fn at_x_port(link: &(String, String)) -> bool {
    X_PORTS.contains(&link.0.as_str()) || X_PORTS.contains(&link.1.as_str())
}

fn only_the_cable(stage: &Stage, when: &str) -> anyhow::Result<()> {
    let found = stage.ctl()?.links()?;
    ensure!(
        found == cable_links(),
        "{when}: GET /topology/links gives {found:?}, not only the cable {}<->{}",
        CABLE.0,
        CABLE.1
    );
    Ok(())
}

/// What the controller counted under `dropped.<cause>` at s1 and s2.
fn dropped(stage: &Stage, cause: &str) -> anyhow::Result<[u64; 2]> {
    let switches = stage.ctl()?.view("/topology/switches")?;
    let at = |dpid: u64| {
        switches
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s.get("dpid").and_then(Value::as_u64) == Some(dpid))
            .and_then(|s| s.get("dropped")?.get(cause)?.as_u64())
            .with_context(|| format!("no dropped.{cause} of s{dpid} in {switches}"))
    };
    Ok([at(1)?, at(2)?])
}

/// Slice A (h1, h2) and slice B (h3, h4), each MAC at its port, over REST.
fn make_slices(stage: &mut Stage) -> anyhow::Result<()> {
    for (slice, hosts) in [("A", [A1, A2]), ("B", [B1, B2])] {
        stage.rest("POST", "/slices", Some(json!({ "name": slice })), 201)?;
        for host in hosts {
            stage.add_member(slice, host)?;
        }
    }
    Ok(())
}

/// Takes a host's interface down and up again inside its namespace; its switch port
/// loses its carrier and gets it back, which sliced must have seen each time.
fn flap(stage: &mut Stage, host: u8) -> anyhow::Result<()> {
    let (ns, port) = {
        let net = stage.net()?;
        (net.namespace(host), net.host_port(host)?)
    };
    for (state, live) in [("down", false), ("up", true)] {
        sys::run(&mut sys::command(
            "ip",
            &["-n", &ns, "link", "set", "eth0", state],
        ))?;
        let seen = sys::poll(Duration::from_secs(5), Duration::from_millis(20), || {
            let switches = stage.ctl()?.view("/topology/switches")?;
            let is_live = switches
                .as_array()
                .into_iter()
                .flatten()
                .filter(|s| s.get("dpid").and_then(Value::as_u64) == Some(port.dpid))
                .filter_map(|s| s.get("ports")?.as_array())
                .flatten()
                .find(|p| p.get("port_no").and_then(Value::as_u64) == Some(port.port.into()))
                .and_then(|p| p.get("live")?.as_bool());
            Ok((is_live == Some(live)).then_some(()))
        })?;
        ensure!(
            seen.is_some(),
            "h{host}'s eth0 is {state} but sliced does not show {port} {}",
            if live { "live" } else { "down" }
        );
    }
    stage.step(format!(
        "h{host} flapped its link (eth0 down, up): sliced saw {port} go down and come back"
    ));
    Ok(())
}

/// `ip netns exec <host's namespace> xtask relay ARGS`.
fn in_host(stage: &Stage, host: u8, args: &[&str]) -> anyhow::Result<std::process::Command> {
    let exe = std::env::current_exe().context("the xtask binary's path")?;
    let exe = exe.display().to_string();
    let ns = stage.net()?.namespace(host);
    let mut command = sys::command("ip", &["netns", "exec", &ns, &exe, "relay"]);
    command.args(args);
    Ok(command)
}

/// Starts `xtask relay ARGS` in `host`'s namespace in the background, its output going to
/// `output` (read back to follow it).
fn spawn_in_host(
    stage: &Stage,
    host: u8,
    args: &[&str],
    output: &std::path::Path,
    name: &str,
) -> anyhow::Result<Daemon> {
    let mut command = in_host(stage, host, args)?;
    Daemon::spawn_logged(&mut command, name, output)
}

/// `host` sends `count` frames from `src` to `dst` carrying `marker`.
fn send(
    stage: &mut Stage,
    host: u8,
    src: String,
    dst: String,
    marker: &str,
    count: u32,
) -> anyhow::Result<()> {
    stage.step(format!(
        "h{host} sends {count} frame(s) {src} -> {dst} marked {marker} (xtask relay send)"
    ));
    let count = count.to_string();
    let mut command = in_host(stage, host, &["send", "eth0", &src, &dst, marker, &count])?;
    sys::run(&mut command).map(drop)
}

/// Counts the frames carrying `marker` that `host` receives while `act` runs (and a
/// second after).
fn watch(
    stage: &mut Stage,
    host: u8,
    marker: &str,
    act: impl FnOnce(&mut Stage) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    let output = stage.dir().join(format!("watch-{marker}.txt"));
    let args = ["watch", "eth0", marker, "3000"];
    let mut watcher = spawn_in_host(stage, host, &args, &output, "watch")?;
    let read = || std::fs::read_to_string(&output).unwrap_or_default();
    let ready = sys::poll(Duration::from_secs(5), Duration::from_millis(20), || {
        Ok(read().contains("watching").then_some(()))
    })?;
    ensure!(
        ready.is_some(),
        "the watch in h{host} did not start: {}",
        read()
    );
    act(stage)?;
    let ended = sys::poll(Duration::from_secs(6), Duration::from_millis(50), || {
        Ok(watcher.exited())
    })?;
    ensure!(
        ended.is_some_and(|status| status.success()),
        "the watch in h{host} failed ({ended:?}): {}",
        read()
    );
    let text = read();
    let seen = text
        .lines()
        .find_map(|l| l.strip_prefix("seen "))
        .and_then(|n| n.trim().parse().ok())
        .with_context(|| format!("the watch in h{host} printed {text:?}"))?;
    stage.step(format!("h{host} received {seen} frame(s) marked {marker}"));
    Ok(seen)
}

/// The relay's counts, as its last progress line gives them.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    lldp_there: u64,
    lldp_back: u64,
    other_there: u64,
    other_back: u64,
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "relayed s1:5->s2:5 {} LLDP and {} other, s2:5->s1:5 {} LLDP and {} other",
            self.lldp_there, self.other_there, self.lldp_back, self.other_back
        )
    }
}

/// `xtask relay run` between h5's and h6's interfaces, in the background.
struct Relay {
    daemon: Daemon,
    output: PathBuf,
}

impl Relay {
    /// Starts it (every frame with `all`, LLDP only without) and waits until both its
    /// sockets are open.
    fn start(stage: &mut Stage, all: bool, name: &str) -> anyhow::Result<Relay> {
        stage.step(format!(
            "h5 and h6 relay {} between s1:5 and s2:5 (xtask relay run)",
            if all { "every frame" } else { "LLDP" }
        ));
        let output = stage.dir().join(format!("relay-{name}.txt"));
        let peer = stage.net()?.namespace(X2);
        let mut args = vec!["run", "eth0", peer.as_str(), "eth0", RELAY_MILLIS];
        if all {
            args.push("--all");
        }
        let mut relay = Relay {
            daemon: spawn_in_host(stage, X1, &args, &output, "relay")?,
            output,
        };
        let ready = sys::poll(Duration::from_secs(5), Duration::from_millis(20), || {
            relay.check_running()?;
            Ok(relay.text().contains("relay ready").then_some(()))
        })?;
        ensure!(ready.is_some(), "the relay did not start: {}", relay.text());
        Ok(relay)
    }

    fn text(&self) -> String {
        std::fs::read_to_string(&self.output).unwrap_or_default()
    }

    fn check_running(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.daemon.exited() {
            bail!("the relay exited ({status}): {}", self.text().trim());
        }
        Ok(())
    }

    fn counts(&self) -> anyhow::Result<Counts> {
        let text = self.text();
        let Some(line) = text.lines().rev().find(|l| l.starts_with("relayed ")) else {
            return Ok(Counts::default());
        };
        let value = |key: &str| -> anyhow::Result<u64> {
            line.split_whitespace()
                .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
                .and_then(|n| n.parse().ok())
                .with_context(|| format!("no {key} in the relay's line {line:?}"))
        };
        Ok(Counts {
            lldp_there: value("lldp_there")?,
            lldp_back: value("lldp_back")?,
            other_there: value("other_there")?,
            other_back: value("other_back")?,
        })
    }

    /// Stops it; returns its last counts.
    fn stop(mut self) -> anyhow::Result<Counts> {
        self.daemon.stop(libc::SIGTERM, Duration::from_secs(2));
        self.counts()
    }
}

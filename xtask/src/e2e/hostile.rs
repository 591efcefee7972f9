//! Hostile names and hostile traffic against the OpenFlow 1.3 pipeline: two slices whose
//! names hash alike (the pipeline's slice-set tags), and a host that floods what its
//! switch sends to the controller (LLDP, then frames that miss every table). On 1.0,
//! which has neither tags nor meters, the same checks run: they are what users see.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use serde_json::json;

use super::lldp::FloodKind;
use super::net::{self, mac, Port};
use super::ovs::OfVersion;
use super::stage::Stage;
use super::sys::{self, Daemon};
use super::topologies::PAIR;

/// Creates `slice` over REST with these hosts' MAC addresses at their ports.
fn make_slice(stage: &mut Stage, slice: &str, hosts: [u8; 2]) -> anyhow::Result<()> {
    stage.rest("POST", "/slices", Some(json!({ "name": slice })), 201)?;
    for host in hosts {
        stage.add_member(slice, host)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// tag-collision

/// Two slice names with the same 64-bit FNV-1a hash (each name followed by a zero byte),
/// the hash the pipeline took for a slice set's tag: with it, the second set's hosts
/// got no entries at all.
const COLLIDING: [&str; 2] = ["BALA4A91ACHA", "MG2G6I91-NIr"];

/// FNV-1a over the sorted names of a slice set, each followed by a zero byte: the tag the
/// pipeline gave a set before tags were made unique.
fn fnv1a_of_set(names: &[&str]) -> u64 {
    let sorted: BTreeSet<&str> = names.iter().copied().collect();
    sorted
        .into_iter()
        .flat_map(|name| name.bytes().chain([0]))
        .fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// Scenario: slices `BALA4A91ACHA` (h1 at s1, h2 at s2) and `MG2G6I91-NIr` (h3 at s1, h4
/// at s2), whose names hash alike. Asserted: each pair reaches its peer both ways across
/// the cable, no host reaches the other slice's (broadcast and unicast), and on the
/// pipeline every host is admitted at its port with its slice's tag, the two slices'
/// tags differing.
pub(super) fn tag_collision(stage: &mut Stage) -> anyhow::Result<()> {
    let [first, second] = COLLIDING;
    let hash = fnv1a_of_set(&[first]);
    ensure!(
        hash == fnv1a_of_set(&[second]),
        "the scenario's premise is wrong: {first} and {second} do not hash alike"
    );
    stage.step(format!("{first} and {second} both hash to {hash:#018x}"));
    stage.start_controller()?;
    stage.build(PAIR)?;
    make_slice(stage, first, [1, 2])?;
    make_slice(stage, second, [3, 4])?;

    stage.reach_both(1, 2)?;
    stage.reach_both(3, 4)?;
    stage.step(format!(
        "{first} (h1, h2) and {second} (h3, h4) both reach across"
    ));
    let across: Vec<(u8, u8)> = [(1, 3), (1, 4), (2, 3), (2, 4)]
        .into_iter()
        .flat_map(|(a, b)| [(a, b), (b, a)])
        .collect();
    stage.isolated(&across)?;
    stage.pings_agree_with_verifier(&[1, 2, 3, 4])?;

    if stage.runs_pipeline() {
        let mut tags = BTreeMap::new();
        for host in [1, 2, 3, 4] {
            tags.insert(host, admission_tag(stage, host)?);
        }
        ensure!(
            tags[&1] == tags[&2] && tags[&3] == tags[&4],
            "hosts of one slice are admitted with different tags: {tags:?}"
        );
        ensure!(
            tags[&1] != tags[&3],
            "{first} and {second} are admitted with the same tag {}: {tags:?}",
            tags[&1]
        );
        stage.step(format!(
            "admitted with write_metadata: {first} {}, {second} {}",
            tags[&1], tags[&3]
        ));
    }
    Ok(())
}

/// The tag the pipeline writes for `host` at its port: the `write_metadata` of its
/// admission entry (table 0, `in_port` and `dl_src`, on to table 2).
fn admission_tag(stage: &Stage, host: u8) -> anyhow::Result<String> {
    let port = stage.net()?.host_port(host)?;
    let flows = stage.flows(port.dpid)?;
    let (in_port, src) = (port.port.to_string(), mac(host));
    let entry = flows.iter().find(|f| {
        f.field("table").is_none()
            && f.field("in_port") == Some(in_port.as_str())
            && f.field("dl_src") == Some(src.as_str())
            && f.actions.contains("goto_table:2")
    });
    let Some(entry) = entry else {
        bail!(
            "h{host} has no admission entry at {port}; s{}'s flows:\n{}",
            port.dpid,
            flows
                .iter()
                .map(|f| format!("  {}", f.line))
                .collect::<Vec<_>>()
                .join("\n")
        );
    };
    entry
        .actions
        .split(',')
        .find_map(|action| action.strip_prefix("write_metadata:"))
        .map(str::to_owned)
        .with_context(|| format!("h{host}'s admission entry writes no tag: {}", entry.line))
}

// ---------------------------------------------------------------------------------------
// lldp-flood

/// The flooding host: h4, slice `noisy`, on s2, where the probes s1 sends over the cable
/// arrive.
const FLOODER: u8 = 4;
/// About 4 Mbit/s of 64-byte frames.
const FLOOD_RATE: u32 = 8000;
const FLOOD_SECONDS: u64 = 15;
/// How often the scenario asks sliced for its links during a flood.
const POLL_EVERY: Duration = Duration::from_millis(200);
/// The steady stream: h1 pings h2 across the cable this often, from before the flood
/// starts to after it ends.
const STREAM_INTERVAL: Duration = Duration::from_millis(50);
/// The stream starts this long before the flood and ends about as long after it.
const STREAM_MARGIN: Duration = Duration::from_millis(1000);

/// Scenario: slices `steady` (h1 at s1, h2 at s2) and `noisy` (h3 at s1, h4 at s2). h4
/// floods, from a raw socket in its namespace, 8000 frames a second of 64 bytes for 15
/// s: first EtherType 0x88cc with a junk payload (what the switch's LLDP entry sends to
/// the controller, from any port), then frames from random source addresses (what the
/// table-miss flow sends). Asserted for each: `GET /topology/links` shows both
/// directions of the cable at every poll (every 200 ms) while it lasts; sliced logged no
/// `link expired` and counted no link down in `/metrics` meanwhile (a link that expires
/// and is found again between two polls); the flood did reach s2 (its port's rx count);
/// h1, pinging h2 every 50 ms across the cable from before it to after it, lost nothing.
pub(super) fn lldp_flood(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    stage.build(PAIR)?;
    make_slice(stage, "steady", [1, 2])?;
    make_slice(stage, "noisy", [3, 4])?;
    stage.reach_both(1, 2)?;
    stage.reach_both(3, FLOODER)?;
    // The stream needs no ARP meanwhile: what it measures is the cable.
    {
        let net = stage.net()?;
        net.pin_neighbour(1, 2)?;
        net.pin_neighbour(2, 1)?;
    }
    stage.step("permanent ARP entries h1 <-> h2");
    let cable = cable_links(stage)?;
    let result = flood_phase(stage, FloodKind::Lldp, &cable)
        .and_then(|()| flood_phase(stage, FloodKind::RandomSrc, &cable));
    {
        let net = stage.net()?;
        net.forget_neighbour(1, 2)?;
        net.forget_neighbour(2, 1)?;
    }
    result?;
    stage.pings_agree_with_verifier(&[1, 2, 3, FLOODER])
}

/// Both directions of the topology's one cable, as `GET /topology/links` names them; they
/// must be known right now.
fn cable_links(stage: &mut Stage) -> anyhow::Result<BTreeSet<(String, String)>> {
    let topo = &stage.net()?.topo;
    ensure!(topo.links.len() == 1, "the topology has not one cable");
    let (a, b) = topo.links[0];
    let cable: BTreeSet<(String, String)> = [
        (a.slice_name(), b.slice_name()),
        (b.slice_name(), a.slice_name()),
    ]
    .into();
    let found = stage.ctl()?.links()?;
    ensure!(
        found == cable,
        "before any flood, GET /topology/links gave {found:?}, not the cable {cable:?}"
    );
    Ok(cable)
}

/// One flood of `kind` from the flooder, with h1 pinging h2 throughout and the links
/// polled; see [`lldp_flood`].
fn flood_phase(
    stage: &mut Stage,
    kind: FloodKind,
    cable: &BTreeSet<(String, String)>,
) -> anyhow::Result<()> {
    let name = match kind {
        FloodKind::Lldp => "lldp",
        FloodKind::RandomSrc => "random-src",
    };
    let port = stage.net()?.host_port(FLOODER)?;
    let rx_before = port_rx(stage, port)?;
    let meters_before = meter_counts(stage, port.dpid)?;
    let downs_before = link_downs(stage)?;
    let log_mark = log_len(stage)?;

    let stream_time = Duration::from_secs(FLOOD_SECONDS) + 2 * STREAM_MARGIN;
    let count = u32::try_from(stream_time.as_millis() / STREAM_INTERVAL.as_millis())?;
    stage.step(format!(
        "h1 pings h2 {count} times, every {} ms",
        STREAM_INTERVAL.as_millis()
    ));
    let output = stage.dir().join(format!("stream-{name}.txt"));
    let mut stream = stage
        .net()?
        .ping_stream(1, 2, STREAM_INTERVAL, count, &output)?;
    std::thread::sleep(STREAM_MARGIN);

    let mut flood = Flood::start(stage, FLOODER, name)?;
    let started = Instant::now();
    let mut polls = 0u32;
    let ended = loop {
        stage.ctl_mut()?.check_running()?;
        let found = stage.ctl()?.links()?;
        polls += 1;
        ensure!(
            &found == cable,
            "{:.1} s into the {name} flood (poll {polls}), GET /topology/links gave \
             {found:?}: the cable {cable:?} expired",
            started.elapsed().as_secs_f64()
        );
        if let Some(status) = flood.process.exited() {
            break status;
        }
        ensure!(
            started.elapsed() < Duration::from_secs(FLOOD_SECONDS + 15),
            "the {name} flood did not end"
        );
        std::thread::sleep(POLL_EVERY);
    };
    let said = std::fs::read_to_string(&flood.output).unwrap_or_default();
    ensure!(
        ended.success(),
        "the {name} flood failed ({ended}): {}",
        said.trim()
    );
    no_link_went(stage, name, log_mark, downs_before)?;
    let sent = flood_sent(&said).with_context(|| format!("the flooder said {said:?}"))?;
    let asked = u64::from(FLOOD_RATE) * FLOOD_SECONDS;
    // A flood far below its rate would prove nothing about the rate.
    ensure!(
        sent * 10 >= asked * 9,
        "h{FLOODER} sent only {sent} of {asked} frames: {}",
        said.trim()
    );
    let received = port_rx(stage, port)?.saturating_sub(rx_before);
    ensure!(
        received * 10 >= sent * 9,
        "s{} port {} received {received} frames of the {sent} h{FLOODER} sent",
        port.dpid,
        port.port
    );
    stage.report(format!(
        "{name} flood: h{FLOODER} {}; s{} port {} received {received}; \
         {polls} polls of /topology/links, every one with the cable",
        said.trim(),
        port.dpid,
        port.port
    ));
    if let (Some(before), Some(after)) = (meters_before, meter_counts(stage, port.dpid)?) {
        let shown: Vec<String> = after
            .iter()
            .map(|(id, (seen, dropped))| {
                let (seen_before, dropped_before) = before.get(id).copied().unwrap_or_default();
                format!(
                    "meter {id} took {} and dropped {}",
                    seen.saturating_sub(seen_before),
                    dropped.saturating_sub(dropped_before)
                )
            })
            .collect();
        stage.report(format!(
            "{name} flood: s{}'s meters: {}",
            port.dpid,
            shown.join(", ")
        ));
    }

    let finished = sys::poll(
        stream_time + Duration::from_secs(10),
        Duration::from_millis(50),
        || Ok(stream.exited()),
    )?;
    ensure!(finished.is_some(), "h1's ping to h2 did not end");
    let text = std::fs::read_to_string(&output).unwrap_or_default();
    let (transmitted, answered) = net::ping_summary(&text)
        .with_context(|| format!("h1's ping printed no summary: {text}"))?;
    ensure!(
        transmitted == count && answered == transmitted,
        "during the {name} flood h1 -> h2 got {answered} answers to {transmitted} pings \
         ({count} asked): the stream across the cable lost packets"
    );
    stage.step(format!(
        "{name} flood: h1 -> h2 all {answered} of {transmitted} pings answered"
    ));
    Ok(())
}

/// Since `log_mark`, sliced logged no `link expired`, and its count of links down (when
/// `/metrics` has one) is still `downs_before`: no link went, not even between two polls.
fn no_link_went(
    stage: &mut Stage,
    name: &str,
    log_mark: u64,
    downs_before: Option<u64>,
) -> anyhow::Result<()> {
    let expired: Vec<String> = log_since(stage, log_mark)?
        .lines()
        .filter(|line| line.contains("link expired"))
        .map(str::to_owned)
        .collect();
    ensure!(
        expired.is_empty(),
        "during the {name} flood sliced logged links expiring:\n{}",
        expired.join("\n")
    );
    match (downs_before, link_downs(stage)?) {
        (Some(before), Some(after)) => {
            ensure!(
                after == before,
                "during the {name} flood sliced counted {} link(s) down \
                 (sliced_link_events_total{{event=\"down\"}} {before} -> {after})",
                after.saturating_sub(before)
            );
            stage.step(format!(
                "{name} flood: no `link expired` in sliced's log, \
                 sliced_link_events_total{{event=\"down\"}} stayed {after}"
            ));
        }
        _ => stage.step(format!(
            "{name} flood: no `link expired` in sliced's log \
             (/metrics has no sliced_link_events_total down)"
        )),
    }
    Ok(())
}

/// The flooder: this xtask's `lldp flood` (see `lldp.rs`) run inside a host's namespace,
/// in the background, its report in a file; stopped if dropped early.
struct Flood {
    process: Daemon,
    output: PathBuf,
}

impl Flood {
    fn start(stage: &mut Stage, host: u8, kind: &str) -> anyhow::Result<Flood> {
        let (rate, seconds) = (FLOOD_RATE.to_string(), FLOOD_SECONDS.to_string());
        let args = ["flood", "eth0", kind, &rate, &seconds];
        stage.step(format!("h{host} attacks: lldp {}", args.join(" ")));
        // This very binary, even when a build meanwhile replaced the file it came from.
        let exe = format!("/proc/{}/exe", std::process::id());
        let ns = stage.net()?.namespace(host);
        let output = stage.dir().join(format!("flood-{kind}.txt"));
        let mut command = sys::command("ip", &["netns", "exec", &ns, &exe, "lldp"]);
        command.args(args);
        let process = Daemon::spawn_logged(&mut command, &format!("flood from h{host}"), &output)?;
        Ok(Flood { process, output })
    }
}

/// `sent 120000 frames in 15.00 s (...)`: 120000.
fn flood_sent(said: &str) -> Option<u64> {
    said.lines()
        .find_map(|line| line.strip_prefix("sent "))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The frames a switch port received (`ovs-ofctl dump-ports`: `rx pkts=N`).
fn port_rx(stage: &Stage, port: Port) -> anyhow::Result<u64> {
    let bridge = stage.net()?.bridge(port.dpid);
    let dump = stage.ovs().ofctl(
        stage.version,
        &["dump-ports", &bridge, &port.port.to_string()],
    )?;
    dump.split_once("rx pkts=")
        .and_then(|(_, rest)| {
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .with_context(|| format!("no rx count for {port} in: {dump}"))
}

/// On 1.3, each meter's packets in and packets its band dropped (`ovs-ofctl
/// meter-stats`: `meter:1 ... packet_in_count:N ... 0: packet_count:M`), by meter id.
fn meter_counts(stage: &Stage, dpid: u64) -> anyhow::Result<Option<BTreeMap<u32, (u64, u64)>>> {
    if stage.version != OfVersion::Of13 {
        return Ok(None);
    }
    let bridge = stage.net()?.bridge(dpid);
    let dump = stage
        .ovs()
        .ofctl(stage.version, &["meter-stats", &bridge])?;
    Ok(Some(parse_meter_stats(&dump)))
}

fn parse_meter_stats(dump: &str) -> BTreeMap<u32, (u64, u64)> {
    let mut meters = BTreeMap::new();
    let mut current = None;
    let number = |token: &str, key: &str| -> Option<u64> { token.strip_prefix(key)?.parse().ok() };
    for token in dump.split_whitespace() {
        if let Some(id) = token.strip_prefix("meter:").and_then(|id| id.parse().ok()) {
            current = Some(id);
            meters.insert(id, (0, 0));
        } else if let Some(entry) = current.and_then(|id| meters.get_mut(&id)) {
            if let Some(n) = number(token, "packet_in_count:") {
                entry.0 = n;
            } else if let Some(n) = number(token, "packet_count:") {
                entry.1 += n;
            }
        }
    }
    meters
}

/// `sliced_link_events_total{event="down"}` in `GET /metrics`, if sliced has it.
fn link_downs(stage: &Stage) -> anyhow::Result<Option<u64>> {
    let (status, body) = stage.ctl()?.request("GET", "/metrics", None)?;
    if status != 200 {
        return Ok(None);
    }
    Ok(body.lines().find_map(|line| {
        line.strip_prefix("sliced_link_events_total{event=\"down\"} ")?
            .trim()
            .parse()
            .ok()
    }))
}

fn log_len(stage: &Stage) -> anyhow::Result<u64> {
    let path = stage.ctl()?.log_path();
    Ok(std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len())
}

/// What sliced logged after `mark` bytes of its log.
fn log_since(stage: &Stage, mark: u64) -> anyhow::Result<String> {
    let path = stage.ctl()?.log_path();
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let from = usize::try_from(mark)?.min(bytes.len());
    Ok(String::from_utf8_lossy(&bytes[from..]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_names_collide_and_others_do_not() {
        let [first, second] = COLLIDING;
        assert_eq!(fnv1a_of_set(&[first]), fnv1a_of_set(&[second]));
        assert_eq!(fnv1a_of_set(&[first]), 0xd328_6073_429e_da23);
        assert_ne!(fnv1a_of_set(&["red"]), fnv1a_of_set(&["blue"]));
        assert_eq!(
            fnv1a_of_set(&["red", "blue"]),
            fnv1a_of_set(&["blue", "red"])
        );
    }

    #[test]
    fn reads_the_flooders_report_and_the_meter_stats() {
        assert_eq!(
            flood_sent("sent 120000 frames in 15.00 s (0 refused by the socket)\n"),
            Some(120_000)
        );
        assert_eq!(flood_sent("xtask: no interface eth0"), None);
        let dump = "OFPST_METER reply (OF1.3) (xid=0x2):\n\
                    meter:1 flow_count:2 packet_in_count:120500 byte_in_count:7712000 \
                    duration:20.1s bands:\n0: packet_count:100000 byte_count:6400000\n\n\
                    meter:2 flow_count:1 packet_in_count:75 byte_in_count:4800 \
                    duration:20.1s bands:\n0: packet_count:0 byte_count:0\n";
        let meters = parse_meter_stats(dump);
        assert_eq!(meters.get(&1), Some(&(120_500, 100_000)));
        assert_eq!(meters.get(&2), Some(&(75, 0)));
    }
}

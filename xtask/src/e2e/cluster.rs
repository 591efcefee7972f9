//! The cluster scenarios: three etcd members, three `sliced --etcd`, and the full mesh of
//! four switches connected to all three controllers. What is shared (slices, racing
//! creates), what a `kill -9` of the master costs the data plane (packets lost by a pair
//! talking at 50 packets per second, the time until a pair that never talked does, the
//! time until another instance is master), and what etcd failures do (one member down:
//! nothing; the quorum lost: writes 503, traffic flows; the quorum back: writes again).
//!
//! `cargo xtask failover --runs N` repeats the kill and prints the figures' spread, with
//! the REST latency of creates on etcd against sled, for docs/benchmarks.md.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, ensure, Context};
use serde_json::{json, Value};

use super::scenarios::MESH4;
use super::sliced::Controller;
use super::stage::Stage;
use super::sys::{self, Daemon};

/// The election's lease lives 2 s by default (issue 11); a standby must be master within
/// the lease's time to live plus a second.
pub const NEW_MASTER_DEADLINE: Duration = Duration::from_secs(3);
/// A pair that never talked talks within this of the master's death (issue 11, point 9).
pub const NEW_PAIR_DEADLINE: Duration = Duration::from_secs(3);
/// Every etcd request of sliced is bounded by 3 s (docs/cluster.md, `REQUEST_TIMEOUT`);
/// a write without a quorum answers 503 within that and the round trip.
const UNAVAILABLE_DEADLINE: Duration = Duration::from_secs(5);
/// Every switch confirms the roles it was asked for within this of the master and the
/// standbys knowing it; their member records reach the master's view within a third of
/// the lease.
const ROLES_DEADLINE: Duration = Duration::from_secs(10);
/// A change made on one instance reaches the others through their watch; this is far
/// more than that takes, for a loaded machine.
const PROPAGATION: Duration = Duration::from_secs(10);
/// The quorum back, the etcd client reconnects by itself; well within this.
const RECOVERY: Duration = Duration::from_secs(30);

/// The pair that talks throughout a failover, and the pair that starts after the kill.
pub(super) const TALKING: (u8, u8) = (1, 2);
pub(super) const NEW_PAIR: (u8, u8) = (3, 4);
/// How often the new pair's hosts repeat an unanswered ARP request.
const NEW_PAIR_ARP_RETRANSMIT: Duration = Duration::from_millis(100);
/// 50 packets per second, for 6 s: the kill falls inside.
const PING_INTERVAL: &str = "0.02";
const TALKING_COUNT: u32 = 300;
const NEW_PAIR_COUNT: u32 = 200;
/// The pace of the REST writes on the survivors during a failover.
const WRITE_EVERY: Duration = Duration::from_millis(100);
/// How long the `cluster` scenario keeps etcd without a quorum, and the pings that span it
/// (every 20 ms, with some to spare for the member restarts around it).
const QUORUM_LOST: Duration = Duration::from_secs(10);
const QUORUM_LOST_PINGS: u32 = 600;

/// The index of the live controller that the live instances report as master in
/// `GET /cluster`.
pub fn master(stage: &Stage) -> anyhow::Result<usize> {
    reported_master(stage)
        .context("no live instance is master: GET /cluster names none, or one that is not live")
}

/// Waits until a live instance is master (an election at start takes a moment).
pub fn wait_master(stage: &Stage, timeout: Duration) -> anyhow::Result<usize> {
    let found = sys::poll(timeout, Duration::from_millis(50), || {
        Ok(reported_master(stage))
    })?;
    found.with_context(|| format!("no live instance became master within {timeout:?}"))
}

/// The index of the live controller that some live instance's `GET /cluster` names as
/// master; None while none does (no master, or the one just killed, until its lease
/// expires).
fn reported_master(stage: &Stage) -> Option<usize> {
    let controllers = stage.controllers();
    let addresses = addresses(controllers);
    controllers
        .iter()
        .filter_map(cluster_view)
        .find_map(|view| master_in(&view, &addresses))
}

/// The live controllers as (HTTP address, OpenFlow port), how `GET /cluster` tells them
/// apart.
fn addresses(controllers: &[Controller]) -> Vec<(String, u16)> {
    controllers
        .iter()
        .map(|c| (c.http.to_string(), c.openflow_port))
        .collect()
}

/// Waits until the master's `GET /cluster` shows that every switch of `switches`
/// confirmed the master as master and every standby as slave. A standby sends no LLDP
/// and ignores PACKET_INs (only the master writes to switches), so it knows the
/// switches and their ports but discovers no link: the roles are what it must show.
pub fn wait_roles(
    stage: &mut Stage,
    master: usize,
    switches: &BTreeSet<u64>,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let controllers = stage.controllers();
    let addresses = addresses(controllers);
    let wire = stage.version.wire();
    let mut missing = Vec::new();
    let agreed = sys::poll(ROLES_DEADLINE, Duration::from_millis(50), || {
        missing.clear();
        let view = cluster_view(&controllers[master]).unwrap_or_default();
        for (at, ctl) in controllers.iter().enumerate() {
            let want = if at == master { "master" } else { "slave" };
            let confirmed: BTreeSet<u64> = view
                .get("members")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|m| member_index(m, &addresses) == Some(at))
                .filter_map(|m| m.get("switches")?.as_array())
                .flatten()
                .filter(|s| s.get("role").and_then(Value::as_str) == Some(want))
                .filter_map(|s| s.get("dpid")?.as_u64())
                .collect();
            if &confirmed != switches {
                missing.push(format!(
                    "{} is {want} of {confirmed:?}, not {switches:?}",
                    ctl.http
                ));
            }
            let connected = ctl.switches_at(wire)?;
            if &connected != switches {
                missing.push(format!("{} has switches {connected:?}", ctl.http));
            }
        }
        Ok(missing.is_empty().then_some(()))
    })?;
    if agreed.is_none() {
        bail!(
            "the switches did not confirm the roles within {ROLES_DEADLINE:?}: {}",
            missing.join("; ")
        );
    }
    let done = format!(
        "every switch confirms {} as master and the {} others as slaves after {} ms",
        controllers[master].http,
        controllers.len() - 1,
        started.elapsed().as_millis()
    );
    stage.step(done);
    Ok(())
}

/// `GET /cluster` of one instance, when it answers 200 with JSON.
pub(super) fn cluster_view(ctl: &Controller) -> Option<Value> {
    match ctl.request("GET", "/cluster", None) {
        Ok((200, body)) => serde_json::from_str(&body).ok(),
        _ => None,
    }
}

/// Which of the instances, given as (HTTP address, OpenFlow port), the view names as
/// master: `"master"` is a member's name, and the member's `"http"` (or `"openflow"`)
/// address tells which instance it is.
fn master_in(view: &Value, instances: &[(String, u16)]) -> Option<usize> {
    let name = view.get("master")?.as_str()?;
    let member = view
        .get("members")?
        .as_array()?
        .iter()
        .find(|m| m.get("name").and_then(Value::as_str) == Some(name))?;
    member_index(member, instances)
}

/// Which of the instances a member record of `GET /cluster` is.
fn member_index(member: &Value, instances: &[(String, u16)]) -> Option<usize> {
    let address = |key: &str| {
        member
            .get(key)
            .and_then(Value::as_str)
            .map(|a| a.trim_start_matches("http://").trim_start_matches("tcp:"))
            .map(str::to_owned)
    };
    let (http, openflow) = (address("http"), address("openflow"));
    let openflow_port = openflow
        .as_deref()
        .and_then(|o| o.rsplit(':').next()?.parse::<u16>().ok());
    instances.iter().position(|(instance_http, instance_port)| {
        http.as_deref() == Some(instance_http.as_str()) || openflow_port == Some(*instance_port)
    })
}

/// Waits until a live instance reports itself master (the killed one is out of the
/// stage's list already); returns how long that took from `killed_at`. Gives up at
/// twice the deadline, so that the figure is still shown when it is late.
pub(super) fn wait_new_master(stage: &Stage, killed_at: Instant) -> anyhow::Result<Duration> {
    loop {
        if reported_master(stage).is_some() {
            return Ok(killed_at.elapsed());
        }
        if killed_at.elapsed() > NEW_MASTER_DEADLINE * 2 {
            bail!(
                "no live instance became master within {:?} of the kill",
                NEW_MASTER_DEADLINE * 2
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The random scenario's cluster hook: `kill -9` of the master, then its restart on the
/// same data directory and ports.
pub fn kill_master_and_restart(stage: &mut Stage) -> anyhow::Result<()> {
    let master = master(stage)?;
    let mut killed = stage.take_controller(master)?;
    stage.step(format!("kill -9 the master (sliced at {})", killed.http));
    let killed_at = Instant::now();
    killed.kill(libc::SIGKILL);
    let took = wait_new_master(stage, killed_at)?;
    ensure!(
        took <= NEW_MASTER_DEADLINE,
        "the new master took {took:?}, more than {NEW_MASTER_DEADLINE:?}"
    );
    stage.step(format!("new master after {} ms", took.as_millis()));
    killed.restart(libc::SIGKILL)?;
    stage.add_controller(killed);
    Ok(())
}

/// A `ping` running in a host's namespace, its output in a file.
pub(super) struct PingRun {
    daemon: Daemon,
    output: PathBuf,
    label: String,
}

impl PingRun {
    /// `ping -D -i INTERVAL -c COUNT` from one host to another (timestamps on each reply).
    pub(super) fn start(
        stage: &Stage,
        (from, to): (u8, u8),
        count: u32,
    ) -> anyhow::Result<PingRun> {
        let ns = stage.net()?.namespace(from);
        let output = stage.dir().join(format!("ping-h{from}-h{to}.txt"));
        let file = std::fs::File::create(&output)
            .with_context(|| format!("cannot create {}", output.display()))?;
        let count = count.to_string();
        let target = super::net::ipv4(to);
        let mut command = sys::command(
            "ip",
            &[
                "netns",
                "exec",
                &ns,
                "ping",
                "-n",
                "-D",
                "-i",
                PING_INTERVAL,
                "-c",
                &count,
                &target,
            ],
        );
        command
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(Stdio::null());
        let label = format!("ping h{from}->h{to}");
        let daemon = Daemon::spawn(&mut command, &label)?;
        Ok(PingRun {
            daemon,
            output,
            label,
        })
    }

    fn text(&self) -> String {
        std::fs::read_to_string(&self.output).unwrap_or_default()
    }

    /// The time of the first reply, in seconds since the epoch (ping's `-D` stamp).
    fn first_reply(&self) -> Option<f64> {
        self.text()
            .lines()
            .find(|line| line.contains("bytes from"))
            .and_then(stamp)
    }

    /// Waits until a reply came; false at the deadline.
    fn wait_reply(&self, timeout: Duration) -> anyhow::Result<bool> {
        Ok(sys::poll(timeout, Duration::from_millis(20), || {
            Ok(self.first_reply().map(|_| ()))
        })?
        .is_some())
    }

    /// Waits until ping ends; returns (transmitted, received).
    pub(super) fn finish(mut self, timeout: Duration) -> anyhow::Result<(u32, u32)> {
        let ended = sys::poll(timeout, Duration::from_millis(50), || {
            Ok(self.daemon.exited())
        })?;
        ensure!(
            ended.is_some(),
            "{} did not end within {timeout:?}",
            self.label
        );
        let text = self.text();
        summary(&text).with_context(|| format!("{} printed no summary: {text}", self.label))
    }
}

/// `[1700000000.123456] 64 bytes from ...`: the stamp.
fn stamp(line: &str) -> Option<f64> {
    line.strip_prefix('[')?.split(']').next()?.parse().ok()
}

/// `300 packets transmitted, 298 received, ...`: (300, 298).
fn summary(text: &str) -> Option<(u32, u32)> {
    let line = text.lines().find(|l| l.contains("packets transmitted"))?;
    let mut numbers = line
        .split(',')
        .filter_map(|part| part.split_whitespace().next()?.parse::<u32>().ok());
    Some((numbers.next()?, numbers.next()?))
}

fn epoch_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

/// What one failover cost.
#[derive(Debug, Clone, Copy)]
pub struct Failover {
    /// None while sliced has no `GET /cluster` to say who is master.
    pub new_master: Duration,
    pub sent: u32,
    pub lost: u32,
    pub new_pair: Duration,
    pub writes: u32,
}

impl std::fmt::Display for Failover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "new master after {} ms; h{}->h{} lost {} of {} packets at 50/s; \
             h{}->h{} (never talked) reached after {} ms; {} REST writes on the survivors, \
             all 201",
            self.new_master.as_millis(),
            TALKING.0,
            TALKING.1,
            self.lost,
            self.sent,
            NEW_PAIR.0,
            NEW_PAIR.1,
            self.new_pair.as_millis(),
            self.writes
        )
    }
}

/// Starts the cluster on MESH4 with slices `talk` (h1, h2) and `fresh` (h3, h4), made on
/// the first instance; h1 and h2 have talked, h3 and h4 not.
pub(super) fn cluster_with_slices(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_cluster(3, 3)?;
    slices_on_cluster(stage)
}

/// The mesh built for a cluster already started, and the scenarios' slices made.
pub(super) fn slices_on_cluster(stage: &mut Stage) -> anyhow::Result<()> {
    stage.build(MESH4)?;
    for (slice, hosts) in [("talk", TALKING), ("fresh", NEW_PAIR)] {
        stage.rest("POST", "/slices", Some(json!({ "name": slice })), 201)?;
        for host in [hosts.0, hosts.1] {
            let port = stage.net()?.host_port(host)?.slice_name();
            stage.rest(
                "POST",
                &format!("/slices/{slice}/ports/{port}/mac_addresses"),
                Some(json!({ "name": super::net::mac(host) })),
                201,
            )?;
        }
    }
    // The new pair's first packets are ARP requests that nobody hears until a new
    // master claims the switches, about the lease's time to live (2 s) after the kill;
    // Linux asks again only every second, so with its default the pair's time would
    // measure the phase of the hosts' ARP timer as much as the failover.
    for host in [NEW_PAIR.0, NEW_PAIR.1] {
        stage
            .net()?
            .set_arp_retransmit(host, NEW_PAIR_ARP_RETRANSMIT)?;
    }
    wait_everywhere(stage, "the slices reach every instance")?;
    stage.reach_both(TALKING.0, TALKING.1)
}

/// Waits until every instance lists the same slices as the first.
pub(super) fn wait_everywhere(stage: &mut Stage, what: &str) -> anyhow::Result<()> {
    let wanted = stage.ctl()?.view("/slices")?;
    let agreed = sys::poll(PROPAGATION, Duration::from_millis(50), || {
        for ctl in stage.controllers() {
            if ctl.view("/slices")? != wanted {
                return Ok(None);
            }
        }
        Ok(Some(()))
    })?;
    if agreed.is_none() {
        let seen: Vec<String> = stage
            .controllers()
            .iter()
            .map(|c| format!("{}: {}", c.http, c.view("/slices").unwrap_or_default()))
            .collect();
        bail!(
            "the instances do not agree within {PROPAGATION:?} ({what}): {}",
            seen.join("; ")
        );
    }
    let count = wanted.as_array().map_or(0, Vec::len);
    stage.step(format!(
        "every instance lists the same {count} slices ({what})"
    ));
    Ok(())
}

/// One failover: h1 pings h2 at 50 packets per second while the master is killed; h3
/// starts pinging h4 right after; REST writes go to the survivors meanwhile. Asserts
/// the goals of issue 11 (point 9) and returns the figures. The killed instance is
/// returned, stopped, for the caller to restart or drop.
fn failover(stage: &mut Stage, round: usize) -> anyhow::Result<(Failover, Controller)> {
    let talking = PingRun::start(stage, TALKING, TALKING_COUNT)?;
    ensure!(
        talking.wait_reply(Duration::from_secs(5))?,
        "h{} does not reach h{} before the kill",
        TALKING.0,
        TALKING.1
    );
    let master = master(stage)?;
    let mut killed = stage.take_controller(master)?;
    stage.step(format!(
        "kill -9 the master, sliced at {} (reported by GET /cluster)",
        killed.http
    ));
    let killed_epoch = epoch_seconds();
    let killed_at = Instant::now();
    killed.kill(libc::SIGKILL);
    let fresh = PingRun::start(stage, NEW_PAIR, NEW_PAIR_COUNT)?;

    let new_master = wait_new_master(stage, killed_at)?;
    // Writes on the survivors, in turn, ten a second, while the new pair sets up its
    // path (paced, not to flood the store with thousands of slices).
    let mut writes = 0;
    while killed_at.elapsed() < NEW_PAIR_DEADLINE {
        let at = writes as usize % stage.controllers().len();
        let name = format!("failover-{round}-{writes}");
        let ctl = &stage.controllers()[at];
        let (status, body) = ctl.request("POST", "/slices", Some(&json!({ "name": name })))?;
        ensure!(
            status == 201,
            "a write on the survivor {} during the failover answered {status}: {body}",
            ctl.http
        );
        writes += 1;
        let next = killed_at + WRITE_EVERY * writes;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    let reached = fresh.wait_reply(NEW_PAIR_DEADLINE.saturating_sub(killed_at.elapsed()))?;
    let first = fresh.first_reply();
    let (sent, received) = talking.finish(Duration::from_secs(20))?;
    drop(fresh);
    ensure!(
        reached,
        "h{} did not reach h{} within {NEW_PAIR_DEADLINE:?} of the kill (new master after \
         {} ms; first reply {})",
        NEW_PAIR.0,
        NEW_PAIR.1,
        new_master.as_millis(),
        first.map_or("never".to_owned(), |at| format!(
            "after {:.0} ms",
            (at - killed_epoch) * 1000.0
        ))
    );
    let new_pair = Duration::from_secs_f64((first.unwrap_or(killed_epoch) - killed_epoch).max(0.0));
    let figures = Failover {
        new_master,
        sent,
        lost: sent.saturating_sub(received),
        new_pair,
        writes,
    };
    stage.step(figures.to_string());
    ensure!(
        new_master <= NEW_MASTER_DEADLINE,
        "the new master took {new_master:?}, more than {NEW_MASTER_DEADLINE:?}"
    );
    ensure!(
        figures.lost == 0,
        "h{}->h{} lost {} of {} packets across the failover",
        TALKING.0,
        TALKING.1,
        figures.lost,
        sent
    );
    Ok((figures, killed))
}

/// Creates a slice on one instance; returns its status and body.
pub(super) fn create(ctl: &Controller, name: &str) -> anyhow::Result<(u16, String)> {
    ctl.request("POST", "/slices", Some(&json!({ "name": name })))
}

/// The `cluster` scenario.
pub fn cluster(stage: &mut Stage) -> anyhow::Result<()> {
    cluster_with_slices(stage)?;

    // Writes on one instance are visible on the others; racing creates admit one.
    stage.rest("POST", "/slices", Some(json!({ "name": "shared" })), 201)?;
    wait_everywhere(stage, "a create on the first instance")?;
    let statuses = race(stage, "contested")?;
    ensure!(
        statuses == [201, 409, 409],
        "racing creates of one slice on the three instances answered {statuses:?}, not \
         one 201 and two 409"
    );
    stage.step("racing creates on three instances: one 201, two 409");
    wait_everywhere(stage, "the contested slice")?;

    // kill -9 of the master.
    let (figures, _killed) = failover(stage, 1)?;
    println!("      cluster {}: {figures}", stage.version.short());

    // One etcd member down: nothing changes. A follower: the leader's loss is an election
    // in etcd, during which a write in flight may or may not be applied, for any client
    // (docs/cluster.md); the election test covers what it does to the master.
    let follower = stage.etcd_mut()?.a_follower()?;
    let name = stage.etcd_mut()?.name(follower).to_owned();
    stage.step(format!("stop etcd member {name}, a follower"));
    stage.etcd_mut()?.stop(follower);
    stage.rest("POST", "/slices", Some(json!({ "name": "one-down" })), 201)?;
    wait_everywhere(stage, "a create with one etcd member down")?;
    stage.reach_both(TALKING.0, TALKING.1)?;
    // The killed member comes back and catches up by itself.
    stage.step(format!("restart etcd member {name}"));
    stage.etcd_mut()?.restart(follower)?;
    stage.etcd_mut()?.wait_healthy(follower)?;
    stage.rest(
        "POST",
        "/slices",
        Some(json!({ "name": "member-back" })),
        201,
    )?;
    wait_everywhere(stage, "a create with the member back")?;

    // The quorum lost for QUORUM_LOST: writes 503 promptly, reads answer, traffic flows.
    let second = (follower + 1) % stage.etcd_mut()?.len();
    let names = {
        let etcd = stage.etcd_mut()?;
        format!("{} and {}", etcd.name(follower), etcd.name(second))
    };
    stage.step(format!("stop etcd members {names}: the quorum is lost"));
    let flowing = PingRun::start(stage, TALKING, QUORUM_LOST_PINGS)?;
    stage.etcd_mut()?.stop(follower);
    stage.etcd_mut()?.stop(second);
    let lost_at = Instant::now();
    let before = stage.ctl()?.view("/slices")?;
    let mut slowest = Duration::ZERO;
    let mut refused = 0;
    while lost_at.elapsed() < QUORUM_LOST {
        let asked = Instant::now();
        let (status, body) = create(stage.ctl()?, &format!("no-quorum-{refused}"))?;
        let took = asked.elapsed();
        let error = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|b| b.get("error").and_then(Value::as_str).map(str::to_owned));
        ensure!(
            status == 503 && error.is_some(),
            "a write without quorum answered {status} {body}, not 503 {{\"error\": ...}}"
        );
        ensure!(
            took <= UNAVAILABLE_DEADLINE,
            "a write without quorum took {took:?} to answer 503"
        );
        ensure!(
            stage.ctl()?.view("/slices")? == before,
            "reads changed without quorum"
        );
        slowest = slowest.max(took);
        refused += 1;
    }
    stage.step(format!(
        "{} s without quorum: {refused} writes answered 503 (the slowest after {} ms), \
         reads unchanged",
        QUORUM_LOST.as_secs(),
        slowest.as_millis()
    ));
    let (sent, received) = flowing.finish(Duration::from_secs(30))?;
    ensure!(
        sent == received,
        "without quorum h{}->h{} lost {} of {sent} packets",
        TALKING.0,
        TALKING.1,
        sent - received
    );
    stage.step(format!(
        "without quorum traffic flows: {received}/{sent} pings"
    ));

    // The quorum back: writes again, no restart of sliced.
    stage.step(format!("restart etcd members {names}"));
    let etcd = stage.etcd_mut()?;
    etcd.restart(follower)?;
    etcd.restart(second)?;
    for at in 0..etcd.len() {
        etcd.wait_healthy(at)?;
    }
    let started = Instant::now();
    let back = sys::poll(RECOVERY, Duration::from_millis(200), || {
        // A 409 is a try whose answer was lost before (it was applied after all).
        Ok(matches!(create(stage.ctl()?, "quorum-back")?.0, 201 | 409).then_some(()))
    })?;
    ensure!(
        back.is_some(),
        "writes did not succeed within {RECOVERY:?} of the quorum's return"
    );
    stage.step(format!(
        "the quorum back, writes succeed after {} ms",
        started.elapsed().as_millis()
    ));
    wait_everywhere(stage, "a create after the quorum came back")?;
    stage.reach_both(TALKING.0, TALKING.1)
}

/// Creates one slice on every instance at once; returns the statuses, sorted.
fn race(stage: &Stage, name: &str) -> anyhow::Result<Vec<u16>> {
    let statuses: Vec<anyhow::Result<u16>> = std::thread::scope(|scope| {
        let racers: Vec<_> = stage
            .controllers()
            .iter()
            .map(|ctl| scope.spawn(move || create(ctl, name).map(|(status, _)| status)))
            .collect();
        racers
            .into_iter()
            .map(|r| {
                r.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a racer panicked")))
            })
            .collect()
    });
    let mut statuses = statuses.into_iter().collect::<anyhow::Result<Vec<u16>>>()?;
    statuses.sort_unstable();
    Ok(statuses)
}

/// The `failover` scenario (not in the default run; `cargo xtask failover`): the kill
/// repeated `runs` times, each time with the killed instance restarted and reconnected
/// before the next, then the REST latency of creates on etcd and on sled.
pub fn failover_report(stage: &mut Stage) -> anyhow::Result<()> {
    let runs = stage.failover_runs();
    cluster_with_slices(stage)?;
    let mut rounds = Vec::new();
    for round in 1..=runs {
        forget_new_pair(stage)?;
        let (figures, mut killed) = failover(stage, round)?;
        println!("      run {round}/{runs}: {figures}");
        rounds.push(figures);
        stage.step(format!(
            "restart the killed instance, sliced at {}",
            killed.http
        ));
        killed.restart(libc::SIGKILL)?;
        stage.add_controller(killed);
        let topo = stage.net()?.topo.clone();
        stage.wait_ready(&topo)?;
        // The restarted instance stands by and writes nothing: the pair talks on.
        stage.reach_both(TALKING.0, TALKING.1)?;
    }
    let spread = |values: Vec<f64>| -> String {
        let mut values = values;
        values.sort_by(f64::total_cmp);
        match (values.first(), values.last()) {
            (Some(min), Some(max)) => format!(
                "min {min:.0}, median {:.0}, max {max:.0}",
                values[values.len() / 2]
            ),
            _ => "none".into(),
        }
    };
    let version = stage.version.short();
    let masters: Vec<f64> = rounds
        .iter()
        .map(|r| r.new_master.as_secs_f64() * 1000.0)
        .collect();
    println!("      failover {version}, {runs} kills of the master:");
    println!("        time to new master (ms): {}", spread(masters));
    println!(
        "        packets lost at 50/s: {}",
        spread(rounds.iter().map(|r| f64::from(r.lost)).collect())
    );
    println!(
        "        new pair reaches (ms): {}",
        spread(
            rounds
                .iter()
                .map(|r| r.new_pair.as_secs_f64() * 1000.0)
                .collect()
        )
    );
    rest_latency(stage)
}

/// Deletes the new pair's slice and ARP entries and makes it again, so that the pair's
/// paths are gone and its next packets go through the controller as if it never talked.
fn forget_new_pair(stage: &mut Stage) -> anyhow::Result<()> {
    stage.rest("DELETE", "/slices", Some(json!({ "name": "fresh" })), 200)?;
    stage.rest("POST", "/slices", Some(json!({ "name": "fresh" })), 201)?;
    for host in [NEW_PAIR.0, NEW_PAIR.1] {
        let port = stage.net()?.host_port(host)?.slice_name();
        stage.rest(
            "POST",
            &format!("/slices/fresh/ports/{port}/mac_addresses"),
            Some(json!({ "name": super::net::mac(host) })),
            201,
        )?;
    }
    let net = stage.net()?;
    for host in [NEW_PAIR.0, NEW_PAIR.1] {
        let ns = net.namespace(host);
        sys::run(&mut sys::command(
            "ip",
            &["-n", &ns, "neigh", "flush", "dev", "eth0"],
        ))?;
    }
    wait_everywhere(stage, "the new pair's slice made again")
}

/// Sequential creates through HTTP, each waiting for its 201: on an instance of the
/// cluster (etcd: a quorum of three members) and on a sliced of its own on sled (an
/// fsync); p50 and p99.
fn rest_latency(stage: &mut Stage) -> anyhow::Result<()> {
    const CREATES: usize = 200;
    let sled = Controller::start(stage.shared_bins(), &stage.dir().join("sled"), None)?;
    let version = stage.version.short();
    for (backend, ctl) in [("etcd", stage.ctl()?), ("sled", &sled)] {
        let mut took = Vec::with_capacity(CREATES);
        for n in 0..CREATES {
            let started = Instant::now();
            let (status, body) = create(ctl, &format!("latency-{n}"))?;
            ensure!(
                status == 201,
                "a create on {backend} answered {status}: {body}"
            );
            took.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        took.sort_by(f64::total_cmp);
        let at = |q: f64| took[((took.len() as f64 * q) as usize).min(took.len() - 1)];
        println!(
            "      REST create latency {version}, {backend}, {CREATES} sequential creates: \
             p50 {:.2} ms, p99 {:.2} ms",
            at(0.50),
            at(0.99)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_master_is_found_by_its_address_in_get_cluster() {
        let instances = [
            ("127.0.0.1:9001".to_owned(), 6001),
            ("127.0.0.1:9002".to_owned(), 6002),
        ];
        let view = json!({
            "master": "b",
            "generation": 7,
            "members": [
                { "name": "a", "http": "127.0.0.1:9001", "openflow": "127.0.0.1:6001" },
                { "name": "b", "http": "http://127.0.0.1:9002", "openflow": "127.0.0.1:6002" },
            ],
        });
        assert_eq!(master_in(&view, &instances), Some(1));
        // Known by its OpenFlow port alone.
        let view =
            json!({ "master": "a", "members": [{ "name": "a", "openflow": "tcp:0.0.0.0:6001" }] });
        assert_eq!(master_in(&view, &instances), Some(0));
        // A master that is not among the instances (the one just killed), or none.
        let view = json!({ "master": "c", "members": [{ "name": "c", "http": "127.0.0.1:9003" }] });
        assert_eq!(master_in(&view, &instances), None);
        assert_eq!(
            master_in(&json!({ "master": null, "members": [] }), &instances),
            None
        );
    }

    #[test]
    fn reads_pings_stamps_and_summary() {
        assert_eq!(
            stamp("[1700000000.250000] 64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.3 ms"),
            Some(1_700_000_000.25)
        );
        assert_eq!(
            stamp("PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data."),
            None
        );
        let text = "--- 10.0.0.2 ping statistics ---\n\
                    300 packets transmitted, 297 received, +3 duplicates, 1% packet loss, time 5980ms\n";
        assert_eq!(summary(text), Some((300, 297)));
        assert_eq!(summary("nothing"), None);
    }
}

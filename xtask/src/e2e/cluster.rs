//! The cluster scenarios: three etcd members, three `sliced --etcd`, and the full mesh of
//! four switches connected to all three controllers. What is shared (slices, racing
//! creates), what a `kill -9` of the master costs the data plane (packets lost by a pair
//! talking at 50 packets per second, the time until a pair that never talked does, the
//! time until another instance is master), and what etcd failures do (one member down:
//! nothing; the quorum lost: writes 503, traffic flows; the quorum back: writes again).
//!
//! `cargo xtask failover --runs N` repeats the kill and prints the figures' spread, with
//! the REST latency of creates on etcd against sled, for docs/benchmarks.md.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::ensure;
use serde_json::{json, Value};

use super::net;
use super::sliced::Controller;
use super::stage::cluster::{
    cluster_with_slices, create, master, wait_everywhere, wait_new_master, NEW_MASTER_DEADLINE,
    NEW_PAIR, TALKING,
};
use super::stage::ping::PingRun;
use super::stage::Stage;
use super::sys;

/// A pair that never talked talks within this of the master's death (issue 11, point 9).
pub(super) const NEW_PAIR_DEADLINE: Duration = Duration::from_secs(3);
/// Every etcd request of sliced is bounded by 3 s (docs/cluster.md, `REQUEST_TIMEOUT`);
/// a write without a quorum answers 503 within that and the round trip.
const UNAVAILABLE_DEADLINE: Duration = Duration::from_secs(5);
/// The quorum back, the etcd client reconnects by itself; well within this.
const RECOVERY: Duration = Duration::from_secs(30);
/// At the ping's 50 packets per second, 6 s: the kill falls inside.
const TALKING_COUNT: u32 = 300;
const NEW_PAIR_COUNT: u32 = 200;
/// The pace of the REST writes on the survivors during a failover.
const WRITE_EVERY: Duration = Duration::from_millis(100);
/// How long the `cluster` scenario keeps etcd without a quorum, and the pings that span it
/// (every 20 ms, with some to spare for the member restarts around it).
const QUORUM_LOST: Duration = Duration::from_secs(10);
const QUORUM_LOST_PINGS: u32 = 600;

fn epoch_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

/// What one failover cost.
#[derive(Debug, Clone, Copy)]
pub(super) struct Failover {
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

/// The `cluster` scenario.
pub(super) fn cluster(stage: &mut Stage) -> anyhow::Result<()> {
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
pub(super) fn failover_report(stage: &mut Stage) -> anyhow::Result<()> {
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
            Some(json!({ "name": net::mac(host) })),
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

//! Issue 34, row 12: a cluster instance paused (SIGSTOP) until Open vSwitch has dropped
//! its connections and its lease has long expired, then woken (SIGCONT) while the
//! switches reconnect to it: first the standby, then the master (the other instance
//! takes over with a newer generation). The two instances run different PACKET_IN
//! meters, so a meter written by the wrong one shows in `dump-meters`; what each one
//! sent, and what the switches answered, is read from Open vSwitch's own message log.
//! docs/cluster.md: a standby never writes.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};

use super::ofmsg_log::{self, Connection, MessageLog};
use super::ovs::OfVersion;
use super::sliced::Controller;
use super::stage::cluster::{master, wait_new_master, wait_roles};
use super::stage::Stage;
use super::sys;
use super::topologies::LINE3;

/// The instances' PACKET_IN rate and burst (`--packet-in-rate`, `--packet-in-burst`):
/// the figures of the issue, 800/1600 for c1 and the defaults for c2.
const METERS: [(u64, u64); 2] = [(800, 1600), (1000, 2000)];
/// sliced's PACKET_IN meter (docs/controller.md).
const PACKET_IN_METER: u32 = 1;
/// The election's lease: sliced's default, which the lab does not change.
const LEASE: Duration = Duration::from_secs(2);
/// Paused for at least this: the lease long expired. Open vSwitch takes longer to drop
/// it: its inactivity probe (5 s, also the least `rconn` takes) goes out after that much
/// silence and the connection is dropped after as much again unanswered, about 10 s.
const PAUSE_AT_LEAST: Duration = Duration::from_secs(3 * LEASE.as_secs());
/// Open vSwitch drops a paused controller within two probe intervals; this is far more,
/// for a loaded machine.
const DROP_DEADLINE: Duration = Duration::from_secs(40);
/// The switches retry a lost controller every second, each attempt given a second for
/// the HELLO; all three at once (they lost it together) well within this.
const ATTEMPT_DEADLINE: Duration = Duration::from_secs(20);
/// A woken instance is connected again from every switch within this (they retry every
/// second: `max_backoff=1000`, and a stalled attempt times out after a probe interval).
const RECONNECT_DEADLINE: Duration = Duration::from_secs(30);
/// Every switch shows the woken instance as slave within this of its reconnecting.
const ROLE_DEADLINE: Duration = Duration::from_secs(20);
/// A new master has its meter on every switch within this of its election.
const METER_DEADLINE: Duration = Duration::from_secs(10);
/// Once the roles are settled (or not), the log is read this much later, so that what
/// the woken instance does after its handshakes is in it too.
const SETTLE: Duration = Duration::from_secs(3);

/// One sliced of the cluster, known by its ports (the stage's list changes order when
/// one is taken out and put back).
#[derive(Debug, Clone)]
struct Instance {
    name: String,
    http: SocketAddr,
    openflow_port: u16,
    /// The target every bridge's Controller record names it by, and the peer of its
    /// connections in Open vSwitch's log (`tcp:127.0.0.1:PORT`, `ssl:` with `--tls`).
    target: String,
    meter: (u64, u64),
}

/// The `standby-wakes` scenario.
pub(super) fn standby_wakes(stage: &mut Stage) -> anyhow::Result<()> {
    let _log = MessageLog::on(stage.ovs())?;
    stage.step("ovs-appctl vlog/set vconn:file:dbg; vlog/disable-rate-limit vconn");
    let flags: Vec<Vec<String>> = METERS
        .iter()
        .map(|(rate, burst)| {
            vec![
                "--packet-in-rate".to_owned(),
                rate.to_string(),
                "--packet-in-burst".to_owned(),
                burst.to_string(),
            ]
        })
        .collect();
    stage.start_cluster_flags(1, &flags)?;
    let instances: Vec<Instance> = stage
        .controllers()
        .iter()
        .zip(METERS)
        .enumerate()
        .map(|(at, (ctl, meter))| Instance {
            name: format!("c{}", at + 1),
            http: ctl.http,
            openflow_port: ctl.openflow_port,
            target: format!(
                "{}:127.0.0.1:{}",
                if ctl.tls { "ssl" } else { "tcp" },
                ctl.openflow_port
            ),
            meter,
        })
        .collect();
    stage.build(LINE3)?;

    let mut failures = Vec::new();
    let first = which(stage, &instances, master(stage)?)?;
    let other = 1 - first;
    if stage.version == OfVersion::Of13 {
        let expected = instances[first].meter;
        let (meters, ok) = wait_meters(stage, expected)?;
        stage.report(format!(
            "before: {} is master, meter {PACKET_IN_METER} on every switch: {}",
            instances[first].name,
            ofmsg_log::per_switch(&meters)
        ));
        if !ok {
            failures.push(format!(
                "before any pause the switches' meter {PACKET_IN_METER} is not the master \
                 {}'s {}: {}",
                instances[first].name,
                ofmsg_log::shown(Some(expected)),
                ofmsg_log::per_switch(&meters)
            ));
        }
    }
    // The standby paused and woken: the master stays master throughout.
    pause_and_wake(stage, &instances, other, first, &mut failures)?;
    // Then the master: the other takes over under a newer generation.
    pause_and_wake(stage, &instances, first, other, &mut failures)?;
    if !failures.is_empty() {
        bail!("{}", failures.join("\n  "));
    }
    Ok(())
}

/// Which instance the stage's controller at `at` is.
fn which(stage: &Stage, instances: &[Instance], at: usize) -> anyhow::Result<usize> {
    let ctl = stage
        .controllers()
        .get(at)
        .context("no such controller in the stage")?;
    instances
        .iter()
        .position(|i| i.openflow_port == ctl.openflow_port)
        .context("a controller the scenario did not start")
}

/// Where the instance is in the stage's list.
fn index_of(stage: &Stage, instance: &Instance) -> anyhow::Result<usize> {
    stage
        .controllers()
        .iter()
        .position(|c| c.openflow_port == instance.openflow_port)
        .with_context(|| format!("{} is not among the stage's controllers", instance.name))
}

/// Each switch's dpid and its record of one controller target (None: it has none).
type Records = Vec<(u64, Option<Connection>)>;
/// Each switch's dpid and its PACKET_IN meter as (rate, burst) (None: it has none).
type Meters = Vec<(u64, Option<(u64, u64)>)>;

/// Every switch's record of `target`, with its dpid.
fn records(stage: &Stage, target: &str) -> anyhow::Result<Records> {
    let mut all = Vec::new();
    for (dpid, bridge) in stage.net()?.bridges() {
        let found = ofmsg_log::connections(stage.ovs(), &bridge)?
            .into_iter()
            .find(|c| c.target == target);
        all.push((dpid, found));
    }
    Ok(all)
}

/// Polls the switches' records of `target` until `wanted` holds for each; returns how
/// long that took, or None at the deadline, with the records as last seen.
fn wait_records(
    stage: &Stage,
    target: &str,
    deadline: Duration,
    wanted: impl Fn(&Connection) -> bool,
) -> anyhow::Result<(Option<Duration>, Records)> {
    let started = Instant::now();
    let mut last = Vec::new();
    let done = sys::poll(deadline, Duration::from_millis(100), || {
        last = records(stage, target)?;
        Ok(last
            .iter()
            .all(|(_, c)| c.as_ref().is_some_and(&wanted))
            .then(|| started.elapsed()))
    })?;
    Ok((done, last))
}

fn shown_records(records: &Records) -> String {
    let values: Vec<(u64, String)> = records
        .iter()
        .map(|(dpid, c)| {
            let text = match c {
                Some(c) if c.connected && c.role.is_empty() => "connected".to_owned(),
                Some(c) if c.connected => c.role.clone(),
                Some(_) => "not connected".to_owned(),
                None => "no record".to_owned(),
            };
            (*dpid, text)
        })
        .collect();
    ofmsg_log::per_switch(&values)
}

/// Every switch's PACKET_IN meter, polled until each is `expected` (or the deadline):
/// the meters as last read, and whether they all were.
fn wait_meters(stage: &Stage, expected: (u64, u64)) -> anyhow::Result<(Vec<(u64, String)>, bool)> {
    let mut last = Vec::new();
    let ok = sys::poll(METER_DEADLINE, Duration::from_millis(200), || {
        last = meters(stage)?;
        Ok(last.iter().all(|(_, m)| *m == Some(expected)).then_some(()))
    })?;
    let shown = last
        .into_iter()
        .map(|(dpid, m)| (dpid, ofmsg_log::shown(m)))
        .collect();
    Ok((shown, ok.is_some()))
}

fn meters(stage: &Stage) -> anyhow::Result<Meters> {
    let dpids: Vec<u64> = stage.net()?.topo.switches.iter().copied().collect();
    dpids
        .into_iter()
        .map(|dpid| {
            Ok((
                dpid,
                ofmsg_log::meter(&stage.meters(dpid)?, PACKET_IN_METER),
            ))
        })
        .collect()
}

/// A paused sliced, out of the stage's list (its views would wait on it); resumed if the
/// scenario ends early, so that it can be stopped.
struct Paused(Option<Controller>);

impl Paused {
    fn wake(mut self) -> Option<Controller> {
        let ctl = self.0.take()?;
        sys::signal(ctl.pid(), libc::SIGCONT);
        Some(ctl)
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        if let Some(ctl) = &self.0 {
            sys::signal(ctl.pid(), libc::SIGCONT);
        }
    }
}

/// Polls Open vSwitch's log from `mark` on until `seen` holds; returns how long that
/// took, or None at the deadline.
fn wait_log(
    stage: &Stage,
    mark: usize,
    deadline: Duration,
    seen: impl Fn(&str) -> bool,
) -> anyhow::Result<Option<Duration>> {
    let started = Instant::now();
    sys::poll(deadline, Duration::from_millis(25), || {
        let log = stage.ovs().log_between(mark, None)?;
        Ok(seen(&log).then(|| started.elapsed()))
    })
}

/// Pauses instance `paused` until every switch has dropped it and its lease has long
/// expired, wakes it, lets the switches reconnect, and checks what it sent from its
/// waking on: no write on any connection (it never becomes master: `master_after` holds,
/// or takes, the lease meanwhile), every switch's meter still `master_after`'s, and
/// every switch holding it as slave. What fails is added to `failures`, so that every
/// figure is printed before the scenario fails.
fn pause_and_wake(
    stage: &mut Stage,
    instances: &[Instance],
    paused: usize,
    master_after: usize,
    failures: &mut Vec<String>,
) -> anyhow::Result<()> {
    let me = &instances[paused];
    let boss = &instances[master_after];
    let was_master = which(stage, instances, master(stage)?)? == paused;
    let role = if was_master { "master" } else { "standby" };
    let label = format!("{} {role} {}", stage.version.short(), me.name);
    let switches: BTreeSet<u64> = stage.net()?.topo.switches.iter().copied().collect();
    let bridges: Vec<String> = stage.net()?.bridges().map(|(_, b)| b).collect();
    let every = |log: &str, has: fn(&str, &str, &str) -> bool| {
        bridges.iter().all(|bridge| has(log, bridge, &me.target))
    };

    let ctl = stage.take_controller(index_of(stage, me)?)?;
    let pid = ctl.pid();
    stage.step(format!(
        "SIGSTOP the {role} {} (sliced at {}, pid {pid})",
        me.name, me.http
    ));
    let pause_mark = stage.ovs().log_mark();
    let paused_at = Instant::now();
    sys::signal(pid, libc::SIGSTOP);
    let sleeper = Paused(Some(ctl));

    if was_master {
        let took = wait_new_master(stage, paused_at)?;
        stage.step(format!("a new master after {} ms", took.as_millis()));
    }
    let now_master = which(stage, instances, master(stage)?)?;
    ensure!(
        now_master == master_after,
        "{} is master while {} is paused, not {}",
        instances[now_master].name,
        me.name,
        boss.name
    );
    wait_roles(stage, index_of(stage, boss)?, &switches)?;
    let dropped = wait_log(stage, pause_mark, DROP_DEADLINE, |log| {
        every(log, ofmsg_log::dropped)
    })?
    .with_context(|| {
        format!(
            "Open vSwitch's log shows not every switch dropping the paused {} within \
             {DROP_DEADLINE:?}",
            me.name
        )
    })?;
    stage.step(format!(
        "every switch dropped {} {} ms after the pause",
        me.name,
        dropped.as_millis()
    ));
    let expected = boss.meter;
    let metered = stage.version == OfVersion::Of13;
    let mut before = String::from("no meters on 1.0");
    if metered {
        let (meters, ok) = wait_meters(stage, expected)?;
        before = ofmsg_log::per_switch(&meters);
        if !ok {
            failures.push(format!(
                "{label}: while it was paused the master {}'s meter {} is not on every \
                 switch: {before}",
                boss.name,
                ofmsg_log::shown(Some(expected))
            ));
        }
    }
    std::thread::sleep(PAUSE_AT_LEAST.saturating_sub(paused_at.elapsed()));
    // Woken while every switch's retry waits for its HELLO, it finds the switches at
    // once, before its election has caught up: the moment of the issue.
    let retry_mark = stage.ovs().log_mark();
    let attempting = wait_log(stage, retry_mark, ATTEMPT_DEADLINE, |log| {
        every(log, ofmsg_log::attempting)
    })?;
    ensure!(
        attempting.is_some(),
        "Open vSwitch's log shows no moment within {ATTEMPT_DEADLINE:?} when every switch \
         was trying to connect to the paused {}",
        me.name
    );

    let wake_mark = stage.ovs().log_mark();
    let ctl = sleeper.wake().context("the paused instance is gone")?;
    let paused_for = paused_at.elapsed();
    stage.step(format!(
        "SIGCONT {} after {} ms, every switch's attempt to connect to it under way",
        me.name,
        paused_for.as_millis()
    ));
    stage.add_controller(ctl);

    let back = wait_log(stage, wake_mark, RECONNECT_DEADLINE, |log| {
        every(log, ofmsg_log::connected)
    })?;
    if back.is_none() {
        failures.push(format!(
            "{label}: Open vSwitch's log shows not every switch connected to it again \
             within {RECONNECT_DEADLINE:?} of SIGCONT"
        ));
    }
    let (slave, roles) = wait_records(stage, &me.target, ROLE_DEADLINE, |c| {
        c.connected && c.role == "slave"
    })?;
    let confirmed = wait_roles(stage, index_of(stage, boss)?, &switches);
    std::thread::sleep(SETTLE);
    let log = stage.ovs().log_between(wake_mark, None)?;
    let woken = ofmsg_log::traffic(&log, &me.target);
    let kept = ofmsg_log::traffic(&log, &boss.target);
    let boss_roles = records(stage, &boss.target)?;
    let (after, meters_kept) = if metered {
        let now = meters(stage)?;
        let kept = now.iter().all(|(_, m)| *m == Some(expected));
        let now: Vec<(u64, String)> = now
            .into_iter()
            .map(|(dpid, m)| (dpid, ofmsg_log::shown(m)))
            .collect();
        (ofmsg_log::per_switch(&now), kept)
    } else {
        ("no meters on 1.0".to_owned(), true)
    };

    stage.report(format!(
        "{label}: paused {} ms; every switch had dropped it {} ms after SIGSTOP and \
         connected to it again {}",
        paused_for.as_millis(),
        dropped.as_millis(),
        back.map_or("never".to_owned(), |b| format!(
            "{} ms after SIGCONT",
            b.as_millis()
        ))
    ));
    stage.report(format!(
        "  meter {PACKET_IN_METER} (the master {}'s is {}): before waking {before}; after \
         {after}",
        boss.name,
        ofmsg_log::shown(Some(expected))
    ));
    stage.report(format!(
        "  Open vSwitch's log since SIGCONT, {} ({}): {woken}",
        me.name, me.target
    ));
    stage.report(format!(
        "  Open vSwitch's log since SIGCONT, {} ({}, master): {kept}",
        boss.name, boss.target
    ));
    stage.report(format!(
        "  the Controller table: {} is {}; {} is {}",
        me.name,
        shown_records(&roles),
        boss.name,
        shown_records(&boss_roles)
    ));

    if woken.write_count() > 0 {
        failures.push(format!(
            "{label}: woken, and never master, it sent {} write(s) ({woken}); the first: {}",
            woken.write_count(),
            woken.first_write.as_deref().unwrap_or_default()
        ));
    }
    if woken.granted("master") > 0 {
        failures.push(format!(
            "{label}: a switch made it master after it woke, while {} held the lease",
            boss.name
        ));
    }
    if !meters_kept {
        failures.push(format!(
            "{label}: after it woke the meters are {after} (before: {before}), not the \
             master {}'s {}",
            boss.name,
            ofmsg_log::shown(Some(expected))
        ));
    }
    if slave.is_none() {
        failures.push(format!(
            "{label}: not slave on every switch {ROLE_DEADLINE:?} after waking: {}",
            shown_records(&roles)
        ));
    }
    if let Err(err) = confirmed {
        failures.push(format!("{label}: GET /cluster: {err:#}"));
    }
    Ok(())
}

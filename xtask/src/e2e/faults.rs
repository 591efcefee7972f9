//! Faults beyond kill -9 (issue 25): a master that is paused past its lease and wakes up
//! (a VM freeze, a long GC: SIGSTOP, then SIGCONT), and a master cut off from etcd by the
//! network (a proxy between them that black-holes everything, then lets it through).
//! Traffic of an established pair is watched throughout and REST writes go on; figures
//! go to docs/failover.md by hand.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use serde_json::Value;

use super::proxy::Proxy;
use super::sliced::Controller;
use super::stage::cluster::{
    cluster_view, cluster_with_slices, create, slices_on_cluster, wait_everywhere, wait_master,
    wait_new_master, wait_roles, NEW_PAIR, TALKING,
};
use super::stage::ping::PingRun;
use super::stage::Stage;
use super::sys;

/// The election's lease in the lab: sliced's default (`slice_etcd::DEFAULT_LEASE_TTL`),
/// which the lab does not change.
const LEASE: Duration = Duration::from_secs(2);
/// How long the master stays paused: three leases, so that its lease has long expired.
const PAUSE: Duration = Duration::from_secs(3 * LEASE.as_secs());
/// How long the woken instance may take to see that it lost, and stand by.
const STAND_BY_DEADLINE: Duration = Duration::from_secs(10);
/// Pings of the established pair: every 20 ms for the whole fault and its aftermath.
const PINGS: u32 = 1000;

/// The master paused for three leases, then resumed: a standby takes over within the
/// deadline a kill has, the established pair loses no packet, writes through a standby
/// succeed meanwhile and are all there after, the woken instance stands by (every switch
/// confirms it as slave: what it writes, a switch refuses), and the slices stay apart.
pub(super) fn pause_master(stage: &mut Stage) -> anyhow::Result<()> {
    cluster_with_slices(stage)?;
    let switches = stage.net()?.topo.switches.iter().copied().collect();
    let master = wait_master(stage, Duration::from_secs(10))?;
    let pinging = PingRun::start(stage, TALKING, PINGS)?;
    // Out of the stage's list while paused: a stopped process accepts connections and
    // never answers, and every view would wait on it.
    let paused = stage.take_controller(master)?;
    let pid = paused.pid();
    stage.step(format!(
        "SIGSTOP the master (sliced at {}, pid {pid})",
        paused.http
    ));
    let paused_at = Instant::now();
    sys::signal(pid, libc::SIGSTOP);
    let took = wait_new_master(stage, paused_at)?;
    stage.step(format!(
        "a standby is master {} ms after the pause",
        took.as_millis()
    ));
    let mut written = Vec::new();
    let mut round = 0;
    while paused_at.elapsed() < PAUSE {
        round += 1;
        let name = format!("while-paused-{round}");
        let (status, body) = create(stage.ctl()?, &name)?;
        ensure!(
            status == 201,
            "a write while the master is paused answered {status} {body}"
        );
        written.push(name);
        std::thread::sleep(Duration::from_millis(500));
    }
    stage.step(format!(
        "{} writes through a standby while the master was paused: all 201",
        written.len()
    ));
    sys::signal(pid, libc::SIGCONT);
    let woke_at = Instant::now();
    stage.step(format!(
        "SIGCONT after {} ms",
        paused_at.elapsed().as_millis()
    ));
    let standing_by = sys::poll(STAND_BY_DEADLINE, Duration::from_millis(100), || {
        let view = cluster_view(&paused);
        let master_name = view
            .as_ref()
            .and_then(|v| v.get("master"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let own_name = view
            .as_ref()
            .and_then(|v| v.get("instance"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        Ok((master_name.is_some() && master_name != own_name).then_some(()))
    })?;
    ensure!(
        standing_by.is_some(),
        "the woken instance did not stand by within {STAND_BY_DEADLINE:?}: {:?}",
        cluster_view(&paused)
    );
    stage.step(format!(
        "the woken instance stands by {} ms after SIGCONT",
        woke_at.elapsed().as_millis()
    ));
    stage.add_controller(paused);
    let new_master = wait_master(stage, Duration::from_secs(10))?;
    wait_roles(stage, new_master, &switches)?;

    after_the_fault(stage, pinging, &written, "pause")
}

/// How long the master stays cut off from etcd: three leases, as the pause.
const CUT: Duration = PAUSE;
/// A write to an instance cut off from etcd must answer 503 within this.
const UNAVAILABLE_DEADLINE: Duration = Duration::from_secs(5);

/// Whether `ctl`'s `GET /cluster` names a master other than itself.
fn stands_by(ctl: &Controller) -> bool {
    let view = cluster_view(ctl);
    let name = |key: &str| {
        view.as_ref()
            .and_then(|v| v.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let master = name("master");
    master.is_some() && master != name("instance")
}

/// Every instance reaches etcd through proxies of its own; the master's are cut for three
/// leases, then restored. A standby takes over; the cut instance stops writing to the
/// switches (every switch confirms it as slave), its writes answer 503 while the others'
/// succeed; no packet of the established pair is lost; once restored it stands by and
/// takes writes again, and every acknowledged write is listed everywhere.
pub(super) fn etcd_cut(stage: &mut Stage) -> anyhow::Result<()> {
    let mut proxies: Vec<Vec<Proxy>> = Vec::new();
    stage.start_cluster_with(3, 3, |etcd, _| {
        let mine = etcd
            .clients()
            .into_iter()
            .map(Proxy::start)
            .collect::<anyhow::Result<Vec<Proxy>>>()?;
        let endpoints = mine
            .iter()
            .map(|proxy| format!("http://{}", proxy.addr))
            .collect::<Vec<_>>()
            .join(",");
        proxies.push(mine);
        Ok(endpoints)
    })?;
    slices_on_cluster(stage)?;
    let switches = stage.net()?.topo.switches.iter().copied().collect();
    let master = wait_master(stage, Duration::from_secs(10))?;
    let pinging = PingRun::start(stage, TALKING, PINGS)?;
    // Out of the stage's list while cut: it is no member of the election then (its
    // record's lease expires), and the others' views must not wait for it.
    let cut = stage.take_controller(master)?;
    stage.step(format!(
        "cut sliced at {} (the master) off from etcd",
        cut.http
    ));
    let cut_at = Instant::now();
    for proxy in &proxies[master] {
        proxy.cut();
    }
    let took = wait_new_master(stage, cut_at)?;
    stage.step(format!(
        "another instance is master {} ms after the cut",
        took.as_millis()
    ));
    let new_master = wait_master(stage, Duration::from_secs(10))?;
    // The others confirm their roles; the cut one is slave at every switch too, or the
    // new master's claim would not have been confirmed (one master per switch).
    wait_roles(stage, new_master, &switches)?;
    let mut written = Vec::new();
    let mut slowest_refusal = Duration::ZERO;
    let mut round = 0;
    while cut_at.elapsed() < CUT {
        round += 1;
        let name = format!("while-cut-{round}");
        let (status, body) = create(&stage.controllers()[new_master], &name)?;
        ensure!(
            status == 201,
            "a write to the new master while cut answered {status} {body}"
        );
        written.push(name);
        let asked = Instant::now();
        let (status, body) = create(&cut, &format!("cut-{round}"))?;
        let took = asked.elapsed();
        ensure!(
            status == 503 && took <= UNAVAILABLE_DEADLINE,
            "a write to the cut instance answered {status} after {took:?}: {body}"
        );
        slowest_refusal = slowest_refusal.max(took);
    }
    stage.step(format!(
        "while cut: {} writes to the new master answered 201; the cut instance answered \
         503 to each (the slowest after {} ms)",
        written.len(),
        slowest_refusal.as_millis()
    ));
    for proxy in &proxies[master] {
        proxy.restore();
    }
    let restored_at = Instant::now();
    stage.step(format!("restore after {} ms", cut_at.elapsed().as_millis()));
    let back = sys::poll(STAND_BY_DEADLINE, Duration::from_millis(100), || {
        Ok(stands_by(&cut).then_some(()))
    })?;
    ensure!(
        back.is_some(),
        "the cut instance does not stand by {STAND_BY_DEADLINE:?} after the restore: {:?}",
        cluster_view(&cut)
    );
    let write_back = sys::poll(STAND_BY_DEADLINE, Duration::from_millis(200), || {
        Ok(matches!(create(&cut, "after-cut")?.0, 201 | 409).then_some(()))
    })?;
    ensure!(
        write_back.is_some(),
        "the cut instance takes no write {STAND_BY_DEADLINE:?} after the restore"
    );
    written.push("after-cut".to_owned());
    stage.step(format!(
        "the restored instance stands by and takes writes {} ms after the restore",
        restored_at.elapsed().as_millis()
    ));
    stage.add_controller(cut);
    let new_master = wait_master(stage, Duration::from_secs(10))?;
    wait_roles(stage, new_master, &switches)?;
    after_the_fault(stage, pinging, &written, "cut")
}

/// What every fault must leave: no packet of the pinging pair lost, every acknowledged
/// write listed by every instance, and the two slices' hosts still apart.
fn after_the_fault(
    stage: &mut Stage,
    pinging: PingRun,
    written: &[String],
    fault: &str,
) -> anyhow::Result<()> {
    let (sent, received) = pinging.finish(Duration::from_secs(60))?;
    ensure!(
        sent == received,
        "h{}->h{} lost {} of {sent} packets across the {fault}",
        TALKING.0,
        TALKING.1,
        sent - received
    );
    stage.step(format!(
        "h{}->h{}: {received}/{sent} pings answered across the {fault}",
        TALKING.0, TALKING.1
    ));
    wait_everywhere(stage, &format!("the writes made during the {fault}"))?;
    let listed = stage.ctl()?.view("/slices")?;
    for name in written {
        let there = listed
            .as_array()
            .into_iter()
            .flatten()
            .any(|slice| slice.get("name").and_then(Value::as_str) == Some(name.as_str()));
        ensure!(there, "the acknowledged write {name} is missing: {listed}");
    }
    stage
        .isolated(&[
            (TALKING.0, NEW_PAIR.0),
            (NEW_PAIR.0, TALKING.0),
            (TALKING.1, NEW_PAIR.1),
        ])
        .with_context(|| format!("isolation after the {fault}"))
}

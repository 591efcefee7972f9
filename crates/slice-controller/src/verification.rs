//! Live data-plane verification (issue 37): every switch's flow tables, read back, are
//! handed to [`slice_verify`], which proves from them which bound host can reach which;
//! what it finds is served at `GET /verification`, counted in the metrics and told on
//! `/events`.
//!
//! Two halves. [`Verification`] lives with the engine (in the server's decider, under
//! its lock): it asks for the read-backs (one after each pipeline write a switch
//! acknowledged, and every switch once per interval, spread over it), hands each read to
//! the engine, which repairs what it owns and deletes what it did not write, and posts
//! the tables with the network they are judged against to the worker. The worker is a
//! thread of its own: the verifier runs there, off the engine's lock, on the newest state
//! posted (a switch read twice before the worker woke is verified once, from the second
//! read), and publishes the outcome where [`VerificationHandle`] reads it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::{Condvar, Mutex};
use serde::Serialize;
use slice_core::{MacAddress, Membership, PortId};
use tokio::sync::broadcast;

use crate::engine::Engine;
use crate::metrics::ControllerMetrics;
use crate::notice::Notice;
use crate::protocol::{FlowsRead, RawTable};

mod entry;
mod schedule;

pub use self::entry::ForeignEntry;
use self::schedule::Schedule;

/// How often every switch is read back and verified unless configured otherwise.
pub const DEFAULT_VERIFICATION_INTERVAL: Duration = Duration::from_secs(30);

/// The verifier thread rests this many times as long as its last run took before it
/// runs again (what arrives meanwhile is verified together): at most a quarter of a
/// core, so that on a busy machine it slows down instead of taking the CPU the switches'
/// sessions need.
const REST_PER_RUN: u32 = 3;

/// The foreign entries kept for the answer, newest last: each was removed when found,
/// so these are a record, bounded however often someone writes into a switch.
const FOREIGN_KEPT: usize = 64;

/// The engine's half: owned by the server's decider, called under its lock.
pub struct Verification {
    shared: Arc<Shared>,
    schedule: Schedule,
    /// The slices changed since the membership was last posted to the worker.
    membership_changed: bool,
    /// The foreign entries each switch's latest read-back held (all removed since).
    foreign_now: HashMap<u64, usize>,
    /// Switches whose latest read-back made the engine write entries again: the write's
    /// acknowledgement does not read them back at once, so that a switch that never
    /// reports an entry as written cannot keep sliced writing it (the interval's read
    /// checks it).
    rewritten: HashSet<u64>,
    worker: Option<std::thread::JoinHandle<()>>,
}

/// What a running controller answers `GET /verification` with.
#[derive(Clone)]
pub struct VerificationHandle {
    shared: Arc<Shared>,
}

struct Shared {
    interval: Duration,
    /// Violations of each kind a report lists.
    list_limit: usize,
    inbox: Mutex<Inbox>,
    wake: Condvar,
    published: Mutex<Published>,
    metrics: Arc<ControllerMetrics>,
    notices: broadcast::Sender<Notice>,
}

/// What waits for the worker: the newest table of each switch read since it last took
/// its inbox, and the newest network. Bounded by the connected switches, each table by
/// the read-back's own bounds.
#[derive(Default)]
struct Inbox {
    /// Each switch's table, with its live ports.
    tables: HashMap<u64, (RawTable, Vec<u32>)>,
    gone: HashSet<u64>,
    network: Option<Network>,
    stopped: bool,
}

impl Inbox {
    fn is_empty(&self) -> bool {
        self.tables.is_empty() && self.gone.is_empty() && self.network.is_none()
    }
}

/// What the tables are judged against: the links, the slices and where each bound host
/// is served.
struct Network {
    links: Vec<(PortId, PortId)>,
    membership: Option<Membership>,
    served_at: Vec<(MacAddress, PortId)>,
}

#[derive(Default)]
struct Published {
    standby: bool,
    report: Option<Computed>,
    last_violation: Option<Computed>,
    switches_read: usize,
    foreign: VecDeque<ForeignEntry>,
    foreign_total: u64,
    repairs: u64,
    /// Entries the verifier could not read (and took as sending to the controller).
    unreadable: usize,
}

#[derive(Clone)]
struct Computed {
    at_unix_ms: u64,
    duration_us: u64,
    report: slice_verify::Report,
}

impl Computed {
    fn view(&self) -> ComputedView {
        ComputedView {
            computed_at_unix_ms: self.at_unix_ms,
            duration_us: self.duration_us,
            proven: proven(&self.report),
            report: self.report.clone(),
        }
    }
}

fn proven(report: &slice_verify::Report) -> bool {
    report.is_clean()
}

/// The answer of `GET /verification` (docs/api.md, "Verification").
#[derive(Debug, Clone, Serialize)]
pub struct VerificationView {
    /// `off`, `pending` (no verification yet), `standby` (a cluster's standby reads no
    /// switch: the master verifies) or `verified`.
    pub state: &'static str,
    pub interval_secs: u64,
    /// The latest verification, with when it was computed.
    pub latest: Option<ComputedView>,
    /// The latest one that found a violation, kept after repairs made it go.
    pub last_violation: Option<ComputedView>,
    /// Switches whose tables the latest verification judged.
    pub switches_read: usize,
    /// Entries sliced did not write, found in the switches and removed, newest last
    /// (at most the last 64); `foreign_total` counts them all.
    pub foreign: Vec<ForeignEntry>,
    pub foreign_total: u64,
    /// Entries written again or removed because a read-back found them missing, wrong
    /// or foreign.
    pub repairs: u64,
    pub unreadable_entries: usize,
}

/// One verification.
#[derive(Debug, Clone, Serialize)]
pub struct ComputedView {
    pub computed_at_unix_ms: u64,
    pub duration_us: u64,
    /// No leak, no black hole, no loop, nothing left unverified.
    pub proven: bool,
    pub report: slice_verify::Report,
}

impl Verification {
    /// Starts the worker, unless `interval` is zero (verification off).
    pub fn start(
        interval: Duration,
        list_limit: usize,
        metrics: Arc<ControllerMetrics>,
        notices: broadcast::Sender<Notice>,
    ) -> Self {
        let shared = Arc::new(Shared {
            interval,
            list_limit,
            inbox: Mutex::default(),
            wake: Condvar::new(),
            published: Mutex::default(),
            metrics,
            notices,
        });
        let worker = (!interval.is_zero())
            .then(|| {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name("sliced-verify".into())
                    .spawn(move || work(&shared))
                    .map_err(|err| log::error!("cannot start the verification thread: {err}"))
                    .ok()
            })
            .flatten();
        Self {
            shared,
            schedule: Schedule::new(interval),
            membership_changed: true,
            foreign_now: HashMap::new(),
            rewritten: HashSet::new(),
            worker,
        }
    }

    pub fn handle(&self) -> VerificationHandle {
        VerificationHandle {
            shared: Arc::clone(&self.shared),
        }
    }

    fn on(&self) -> bool {
        self.worker.is_some()
    }

    /// Hands `read` to the engine (which repairs what it owns and deletes what it did not
    /// write) and its tables to the verifier.
    pub fn flows_read(
        &mut self,
        engine: &mut Engine,
        dpid: u64,
        mut read: FlowsRead,
        now: Instant,
    ) {
        let raw = read.raw.take();
        if !self.on() || !engine.verifies(dpid) {
            return engine.flows_read(dpid, read, now);
        }
        let foreign = raw
            .as_ref()
            .map(|raw| entry::foreign(dpid, raw, &read.entries))
            .unwrap_or_default();
        let verified_before = self.schedule.read(dpid, now);
        engine.flows_read(dpid, read, now);
        // The first read of a switch is followed by its whole pipeline: a write, not a
        // repair.
        let rewritten = if verified_before {
            engine.pipeline_changes_queued(dpid)
        } else {
            0
        };
        let repairs = (foreign.len() + rewritten) as u64;
        if rewritten > 0 {
            self.rewritten.insert(dpid);
        } else {
            self.rewritten.remove(&dpid);
        }
        self.foreign_now.insert(dpid, foreign.len());
        self.count_foreign_now();
        for found in &foreign {
            log::warn!(
                "switch {dpid:#x}: an entry sliced did not write, removed: table {} priority {} \
                 cookie {:#x} match {} actions {}",
                found.table_id,
                found.priority,
                found.cookie,
                found.r#match,
                found.actions
            );
        }
        if rewritten > 0 {
            log::warn!("switch {dpid:#x}: {rewritten} entries of the pipeline missing or wrong: written again");
        }
        self.shared.metrics.verification.repairs.inc_by(repairs);
        self.shared
            .metrics
            .verification
            .foreign
            .inc_by(foreign.len() as u64);
        self.shared.record(foreign, repairs);
        if let Some(raw) = raw {
            let network = self.network(engine);
            let ports = engine.live_ports(dpid);
            self.shared.post(|inbox| {
                inbox.gone.remove(&dpid);
                inbox.tables.insert(dpid, (raw, ports));
                // A membership the worker has not taken yet stays, unless this one is newer.
                let mut network = network;
                if network.membership.is_none() {
                    network.membership = inbox.network.take().and_then(|old| old.membership);
                }
                inbox.network = Some(network);
            });
        }
    }

    fn count_foreign_now(&self) {
        let now: usize = self.foreign_now.values().sum();
        let gauge = &self.shared.metrics.verification.foreign_now;
        gauge.set(i64::try_from(now).unwrap_or(i64::MAX));
    }

    fn network(&mut self, engine: &Engine) -> Network {
        let membership =
            std::mem::take(&mut self.membership_changed).then(|| engine.membership().clone());
        Network {
            links: engine
                .links()
                .into_iter()
                .map(|link| (link.src, link.dst))
                .collect(),
            membership,
            served_at: engine.served_hosts(),
        }
    }

    /// The slices changed: the next tables posted go with the new membership.
    pub fn membership_changed(&mut self) {
        self.membership_changed = true;
    }

    /// `dpid` acknowledged its pipeline writes: it is read back to verify what it holds
    /// once its writes have settled ([`Schedule::written`]), unless it waits to retry entries
    /// its full table refused (a read now would write them again before the retry's
    /// wait) or the write was a repair (the interval's read checks that one).
    pub fn written(&mut self, engine: &mut Engine, dpid: u64, now: Instant) {
        let wait = engine.refilling(dpid) || self.rewritten.contains(&dpid);
        if self.on() && engine.verifies(dpid) && !wait {
            self.schedule.written(dpid, now);
        }
    }

    /// Reads back the switches due, spread over the interval, and forgets the ones gone.
    pub fn tick(&mut self, engine: &mut Engine, now: Instant) {
        if !self.on() {
            return;
        }
        let switches = engine.verified_switches();
        self.shared.published.lock().standby = engine.is_standby();
        let gone = self.schedule.keep(&switches);
        if !gone.is_empty() {
            for dpid in &gone {
                self.foreign_now.remove(dpid);
                self.rewritten.remove(dpid);
            }
            self.count_foreign_now();
            self.shared.post(|inbox| {
                for dpid in gone {
                    inbox.tables.remove(&dpid);
                    inbox.gone.insert(dpid);
                }
            });
        }
        for dpid in self.schedule.settled(now) {
            engine.reconcile(dpid);
        }
        for dpid in self.schedule.due(&switches, now) {
            engine.reconcile(dpid);
        }
    }
}

impl Drop for Verification {
    fn drop(&mut self) {
        self.shared.post(|inbox| inbox.stopped = true);
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

impl Shared {
    /// Waits until `until` unless the controller stops first; false when it does.
    fn rest(&self, until: Instant) -> bool {
        let mut inbox = self.inbox.lock();
        while !inbox.stopped && Instant::now() < until {
            self.wake.wait_until(&mut inbox, until);
        }
        !inbox.stopped
    }

    fn post(&self, change: impl FnOnce(&mut Inbox)) {
        change(&mut self.inbox.lock());
        self.wake.notify_one();
    }

    fn record(&self, foreign: Vec<ForeignEntry>, repairs: u64) {
        let mut published = self.published.lock();
        published.repairs += repairs;
        published.foreign_total += foreign.len() as u64;
        published.foreign.extend(foreign);
        while published.foreign.len() > FOREIGN_KEPT {
            published.foreign.pop_front();
        }
    }
}

impl VerificationHandle {
    /// What the latest verification found.
    pub fn view(&self) -> VerificationView {
        let published = self.shared.published.lock();
        let state = if self.shared.interval.is_zero() {
            "off"
        } else if published.standby {
            "standby"
        } else if published.report.is_some() {
            "verified"
        } else {
            "pending"
        };
        VerificationView {
            state,
            interval_secs: self.shared.interval.as_secs(),
            latest: published.report.as_ref().map(Computed::view),
            last_violation: published.last_violation.as_ref().map(Computed::view),
            switches_read: published.switches_read,
            foreign: published.foreign.iter().cloned().collect(),
            foreign_total: published.foreign_total,
            repairs: published.repairs,
            unreadable_entries: published.unreadable,
        }
    }
}

/// The worker: verifies the newest state posted, whenever something was.
fn work(shared: &Shared) {
    let mut verifier = slice_verify::Verifier::new().with_list_limit(shared.list_limit);
    let mut unreadable: HashMap<u64, usize> = HashMap::new();
    let mut switches: HashSet<u64> = HashSet::new();
    let mut membership = Membership::default();
    loop {
        let inbox = {
            let mut inbox = shared.inbox.lock();
            while inbox.is_empty() && !inbox.stopped {
                shared.wake.wait(&mut inbox);
            }
            if inbox.stopped {
                return;
            }
            std::mem::take(&mut *inbox)
        };
        let started = Instant::now();
        for dpid in inbox.gone {
            verifier.remove_switch(dpid);
            unreadable.remove(&dpid);
            switches.remove(&dpid);
        }
        if let Some(network) = inbox.network {
            if let Some(new) = network.membership {
                membership = new;
            }
            verifier.set_links(network.links);
            verifier.set_hosts(&membership, network.served_at);
        }
        for (dpid, (table, ports)) in inbox.tables {
            verifier.set_ports(dpid, ports);
            let refused = verifier.set_tables(dpid, table.version, table.flows);
            unreadable.insert(dpid, refused.len());
            switches.insert(dpid);
        }
        let report = verifier.verify();
        let took = started.elapsed();
        shared.publish(report, took, switches.len(), unreadable.values().sum());
        if !shared.rest(started + took * (REST_PER_RUN + 1)) {
            return;
        }
    }
}

impl Shared {
    fn publish(
        &self,
        report: slice_verify::Report,
        took: Duration,
        switches: usize,
        unreadable: usize,
    ) {
        let metrics = &self.metrics.verification;
        metrics.runs.inc();
        metrics.seconds.observe(took.as_secs_f64());
        // The totals: a report lists only the first violations of each kind.
        let gauge = |total: usize| i64::try_from(total).unwrap_or(i64::MAX);
        metrics.leaks.set(gauge(report.leaks_total));
        metrics.black_holes.set(gauge(report.black_holes_total));
        metrics.loops.set(gauge(report.loops_total));
        let computed = Computed {
            at_unix_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| {
                    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
                }),
            duration_us: u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
            report,
        };
        let notice = {
            let mut published = self.published.lock();
            // The first outcome is told only if it is a violation: a network that starts
            // clean has nothing to tell, and the stream's followers read the state first.
            let changed = match &published.report {
                Some(last) => outcome(&last.report) != outcome(&computed.report),
                None => !proven(&computed.report),
            };
            if !proven(&computed.report) {
                published.last_violation = Some(computed.clone());
            }
            published.switches_read = switches;
            published.unreadable = unreadable;
            let notice = changed.then(|| notice(&computed.report));
            published.report = Some(computed);
            notice
        };
        if let Some(notice) = notice {
            if self.notices.receiver_count() > 0 {
                let _ = self.notices.send(notice);
            }
        }
    }
}

/// What a change of is told on `/events`: the violations found by kind, and whether
/// the verification was whole.
fn outcome(report: &slice_verify::Report) -> (usize, usize, usize, bool) {
    (
        report.leaks_total,
        report.black_holes_total,
        report.loops_total,
        report.incomplete.is_empty(),
    )
}

fn notice(report: &slice_verify::Report) -> Notice {
    Notice::Verification {
        proven: proven(report),
        pairs_checked: report.pairs_checked as u64,
        leaks: report.leaks_total,
        black_holes: report.black_holes_total,
        loops: report.loops_total,
    }
}

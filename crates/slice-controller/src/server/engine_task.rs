//! The [`Engine`] behind one lock, with the per-switch command queues it hands its
//! decisions to, and the task that gives it the time, the election and the store.
//!
//! Every decision is taken under the lock, one at a time, by whoever has the event: a
//! connection task decides on its own switch's events itself (a PACKET_IN is answered in
//! the task that read it, with no hop to another task and back), the engine task on
//! ticks, leadership, store changes and inspections. The lock is never held across an
//! await, and nothing under it waits for a switch: commands for other switches go into
//! their queues with `try_send`.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use slice_core::Leadership;
use tokio::sync::{broadcast, mpsc, watch};

use crate::config::ControllerConfig;
use crate::engine::{Command, Engine, Role};
use crate::metrics::ControllerMetrics;
use crate::notice::Notice;
use crate::verification::{Verification, VerificationHandle};

use super::{ClusterLink, Event};

struct SwitchLink {
    connection: u64,
    commands: mpsc::Sender<Vec<Command>>,
    /// Bytes handed to the connection and not yet written, by [`command_bytes`].
    queued_bytes: Arc<AtomicUsize>,
    authenticated: bool,
}

/// The engine and where its commands go, shared by the engine task and every
/// connection task.
pub(super) type SharedDecider = Arc<Mutex<Decider>>;

/// The connection deciding, whose own commands come back to it instead of going
/// through its queue: its datapath id and connection number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Caller {
    pub(super) dpid: u64,
    pub(super) connection: u64,
}

pub(super) struct Decider {
    engine: Engine,
    switches: HashMap<u64, SwitchLink>,
    /// Lives as long as the decider, so grouping allocates only the batches themselves.
    batches: HashMap<u64, Vec<Command>>,
    max_outbound_bytes: usize,
    metrics: Arc<ControllerMetrics>,
    notices: broadcast::Sender<Notice>,
    /// In a cluster, where the switches' confirmed roles are published, and the version
    /// last published.
    switch_roles: Option<watch::Sender<BTreeMap<u64, Role>>>,
    published_roles: Option<u64>,
    /// In a cluster, how to ask the election for the current generation.
    generation_recheck: Option<Arc<tokio::sync::Notify>>,
    stopped: watch::Receiver<bool>,
    verification: Verification,
    /// When the engine wants its timeout handled ([`Engine::poll_timeout`]), as of the
    /// last decision: the engine task sleeps until then, whoever decided.
    wake_at: watch::Sender<Option<Instant>>,
}

impl Decider {
    /// Before any switch is served: in a cluster, the engine starts from the election's
    /// current state.
    pub(super) fn new(
        mut engine: Engine,
        config: &ControllerConfig,
        cluster: Option<&mut ClusterLink>,
        notices: broadcast::Sender<Notice>,
        stopped: watch::Receiver<bool>,
    ) -> Self {
        let metrics = Arc::clone(&config.metrics);
        engine.set_metrics(Arc::clone(&metrics));
        let (switch_roles, generation_recheck) = cluster
            .map(|link| {
                let leadership = link.leadership.borrow_and_update().clone();
                engine.set_leadership(leadership, Instant::now());
                (
                    link.switch_roles.clone(),
                    Arc::clone(&link.generation_recheck),
                )
            })
            .unzip();
        let verification = Verification::start(
            config.verification_interval,
            config.verification_list_limit,
            Arc::clone(&metrics),
            notices.clone(),
        );
        Self {
            engine,
            switches: HashMap::new(),
            batches: HashMap::new(),
            max_outbound_bytes: config.max_outbound_bytes,
            metrics,
            notices,
            switch_roles,
            published_roles: None,
            generation_recheck,
            stopped,
            verification,
            wake_at: watch::Sender::new(None),
        }
    }

    pub(super) fn verification(&self) -> VerificationHandle {
        self.verification.handle()
    }

    /// Once stopping, the engine decides and writes nothing more. The connections close
    /// as they see the stop, in no order: a disconnect handled now would delete the hops
    /// of paths through that switch from the switches still connected, while their
    /// ingress flows stay at switches already gone, black holes that the next controller
    /// would find. A crash leaves the flows whole; a stop must too.
    pub(super) fn stopping(&self) -> bool {
        *self.stopped.borrow()
    }

    /// Takes `event` into the engine and hands out what it decided; `caller`'s own
    /// commands are appended to `own`, after whatever its queue still holds is taken
    /// out by the caller (see [`Decider::settle`]). Does nothing once stopping.
    pub(super) fn decide(&mut self, event: Event, caller: Option<Caller>, own: &mut Vec<Command>) {
        if self.stopping() {
            return;
        }
        self.handle(event);
        self.settle(caller, own);
    }

    /// Hands out what the engine decided: roles, commands, notices. The commands for
    /// `caller`'s switch go into `own` rather than its queue; since every batch enters a
    /// queue under this lock, a caller that empties its queue before the lock is
    /// released and then writes `own` keeps its switch's commands in order.
    fn settle(&mut self, caller: Option<Caller>, own: &mut Vec<Command>) {
        // Checked after the event too: the stop may have come while it was handled.
        if self.stopping() {
            return;
        }
        if let Some(to) = &self.switch_roles {
            publish_roles(&self.engine, to, &mut self.published_roles);
        }
        self.dispatch(caller, own);
        let due = self.engine.poll_timeout();
        self.wake_at
            .send_if_modified(|at| std::mem::replace(at, due) != due);
        // Nobody following is the common case: then the notices only go.
        let following = self.notices.receiver_count() > 0;
        for notice in self.engine.drain_notices() {
            self.metrics.count_notice(&notice);
            if following {
                let _ = self.notices.send(notice);
            }
        }
    }

    /// Drops every switch's queue, which ends their connections, without a word to the
    /// engine (see [`Decider::stopping`]).
    fn stop(&mut self) {
        self.switches.clear();
    }
}

/// How long the engine task goes on taking queued events before it sends what they
/// decided: an apply's store changes (thousands, each cheap to take in) then cost one
/// pipeline sync, one bundle per switch, where a count of 256 cut them into dozens;
/// short, so that the lock is not held for long.
const SETTLE_BUDGET: Duration = Duration::from_millis(20);
/// The most events taken in one go whatever the time, so that a clock that stalls cannot
/// keep the lock for ever.
const EVENTS_PER_SETTLE: usize = 1 << 16;

/// What woke the engine task besides an event.
enum Wake {
    Event(Event),
    Tick,
    Timeout,
    Leadership(Leadership),
}

pub(super) async fn run_engine(
    decider: SharedDecider,
    mut events: mpsc::Receiver<Event>,
    config: Arc<ControllerConfig>,
    mut stopped: watch::Receiver<bool>,
    mut cluster: Option<ClusterLink>,
) {
    let mut ticker = tokio::time::interval(config.lldp_interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut own = Vec::new();
    let mut wake_at = decider.lock().wake_at.subscribe();
    loop {
        let due = *wake_at.borrow_and_update();
        let timeout = async {
            match due {
                Some(due) => tokio::time::sleep_until(due.into()).await,
                None => std::future::pending().await,
            }
        };
        let wake = tokio::select! {
            event = events.recv() => match event {
                Some(event) => Wake::Event(event),
                None => return,
            },
            _ = ticker.tick() => Wake::Tick,
            () = timeout => Wake::Timeout,
            // A decision in a connection task moved the timeout: sleep again.
            Ok(()) = wake_at.changed() => continue,
            leadership = leadership_changed(&mut cluster) => Wake::Leadership(leadership),
            _ = stopped.changed() => {
                decider.lock().stop();
                return;
            }
        };
        let mut decider = decider.lock();
        if decider.stopping() {
            decider.stop();
            return;
        }
        match wake {
            Wake::Event(event) => {
                let started = Instant::now();
                decider.handle(event);
                // What else is queued is handled before the commands go out, so that a
                // burst (an apply's store changes) costs one pipeline sync, not one per
                // change; bounded in time, so that the lock is not held for long.
                for _ in 1..EVENTS_PER_SETTLE {
                    if started.elapsed() >= SETTLE_BUDGET {
                        break;
                    }
                    match events.try_recv() {
                        Ok(event) => decider.handle(event),
                        Err(_) => break,
                    }
                }
            }
            Wake::Tick => {
                let Decider {
                    engine,
                    verification,
                    ..
                } = &mut *decider;
                engine.tick(Instant::now());
                verification.tick(engine, Instant::now());
            }
            Wake::Timeout => decider.engine.handle_timeout(Instant::now()),
            Wake::Leadership(leadership) => {
                decider.engine.set_leadership(leadership, Instant::now());
            }
        }
        decider.settle(None, &mut own);
    }
}

impl Decider {
    fn handle(&mut self, event: Event) {
        let Self {
            engine,
            switches,
            generation_recheck,
            verification,
            ..
        } = self;
        match event {
            Event::SwitchUp {
                dpid,
                profile,
                ports,
                connection,
                commands,
                queued_bytes,
                authenticated,
            } => {
                // Anyone who reaches the plain listener can claim any datapath id: such a
                // claim never displaces a switch that proved itself with a certificate.
                // Dropping `commands` here ends the newcomer's connection.
                if let Some(current) = switches.get(&dpid) {
                    if current.authenticated && !authenticated {
                        log::warn!(
                            "switch {dpid:#x}: unauthenticated connection {connection} refused; \
                             the switch is connected over TLS (connection {})",
                            current.connection
                        );
                        return;
                    }
                }
                // A second connection with the same datapath id replaces the first; dropping
                // the old sender ends the old connection. On plain TCP this is how an impostor
                // would take a switch over, so it is always told.
                let replaced = switches.insert(
                    dpid,
                    SwitchLink {
                        connection,
                        commands,
                        queued_bytes,
                        authenticated,
                    },
                );
                if let Some(old) = replaced {
                    log::warn!(
                        "switch {dpid:#x} connected again (connection {connection}); \
                         closing its earlier connection {}",
                        old.connection
                    );
                }
                engine.switch_connected(dpid, profile, ports, Instant::now());
            }
            Event::SwitchDown { dpid, connection } => {
                let current = switches
                    .get(&dpid)
                    .is_some_and(|link| link.connection == connection);
                if current {
                    switches.remove(&dpid);
                    engine.switch_disconnected(dpid);
                }
            }
            Event::PacketIn {
                dpid,
                in_port,
                frame,
            } => engine.packet_in(dpid, in_port, frame, Instant::now()),
            Event::PacketInsRateLimited { dpid, count } => {
                engine.packet_ins_rate_limited(dpid, count, Instant::now())
            }
            Event::TableFull { dpid } => engine.table_full(dpid, Instant::now()),
            Event::BundleRefused { dpid, table_full } => {
                engine.bundle_refused(dpid, table_full, Instant::now())
            }
            Event::BundlesUnsupported { dpid } => engine.bundles_unsupported(dpid),
            Event::PipelineWritten { dpid } => {
                engine.pipeline_written(dpid);
                verification.written(engine, dpid, Instant::now());
            }
            Event::ProbeRoundAnswered { dpid, round } => engine.probe_round_answered(dpid, round),
            Event::PacketInMeter {
                dpid,
                connection,
                metered,
            } => {
                let current = switches
                    .get(&dpid)
                    .is_some_and(|link| link.connection == connection);
                if current {
                    engine.set_packet_in_meter(dpid, metered);
                }
            }
            Event::PortStatus { port, state } => engine.port_changed(port, state, Instant::now()),
            Event::FlowRemoved {
                dpid,
                rule,
                priority,
            } => engine.flow_removed(dpid, rule, priority),
            Event::RoleChanged {
                dpid,
                connection,
                role,
            } => {
                if is_current(switches, dpid, connection) {
                    engine.role_changed(dpid, role);
                }
            }
            Event::RoleRefused {
                dpid,
                connection,
                reason,
            } => {
                if is_current(switches, dpid, connection) && engine.role_refused(dpid, reason) {
                    if let Some(recheck) = generation_recheck {
                        recheck.notify_one();
                    }
                }
            }
            Event::FlowsRead {
                dpid,
                connection,
                read,
            } => {
                // A read from a connection since replaced describes a table the new
                // connection reads again by itself.
                if is_current(switches, dpid, connection) {
                    verification.flows_read(engine, dpid, read, Instant::now());
                }
            }
            Event::Store(change) => {
                engine.membership_changed(&change);
                verification.membership_changed();
            }
            Event::Inspect(look) => look(engine),
        }
    }
}

/// The election's next state; never, for a single instance. An election that ended
/// (its sender dropped) leaves the instance without a master it knows.
async fn leadership_changed(cluster: &mut Option<ClusterLink>) -> Leadership {
    let Some(link) = cluster else {
        return std::future::pending().await;
    };
    if link.leadership.changed().await.is_err() {
        *cluster = None;
        return Leadership::UNDECIDED;
    }
    link.leadership.borrow_and_update().clone()
}

/// Hands the switches' confirmed roles on when they changed since the last time.
fn publish_roles(
    engine: &Engine,
    to: &watch::Sender<BTreeMap<u64, Role>>,
    published: &mut Option<u64>,
) {
    let (roles, version) = engine.switch_roles();
    if *published != Some(version) {
        *published = Some(version);
        to.send_replace(roles.clone());
    }
}

/// Whether `connection` is the one the engine knows `dpid` by (an event of a replaced
/// connection is stale).
fn is_current(switches: &HashMap<u64, SwitchLink>, dpid: u64, connection: u64) -> bool {
    switches
        .get(&dpid)
        .is_some_and(|link| link.connection == connection)
}

impl Decider {
    /// Hands every switch its share of the engine's commands as one batch, `caller`'s
    /// into `own`.
    fn dispatch(&mut self, caller: Option<Caller>, own: &mut Vec<Command>) {
        let Self {
            engine,
            switches,
            batches,
            max_outbound_bytes,
            metrics,
            ..
        } = self;
        // Dropping a switch that cannot keep up makes the engine withdraw the paths
        // through it from the other switches: those commands go out in the next round,
        // not after the next event. Each round drops a switch or ends the loop.
        loop {
            for (dpid, command) in engine.drain_commands() {
                batches.entry(dpid).or_default().push(command);
            }
            if batches.is_empty() {
                return;
            }
            for (dpid, batch) in batches.drain() {
                let Some(link) = switches.get(&dpid) else {
                    continue;
                };
                let (mut bytes, mut flow_mods, mut packet_outs) = (0, 0, 0);
                for command in &batch {
                    bytes += command_bytes(command);
                    match command {
                        Command::FlowAdd { .. }
                        | Command::FlowDelete { .. }
                        | Command::FlowDeleteExact(_)
                        | Command::ClearFlows
                        | Command::TableMiss => flow_mods += 1,
                        Command::Pipeline(changes) => flow_mods += changes.len() as u64,
                        Command::PacketOut { .. }
                        | Command::Flood { .. }
                        | Command::Discovery { .. } => packet_outs += 1,
                        Command::SetRole { .. }
                        | Command::ReadFlows
                        | Command::ProbeRoundSent { .. } => {}
                    }
                }
                let queued = link.queued_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
                let is_caller = caller
                    == Some(Caller {
                        dpid,
                        connection: link.connection,
                    });
                let sent = if queued > *max_outbound_bytes {
                    log::warn!(
                        "switch {dpid:#x} is not draining its queue ({queued} bytes); \
                             disconnecting it"
                    );
                    false
                } else if is_caller {
                    own.extend(batch);
                    true
                } else {
                    match link.commands.try_send(batch) {
                        Ok(()) => true,
                        Err(mpsc::error::TrySendError::Full(_)) => {
                            log::warn!("switch {dpid:#x} is not keeping up; disconnecting it");
                            false
                        }
                        Err(mpsc::error::TrySendError::Closed(_)) => false,
                    }
                };
                if sent {
                    metrics.flow_mods_sent.inc_by(flow_mods);
                    metrics.packet_outs_sent.inc_by(packet_outs);
                } else {
                    // Dropping the sender ends the connection, which frees what it holds.
                    switches.remove(&dpid);
                    engine.switch_disconnected(dpid);
                }
            }
        }
    }
}

/// What a command costs in the outbound queue: the frame it carries plus a generous
/// allowance for the OpenFlow message around it. The decider adds it when it hands a
/// command out, the connection subtracts it once the command is written.
pub(super) fn command_bytes(command: &Command) -> usize {
    const MESSAGE: usize = 160;
    match command {
        Command::PacketOut { data, .. } => MESSAGE + data.len(),
        Command::Pipeline(flow_mods) => flow_mods.len() * crate::session::PIPELINE_FLOW_MOD_BYTES,
        // Each message of a flood carries the frame and 16 bytes an output.
        Command::Flood { out_ports, data } => {
            let messages = out_ports
                .len()
                .div_ceil(crate::session::MAX_PORTS_PER_PACKET_OUT)
                .max(1);
            messages * (MESSAGE + data.len()) + 16 * out_ports.len()
        }
        _ => MESSAGE,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use bytes::Bytes;
    use openflow::Version;
    use slice_core::{MacAddress, Membership};

    use super::*;
    use crate::engine::{EngineConfig, Frame, SwitchProfile};
    use crate::topology::PortState;

    const OF10: SwitchProfile = SwitchProfile {
        needs_table_miss_flow: false,
        protocol: Version::Of10,
        pipeline: false,
    };

    /// Without slicing, so that a broadcast reaches every edge port.
    fn decider() -> (Decider, watch::Sender<bool>) {
        let engine = Engine::new(
            EngineConfig {
                slicing: false,
                ..EngineConfig::default()
            },
            Membership::from_slices(&[]),
        );
        let (stop, stopped) = watch::channel(false);
        let (notices, _) = broadcast::channel(16);
        let decider = Decider::new(engine, &ControllerConfig::default(), None, notices, stopped);
        (decider, stop)
    }

    /// Connects a switch with live ports `ports`, as its own connection task would;
    /// returns its queue and what came back for it.
    fn connect(
        decider: &mut Decider,
        dpid: u64,
        connection: u64,
        ports: &[u32],
    ) -> (mpsc::Receiver<Vec<Command>>, Vec<Command>) {
        let (commands, queue) = mpsc::channel(16);
        let ports: BTreeMap<u32, PortState> = ports
            .iter()
            .map(|n| {
                let state = PortState {
                    name: format!("eth{n}"),
                    live: true,
                };
                (*n, state)
            })
            .collect();
        let up = Event::SwitchUp {
            dpid,
            profile: OF10,
            ports,
            connection,
            commands,
            queued_bytes: Arc::default(),
            authenticated: false,
        };
        let mut own = Vec::new();
        decider.decide(up, Some(Caller { dpid, connection }), &mut own);
        (queue, own)
    }

    fn broadcast_from(dpid: u64, in_port: u32) -> Event {
        Event::PacketIn {
            dpid,
            in_port,
            frame: Frame {
                dst: MacAddress::new([0xff; 6]),
                src: MacAddress::new([0, 0, 0, 0, 0, 1]),
                probe: None,
                data: Bytes::from_static(b"hello"),
            },
        }
    }

    fn packet_outs(commands: &[Command]) -> Vec<u32> {
        commands
            .iter()
            .flat_map(|command| match command {
                Command::PacketOut { out_port, .. } => vec![*out_port],
                Command::Flood { out_ports, .. } => out_ports.clone(),
                _ => Vec::new(),
            })
            .collect()
    }

    #[test]
    fn the_deciding_connection_gets_its_commands_back_and_the_others_are_queued() {
        let (mut decider, _stop) = decider();
        let (mut first, own) = connect(&mut decider, 1, 1, &[1, 2]);
        assert!(!own.is_empty(), "a new switch is read back and probed");
        assert!(first.try_recv().is_err(), "nothing went through its queue");
        let (mut second, _) = connect(&mut decider, 2, 2, &[1]);
        while first.try_recv().is_ok() {}

        let mut own = Vec::new();
        let caller = Caller {
            dpid: 1,
            connection: 1,
        };
        decider.decide(broadcast_from(1, 1), Some(caller), &mut own);
        assert_eq!(packet_outs(&own), [2]);
        assert!(first.try_recv().is_err());
        let queued = second.try_recv().expect("switch 2's share is queued");
        assert_eq!(packet_outs(&queued), [1]);
        let queued_bytes = &decider.switches[&1].queued_bytes;
        assert_eq!(
            queued_bytes.load(Ordering::Relaxed),
            cost(&own) + cost_of_connecting(),
            "what comes back counts against the switch's outbound bound too"
        );
    }

    fn cost(commands: &[Command]) -> usize {
        commands.iter().map(command_bytes).sum()
    }

    /// What a new switch with ports 1 and 2 is sent, counted.
    fn cost_of_connecting() -> usize {
        let (mut decider, _stop) = decider();
        let (_, own) = connect(&mut decider, 1, 1, &[1, 2]);
        cost(&own)
    }

    #[test]
    fn a_replaced_connection_decides_for_the_connection_that_replaced_it() {
        let (mut decider, _stop) = decider();
        let (mut old, _) = connect(&mut decider, 1, 1, &[1, 2]);
        let (mut new, _) = connect(&mut decider, 1, 3, &[1, 2]);
        while old.try_recv().is_ok() {}
        assert!(
            matches!(old.try_recv(), Err(mpsc::error::TryRecvError::Disconnected)),
            "the replaced connection's queue is closed"
        );
        let mut own = Vec::new();
        let stale = Caller {
            dpid: 1,
            connection: 1,
        };
        decider.decide(broadcast_from(1, 1), Some(stale), &mut own);
        assert!(own.is_empty(), "the replaced connection writes nothing");
        let queued = new.try_recv().expect("queued for the current connection");
        assert_eq!(packet_outs(&queued), [2]);
    }

    #[test]
    fn once_stopping_nothing_is_decided_or_written() {
        let (mut decider, stop) = decider();
        let (mut first, _) = connect(&mut decider, 1, 1, &[1, 2]);
        let (mut second, _) = connect(&mut decider, 2, 2, &[1]);
        while first.try_recv().is_ok() {}
        stop.send_replace(true);
        let mut own = Vec::new();
        let caller = Caller {
            dpid: 1,
            connection: 1,
        };
        decider.decide(broadcast_from(1, 1), Some(caller), &mut own);
        let down = Event::SwitchDown {
            dpid: 2,
            connection: 2,
        };
        decider.decide(down, None, &mut own);
        assert!(own.is_empty());
        assert!(first.try_recv().is_err());
        assert!(second.try_recv().is_err());
        assert!(decider.engine.hosts().is_empty(), "nothing was learned");
        assert_eq!(decider.engine.switches().len(), 2, "nothing was forgotten");
    }
}

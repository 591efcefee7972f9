//! The task that owns the [`Engine`]: events from every switch and the store in, one
//! batch of commands per switch out, handed on with `try_send` so that it never awaits a
//! switch.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use slice_core::Leadership;
use tokio::sync::{broadcast, mpsc, watch};

use crate::config::ControllerConfig;
use crate::engine::{Command, Engine, Role};
use crate::metrics::ControllerMetrics;
use crate::notice::Notice;

use super::{ClusterLink, Event};

struct SwitchLink {
    connection: u64,
    commands: mpsc::Sender<Vec<Command>>,
    /// Bytes handed to the connection and not yet written, by [`command_bytes`].
    queued_bytes: Arc<AtomicUsize>,
    authenticated: bool,
}

pub(super) async fn run_engine(
    mut engine: Engine,
    mut events: mpsc::Receiver<Event>,
    config: Arc<ControllerConfig>,
    mut stopped: watch::Receiver<bool>,
    mut cluster: Option<ClusterLink>,
    notices: broadcast::Sender<Notice>,
) {
    if let Some(link) = &mut cluster {
        let leadership = link.leadership.borrow_and_update().clone();
        engine.set_leadership(leadership, Instant::now());
    }
    let metrics = Arc::clone(&config.metrics);
    engine.set_metrics(Arc::clone(&metrics));
    let mut published_roles = None;
    let mut switches: HashMap<u64, SwitchLink> = HashMap::new();
    let mut batches: HashMap<u64, Vec<Command>> = HashMap::new();
    let mut ticker = tokio::time::interval(config.lldp_interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Some(event) => handle_event(&mut engine, &mut switches, event),
                None => return,
            },
            _ = ticker.tick() => engine.tick(Instant::now()),
            leadership = leadership_changed(&mut cluster) => {
                engine.set_leadership(leadership, Instant::now());
            }
            _ = stopped.changed() => return,
        }
        // Once stopping, the engine writes nothing more. The connections close as they
        // see the stop, in no order: a disconnect handled now would delete the hops of
        // paths through that switch from the switches still connected, while their
        // ingress flows stay at switches already gone, black holes that the next
        // controller would find. A crash leaves the flows whole; a stop must too.
        if *stopped.borrow() {
            return;
        }
        if let Some(link) = &cluster {
            publish_roles(&engine, &link.switch_roles, &mut published_roles);
        }
        dispatch(
            &mut engine,
            &mut switches,
            &mut batches,
            config.max_outbound_bytes,
            &metrics,
        );
        // Nobody following is the common case: then the notices only go.
        let following = notices.receiver_count() > 0;
        for notice in engine.drain_notices() {
            metrics.count_notice(&notice);
            if following {
                let _ = notices.send(notice);
            }
        }
    }
}

fn handle_event(engine: &mut Engine, switches: &mut HashMap<u64, SwitchLink>, event: Event) {
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
            if is_current(switches, dpid, connection) {
                engine.role_refused(dpid, reason);
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
                engine.flows_read(dpid, read, Instant::now());
            }
        }
        Event::Store(change) => engine.membership_changed(&change),
        Event::Inspect(look) => look(engine),
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

/// Hands every switch its share of the engine's commands as one batch. `batches` lives
/// as long as the engine task, so grouping allocates only the batches themselves.
fn dispatch(
    engine: &mut Engine,
    switches: &mut HashMap<u64, SwitchLink>,
    batches: &mut HashMap<u64, Vec<Command>>,
    max_outbound_bytes: usize,
    metrics: &ControllerMetrics,
) {
    // Dropping a switch that cannot keep up makes the engine withdraw the paths through
    // it from the other switches: those commands go out in the next round, not after
    // the next event. Each round drops a switch or ends the loop.
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
                    Command::PacketOut { .. } | Command::Discovery { .. } => packet_outs += 1,
                    Command::SetRole { .. } | Command::ReadFlows => {}
                }
            }
            let queued = link.queued_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
            let sent = if queued > max_outbound_bytes {
                log::warn!(
                    "switch {dpid:#x} is not draining its queue ({queued} bytes); \
                     disconnecting it"
                );
                false
            } else {
                match link.commands.try_send(batch) {
                    Ok(()) => {
                        metrics.flow_mods_sent.inc_by(flow_mods);
                        metrics.packet_outs_sent.inc_by(packet_outs);
                        true
                    }
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        log::warn!("switch {dpid:#x} is not keeping up; disconnecting it");
                        false
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => false,
                }
            };
            if !sent {
                // Dropping the sender ends the connection, which frees what it holds.
                switches.remove(&dpid);
                engine.switch_disconnected(dpid);
            }
        }
    }
}

/// What a command costs in the outbound queue: the frame it carries plus a generous
/// allowance for the OpenFlow message around it. The engine task adds it when it queues
/// a command, the connection subtracts it once the command is written.
pub(super) fn command_bytes(command: &Command) -> usize {
    const MESSAGE: usize = 160;
    match command {
        Command::PacketOut { data, .. } => MESSAGE + data.len(),
        _ => MESSAGE,
    }
}

//! Switch connections: accept with connection caps, TLS, and per connection a short loop
//! that runs a [`SwitchSession`] between the socket, its deadlines and the engine, which
//! it locks to decide on its switch's events itself.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use slice_core::PortId;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;

use crate::config::ControllerConfig;
use crate::engine::{Command, Frame, SwitchProfile};
use crate::limits::LogLimiter;
use crate::session::{CloseReason, SessionConfig, SwitchEvent, SwitchSession};
use crate::topology::PortState;

use super::engine_task::{command_bytes, Caller, SharedDecider};
use super::Event;

/// Capacity a connection's write buffer keeps between bursts.
const WRITE_BUFFER_KEEP: usize = 64 * 1024;
/// Command batches queued for one switch before it counts as too slow.
const SWITCH_QUEUE: usize = 1024;

/// The two directions of a switch connection, whatever carries it.
type SwitchRead = Box<dyn AsyncRead + Unpin + Send>;
type SwitchWrite = Box<dyn AsyncWrite + Unpin + Send>;

/// Accepts switches on one listener; with an acceptor, each must complete a TLS handshake
/// with a CA-signed certificate first. Connection numbers are shared by all listeners.
pub(super) async fn accept_switches(
    listener: TcpListener,
    acceptor: Option<TlsAcceptor>,
    connections: Arc<AtomicU64>,
    caps: ConnectionCaps,
    decider: SharedDecider,
    config: Arc<ControllerConfig>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut refusals = LogLimiter::default();
    // A refusal is reported within a report period even when no later one comes to
    // carry the line.
    let mut report = tokio::time::interval(refusals.every());
    report.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let session_config = Arc::new(config.session());
    loop {
        // Accepted at once, with no place among the handshakes yet: a switch waiting
        // unanswered gives up on its own connect timeout (Open vSwitch's is one second on
        // its first attempt) and comes back on its backoff (+1, +3, +7 s), so a cold start
        // of hundreds of switches kept in the listen backlog became a storm of retries.
        // The place is taken after the HELLO went out (`serve_switch`).
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopped.changed() => return,
            _ = report.tick() => {
                report_refusals(&mut refusals, &caps, None);
                continue;
            }
        };
        match accepted {
            Ok((stream, peer)) => {
                let Ok(open) = Arc::clone(&caps.open).try_acquire_owned() else {
                    // Dropping the stream closes it before it costs a task or a buffer.
                    drop(stream);
                    config.metrics.switch_connections_refused.inc();
                    refusals.count(1);
                    report_refusals(&mut refusals, &caps, Some(peer));
                    continue;
                };
                let connection = connections.fetch_add(1, Ordering::Relaxed) + 1;
                let (acceptor, handshakes, decider, config, session_config, stopped) = (
                    acceptor.clone(),
                    Arc::clone(&caps.handshaking),
                    Arc::clone(&decider),
                    Arc::clone(&config),
                    Arc::clone(&session_config),
                    stopped.clone(),
                );
                tokio::spawn(async move {
                    // Held for the connection's life.
                    let _open = open;
                    let authenticated = acceptor.is_some();
                    let Some((reader, writer)) = open_stream(stream, peer, acceptor, &config).await
                    else {
                        return;
                    };
                    let opened = OpenedConnection {
                        peer,
                        connection,
                        authenticated,
                        handshakes,
                    };
                    if let Err(err) =
                        serve_switch(reader, writer, opened, decider, session_config, stopped).await
                    {
                        log::info!("switch connection from {peer} closed: {err}");
                    }
                });
            }
            Err(err) => {
                // Out of descriptors or similar: back off instead of spinning.
                log::warn!("accepting a switch failed: {err}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Logs the refusals counted since the last line, when one is due (at most one line a
/// [`LogLimiter`] period); `peer` is the one just refused, if a refusal prompted this.
fn report_refusals(refusals: &mut LogLimiter, caps: &ConnectionCaps, peer: Option<SocketAddr>) {
    let Some(count) = refusals.due(Instant::now()) else {
        return;
    };
    let last = peer.map_or_else(String::new, |peer| format!(", the last from {peer}"));
    log::warn!(
        "{count} OpenFlow connection(s) closed at once since the last report{last}: at the \
         cap of {} open connections (max_switch_connections)",
        caps.max_open
    );
}

/// The caps on OpenFlow connections, shared by both listeners.
#[derive(Clone)]
pub(super) struct ConnectionCaps {
    open: Arc<Semaphore>,
    handshaking: Arc<Semaphore>,
    max_open: usize,
}

impl ConnectionCaps {
    pub(super) fn new(config: &ControllerConfig) -> Self {
        let max_open = config
            .max_switch_connections
            .min(quarter_of_open_files())
            .max(1);
        if max_open < config.max_switch_connections {
            log::warn!(
                "max_switch_connections {} lowered to {max_open}: a quarter of the open \
                 files limit",
                config.max_switch_connections
            );
        }
        let max_handshaking = config.max_pending_handshakes.clamp(1, max_open);
        Self {
            open: Arc::new(Semaphore::new(max_open)),
            handshaking: Arc::new(Semaphore::new(max_handshaking)),
            max_open,
        }
    }
}

/// A quarter of the soft limit on open files (which the daemon raises to the hard limit
/// at start), so that HTTP, the database and the log always find a descriptor.
fn quarter_of_open_files() -> usize {
    let soft = rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1024, |(soft, _)| soft);
    usize::try_from(soft / 4).unwrap_or(usize::MAX)
}

/// An accepted connection, past its TLS handshake where there is one.
struct OpenedConnection {
    peer: SocketAddr,
    connection: u64,
    /// Over TLS, with a certificate the CA signed.
    authenticated: bool,
    /// The places among the OpenFlow handshakes, one taken once the HELLO is out.
    handshakes: Arc<Semaphore>,
}

/// The connection's two directions, after the TLS handshake where there is one. A peer
/// that fails it is logged at debug level only: anyone can knock, and a flood of failed
/// handshakes must not flood the log.
async fn open_stream(
    stream: TcpStream,
    peer: SocketAddr,
    acceptor: Option<TlsAcceptor>,
    config: &ControllerConfig,
) -> Option<(SwitchRead, SwitchWrite)> {
    if let Err(err) = stream.set_nodelay(true) {
        log::debug!("switch connection from {peer}: {err}");
        return None;
    }
    let Some(acceptor) = acceptor else {
        let (reader, writer) = stream.into_split();
        return Some((Box::new(reader), Box::new(writer)));
    };
    match tokio::time::timeout(config.handshake_timeout, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => {
            let (reader, writer) = tokio::io::split(tls);
            Some((Box::new(reader), Box::new(writer)))
        }
        Ok(Err(err)) => {
            log::debug!("TLS handshake with {peer} failed: {err}");
            None
        }
        Err(_) => {
            log::debug!(
                "TLS handshake with {peer} not completed in {:?}",
                config.handshake_timeout
            );
            None
        }
    }
}

/// Why a switch connection ended.
#[derive(Debug, thiserror::Error)]
enum ConnectionError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("the switch closed the connection")]
    Closed,
    #[error(transparent)]
    Session(CloseReason),
    #[error("replaced or dropped by the controller")]
    Dropped,
    #[error("the switch did not take our messages for {0:?}")]
    NotDraining(Duration),
    #[error(
        "no place among the handshakes (max_pending_handshakes) within the handshake \
         timeout of {0:?}"
    )]
    NoHandshakePlace(Duration),
}

/// The engine's side of a connection once the switch is known.
struct EngineLink {
    dpid: u64,
    /// What decisions taken elsewhere (other connections, the engine task) have for
    /// this switch.
    commands: mpsc::Receiver<Vec<Command>>,
    /// Bytes the decider counted in, by [`command_bytes`], and the connection has not
    /// yet written.
    queued_bytes: Arc<AtomicUsize>,
}

/// The I/O around one [`SwitchSession`]: reads into it, writes what it transmits, wakes
/// it at its deadlines, has the engine decide on its events and queues the engine's
/// commands into it.
struct Connection {
    reader: SwitchRead,
    writer: SwitchWrite,
    peer: SocketAddr,
    connection: u64,
    /// Over TLS, with a certificate the CA signed.
    authenticated: bool,
    session: SwitchSession,
    /// Swapped with the session's transmit buffer, so a batch is written with one call.
    transmit: Vec<u8>,
    engine: Option<EngineLink>,
    /// Released once the OpenFlow handshake is over.
    handshaking: Option<OwnedSemaphorePermit>,
    decider: SharedDecider,
    /// This switch's commands from its own events' decisions, kept between events for
    /// the memory.
    own: Vec<Command>,
    /// Bytes of engine commands queued into the session and not yet written.
    unwritten: usize,
    config: Arc<SessionConfig>,
}

async fn serve_switch(
    reader: SwitchRead,
    writer: SwitchWrite,
    opened: OpenedConnection,
    decider: SharedDecider,
    config: Arc<SessionConfig>,
    mut stopped: watch::Receiver<bool>,
) -> Result<(), ConnectionError> {
    let OpenedConnection {
        peer,
        connection,
        authenticated,
        handshakes,
    } = opened;
    let mut connection = Connection {
        reader,
        writer,
        peer,
        connection,
        authenticated,
        session: SwitchSession::new(Arc::clone(&config), Instant::now()),
        transmit: Vec::with_capacity(8192),
        engine: None,
        handshaking: None,
        decider,
        own: Vec::new(),
        unwritten: 0,
        config,
    };
    let result = match connection.take_place(&handshakes, &mut stopped).await {
        Ok(true) => connection.run(&mut stopped).await,
        Ok(false) => Ok(()),
        Err(err) => Err(err),
    };
    if let Some(link) = &connection.engine {
        let down = Event::SwitchDown {
            dpid: link.dpid,
            connection: connection.connection,
        };
        // Nothing of this connection is written any more.
        lock_engine(&connection.decider).decide(down, None, &mut connection.own);
    }
    result
}

impl Connection {
    /// Says HELLO at once, which is all a switch waits for before it counts as
    /// connected, and only then waits for a place among the handshakes: what the rest of
    /// the handshake holds (the port list, up to `max_multipart_bytes`) is what the cap
    /// bounds, while a waiting connection holds its buffers and nothing it reads. The
    /// wait ends with the handshake's own deadline. False when stopping.
    async fn take_place(
        &mut self,
        handshakes: &Arc<Semaphore>,
        stopped: &mut watch::Receiver<bool>,
    ) -> Result<bool, ConnectionError> {
        self.flush().await?;
        let deadline = self
            .session
            .poll_timeout()
            .map_or_else(tokio::time::Instant::now, tokio::time::Instant::from_std);
        tokio::select! {
            permit = Arc::clone(handshakes).acquire_owned() => {
                // The semaphore is never closed; were it, the controller is going away.
                let Ok(permit) = permit else { return Ok(false) };
                self.handshaking = Some(permit);
                Ok(true)
            }
            _ = tokio::time::sleep_until(deadline) => {
                Err(ConnectionError::NoHandshakePlace(self.config.handshake_timeout))
            }
            _ = stopped.changed() => Ok(false),
        }
    }

    async fn run(&mut self, stopped: &mut watch::Receiver<bool>) -> Result<(), ConnectionError> {
        // One timer for the connection's life. Hearing from the switch puts the session's
        // deadline off, and re-arming a timer per message would cost more than waking
        // early: it is moved only when the deadline comes sooner, and when it fires the
        // session does what is due (maybe nothing) and it is armed again.
        let wake = tokio::time::sleep_until(Instant::now().into());
        tokio::pin!(wake);
        let mut armed = false;
        loop {
            // Events still undecided (the last of a read, or from a timeout) before the
            // write, so that what they cause for this switch goes out in this turn.
            self.decide_events();
            self.flush().await?;
            if let Some(link) = &self.engine {
                link.queued_bytes
                    .fetch_sub(self.unwritten, Ordering::Relaxed);
                self.unwritten = 0;
            }
            if let Some(reason) = self.session.close_reason() {
                if let CloseReason::NotAllowed(dpid) = reason {
                    log::warn!(
                        "switch from {} refused: datapath id {dpid:#x} is not allowed",
                        self.peer
                    );
                }
                return Err(ConnectionError::Session(reason.clone()));
            }
            let Some(deadline) = self.session.poll_timeout() else {
                return Ok(());
            };
            let deadline = tokio::time::Instant::from_std(deadline);
            if !armed || deadline < wake.deadline() {
                wake.as_mut().reset(deadline);
                armed = true;
            }
            let commands = async {
                match &mut self.engine {
                    Some(link) => link.commands.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                read = self.reader.read_buf(self.session.read_buffer()) => {
                    if read? == 0 {
                        return Err(ConnectionError::Closed);
                    }
                    let now = Instant::now();
                    while self.session.handle_read_until_event(now) {
                        self.decide_events();
                    }
                }
                batch = commands => {
                    let Some(batch) = batch else { return Err(ConnectionError::Dropped) };
                    self.unwritten += queue_into(&mut self.session, batch);
                    // Take whatever else is queued, so that a burst becomes one write.
                    self.unwritten += drain_queue(&mut self.engine, &mut self.session);
                }
                _ = &mut wake => {
                    armed = false;
                    self.session.handle_timeout(Instant::now());
                }
                _ = stopped.changed() => return Ok(()),
            }
        }
    }

    /// Writes what the session has to send; a switch that does not take it within the
    /// dead-peer time (the handshake time, during the handshake) is given up, so that a
    /// peer that stops reading cannot hold a connection open.
    async fn flush(&mut self) -> Result<(), ConnectionError> {
        if !self.session.poll_transmit(&mut self.transmit) {
            return Ok(());
        }
        let patience = if self.engine.is_some() {
            self.config.dead_after
        } else {
            self.config.handshake_timeout
        };
        // TLS holds back what it could not send at once until flushed, so the flush is
        // inside the deadline too.
        let write = async {
            self.writer.write_all(&self.transmit).await?;
            self.writer.flush().await
        };
        tokio::time::timeout(patience, write)
            .await
            .map_err(|_| ConnectionError::NotDraining(patience))??;
        self.transmit.clear();
        // A burst may have grown the buffer far beyond what steady traffic needs.
        if self.transmit.capacity() > WRITE_BUFFER_KEEP {
            self.transmit.shrink_to(WRITE_BUFFER_KEEP);
        }
        Ok(())
    }

    /// Has the engine decide on the session's events, in order, each under the lock in
    /// this task, and queues what it decided for this switch into the session, to be
    /// written in this same turn of the loop.
    fn decide_events(&mut self) {
        while let Some(event) = self.session.poll_event() {
            let event = match event {
                SwitchEvent::Connected {
                    dpid,
                    ports,
                    profile,
                } => self.connected(dpid, ports, profile),
                event => {
                    // The session tells nothing else before `Connected`.
                    let Some(link) = &self.engine else { continue };
                    match engine_event(link.dpid, self.connection, event) {
                        Some(event) => event,
                        None => continue,
                    }
                }
            };
            let caller = self.engine.as_ref().map(|link| Caller {
                dpid: link.dpid,
                connection: self.connection,
            });
            let mut decider = lock_engine(&self.decider);
            decider.decide(event, caller, &mut self.own);
            // What the queue holds was decided before this event, so it goes first;
            // nothing enters it while the lock is held.
            self.unwritten += drain_queue(&mut self.engine, &mut self.session);
            drop(decider);
            self.unwritten += self.own.iter().map(command_bytes).sum::<usize>();
            for command in self.own.drain(..) {
                self.session.queue(command);
            }
        }
    }

    /// The switch finished its handshake: it gets a command queue, and the engine hears
    /// of it.
    fn connected(
        &mut self,
        dpid: u64,
        ports: BTreeMap<u32, PortState>,
        profile: SwitchProfile,
    ) -> Event {
        self.handshaking = None;
        let (peer, connection, authenticated) = (self.peer, self.connection, self.authenticated);
        log::info!("switch {dpid:#x} connected from {peer} (connection {connection})");
        let (commands_tx, commands) = mpsc::channel::<Vec<Command>>(SWITCH_QUEUE);
        let queued_bytes = Arc::new(AtomicUsize::new(0));
        self.engine = Some(EngineLink {
            dpid,
            commands,
            queued_bytes: Arc::clone(&queued_bytes),
        });
        Event::SwitchUp {
            dpid,
            profile,
            ports,
            connection,
            commands: commands_tx,
            queued_bytes,
            authenticated,
        }
    }
}

/// The engine's lock, taken without holding up the runtime: when another task holds it
/// (a pipeline sync over hundreds of switches takes a while), this worker hands its
/// other tasks to another thread for the wait. Otherwise both workers could stand
/// blocked on the lock while every other connection's echoes and the accept loop wait,
/// and Open vSwitch drops connections that answer no echo for 5 s, which sends hundreds
/// of switches through their handshake again in a storm.
fn lock_engine(
    decider: &SharedDecider,
) -> parking_lot::MutexGuard<'_, super::engine_task::Decider> {
    decider
        .try_lock()
        .unwrap_or_else(|| tokio::task::block_in_place(|| decider.lock()))
}

/// Queues a batch of commands into the session; what they cost in the outbound count.
fn queue_into(session: &mut SwitchSession, batch: Vec<Command>) -> usize {
    let mut cost = 0;
    for command in batch {
        cost += command_bytes(&command);
        session.queue(command);
    }
    cost
}

/// Moves what the switch's queue holds into the session; what it costs in the outbound
/// count.
fn drain_queue(engine: &mut Option<EngineLink>, session: &mut SwitchSession) -> usize {
    let Some(link) = engine else { return 0 };
    let mut cost = 0;
    while let Ok(batch) = link.commands.try_recv() {
        cost += queue_into(session, batch);
    }
    cost
}

/// A session's event, for the engine; None for `Connected`, which the connection
/// handles itself.
fn engine_event(dpid: u64, connection: u64, event: SwitchEvent) -> Option<Event> {
    Some(match event {
        SwitchEvent::Connected { .. } => return None,
        SwitchEvent::PacketIn {
            in_port,
            dst,
            src,
            probe,
            data,
        } => Event::PacketIn {
            dpid,
            in_port,
            frame: Frame {
                dst,
                src,
                probe,
                data,
            },
        },
        SwitchEvent::PacketInsRateLimited { count } => Event::PacketInsRateLimited { dpid, count },
        SwitchEvent::PacketInMeter { metered } => Event::PacketInMeter {
            dpid,
            connection,
            metered,
        },
        SwitchEvent::PortStatus { port_no, state } => Event::PortStatus {
            port: PortId::new(dpid, port_no),
            state,
        },
        SwitchEvent::FlowRemoved { rule, priority } => Event::FlowRemoved {
            dpid,
            rule,
            priority,
        },
        SwitchEvent::RoleChanged { role } => Event::RoleChanged {
            dpid,
            connection,
            role,
        },
        SwitchEvent::RoleRefused { reason } => Event::RoleRefused {
            dpid,
            connection,
            reason,
        },
        SwitchEvent::FlowsRead(read) => Event::FlowsRead {
            dpid,
            connection,
            read,
        },
        SwitchEvent::TableFull => Event::TableFull { dpid },
        SwitchEvent::BundleRefused { table_full } => Event::BundleRefused { dpid, table_full },
        SwitchEvent::BundlesUnsupported => Event::BundlesUnsupported { dpid },
        SwitchEvent::PipelineWritten => Event::PipelineWritten { dpid },
        SwitchEvent::ProbeRoundAnswered { round } => Event::ProbeRoundAnswered { dpid, round },
    })
}

//! OpenFlow over TCP or TLS: one task per switch connection, one task that owns the
//! [`Engine`].
//!
//! Connection tasks do the byte work (framing, decoding, the handshake, echo keep-alive,
//! encoding and batched writes) and talk to the engine task over channels. The engine
//! task never awaits a switch: it hands each switch its commands with `try_send`, and a
//! switch too slow to take them is disconnected rather than allowed to stall the others.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use openflow::error_msg::HelloFailedCode;
use openflow::{
    port, Action, ErrorType, FlowMod, FlowModCommand, Match, Message, PacketOut, PortDesc,
    PortReason, Version,
};
use slice_core::{Change, MacAddress, Membership, MembershipSource, PortId};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch, OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;

use crate::engine::{Command, Engine, EngineConfig, Frame, Rule};
use crate::limits::{LogLimiter, PacketInLimiter};
use crate::meter::{MeterDecision, MeterSetup, MeterStep};
use crate::probe::ProbeKeyError;
use crate::tls::{TlsError, TlsFiles};
use crate::topology::PortState;

/// Where the controller listens for switches; at least one must be set.
#[derive(Debug, Clone, Default)]
pub struct Listeners {
    /// Plain TCP: anyone who reaches it can act as a switch.
    pub plain: Option<String>,
    /// TLS, serving only switches whose certificate the configured CA signed.
    pub tls: Option<(String, TlsFiles)>,
}

/// How the controller runs.
#[derive(Debug, Clone)]
pub struct ControllerConfig {
    pub engine: EngineConfig,
    /// How often LLDP goes out of every port (and stale links are dropped).
    pub lldp_interval: Duration,
    /// A switch that says nothing for this long is sent an echo request...
    pub echo_interval: Duration,
    /// ...and one silent for this long is disconnected.
    pub dead_after: Duration,
    /// The time a switch has to complete the handshake (the TLS handshake, where there
    /// is one, gets the same time again).
    pub handshake_timeout: Duration,
    /// The datapath ids allowed to connect; None lets any in.
    pub allowed_dpids: Option<BTreeSet<u64>>,
    /// Bytes of multipart replies (the port list) a switch may send in its handshake.
    pub max_multipart_bytes: usize,
    /// Bytes of commands that may wait for one switch, queued or unwritten; a switch
    /// that lets more pile up, or does not take a write within `dead_after`, is
    /// disconnected.
    pub max_outbound_bytes: usize,
    /// PACKET_INs per second a switch may send on average, and in a burst; the rest
    /// are dropped by its connection (and counted).
    pub packet_in_rate: u32,
    pub packet_in_burst: u32,
    /// PACKET_INs per second from any one ingress port (burst twice that), so that one
    /// flooding host leaves the rest of the switch's budget to the others.
    pub packet_in_port_rate: u32,
    /// OpenFlow connections open at once, over both listeners; more are closed at once.
    /// Never more than a quarter of the open-files limit, whatever is configured.
    pub max_switch_connections: usize,
    /// Of those, connections still in their TLS or OpenFlow handshake: a peer that
    /// opens sockets and says nothing holds one for up to twice `handshake_timeout`.
    pub max_pending_handshakes: usize,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        let mut config = Self {
            engine: EngineConfig::default(),
            lldp_interval: Duration::ZERO,
            echo_interval: Duration::from_secs(5),
            dead_after: Duration::from_secs(15),
            handshake_timeout: Duration::from_secs(10),
            allowed_dpids: None,
            max_multipart_bytes: 1 << 20,
            max_outbound_bytes: 16 << 20,
            packet_in_rate: 1000,
            packet_in_burst: 2000,
            packet_in_port_rate: 250,
            max_switch_connections: 1024,
            max_pending_handshakes: 64,
        };
        config.set_lldp_interval(crate::engine::DEFAULT_LLDP_INTERVAL);
        config
    }
}

impl ControllerConfig {
    /// Sets how often LLDP goes out, and with it how long an unconfirmed link lives
    /// ([`crate::engine::link_max_age`]).
    pub fn set_lldp_interval(&mut self, interval: Duration) {
        self.lldp_interval = interval;
        self.engine.link_max_age = crate::engine::link_max_age(interval);
    }

    /// LLDP PACKET_INs per second one port may send (burst twice that), outside the
    /// switch's PACKET_IN budget: a link port receives one probe per interval, so two
    /// per interval leave room for a late one and still bound a forged-LLDP flood.
    pub fn lldp_port_rate(&self) -> u32 {
        let interval_ms = self.lldp_interval.as_millis().max(1);
        u32::try_from(2000 / interval_ms).unwrap_or(u32::MAX).max(2)
    }
}

/// Why the controller could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    // The reason is in the message, so it is no `source`: the chain would say it twice.
    #[error("cannot listen for OpenFlow on {addr}: {reason}")]
    Listen {
        addr: String,
        reason: std::io::Error,
    },
    #[error("cannot read slice membership: {0}")]
    Membership(Box<dyn std::error::Error + Send + Sync>),
    #[error("cannot start the controller runtime: {0}")]
    Runtime(std::io::Error),
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("no OpenFlow listener: neither plain TCP nor TLS is on")]
    NoListener,
    #[error(transparent)]
    ProbeKey(#[from] ProbeKeyError),
}

/// The largest amount of unread bytes a connection may hold: two maximal OpenFlow
/// messages. A peer that sends more than it lets us parse is cut off.
const READ_BUFFER_LIMIT: usize = 2 * 65536;
/// Capacity a connection's write buffer keeps between bursts.
const WRITE_BUFFER_KEEP: usize = 64 * 1024;
/// Command batches queued for one switch before it counts as too slow.
const SWITCH_QUEUE: usize = 1024;
/// Events queued from all switches to the engine.
const EVENT_QUEUE: usize = 8192;

/// Source MAC of the LLDP frames the controller sends: locally administered.
const DISCOVERY_SOURCE: [u8; 6] = [0x02, 0x5c, 0x1c, 0xed, 0x00, 0x01];

type Inspector = Box<dyn FnOnce(&Engine) + Send>;

enum Event {
    SwitchUp {
        dpid: u64,
        version: Version,
        ports: BTreeMap<u32, PortState>,
        connection: u64,
        commands: mpsc::Sender<Vec<Command>>,
        queued_bytes: Arc<AtomicUsize>,
        /// Came over TLS with a CA-signed certificate.
        authenticated: bool,
    },
    SwitchDown {
        dpid: u64,
        connection: u64,
    },
    PacketIn {
        dpid: u64,
        in_port: u32,
        dst: MacAddress,
        src: MacAddress,
        probe: Option<openflow::packet::Probe>,
        data: Vec<u8>,
    },
    PacketInsRateLimited {
        dpid: u64,
        count: u64,
    },
    /// How the switch's table-miss flow came out: through the PACKET_IN meter or not.
    PacketInMeter {
        dpid: u64,
        connection: u64,
        metered: bool,
    },
    PortStatus {
        port: PortId,
        state: Option<PortState>,
    },
    FlowRemoved {
        dpid: u64,
        rule: Rule,
        priority: u16,
    },
    Store(Change),
    Inspect(Inspector),
}

/// A cheap, cloneable way to ask the running controller about its state.
#[derive(Clone)]
pub struct ControllerHandle {
    events: mpsc::Sender<Event>,
}

impl ControllerHandle {
    /// Runs `look` on the engine between two events and returns what it found; None when
    /// the controller has stopped.
    pub async fn inspect<T: Send + 'static>(
        &self,
        look: impl FnOnce(&Engine) -> T + Send + 'static,
    ) -> Option<T> {
        let (reply, answer) = oneshot::channel();
        let inspector: Inspector = Box::new(move |engine| {
            let _ = reply.send(look(engine));
        });
        self.events.send(Event::Inspect(inspector)).await.ok()?;
        answer.await.ok()
    }
}

/// A running controller on its own runtime thread; stopped when dropped or by [`stop`].
///
/// [`stop`]: Controller::stop
pub struct Controller {
    handle: ControllerHandle,
    plain_addr: Option<SocketAddr>,
    tls_addr: Option<SocketAddr>,
    shutdown: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Controller {
    /// Binds the listeners, reads the slice membership from `store` (any backend), and
    /// starts serving
    /// switches on a runtime of its own.
    pub fn start<S: MembershipSource>(
        listeners: &Listeners,
        store: &S,
        config: ControllerConfig,
    ) -> Result<Self, StartError> {
        // No random secret means probes anyone could forge: better not to start.
        config.engine.probe_key.check()?;
        if listeners.plain.is_none() && listeners.tls.is_none() {
            return Err(StartError::NoListener);
        }
        // The TLS files are read before anything is bound, so that a bad file stops the
        // start-up with a message naming it.
        let tls = match &listeners.tls {
            Some((addr, files)) => {
                let acceptor = files.acceptor()?;
                Some((bind(addr)?, acceptor))
            }
            None => None,
        };
        let plain = listeners.plain.as_deref().map(bind).transpose()?;
        let plain_addr = plain.as_ref().map(|(_, addr)| *addr);
        let tls_addr = tls.as_ref().map(|((_, addr), _)| *addr);

        let (events_tx, events_rx) = mpsc::channel(EVENT_QUEUE);
        // Subscribe before the snapshot: a change between the two is applied twice,
        // which the membership index takes as a no-op, rather than lost.
        let (changes_tx, changes_rx) = mpsc::unbounded_channel();
        store.subscribe(Box::new(move |change| {
            let _ = changes_tx.send(change.clone());
        }));
        let slices = store
            .snapshot()
            .map_err(|err| StartError::Membership(Box::new(err)))?;
        let membership = Membership::from_slices(&slices);

        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("sliced-openflow")
            .enable_all()
            .build()
            .map_err(StartError::Runtime)?;
        let (shutdown, stopped) = watch::channel(false);
        let engine = Engine::new(config.engine.clone(), membership);
        let handle = ControllerHandle {
            events: events_tx.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("sliced-controller".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let config = Arc::new(config);
                    tokio::spawn(forward_changes(changes_rx, events_tx.clone()));
                    let connections = Arc::new(AtomicU64::new(0));
                    let caps = ConnectionCaps::new(&config);
                    let listening = plain
                        .map(|(listener, _)| (listener, None))
                        .into_iter()
                        .chain(tls.map(|((listener, _), acceptor)| (listener, Some(acceptor))));
                    for (listener, acceptor) in listening {
                        let listener = match TcpListener::from_std(listener) {
                            Ok(listener) => listener,
                            Err(err) => {
                                log::error!("OpenFlow listener: {err}");
                                return;
                            }
                        };
                        tokio::spawn(accept_switches(
                            listener,
                            acceptor,
                            Arc::clone(&connections),
                            caps.clone(),
                            events_tx.clone(),
                            Arc::clone(&config),
                            stopped.clone(),
                        ));
                    }
                    run_engine(engine, events_rx, config, stopped).await;
                });
                // Connection tasks still running end with the runtime.
                runtime.shutdown_timeout(Duration::from_secs(1));
            })
            .map_err(StartError::Runtime)?;
        if let Some(addr) = plain_addr {
            log::warn!(
                "OpenFlow over plain TCP on {addr} is unauthenticated: anyone who reaches it \
                 can act as any switch"
            );
        }
        if let Some(addr) = tls_addr {
            log::info!("OpenFlow over TLS listening on {addr}, switch certificates required");
        }
        Ok(Self {
            handle,
            plain_addr,
            tls_addr,
            shutdown,
            thread: Some(thread),
        })
    }

    pub fn handle(&self) -> ControllerHandle {
        self.handle.clone()
    }

    /// Where plain TCP listens, if it is on.
    pub fn plain_addr(&self) -> Option<SocketAddr> {
        self.plain_addr
    }

    /// Where TLS listens, if it is on.
    pub fn tls_addr(&self) -> Option<SocketAddr> {
        self.tls_addr
    }

    /// Disconnects every switch and waits for the controller's thread to end.
    pub fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// A bound, non-blocking listener and its address.
fn bind(addr: &str) -> Result<(std::net::TcpListener, SocketAddr), StartError> {
    let listen_error = |reason| StartError::Listen {
        addr: addr.to_owned(),
        reason,
    };
    let listener = std::net::TcpListener::bind(addr).map_err(listen_error)?;
    listener.set_nonblocking(true).map_err(listen_error)?;
    let local_addr = listener.local_addr().map_err(listen_error)?;
    Ok((listener, local_addr))
}

async fn forward_changes(
    mut changes: mpsc::UnboundedReceiver<Change>,
    events: mpsc::Sender<Event>,
) {
    while let Some(change) = changes.recv().await {
        if events.send(Event::Store(change)).await.is_err() {
            return;
        }
    }
}

// ---- the engine task --------------------------------------------------------------------

struct SwitchLink {
    connection: u64,
    commands: mpsc::Sender<Vec<Command>>,
    /// Bytes handed to the connection and not yet written, by [`command_bytes`].
    queued_bytes: Arc<AtomicUsize>,
    authenticated: bool,
}

async fn run_engine(
    mut engine: Engine,
    mut events: mpsc::Receiver<Event>,
    config: Arc<ControllerConfig>,
    mut stopped: watch::Receiver<bool>,
) {
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
            _ = stopped.changed() => return,
        }
        dispatch(
            &mut engine,
            &mut switches,
            &mut batches,
            config.max_outbound_bytes,
        );
    }
}

fn handle_event(engine: &mut Engine, switches: &mut HashMap<u64, SwitchLink>, event: Event) {
    match event {
        Event::SwitchUp {
            dpid,
            version,
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
            engine.switch_connected(dpid, version, ports, Instant::now());
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
            dst,
            src,
            probe,
            data,
        } => engine.packet_in(
            dpid,
            in_port,
            Frame {
                dst,
                src,
                probe,
                data: &data,
            },
            Instant::now(),
        ),
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
        Event::Store(change) => engine.membership_changed(&change),
        Event::Inspect(look) => look(engine),
    }
}

/// Hands every switch its share of the engine's commands as one batch. `batches` lives
/// as long as the engine task, so grouping allocates only the batches themselves.
fn dispatch(
    engine: &mut Engine,
    switches: &mut HashMap<u64, SwitchLink>,
    batches: &mut HashMap<u64, Vec<Command>>,
    max_outbound_bytes: usize,
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
            let bytes = batch.iter().map(command_bytes).sum::<usize>();
            let queued = link.queued_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
            let sent = if queued > max_outbound_bytes {
                log::warn!(
                    "switch {dpid:#x} is not draining its queue ({queued} bytes); \
                     disconnecting it"
                );
                false
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
fn command_bytes(command: &Command) -> usize {
    const MESSAGE: usize = 160;
    match command {
        Command::PacketOut { data, .. } => MESSAGE + data.len(),
        _ => MESSAGE,
    }
}

// ---- switch connections -----------------------------------------------------------------

/// The two directions of a switch connection, whatever carries it.
type SwitchRead = Box<dyn AsyncRead + Unpin + Send>;
type SwitchWrite = Box<dyn AsyncWrite + Unpin + Send>;

/// Accepts switches on one listener; with an acceptor, each must complete a TLS handshake
/// with a CA-signed certificate first. Connection numbers are shared by all listeners.
async fn accept_switches(
    listener: TcpListener,
    acceptor: Option<TlsAcceptor>,
    connections: Arc<AtomicU64>,
    caps: ConnectionCaps,
    events: mpsc::Sender<Event>,
    config: Arc<ControllerConfig>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut refusals = LogLimiter::default();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopped.changed() => return,
        };
        match accepted {
            Ok((stream, peer)) => {
                let Some((open, handshaking)) = caps.admit() else {
                    // Dropping the stream closes it before it costs a task or a buffer.
                    drop(stream);
                    if let Some(count) = refusals.note(1, Instant::now()) {
                        log::warn!(
                            "OpenFlow connection from {peer} closed: at the cap of {} \
                             connections or {} in their handshake ({count} refused since \
                             the last report)",
                            caps.max_open,
                            caps.max_handshaking
                        );
                    }
                    continue;
                };
                let connection = connections.fetch_add(1, Ordering::Relaxed) + 1;
                let (acceptor, events, config, stopped) = (
                    acceptor.clone(),
                    events.clone(),
                    Arc::clone(&config),
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
                        handshaking,
                    };
                    if let Err(err) =
                        serve_switch(reader, writer, opened, events, config, stopped).await
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

/// The caps on OpenFlow connections, shared by both listeners.
#[derive(Clone)]
struct ConnectionCaps {
    open: Arc<Semaphore>,
    handshaking: Arc<Semaphore>,
    max_open: usize,
    max_handshaking: usize,
}

impl ConnectionCaps {
    fn new(config: &ControllerConfig) -> Self {
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
            max_handshaking,
        }
    }

    /// A place for a new connection and for its handshake, or None at either cap.
    fn admit(&self) -> Option<(OwnedSemaphorePermit, OwnedSemaphorePermit)> {
        let open = Arc::clone(&self.open).try_acquire_owned().ok()?;
        let handshaking = Arc::clone(&self.handshaking).try_acquire_owned().ok()?;
        Some((open, handshaking))
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
    /// Released once the OpenFlow handshake is over.
    handshaking: OwnedSemaphorePermit,
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
    #[error("malformed OpenFlow: {0}")]
    Wire(#[from] openflow::Error),
    #[error("the switch closed the connection")]
    Closed,
    #[error("{0}")]
    Protocol(String),
    #[error("no message for {0:?}")]
    Silent(Duration),
    #[error("handshake not completed in {0:?}")]
    HandshakeTimeout(Duration),
    #[error("replaced or dropped by the controller")]
    Dropped,
    #[error("datapath id {0:#x} is not on the allow-list")]
    NotAllowed(u64),
    #[error("the switch did not take our messages for {0:?}")]
    NotDraining(Duration),
}

/// Frames OpenFlow messages out of a byte stream, with a bounded buffer.
struct Reader {
    half: SwitchRead,
    buffer: Vec<u8>,
    /// Where the unread bytes of `buffer` start.
    start: usize,
}

impl Reader {
    fn new(half: SwitchRead) -> Self {
        Self {
            half,
            buffer: Vec::with_capacity(16 * 1024),
            start: 0,
        }
    }

    /// The next complete message. Cancel-safe: a read cut short by `select!` loses no
    /// bytes, because `read_buf` only appends what it has read.
    async fn next(&mut self) -> Result<(openflow::HeaderRepr, Message), ConnectionError> {
        loop {
            let unread = &self.buffer[self.start..];
            if let Some(len) = openflow::frame_len(unread)? {
                let parsed = Message::parse(&unread[..len]);
                self.start += len;
                return Ok(parsed?);
            }
            // Move the partial frame to the front only when a read is needed, so a
            // burst of frames costs one copy, not one per frame.
            if self.start > 0 {
                self.buffer.drain(..self.start);
                self.start = 0;
            }
            let room = READ_BUFFER_LIMIT.saturating_sub(self.buffer.len());
            if room == 0 {
                return Err(ConnectionError::Protocol(
                    "read buffer limit exceeded".into(),
                ));
            }
            self.buffer.reserve(room.min(16 * 1024));
            if self.half.read_buf(&mut self.buffer).await? == 0 {
                return Err(ConnectionError::Closed);
            }
        }
    }
}

/// Encodes and writes messages for one switch, reusing one buffer.
struct Writer {
    half: SwitchWrite,
    version: Version,
    dpid: u64,
    next_xid: u32,
    buffer: Vec<u8>,
}

impl Writer {
    fn queue(&mut self, message: &Message) -> Result<(), ConnectionError> {
        self.next_xid = self.next_xid.wrapping_add(1);
        message.emit(self.version, self.next_xid, &mut self.buffer)?;
        Ok(())
    }

    fn queue_reply(&mut self, message: &Message, xid: u32) -> Result<(), ConnectionError> {
        message.emit(self.version, xid, &mut self.buffer)?;
        Ok(())
    }

    /// Writes what is queued; a switch that does not read it within `patience` is
    /// given up, so that a peer that stops reading cannot hold a connection open.
    async fn flush(&mut self, patience: Duration) -> Result<(), ConnectionError> {
        if !self.buffer.is_empty() {
            // TLS holds back what it could not send at once until flushed, so the
            // flush is inside the deadline too.
            let write = async {
                self.half.write_all(&self.buffer).await?;
                self.half.flush().await
            };
            tokio::time::timeout(patience, write)
                .await
                .map_err(|_| ConnectionError::NotDraining(patience))??;
            self.buffer.clear();
            // A burst may have grown the buffer far beyond what steady traffic needs.
            if self.buffer.capacity() > WRITE_BUFFER_KEEP {
                self.buffer.shrink_to(WRITE_BUFFER_KEEP);
            }
        }
        Ok(())
    }

    /// Queues a command; the table-miss flow waits for `meter` to decide whether it
    /// passes the PACKET_IN meter (the setup then hands it back).
    fn queue_command(
        &mut self,
        command: Command,
        meter: &mut MeterSetup,
        scratch: &mut Vec<u8>,
    ) -> Result<(), ConnectionError> {
        let message = match command {
            Command::ClearFlows => Message::FlowMod(FlowMod {
                command: FlowModCommand::Delete,
                table_id: if self.version == Version::Of13 {
                    openflow::flow_mod::TABLE_ALL
                } else {
                    0
                },
                ..FlowMod::default()
            }),
            Command::TableMiss => match meter.table_miss() {
                Some(table_miss) => table_miss,
                None => return Ok(()),
            },
            Command::FlowAdd {
                rule,
                out_port,
                priority,
                idle_timeout,
                hard_timeout,
                notify_removal,
            } => Message::FlowMod(FlowMod {
                command: FlowModCommand::Add,
                r#match: rule_match(rule),
                priority,
                idle_timeout,
                hard_timeout,
                flags: if notify_removal {
                    openflow::flow_mod::FLAG_SEND_FLOW_REM
                } else {
                    0
                },
                actions: out_port
                    .map(|port| Action::Output { port, max_len: 0 })
                    .into_iter()
                    .collect(),
                ..FlowMod::default()
            }),
            Command::FlowDelete { rule, priority } => Message::FlowMod(FlowMod {
                command: FlowModCommand::DeleteStrict,
                r#match: rule_match(rule),
                priority,
                ..FlowMod::default()
            }),
            Command::PacketOut { out_port, data } => packet_out(out_port, data),
            Command::Discovery { port_no, proof } => {
                // The frame is built in `scratch`, and the buffer is taken back from the
                // message once encoded, so that probes reuse one allocation.
                let mut frame = std::mem::take(scratch);
                frame.clear();
                openflow::packet::signed_discovery_frame(
                    self.dpid,
                    port_no,
                    DISCOVERY_SOURCE,
                    &proof,
                    &mut frame,
                );
                let message = packet_out(port_no, frame);
                let queued = self.queue(&message);
                if let Message::PacketOut(PacketOut { data, .. }) = message {
                    *scratch = data;
                }
                return queued;
            }
        };
        self.queue(&message)
    }
}

fn rule_match(rule: Rule) -> Match {
    Match {
        in_port: Some(rule.in_port),
        eth_src: Some(rule.eth_src.octets()),
        eth_dst: Some(rule.eth_dst.octets()),
        ..Match::default()
    }
}

fn packet_out(out_port: u32, data: Vec<u8>) -> Message {
    Message::PacketOut(PacketOut {
        buffer_id: None,
        in_port: port::CONTROLLER,
        actions: vec![Action::Output {
            port: out_port,
            max_len: 0,
        }],
        data,
    })
}

fn port_state(desc: &PortDesc) -> PortState {
    PortState {
        name: desc.name.clone(),
        live: desc.is_live(),
    }
}

/// Physical ports only: reserved numbers (LOCAL, CONTROLLER, ...) are not places hosts
/// or links can be.
fn is_physical(port_no: u32) -> bool {
    port_no != 0 && port_no < port::MAX
}

async fn serve_switch(
    read_half: SwitchRead,
    write_half: SwitchWrite,
    opened: OpenedConnection,
    events: mpsc::Sender<Event>,
    config: Arc<ControllerConfig>,
    mut stopped: watch::Receiver<bool>,
) -> Result<(), ConnectionError> {
    let mut reader = Reader::new(read_half);
    let mut writer = Writer {
        half: write_half,
        version: Version::Of13,
        dpid: 0,
        next_xid: 0,
        buffer: Vec::with_capacity(8192),
    };
    let handshake = tokio::time::timeout(
        config.handshake_timeout,
        handshake(&mut reader, &mut writer, &config),
    );
    let OpenedConnection {
        peer,
        connection,
        authenticated,
        handshaking,
    } = opened;
    let (dpid, ports) = handshake
        .await
        .map_err(|_| ConnectionError::HandshakeTimeout(config.handshake_timeout))??;
    drop(handshaking);
    if let Some(allowed) = &config.allowed_dpids {
        if !allowed.contains(&dpid) {
            log::warn!("switch from {peer} refused: datapath id {dpid:#x} is not allowed");
            return Err(ConnectionError::NotAllowed(dpid));
        }
    }
    log::info!("switch {dpid:#x} connected from {peer} (connection {connection})");
    writer.dpid = dpid;

    let (commands_tx, mut commands) = mpsc::channel::<Vec<Command>>(SWITCH_QUEUE);
    let queued_bytes = Arc::new(AtomicUsize::new(0));
    events
        .send(Event::SwitchUp {
            dpid,
            version: writer.version,
            ports,
            connection,
            commands: commands_tx,
            queued_bytes: Arc::clone(&queued_bytes),
            authenticated,
        })
        .await
        .map_err(|_| ConnectionError::Dropped)?;
    let result = run_switch(
        (dpid, connection),
        &mut reader,
        &mut writer,
        Outbound {
            commands: &mut commands,
            queued_bytes: &queued_bytes,
        },
        &events,
        &config,
        &mut stopped,
    )
    .await;
    let _ = events.send(Event::SwitchDown { dpid, connection }).await;
    result
}

/// HELLO, version negotiation, features and (on 1.3) the port list.
async fn handshake(
    reader: &mut Reader,
    writer: &mut Writer,
    config: &ControllerConfig,
) -> Result<(u64, BTreeMap<u32, PortState>), ConnectionError> {
    // The handshake has its own deadline around it.
    let patience = config.handshake_timeout;
    let max_ports = config.engine.max_ports_per_switch;
    let too_many_ports =
        || ConnectionError::Protocol(format!("the switch announces more than {max_ports} ports"));
    let ours = [Version::Of10, Version::Of13];
    writer.version = Version::Of13;
    writer.queue(&Message::Hello {
        versions: Some(Version::Of10.bitmap_bit() | Version::Of13.bitmap_bit()),
    })?;
    writer.flush(patience).await?;
    let (header, hello) = reader.next().await?;
    let Message::Hello { versions } = hello else {
        return Err(ConnectionError::Protocol(format!(
            "expected HELLO, got message type {}",
            header.msg_type
        )));
    };
    let Some(version) = openflow::negotiate(&ours, header.version, versions) else {
        // Sent in the lowest common dialect.
        writer.version = Version::Of10;
        writer.queue_reply(
            &Message::Error {
                err_type: ErrorType::HelloFailed,
                code: HelloFailedCode::Incompatible.into(),
                data: b"sliced speaks OpenFlow 1.0 and 1.3".to_vec(),
            },
            header.xid,
        )?;
        writer.flush(patience).await?;
        return Err(ConnectionError::Protocol(format!(
            "no common OpenFlow version (switch offers {:#04x})",
            header.version
        )));
    };
    writer.version = version;
    writer.queue(&Message::FeaturesRequest)?;
    writer.flush(patience).await?;

    let mut dpid = None;
    let mut ports = BTreeMap::new();
    let mut port_desc_pending = false;
    let mut multipart_bytes = 0usize;
    loop {
        let (header, message) = reader.next().await?;
        match message {
            Message::EchoRequest(data) => {
                writer.queue_reply(&Message::EchoReply(data), header.xid)?;
                writer.flush(patience).await?;
            }
            Message::FeaturesReply(features) => {
                dpid = Some(features.datapath_id);
                for desc in features.ports.iter().filter(|d| is_physical(d.port_no)) {
                    ports.insert(desc.port_no, port_state(desc));
                }
                if ports.len() > max_ports {
                    return Err(too_many_ports());
                }
                if version == Version::Of13 {
                    writer.queue(&Message::PortDescRequest)?;
                    port_desc_pending = true;
                }
                writer.queue(&Message::SetConfig {
                    flags: 0,
                    miss_send_len: openflow::action::WHOLE_PACKET,
                })?;
                writer.flush(patience).await?;
            }
            Message::PortDescReply { ports: descs, more } => {
                multipart_bytes = multipart_bytes.saturating_add(usize::from(header.length));
                if multipart_bytes > config.max_multipart_bytes {
                    return Err(ConnectionError::Protocol(format!(
                        "port list longer than {} bytes",
                        config.max_multipart_bytes
                    )));
                }
                for desc in descs.iter().filter(|d| is_physical(d.port_no)) {
                    ports.insert(desc.port_no, port_state(desc));
                }
                if ports.len() > max_ports {
                    return Err(too_many_ports());
                }
                port_desc_pending = more;
            }
            Message::Error { err_type, code, .. } => {
                return Err(ConnectionError::Protocol(format!(
                    "switch reported error type {err_type:?} code {code} during the handshake"
                )));
            }
            _ => {}
        }
        if let (Some(dpid), false) = (dpid, port_desc_pending) {
            return Ok((dpid, ports));
        }
    }
}

/// The engine's side of a connection: its command batches and their byte count.
struct Outbound<'a> {
    commands: &'a mut mpsc::Receiver<Vec<Command>>,
    queued_bytes: &'a AtomicUsize,
}

async fn run_switch(
    (dpid, connection): (u64, u64),
    reader: &mut Reader,
    writer: &mut Writer,
    outbound: Outbound<'_>,
    events: &mpsc::Sender<Event>,
    config: &ControllerConfig,
    stopped: &mut watch::Receiver<bool>,
) -> Result<(), ConnectionError> {
    let Outbound {
        commands,
        queued_bytes,
    } = outbound;
    let patience = config.dead_after;
    let mut last_heard = Instant::now();
    let mut keepalive = tokio::time::interval(config.echo_interval);
    keepalive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut scratch = Vec::new();
    let mut packet_ins = PacketInLimiter::new(
        config.packet_in_rate,
        config.packet_in_burst,
        config.packet_in_port_rate,
        config.lldp_port_rate(),
        config.engine.max_ports_per_switch,
        last_heard,
    );
    // PACKET_INs dropped and not yet reported to the engine.
    let mut unreported = 0u64;
    let (mut meter, step) = MeterSetup::start(
        writer.version,
        config.packet_in_rate,
        config.packet_in_burst,
        last_heard,
        config.handshake_timeout,
    );
    let report = MeterReport {
        dpid,
        connection,
        events,
    };
    report.apply(step, writer).await?;
    writer.flush(patience).await?;
    loop {
        tokio::select! {
            received = reader.next() => {
                let (header, message) = received?;
                last_heard = Instant::now();
                if let Some(step) = meter.handle(header.xid, &message) {
                    report.apply(step, writer).await?;
                } else if let Some(event) = switch_event(dpid, message, header.xid, writer)? {
                    let limited = match &event {
                        Event::PacketIn { in_port, data, .. } => {
                            !packet_ins.admit(*in_port, data, last_heard)
                        }
                        _ => false,
                    };
                    if limited {
                        unreported += 1;
                    } else {
                        events.send(event).await.map_err(|_| ConnectionError::Dropped)?;
                        if unreported > 0 {
                            let count = std::mem::take(&mut unreported);
                            let report = Event::PacketInsRateLimited { dpid, count };
                            events.send(report).await.map_err(|_| ConnectionError::Dropped)?;
                        }
                    }
                }
                writer.flush(patience).await?;
            }
            batch = commands.recv() => {
                let Some(batch) = batch else { return Err(ConnectionError::Dropped) };
                let mut written = 0;
                for command in batch {
                    written += command_bytes(&command);
                    writer.queue_command(command, &mut meter, &mut scratch)?;
                }
                // Take whatever else is queued, so that a burst becomes one write.
                while let Ok(batch) = commands.try_recv() {
                    for command in batch {
                        written += command_bytes(&command);
                        writer.queue_command(command, &mut meter, &mut scratch)?;
                    }
                }
                writer.flush(patience).await?;
                queued_bytes.fetch_sub(written, Ordering::Relaxed);
            }
            _ = keepalive.tick() => {
                if let Some(step) = meter.expire(Instant::now()) {
                    report.apply(step, writer).await?;
                    writer.flush(patience).await?;
                }
                if unreported > 0 {
                    let count = std::mem::take(&mut unreported);
                    let report = Event::PacketInsRateLimited { dpid, count };
                    events.send(report).await.map_err(|_| ConnectionError::Dropped)?;
                }
                let silent = last_heard.elapsed();
                if silent >= config.dead_after {
                    return Err(ConnectionError::Silent(silent));
                }
                if silent >= config.echo_interval {
                    writer.queue(&Message::EchoRequest(Vec::new()))?;
                    writer.flush(patience).await?;
                }
            }
            _ = stopped.changed() => return Ok(()),
        }
    }
}

/// Carries out what the meter setup decided for one switch.
struct MeterReport<'a> {
    dpid: u64,
    connection: u64,
    events: &'a mpsc::Sender<Event>,
}

impl MeterReport<'_> {
    /// Queues the step's messages (the caller flushes), and logs and reports a decision.
    async fn apply(&self, step: MeterStep, writer: &mut Writer) -> Result<(), ConnectionError> {
        for (xid, message) in &step.send {
            writer.queue_reply(message, *xid)?;
        }
        if let Some(table_miss) = &step.table_miss {
            writer.queue(table_miss)?;
        }
        let Some(decision) = step.decided else {
            return Ok(());
        };
        let dpid = self.dpid;
        match &decision {
            MeterDecision::Metered {
                meter_id,
                rate,
                burst,
            } => log::info!(
                "switch {dpid:#x}: PACKET_INs limited in the switch by meter {meter_id} \
                 ({rate}/s, burst {})",
                burst.map_or_else(|| "not supported".to_owned(), |burst| burst.to_string())
            ),
            MeterDecision::Unmetered(reason) => log::info!(
                "switch {dpid:#x}: no PACKET_IN meter ({reason}); the controller's rate \
                 limits alone apply"
            ),
        }
        let event = Event::PacketInMeter {
            dpid,
            connection: self.connection,
            metered: decision.is_metered(),
        };
        self.events
            .send(event)
            .await
            .map_err(|_| ConnectionError::Dropped)
    }
}

/// Turns a message from a switch into an event for the engine, answering echoes itself.
fn switch_event(
    dpid: u64,
    message: Message,
    xid: u32,
    writer: &mut Writer,
) -> Result<Option<Event>, ConnectionError> {
    Ok(match message {
        Message::EchoRequest(data) => {
            writer.queue_reply(&Message::EchoReply(data), xid)?;
            None
        }
        Message::PacketIn(packet) => {
            let Ok(frame) = openflow::packet::EthernetFrame::new_checked(&packet.data[..]) else {
                return Ok(None);
            };
            let (dst, src) = (MacAddress::new(frame.dst()), MacAddress::new(frame.src()));
            let probe = openflow::packet::parse_probe(&packet.data);
            Some(Event::PacketIn {
                dpid,
                in_port: packet.in_port,
                dst,
                src,
                probe,
                data: packet.data,
            })
        }
        Message::PortStatus { reason, desc } if is_physical(desc.port_no) => {
            // A deleted port is gone altogether; an added or changed one has a state.
            let state = (reason != PortReason::Delete).then(|| port_state(&desc));
            Some(Event::PortStatus {
                port: PortId::new(dpid, desc.port_no),
                state,
            })
        }
        Message::FlowRemoved(removed) => {
            let m = removed.r#match;
            match (m.in_port, m.eth_src, m.eth_dst) {
                (Some(in_port), Some(src), Some(dst)) => Some(Event::FlowRemoved {
                    dpid,
                    rule: Rule {
                        in_port,
                        eth_src: MacAddress::new(src),
                        eth_dst: MacAddress::new(dst),
                    },
                    priority: removed.priority,
                }),
                _ => None,
            }
        }
        Message::Error { err_type, code, .. } => {
            log::warn!("switch {dpid:#x} reported error type {err_type:?} code {code}");
            None
        }
        _ => None,
    })
}

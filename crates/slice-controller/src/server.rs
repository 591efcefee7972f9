//! OpenFlow over TCP or TLS: one task per switch connection, one task that owns the
//! [`Engine`].
//!
//! This is the I/O: the listeners and their connection caps, TLS, a task per connection
//! that runs a [`SwitchSession`] (which holds every protocol rule) between the socket,
//! its deadlines and the engine task, and the engine task itself. The engine task never
//! awaits a switch: it hands each switch its commands with `try_send`, and a switch too
//! slow to take them is disconnected rather than allowed to stall the others.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use slice_core::{Change, Membership, MembershipSource, PortId};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch, OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;

use crate::config::ControllerConfig;
use crate::engine::{Command, Engine, Frame, Rule, SwitchProfile};
use crate::limits::LogLimiter;
use crate::probe::ProbeKeyError;
use crate::session::{CloseReason, SwitchEvent, SwitchSession};
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

/// Capacity a connection's write buffer keeps between bursts.
const WRITE_BUFFER_KEEP: usize = 64 * 1024;
/// Command batches queued for one switch before it counts as too slow.
const SWITCH_QUEUE: usize = 1024;
/// Events queued from all switches to the engine.
const EVENT_QUEUE: usize = 8192;

type Inspector = Box<dyn FnOnce(&Engine) + Send>;

enum Event {
    SwitchUp {
        dpid: u64,
        profile: SwitchProfile,
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
        frame: Frame,
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
    #[error("the switch closed the connection")]
    Closed,
    #[error(transparent)]
    Session(CloseReason),
    #[error("replaced or dropped by the controller")]
    Dropped,
    #[error("the switch did not take our messages for {0:?}")]
    NotDraining(Duration),
}

/// The engine's side of a connection once the switch is known.
struct EngineLink {
    dpid: u64,
    commands: mpsc::Receiver<Vec<Command>>,
    /// Bytes the engine task counted in, by [`command_bytes`], and the connection has not
    /// yet written.
    queued_bytes: Arc<AtomicUsize>,
}

/// The I/O around one [`SwitchSession`]: reads into it, writes what it transmits, wakes
/// it at its deadlines, carries its events to the engine task and the engine's commands
/// to it.
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
    events: mpsc::Sender<Event>,
    config: Arc<ControllerConfig>,
}

async fn serve_switch(
    reader: SwitchRead,
    writer: SwitchWrite,
    opened: OpenedConnection,
    events: mpsc::Sender<Event>,
    config: Arc<ControllerConfig>,
    mut stopped: watch::Receiver<bool>,
) -> Result<(), ConnectionError> {
    let OpenedConnection {
        peer,
        connection,
        authenticated,
        handshaking,
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
        handshaking: Some(handshaking),
        events,
        config,
    };
    let result = connection.run(&mut stopped).await;
    if let Some(link) = &connection.engine {
        let down = Event::SwitchDown {
            dpid: link.dpid,
            connection: connection.connection,
        };
        let _ = connection.events.send(down).await;
    }
    result
}

impl Connection {
    async fn run(&mut self, stopped: &mut watch::Receiver<bool>) -> Result<(), ConnectionError> {
        // Bytes of engine commands queued into the session and not yet written.
        let mut unwritten = 0;
        // One timer for the connection's life. Hearing from the switch puts the session's
        // deadline off, and re-arming a timer per message would cost more than waking
        // early: it is moved only when the deadline comes sooner, and when it fires the
        // session does what is due (maybe nothing) and it is armed again.
        let wake = tokio::time::sleep_until(Instant::now().into());
        tokio::pin!(wake);
        let mut armed = false;
        loop {
            self.flush().await?;
            if let Some(link) = &self.engine {
                link.queued_bytes.fetch_sub(unwritten, Ordering::Relaxed);
                unwritten = 0;
            }
            self.forward_events().await?;
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
                        self.forward_events().await?;
                    }
                }
                batch = commands => {
                    let Some(batch) = batch else { return Err(ConnectionError::Dropped) };
                    unwritten += self.queue(batch);
                    // Take whatever else is queued, so that a burst becomes one write.
                    while let Some(batch) =
                        self.engine.as_mut().and_then(|link| link.commands.try_recv().ok())
                    {
                        unwritten += self.queue(batch);
                    }
                }
                _ = &mut wake => {
                    armed = false;
                    self.session.handle_timeout(Instant::now());
                }
                _ = stopped.changed() => return Ok(()),
            }
        }
    }

    /// Queues a batch of commands into the session; what they cost in the outbound
    /// count.
    fn queue(&mut self, batch: Vec<Command>) -> usize {
        let mut cost = 0;
        for command in batch {
            cost += command_bytes(&command);
            self.session.queue(command);
        }
        cost
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

    /// Hands the session's events to the engine task, in order.
    async fn forward_events(&mut self) -> Result<(), ConnectionError> {
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
            self.events
                .send(event)
                .await
                .map_err(|_| ConnectionError::Dropped)?;
        }
        Ok(())
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

/// A session's event, for the engine task; None for `Connected`, which the connection
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
    })
}

//! OpenFlow over TCP or TLS: one task per switch connection, one task that owns the
//! [`Engine`].
//!
//! This is the I/O: the listeners and their connection caps, TLS, a task per connection
//! that runs a [`SwitchSession`](crate::session::SwitchSession) (which holds every protocol rule) between the socket,
//! its deadlines and the engine, and the engine task. The engine sits behind one lock,
//! taken for one decision at a time by the connection task whose switch sent the event
//! or by the engine task (time, election, store); nobody holding it awaits a switch:
//! other switches get their commands with `try_send`, and a switch too slow to take them
//! is disconnected rather than allowed to stall the others.
//!
//! This module starts and stops it all; `engine_task.rs` is the shared engine and the
//! engine's task, `connection.rs` accepts switches and runs their connections.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::time::Duration;

use slice_core::{Change, FabricDeclarations, Leadership, Membership, MembershipSource, PortId};
use tokio::net::TcpListener;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::config::ControllerConfig;
use crate::engine::{Command, Engine, FlowsRead, Frame, Role, Rule, SwitchProfile};
use crate::notice::Notice;
use crate::probe::ProbeKeyError;
use crate::session::RoleRefusal;
use crate::tls::{TlsError, TlsFiles};
use crate::topology::PortState;

mod connection;
mod engine_task;

use connection::{accept_switches, ConnectionCaps};
use engine_task::{run_engine, Decider, SharedDecider};

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

/// What ties the controller to a cluster's master election, handed in by the program that
/// runs the election (the controller knows no election backend).
pub struct ClusterLink {
    /// This instance's place in the election; the engine writes to switches only as
    /// master.
    pub leadership: watch::Receiver<Leadership>,
    /// Where the controller tells the role each connected switch gave this instance,
    /// whenever it changes.
    pub switch_roles: watch::Sender<BTreeMap<u64, Role>>,
    /// Notified when a switch refuses a role request as stale: the election reads the
    /// current generation from etcd and publishes its state again, even if unchanged,
    /// and the engine asks the switch once more with it.
    pub generation_recheck: Arc<tokio::sync::Notify>,
}

/// Store changes and inspections queued for the engine task (switches' events do not
/// queue: their connection tasks decide on them).
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
    /// The switch refused a FLOW_MOD for a full table.
    TableFull {
        dpid: u64,
    },
    /// The switch refused a bundle of the pipeline.
    BundleRefused {
        dpid: u64,
        table_full: bool,
    },
    /// The switch does not take bundles.
    BundlesUnsupported {
        dpid: u64,
    },
    /// The switch has taken every pipeline change sent to it.
    PipelineWritten {
        dpid: u64,
    },
    /// The switch has worked through the probes of `round` and every round before.
    ProbeRoundAnswered {
        dpid: u64,
        round: u64,
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
    /// The switch confirmed the role it gives this instance.
    RoleChanged {
        dpid: u64,
        connection: u64,
        role: Role,
    },
    /// The switch refused this instance's role request.
    RoleRefused {
        dpid: u64,
        connection: u64,
        reason: RoleRefusal,
    },
    /// The switch's flow table, read back for reconciliation.
    FlowsRead {
        dpid: u64,
        connection: u64,
        read: FlowsRead,
    },
    Store(Change),
    Inspect(Inspector),
}

/// A cheap, cloneable way to ask the running controller about its state.
#[derive(Clone)]
pub struct ControllerHandle {
    events: mpsc::Sender<Event>,
    notices: broadcast::Sender<Notice>,
    verification: crate::verification::VerificationHandle,
}

/// How many notices a follower may fall behind before it misses some
/// ([`broadcast::error::RecvError::Lagged`]).
pub const NOTICE_BUFFER: usize = 1024;

impl ControllerHandle {
    /// Whether the controller still runs (its engine takes events): for readiness, so it
    /// sends nothing and takes no lock.
    pub fn is_running(&self) -> bool {
        !self.events.is_closed()
    }

    /// What the data-plane verification found last ([`crate::verification`]).
    pub fn verification(&self) -> crate::verification::VerificationView {
        self.verification.view()
    }

    /// Every change of the network from now on, in order (see [`Notice`]).
    pub fn follow(&self) -> broadcast::Receiver<Notice> {
        self.notices.subscribe()
    }

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
    pub fn start<S: MembershipSource + FabricDeclarations>(
        listeners: &Listeners,
        store: &S,
        config: ControllerConfig,
    ) -> Result<Self, StartError> {
        Self::start_in(listeners, store, config, None)
    }

    /// [`Controller::start`] for one instance of a cluster (`Some`): it asks the switches
    /// for the role the election gives it, and writes to them only as master. With
    /// `None`, a single instance, exactly [`Controller::start`].
    pub fn start_in<S: MembershipSource + FabricDeclarations>(
        listeners: &Listeners,
        store: &S,
        config: ControllerConfig,
        mut cluster: Option<ClusterLink>,
    ) -> Result<Self, StartError> {
        // No random secret means probes anyone could forge: better not to start.
        config.engine.probe_key.check()?;
        let mut config = config;
        config.in_cluster = cluster.is_some();
        if listeners.plain.is_none() && listeners.tls.is_none() {
            return Err(StartError::NoListener);
        }
        // Room in the backlog for every switch the caps let in, arriving at once.
        let backlog = config.max_switch_connections.max(1);
        // The TLS files are read before anything is bound, so that a bad file stops the
        // start-up with a message naming it.
        let tls = match &listeners.tls {
            Some((addr, files)) => {
                let acceptor = files.acceptor()?;
                Some((bind(addr, backlog)?, acceptor))
            }
            None => None,
        };
        let plain = listeners
            .plain
            .as_deref()
            .map(|addr| bind(addr, backlog))
            .transpose()?;
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
        // Read after subscribing, like the slices: a declaration made meanwhile is told
        // as well, and declaring the same one twice changes nothing.
        let stored_fabric = store
            .declared_fabric()
            .map_err(|err| StartError::Membership(Box::new(err)))?;
        // The settings win, as they do when another instance declares one at run time:
        // refusing to start would let one PUT keep every such instance down.
        let settings_fabric = config.engine.fabric.is_declared();
        if settings_fabric && stored_fabric.is_declared() && stored_fabric != config.engine.fabric {
            log::warn!(
                "the settings declare the fabric ({}) and the store holds another, declared \
                 through the API ({}): this instance keeps its settings'; give every instance \
                 the same, or end the store's with PUT /topology/fabric {{\"declared\": []}}",
                fabric_list(&config.engine.fabric),
                fabric_list(&stored_fabric),
            );
        }

        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("sliced-openflow")
            .enable_all()
            .build()
            .map_err(StartError::Runtime)?;
        let (shutdown, stopped) = watch::channel(false);
        let mut engine = Engine::new(config.engine.clone(), membership);
        if stored_fabric.is_declared() && !settings_fabric {
            engine.fabric_declared(stored_fabric);
        }
        let (notices, _) = broadcast::channel(NOTICE_BUFFER);
        let decider: SharedDecider = Arc::new(parking_lot::Mutex::new(Decider::new(
            engine,
            &config,
            cluster.as_mut(),
            notices.clone(),
            stopped.clone(),
        )));
        let handle = ControllerHandle {
            events: events_tx.clone(),
            notices: notices.clone(),
            verification: decider.lock().verification(),
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
                            Arc::clone(&decider),
                            Arc::clone(&config),
                            stopped.clone(),
                        ));
                    }
                    run_engine(decider, events_rx, config, stopped, cluster).await;
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

/// A bound, non-blocking listener and its address, with a listen backlog of `backlog`
/// (the kernel caps it at `net.core.somaxconn`). The standard library's 128 is too few
/// for a cold start: past it the kernel drops a switch's SYN, which it sends again only
/// after a second, by when Open vSwitch's own connect timeout has given up on the attempt.
fn bind(addr: &str, backlog: usize) -> Result<(std::net::TcpListener, SocketAddr), StartError> {
    let listen_error = |reason| StartError::Listen {
        addr: addr.to_owned(),
        reason,
    };
    let resolved = std::net::ToSocketAddrs::to_socket_addrs(addr)
        .map_err(listen_error)?
        .collect::<Vec<_>>();
    let mut last = std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        "the address resolves to nothing",
    );
    for candidate in resolved {
        match listen_on(candidate, backlog) {
            Ok(listener) => {
                let local_addr = listener.local_addr().map_err(listen_error)?;
                return Ok((listener, local_addr));
            }
            Err(err) => last = err,
        }
    }
    Err(listen_error(last))
}

fn listen_on(addr: SocketAddr, backlog: usize) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    // As the standard library does: a restart binds again while old connections linger.
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(i32::try_from(backlog).unwrap_or(i32::MAX))?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
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

/// A declaration for a log line: its first entries and how many more, so that the line
/// stays short whatever the declaration's size.
fn fabric_list(fabric: &slice_core::DeclaredFabric) -> String {
    const SHOWN: usize = 4;
    let entries = fabric.entries();
    let mut text: Vec<String> = entries
        .iter()
        .take(SHOWN)
        .map(ToString::to_string)
        .collect();
    if entries.len() > SHOWN {
        text.push(format!("and {} more", entries.len() - SHOWN));
    }
    text.join(", ")
}

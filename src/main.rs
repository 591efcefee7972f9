//! The `sliced` daemon: wires the store, the REST application and the controller.
//!
//! This is the composition root: the one place that names the store's backend (sled, or
//! slice-etcd with `--etcd`), handing it to the controller as a `MembershipSource` and to
//! the REST application as an `Arc<dyn SliceStore>`. The order matters at both ends. At
//! start: the SIGINT and SIGTERM handler first, then the store, the controller, the
//! servers (TCP with its connection cap, and the Unix socket on a server of its own so
//! that the cap never blocks it), and systemd's `READY=1` only once everything is bound.
//! At a stop: not ready, the event streams closed, every server stopped at once (each
//! giving open connections `serve::STOP_GRACE_SECS`), the controller, the election
//! resigned, and the store's final flush last.

mod allocator;
mod cluster;
mod config;
mod daemon;
mod events;
mod logging;
mod manuals;
mod metrics;
mod network;
mod watchdog;

use std::os::unix::fs::PermissionsExt;
use std::process::ExitCode;
use std::sync::Arc;

use actix_web::cookie::Key;
use anyhow::Context;
use clap::Parser;
use slice_cli::DataDir;
use slice_store::{Opened, Store, LOCKED_WAIT};

use slice_core::SliceStore;

use crate::config::{Args, ClusterConfig, Config, EtcdConfig, ListenAddr};

fn main() -> ExitCode {
    // The access log (target sliced::http) is opt-in: a line per request costs throughput.
    logging::init("info,actix_server=warn,sliced::http=warn");
    let args = Args::parse();
    if let Some(dir) = &args.write_manuals {
        return report(manuals::write(dir));
    }
    let result = Config::resolve(&args).and_then(|config| {
        if args.daemon {
            daemon::spawn_background(&config)
        } else {
            actix_web::rt::System::new().block_on(serve(config))
        }
    });
    report(result)
}

fn report(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("sliced: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Serves until SIGINT or SIGTERM, then flushes the store and cleans up.
async fn serve(config: Config) -> anyhow::Result<()> {
    // Before anything listens: a signal that came between a listener's first answer and
    // the registration of its handler would go to one server and not the other, or
    // kill the daemon without its final flush.
    let stop_signal = StopSignal::register().context("cannot handle SIGINT and SIGTERM")?;
    let fd_limit = raise_fd_limit();
    let data_dir = &config.data_dir;
    let tightened = data_dir.make_private().with_context(|| {
        format!(
            "cannot make the data directory {} owner-only",
            data_dir.root().display()
        )
    })?;
    for change in tightened {
        log::warn!("{change}");
    }
    // The one place that knows the backend: the controller gets it as a
    // `MembershipSource` and the REST application as a `SliceStore`.
    let backend = match &config.etcd {
        None => Backend::Sled(Arc::new(open_store(data_dir)?)),
        Some(etcd) => Backend::Etcd(Arc::new(open_etcd(data_dir, etcd)?)),
    };
    let store = backend.shared();

    let session_key = match &backend {
        // Shared through etcd, so that a session made on one instance is valid on all.
        Backend::Etcd(etcd) if config.session_key_shared => etcd
            .shared_session_key()
            .map_err(anyhow::Error::from)
            .and_then(|bytes| Ok(Key::try_from(bytes.as_slice())?))
            .context("cannot read or make the cluster's session key in etcd")?,
        _ => slice_cli::load_or_create_session_key(&config.session_key_file)
            .map_err(anyhow::Error::from)
            .and_then(|bytes| Ok(Key::try_from(bytes.as_slice())?))
            .with_context(|| {
                format!(
                    "cannot load the session key {}",
                    config.session_key_file.display()
                )
            })?,
    };
    let mut settings = slice_http::Settings::new(session_key);
    if let Some(required) = config.require_auth {
        settings.require_auth_for_slices = required;
    }
    if let Some(allowed) = config.developer_login {
        settings.developer_login = allowed;
    }
    if let Some(secure) = config.secure_cookie {
        settings.secure_cookie = secure;
    }
    settings.session_ttl = config.session_ttl;
    settings.proxy = config.proxy.clone().map(Arc::new);
    if let Some(oidc) = config.oidc.clone() {
        // [auth.roles] maps the role claim's values, as it maps the proxy's header.
        let oidc = slice_http::OidcConfig {
            roles: config.roles.clone(),
            ..oidc
        };
        let oidc = Arc::new(slice_http::Oidc::new(oidc).map_err(anyhow::Error::msg)?);
        // Discovered ahead of the first login, so that a wrong issuer shows in the log;
        // a provider that is down only delays the logins.
        actix_web::rt::spawn({
            let oidc = Arc::clone(&oidc);
            async move { oidc.discover().await }
        });
        settings.oidc = Some(oidc);
    }
    if !settings.developer_login && settings.proxy.is_none() && settings.oidc.is_none() {
        log::warn!(
            "no login over HTTP: the developer login is off and neither [auth.proxy] nor \
             [auth.oidc] is set, so only the local socket (the slice tool) can reach the \
             guarded endpoints"
        );
    }
    settings.request_timeout = config.request_timeout;
    settings.max_apply_records = config.max_apply_records;
    let http = &config.http;
    settings.host_policy =
        slice_http::HostPolicy::new(&http.resolved, Some(&http.written), &config.allowed_hosts);

    let election = match (&config.etcd, &config.cluster) {
        (Some(etcd), Some(cluster)) => Some(Arc::new(start_election(&config, etcd, cluster)?)),
        _ => None,
    };
    let cluster_link = election.as_ref().map(|election| {
        let (switch_roles, mut roles) =
            tokio::sync::watch::channel(std::collections::BTreeMap::new());
        let publisher = Arc::clone(election);
        actix_web::rt::spawn(async move {
            while roles.changed().await.is_ok() {
                let current = roles.borrow_and_update().clone();
                publisher.set_switch_roles(cluster::switch_roles(&current));
            }
        });
        slice_controller::ClusterLink {
            leadership: election.leadership(),
            switch_roles,
        }
    });
    // Subscribed before the controller starts, as the controller is: every committed
    // change from here on is an event.
    let events = Arc::clone(&settings.events);
    store.subscribe(Box::new(move |change| events.publish_change(change)));
    let mut measured = metrics::Measured::new(&settings.events);
    match &backend {
        Backend::Sled(sled) => sled.observe_commits(measured.store.clone()),
        Backend::Etcd(etcd) => measured.count_skipped_keys(Arc::clone(etcd)),
    }
    let mut controller_config = controller_config(&config)?;
    controller_config.metrics = Arc::clone(&measured.controller);
    let controller = backend.start_controller(&config.openflow, controller_config, cluster_link)?;
    // Its listeners are bound now; readiness holds while its engine runs.
    let openflow = controller.handle();
    settings.health.watch_openflow(Box::new(move || {
        openflow
            .is_running()
            .then_some(())
            .ok_or_else(|| "the OpenFlow controller has stopped".to_owned())
    }));
    let metrics = Arc::new(measured.into_metrics(controller.handle()));
    settings.metrics = Some(Arc::clone(&metrics));
    let openflow_addrs: Vec<String> = [
        controller.plain_addr().map(|addr| format!("{addr} (tcp)")),
        controller.tls_addr().map(|addr| format!("{addr} (tls)")),
    ]
    .into_iter()
    .flatten()
    .collect();
    settings.openflow_addresses = openflow_addrs.clone();
    // Before the HTTP server exists: every stream waits until the task below follows.
    settings.events.recording(false);
    actix_web::rt::spawn(events::publish_network_changes(
        Arc::clone(&settings.events),
        controller.handle(),
    ));
    let network: Arc<dyn slice_http::NetworkView> =
        Arc::new(network::ControllerView::new(controller.handle()));
    settings.cluster = Some(match (&backend, &election) {
        (Backend::Etcd(store), Some(election)) => Arc::new(cluster::EtcdCluster {
            election: Arc::clone(election),
            store: Arc::clone(store),
        }),
        _ => Arc::new(cluster::SingleInstance {
            name: config::default_name(&config.openflow),
            http: config.http.written.clone(),
            openflow: openflow_addrs.join(", "),
            controller: controller.handle(),
        }),
    });

    // We hold the database lock (or, on etcd, no daemon answered on it), so a socket file
    // left here is a dead daemon's.
    let socket = data_dir.socket_path();
    remove_if_exists(&socket)?;
    // Bound here so that the mode is set before anyone can connect.
    let local_listener = std::os::unix::net::UnixListener::bind(&socket)
        .with_context(|| format!("cannot listen on {}", socket.display()))?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
    let parts = slice_http::serve::AppParts {
        store: store.clone(),
        network: Some(network),
        settings,
    };
    let workers = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let http_connections = http_connection_cap(config.max_http_connections, fd_limit);
    let listeners = slice_http::serve::bind_tcp(&http.resolved)
        .with_context(|| format!("cannot listen for HTTP on {}", http.written))?;
    let http_addrs = listeners
        .iter()
        .map(|listener| listener.local_addr().map(|addr| addr.to_string()))
        .collect::<std::io::Result<Vec<_>>>()?;
    let server = slice_http::serve::tcp_server(&parts, listeners, workers, http_connections)
        .with_context(|| format!("cannot listen for HTTP on {}", http.written))?;
    let local_server = slice_http::serve::local_server(&parts, local_listener)
        .with_context(|| format!("cannot listen on {}", socket.display()))?;
    let metrics_server = match &config.metrics {
        Some(ListenAddr { written, resolved }) => {
            let listener = std::net::TcpListener::bind(&resolved[..])
                .with_context(|| format!("cannot listen for metrics on {written}"))?;
            let bound = listener.local_addr()?;
            // The names of the API's listener are not the scraper's, but the names an
            // operator trusts for this machine are trusted here too.
            let hosts = slice_http::HostPolicy::new(&[bound], Some(written), &config.allowed_hosts);
            let server = slice_http::metrics::metrics_server(metrics, listener, hosts)
                .with_context(|| format!("cannot listen for metrics on {written}"))?;
            log::info!("metrics for the scraper on http://{bound}/metrics");
            let handle = server.handle();
            actix_web::rt::spawn(server);
            Some(handle)
        }
        None => None,
    };
    // A failed flush leaves changes in memory that are not on disk; serving on would show
    // them, and a retried fsync could falsely succeed. Stop instead, as PostgreSQL does.
    let stopping = Stopping {
        servers: [server.handle(), local_server.handle()]
            .into_iter()
            .chain(metrics_server.clone())
            .collect(),
        events: Arc::clone(&parts.settings.events),
        health: Arc::clone(&parts.settings.health),
    };
    actix_web::rt::spawn(stop_signal.stop_on_signal(stopping.clone()));
    if let Backend::Sled(sled) = &backend {
        sled.on_failure(move |reason| {
            log::error!(
                "the database could not be flushed: {reason}; stopping to avoid serving \
                 state that is not on disk"
            );
            // The stop commands are sent at once; the future only reports completion.
            drop(stopping.begin());
        });
    }

    if let Some(pid_file) = &config.pid_file {
        std::fs::write(pid_file, format!("{}\n", std::process::id()))
            .with_context(|| format!("cannot write the pid file {}", pid_file.display()))?;
    }
    log::info!(
        "sliced serving: http on {}, openflow on {}, local socket {}, {}, slicing {}",
        http_addrs.join(", "),
        openflow_addrs.join(", "),
        socket.display(),
        match &config.etcd {
            None => format!("database {}", data_dir.store_path().display()),
            Some(etcd) => format!("etcd {} under {}", etcd.endpoints.join(","), etcd.prefix),
        },
        if config.slicing { "on" } else { "off" },
    );
    // Every listener is bound and the store is open: under systemd (Type=notify) this is
    // when the unit counts as started. Without NOTIFY_SOCKET it does nothing.
    notify_systemd(sd_notify::NotifyState::Ready);
    if let Some(interval) = watchdog::interval() {
        actix_web::rt::spawn(watchdog::feed_while_ready(
            interval,
            Arc::clone(&parts.settings.health),
            store.clone(),
        ));
    }

    let (served, served_locally) = futures_util::future::join(server, local_server).await;
    log::info!("shutting down");
    if let Some(metrics_server) = metrics_server {
        metrics_server.stop(true).await;
    }
    controller.stop();
    // Hands the network over now rather than when the lease expires.
    if let Some(election) = &election {
        election.resign();
    }
    // etcd has nothing to flush: each write returned once committed.
    let (flushed, failure) = match &backend {
        Backend::Sled(sled) => (sled.flush(), sled.failure()),
        Backend::Etcd(_) => (Ok(()), None),
    };
    let _ = std::fs::remove_file(&socket);
    if let Some(pid_file) = &config.pid_file {
        let _ = std::fs::remove_file(pid_file);
    }
    if let Some(reason) = failure {
        anyhow::bail!(
            "stopped because the database {} could not be flushed: {reason}",
            data_dir.store_path().display()
        );
    }
    served.context("the HTTP server failed")?;
    served_locally.context("the local socket's server failed")?;
    flushed.context("the final flush failed")?;
    Ok(())
}

/// SIGINT and SIGTERM, handled once for both HTTP servers: each actix server would
/// otherwise register its own handler when it first runs, and a signal between the two
/// registrations would stop one of them only.
struct StopSignal {
    interrupt: actix_web::rt::signal::unix::Signal,
    terminate: actix_web::rt::signal::unix::Signal,
}

impl StopSignal {
    fn register() -> std::io::Result<Self> {
        use actix_web::rt::signal::unix::{signal, SignalKind};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Waits for either signal, then stops.
    async fn stop_on_signal(mut self, stopping: Stopping) {
        let interrupt = Box::pin(self.interrupt.recv());
        let terminate = Box::pin(self.terminate.recv());
        let name = match futures_util::future::select(interrupt, terminate).await {
            futures_util::future::Either::Left(_) => "SIGINT",
            futures_util::future::Either::Right(_) => "SIGTERM",
        };
        log::info!("{name} received; stopping");
        notify_systemd(sd_notify::NotifyState::Stopping);
        stopping.begin().await;
    }
}

/// What a stop ends: the servers, and before them what would keep them waiting.
#[derive(Clone)]
struct Stopping {
    servers: Vec<actix_web::dev::ServerHandle>,
    events: Arc<slice_http::EventHub>,
    health: Arc<slice_http::Health>,
}

impl Stopping {
    /// Marks the daemon not ready, ends every event stream (each with its last frame), and
    /// sends every server its graceful stop at once: the servers wait for their
    /// connections together, each at most `serve::STOP_GRACE_SECS`, not one after another.
    /// The returned future reports when all have stopped.
    fn begin(&self) -> impl std::future::Future<Output = ()> {
        self.health.stopping();
        self.events.close();
        let stops: Vec<_> = self
            .servers
            .iter()
            .map(|server| server.stop(true))
            .collect();
        async move {
            futures_util::future::join_all(stops).await;
        }
    }
}

/// A failure to reach systemd is worth a warning, not a stop: the daemon serves either way.
fn notify_systemd(state: sd_notify::NotifyState) {
    if let Err(err) = sd_notify::notify(false, &[state]) {
        log::warn!("cannot notify systemd: {err}");
    }
}

/// The store the daemon serves, by backend, for what is one backend's alone.
enum Backend {
    Sled(Arc<Store>),
    Etcd(Arc<slice_etcd::EtcdStore>),
}

impl Backend {
    fn shared(&self) -> Arc<dyn SliceStore> {
        match self {
            Backend::Sled(sled) => sled.clone(),
            Backend::Etcd(etcd) => etcd.clone(),
        }
    }

    /// The controller follows the store through its concrete type.
    fn start_controller(
        &self,
        listeners: &slice_controller::Listeners,
        config: slice_controller::ControllerConfig,
        cluster: Option<slice_controller::ClusterLink>,
    ) -> Result<slice_controller::Controller, slice_controller::StartError> {
        match self {
            Backend::Sled(sled) => {
                slice_controller::Controller::start_in(listeners, sled.as_ref(), config, cluster)
            }
            Backend::Etcd(etcd) => {
                slice_controller::Controller::start_in(listeners, etcd.as_ref(), config, cluster)
            }
        }
    }
}

/// Joins the master election as `cluster.name`.
fn start_election(
    config: &Config,
    etcd: &EtcdConfig,
    cluster: &ClusterConfig,
) -> anyhow::Result<slice_etcd::MasterElection> {
    let openflow = config
        .openflow
        .plain
        .clone()
        .or(config.openflow.tls.as_ref().map(|(addr, _)| addr.clone()))
        .unwrap_or_default();
    let election = slice_etcd::MasterElection::start(slice_etcd::ElectionConfig {
        endpoints: etcd.endpoints.clone(),
        prefix: etcd.prefix.clone(),
        id: cluster.name.clone(),
        http: config.http.written.clone(),
        openflow,
        lease_ttl: cluster.lease_ttl,
        access: etcd.access.clone(),
    })
    .context("cannot join the master election in etcd")?;
    log::info!(
        "joined the master election as {} (lease {} s)",
        cluster.name,
        cluster.lease_ttl.as_secs()
    );
    Ok(election)
}

/// Connects to etcd. Without the sled database's lock to tell, another daemon on the same
/// data directory is found by its socket.
fn open_etcd(data_dir: &DataDir, etcd: &EtcdConfig) -> anyhow::Result<slice_etcd::EtcdStore> {
    let socket = data_dir.socket_path();
    anyhow::ensure!(
        !slice_cli::daemon_answers(&socket),
        "another sliced already runs on {} (it answers on {})",
        data_dir.root().display(),
        socket.display()
    );
    slice_etcd::EtcdStore::open_with(&etcd.endpoints, &etcd.prefix, &etcd.access).with_context(
        || {
            format!(
                "cannot open the store in etcd at {} under {}",
                etcd.endpoints.join(","),
                etcd.prefix
            )
        },
    )
}

/// Opens the database, waiting out a short-lived holder such as a `slice` command. Only a
/// daemon that answers on the socket is reported as another sliced.
fn open_store(data_dir: &DataDir) -> anyhow::Result<Store> {
    let store_path = data_dir.store_path();
    let socket = data_dir.socket_path();
    let holder = || match Store::lock_holder(&store_path) {
        Some(holder) => format!(" ({holder})"),
        None => String::new(),
    };
    let another_daemon = || slice_cli::daemon_answers(&socket).then_some(());
    match Store::open_waiting(&store_path, LOCKED_WAIT, another_daemon) {
        Ok(Opened::Store(store)) => Ok(*store),
        Ok(Opened::Elsewhere(())) => anyhow::bail!(
            "another sliced already runs on {}{} (it answers on {})",
            data_dir.root().display(),
            holder(),
            socket.display()
        ),
        Err(slice_store::Error::Locked(_)) => anyhow::bail!(
            "the database {} is held by another process{} and no sliced answers on {}; \
             waited {} s",
            store_path.display(),
            holder(),
            socket.display(),
            LOCKED_WAIT.as_secs()
        ),
        // Names the database already, and must not read as "cannot open": it was left alone.
        Err(damaged @ slice_store::Error::Damaged { .. }) => Err(damaged.into()),
        Err(err) => {
            Err(err).with_context(|| format!("cannot open the database {}", store_path.display()))
        }
    }
}

/// Raises the soft limit on open files to the hard limit and returns the limit in force.
/// Every connection costs a descriptor, and the usual soft limit of 1024 is soon reached;
/// the hard limit is what the administrator granted. (rlimit wraps getrlimit and
/// setrlimit, and knows macOS's extra cap.)
fn raise_fd_limit() -> u64 {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => {
            log::debug!("open files limit: {limit}");
            limit
        }
        Err(err) => {
            let (soft, _) = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap_or((1024, 1024));
            log::warn!("cannot raise the open files limit ({err}); it stays at {soft}");
            soft
        }
    }
}

/// The HTTP connection cap, kept to half the descriptors so that OpenFlow switches, the
/// local socket and the database always find one.
fn http_connection_cap(configured: usize, fd_limit: u64) -> usize {
    let half = usize::try_from(fd_limit / 2).unwrap_or(usize::MAX).max(1);
    if configured > half {
        log::warn!(
            "max_http_connections {configured} lowered to {half}: the open files limit is {fd_limit}"
        );
    }
    configured.min(half)
}

fn controller_config(config: &Config) -> anyhow::Result<slice_controller::ControllerConfig> {
    let mut controller = slice_controller::ControllerConfig::default();
    controller.engine.slicing = config.slicing;
    controller.engine.proactive = config.pipeline;
    if let Some(idle_timeout) = config.idle_timeout {
        controller.engine.idle_timeout = idle_timeout;
    }
    controller.allowed_dpids = config.allowed_dpids.clone();
    if let Some(ms) = config.lldp_interval_ms {
        controller.set_lldp_interval(std::time::Duration::from_millis(ms));
    }
    let limits = &config.switch_limits;
    if let Some(path) = &limits.lldp_secret_file {
        controller.engine.probe_key = slice_controller::ProbeKey::from_file(path)?;
    }
    let engine = &mut controller.engine;
    let size = |value: u32| usize::try_from(value).unwrap_or(usize::MAX);
    let bytes = |value: u64| usize::try_from(value).unwrap_or(usize::MAX);
    if let Some(value) = limits.max_ports_per_switch {
        engine.max_ports_per_switch = size(value);
    }
    if let Some(value) = limits.max_hosts_per_port {
        engine.max_hosts_per_port = size(value);
    }
    if let Some(value) = limits.max_hosts_per_switch {
        engine.max_hosts_per_switch = size(value);
    }
    if let Some(value) = limits.host_idle_timeout {
        engine.host_idle = std::time::Duration::from_secs(value.into());
    }
    if let Some(value) = limits.max_multipart_bytes {
        controller.max_multipart_bytes = bytes(value);
    }
    if let Some(value) = limits.max_outbound_bytes {
        controller.max_outbound_bytes = bytes(value);
    }
    if let Some(value) = limits.packet_in_rate {
        controller.packet_in_rate = value;
    }
    if let Some(value) = limits.packet_in_burst {
        controller.packet_in_burst = value;
    }
    if let Some(value) = limits.packet_in_port_rate {
        controller.packet_in_port_rate = value;
    }
    if let Some(value) = limits.max_switch_connections {
        controller.max_switch_connections = size(value);
    }
    if let Some(value) = limits.max_pending_handshakes {
        controller.max_pending_handshakes = size(value);
    }
    Ok(controller)
}

fn remove_if_exists(path: &std::path::Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            Err(err).with_context(|| format!("cannot remove the stale socket {}", path.display()))
        }
        _ => Ok(()),
    }
}

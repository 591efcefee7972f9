//! The daemon's HTTP servers: the REST API over TCP with its connection cap, the same
//! application on the local socket on a server of its own (so that the cap never blocks
//! the `slice` tool), and the scraper's `/metrics` listener when asked for.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use actix_web::dev::{Server, ServerHandle};
use anyhow::Context;
use slice_core::SliceStore;

use crate::config::{listen_failure, Config, ListenAddr, HTTP_SETTING, METRICS_SETTING};
use crate::controller::Running;
use crate::stop::Stopping;

/// The servers, bound and not yet awaited.
pub(crate) struct Servers {
    http: Server,
    local: Server,
    metrics: Option<ServerHandle>,
    /// The local socket's path, removed at the end.
    pub socket: PathBuf,
    /// Where the API listens, as bound (a port 0 resolved).
    pub http_addrs: Vec<String>,
    pub health: Arc<slice_http::Health>,
    events: Arc<slice_http::EventHub>,
}

impl Servers {
    /// Binds every listener; nothing is served before the returned servers are awaited.
    pub(crate) fn start(
        config: &Config,
        settings: slice_http::Settings,
        store: Arc<dyn SliceStore>,
        running: &Running,
        fd_limit: u64,
    ) -> anyhow::Result<Self> {
        let socket = config.data_dir.socket_path();
        let local_listener = bind_local(&socket)?;
        let parts = slice_http::serve::AppParts {
            store,
            network: Some(Arc::clone(&running.network)),
            settings,
        };
        let workers = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let http_connections = http_connection_cap(config.max_http_connections, fd_limit);
        let http = &config.http;
        let listeners = slice_http::serve::bind_tcp(&http.resolved)
            .map_err(|err| listen_failure("HTTP", &http.written, &err, HTTP_SETTING))?;
        let http_addrs = listeners
            .iter()
            .map(|listener| listener.local_addr().map(|addr| addr.to_string()))
            .collect::<std::io::Result<Vec<_>>>()?;
        let http_server =
            slice_http::serve::tcp_server(&parts, listeners, workers, http_connections)
                .with_context(|| format!("cannot listen for HTTP on {}", http.written))?;
        let local = slice_http::serve::local_server(&parts, local_listener)
            .with_context(|| format!("cannot listen on {}", socket.display()))?;
        let metrics = match &config.metrics {
            Some(addr) => Some(metrics_server(config, addr, Arc::clone(&running.metrics))?),
            None => None,
        };
        Ok(Self {
            http: http_server,
            local,
            metrics,
            socket,
            http_addrs,
            health: Arc::clone(&parts.settings.health),
            events: Arc::clone(&parts.settings.events),
        })
    }

    /// What a stop ends.
    pub(crate) fn stopping(&self) -> Stopping {
        Stopping {
            servers: [self.http.handle(), self.local.handle()]
                .into_iter()
                .chain(self.metrics.clone())
                .collect(),
            events: Arc::clone(&self.events),
            health: Arc::clone(&self.health),
        }
    }

    /// Serves until the API's two servers have stopped.
    pub(crate) async fn serve(self) -> Served {
        let (http, local) = futures_util::future::join(self.http, self.local).await;
        Served {
            http,
            local,
            metrics: self.metrics,
        }
    }
}

/// How the API's servers ended, and the scraper's server, still to stop.
pub(crate) struct Served {
    pub http: std::io::Result<()>,
    pub local: std::io::Result<()>,
    pub metrics: Option<ServerHandle>,
}

/// The local socket, bound here so that its mode is set before anyone can connect.
fn bind_local(socket: &Path) -> anyhow::Result<std::os::unix::net::UnixListener> {
    // We hold the database lock (or, on etcd, no daemon answered on it), so a socket file
    // left here is a dead daemon's.
    remove_if_exists(socket)?;
    let listener = std::os::unix::net::UnixListener::bind(socket)
        .with_context(|| format!("cannot listen on {}", socket.display()))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// The scraper's listener, running already: it serves no application state to wait for.
fn metrics_server(
    config: &Config,
    addr: &ListenAddr,
    metrics: Arc<slice_http::metrics::Metrics>,
) -> anyhow::Result<ServerHandle> {
    let ListenAddr { written, resolved } = addr;
    let listener = std::net::TcpListener::bind(&resolved[..])
        .map_err(|err| listen_failure("metrics", written, &err, METRICS_SETTING))?;
    let bound = listener.local_addr()?;
    // The names of the API's listener are not the scraper's, but the names an
    // operator trusts for this machine are trusted here too.
    let hosts = slice_http::HostPolicy::new(&[bound], Some(written), &config.allowed_hosts);
    let server = slice_http::metrics::metrics_server(metrics, listener, hosts)
        .with_context(|| format!("cannot listen for metrics on {written}"))?;
    log::info!("metrics for the scraper on http://{bound}/metrics");
    let handle = server.handle();
    actix_web::rt::spawn(server);
    Ok(handle)
}

/// Raises the soft limit on open files to the hard limit and returns the limit in force.
/// Every connection costs a descriptor, and the usual soft limit of 1024 is soon reached;
/// the hard limit is what the administrator granted. (rlimit wraps getrlimit and
/// setrlimit, and knows macOS's extra cap.)
pub(crate) fn raise_fd_limit() -> u64 {
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

fn remove_if_exists(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            Err(err).with_context(|| format!("cannot remove the stale socket {}", path.display()))
        }
        _ => Ok(()),
    }
}

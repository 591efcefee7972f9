//! The `sliced` daemon: wires the store, the REST application and the controller.

mod config;
mod daemon;
mod logging;
mod network;

use std::os::unix::fs::PermissionsExt;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use slice_store::{Store, StoreError};

use crate::config::{Args, Config};

fn main() -> ExitCode {
    // The access log (target sliced::http) is opt-in: a line per request costs throughput.
    logging::init("info,actix_server=warn,sliced::http=warn");
    let args = Args::parse();
    let result = Config::resolve(&args).and_then(|config| {
        if args.daemon {
            daemon::spawn_background(&config)
        } else {
            actix_web::rt::System::new().block_on(serve(config))
        }
    });
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
    let fd_limit = raise_fd_limit();
    let data_dir = &config.data_dir;
    create_private_dir(data_dir.root())?;
    let store = match Store::open(&data_dir.store_path()) {
        Err(StoreError::Locked(_)) => anyhow::bail!(
            "another sliced already runs on {} (its socket is {})",
            data_dir.root().display(),
            data_dir.socket_path().display()
        ),
        other => Arc::new(other.context("cannot open the database")?),
    };

    let session_key =
        slice_http::load_or_create_key(&config.session_key_file).with_context(|| {
            format!(
                "cannot load the session key {}",
                config.session_key_file.display()
            )
        })?;
    let mut settings = slice_http::Settings::new(session_key);
    settings.require_auth_for_slices = config.require_auth;
    settings.developer_login = config.developer_login;
    settings.secure_cookie = config.secure_cookie;
    settings.session_ttl = config.session_ttl;
    settings.request_timeout = config.request_timeout;
    let http_addrs = std::net::ToSocketAddrs::to_socket_addrs(config.http.as_str())
        .with_context(|| format!("cannot resolve the HTTP address {}", config.http))?
        .collect::<Vec<_>>();
    settings.host_policy =
        slice_http::HostPolicy::new(&http_addrs, Some(&config.http), &config.allowed_hosts);

    let controller =
        slice_controller::Controller::start(&config.openflow, &store, controller_config(&config))?;
    let network: Arc<dyn slice_http::NetworkView> =
        Arc::new(network::ControllerView::new(controller.handle()));

    // We hold the database lock, so a socket file left here is a dead daemon's.
    let socket = data_dir.socket_path();
    remove_if_exists(&socket)?;
    // Bound here rather than with `bind_uds`, which skips the `on_connect` hook that marks
    // local peers; binding first also lets the mode be set before anyone can connect.
    let local_listener = std::os::unix::net::UnixListener::bind(&socket)
        .with_context(|| format!("cannot listen on {}", socket.display()))?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
    let app_store = Arc::clone(&store);
    let make_app = move || {
        slice_http::app(
            Arc::clone(&app_store),
            Some(Arc::clone(&network)),
            settings.clone(),
        )
    };
    // actix caps connections per worker, so the total is shared out among them.
    let workers = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let http_connections = http_connection_cap(config.max_http_connections, fd_limit);
    let server = actix_web::HttpServer::new(make_app.clone())
        .workers(workers)
        .max_connections((http_connections / workers).max(1))
        .client_request_timeout(config.request_timeout)
        .bind(&config.http)
        .with_context(|| format!("cannot listen for HTTP on {}", config.http))?;
    let http_addrs: Vec<String> = server.addrs().iter().map(ToString::to_string).collect();
    // A server of its own, so that the slice tool gets through while the TCP listener is
    // at its connection cap: actix stops accepting on all of a server's sockets then.
    let local_server = actix_web::HttpServer::new(make_app)
        .workers(1)
        .on_connect(slice_http::mark_local_peer)
        .listen_uds(local_listener)
        .with_context(|| format!("cannot listen on {}", socket.display()))?
        .run();
    let server = server.run();

    if let Some(pid_file) = &config.pid_file {
        std::fs::write(pid_file, format!("{}\n", std::process::id()))
            .with_context(|| format!("cannot write the pid file {}", pid_file.display()))?;
    }
    log::info!(
        "sliced serving: http on {}, openflow on {}, local socket {}, database {}, slicing {}",
        http_addrs.join(", "),
        controller.local_addr(),
        socket.display(),
        data_dir.store_path().display(),
        if config.slicing { "on" } else { "off" },
    );

    let (served, served_locally) = futures_util::future::join(server, local_server).await;
    log::info!("shutting down");
    controller.stop();
    let flushed = store.flush();
    let _ = std::fs::remove_file(&socket);
    if let Some(pid_file) = &config.pid_file {
        let _ = std::fs::remove_file(pid_file);
    }
    served.context("the HTTP server failed")?;
    served_locally.context("the local socket's server failed")?;
    flushed.context("the final flush failed")?;
    Ok(())
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

fn controller_config(config: &Config) -> slice_controller::ControllerConfig {
    let mut controller = slice_controller::ControllerConfig::default();
    controller.engine.slicing = config.slicing;
    controller.engine.idle_timeout = config.idle_timeout;
    controller.set_lldp_interval(std::time::Duration::from_millis(config.lldp_interval_ms));
    controller
}

/// The data directory holds the session key and the database: owner only.
fn create_private_dir(path: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if !path.is_dir() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(path)
            .with_context(|| format!("cannot create the data directory {}", path.display()))?;
    }
    Ok(())
}

fn remove_if_exists(path: &std::path::Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            Err(err).with_context(|| format!("cannot remove the stale socket {}", path.display()))
        }
        _ => Ok(()),
    }
}

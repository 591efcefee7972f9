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
//!
//! `serve` reads as those phases, each in a module of its own: `store` (the backend),
//! `api` (the REST settings), `controller` (with the election and what the API shows of
//! it), `servers`, and `stop` (the signals and what a stop ends).

mod allocator;
mod api;
mod check;
mod cluster;
mod config;
mod controller;
mod daemon;
mod events;
mod logging;
mod made;
mod manuals;
mod metrics;
mod network;
mod secrets;
mod servers;
mod stop;
mod store;
mod watchdog;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;

use crate::config::{Args, Config, DaemonCommand};
use crate::controller::Running;
use crate::servers::{Served, Servers};
use crate::stop::{notify_systemd, StopSignal};
use crate::store::Backend;

fn main() -> ExitCode {
    let args = Args::parse();
    logging::init(args.log_level);
    if let Some(dir) = &args.write_manuals {
        return report(manuals::write(dir));
    }
    if let Some(DaemonCommand::Completions { shell, output }) = &args.command {
        return report(manuals::completions(*shell, output.as_deref()));
    }
    if args.check_config {
        return report(check::run(&args));
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

/// Serves until SIGINT or SIGTERM, then flushes the store and cleans up. A start that
/// fails takes away what it made (`made`).
async fn serve(config: Config) -> anyhow::Result<()> {
    let mut made = made::Made::before_start(&config);
    // Everything the start opened is closed when `start` returns, the database too.
    let (backend, running, servers) = match start(&config, &mut made) {
        Ok(started) => started,
        Err(err) => {
            made.remove();
            return Err(err);
        }
    };
    let served = servers.serve().await;
    shut_down(&config, &backend, running, served).await
}

/// Everything up to ready: the store, the controller and every listener.
fn start(config: &Config, made: &mut made::Made) -> anyhow::Result<(Backend, Running, Servers)> {
    // Before anything listens: a signal that came between a listener's first answer and
    // the registration of its handler would go to one server and not the other, or
    // kill the daemon without its final flush.
    let stop_signal = StopSignal::register().context("cannot handle SIGINT and SIGTERM")?;
    let fd_limit = servers::raise_fd_limit();
    let backend = Backend::open(config)?;
    made.opened_store();
    let mut settings = api::settings(config, &backend)?;
    let running = controller::start(config, &backend, &mut settings)?;
    let servers = Servers::start(config, settings, backend.shared(), &running, fd_limit)?;
    let stopping = servers.stopping();
    actix_web::rt::spawn(stop_signal.stop_on_signal(stopping.clone()));
    backend.stop_on_flush_failure(stopping);
    announce_ready(config, &backend, &running, &servers)?;
    Ok((backend, running, servers))
}

/// Writes the pid file, logs where the daemon serves and tells systemd it is ready: every
/// listener is bound and the store is open.
fn announce_ready(
    config: &Config,
    backend: &Backend,
    running: &Running,
    servers: &Servers,
) -> anyhow::Result<()> {
    if let Some(pid_file) = &config.pid_file {
        std::fs::write(pid_file, format!("{}\n", std::process::id()))
            .with_context(|| format!("cannot write the pid file {}", pid_file.display()))?;
    }
    log::info!(
        "sliced serving: http on {}, openflow on {}, local socket {}, {}, slicing {}",
        servers.http_addrs.join(", "),
        running.openflow_addrs.join(", "),
        servers.socket.display(),
        match &config.etcd {
            None => format!("database {}", config.data_dir.store_path().display()),
            Some(etcd) => format!("etcd {} under {}", etcd.endpoints.join(","), etcd.prefix),
        },
        if config.slicing { "on" } else { "off" },
    );
    // Under systemd (Type=notify) this is when the unit counts as started. Without
    // NOTIFY_SOCKET it does nothing.
    notify_systemd(sd_notify::NotifyState::Ready);
    if let Some(interval) = watchdog::interval() {
        actix_web::rt::spawn(watchdog::feed_while_ready(
            interval,
            Arc::clone(&servers.health),
            backend.shared(),
        ));
    }
    Ok(())
}

/// Once the API's servers have stopped: the scraper's server, the controller, the
/// election, the final flush, then the files the daemon leaves behind.
async fn shut_down(
    config: &Config,
    backend: &Backend,
    running: Running,
    served: Served,
) -> anyhow::Result<()> {
    log::info!("shutting down");
    if let Some(metrics_server) = served.metrics {
        metrics_server.stop(true).await;
    }
    running.controller.stop();
    // Hands the network over now rather than when the lease expires.
    if let Some(election) = &running.election {
        election.resign();
    }
    let (flushed, failure) = backend.final_flush();
    let _ = std::fs::remove_file(config.data_dir.socket_path());
    if let Some(pid_file) = &config.pid_file {
        let _ = std::fs::remove_file(pid_file);
    }
    if let Some(reason) = failure {
        anyhow::bail!(
            "stopped because the database {} could not be flushed: {reason}",
            config.data_dir.store_path().display()
        );
    }
    served.http.context("the HTTP server failed")?;
    served.local.context("the local socket's server failed")?;
    flushed.context("the final flush failed")?;
    Ok(())
}

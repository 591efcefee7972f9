//! The stop: SIGINT and SIGTERM handled once for every server, and what a stop ends, in
//! its order (not ready, the event streams, then every server at once).

use std::sync::Arc;

/// SIGINT and SIGTERM, handled once for both HTTP servers: each actix server would
/// otherwise register its own handler when it first runs, and a signal between the two
/// registrations would stop one of them only.
pub(crate) struct StopSignal {
    interrupt: actix_web::rt::signal::unix::Signal,
    terminate: actix_web::rt::signal::unix::Signal,
}

impl StopSignal {
    pub(crate) fn register() -> std::io::Result<Self> {
        use actix_web::rt::signal::unix::{signal, SignalKind};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Waits for either signal, then stops.
    pub(crate) async fn stop_on_signal(mut self, stopping: Stopping) {
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
pub(crate) struct Stopping {
    pub servers: Vec<actix_web::dev::ServerHandle>,
    pub events: Arc<slice_http::EventHub>,
    pub health: Arc<slice_http::Health>,
}

impl Stopping {
    /// Marks the daemon not ready, ends every event stream (each with its last frame), and
    /// sends every server its graceful stop at once: the servers wait for their
    /// connections together, each at most `serve::STOP_GRACE_SECS`, not one after another.
    /// The returned future reports when all have stopped.
    pub(crate) fn begin(&self) -> impl std::future::Future<Output = ()> {
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
pub(crate) fn notify_systemd(state: sd_notify::NotifyState) {
    if let Err(err) = sd_notify::notify(false, &[state]) {
        log::warn!("cannot notify systemd: {err}");
    }
}

//! systemd's watchdog (`WatchdogSec=` in the unit), fed only while the daemon is ready.
//!
//! A process that merely lives would feed a watchdog from any timer; this one feeds it
//! from the same checks as `GET /readyz` (the store, the controller), so that a daemon
//! that lives but cannot do its work is restarted by systemd once the watchdog's time
//! runs out. The readiness probe's cache keeps this to one store probe per feed.

use std::sync::Arc;
use std::time::Duration;

use slice_core::SliceStore;
use slice_http::Health;

/// The watchdog's time when systemd set one for this process (`WATCHDOG_USEC`, with
/// `WATCHDOG_PID` naming it).
pub(crate) fn interval() -> Option<Duration> {
    let mut usec = 0;
    sd_notify::watchdog_enabled(false, &mut usec).then(|| Duration::from_micros(usec))
}

/// Sends `WATCHDOG=1` every half `interval` (as sd_watchdog_enabled(3) advises) while
/// readiness holds, and says in the log when it stops and starts again.
pub(crate) async fn feed_while_ready(
    interval: Duration,
    health: Arc<Health>,
    store: Arc<dyn SliceStore>,
) {
    let mut ticks = tokio::time::interval(interval / 2);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut fed = true;
    loop {
        ticks.tick().await;
        let readiness = health.readiness(Arc::clone(&store)).await;
        if readiness.is_ready() {
            if !fed {
                log::info!("ready again: feeding the systemd watchdog");
            }
            fed = true;
            if let Err(err) = sd_notify::notify(false, &[sd_notify::NotifyState::Watchdog]) {
                log::warn!("cannot notify systemd: {err}");
            }
        } else {
            if fed {
                log::warn!(
                    "{}; the systemd watchdog is not fed, and restarts sliced {} s after \
                     the last feed unless readiness returns",
                    readiness.body()["error"].as_str().unwrap_or("not ready"),
                    interval.as_secs()
                );
            }
            fed = false;
        }
    }
}

//! What one apply is measured with: its answer, a reader of point reads beside it, a
//! sampler of the daemon's resident memory, and the waits after it.

use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::{
    APPLY_TIMEOUT, DECLARATION_LIMIT_BYTES, INDEX_LIMIT, READ_EVERY, READ_TIMEOUT, SAMPLE_EVERY,
    SETTLE_FIRST, SETTLE_LIMIT, SETTLE_PERIOD,
};
use crate::procs::Server;
use crate::sliced::IndexEntries;

/// The answer to one apply: its status (none when the connection closed first), the bytes
/// of its body, and the error it states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    pub status: Option<u16>,
    pub bytes: u64,
    pub error: Option<String>,
}

impl Answer {
    pub(crate) fn succeeded(&self) -> bool {
        self.status
            .is_some_and(|status| (200..300).contains(&status))
    }

    /// The status as the tables count it.
    pub(crate) fn label(&self) -> String {
        self.status
            .map_or_else(|| "no answer".to_owned(), |status| status.to_string())
    }

    pub(super) fn describe(&self) -> String {
        match &self.error {
            Some(error) => format!("{}: {error}", self.label()),
            None => format!("{}, {} bytes of answer", self.label(), self.bytes),
        }
    }
}

/// The `error` of a `{"error": "..."}` body, or the start of any other body.
pub(super) fn error_text(body: &str) -> String {
    let stated = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|value| value.get("error")?.as_str().map(str::to_owned));
    stated.unwrap_or_else(|| body.chars().take(200).collect())
}

/// Point reads during one step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ReadTally {
    /// Answered 200 (the slice read exists) or 404 (it comes and goes with the applies).
    pub found: u64,
    pub not_found: u64,
    /// Another status, a timeout or a broken connection.
    pub failed: u64,
    /// The longest wait, counting a read still waiting when the step ended.
    pub longest: Duration,
}

impl ReadTally {
    pub(crate) fn answered(&self) -> u64 {
        self.found + self.not_found
    }
}

#[derive(Default)]
struct ReadState {
    tally: ReadTally,
    in_flight_since: Option<Instant>,
}

impl ReadState {
    fn begin(&mut self, at: Instant) {
        self.in_flight_since = Some(at);
    }

    fn end(&mut self, at: Instant, status: Option<u16>) {
        if let Some(since) = self.in_flight_since.take() {
            self.tally.longest = self.tally.longest.max(at.saturating_duration_since(since));
        }
        match status {
            Some(200) => self.tally.found += 1,
            Some(404) => self.tally.not_found += 1,
            _ => self.tally.failed += 1,
        }
    }

    /// The tally since the last take; a read in flight counts with its wait so far (and
    /// again, whole, in the next tally).
    fn take(&mut self, now: Instant) -> ReadTally {
        let mut tally = std::mem::take(&mut self.tally);
        if let Some(since) = self.in_flight_since {
            tally.longest = tally.longest.max(now.saturating_duration_since(since));
        }
        tally
    }
}

/// A thread reading one URL on a keep-alive connection of its own, every [`READ_EVERY`].
pub(crate) struct Reader {
    state: Arc<Mutex<ReadState>>,
    stop: Arc<AtomicBool>,
}

impl Reader {
    pub(crate) fn start(url: String) -> Self {
        let state: Arc<Mutex<ReadState>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (shared, stopped) = (Arc::clone(&state), Arc::clone(&stop));
        // Not joined: a read hung on a frozen daemon ends when the daemon is stopped.
        std::thread::spawn(move || {
            let agent = ureq::AgentBuilder::new().timeout(READ_TIMEOUT).build();
            while !stopped.load(Ordering::Relaxed) {
                let started = Instant::now();
                lock(&shared).begin(started);
                let status = match agent.get(&url).call() {
                    Ok(response) => drained(response),
                    Err(ureq::Error::Status(_, response)) => drained(response),
                    Err(ureq::Error::Transport(_)) => None,
                };
                lock(&shared).end(Instant::now(), status);
                if status.is_none() {
                    // A daemon that is not there is not asked again at once.
                    std::thread::sleep(Duration::from_millis(100));
                }
                std::thread::sleep(READ_EVERY.saturating_sub(started.elapsed()));
            }
        });
        Self { state, stop }
    }

    pub(crate) fn take(&self) -> ReadTally {
        lock(&self.state).take(Instant::now())
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The status of a response read to its end (so that its connection is kept), or none.
fn drained(response: ureq::Response) -> Option<u16> {
    let status = response.status();
    std::io::copy(&mut response.into_reader(), &mut std::io::sink()).ok()?;
    Some(status)
}

/// A thread sampling a process's VmRSS every [`SAMPLE_EVERY`]; keeps the highest.
pub(super) struct RssSampler {
    peak_kib: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl RssSampler {
    pub(super) fn start(pid: u32) -> Self {
        let peak_kib = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (peak, stopped) = (Arc::clone(&peak_kib), Arc::clone(&stop));
        let thread = std::thread::spawn(move || loop {
            if let Ok(kib) = crate::procs::proc_status_kib(pid, "VmRSS") {
                peak.fetch_max(kib, Ordering::Relaxed);
            }
            if stopped.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(SAMPLE_EVERY);
        });
        Self {
            peak_kib,
            stop,
            thread: Some(thread),
        }
    }

    /// The highest sample, the last one taken after this call.
    pub(super) fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.peak_kib.load(Ordering::Relaxed)
    }
}

/// POSTs a declaration on a connection of its own (a refusal may close it). A connection
/// closed under a body over the limit is a refusal, not a failure of the run.
pub(super) fn post(url: &str, body: &str) -> anyhow::Result<Answer> {
    let agent = ureq::AgentBuilder::new().timeout(APPLY_TIMEOUT).build();
    let sent = agent
        .post(url)
        .set("Content-Type", "application/json")
        .send_string(body);
    match sent {
        Ok(response) => {
            let status = response.status();
            let bytes = std::io::copy(&mut response.into_reader(), &mut std::io::sink())
                .with_context(|| format!("reading the answer of POST {url}"))?;
            Ok(Answer {
                status: Some(status),
                bytes,
                error: None,
            })
        }
        Err(ureq::Error::Status(status, response)) => {
            let mut text = String::new();
            let _ = response
                .into_reader()
                .take(64 * 1024)
                .read_to_string(&mut text);
            Ok(Answer {
                status: Some(status),
                bytes: text.len() as u64,
                error: Some(error_text(&text)),
            })
        }
        Err(ureq::Error::Transport(transport)) if body.len() > DECLARATION_LIMIT_BYTES => {
            Ok(Answer {
                status: None,
                bytes: 0,
                error: Some(format!("the connection closed: {transport}")),
            })
        }
        Err(err) => Err(err).with_context(|| format!("POST {url} ({} bytes)", body.len())),
    }
}

/// The time until the controller's index counts `slices` slices, from now.
pub(super) fn wait_for_slices(base: &str, slices: u64) -> Option<Duration> {
    let started = Instant::now();
    loop {
        if IndexEntries::read(base).is_ok_and(|entries| entries.slices == slices) {
            return Some(started.elapsed());
        }
        if started.elapsed() > INDEX_LIMIT {
            eprintln!(
                "sliced-bench: the controller's index did not count {slices} slices within {} s",
                INDEX_LIMIT.as_secs()
            );
            return None;
        }
        std::thread::sleep(SAMPLE_EVERY);
    }
}

/// Whether two successive readings of resident memory are within 1 % of each other.
pub(super) fn holds_still(before_kib: u64, after_kib: u64) -> bool {
    before_kib.abs_diff(after_kib) * 100 <= before_kib.max(after_kib)
}

/// VmRSS, from [`SETTLE_FIRST`] on, once two readings [`SETTLE_PERIOD`] apart hold still,
/// or after [`SETTLE_LIMIT`].
pub(super) fn settled_rss(server: &Server) -> anyhow::Result<u64> {
    std::thread::sleep(SETTLE_FIRST);
    let deadline = Instant::now() + SETTLE_LIMIT;
    let mut last = server.rss_kib()?;
    loop {
        std::thread::sleep(SETTLE_PERIOD);
        let now = server.rss_kib()?;
        if holds_still(last, now) || Instant::now() > deadline {
            return Ok(now);
        }
        last = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_count_answers_failures_and_the_read_still_waiting() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut state = ReadState::default();
        state.begin(at(0));
        state.end(at(3), Some(200));
        state.begin(at(5));
        state.end(at(6), Some(404));
        state.begin(at(10));
        state.end(at(40), None);
        state.begin(at(50));
        // The read begun at 50 ms is still waiting at 150 ms: it counts 100 ms so far.
        let tally = state.take(at(150));
        assert_eq!(
            tally,
            ReadTally {
                found: 1,
                not_found: 1,
                failed: 1,
                longest: Duration::from_millis(100),
            }
        );
        assert_eq!(tally.answered(), 2);
        // It ends in the next step, counted there whole.
        state.end(at(400), Some(500));
        let next = state.take(at(500));
        assert_eq!(next.failed, 1);
        assert_eq!(next.longest, Duration::from_millis(350));
        assert_eq!(state.take(at(600)), ReadTally::default());
    }

    #[test]
    fn resident_memory_holds_still_within_one_percent() {
        assert!(holds_still(100_000, 100_999));
        assert!(holds_still(100_999, 100_000));
        assert!(!holds_still(100_000, 102_000));
        assert!(holds_still(0, 0));
    }

    #[test]
    fn error_bodies_give_their_error() {
        assert_eq!(
            error_text(r#"{"error": "the declaration is too large"}"#),
            "the declaration is too large"
        );
        assert_eq!(error_text("busy"), "busy");
        assert_eq!(error_text(&"x".repeat(500)).len(), 200);
    }
}

//! Building and running `sliced`, and talking to its REST API.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::procs::{self, Server};

/// Builds `sliced` in release mode and returns the path of the binary.
pub(crate) fn build(workspace: &Path) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("sliced-bench: cargo build --release --bin sliced");
    let stdout = procs::output(
        Command::new(&cargo)
            .current_dir(workspace)
            .args(["build", "--release", "--bin", "sliced"])
            .args(["--message-format", "json-render-diagnostics"]),
    )?;
    artifact_path(&stdout, "sliced").context("cargo built no `sliced` executable")
}

/// The executable named `name` among cargo's JSON messages.
fn artifact_path(messages: &str, name: &str) -> Option<PathBuf> {
    messages.lines().rev().find_map(|line| {
        let message: serde_json::Value = serde_json::from_str(line).ok()?;
        if message["reason"] != "compiler-artifact" || message["target"]["name"] != name {
            return None;
        }
        message["executable"].as_str().map(PathBuf::from)
    })
}

/// A running sliced on a data directory of its own, on loopback ports.
pub(crate) struct Sliced {
    pub server: Server,
    /// Where its stdout and stderr go.
    pub log: PathBuf,
    pub openflow: SocketAddr,
    pub base: String,
}

impl Sliced {
    /// Starts sliced on `dir` (created fresh) and waits until its REST API answers.
    pub(crate) fn start(binary: &Path, dir: &Path, extra: &[&str]) -> anyhow::Result<Self> {
        Self::start_within(binary, dir, extra, Duration::from_secs(30))
    }

    /// [`Sliced::start`], giving up when it does not serve within `limit`.
    pub(crate) fn start_within(
        binary: &Path,
        dir: &Path,
        extra: &[&str],
        limit: Duration,
    ) -> anyhow::Result<Self> {
        Self::start_at(binary, dir, procs::free_addr()?, extra, limit)
    }

    /// [`Sliced::start_within`] with its OpenFlow listener on `openflow`.
    pub(crate) fn start_at(
        binary: &Path,
        dir: &Path,
        openflow: SocketAddr,
        extra: &[&str],
        limit: Duration,
    ) -> anyhow::Result<Self> {
        let deadline = Instant::now() + limit;
        std::fs::create_dir_all(dir)?;
        let http = procs::free_addr()?;
        let mut command = Command::new(binary);
        command
            .arg("--db")
            .arg(dir.join("data"))
            .arg("--http")
            .arg(http.to_string())
            .arg("--openflow")
            .arg(openflow.to_string())
            .args(extra)
            // sliced as users run it: its own default log filter, its default data dir
            // handling overridden only by --db.
            .env_remove("SLICED_DB")
            .env_remove("RUST_LOG");
        procs::dies_with_parent(&mut command);
        let log = dir.join("sliced.log");
        let mut server = Server::spawn("sliced", command, &log)?;
        server.wait_for_port(http, limit)?;
        let base = format!("http://{http}");
        // The port listens before the routes are ready only in theory; make sure.
        while get(&base, "/slices").is_err() {
            if Instant::now() > deadline {
                bail!(
                    "sliced at {base} does not answer GET /slices within {} s",
                    limit.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(Self {
            server,
            log,
            openflow,
            base,
        })
    }
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build()
}

/// GET a path; the body of a 200.
pub(crate) fn get(base: &str, path: &str) -> anyhow::Result<String> {
    get_with(&agent(), base, path)
}

pub(crate) fn get_with(agent: &ureq::Agent, base: &str, path: &str) -> anyhow::Result<String> {
    let response = agent
        .get(&format!("{base}{path}"))
        .call()
        .with_context(|| format!("GET {path}"))?;
    Ok(response.into_string()?)
}

/// POST a JSON body and expect 201.
pub(crate) fn post(agent: &ureq::Agent, base: &str, path: &str, body: &str) -> anyhow::Result<()> {
    let response = agent
        .post(&format!("{base}{path}"))
        .set("Content-Type", "application/json")
        .send_string(body);
    match response {
        Ok(response) if response.status() == 201 => Ok(()),
        Ok(response) => bail!("POST {path} {body}: status {}", response.status()),
        Err(ureq::Error::Status(status, response)) => bail!(
            "POST {path} {body}: status {status}: {}",
            response.into_string().unwrap_or_default()
        ),
        Err(err) => Err(err).with_context(|| format!("POST {path} {body}")),
    }
}

/// Creates slice `name`.
pub(crate) fn create_slice(agent: &ureq::Agent, base: &str, name: &str) -> anyhow::Result<()> {
    post(agent, base, "/slices", &format!(r#"{{"name":"{name}"}}"#))
}

/// Adds MAC address `mac` to port `port` (`0x<dpid>:<port_no>`) of `slice`, creating the
/// port when needed.
pub(crate) fn add_mac(
    agent: &ureq::Agent,
    base: &str,
    slice: &str,
    port: &str,
    mac: &str,
) -> anyhow::Result<()> {
    post(
        agent,
        base,
        &format!("/slices/{slice}/ports/{port}/mac_addresses"),
        &format!(r#"{{"name":"{mac}"}}"#),
    )
}

/// The value of an unlabelled series in Prometheus text.
fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix(' ')?;
        value.trim().parse::<f64>().ok()
    })
}

/// Entries of the controller's membership index, from `GET /metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct IndexEntries {
    pub slices: u64,
    pub bound_ports: u64,
    pub bound_macs: u64,
}

impl IndexEntries {
    pub(crate) fn read(base: &str) -> anyhow::Result<Self> {
        let text = get(base, "/metrics")?;
        Self::parse(&text).context("GET /metrics has no sliced_slices or sliced_bound_* gauges")
    }

    fn parse(text: &str) -> Option<Self> {
        // Gauges of counts: whole numbers, exactly representable as f64 up to 2^53.
        let count = |name: &str| Some(metric(text, name)? as u64);
        Some(Self {
            slices: count("sliced_slices")?,
            bound_ports: count("sliced_bound_ports")?,
            bound_macs: count("sliced_bound_mac_addresses")?,
        })
    }
}

/// The store's group commits so far, from sliced's own histograms in `GET /metrics`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Commits {
    /// Group commits (rounds of the writer thread).
    pub rounds: f64,
    /// Writes those rounds made durable.
    pub writes: f64,
    /// Time the rounds took: their sled batch, flush and fdatasync.
    pub seconds: f64,
}

impl Commits {
    pub(crate) fn read(base: &str) -> anyhow::Result<Self> {
        let text = get(base, "/metrics")?;
        Self::parse(&text).context("GET /metrics has no sliced_store_commit_* histograms")
    }

    fn parse(text: &str) -> Option<Self> {
        Some(Self {
            rounds: metric(text, "sliced_store_commit_duration_seconds_count")?,
            writes: metric(text, "sliced_store_commit_batch_size_sum")?,
            seconds: metric(text, "sliced_store_commit_duration_seconds_sum")?,
        })
    }

    /// The commits between `self` and a later reading.
    pub(crate) fn until(&self, later: &Commits) -> Commits {
        Commits {
            rounds: later.rounds - self.rounds,
            writes: later.writes - self.writes,
            seconds: later.seconds - self.seconds,
        }
    }

    /// The mean time of one round, in microseconds.
    pub(crate) fn mean_round_us(&self) -> f64 {
        1e6 * self.seconds / self.rounds
    }

    /// The mean writes per round.
    pub(crate) fn writes_per_round(&self) -> f64 {
        self.writes / self.rounds
    }
}

/// Runs `jobs` over `clients` threads, each with its own keep-alive connection; returns
/// the wall time. Job i goes to thread i % clients, in order.
pub(crate) fn parallel<J>(
    base: &str,
    jobs: Vec<J>,
    clients: usize,
    work: impl Fn(&ureq::Agent, &str, &J) -> anyhow::Result<()> + Sync,
) -> anyhow::Result<Duration>
where
    J: Send + Sync,
{
    let clients = clients.max(1);
    let started = Instant::now();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..clients)
            .map(|client| {
                let (jobs, work) = (&jobs, &work);
                scope.spawn(move || -> anyhow::Result<()> {
                    let agent = agent();
                    for job in jobs.iter().skip(client).step_by(clients) {
                        work(&agent, base, job)?;
                    }
                    Ok(())
                })
            })
            .collect();
        for handle in handles {
            handle
                .join()
                .map_err(|_| anyhow::anyhow!("a client thread panicked"))??;
        }
        Ok::<(), anyhow::Error>(())
    })?;
    Ok(started.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gauges_come_from_the_metrics_text() {
        let text = "# HELP sliced_slices Slices.\n# TYPE sliced_slices gauge\nsliced_slices 1000\n\
                    sliced_bound_ports 1001\nsliced_bound_mac_addresses_total 3\n\
                    sliced_bound_mac_addresses 1000002\n";
        assert_eq!(
            IndexEntries::parse(text),
            Some(IndexEntries {
                slices: 1000,
                bound_ports: 1001,
                bound_macs: 1_000_002,
            })
        );
        assert_eq!(IndexEntries::parse("sliced_slices 1\n"), None);
    }

    #[test]
    fn commits_come_from_the_store_histograms() {
        let text = "# TYPE sliced_store_commit_duration_seconds histogram\n\
                    sliced_store_commit_duration_seconds_sum 0.5\n\
                    sliced_store_commit_duration_seconds_count 1000\n\
                    sliced_store_commit_batch_size_sum 4000.0\n\
                    sliced_store_commit_batch_size_count 1000\n";
        let before = Commits::parse(text).expect("parsed");
        assert_eq!(before.rounds, 1000.0);
        assert_eq!(before.writes, 4000.0);
        let later = Commits {
            rounds: 3000.0,
            writes: 8000.0,
            seconds: 1.5,
        };
        let run = before.until(&later);
        assert_eq!(run.mean_round_us(), 500.0);
        assert_eq!(run.writes_per_round(), 2.0);
        assert_eq!(
            Commits::parse("sliced_store_commit_duration_seconds_sum 1\n"),
            None
        );
    }

    #[test]
    fn the_executable_comes_from_cargos_messages() {
        let messages = r#"{"reason":"compiler-artifact","target":{"name":"slice_core"},"executable":null}
{"reason":"compiler-artifact","target":{"name":"sliced"},"executable":"/t/release/sliced"}
{"reason":"build-finished","success":true}"#;
        assert_eq!(
            artifact_path(messages, "sliced"),
            Some(PathBuf::from("/t/release/sliced"))
        );
        assert_eq!(artifact_path(messages, "slice"), None);
    }
}

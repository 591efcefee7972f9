//! The network `contrib/mininet/sliced_mininet.py` makes for the Mininet scenarios
//! (`mininet.rs`): the script's process, the description it writes of its network, and
//! fping between its hosts.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, ensure, Context};
use serde_json::Value;

use super::oracle;
use super::ovs::Ovs;
use super::stage::Stage;
use super::sys::{self, Daemon};

/// The script under test, from the workspace root.
pub(super) const SCRIPT: &str = "contrib/mininet/sliced_mininet.py";
/// Mininet takes the network down within this once its stdin closes.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);
/// Rounds of fping for the pairs a slice holds that did not answer yet: the first
/// packets of a pair wait for ARP or neighbour discovery and the path through sliced.
const PING_ROUNDS: usize = 4;
/// fping processes at once, spread over the switches so that none gets near the
/// controller's PACKET_IN budget of a switch (1000/s) or, with the ARP answers, of a
/// port (250/s).
const FPINGS_AT_ONCE: usize = 12;
/// Between two packets of one fping: 250/s, the controller's budget for one port.
const FPING_INTERVAL_MS: &str = "4";
/// How long fping waits for each reply.
const FPING_TIMEOUT_MS: &str = "800";
/// A failure names at most this many pairs.
const SHOWN_PAIRS: usize = 30;

/// Directed links as sliced names them: (`0x1:2`, `0x2:3`).
pub(super) type Links = BTreeSet<(String, String)>;

/// What the script wrote with `--describe`.
pub(super) struct Description {
    pub switches: Vec<Switch>,
    /// In Mininet's numbering: host n at n - 1.
    pub hosts: Vec<Host>,
    pub links: Vec<(End, End)>,
}

pub(super) struct Switch {
    pub name: String,
    pub dpid: u64,
}

pub(super) struct Host {
    pub name: String,
    pid: u64,
    pub mac: String,
    pub ipv4: String,
    ipv6: String,
    pub dpid: u64,
    port_no: u64,
}

impl Host {
    pub(super) fn port_name(&self) -> String {
        format!("{:#x}:{}", self.dpid, self.port_no)
    }
}

/// One end of a cable between two switches.
#[derive(Clone)]
pub(super) struct End {
    pub switch: String,
    dpid: u64,
    port_no: u64,
    /// The switch's side of the veth, in the root namespace (`s1-eth2`).
    pub intf: String,
}

impl End {
    pub(super) fn port_no(&self) -> u32 {
        u32::try_from(self.port_no).unwrap_or(u32::MAX)
    }

    pub(super) fn port_name(&self) -> String {
        format!("{:#x}:{}", self.dpid, self.port_no)
    }
}

impl Description {
    pub(super) fn read(path: &Path) -> anyhow::Result<Description> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Description::parse(&text).with_context(|| format!("in {}", path.display()))
    }

    pub(super) fn parse(text: &str) -> anyhow::Result<Description> {
        let value: Value = serde_json::from_str(text).context("not JSON")?;
        let list = |key: &str| -> anyhow::Result<&Vec<Value>> {
            value
                .get(key)
                .and_then(Value::as_array)
                .with_context(|| format!("no list {key:?}"))
        };
        let switches = list("switches")?
            .iter()
            .map(|s| {
                Ok(Switch {
                    name: text_field(s, "name")?,
                    dpid: number_field(s, "dpid")?,
                })
            })
            .collect::<anyhow::Result<_>>()?;
        let hosts = list("hosts")?
            .iter()
            .map(|h| {
                Ok(Host {
                    name: text_field(h, "name")?,
                    pid: number_field(h, "pid")?,
                    mac: text_field(h, "mac")?,
                    ipv4: text_field(h, "ipv4")?,
                    ipv6: text_field(h, "ipv6")?,
                    dpid: number_field(h, "dpid")?,
                    port_no: number_field(h, "port_no")?,
                })
            })
            .collect::<anyhow::Result<_>>()?;
        let links = list("links")?
            .iter()
            .map(|link| match link.as_array().map(Vec::as_slice) {
                Some([a, b]) => Ok((End::read(a)?, End::read(b)?)),
                _ => bail!("a link is not a pair of ends: {link}"),
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Description {
            switches,
            hosts,
            links,
        })
    }

    /// Every cable in both directions, as sliced names the ports.
    pub(super) fn directed_links(&self) -> Links {
        self.links
            .iter()
            .flat_map(|(a, b)| {
                [
                    (a.port_name(), b.port_name()),
                    (b.port_name(), a.port_name()),
                ]
            })
            .collect()
    }
}

impl End {
    fn read(value: &Value) -> anyhow::Result<End> {
        Ok(End {
            switch: text_field(value, "switch")?,
            dpid: number_field(value, "dpid")?,
            port_no: number_field(value, "port_no")?,
            intf: text_field(value, "intf")?,
        })
    }
}

fn text_field(value: &Value, key: &str) -> anyhow::Result<String> {
    value
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .with_context(|| format!("no text {key:?} in {value}"))
}

fn number_field(value: &Value, key: &str) -> anyhow::Result<u64> {
    value
        .get(key)
        .and_then(Value::as_u64)
        .with_context(|| format!("no number {key:?} in {value}"))
}

/// The script's process and its network. Dropping it stops the network.
pub(super) struct Mininet {
    process: Option<Daemon>,
    stdin: Option<ChildStdin>,
    log: PathBuf,
    /// The network namespace the script runs in, when not the lab's own.
    netns: Option<String>,
    /// The switches' names once known: their interfaces must go with the network.
    pub switches: Vec<String>,
}

impl Mininet {
    /// Runs the script with these arguments and the OVS_* environment of the lab's Open
    /// vSwitch (so that Mininet's ovs-vsctl goes there), its output in the stage's
    /// directory.
    pub(super) fn start(stage: &mut Stage, args: &[String]) -> anyhow::Result<Mininet> {
        let ovs = stage.ovs();
        Mininet::start_on(stage, ovs, None, args)
    }

    /// [`Mininet::start`] on another Open vSwitch, in the network namespace it runs in
    /// (`netns`, as the script runs in a container).
    pub(super) fn start_on(
        stage: &mut Stage,
        ovs: &Ovs,
        netns: Option<&str>,
        args: &[String],
    ) -> anyhow::Result<Mininet> {
        let script = crate::workspace_root().join(SCRIPT);
        let log = stage.dir().join("mininet.log");
        let within = netns
            .map(|ns| format!("ip netns exec {ns} "))
            .unwrap_or_default();
        stage.step(format!(
            "{within}{} {}  (log: {})",
            SCRIPT,
            args.join(" "),
            log.display()
        ));
        let log_file = std::fs::File::create(&log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        // Ovs::command runs it in the instance's namespace.
        let mut command = ovs.command(&script.display().to_string(), args);
        command
            .stdin(Stdio::piped())
            .stdout(log_file.try_clone()?)
            .stderr(log_file);
        let mut process = Daemon::spawn(&mut command, "sliced_mininet.py")?;
        Ok(Mininet {
            stdin: process.stdin(),
            process: Some(process),
            log,
            netns: netns.map(str::to_owned),
            switches: Vec::new(),
        })
    }

    /// An error, with the end of the script's output, when it has exited.
    pub(super) fn check_running(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.process.as_mut().and_then(Daemon::exited) {
            bail!(
                "{SCRIPT} exited ({status}); the end of its output:\n{}",
                self.log_tail(20)
            );
        }
        Ok(())
    }

    /// Everything the script printed so far.
    pub(super) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub(super) fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Closes the script's stdin, which makes it stop the network, and checks that no
    /// interface of a switch of it is left.
    pub(super) fn stop(&mut self, stage: &mut Stage) -> anyhow::Result<()> {
        stage.step("close the script's stdin: Mininet stops the network");
        let started = Instant::now();
        let status = self.shut_down();
        let left = self.leftovers();
        ensure!(
            left.is_empty(),
            "the stopped network left {}; the end of the script's output:\n{}",
            left.join(" "),
            self.log_tail(10)
        );
        match status {
            Some(status) if status.success() => {}
            other => bail!(
                "{SCRIPT} did not exit cleanly ({other:?}); the end of its output:\n{}",
                self.log_tail(20)
            ),
        }
        stage.step(format!(
            "Mininet stopped in {} ms, no interface of its switches left",
            started.elapsed().as_millis()
        ));
        Ok(())
    }

    /// Stops the script: stdin closed, then SIGTERM, then SIGKILL. Its exit status.
    fn shut_down(&mut self) -> Option<std::process::ExitStatus> {
        self.stdin = None;
        let mut process = self.process.take()?;
        let exited = sys::poll(STOP_TIMEOUT, Duration::from_millis(50), || {
            Ok(process.exited())
        });
        match exited {
            Ok(Some(status)) => Some(status),
            _ => process.stop(libc::SIGTERM, Duration::from_secs(20)),
        }
    }

    /// The interfaces of its switches still in its namespace.
    fn leftovers(&self) -> Vec<String> {
        interfaces(self.netns.as_deref())
            .into_iter()
            .filter(|name| {
                let switch = name.split("-eth").next().unwrap_or(name);
                self.switches.iter().any(|s| s == switch)
            })
            .collect()
    }
}

/// The names of the interfaces in `netns` (None: the lab's own namespace).
pub(super) fn interfaces(netns: Option<&str>) -> Vec<String> {
    let Some(netns) = netns else {
        let Ok(entries) = std::fs::read_dir("/sys/class/net") else {
            return Vec::new();
        };
        return entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .collect();
    };
    let listing = sys::output_always(&mut sys::command(
        "ip",
        &["-o", "-n", netns, "link", "show"],
    ));
    let Ok(listing) = listing else {
        return Vec::new();
    };
    // Lines look like `12: s1-eth1@if11: <BROADCAST,...> ...`.
    String::from_utf8_lossy(&listing.stdout)
        .lines()
        .filter_map(|line| line.split(": ").nth(1))
        .map(|name| name.split('@').next().unwrap_or(name).to_owned())
        .collect()
}

impl Drop for Mininet {
    fn drop(&mut self) {
        if self.process.is_some() {
            sys::park_if_interrupted();
            self.shut_down();
            let left = self.leftovers();
            if !left.is_empty() {
                eprintln!("lab: the Mininet network left {}", left.join(" "));
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Family {
    V4,
    V6,
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        })
    }
}

/// Pings from each host of `rows` to every other host, over IPv4 and over IPv6: a reply
/// where `allowed` says no fails at once; a pair it allows must answer within
/// `PING_ROUNDS` rounds. Reports how long it took.
pub(super) fn check_pairs(
    stage: &mut Stage,
    net: &Description,
    rows: &[usize],
    allowed: &dyn Fn(usize, usize) -> bool,
    what: &str,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut last_round = SystemTime::now();
    for family in [Family::V4, Family::V6] {
        let mut pending: Vec<(usize, Vec<usize>)> = rows
            .iter()
            .map(|&row| (row, (0..net.hosts.len()).filter(|&t| t != row).collect()))
            .collect();
        for _ in 0..PING_ROUNDS {
            last_round = SystemTime::now();
            let answered = fping_rows(net, &pending, family)?;
            let mut again = Vec::new();
            for ((row, targets), alive) in pending.iter().zip(&answered) {
                if let Some(leak) = alive.iter().find(|&&t| !allowed(*row, t)) {
                    bail!(
                        "{what}: {} got an answer from {} over {family}, though no slice \
                         holds both (or no cable joins them)",
                        net.hosts[*row].name,
                        net.hosts[*leak].name
                    );
                }
                let missing: Vec<usize> = targets
                    .iter()
                    .copied()
                    .filter(|&t| allowed(*row, t) && !alive.contains(&t))
                    .collect();
                if !missing.is_empty() {
                    again.push((*row, missing));
                }
            }
            pending = again;
            if pending.is_empty() {
                break;
            }
        }
        if !pending.is_empty() {
            let silent: Vec<String> = pending
                .iter()
                .flat_map(|(row, targets)| {
                    targets
                        .iter()
                        .map(|t| format!("{}->{}", net.hosts[*row].name, net.hosts[*t].name))
                })
                .collect();
            bail!(
                "{what}: {} pairs that share a slice got no answer over {family} in \
                 {PING_ROUNDS} rounds: {}{}",
                silent.len(),
                silent[..silent.len().min(SHOWN_PAIRS)].join(" "),
                if silent.len() > SHOWN_PAIRS {
                    " ..."
                } else {
                    ""
                }
            );
        }
    }
    let pairs = rows.len() * (net.hosts.len() - 1);
    let answering = rows
        .iter()
        .map(|&row| {
            (0..net.hosts.len())
                .filter(|&t| t != row && allowed(row, t))
                .count()
        })
        .sum::<usize>();
    stage.report(format!(
        "{what}: {pairs} ordered pairs over IPv4 and IPv6, {answering} of them answering \
         as the slices say, in {} ms",
        started.elapsed().as_millis()
    ));
    // Every pair answered as the slices say: the verifier, from the switches' tables,
    // must say the same of each (issue 37's oracle).
    let peers: Vec<oracle::Peer> = net
        .hosts
        .iter()
        .map(|host| oracle::Peer {
            label: host.name.clone(),
            mac: host.mac.clone(),
            port: host.port_name(),
        })
        .collect();
    let pinged: Vec<oracle::Pinged> = rows
        .iter()
        .flat_map(|&row| {
            (0..net.hosts.len())
                .filter(move |&t| t != row)
                .map(move |t| (row, t, allowed(row, t)))
        })
        .collect();
    let agreed = oracle::agree(
        stage.ctl()?,
        &peers,
        &pinged,
        last_round,
        stage.runs_pipeline(),
    )
    .with_context(|| format!("{what}: the verifier"))?;
    stage.step(format!("{what}: {agreed}"));
    Ok(())
}

/// Runs fping in each row's host towards its targets, `FPINGS_AT_ONCE` hosts at a time
/// spread over the switches; returns the targets that answered, per row.
fn fping_rows(
    net: &Description,
    pending: &[(usize, Vec<usize>)],
    family: Family,
) -> anyhow::Result<Vec<BTreeSet<usize>>> {
    let address = |host: &Host| match family {
        Family::V4 => host.ipv4.clone(),
        Family::V6 => host.ipv6.clone(),
    };
    let by_address: HashMap<String, usize> = net
        .hosts
        .iter()
        .enumerate()
        .map(|(at, h)| (address(h), at))
        .collect();
    // Round robin over the switches: the n-th host of each switch before any (n+1)-th.
    let mut seen_on: HashMap<u64, usize> = HashMap::new();
    let mut order: Vec<(usize, u64, usize)> = pending
        .iter()
        .enumerate()
        .map(|(at, (row, _))| {
            let dpid = net.hosts[*row].dpid;
            let rank = seen_on.entry(dpid).or_default();
            *rank += 1;
            (*rank, dpid, at)
        })
        .collect();
    order.sort_unstable();

    let mut answered = vec![BTreeSet::new(); pending.len()];
    let mut running = Running(Vec::new());
    let mut next = order.into_iter().map(|(_, _, at)| at);
    loop {
        while running.0.len() < FPINGS_AT_ONCE {
            let Some(at) = next.next() else { break };
            let (row, targets) = &pending[at];
            let host = &net.hosts[*row];
            let mut command = sys::command(
                "nsenter",
                &[
                    "-t",
                    &host.pid.to_string(),
                    "-n",
                    "fping",
                    "-a",
                    "-r",
                    "0",
                    "-i",
                    FPING_INTERVAL_MS,
                    "-t",
                    FPING_TIMEOUT_MS,
                    match family {
                        Family::V4 => "-4",
                        Family::V6 => "-6",
                    },
                ],
            );
            command
                .args(targets.iter().map(|t| address(&net.hosts[*t])))
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            sys::park_if_interrupted();
            let child = command
                .spawn()
                .with_context(|| format!("cannot start `{}`", sys::describe(&command)))?;
            running.0.push((at, child));
        }
        if running.0.is_empty() {
            return Ok(answered);
        }
        std::thread::sleep(Duration::from_millis(5));
        let mut still = Vec::new();
        for (at, mut child) in std::mem::take(&mut running.0) {
            if child.try_wait()?.is_none() {
                still.push((at, child));
                continue;
            }
            let output = child.wait_with_output()?;
            // 0: every target answered; 1: some did not. Anything else is fping's error.
            if !matches!(output.status.code(), Some(0 | 1)) {
                bail!(
                    "fping in {} failed ({}): {}",
                    net.hosts[pending[at].0].name,
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim()
                );
            }
            for line in String::from_utf8_lossy(&output.stdout).lines() {
                let target = by_address
                    .get(line.trim())
                    .with_context(|| format!("fping printed {line:?}, no host's address"))?;
                answered[at].insert(*target);
            }
        }
        running.0 = still;
    }
}

/// fping processes still running; killed if the check gives up early.
struct Running(Vec<(usize, Child)>);

impl Drop for Running {
    fn drop(&mut self) {
        for (_, child) in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

//! One run of one scenario on one OpenFlow version: its controller, its network, the
//! checks scenarios are written with, and what is printed when one fails.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use serde_json::Value;

use super::etcd::EtcdCluster;
use super::flows::{self, Flow};
use super::net::{self, Capture, Mode, Net, Port, Topo};
use super::ovs::{OfVersion, Ovs};
use super::pki::LabPki;
use super::sliced::{Bins, Controller};

pub(super) mod cluster;
pub(super) mod ping;
mod verified;

/// Attempts at `ping -c 1 -W 1` before "cannot reach" (the first packets set up ARP and
/// the path, so one lost ping is no failure).
const PING_ATTEMPTS: u32 = 5;
/// Switches connected and every link discovered by LLDP within this.
const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// The controller deletes the flows of a withdrawn host within 1 s (docs/controller.md);
/// the extra half second covers ovs-ofctl itself on a busy machine.
pub(super) const WITHDRAW_DEADLINE: Duration = Duration::from_millis(1500);

/// How one run of the random scenario is chosen: the seed replays it.
#[derive(Debug, Clone, Copy)]
pub(super) struct RandomRun {
    pub seed: u64,
    pub steps: usize,
}

/// The lab every stage runs in: the private Open vSwitch, the binaries and the run's
/// choices.
pub(super) struct Lab<'a> {
    pub ovs: &'a Ovs,
    pub prefix: &'a str,
    pub bins: &'a Bins,
    pub verbose: bool,
    /// Every stage over TLS (`--tls`).
    pub tls: bool,
    /// The seed and length of the random scenario.
    pub random: RandomRun,
    /// How often the failover scenario kills the master.
    pub failover_runs: usize,
}

pub(super) struct Stage<'a> {
    lab: &'a Lab<'a>,
    pub version: OfVersion,
    dir: PathBuf,
    // Field order is drop order: the network goes first, then the controllers, then the
    // etcd they keep their slices in.
    net: Option<Net<'a>>,
    /// The controllers, in the order they were started; the first one live is the one
    /// the checks talk to. One, except in a cluster.
    controllers: Vec<Controller>,
    /// A cluster's etcd.
    etcd: Option<EtcdCluster>,
    steps: Vec<String>,
    /// Where ovs-vswitchd's log stood when the stage began.
    ovs_log_mark: usize,
    /// The certificates, once the stage runs over TLS.
    tls: Option<LabPki>,
}

impl<'a> Stage<'a> {
    pub(super) fn new(lab: &'a Lab<'a>, version: OfVersion, dir: PathBuf) -> anyhow::Result<Self> {
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let mut stage = Stage {
            lab,
            version,
            dir,
            net: None,
            controllers: Vec::new(),
            etcd: None,
            steps: Vec::new(),
            ovs_log_mark: lab.ovs.log_mark(),
            tls: None,
        };
        if lab.tls {
            stage.use_tls()?;
        }
        Ok(stage)
    }

    /// Runs this stage over TLS: makes a CA with certificates for sliced and for Open
    /// vSwitch, and gives Open vSwitch its own (`set-ssl`, global to the instance; a
    /// later plain-TCP stage ignores it). Call before the controller starts.
    pub(super) fn use_tls(&mut self) -> anyhow::Result<()> {
        if self.tls.is_some() {
            return Ok(());
        }
        let pki = LabPki::create(&self.dir.join("pki"))?;
        self.step("make a CA, certificates for sliced and Open vSwitch; ovs-vsctl set-ssl");
        self.lab.ovs.vsctl(&pki.set_ssl_args())?;
        self.tls = Some(pki);
        Ok(())
    }

    /// The stage's certificates, once it runs over TLS (for an Open vSwitch the stage does
    /// not manage).
    pub(super) fn pki(&self) -> Option<&LabPki> {
        self.tls.as_ref()
    }

    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The seed and length of the random scenario for this run.
    pub(super) fn random_run(&self) -> RandomRun {
        self.lab.random
    }

    /// How often the failover scenario kills the master.
    pub(super) fn failover_runs(&self) -> usize {
        self.lab.failover_runs
    }

    /// Whether sliced runs the proactive pipeline here: OpenFlow 1.3, slicing on, and
    /// per-pair flows not asked for (docs/controller.md, "The OpenFlow 1.3 pipeline").
    pub(super) fn runs_pipeline(&self) -> bool {
        let args = &self.lab.bins.sliced_args;
        self.version == OfVersion::Of13
            && !args
                .iter()
                .any(|arg| arg == "--per-pair-flows" || arg == "--no-slicing")
    }

    /// The binaries under test, for a controller the stage does not manage.
    pub(super) fn shared_bins(&self) -> &Bins {
        self.lab.bins
    }

    /// Notes what the scenario does next: printed with `--verbose`, and as the story so
    /// far when the scenario fails.
    pub(super) fn step(&mut self, text: impl Into<String>) {
        let text = text.into();
        if self.lab.verbose {
            println!("      {text}");
        }
        self.steps.push(text);
    }

    pub(super) fn steps(&self) -> &[String] {
        &self.steps
    }

    /// A step whose line is a result of the run (a measurement): printed whatever
    /// `--verbose` says.
    pub(super) fn report(&mut self, text: impl Into<String>) {
        let text = text.into();
        println!("      {text}");
        self.steps.push(text);
    }

    /// The run's prefix, for a namespace or interface the stage does not make itself
    /// (the sweep removes whatever carries it).
    pub(super) fn prefix(&self) -> &'a str {
        self.lab.prefix
    }

    /// The lab's private Open vSwitch, for a network the stage does not build itself.
    pub(super) fn ovs(&self) -> &'a Ovs {
        self.lab.ovs
    }

    /// Starts sliced in the foreground (the lab's child).
    pub(super) fn start_controller(&mut self) -> anyhow::Result<()> {
        self.step("start sliced");
        self.controllers.push(Controller::start(
            self.lab.bins,
            &self.dir,
            self.tls.as_ref(),
        )?);
        Ok(())
    }

    /// Starts sliced in the foreground with more flags (`--discovery-window 4`), on a
    /// data directory and log of its own in the stage's subdirectory `name`.
    pub(super) fn start_controller_with(
        &mut self,
        name: &str,
        extra: &[&str],
    ) -> anyhow::Result<()> {
        self.step(format!("start sliced {}", extra.join(" ")));
        let extra: Vec<String> = extra.iter().map(|arg| (*arg).to_owned()).collect();
        let dir = self.dir.join(name);
        let controller = Controller::start_with(self.lab.bins, &dir, self.tls.as_ref(), &extra)?;
        self.controllers.push(controller);
        Ok(())
    }

    /// Starts sliced with `-d --pid-file`; returns the pid it printed.
    pub(super) fn start_daemon(&mut self, pid_file: &Path) -> anyhow::Result<u32> {
        self.step(format!("start sliced -d --pid-file {}", pid_file.display()));
        let (controller, pid) =
            Controller::start_detached(self.lab.bins, &self.dir, pid_file, self.tls.as_ref())?;
        self.controllers.push(controller);
        Ok(pid)
    }

    /// Kills sliced with SIGKILL (the switches keep their flows and reconnect).
    pub(super) fn kill_controller(&mut self) -> anyhow::Result<()> {
        self.step("kill -9 sliced");
        self.ctl_mut()?.kill(libc::SIGKILL);
        Ok(())
    }

    /// Starts the killed sliced again on its data directory and ports, and waits until
    /// it knows every switch and link of the network again.
    pub(super) fn restart_controller(&mut self) -> anyhow::Result<()> {
        self.step("start sliced again on the same data directory");
        self.ctl_mut()?.start_again()?;
        let topo = self.net()?.topo.clone();
        self.wait_ready(&topo)
    }

    /// Starts a cluster: an etcd of `etcd_members` members, then `instances` sliced on
    /// it, each with a data directory, HTTP and OpenFlow port of its own and the LLDP
    /// secret they share (so that each accepts the others' probes, as docs/controller.md
    /// asks of controllers sharing switches).
    pub(super) fn start_cluster(
        &mut self,
        etcd_members: usize,
        instances: usize,
    ) -> anyhow::Result<()> {
        self.start_cluster_with(etcd_members, instances, |etcd, _| Ok(etcd.endpoints()))
    }

    /// [`Stage::start_cluster`], each instance (numbered from 1) reaching etcd at the
    /// endpoints `endpoints` gives it (a proxy in between, to cut it off).
    pub(super) fn start_cluster_with(
        &mut self,
        etcd_members: usize,
        instances: usize,
        endpoints: impl FnMut(&EtcdCluster, usize) -> anyhow::Result<String>,
    ) -> anyhow::Result<()> {
        let none = vec![Vec::new(); instances];
        self.start_cluster_custom(etcd_members, &none, endpoints)
    }

    /// [`Stage::start_cluster`] with one instance per entry of `flags`, each started with
    /// its entry's extra flags (`--packet-in-rate`: instances that differ where the
    /// switches can show which one wrote).
    pub(super) fn start_cluster_flags(
        &mut self,
        etcd_members: usize,
        flags: &[Vec<String>],
    ) -> anyhow::Result<()> {
        self.start_cluster_custom(etcd_members, flags, |etcd, _| Ok(etcd.endpoints()))
    }

    fn start_cluster_custom(
        &mut self,
        etcd_members: usize,
        flags: &[Vec<String>],
        mut endpoints: impl FnMut(&EtcdCluster, usize) -> anyhow::Result<String>,
    ) -> anyhow::Result<()> {
        self.step(format!("start an etcd cluster of {etcd_members} members"));
        let etcd = EtcdCluster::start(&self.dir.join("etcd"), etcd_members)?;
        let secret = self.dir.join("lldp-secret");
        write_private(&secret, b"the lab's shared LLDP secret, 32+ bytes long\n")?;
        for (at, own) in (1..).zip(flags) {
            let shown: String = own.iter().map(|flag| format!(" {flag}")).collect();
            self.step(format!("start sliced c{at} on etcd{shown}"));
            let mut extra = vec![
                "--etcd".to_owned(),
                endpoints(&etcd, at)?,
                // The lab's etcd is on loopback.
                "--etcd-allow-plaintext".to_owned(),
                "--lldp-secret-file".to_owned(),
                secret.display().to_string(),
            ];
            extra.extend(own.iter().cloned());
            let dir = self.dir.join(format!("c{at}"));
            let controller =
                Controller::start_with(self.lab.bins, &dir, self.tls.as_ref(), &extra)?;
            self.controllers.push(controller);
        }
        self.etcd = Some(etcd);
        Ok(())
    }

    /// The cluster's etcd.
    pub(super) fn etcd_mut(&mut self) -> anyhow::Result<&mut EtcdCluster> {
        self.etcd
            .as_mut()
            .context("the scenario started no cluster")
    }

    pub(super) fn ctl(&self) -> anyhow::Result<&Controller> {
        self.controllers
            .first()
            .context("the scenario started no controller")
    }

    pub(super) fn ctl_mut(&mut self) -> anyhow::Result<&mut Controller> {
        self.controllers
            .first_mut()
            .context("the scenario started no controller")
    }

    /// Every controller still running, in the order they were started.
    pub(super) fn controllers(&self) -> &[Controller] {
        &self.controllers
    }

    /// Takes a controller out of the stage (to kill it); the network keeps pointing at
    /// its port.
    pub(super) fn take_controller(&mut self, at: usize) -> anyhow::Result<Controller> {
        ensure!(
            at < self.controllers.len(),
            "there is no controller number {}",
            at + 1
        );
        Ok(self.controllers.remove(at))
    }

    /// Puts a (restarted) controller back at the end of the list.
    pub(super) fn add_controller(&mut self, controller: Controller) {
        self.controllers.push(controller);
    }

    pub(super) fn net(&self) -> anyhow::Result<&Net<'a>> {
        self.net.as_ref().context("the scenario built no network")
    }

    /// The slice port name of a host's port (`0x1:2`), as REST and the slice tool take it.
    pub(super) fn port_of(&self, host: u8) -> anyhow::Result<String> {
        Ok(self.net()?.host_port(host)?.slice_name())
    }

    /// Puts host `host`'s MAC address on its port in `slice` through REST.
    pub(super) fn add_member(&mut self, slice: &str, host: u8) -> anyhow::Result<()> {
        let port = self.port_of(host)?;
        self.rest(
            "POST",
            &format!("/slices/{slice}/ports/{port}/mac_addresses"),
            Some(serde_json::json!({ "name": net::mac(host) })),
            201,
        )?;
        Ok(())
    }

    /// Builds the topology, its bridges controlled by this stage's sliced, and waits
    /// until sliced knows every switch (at this stage's OpenFlow version) and every link.
    pub(super) fn build(&mut self, description: &str) -> anyhow::Result<()> {
        let topo: Topo = description.parse().context("bad topology description")?;
        let tls = self.ctl()?.tls;
        let ports: Vec<u16> = self.controllers.iter().map(|c| c.openflow_port).collect();
        let transport = if tls { "ssl" } else { "tcp" };
        self.step(format!(
            "build {description:?} ({}, {transport})",
            self.version.short()
        ));
        let net = Net::build(
            self.lab.ovs,
            self.lab.prefix,
            &topo,
            Mode::Controlled {
                version: self.version,
                ports,
                tls,
            },
        )?;
        self.net = Some(net);
        self.wait_ready(&topo)
    }

    /// Waits until the controller knows every switch (at this stage's version) and every
    /// link of the topology. In a cluster that is the master, the one instance that
    /// sends LLDP; the standbys must know every switch, which confirms each instance in
    /// its role.
    pub(super) fn wait_ready(&mut self, topo: &Topo) -> anyhow::Result<()> {
        if self.etcd.is_none() {
            for at in 0..self.controllers.len() {
                self.wait_ready_at(at, topo)?;
            }
            return Ok(());
        }
        let master = cluster::wait_master(self, READY_TIMEOUT)?;
        self.wait_ready_at(master, topo)?;
        cluster::wait_roles(self, master, &topo.switches)
    }

    /// Whether the stage runs a cluster (controllers on etcd, one of them master).
    pub(super) fn is_cluster(&self) -> bool {
        self.etcd.is_some()
    }

    fn wait_ready_at(&mut self, at: usize, topo: &Topo) -> anyhow::Result<()> {
        let started = Instant::now();
        let mut expected_links = BTreeSet::new();
        for (a, b) in &topo.links {
            expected_links.insert((a.slice_name(), b.slice_name()));
            expected_links.insert((b.slice_name(), a.slice_name()));
        }
        let wire = self.version.wire();
        let mut missing = String::new();
        while started.elapsed() < READY_TIMEOUT {
            self.controllers[at].check_running()?;
            let ctl = &self.controllers[at];
            let switches = ctl.view("/topology/switches")?;
            let known: BTreeSet<(u64, u64)> = switches
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| Some((s.get("dpid")?.as_u64()?, s.get("version")?.as_u64()?)))
                .collect();
            let found = ctl.links()?;
            let absent_switches: Vec<String> = topo
                .switches
                .iter()
                .filter(|dpid| !known.contains(&(**dpid, wire)))
                .map(|dpid| format!("s{dpid}"))
                .collect();
            let absent_links: Vec<String> = expected_links
                .difference(&found)
                .map(|(a, b)| format!("{a}->{b}"))
                .collect();
            if absent_switches.is_empty() && absent_links.is_empty() {
                let who = self.controllers[at].http;
                self.step(format!(
                    "sliced at {who} sees {} switches and {} directed links after {} ms",
                    topo.switches.len(),
                    expected_links.len(),
                    started.elapsed().as_millis()
                ));
                return Ok(());
            }
            missing = format!(
                "switches not connected at {}: [{}]; links not discovered: [{}]; \
                 GET /topology/switches gave {switches}",
                self.version.short(),
                absent_switches.join(" "),
                absent_links.join(" ")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        bail!(
            "the network was not ready within {READY_TIMEOUT:?} for sliced at {}: {missing}",
            self.controllers[at].http
        )
    }

    /// Runs the `slice` tool against this stage's daemon.
    pub(super) fn tool(&mut self, args: &[&str]) -> anyhow::Result<String> {
        self.step(format!("slice {}", args.join(" ")));
        self.ctl()?.tool(args)
    }

    /// A REST call that must answer `expected`.
    pub(super) fn rest(
        &mut self,
        method: &str,
        path: &str,
        body: Option<Value>,
        expected: u16,
    ) -> anyhow::Result<String> {
        self.step(format!(
            "{method} {path} {}",
            body.as_ref().map(Value::to_string).unwrap_or_default()
        ));
        self.ctl()?.rest(method, path, body, expected)
    }

    /// `from` gets a reply from `to` within a few attempts.
    pub(super) fn reach(&mut self, from: u8, to: u8) -> anyhow::Result<()> {
        let net = self.net()?;
        for attempt in 1..=PING_ATTEMPTS {
            if net.ping(from, to)? {
                self.step(format!("h{from} reaches h{to} (attempt {attempt})"));
                return Ok(());
            }
        }
        bail!("h{from} cannot reach h{to}: {PING_ATTEMPTS} pings went unanswered")
    }

    /// `a` and `b` reach each other, both ways.
    pub(super) fn reach_both(&mut self, a: u8, b: u8) -> anyhow::Result<()> {
        self.reach(a, b)?;
        self.reach(b, a)
    }

    /// No ping of these pairs gets an answer: first with ARP as it is (a broadcast that
    /// must go unanswered), then with permanent ARP entries on both sides (so that the
    /// ICMP is unicast and meets the controller's drop rules). The entries are removed
    /// afterwards.
    pub(super) fn isolated(&mut self, pairs: &[(u8, u8)]) -> anyhow::Result<()> {
        let shown: Vec<String> = pairs.iter().map(|(a, b)| format!("h{a}->h{b}")).collect();
        let shown = shown.join(" ");
        let net = self.net()?;
        let answered = net.ping_all(pairs)?;
        let leaks: Vec<String> = pairs
            .iter()
            .zip(&answered)
            .filter(|(_, ok)| **ok)
            .map(|((a, b), _)| format!("h{a}->h{b}"))
            .collect();
        ensure!(
            leaks.is_empty(),
            "isolation broken: {} got replies",
            leaks.join(" ")
        );
        for &(a, b) in pairs {
            net.pin_neighbour(a, b)?;
            net.pin_neighbour(b, a)?;
        }
        let answered = net.ping_all(pairs);
        for &(a, b) in pairs {
            net.forget_neighbour(a, b)?;
            net.forget_neighbour(b, a)?;
        }
        let leaks: Vec<String> = pairs
            .iter()
            .zip(&answered?)
            .filter(|(_, ok)| **ok)
            .map(|((a, b), _)| format!("h{a}->h{b}"))
            .collect();
        ensure!(
            leaks.is_empty(),
            "isolation broken with static ARP (unicast): {} got replies",
            leaks.join(" ")
        );
        self.step(format!("isolated (broadcast and unicast): {shown}"));
        Ok(())
    }

    /// The flow table of one switch.
    pub(super) fn flows(&self, dpid: u64) -> anyhow::Result<Vec<Flow>> {
        let net = self.net()?;
        let dump = self.lab.ovs.ofctl(
            self.version,
            &["--no-stats", "dump-flows", &net.bridge(dpid)],
        )?;
        Ok(flows::parse(&dump))
    }

    /// The flow table of one switch with each flow's statistics (its age).
    pub(super) fn flows_with_stats(&self, dpid: u64) -> anyhow::Result<Vec<Flow>> {
        let net = self.net()?;
        let dump = self
            .lab
            .ovs
            .ofctl(self.version, &["dump-flows", &net.bridge(dpid)])?;
        Ok(flows::parse(&dump))
    }

    /// The meter table of one switch as `ovs-ofctl dump-meters` prints it (1.3 only).
    pub(super) fn meters(&self, dpid: u64) -> anyhow::Result<String> {
        let net = self.net()?;
        self.lab
            .ovs
            .ofctl(self.version, &["dump-meters", &net.bridge(dpid)])
    }

    /// Every switch's flows, with its dpid.
    pub(super) fn all_flows(&self) -> anyhow::Result<Vec<(u64, Flow)>> {
        let mut all = Vec::new();
        for dpid in self.net()?.topo.switches.clone() {
            all.extend(self.flows(dpid)?.into_iter().map(|f| (dpid, f)));
        }
        Ok(all)
    }

    /// The flow of `flows` (one switch's) that carries `src`'s traffic to `dst` arriving
    /// at `in_port`: a path flow matching in port and both MACs, or on the pipeline the
    /// forwarding entry toward `dst` (table 2), which every sender sharing a slice uses.
    pub(super) fn path_flow<'f>(
        &self,
        flows: &'f [Flow],
        src: u8,
        dst: u8,
        in_port: u32,
    ) -> Option<&'f Flow> {
        let (src_mac, dst_mac) = (net::mac(src), net::mac(dst));
        if self.runs_pipeline() {
            flows.iter().find(|f| {
                f.field("table") == Some("2") && f.field("dl_dst") == Some(&dst_mac) && !f.drops()
            })
        } else {
            flows.iter().find(|f| {
                f.is_path(&src_mac, &dst_mac) && f.field("in_port") == Some(&in_port.to_string())
            })
        }
    }

    /// The path from host `src` to host `dst` is in place: on each switch given as
    /// (dpid, in port, out port), a priority-100 flow matching in port and both MACs,
    /// with an idle timeout, that outputs to the out port. On the pipeline: an entry
    /// that admits `src` at its port (the first hop) or what arrives at the link's port
    /// (the others), and a forwarding entry toward `dst` that outputs to the out port.
    pub(super) fn expect_path(
        &mut self,
        src: u8,
        dst: u8,
        hops: &[(u64, u32, u32)],
    ) -> anyhow::Result<()> {
        let pipeline = self.runs_pipeline();
        for (index, &(dpid, in_port, out_port)) in hops.iter().enumerate() {
            let flows = self.flows(dpid)?;
            let Some(flow) = self.path_flow(&flows, src, dst, in_port) else {
                bail!(
                    "no path flow h{src}->h{dst} with in_port={in_port} on s{dpid}; its flows:\n{}",
                    lines(&flows)
                );
            };
            ensure!(
                flow.priority == 100 && flow.outputs() == vec![out_port],
                "path flow h{src}->h{dst} on s{dpid} is not priority 100 output:{out_port}: {}",
                flow.line
            );
            if pipeline {
                let src_mac = net::mac(src);
                let port = in_port.to_string();
                let admitted = flows.iter().any(|f| {
                    f.field("table").is_none()
                        && f.field("in_port") == Some(port.as_str())
                        && if index == 0 {
                            f.field("dl_src") == Some(src_mac.as_str())
                                && f.actions.contains("goto_table:2")
                        } else {
                            f.field("dl_src").is_none() && f.actions.contains("goto_table:1")
                        }
                });
                ensure!(
                    admitted,
                    "nothing admits h{src}'s frames at in_port={in_port} of s{dpid}; its flows:\n{}",
                    lines(&flows)
                );
            } else {
                ensure!(
                    flow.field("idle_timeout").is_some_and(|t| t != "0"),
                    "path flow h{src}->h{dst} on s{dpid} has no idle timeout: {}",
                    flow.line
                );
            }
        }
        let route: Vec<String> = hops
            .iter()
            .map(|(d, i, o)| format!("s{d}:{i}->{o}"))
            .collect();
        self.step(format!("path flows h{src}->h{dst}: {}", route.join(" ")));
        Ok(())
    }

    /// Within the withdrawal deadline, no switch holds any flow for these hosts' MACs but
    /// drop flows (the controller's answer to a withdrawn host that keeps sending).
    pub(super) fn expect_no_flows(&mut self, hosts: &[u8]) -> anyhow::Result<()> {
        let macs: Vec<String> = hosts.iter().map(|h| net::mac(*h)).collect();
        let started = Instant::now();
        loop {
            let left: Vec<(u64, Flow)> = self
                .all_flows()?
                .into_iter()
                .filter(|(_, f)| macs.iter().any(|m| f.mentions(m)) && !f.drops())
                .collect();
            if left.is_empty() {
                self.step(format!(
                    "no flow for {} after {} ms",
                    macs.join(" "),
                    started.elapsed().as_millis()
                ));
                return Ok(());
            }
            if started.elapsed() > WITHDRAW_DEADLINE {
                bail!(
                    "flows for {} still there {} ms after the change:\n{}",
                    macs.join(" "),
                    started.elapsed().as_millis(),
                    left.iter()
                        .map(|(d, f)| format!("  s{d}: {}", f.line))
                        .collect::<Vec<_>>()
                        .join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// No switch forwards anything for these MACs (drop flows are allowed: they are how
    /// the controller silences a sender that shares no slice with the receiver).
    pub(super) fn expect_no_forwarding(&mut self, hosts: &[u8]) -> anyhow::Result<()> {
        let macs: Vec<String> = hosts.iter().map(|h| net::mac(*h)).collect();
        let forwarding: Vec<String> = self
            .all_flows()?
            .into_iter()
            .filter(|(_, f)| macs.iter().any(|m| f.mentions(m)) && !f.drops())
            .map(|(d, f)| format!("  s{d}: {}", f.line))
            .collect();
        ensure!(
            forwarding.is_empty(),
            "flows still forward for {}:\n{}",
            macs.join(" "),
            forwarding.join("\n")
        );
        self.step(format!("nothing forwards for {}", macs.join(" ")));
        Ok(())
    }

    /// Starts tcpdump in a host.
    pub(super) fn capture(&mut self, host: u8) -> anyhow::Result<Capture> {
        self.step(format!("tcpdump in h{host}"));
        let dir = self.dir.clone();
        self.net()?.capture(host, &dir)
    }

    /// Runs this xtask's `lldp` command (see `lldp.rs`) inside host `host`'s namespace,
    /// as an attacker on that host would send or capture frames; returns its output.
    pub(super) fn attack(&mut self, host: u8, args: &[&str]) -> anyhow::Result<String> {
        self.step(format!("h{host} attacks: lldp {}", args.join(" ")));
        let exe = std::env::current_exe().context("the xtask binary's path")?;
        let ns = self.net()?.namespace(host);
        let exe = exe.display().to_string();
        let mut command = super::sys::command("ip", &["netns", "exec", &ns, &exe, "lldp"]);
        command.args(args);
        super::sys::run(&mut command)
    }

    /// Cuts (or restores) the cable at a switch port.
    pub(super) fn set_port(&mut self, port: Port, up: bool) -> anyhow::Result<()> {
        self.step(format!("set {port} {}", if up { "up" } else { "down" }));
        self.net()?.set_port(port, up)
    }

    /// What a failing scenario prints: sliced's log tail and every bridge's flows.
    pub(super) fn diagnose(&self) -> String {
        let mut out = String::new();
        for ctl in &self.controllers {
            out.push_str(&format!(
                "--- sliced log (last 40 lines of {}):\n{}\n",
                ctl.log_path().display(),
                ctl.log_tail(40)
            ));
            for view in ["/topology/links", "/paths"] {
                match ctl.request("GET", view, None) {
                    Ok((status, body)) => {
                        out.push_str(&format!("--- GET {view}: {status} {body}\n"))
                    }
                    Err(err) => out.push_str(&format!("--- GET {view}: {err:#}\n")),
                }
            }
        }
        out.push_str(&format!(
            "--- ovs-vswitchd warnings during this run (last 15):\n{}\n",
            self.lab.ovs.vswitchd_warnings(self.ovs_log_mark, 15)
        ));
        if let Some(net) = &self.net {
            for (dpid, bridge) in net.bridges() {
                let dump = self
                    .lab
                    .ovs
                    .ofctl(self.version, &["dump-flows", &bridge])
                    .unwrap_or_else(|err| format!("{err:#}"));
                out.push_str(&format!(
                    "--- ovs-ofctl -O {} dump-flows {bridge} (s{dpid}):\n{}\n",
                    self.version.ovs_name(),
                    dump.trim_end()
                ));
            }
        }
        out
    }
}

fn lines(flows: &[Flow]) -> String {
    if flows.is_empty() {
        return "  (none)".into();
    }
    flows
        .iter()
        .map(|f| format!("  {}", f.line))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Writes a file only its owner may read, as sliced requires of secrets.
fn write_private(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(contents)
        .with_context(|| format!("cannot write {}", path.display()))
}

//! Topologies: a short text description, and the network built from it on the private
//! Open vSwitch (bridges) and network namespaces (hosts), joined by veth pairs.
//!
//! The description is a list of words separated by white space:
//!
//! - `h3=s2:1`: host 3 is plugged into port 1 of the switch with datapath id 2. Host N
//!   has the MAC address 00:00:00:00:00:NN (hex) and the address 10.0.0.N/24.
//! - `s1:2-s2:2`: port 2 of switch 1 is cabled to port 2 of switch 2.
//! - `s4`: a switch, for one that has neither hosts nor links.
//!
//! Port numbers are OpenFlow port numbers: the lab asks Open vSwitch for exactly these
//! (`ofport_request`), so the slice port names (`0x2:1`) follow from the description.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::str::FromStr;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{bail, ensure, Context};

use super::ovs::{OfVersion, Ovs};
use super::sys::{self, Daemon};

/// A switch port: datapath id and OpenFlow port number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct Port {
    pub dpid: u64,
    pub port: u32,
}

impl Port {
    /// The name slices use: `0x<hex dpid>:<port>`.
    pub(super) fn slice_name(self) -> String {
        format!("{:#x}:{}", self.dpid, self.port)
    }
}

impl std::fmt::Display for Port {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "s{}:{}", self.dpid, self.port)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Topo {
    pub switches: BTreeSet<u64>,
    /// Host number to the port it is plugged into.
    pub hosts: BTreeMap<u8, Port>,
    pub links: Vec<(Port, Port)>,
}

impl FromStr for Topo {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> anyhow::Result<Topo> {
        let mut topo = Topo {
            switches: BTreeSet::new(),
            hosts: BTreeMap::new(),
            links: Vec::new(),
        };
        let mut used = BTreeSet::new();
        let mut use_port = |port: Port, what: &str| -> anyhow::Result<()> {
            ensure!(used.insert(port), "port {port} is used twice (by {what})");
            Ok(())
        };
        for word in text.split_whitespace() {
            if let Some((host, port)) = word.split_once('=') {
                let number: u8 = host
                    .strip_prefix('h')
                    .and_then(|n| n.parse().ok())
                    .filter(|n| (1..=254).contains(n))
                    .with_context(|| {
                        format!("bad host {host:?} in {word:?}: expected h1 to h254")
                    })?;
                let port = parse_port(port).with_context(|| format!("in {word:?}"))?;
                use_port(port, word)?;
                ensure!(
                    topo.hosts.insert(number, port).is_none(),
                    "host h{number} is plugged in twice"
                );
                topo.switches.insert(port.dpid);
            } else if let Some((a, b)) = word.split_once('-') {
                let a = parse_port(a).with_context(|| format!("in {word:?}"))?;
                let b = parse_port(b).with_context(|| format!("in {word:?}"))?;
                ensure!(
                    a.dpid != b.dpid,
                    "link {word:?} loops back to its own switch"
                );
                use_port(a, word)?;
                use_port(b, word)?;
                topo.switches.extend([a.dpid, b.dpid]);
                topo.links.push((a, b));
            } else {
                topo.switches.insert(parse_switch(word)?);
            }
        }
        ensure!(!topo.switches.is_empty(), "a topology needs a switch");
        Ok(topo)
    }
}

fn parse_switch(word: &str) -> anyhow::Result<u64> {
    word.strip_prefix('s')
        .and_then(|n| n.parse().ok())
        .filter(|n| (1..=999).contains(n))
        .with_context(|| format!("bad switch {word:?}: expected s1 to s999"))
}

fn parse_port(word: &str) -> anyhow::Result<Port> {
    let (switch, port) = word
        .split_once(':')
        .with_context(|| format!("bad port {word:?}: expected s<dpid>:<port>"))?;
    let port: u32 = port
        .parse()
        .ok()
        .filter(|p| (1..=999).contains(p))
        .with_context(|| format!("bad port number in {word:?}: expected 1 to 999"))?;
    Ok(Port {
        dpid: parse_switch(switch)?,
        port,
    })
}

pub(super) fn mac(host: u8) -> String {
    format!("00:00:00:00:00:{host:02x}")
}

pub(super) fn ipv4(host: u8) -> String {
    format!("10.0.0.{host}")
}

/// How the bridges are run.
#[derive(Debug, Clone)]
pub(super) enum Mode {
    /// `fail-mode=secure`, one OpenFlow version, controlled by sliced on these ports (one
    /// per instance of a cluster, each switch connected to all of them), over TLS
    /// (`ssl:`, with the certificates of `set-ssl`) or plain TCP.
    Controlled {
        version: OfVersion,
        ports: Vec<u16>,
        tls: bool,
    },
    /// `fail-mode=standalone` without a controller: a learning switch (the self-check).
    Standalone,
}

/// A topology built for real. Dropping it removes bridges, veths and namespaces.
pub(super) struct Net<'o> {
    ovs: &'o Ovs,
    prefix: String,
    pub topo: Topo,
    bridges: Vec<String>,
    namespaces: Vec<String>,
    interfaces: Vec<String>,
}

impl<'o> Net<'o> {
    pub(super) fn build(
        ovs: &'o Ovs,
        prefix: &str,
        topo: &Topo,
        mode: Mode,
    ) -> anyhow::Result<Net<'o>> {
        let mut net = Net {
            ovs,
            prefix: prefix.to_owned(),
            topo: topo.clone(),
            bridges: Vec::new(),
            namespaces: Vec::new(),
            interfaces: Vec::new(),
        };
        for (&host, &port) in &topo.hosts {
            net.add_host(host, port)?;
        }
        for &(a, b) in &topo.links {
            net.add_link(a, b)?;
        }
        net.add_bridges(mode)?;
        Ok(net)
    }

    pub(super) fn bridge(&self, dpid: u64) -> String {
        format!("{}s{dpid}", self.prefix)
    }

    pub(super) fn interface(&self, port: Port) -> String {
        format!("{}s{}p{}", self.prefix, port.dpid, port.port)
    }

    pub(super) fn namespace(&self, host: u8) -> String {
        format!("{}h{host}", self.prefix)
    }

    pub(super) fn bridges(&self) -> impl Iterator<Item = (u64, String)> + '_ {
        self.topo
            .switches
            .iter()
            .map(|&dpid| (dpid, self.bridge(dpid)))
    }

    pub(super) fn host_port(&self, host: u8) -> anyhow::Result<Port> {
        self.topo
            .hosts
            .get(&host)
            .copied()
            .with_context(|| format!("the topology has no host h{host}"))
    }

    /// A namespace with IPv6 off (no router solicitations), its end of a veth pair as
    /// `eth0` with the host's addresses, the other end on the switch side, up.
    fn add_host(&mut self, host: u8, port: Port) -> anyhow::Result<()> {
        let ns = self.namespace(host);
        let outside = self.interface(port);
        check_name(&outside)?;
        self.namespaces.push(ns.clone());
        ip(&["netns", "add", &ns])?;
        sys::run(&mut sys::command(
            "ip",
            &[
                "netns",
                "exec",
                &ns,
                "sysctl",
                "-q",
                "-w",
                "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1",
            ],
        ))?;
        self.interfaces.push(outside.clone());
        let mac = mac(host);
        ip(&[
            "link", "add", &outside, "type", "veth", "peer", "name", "eth0", "address", &mac,
            "netns", &ns,
        ])?;
        disable_ipv6(&outside);
        let address = format!("{}/24", ipv4(host));
        ip(&["-n", &ns, "addr", "add", &address, "dev", "eth0"])?;
        ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
        // The userspace datapath reads frames off the veth with a packet socket and does
        // not complete checksums that the sender left to "hardware": without this, TCP
        // between hosts fails (ARP and ping are unaffected).
        sys::run(&mut sys::command(
            "ip",
            &["netns", "exec", &ns, "ethtool", "-K", "eth0", "tx", "off"],
        ))?;
        ip(&["link", "set", &outside, "up"])?;
        Ok(())
    }

    fn add_link(&mut self, a: Port, b: Port) -> anyhow::Result<()> {
        let (a, b) = (self.interface(a), self.interface(b));
        check_name(&a)?;
        check_name(&b)?;
        self.interfaces.push(a.clone());
        self.interfaces.push(b.clone());
        ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])?;
        for end in [&a, &b] {
            disable_ipv6(end);
            ip(&["link", "set", end, "up"])?;
        }
        Ok(())
    }

    /// All bridges with their ports in one ovs-vsctl transaction, then a check that every
    /// interface got the port number asked for.
    fn add_bridges(&mut self, mode: Mode) -> anyhow::Result<()> {
        let mut ports: BTreeMap<u64, Vec<Port>> = BTreeMap::new();
        for port in self.topo.hosts.values() {
            ports.entry(port.dpid).or_default().push(*port);
        }
        for (a, b) in &self.topo.links {
            ports.entry(a.dpid).or_default().push(*a);
            ports.entry(b.dpid).or_default().push(*b);
        }
        let mut args: Vec<String> = Vec::new();
        let mut push = |words: &[&str]| args.extend(words.iter().map(|w| (*w).to_owned()));
        for &dpid in &self.topo.switches {
            let bridge = self.bridge(dpid);
            check_name(&bridge)?;
            self.bridges.push(bridge.clone());
            let dpid_setting = format!("other-config:datapath-id={dpid:016x}");
            push(&["--", "add-br", &bridge]);
            push(&[
                "--",
                "set",
                "bridge",
                &bridge,
                "datapath_type=netdev",
                &dpid_setting,
            ]);
            // No hidden in-band flows: the controller is on loopback.
            push(&["other-config:disable-in-band=true"]);
            match &mode {
                Mode::Controlled {
                    version,
                    ports,
                    tls,
                } => {
                    let protocols = format!("protocols={}", version.ovs_name());
                    let scheme = if *tls { "ssl" } else { "tcp" };
                    push(&["fail-mode=secure", &protocols]);
                    // One Controller record per instance, each retrying a lost
                    // controller every second rather than backing off to 8 s.
                    let ids: Vec<String> = (0..ports.len())
                        .map(|at| format!("@ctl{dpid}x{at}"))
                        .collect();
                    for (id, port) in ids.iter().zip(ports) {
                        let target = format!("target=\"{scheme}:127.0.0.1:{port}\"");
                        push(&["--", &format!("--id={id}"), "create", "controller"]);
                        push(&[&target, "max_backoff=1000"]);
                    }
                    let controllers = format!("controller=[{}]", ids.join(","));
                    push(&["--", "set", "bridge", &bridge, &controllers]);
                }
                Mode::Standalone => push(&["fail-mode=standalone"]),
            }
            for port in ports.get(&dpid).into_iter().flatten() {
                let interface = self.interface(*port);
                let request = format!("ofport_request={}", port.port);
                push(&["--", "add-port", &bridge, &interface]);
                push(&["--", "set", "interface", &interface, &request]);
            }
        }
        self.ovs.vsctl(&args)?;

        let listing = self.ovs.vsctl(&[
            "--format=csv",
            "--no-headings",
            "--columns=name,ofport",
            "list",
            "Interface",
        ])?;
        let got: BTreeMap<&str, &str> = listing
            .lines()
            .filter_map(|line| line.split_once(','))
            .map(|(name, ofport)| (name.trim_matches('"'), ofport.trim()))
            .collect();
        for port in ports.values().flatten() {
            let interface = self.interface(*port);
            let ofport = got.get(interface.as_str()).copied().unwrap_or("none");
            ensure!(
                ofport == port.port.to_string(),
                "Open vSwitch gave {interface} port number {ofport}, not {} as asked",
                port.port
            );
        }
        Ok(())
    }

    /// `ping -c 1 -W 1` from one host to another: true when a reply came back.
    pub(super) fn ping(&self, from: u8, to: u8) -> anyhow::Result<bool> {
        sys::succeeds(&mut self.ping_command(from, to))
    }

    /// One ping for each pair, all at once; true where a reply came back.
    pub(super) fn ping_all(&self, pairs: &[(u8, u8)]) -> anyhow::Result<Vec<bool>> {
        let mut children = Vec::new();
        sys::park_if_interrupted();
        for &(from, to) in pairs {
            let mut command = self.ping_command(from, to);
            command
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            children.push(
                command
                    .spawn()
                    .with_context(|| format!("cannot start `{}`", sys::describe(&command)))?,
            );
        }
        children
            .into_iter()
            .map(|mut child| Ok(child.wait()?.success()))
            .collect()
    }

    fn ping_command(&self, from: u8, to: u8) -> std::process::Command {
        let ns = self.namespace(from);
        let target = ipv4(to);
        sys::command(
            "ip",
            &[
                "netns", "exec", &ns, "ping", "-n", "-q", "-c", "1", "-W", "1", &target,
            ],
        )
    }

    /// `count` pings from one host to another, one every `interval`, in the background,
    /// their summary written to `output`: [`ping_summary`] reads it once it exits.
    pub(super) fn ping_stream(
        &self,
        from: u8,
        to: u8,
        interval: Duration,
        count: u32,
        output: &Path,
    ) -> anyhow::Result<Daemon> {
        let ns = self.namespace(from);
        let (interval, count, target) = (
            format!("{:.3}", interval.as_secs_f64()),
            count.to_string(),
            ipv4(to),
        );
        let mut command = sys::command(
            "ip",
            &[
                "netns", "exec", &ns, "ping", "-n", "-q", "-i", &interval, "-c", &count, "-W", "1",
                &target,
            ],
        );
        Daemon::spawn_logged(&mut command, "ping", output)
    }

    /// A permanent ARP entry in `host` for `other`, so that traffic to it is unicast.
    pub(super) fn pin_neighbour(&self, host: u8, other: u8) -> anyhow::Result<()> {
        let ns = self.namespace(host);
        ip(&[
            "-n",
            &ns,
            "neigh",
            "replace",
            &ipv4(other),
            "lladdr",
            &mac(other),
            "dev",
            "eth0",
            "nud",
            "permanent",
        ])
    }

    /// Permanent ARP entries in `host` for each of `others` (with `pin`), or none at all
    /// for them (without): one `ip -batch` per host, through a file in `scratch`.
    pub(super) fn set_neighbours(
        &self,
        host: u8,
        others: &[u8],
        pin: bool,
        scratch: &Path,
    ) -> anyhow::Result<()> {
        if others.is_empty() {
            return Ok(());
        }
        let lines: Vec<String> = others
            .iter()
            .map(|&other| {
                if pin {
                    format!(
                        "neigh replace {} lladdr {} dev eth0 nud permanent",
                        ipv4(other),
                        mac(other)
                    )
                } else {
                    format!("neigh del {} dev eth0", ipv4(other))
                }
            })
            .collect();
        let file = scratch.join(format!("neighbours-h{host}.batch"));
        std::fs::write(&file, lines.join("\n") + "\n")
            .with_context(|| format!("cannot write {}", file.display()))?;
        let ns = self.namespace(host);
        let file = file.display().to_string();
        if pin {
            ip(&["-n", &ns, "-batch", &file])
        } else {
            // Nothing to forget is fine: `-force` goes on past a missing entry.
            sys::output(&mut sys::command(
                "ip",
                &["-n", &ns, "-force", "-batch", &file],
            ))
            .map(drop)
        }
    }

    /// Forgets every neighbour `host` knows, so that its next packet to anyone starts
    /// with an ARP request.
    pub(super) fn flush_neighbours(&self, host: u8) -> anyhow::Result<()> {
        let ns = self.namespace(host);
        ip(&["-n", &ns, "neigh", "flush", "dev", "eth0"])
    }

    /// How long `host` waits before it asks again for an address ARP did not resolve
    /// (Linux's default is a second).
    pub(super) fn set_arp_retransmit(&self, host: u8, every: Duration) -> anyhow::Result<()> {
        let ns = self.namespace(host);
        let millis = every.as_millis().to_string();
        ip(&[
            "-n",
            &ns,
            "ntable",
            "change",
            "name",
            "arp_cache",
            "dev",
            "eth0",
            "retrans",
            &millis,
        ])
    }

    /// Forgets what `host` knows of `other`'s MAC address.
    pub(super) fn forget_neighbour(&self, host: u8, other: u8) -> anyhow::Result<()> {
        let ns = self.namespace(host);
        // Nothing to forget is fine.
        sys::output(&mut sys::command(
            "ip",
            &["-n", &ns, "neigh", "del", &ipv4(other), "dev", "eth0"],
        ))?;
        Ok(())
    }

    /// Sets the switch-side interface of a port up or down (a cut cable on a veth link:
    /// its peer loses carrier too).
    pub(super) fn set_port(&self, port: Port, up: bool) -> anyhow::Result<()> {
        let interface = self.interface(port);
        ip(&["link", "set", &interface, if up { "up" } else { "down" }])
    }

    /// The other end of the link at `port`, if a link is there.
    pub(super) fn peer(&self, port: Port) -> Option<Port> {
        self.topo.links.iter().find_map(|&(a, b)| {
            if a == port {
                Some(b)
            } else if b == port {
                Some(a)
            } else {
                None
            }
        })
    }

    /// Starts tcpdump on a host's interface, capturing what the host receives.
    pub(super) fn capture(&self, host: u8, dir: &Path) -> anyhow::Result<Capture> {
        Capture::start(&self.namespace(host), host, dir)
    }
}

impl Drop for Net<'_> {
    fn drop(&mut self) {
        sys::park_if_interrupted();
        let mut problems = Vec::new();
        if !self.bridges.is_empty() {
            let mut args = Vec::new();
            for bridge in &self.bridges {
                args.extend(["--", "--if-exists", "del-br", bridge.as_str()]);
            }
            if let Err(err) = self.ovs.vsctl(&args) {
                problems.push(format!("{err:#}"));
            }
        }
        for interface in &self.interfaces {
            // Deleting one end of a veth pair deletes both, so the second may be gone.
            let _ = sys::output(&mut sys::command("ip", &["link", "del", interface]));
        }
        for ns in &self.namespaces {
            if let Err(err) = ip(&["netns", "del", ns]) {
                problems.push(format!("{err:#}"));
            }
        }
        for problem in problems {
            eprintln!("lab: teardown: {problem}");
        }
    }
}

/// A packet capture in a host's namespace (tcpdump), stopped when dropped.
pub(super) struct Capture {
    daemon: Daemon,
    file: PathBuf,
    stderr: Option<std::thread::JoinHandle<String>>,
    pub host: u8,
}

/// One frame seen by a capture, as tcpdump prints it with `-e -n -t`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Seen {
    pub src: String,
    pub dst: String,
    pub line: String,
}

impl Capture {
    fn start(ns: &str, host: u8, dir: &Path) -> anyhow::Result<Capture> {
        let file = dir.join(format!("capture-h{host}.txt"));
        let out = std::fs::File::create(&file)
            .with_context(|| format!("cannot create {}", file.display()))?;
        let mut command = sys::command(
            "ip",
            &[
                "netns",
                "exec",
                ns,
                "tcpdump",
                "-i",
                "eth0",
                "-Q",
                "in",
                "-n",
                "-e",
                "-t",
                "-l",
                "--immediate-mode",
            ],
        );
        command
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(Stdio::piped());
        let mut daemon = Daemon::spawn(&mut command, &format!("tcpdump in h{host}"))?;
        let stderr = daemon.stderr().context("tcpdump has no stderr pipe")?;
        // tcpdump says "listening on eth0" once the capture runs; wait for that line, and
        // keep the rest of what it says for error messages.
        let (ready_tx, ready_rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut said = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("listening on") {
                    let _ = ready_tx.send(());
                }
                said.push_str(&line);
                said.push('\n');
            }
            said
        });
        if ready_rx.recv_timeout(Duration::from_secs(5)).is_err() {
            daemon.stop(libc::SIGKILL, Duration::ZERO);
            let said = reader.join().unwrap_or_default();
            bail!("tcpdump in h{host} did not start: {}", said.trim());
        }
        Ok(Capture {
            daemon,
            file,
            stderr: Some(reader),
            host,
        })
    }

    /// Stops the capture and returns the frames it saw.
    pub(super) fn finish(mut self) -> anyhow::Result<Vec<Seen>> {
        // Let frames in flight land before stopping.
        std::thread::sleep(Duration::from_millis(100));
        self.daemon.stop(libc::SIGINT, Duration::from_secs(2));
        if let Some(reader) = self.stderr.take() {
            let _ = reader.join();
        }
        let text = std::fs::read_to_string(&self.file)
            .with_context(|| format!("cannot read {}", self.file.display()))?;
        Ok(text.lines().filter_map(parse_seen).collect())
    }
}

fn parse_seen(line: &str) -> Option<Seen> {
    // `00:00:00:00:00:01 > ff:ff:ff:ff:ff:ff, ethertype ARP (0x0806), length 42: ...`
    let mut words = line.split_whitespace();
    let src = words.next()?;
    if words.next()? != ">" {
        return None;
    }
    let dst = words.next()?.trim_end_matches(',');
    Some(Seen {
        src: src.to_owned(),
        dst: dst.to_owned(),
        line: line.to_owned(),
    })
}

/// Runs `ip` with these arguments.
/// (transmitted, received) from ping's summary line
/// (`500 packets transmitted, 500 received, 0% packet loss, time 9980ms`).
pub(super) fn ping_summary(output: &str) -> Option<(u32, u32)> {
    let line = output
        .lines()
        .find(|line| line.contains("packets transmitted"))?;
    let mut numbers = line
        .split(',')
        .map(|part| part.split_whitespace().next()?.parse::<u32>().ok());
    Some((numbers.next()??, numbers.next()??))
}

fn ip(args: &[&str]) -> anyhow::Result<()> {
    sys::run(&mut sys::command("ip", args)).map(drop)
}

/// Interface names are at most 15 bytes (IFNAMSIZ minus the NUL).
fn check_name(name: &str) -> anyhow::Result<()> {
    ensure!(
        name.len() <= 15,
        "interface name {name} is longer than 15 characters; use smaller numbers"
    );
    Ok(())
}

/// Turns IPv6 off on a root-namespace interface before it comes up, so that the kernel
/// sends no router solicitations or MLD reports into the switches.
fn disable_ipv6(interface: &str) {
    // Absent when the kernel has no IPv6, which is just as good.
    let _ = std::fs::write(
        format!("/proc/sys/net/ipv6/conf/{interface}/disable_ipv6"),
        "1",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pings_summary() {
        let output =
            "PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data.\n\n--- 10.0.0.2 ping statistics ---\n\
                      500 packets transmitted, 498 received, 0.4% packet loss, time 10012ms\n\
                      rtt min/avg/max/mdev = 0.030/0.071/1.220/0.060 ms\n";
        assert_eq!(ping_summary(output), Some((500, 498)));
        assert_eq!(
            ping_summary("3 packets transmitted, 0 received, +3 errors, 100% packet loss"),
            Some((3, 0))
        );
        assert_eq!(ping_summary("ping: connect: Network is unreachable"), None);
    }

    #[test]
    fn parses_a_description() -> anyhow::Result<()> {
        let topo: Topo = "h1=s1:1 h2=s2:1 s1:2-s2:2 s3".parse()?;
        assert_eq!(topo.switches, BTreeSet::from([1, 2, 3]));
        assert_eq!(topo.hosts[&2], Port { dpid: 2, port: 1 });
        assert_eq!(
            topo.links,
            vec![(Port { dpid: 1, port: 2 }, Port { dpid: 2, port: 2 })]
        );
        assert_eq!(Port { dpid: 26, port: 3 }.slice_name(), "0x1a:3");
        Ok(())
    }

    #[test]
    fn rejects_bad_descriptions() {
        for bad in [
            "",
            "h1=s1:1 h2=s1:1",
            "h1=s1:1 h1=s2:1",
            "h0=s1:1",
            "x1",
            "s1:1-s1:2",
            "h1=s1",
            "s1:0-s2:1",
        ] {
            assert!(bad.parse::<Topo>().is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn addresses_follow_the_host_number() {
        assert_eq!(mac(10), "00:00:00:00:00:0a");
        assert_eq!(ipv4(10), "10.0.0.10");
    }

    #[test]
    fn reads_tcpdump_lines() {
        let seen = parse_seen(
            "00:00:00:00:00:01 > ff:ff:ff:ff:ff:ff, ethertype ARP (0x0806), length 42: Request",
        );
        assert_eq!(
            seen.map(|s| (s.src, s.dst)),
            Some(("00:00:00:00:00:01".into(), "ff:ff:ff:ff:ff:ff".into()))
        );
        assert!(parse_seen("tcpdump: listening on eth0").is_none());
    }
}

//! A network namespace with an Open vSwitch of its own (ovsdb-server and a userspace
//! ovs-vswitchd on a database, sockets and logs in the run's directory), joined to the
//! bench's namespace by a veth pair so that sliced, outside, is the bridges' controller.
//! The system's Open vSwitch, if any, is never touched: every command names this
//! instance's sockets. Dropping the lab stops both daemons and deletes the namespace,
//! which takes the veth pair, the datapath's taps and every bridge port with it.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::counter::Counter;
use crate::procs::{self, Server};

/// Where Debian's openvswitch-common keeps the database schema.
const PKGDATADIR: &str = "/usr/share/openvswitch";
/// The programs the lab runs.
pub(crate) const PROGRAMS: [&str; 5] = [
    "ip",
    "ovsdb-tool",
    "ovsdb-server",
    "ovs-vswitchd",
    "ovs-vsctl",
];
/// Commands of one ovs-vsctl transaction when building: a tree's ~5,000 ports in one
/// command line would come near the kernel's limit on arguments.
const COMMANDS_PER_TRANSACTION: usize = 1500;
/// How long ovs-vsctl waits for ovs-vswitchd to apply a transaction.
const VSCTL_TIMEOUT_SECS: u64 = 600;

/// Why the lab cannot run here, if it cannot.
pub(crate) fn missing() -> Option<String> {
    let mut missing: Vec<String> = PROGRAMS
        .iter()
        .filter(|program| !procs::on_path(program))
        .map(|program| (*program).to_owned())
        .collect();
    let schema = Path::new(PKGDATADIR).join("vswitch.ovsschema");
    if !schema.is_file() {
        missing.push(schema.display().to_string());
    }
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        missing.push("root (for ip netns)".into());
    }
    (!missing.is_empty()).then(|| format!("missing: {}", missing.join(", ")))
}

/// A network namespace; deleted when dropped, with whatever is left in it.
struct Namespace(String);

impl Drop for Namespace {
    fn drop(&mut self) {
        let deleted = procs::output(Command::new("ip").args(["netns", "del", &self.0]));
        if let Err(err) = deleted {
            eprintln!(
                "sliced-bench: cannot delete the namespace {}: {err:#}",
                self.0
            );
        }
    }
}

/// The running lab.
pub(crate) struct Lab {
    dir: PathBuf,
    /// sliced's side of the veth pair: where the bridges find their controller.
    pub controller_ip: Ipv4Addr,
    // Field order is drop order: the switch daemon, its database, then the namespace.
    pub vswitchd: Server,
    _ovsdb: Server,
    namespace: Namespace,
}

impl Lab {
    /// Creates the namespace `sbft<pid>`, the veth pair and both daemons in `dir`.
    pub(crate) fn start(dir: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        sweep_abandoned();
        let pid = std::process::id();
        let name = format!("sbft{pid}");
        run(Command::new("ip").args(["netns", "add", &name]))?;
        let namespace = Namespace(name.clone());
        run(Command::new("ip").args(["-n", &name, "link", "set", "lo", "up"]))?;
        // A link-local /30 per bench process, so that two runs at once do not collide.
        let octet = (pid % 250 + 2) as u8;
        let controller_ip = Ipv4Addr::new(169, 254, octet, 1);
        let switch_ip = Ipv4Addr::new(169, 254, octet, 2);
        let (outside, inside) = (format!("sbft{pid}o"), format!("sbft{pid}i"));
        run(Command::new("ip").args([
            "link", "add", &outside, "type", "veth", "peer", "name", &inside, "netns", &name,
        ]))?;
        run(Command::new("ip").args([
            "addr",
            "add",
            &format!("{controller_ip}/30"),
            "dev",
            &outside,
        ]))?;
        run(Command::new("ip").args(["link", "set", &outside, "up"]))?;
        run(Command::new("ip").args([
            "-n",
            &name,
            "addr",
            "add",
            &format!("{switch_ip}/30"),
            "dev",
            &inside,
        ]))?;
        run(Command::new("ip").args(["-n", &name, "link", "set", &inside, "up"]))?;

        let db_file = dir.join("conf.db");
        run(Command::new("ovsdb-tool")
            .arg("create")
            .arg(&db_file)
            .arg(Path::new(PKGDATADIR).join("vswitch.ovsschema")))?;
        let mut ovsdb = Server::spawn(
            "ovsdb-server",
            in_namespace(
                &name,
                dir,
                "ovsdb-server",
                &[
                    db_file.display().to_string(),
                    format!("--remote=punix:{}", dir.join("db.sock").display()),
                    format!("--unixctl={}", dir.join("ovsdb-server.ctl").display()),
                    "-vconsole:off".into(),
                    format!("--log-file={}", dir.join("ovsdb-server.log").display()),
                ],
            ),
            &dir.join("ovsdb-server.out"),
        )?;
        let db = db_target(dir);
        wait_until(Duration::from_secs(10), "ovsdb-server answers", || {
            if ovsdb.exited()? {
                bail!(
                    "ovsdb-server exited; see {}",
                    dir.join("ovsdb-server.log").display()
                );
            }
            Ok(procs::output(Command::new("ovs-vsctl").args([
                &db,
                "--no-wait",
                "--timeout=2",
                "init",
            ]))
            .is_ok())
        })?;
        let mut vswitchd = Server::spawn(
            "ovs-vswitchd",
            in_namespace(
                &name,
                dir,
                "ovs-vswitchd",
                &[
                    format!("unix:{}", dir.join("db.sock").display()),
                    format!("--unixctl={}", dir.join("ovs-vswitchd.ctl").display()),
                    "-vconsole:off".into(),
                    format!("--log-file={}", dir.join("ovs-vswitchd.log").display()),
                ],
            ),
            &dir.join("ovs-vswitchd.out"),
        )?;
        // ovs-vsctl waits for ovs-vswitchd to apply what it writes: once a no-op gets
        // through with the wait, the switch daemon reads the database.
        wait_until(
            Duration::from_secs(10),
            "ovs-vswitchd applies the database",
            || {
                if vswitchd.exited()? {
                    bail!(
                        "ovs-vswitchd exited; see {}",
                        dir.join("ovs-vswitchd.log").display()
                    );
                }
                Ok(procs::output(Command::new("ovs-vsctl").args([
                    &db,
                    "--timeout=2",
                    "set",
                    "Open_vSwitch",
                    ".",
                    "other_config:bench=1",
                ]))
                .is_ok())
            },
        )?;
        Ok(Self {
            dir: dir.to_owned(),
            controller_ip,
            vswitchd,
            _ovsdb: ovsdb,
            namespace,
        })
    }

    /// Runs `commands` (each an ovs-vsctl command's words) in as few transactions as the
    /// command line allows, each waited for until ovs-vswitchd has applied it.
    pub(crate) fn vsctl(&self, commands: &[Vec<String>]) -> anyhow::Result<()> {
        for chunk in commands.chunks(COMMANDS_PER_TRANSACTION) {
            let mut command = Command::new("ovs-vsctl");
            command
                .arg(db_target(&self.dir))
                .arg(format!("--timeout={VSCTL_TIMEOUT_SECS}"));
            for words in chunk {
                command.arg("--").args(words);
            }
            run(&mut command)?;
        }
        Ok(())
    }

    /// Brings the namespace's devices `names` up, in one `ip -batch`.
    pub(crate) fn links_up(&self, names: &[String]) -> anyhow::Result<()> {
        let batch = self.dir.join("links-up.batch");
        let text: String = names
            .iter()
            .map(|name| format!("link set {name} up\n"))
            .collect();
        std::fs::write(&batch, text)?;
        run(Command::new("ip")
            .args(["-n", &self.namespace.0, "-batch"])
            .arg(&batch))
    }

    /// A counter of bridge `bridge`'s flows, on its management socket.
    pub(crate) fn counter(&self, bridge: &str) -> anyhow::Result<Counter> {
        Counter::connect(&self.dir.join(format!("{bridge}.mgmt")))
    }
}

/// Removes what a run killed before its clean-up left: the namespaces `sbft<pid>` of
/// bench processes that are gone, and the processes still running in them.
fn sweep_abandoned() {
    let Ok(list) = procs::output(Command::new("ip").args(["netns", "list"])) else {
        return;
    };
    for name in list
        .lines()
        .filter_map(|line| line.split_whitespace().next())
    {
        let Some(owner) = name
            .strip_prefix("sbft")
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if Path::new(&format!("/proc/{owner}")).exists() {
            continue;
        }
        eprintln!("sliced-bench: removing the namespace {name} of an earlier run that was killed");
        if let Ok(pids) = procs::output(Command::new("ip").args(["netns", "pids", name])) {
            for pid in pids
                .split_whitespace()
                .filter_map(|pid| pid.parse::<libc::pid_t>().ok())
            {
                // SAFETY: kill(2) on a process that `ip netns pids` found in the abandoned
                // namespace: an Open vSwitch daemon of the killed run.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
        let _ = procs::output(Command::new("ip").args(["netns", "del", name]));
    }
}

fn db_target(dir: &Path) -> String {
    format!("--db=unix:{}", dir.join("db.sock").display())
}

/// `program` run inside the namespace with this instance's directories.
fn in_namespace(namespace: &str, dir: &Path, program: &str, args: &[String]) -> Command {
    let mut command = Command::new("ip");
    command
        .args(["netns", "exec", namespace, program])
        .args(args);
    for variable in ["OVS_RUNDIR", "OVS_DBDIR", "OVS_LOGDIR", "OVS_SYSCONFDIR"] {
        command.env(variable, dir);
    }
    command.env("OVS_PKGDATADIR", PKGDATADIR);
    procs::dies_with_parent(&mut command);
    command
}

fn run(command: &mut Command) -> anyhow::Result<()> {
    procs::output(command).map(drop)
}

fn wait_until(
    limit: Duration,
    what: &str,
    mut ready: impl FnMut() -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    while !ready()? {
        if Instant::now() > deadline {
            bail!("not ready within {} s: {what}", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

//! A private Open vSwitch: ovsdb-server and ovs-vswitchd on a database, sockets and logs
//! of their own in the run directory. The system's Open vSwitch (if any) is never used:
//! every command gets `--db` and the `OVS_*DIR` variables of this instance.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};

use super::sys::{self, Daemon};

/// Where Debian's openvswitch-common keeps the database schema.
const PKGDATADIR: &str = "/usr/share/openvswitch";

/// The OpenFlow version a bridge speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OfVersion {
    Of10,
    Of13,
}

impl OfVersion {
    pub(super) const ALL: [OfVersion; 2] = [OfVersion::Of10, OfVersion::Of13];

    /// The name Open vSwitch uses (`protocols=`, `ovs-ofctl -O`).
    pub(super) fn ovs_name(self) -> &'static str {
        match self {
            OfVersion::Of10 => "OpenFlow10",
            OfVersion::Of13 => "OpenFlow13",
        }
    }

    /// The version byte on the wire.
    pub(super) fn wire(self) -> u64 {
        match self {
            OfVersion::Of10 => 1,
            OfVersion::Of13 => 4,
        }
    }

    pub(super) fn short(self) -> &'static str {
        match self {
            OfVersion::Of10 => "OF1.0",
            OfVersion::Of13 => "OF1.3",
        }
    }

    pub(super) fn parse(text: &str) -> Option<OfVersion> {
        match text.to_ascii_lowercase().as_str() {
            "10" | "1.0" | "of10" | "of1.0" | "openflow10" => Some(OfVersion::Of10),
            "13" | "1.3" | "of13" | "of1.3" | "openflow13" => Some(OfVersion::Of13),
            _ => None,
        }
    }
}

/// The programs and files a private Open vSwitch needs.
pub(super) fn missing_parts() -> Vec<String> {
    let mut missing: Vec<String> = ["ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl"]
        .into_iter()
        .chain(["ovs-ofctl", "ovs-appctl"])
        .filter(|program| !sys::on_path(program))
        .map(str::to_owned)
        .collect();
    let schema = Path::new(PKGDATADIR).join("vswitch.ovsschema");
    if !schema.is_file() {
        missing.push(schema.display().to_string());
    }
    missing
}

/// A running private Open vSwitch. Dropping it stops both daemons.
pub(super) struct Ovs {
    dir: PathBuf,
    /// The network namespace both daemons and every command run in (`ip netns exec`),
    /// when not the lab's own.
    netns: Option<String>,
    // Field order is drop order: the switch daemon goes before its database.
    vswitchd: Daemon,
    ovsdb: Daemon,
}

impl Ovs {
    /// Creates a database in `dir` and starts both daemons on it.
    pub(super) fn start(dir: &Path) -> anyhow::Result<Ovs> {
        Self::start_in(dir, None)
    }

    /// [`Ovs::start`] inside the network namespace `netns`, as Open vSwitch runs in a
    /// container: its userspace datapath and the ports it opens are that namespace's.
    /// Not the lab's instance: the emergency clean-up stops it by pid and removes the
    /// namespace (and with it the datapath's tap).
    pub(super) fn start_in(dir: &Path, netns: Option<&str>) -> anyhow::Result<Ovs> {
        let command = |program: &str, args: &[String]| in_netns(netns, program, args);
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let db_file = dir.join("conf.db");
        let schema = Path::new(PKGDATADIR).join("vswitch.ovsschema");
        sys::run(&mut with_env(
            dir,
            command(
                "ovsdb-tool",
                &["create".into(), path_arg(&db_file), path_arg(&schema)],
            ),
        ))?;

        let mut ovsdb = Daemon::spawn(
            &mut quiet(with_env(
                dir,
                command(
                    "ovsdb-server",
                    &[
                        path_arg(&db_file),
                        format!("--remote=punix:{}", dir.join("db.sock").display()),
                        format!("--unixctl={}", dir.join("ovsdb-server.ctl").display()),
                        format!("--pidfile={}", dir.join("ovsdb-server.pid").display()),
                        format!("--log-file={}", dir.join("ovsdb-server.log").display()),
                        "-vconsole:off".into(),
                    ],
                ),
            )),
            "ovsdb-server",
        )?;
        // The database is usable once `init` gets through (it also creates the root row).
        let db = format!("--db=unix:{}", dir.join("db.sock").display());
        let ready = sys::poll(Duration::from_secs(10), Duration::from_millis(20), || {
            if let Some(status) = ovsdb.exited() {
                bail!(
                    "ovsdb-server exited at once ({status}); see {}/ovsdb-server.log",
                    dir.display()
                );
            }
            let init = &mut with_env(
                dir,
                command(
                    "ovs-vsctl",
                    &[
                        db.clone(),
                        "--no-wait".into(),
                        "--timeout=2".into(),
                        "init".into(),
                    ],
                ),
            );
            Ok(sys::succeeds(init)?.then_some(()))
        })?;
        if ready.is_none() {
            bail!(
                "ovsdb-server did not come up in 10 s; see {}/ovsdb-server.log",
                dir.display()
            );
        }

        // The userspace datapath owns a tap named `ovs-netdev`, one per network namespace:
        // a second userspace ovs-vswitchd (another lab, a benchmark, the system's own with
        // netdev bridges) would take it, and bridges would get no ports.
        if netns.is_none() && sys::link_exists(sys::NETDEV_TAP) {
            if let Some(pid) = sys::other_vswitchd() {
                bail!(
                    "another ovs-vswitchd (pid {pid}) runs a userspace datapath here (it holds \
                     the {} device); only one can run per network namespace, so stop it first",
                    sys::NETDEV_TAP
                );
            }
            sys::remove_orphan_datapath();
        }
        let mut vswitchd = Daemon::spawn(
            &mut quiet(with_env(
                dir,
                command(
                    "ovs-vswitchd",
                    &[
                        format!("unix:{}", dir.join("db.sock").display()),
                        format!("--unixctl={}", dir.join("ovs-vswitchd.ctl").display()),
                        format!("--pidfile={}", dir.join("ovs-vswitchd.pid").display()),
                        format!("--log-file={}", dir.join("ovs-vswitchd.log").display()),
                        "-vconsole:off".into(),
                    ],
                ),
            )),
            "ovs-vswitchd",
        )?;
        let ctl = dir.join("ovs-vswitchd.ctl");
        if netns.is_none() {
            sys::set_vswitchd_ctl(Some(ctl.clone()));
        }
        let ready = sys::poll(Duration::from_secs(10), Duration::from_millis(20), || {
            if let Some(status) = vswitchd.exited() {
                bail!(
                    "ovs-vswitchd exited at once ({status}); see {}/ovs-vswitchd.log",
                    dir.display()
                );
            }
            let version = &mut with_env(
                dir,
                command(
                    "ovs-appctl",
                    &["-t".into(), path_arg(&ctl), "version".into()],
                ),
            );
            Ok(sys::succeeds(version)?.then_some(()))
        })?;
        if ready.is_none() {
            bail!(
                "ovs-vswitchd did not come up in 10 s; see {}/ovs-vswitchd.log",
                dir.display()
            );
        }
        Ok(Ovs {
            dir: dir.to_owned(),
            netns: netns.map(str::to_owned),
            vswitchd,
            ovsdb,
        })
    }

    /// `ovs-vsctl` on this instance's database; waits (10 s at most) until ovs-vswitchd
    /// has applied the change.
    pub(super) fn vsctl<S: AsRef<str>>(&self, args: &[S]) -> anyhow::Result<String> {
        let db = format!("--db=unix:{}", self.dir.join("db.sock").display());
        let mut all = vec![db, "--timeout=10".to_owned()];
        all.extend(args.iter().map(|a| a.as_ref().to_owned()));
        sys::run(&mut self.command("ovs-vsctl", &all))
    }

    /// `ovs-ofctl -O <version>` on one bridge of this instance (through its management
    /// socket in the run directory), plain numbers rather than port names.
    pub(super) fn ofctl(&self, version: OfVersion, args: &[&str]) -> anyhow::Result<String> {
        let mut all = vec!["-O", version.ovs_name(), "--no-names"];
        all.extend_from_slice(args);
        sys::run(&mut self.command("ovs-ofctl", &all))
    }

    /// A command with this instance's environment.
    pub(super) fn command<S: AsRef<std::ffi::OsStr>>(&self, program: &str, args: &[S]) -> Command {
        with_env(&self.dir, in_netns(self.netns.as_deref(), program, args))
    }

    /// Shell lines that point the OVS tools at this instance, for an operator.
    pub(super) fn env_lines(&self) -> String {
        let dir = self.dir.display();
        format!(
            "export OVS_RUNDIR={dir} OVS_DBDIR={dir} OVS_LOGDIR={dir} OVS_SYSCONFDIR={dir} \
             OVS_PKGDATADIR={PKGDATADIR}\n  \
             then: ovs-vsctl --db=unix:{dir}/db.sock show; ovs-ofctl -O <version> dump-flows <bridge>"
        )
    }

    /// How long ovs-vswitchd's log is now, to read only what comes after.
    pub(super) fn log_mark(&self) -> usize {
        std::fs::metadata(self.dir.join("ovs-vswitchd.log"))
            .map(|m| usize::try_from(m.len()).unwrap_or(usize::MAX))
            .unwrap_or(0)
    }

    /// What ovs-vswitchd logged between two marks (`to` None: until now).
    pub(super) fn log_between(&self, from: usize, to: Option<usize>) -> anyhow::Result<String> {
        let log = self.dir.join("ovs-vswitchd.log");
        let bytes =
            std::fs::read(&log).with_context(|| format!("cannot read {}", log.display()))?;
        let end = to.unwrap_or(bytes.len()).min(bytes.len());
        let part = bytes.get(from.min(end)..end).unwrap_or_default();
        Ok(String::from_utf8_lossy(part).into_owned())
    }

    /// `ovs-appctl` on this instance's ovs-vswitchd (`vlog/set`).
    pub(super) fn appctl(&self, args: &[&str]) -> anyhow::Result<String> {
        let ctl = path_arg(&self.dir.join("ovs-vswitchd.ctl"));
        let mut all = vec!["--timeout=10", "-t", ctl.as_str()];
        all.extend_from_slice(args);
        sys::run(&mut self.command("ovs-appctl", &all))
    }

    /// The last `lines` warnings and errors ovs-vswitchd logged after `mark` (a stalled
    /// main loop shows here as "Unreasonably long ...ms poll interval").
    pub(super) fn vswitchd_warnings(&self, mark: usize, lines: usize) -> String {
        let log = self.dir.join("ovs-vswitchd.log");
        match std::fs::read(&log) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(bytes.get(mark..).unwrap_or_default());
                let warnings: Vec<&str> = text
                    .lines()
                    .filter(|l| l.contains("|WARN|") || l.contains("|ERR|") || l.contains("|EMER|"))
                    .collect();
                if warnings.is_empty() {
                    return "(none)".into();
                }
                warnings[warnings.len().saturating_sub(lines)..].join("\n")
            }
            Err(err) => format!("(cannot read {}: {err})", log.display()),
        }
    }

    pub(super) fn pids(&self) -> [(u32, &str); 2] {
        [
            (self.ovsdb.pid(), self.ovsdb.label()),
            (self.vswitchd.pid(), self.vswitchd.label()),
        ]
    }

    /// An error when a daemon of this instance has died.
    pub(super) fn check_running(&self) -> anyhow::Result<()> {
        for daemon in [&self.ovsdb, &self.vswitchd] {
            if !sys::alive(daemon.pid()) {
                bail!(
                    "{} died; see its log in {}",
                    daemon.label(),
                    self.dir.display()
                );
            }
        }
        Ok(())
    }
}

impl Drop for Ovs {
    /// `exit --cleanup` makes ovs-vswitchd delete its datapath and with it the taps of the
    /// bridges and `ovs-netdev`; a plain SIGTERM would leave them.
    fn drop(&mut self) {
        sys::park_if_interrupted();
        let ctl = self.dir.join("ovs-vswitchd.ctl");
        let mut exit = self.command("ovs-appctl", &["--timeout=5", "-t"]);
        exit.arg(&ctl).args(["exit", "--cleanup"]);
        if sys::output_always(&mut exit).is_ok_and(|out| out.status.success()) {
            sys::wait_gone(self.vswitchd.pid(), Duration::from_secs(5));
        }
        if self.netns.is_none() {
            sys::set_vswitchd_ctl(None);
        }
        // The daemons' own Drop stops whatever still runs.
    }
}

/// `program args`, or `ip netns exec <netns> program args` (which execs the program: the
/// pid spawned is the program's).
fn in_netns<S: AsRef<std::ffi::OsStr>>(netns: Option<&str>, program: &str, args: &[S]) -> Command {
    match netns {
        None => sys::command(program, args),
        Some(netns) => {
            let mut command = sys::command("ip", &["netns", "exec", netns, program]);
            command.args(args);
            command
        }
    }
}

fn path_arg(path: &Path) -> String {
    path.display().to_string()
}

/// Points a command at the instance in `dir`.
fn with_env(dir: &Path, mut command: Command) -> Command {
    for var in ["OVS_RUNDIR", "OVS_DBDIR", "OVS_LOGDIR", "OVS_SYSCONFDIR"] {
        command.env(var, dir);
    }
    command.env("OVS_PKGDATADIR", PKGDATADIR);
    command
}

fn quiet(mut command: Command) -> Command {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

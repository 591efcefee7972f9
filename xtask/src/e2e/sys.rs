//! Processes, signals and the clean-up of everything the lab creates.
//!
//! Every name the lab gives to a namespace or an interface starts with the run's prefix
//! (`sl` and four digits of the pid), and every file lives in the run directory. The
//! daemons it starts (Open vSwitch, sliced, tcpdump) are recorded here. Normal teardown is
//! done by the Drop guards of each part; on SIGINT or SIGTERM the handler below kills the
//! recorded processes, then removes whatever carries the prefix and the run directory.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

/// What the emergency clean-up has to remove.
struct Registry {
    prefix: Option<String>,
    run_dir: Option<PathBuf>,
    /// The control socket of the lab's ovs-vswitchd, while it runs.
    vswitchd_ctl: Option<PathBuf>,
    pids: Vec<(u32, String)>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    prefix: None,
    run_dir: None,
    vswitchd_ctl: None,
    pids: Vec::new(),
});

/// Set once a signal arrived: no new command starts after it.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

fn registry() -> MutexGuard<'static, Registry> {
    // A panic while holding the lock leaves the data consistent (plain pushes and
    // removals), so a poisoned lock is still usable.
    REGISTRY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Records the run's prefix and directory and installs the SIGINT/SIGTERM handler.
pub(super) fn install_cleanup(prefix: &str, run_dir: &Path) -> anyhow::Result<()> {
    {
        let mut registry = registry();
        registry.prefix = Some(prefix.to_owned());
        registry.run_dir = Some(run_dir.to_owned());
    }
    ctrlc::set_handler(|| {
        INTERRUPTED.store(true, Ordering::SeqCst);
        eprintln!("\nlab: interrupted; removing everything the lab created");
        // Holding the lock keeps the main thread from recording (and so starting) any
        // new daemon; commands already running get a moment to finish, so that what they
        // create is there for the sweep.
        let registry = registry();
        std::thread::sleep(Duration::from_millis(200));
        emergency_cleanup(&registry);
        eprintln!("lab: cleaned up");
        std::process::exit(130);
    })
    .context("cannot install the SIGINT/SIGTERM handler")
}

/// What the signal handler does: stop the daemons (ovs-vswitchd asked to remove its
/// datapath first), then remove every namespace and interface with the prefix, and the
/// run directory.
fn emergency_cleanup(registry: &Registry) {
    if let Some(ctl) = &registry.vswitchd_ctl {
        let mut exit = command("ovs-appctl", &["--timeout=3", "-t"]);
        exit.arg(ctl).args(["exit", "--cleanup"]);
        let _ = output_always(&mut exit);
    }
    for (pid, label) in registry.pids.iter().rev() {
        if alive(*pid) {
            eprintln!("lab: stopping {label} (pid {pid})");
            signal(*pid, libc::SIGTERM);
        }
    }
    for (pid, label) in &registry.pids {
        if !wait_gone(*pid, Duration::from_secs(2)) {
            eprintln!("lab: killing {label} (pid {pid})");
            signal(*pid, libc::SIGKILL);
            wait_gone(*pid, Duration::from_secs(1));
        }
    }
    if let Some(prefix) = &registry.prefix {
        for problem in sweep(prefix) {
            eprintln!("lab: {problem}");
        }
    }
    remove_orphan_datapath();
    if let Some(dir) = &registry.run_dir {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The userspace datapath's own tap, `ovs-netdev`, has a fixed name. An ovs-vswitchd
/// killed with bridges still configured leaves it behind; with no ovs-vswitchd running
/// at all it belongs to nobody and is removed.
pub(super) fn remove_orphan_datapath() {
    if processes_named("ovs-vswitchd").is_empty() && link_exists(NETDEV_TAP) {
        let _ = output_always(&mut command("ip", &["link", "del", NETDEV_TAP]));
    }
}

/// The tap device of the userspace datapath (one per network namespace).
pub(super) const NETDEV_TAP: &str = "ovs-netdev";

pub(super) fn link_exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

/// The pid of an ovs-vswitchd that the lab did not start, if one runs (call it before
/// starting the lab's own).
pub(super) fn other_vswitchd() -> Option<u32> {
    processes_named("ovs-vswitchd").into_iter().next()
}

/// Live processes whose command name is `name`.
pub(super) fn processes_named(name: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == name)
                && alive(*pid)
        })
        .collect()
}

/// Forgets the run directory once it is removed normally.
pub(super) fn forget_run() {
    let mut registry = registry();
    registry.prefix = None;
    registry.run_dir = None;
}

/// Records (or forgets) the control socket of the lab's ovs-vswitchd.
pub(super) fn set_vswitchd_ctl(ctl: Option<PathBuf>) {
    registry().vswitchd_ctl = ctl;
}

pub(super) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// After a signal the handler thread owns the clean-up and ends the process; the main
/// thread stops at its next command (or teardown) and waits for that, so that the two
/// never work on the same things.
pub(super) fn park_if_interrupted() {
    if interrupted() {
        park();
    }
}

fn park() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Sends a signal. Errors (the process is gone already) are of no interest here.
pub(super) fn signal(pid: u32, sig: libc::c_int) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pid <= 0 {
        return;
    }
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// True while the process exists and is not a zombie.
pub(super) fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses and may hold spaces.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Waits until the process is gone; false when it is still there at the deadline.
pub(super) fn wait_gone(pid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while alive(pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// The command line of a process, its arguments joined by spaces.
pub(super) fn cmdline(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        raw.split(|b| *b == 0)
            .map(String::from_utf8_lossy)
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// The effective uid, from /proc (no libc call needed).
pub(super) fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// Whether a program is on PATH.
pub(super) fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            let file = dir.join(program);
            file.is_file()
                && std::fs::metadata(&file).is_ok_and(|m| {
                    std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
                })
        })
    })
}

/// Root's tools live in the sbin directories, which a user's PATH may lack.
pub(super) fn add_sbin_to_path() {
    let current = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&current).collect();
    for extra in ["/usr/local/sbin", "/usr/sbin", "/sbin"] {
        if !dirs.iter().any(|d| d == Path::new(extra)) {
            dirs.push(PathBuf::from(extra));
        }
    }
    if let Ok(path) = std::env::join_paths(dirs) {
        std::env::set_var("PATH", path);
    }
}

/// A command ready to run, built from a program and its arguments.
pub(super) fn command<S: AsRef<std::ffi::OsStr>>(program: &str, args: &[S]) -> Command {
    let mut command = Command::new(program);
    command.args(args);
    command
}

/// How a command is shown in errors.
pub(super) fn describe(command: &Command) -> String {
    let mut words = vec![command.get_program().to_string_lossy().into_owned()];
    words.extend(command.get_args().map(|a| a.to_string_lossy().into_owned()));
    words.join(" ")
}

/// Runs a command to completion and returns what it printed; an error names the command
/// and carries its stderr when it fails.
pub(super) fn run(command: &mut Command) -> anyhow::Result<String> {
    let output = output(command)?;
    if !output.status.success() {
        bail!(
            "`{}` failed ({}): {}",
            describe(command),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Runs a command to completion, whatever its status. Once a signal came, no command
/// starts any more (except those of the clean-up, [`output_always`]).
pub(super) fn output(command: &mut Command) -> anyhow::Result<Output> {
    park_if_interrupted();
    output_always(command)
}

/// Runs a command to completion even after a signal: for the clean-up.
pub(super) fn output_always(command: &mut Command) -> anyhow::Result<Output> {
    command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run `{}`", describe(command)))
}

/// Runs a command, true when it succeeds. Its output is discarded.
pub(super) fn succeeds(command: &mut Command) -> anyhow::Result<bool> {
    Ok(output(command)?.status.success())
}

/// A long-running process of the lab (a daemon), killed when dropped.
///
/// It runs in a process group of its own, so that a Ctrl-C on the terminal reaches only
/// the lab, which then stops its daemons in order.
pub(super) struct Daemon {
    child: Child,
    label: String,
}

impl Daemon {
    /// [`Daemon::spawn`] with no input, and its output and errors together in `output`,
    /// which the caller reads to follow it.
    pub(super) fn spawn_logged(
        command: &mut Command,
        label: &str,
        output: &Path,
    ) -> anyhow::Result<Daemon> {
        let file = std::fs::File::create(output)
            .with_context(|| format!("cannot create {}", output.display()))?;
        command
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file);
        Daemon::spawn(command, label)
    }

    pub(super) fn spawn(command: &mut Command, label: &str) -> anyhow::Result<Daemon> {
        use std::os::unix::process::CommandExt;
        // Spawned under the registry lock: the signal handler either sees this pid or
        // runs before the process exists.
        park_if_interrupted();
        let mut registry = registry();
        if interrupted() {
            drop(registry);
            park();
        }
        let child = command
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot start `{}`", describe(command)))?;
        registry.pids.push((child.id(), label.to_owned()));
        Ok(Daemon {
            child,
            label: label.to_owned(),
        })
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(super) fn label(&self) -> &str {
        &self.label
    }

    /// Its exit status when it has exited already.
    pub(super) fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    pub(super) fn stderr(&mut self) -> Option<std::process::ChildStderr> {
        self.child.stderr.take()
    }

    pub(super) fn stdin(&mut self) -> Option<std::process::ChildStdin> {
        self.child.stdin.take()
    }

    /// Sends `sig`, waits up to `grace` for the exit, then kills. Returns the status.
    pub(super) fn stop(&mut self, sig: libc::c_int, grace: Duration) -> Option<ExitStatus> {
        if let Some(status) = self.exited() {
            return Some(status);
        }
        signal(self.pid(), sig);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Some(status) = self.exited() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        self.child.wait().ok()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        park_if_interrupted();
        self.stop(libc::SIGTERM, Duration::from_secs(3));
        let pid = self.pid();
        registry().pids.retain(|(p, _)| *p != pid);
    }
}

/// A process the lab did not spawn itself (the `sliced -d` daemon), recorded for the
/// emergency clean-up and killed when dropped if it still runs. `marker` is a string its
/// command line must contain, so that a reused pid is never signalled.
pub(super) struct Adopted {
    pid: u32,
    marker: String,
}

impl Adopted {
    pub(super) fn new(pid: u32, marker: &str, label: &str) -> Adopted {
        registry().pids.push((pid, label.to_owned()));
        Adopted {
            pid,
            marker: marker.to_owned(),
        }
    }

    pub(super) fn pid(&self) -> u32 {
        self.pid
    }

    /// Still running, and still the process we adopted.
    pub(super) fn alive(&self) -> bool {
        alive(self.pid) && cmdline(self.pid).is_some_and(|c| c.contains(&self.marker))
    }
}

impl Drop for Adopted {
    fn drop(&mut self) {
        park_if_interrupted();
        if self.alive() {
            signal(self.pid, libc::SIGTERM);
            if !wait_gone(self.pid, Duration::from_secs(3)) && self.alive() {
                signal(self.pid, libc::SIGKILL);
                wait_gone(self.pid, Duration::from_secs(1));
            }
        }
        let pid = self.pid;
        registry().pids.retain(|(p, _)| *p != pid);
    }
}

/// True when `name` was made by the lab run with this prefix: the prefix, then a letter
/// (prefixes have a fixed width, so `sl0012` never matches `sl0123s1`).
pub(super) fn has_prefix(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix)
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| c.is_ascii_lowercase())
}

/// Network namespaces whose name carries the prefix.
pub(super) fn namespaces_with(prefix: &str) -> Vec<String> {
    let Ok(listing) = listing(&["netns", "list"]) else {
        return Vec::new();
    };
    listing
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| has_prefix(name, prefix))
        .map(str::to_owned)
        .collect()
}

/// Interfaces of the root namespace whose name carries the prefix.
pub(super) fn links_with(prefix: &str) -> Vec<String> {
    let Ok(listing) = listing(&["-o", "link", "show"]) else {
        return Vec::new();
    };
    // Lines look like `12: sl0042s1p2@sl0042s2p2: <BROADCAST,...> ...`.
    listing
        .lines()
        .filter_map(|line| line.split(": ").nth(1))
        .map(|name| name.split('@').next().unwrap_or(name))
        .filter(|name| has_prefix(name, prefix))
        .map(str::to_owned)
        .collect()
}

/// Removes every namespace and interface carrying the prefix; returns what it could not.
pub(super) fn sweep(prefix: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for link in links_with(prefix) {
        // Deleting one end of a veth removes its peer, so a later name may be gone already.
        let _ = output_always(&mut command("ip", &["link", "del", &link]));
    }
    for ns in namespaces_with(prefix) {
        match output_always(&mut command("ip", &["netns", "del", &ns])) {
            Ok(out) if out.status.success() => {}
            Ok(out) => problems.push(format!(
                "cannot remove namespace {ns}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(err) => problems.push(format!("cannot remove namespace {ns}: {err:#}")),
        }
    }
    for link in links_with(prefix) {
        problems.push(format!("interface {link} is still there"));
    }
    problems
}

/// What `ip <args>` prints, also after a signal.
fn listing(args: &[&str]) -> anyhow::Result<String> {
    let out = output_always(&mut command("ip", args))?;
    if !out.status.success() {
        bail!("ip {} failed", args.join(" "));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Polls `check` every `every` until it yields a value or `timeout` passes.
pub(super) fn poll<T>(
    timeout: Duration,
    every: Duration,
    mut check: impl FnMut() -> anyhow::Result<Option<T>>,
) -> anyhow::Result<Option<T>> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check()? {
            return Ok(Some(value));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(every);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_do_not_match_longer_ones() {
        assert!(has_prefix("sl0012s1p2", "sl0012"));
        assert!(has_prefix("sl0012h3", "sl0012"));
        assert!(!has_prefix("sl0012", "sl0012"));
        assert!(!has_prefix("sl00123s1", "sl0012"));
        assert!(!has_prefix("eth0", "sl0012"));
    }

    #[test]
    fn our_own_process_is_alive() {
        assert!(alive(std::process::id()));
        assert!(cmdline(std::process::id()).is_some());
    }
}

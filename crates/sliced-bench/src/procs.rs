//! Processes the harness starts (sliced, the bare server, the peer controllers, wrk) and
//! what it reads about them from /proc.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

/// A server process that is stopped (SIGTERM, then SIGKILL) when dropped.
pub(crate) struct Server {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Server {
    /// Starts `command` with its stdout and stderr going to `log`.
    pub(crate) fn spawn(name: &str, mut command: Command, log: &Path) -> anyhow::Result<Self> {
        let out = std::fs::File::create(log)
            .with_context(|| format!("cannot create the log {}", log.display()))?;
        let err = out.try_clone()?;
        command.stdin(Stdio::null()).stdout(out).stderr(err);
        Self::spawn_command(name, command, log)
    }

    /// [`Server::spawn`] for a command whose output the caller has already directed
    /// to `log`.
    pub(crate) fn spawn_command(
        name: &str,
        mut command: Command,
        log: &Path,
    ) -> anyhow::Result<Self> {
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {name} ({command:?})"))?;
        Ok(Self {
            name: name.to_owned(),
            child,
            log: log.to_owned(),
        })
    }

    /// Whether the process has ended.
    pub(crate) fn exited(&mut self) -> anyhow::Result<bool> {
        Ok(self.child.try_wait()?.is_some())
    }

    /// Sends SIGINT (wrk's "stop and report") and waits; SIGKILL after `limit`.
    pub(crate) fn interrupt_and_wait(&mut self, limit: Duration) -> anyhow::Result<ExitStatus> {
        if let Some(status) = self.child.try_wait()? {
            return Ok(status);
        }
        let pid = libc::pid_t::try_from(self.child.id()).context("pid out of range")?;
        // SAFETY: kill(2) with the pid of our own child, not reaped yet (try_wait above
        // returned None), so the pid still names that process.
        unsafe {
            libc::kill(pid, libc::SIGINT);
        }
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                self.child.kill()?;
                bail!(
                    "{} did not stop on SIGINT within {} s",
                    self.name,
                    limit.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until `addr` accepts TCP connections; fails if the process exits first.
    pub(crate) fn wait_for_port(
        &mut self,
        addr: SocketAddr,
        limit: Duration,
    ) -> anyhow::Result<()> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "{} exited ({status}) before listening on {addr}; its log {}:\n{}",
                    self.name,
                    self.log.display(),
                    tail(&self.log)
                );
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "{} did not listen on {addr} within {} s; its log {}:\n{}",
                    self.name,
                    limit.as_secs(),
                    self.log.display(),
                    tail(&self.log)
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Peak resident set size so far (VmHWM), in KiB.
    pub(crate) fn peak_rss_kib(&self) -> anyhow::Result<u64> {
        proc_status_kib(self.pid(), "VmHWM")
    }

    /// Current resident set size (VmRSS), in KiB.
    pub(crate) fn rss_kib(&self) -> anyhow::Result<u64> {
        proc_status_kib(self.pid(), "VmRSS")
    }

    /// Asks the process to stop (SIGTERM) and waits for it; SIGKILL after 10 s.
    pub(crate) fn stop(mut self) -> anyhow::Result<ExitStatus> {
        self.terminate()
    }

    fn terminate(&mut self) -> anyhow::Result<ExitStatus> {
        if let Some(status) = self.child.try_wait()? {
            return Ok(status);
        }
        let pid = libc::pid_t::try_from(self.child.id()).context("pid out of range")?;
        // SAFETY: kill(2) with the pid of our own child, which has not been reaped yet
        // (try_wait above returned None), so the pid still names that process.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                self.child.kill()?;
                return Ok(self.child.wait()?);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.terminate();
    }
}

/// Makes the process `command` starts die with this one (SIGKILL when the bench ends
/// without its clean-up, killed itself), so that nothing it started outlives it. The
/// signal follows the thread that started the process: start it from the main thread.
pub(crate) fn dies_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl(2) is async-signal-safe and touches only the calling (child) process;
    // the closure allocates nothing.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The last lines of a log, for error messages.
pub(crate) fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// A field of /proc/<pid>/status given in kB.
pub(crate) fn proc_status_kib(pid: u32, field: &str) -> anyhow::Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    parse_status_kib(&status, field).with_context(|| format!("no {field} in {path}"))
}

fn parse_status_kib(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// A loopback address with a port that was free a moment ago.
pub(crate) fn free_addr() -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").context("cannot find a free port")?;
    Ok(listener.local_addr()?)
}

/// Runs a command to completion and returns its stdout; fails with its stderr.
pub(crate) fn output(command: &mut Command) -> anyhow::Result<String> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {command:?}"))?;
    if !output.status.success() {
        bail!(
            "{command:?} failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Is `program` on the PATH?
pub(crate) fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            let candidate = dir.join(program);
            std::fs::metadata(&candidate).is_ok_and(|meta| {
                use std::os::unix::fs::PermissionsExt;
                meta.is_file() && meta.permissions().mode() & 0o111 != 0
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_are_read_in_kib() {
        let status = "Name:\tsliced\nVmPeak:\t  123 kB\nVmHWM:\t   45678 kB\nVmRSS:\t 40000 kB\n";
        assert_eq!(parse_status_kib(status, "VmHWM"), Some(45678));
        assert_eq!(parse_status_kib(status, "VmRSS"), Some(40000));
        assert_eq!(parse_status_kib(status, "VmSwap"), None);
    }

    #[test]
    fn our_own_peak_memory_is_readable() {
        assert!(proc_status_kib(std::process::id(), "VmHWM").is_ok_and(|kib| kib > 0));
    }
}

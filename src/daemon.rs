//! `sliced -d`: run in the background and return once the daemon serves.
//!
//! Rather than fork a running process, the binary starts itself again without `-d` in a
//! process group of its own, with its output going to a log file, and waits until the
//! child has written its pid file, which it does only after binding every socket.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::config::Config;
use crate::made::Made;

const READY_TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) fn spawn_background(config: &Config) -> anyhow::Result<()> {
    let root = config.data_dir.root();
    let pid_file = config
        .pid_file
        .clone()
        .unwrap_or_else(|| root.join("sliced.pid"));
    let log_file = config
        .log_file
        .clone()
        .unwrap_or_else(|| root.join("sliced.log"));
    // The pid file is the running daemon's: a second start that fails must not take it
    // away (the child overwrites it once it serves, and a stale one names no sliced).
    if let Some(pid) = running_sliced(&pid_file) {
        bail!(
            "sliced is already running (pid {pid}, in {}); stop it first (kill {pid})",
            pid_file.display()
        );
    }
    // The child takes away what it makes itself; the directory and the log are made here.
    let mut made = Made::default();
    made.note_dir(root);
    made.note_file(&log_file);
    let started = start_child(config, &pid_file, &log_file);
    if started.is_err() {
        made.remove();
    }
    started
}

/// Starts the daemon in the background and waits until it serves or fails.
fn start_child(config: &Config, pid_file: &Path, log_file: &Path) -> anyhow::Result<()> {
    // Owner-only before the log file goes in; the daemon reports any tightening itself.
    crate::store::make_private(config)?;
    // Owner-only like the rest of the data directory: requests and errors are logged.
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(log_file)
        .with_context(|| format!("cannot open the log file {}", log_file.display()))?;
    // Where this start's lines begin, to show them if it fails.
    let logged_before = log.metadata().map_or(0, |metadata| metadata.len());

    let args = std::env::args_os()
        .skip(1)
        .filter(|arg| arg != "-d" && arg != "--daemon");
    let mut command = Command::new(std::env::current_exe()?);
    command.args(args);
    if config.pid_file.is_none() {
        command.arg("--pid-file").arg(pid_file);
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .context("cannot start the background daemon")?;

    let deadline = Instant::now() + READY_TIMEOUT;
    let expected = child.id().to_string();
    loop {
        if let Some(status) = child.try_wait()? {
            bail!(
                "the daemon exited during start-up ({status}):\n{}",
                logged_since(log_file, logged_before)
            );
        }
        if std::fs::read_to_string(pid_file).is_ok_and(|pid| pid.trim() == expected) {
            println!("{expected}");
            return Ok(());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "the daemon did not start within {} s:\n{}",
                READY_TIMEOUT.as_secs(),
                logged_since(log_file, logged_before)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What the child logged in this start: the reason it failed, shown where the operator
/// ran `sliced -d` (the log file goes when this start made it).
fn logged_since(log_file: &Path, offset: u64) -> String {
    let mut text = String::new();
    let read = std::fs::File::open(log_file).and_then(|mut file| {
        file.seek(SeekFrom::Start(offset))?;
        // Bounded: a start-up's output is a few lines.
        file.take(64 * 1024).read_to_string(&mut text)
    });
    match read {
        Ok(_) => text.trim_end().to_owned(),
        Err(err) => format!("(cannot read {}: {err})", log_file.display()),
    }
}

/// The pid in `pid_file` when it is a running sliced: a pid file left by a crash may
/// name a process that has gone, or whose pid another program has taken since.
fn running_sliced(pid_file: &std::path::Path) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(pid_file)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let program = cmdline.split(|byte| *byte == 0).next()?;
    let name = std::path::Path::new(std::ffi::OsStr::from_bytes(program)).file_name()?;
    (name == "sliced").then_some(pid)
}

//! `cargo xtask deb`: the Debian package (cargo-deb), and `cargo xtask package-test`: that
//! package installed on this machine with dpkg, its service unit verified, the installed
//! daemon run against the installed settings, then purged. See docs/operations.md.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};

use crate::{cargo, workspace_root};

/// The Debian package's name, as cargo-deb takes it from the root package.
const PACKAGE: &str = "sliced";
/// Where `sliced --write-manuals` puts what the package's assets take (root Cargo.toml).
const MANUALS_DIR: &str = "target/manuals";
/// Only a bound on a daemon that never comes up, on a loaded two-core machine.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// What the package installs, checked present after `dpkg -i` and gone after the purge.
const INSTALLED_FILES: [&str; 7] = [
    "/usr/bin/sliced",
    "/usr/bin/slice",
    "/etc/sliced/sliced.toml",
    "/usr/share/man/man1/sliced.1.gz",
    "/usr/share/man/man1/slice.1.gz",
    "/usr/share/bash-completion/completions/slice",
    "/usr/share/zsh/vendor-completions/_sliced",
];

/// Builds the release binaries, their man pages and completions, then the package;
/// returns the .deb's path (under target/debian/).
pub(crate) fn build() -> anyhow::Result<PathBuf> {
    ensure_cargo_deb()?;
    // The same command as the end-to-end lab's, so that `cargo xtask test` builds once.
    cargo(&["build", "--release", "-p", "sliced", "--bins"])?;
    let root = workspace_root();
    let manuals = root.join(MANUALS_DIR);
    // Pages of a removed subcommand must not linger into the package.
    if manuals.exists() {
        std::fs::remove_dir_all(&manuals)
            .with_context(|| format!("cannot empty {}", manuals.display()))?;
    }
    run(
        Command::new(crate::target_dir().join("release").join("sliced"))
            .arg("--write-manuals")
            .arg(&manuals),
    )?;
    let printed = run(cargo_command()
        // The release profile keeps line tables for the lab's backtraces; the package
        // needs none of them (cargo-deb gzips the man pages itself).
        .args(["deb", "--no-build", "--strip", "--output", "target/debian/"])
        .current_dir(&root))?;
    // cargo-deb prints the package's path last.
    let deb = printed
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| line.ends_with(".deb"))
        .map(|line| root.join(line))
        .context("cargo deb printed no package path")?;
    eprintln!("built {}", deb.display());
    Ok(deb)
}

fn cargo_command() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn ensure_cargo_deb() -> anyhow::Result<()> {
    let installed = cargo_command()
        .args(["deb", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !installed {
        cargo(&["install", "cargo-deb", "--locked"])?;
    }
    Ok(())
}

/// From `cargo xtask test`: in CI the package test must run; elsewhere it needs root
/// (dpkg installs system-wide) and is skipped, loudly, without it.
pub(crate) fn from_test() -> anyhow::Result<()> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    match prerequisites() {
        Ok(()) => package_test(),
        Err(reason) if ci => {
            bail!("CI is set, so the package test must run, but it cannot: {reason}")
        }
        Err(reason) => {
            let rule = "=".repeat(78);
            eprintln!("\n{rule}\n  PACKAGE TEST SKIPPED: {reason}\n  Run `cargo xtask package-test` as root.\n{rule}\n");
            Ok(())
        }
    }
}

/// Why the package test cannot run here, naming the Debian package to install.
fn prerequisites() -> Result<(), String> {
    // SAFETY: geteuid(2) takes nothing and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not running as root (dpkg -i installs system-wide)".into());
    }
    let tools = [
        ("dpkg", "dpkg"),
        ("systemd-analyze", "systemd"),
        ("man", "man-db"),
        ("setpriv", "util-linux"),
        ("adduser", "adduser"),
        ("dpkg-shlibdeps", "dpkg-dev"),
    ];
    let missing: Vec<String> = tools
        .iter()
        .filter(|(tool, _)| !on_path(tool))
        .map(|(tool, package)| format!("{tool} (apt-get install {package})"))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("missing {}", missing.join(", ")))
    }
}

fn on_path(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .any(|dir| dir.join(program).is_file())
}

/// Installs the package, checks what it installed works, and purges it, even on failure.
pub(crate) fn package_test() -> anyhow::Result<()> {
    if let Err(reason) = prerequisites() {
        bail!("the package test cannot run: {reason}");
    }
    let deb = build()?;
    eprintln!("$ dpkg -i {}", deb.display());
    let installed = Installed::install(&deb)?;
    let checked = check_installed();
    let purged = installed.purge();
    checked?;
    purged?;
    eprintln!("package test passed: installed, served, purged");
    Ok(())
}

fn check_installed() -> anyhow::Result<()> {
    for file in INSTALLED_FILES {
        ensure!(
            Path::new(file).is_file(),
            "the package did not install {file}"
        );
    }
    run(Command::new("getent").args(["passwd", "sliced"]))
        .context("the package did not create the sliced user")?;
    let unit = [
        "/lib/systemd/system/sliced.service",
        "/usr/lib/systemd/system/sliced.service",
    ]
    .into_iter()
    .find(|path| Path::new(path).is_file())
    .context("the package did not install sliced.service")?;
    eprintln!("$ systemd-analyze verify {unit}");
    let verify = Command::new("systemd-analyze")
        .args(["verify", unit])
        .stdin(Stdio::null())
        .output()
        .context("cannot run systemd-analyze")?;
    // A directive it cannot parse is only a warning to systemd-analyze (status 0); the
    // unit we ship must draw none.
    let complaints = String::from_utf8_lossy(&verify.stderr);
    ensure!(
        verify.status.success() && complaints.trim().is_empty(),
        "systemd-analyze verify {unit} ({}): {complaints}",
        verify.status
    );
    let help = run(Command::new("/usr/bin/slice").arg("--help"))?;
    ensure!(
        help.contains("Usage: slice"),
        "slice --help printed no usage: {help}"
    );
    for page in ["sliced", "slice", "slice-add_port"] {
        let path = run(Command::new("man").args(["-w", page]))?;
        ensure!(
            path.trim().starts_with("/usr/share/man/man1/"),
            "man -w {page} found {path}"
        );
    }
    serves_as_the_sliced_user()
}

/// The installed daemon, as the service would run it (its user, its settings file), on
/// a scratch data directory and free loopback ports so that nothing of the machine's is
/// touched.
fn serves_as_the_sliced_user() -> anyhow::Result<()> {
    let scratch = std::env::temp_dir().join(format!("sliced-package-test-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let cleanup = Scratch(scratch.clone());
    run(Command::new("chown").args(["sliced:sliced"]).arg(&scratch))?;
    let data_dir = scratch.join("db");
    let http = free_port()?;
    let openflow = free_port()?;
    let mut child = Running(
        // setpriv execs sliced in its own place (runuser would stay the parent and take
        // the SIGTERM meant for the daemon).
        Command::new("setpriv")
            .args([
                "--reuid=sliced",
                "--regid=sliced",
                "--init-groups",
                "/usr/bin/sliced",
            ])
            .args(["--config", "/etc/sliced/sliced.toml"])
            .arg("--db")
            .arg(&data_dir)
            .args(["--http", &http, "--openflow", &openflow])
            .stdin(Stdio::null())
            .spawn()
            .context("cannot start the installed sliced")?,
    );
    let deadline = Instant::now() + START_TIMEOUT;
    let ready = format!("http://{http}/readyz");
    loop {
        if let Some(status) = child.0.try_wait()? {
            bail!("the installed sliced exited during start-up: {status}");
        }
        match ureq::get(&ready).call() {
            Ok(response) if response.status() == 200 => break,
            Ok(response) => bail!("GET /readyz answered {}", response.status()),
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Err(err) => bail!("the installed sliced did not answer on {ready}: {err}"),
        }
    }
    // The shipped settings close the slice endpoints to anyone without a login...
    let slices = format!("http://{http}/slices");
    match ureq::get(&slices).call() {
        Err(ureq::Error::Status(403, _)) => {}
        Ok(response) => bail!("GET /slices answered {} without a login", response.status()),
        Err(err) => bail!("GET /slices without a login: {err}"),
    }
    // ...and the tool, as the service's user, reaches the daemon over its local socket.
    let listed = Command::new("setpriv")
        .args([
            "--reuid=sliced",
            "--regid=sliced",
            "--init-groups",
            "/usr/bin/slice",
        ])
        .arg("--db")
        .arg(&data_dir)
        .args(["add", "package-test"])
        .output()?;
    ensure!(
        listed.status.success(),
        "slice add over the local socket failed: {}",
        String::from_utf8_lossy(&listed.stderr)
    );
    eprintln!("the installed sliced serves on {http} as user sliced");
    child.stop()?;
    drop(cleanup);
    Ok(())
}

fn free_port() -> anyhow::Result<String> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.to_string())
}

/// The package while installed; purged when dropped if [`Installed::purge`] was not reached.
struct Installed {
    purged: bool,
}

impl Installed {
    fn install(deb: &Path) -> anyhow::Result<Self> {
        let installed = Self { purged: false };
        run(Command::new("dpkg")
            .arg("-i")
            .arg(deb)
            .env("DEBIAN_FRONTEND", "noninteractive"))?;
        Ok(installed)
    }

    /// `dpkg --purge`, then checks that nothing the package made is left.
    fn purge(mut self) -> anyhow::Result<()> {
        self.purged = true;
        eprintln!("$ dpkg --purge {PACKAGE}");
        run(Command::new("dpkg").args(["--purge", PACKAGE]))?;
        let left: Vec<&str> = INSTALLED_FILES
            .into_iter()
            .chain(["/etc/sliced", "/var/lib/sliced"])
            .filter(|path| Path::new(path).exists())
            .collect();
        ensure!(left.is_empty(), "dpkg --purge left {left:?}");
        let user = Command::new("getent").args(["passwd", "sliced"]).output()?;
        ensure!(!user.status.success(), "dpkg --purge left the sliced user");
        Ok(())
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        if !self.purged {
            let _ = Command::new("dpkg").args(["--purge", PACKAGE]).status();
        }
    }
}

/// The installed daemon, stopped with SIGTERM (as systemd stops it) or killed if dropped.
struct Running(Child);

impl Running {
    fn stop(&mut self) -> anyhow::Result<()> {
        let pid = libc::pid_t::try_from(self.0.id())?;
        // SAFETY: kill(2) takes plain integers and touches no memory of ours.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let status = self.0.wait()?;
        ensure!(
            status.success(),
            "the installed sliced stopped with {status}"
        );
        Ok(())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs a command to completion; its stdout, or an error with its stderr.
fn run(command: &mut Command) -> anyhow::Result<String> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {:?}", command.get_program()))?;
    if !output.status.success() {
        bail!(
            "{:?} {:?} failed ({}): {}{}",
            command.get_program(),
            command.get_args().collect::<Vec<_>>(),
            output.status,
            String::from_utf8_lossy(&output.stdout).trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

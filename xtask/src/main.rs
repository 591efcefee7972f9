//! Project automation (`cargo xtask <task>`), in Rust rather than shell scripts.
//!
//! - `cargo xtask test`: formatting, clippy, and every test of the workspace, then the
//!   end-to-end lab: the whole suite that CI runs.
//! - `cargo xtask e2e`: the end-to-end lab alone (real Open vSwitch, hosts in network
//!   namespaces); see docs/testing.md.
//! - `cargo xtask bench`: sliced against its peers, written to docs/benchmarks.md.
//! - `cargo xtask fuzz TARGET`: a coverage-guided fuzzing campaign (AFL++ via cargo-afl).

mod e2e;
mod fuzz;

use std::process::Command;

use anyhow::{bail, Context};

const USAGE: &str = "usage: cargo xtask <task>

tasks:
  test    formatting, clippy, every test, then the end-to-end lab: the whole suite CI runs
  e2e     the end-to-end lab alone (root and Open vSwitch); `cargo xtask e2e --help`
  bench   sliced against its peers, written to docs/benchmarks.md; `cargo xtask bench --help`
  fuzz    a coverage-guided fuzzing campaign on one decoder; `cargo xtask fuzz --help`";

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = args.first().cloned().unwrap_or_default();
    let result = match task.as_str() {
        "test" => test(),
        "e2e" => e2e::main(&args[1..]),
        "bench" => bench(&args[1..]),
        "fuzz" => fuzz::main(&args[1..]),
        // Internal: what the lab runs inside a host's namespace to play an attacker.
        "lldp" => e2e::lldp::main(&args[1..]),
        _ => Err(anyhow::anyhow!("unknown task {task:?}\n\n{USAGE}")),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn test() -> anyhow::Result<()> {
    cargo(&["fmt", "--all", "--", "--check"])?;
    cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    cargo(&["test", "--workspace", "--all-targets"])?;
    cargo(&["test", "--workspace", "--doc"])?;
    eprintln!("$ cargo xtask e2e");
    e2e::from_test()?;
    Ok(())
}

/// The benchmarks live in crates/sliced-bench (load generators, the switch emulator and
/// the peers' set-up); this only runs them, optimised, with the caller's arguments.
fn bench(args: &[String]) -> anyhow::Result<()> {
    let mut cargo_args = vec!["run", "--release", "--quiet", "-p", "sliced-bench", "--"];
    cargo_args.extend(args.iter().map(String::as_str));
    cargo(&cargo_args)
}

/// Runs cargo from the workspace root with the output going straight to the terminal.
fn cargo(args: &[&str]) -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("$ cargo {}", args.join(" "));
    let status = Command::new(&cargo)
        .args(args)
        .current_dir(workspace_root())
        .status()
        .with_context(|| format!("cannot run {cargo}"))?;
    if !status.success() {
        bail!("cargo {} failed: {status}", args.join(" "));
    }
    Ok(())
}

fn workspace_root() -> std::path::PathBuf {
    // xtask lives one level below the root; the manifest dir is set by cargo at build time.
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default()
}

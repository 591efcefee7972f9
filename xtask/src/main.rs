//! Project automation (`cargo xtask <task>`), in Rust rather than shell scripts.
//!
//! - `cargo xtask test`: formatting, clippy, every test of the workspace and slice-core's
//!   examples, then the end-to-end lab: the whole suite that CI runs.
//! - `cargo xtask e2e`: the end-to-end lab alone (real Open vSwitch, hosts in network
//!   namespaces); see docs/testing.md.
//! - `cargo xtask soak`: the lab's random scenario, 1000 steps; `cargo xtask failover`:
//!   the cluster's failover measured N times.
//! - `cargo xtask bench`: sliced against its peers, written to docs/benchmarks.md.
//! - `cargo xtask deb`: the Debian package, into target/debian/.
//! - `cargo xtask package-test`: that package installed, run and purged (root).
//! - `cargo xtask fuzz TARGET`: a coverage-guided fuzzing campaign (AFL++ via cargo-afl).

mod deb;
mod e2e;
mod fuzz;

use std::process::{Command, ExitCode};

use anyhow::{bail, Context};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Project automation for sliced: the whole suite, the end-to-end lab, the benchmarks and
/// the fuzzing campaigns.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Check formatting, clippy, every test, the end-to-end lab, then the Debian package:
    /// the whole suite CI runs
    Test,
    /// Run the end-to-end lab alone (root and Open vSwitch)
    ///
    /// Runs every scenario on OpenFlow 1.0 and 1.3 against the release sliced, on a private
    /// Open vSwitch and hosts in network namespaces. Needs root and Open vSwitch. See
    /// docs/testing.md.
    E2e(e2e::Options),
    /// Run the lab's random scenario long (1000 steps unless told otherwise)
    ///
    /// The seeded sequence of random operations of `cargo xtask e2e -s random`, with the
    /// reachability of every pair of hosts compared to the slices after every step. The
    /// seed is printed (`seed=N`); `--seed N` replays a run.
    Soak(e2e::SoakOptions),
    /// Measure the cluster's failover in the lab: kill the master N times
    ///
    /// Prints min/median/max of the time to a new master, the packets a pair talking at
    /// 50 packets/s lost and the time until a pair that never talked reaches, then the
    /// REST latency of creates on etcd against sled. For docs/benchmarks.md.
    Failover(e2e::FailoverOptions),
    /// Benchmark sliced against its peers, written to docs/benchmarks.md; `cargo xtask bench --help`
    /// shows sliced-bench's own options
    // Every argument, `--help` included, belongs to sliced-bench: clap must not read any.
    #[command(disable_help_flag = true)]
    Bench {
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<String>,
    },
    /// Build the Debian package (cargo-deb, installed if missing) into target/debian/
    Deb,
    /// Build the Debian package, install it, run the installed sliced, purge it (root)
    ///
    /// Checks the files, the sliced user, `systemd-analyze verify` of the unit, the
    /// installed sliced serving with /etc/sliced/sliced.toml as the sliced user,
    /// `slice --help` and `man -w sliced`, then that `dpkg --purge` leaves nothing.
    PackageTest,
    /// Run a coverage-guided fuzzing campaign on one decoder
    ///
    /// Runs AFL++ (cargo-afl) on TARGET from its seed corpus in
    /// crates/sliced-fuzz/corpus/TARGET for SECONDS, or until about N
    /// executions, then reports the executions, the corpus AFL++ grew and every crash or
    /// hang. Findings stay in target/fuzz/TARGET, AFL++'s log in target/fuzz/TARGET.log.
    /// Needs `cargo install cargo-afl`.
    Fuzz(fuzz::Options),
    /// Internal: what the lab runs inside a host's namespace to play an attacker
    #[command(hide = true, subcommand)]
    Lldp(e2e::lldp::Lldp),
    /// Internal: two colluding hosts relaying frames between their ports (the lab's
    /// fake-link scenario)
    #[command(hide = true, subcommand)]
    Relay(e2e::relay_attack::Relay),
}

fn main() -> ExitCode {
    let matches = match fuzz::describe_targets(Cli::command()).try_get_matches() {
        Ok(matches) => matches,
        Err(err) => return usage_error(&err),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(err) => return usage_error(&err),
    };
    let result = match cli.task {
        Task::Test => test(),
        Task::E2e(options) => e2e::main(&options),
        Task::Soak(options) => e2e::soak(&options),
        Task::Failover(options) => e2e::failover(&options),
        Task::Bench { args } => bench(&args),
        Task::Deb => deb::build().map(drop),
        Task::PackageTest => deb::package_test(),
        Task::Fuzz(options) => fuzz::main(&options),
        Task::Lldp(command) => e2e::lldp::main(command),
        Task::Relay(command) => e2e::relay_attack::main(command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// `--help` succeeds; a bad command line fails with status 1 like any other failure of a
/// task (clap's own `exit` would use 2), so scripts see one failure status.
fn usage_error(err: &clap::Error) -> ExitCode {
    // Nothing useful is left to do if the terminal is gone.
    let _ = err.print();
    if err.use_stderr() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
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
    run_examples("slice-core")?;
    // slice-core's features are on by default everywhere in the workspace, so nothing
    // else would notice a build without them break.
    cargo(&["test", "-p", "slice-core", "--no-default-features"])?;
    eprintln!("$ cargo xtask e2e");
    e2e::from_test()?;
    // After the lab, whose release build the package reuses.
    eprintln!("$ cargo xtask package-test");
    deb::from_test()?;
    Ok(())
}

/// Runs every example of the crate in `crates/<krate>/examples/`: `cargo test` builds
/// examples but never runs them, and an example that no longer does what its comments say
/// misleads the embedders it is written for. Each asserts what it shows.
fn run_examples(krate: &str) -> anyhow::Result<()> {
    for name in example_names(krate)? {
        cargo(&["run", "--quiet", "-p", krate, "--example", &name])?;
    }
    Ok(())
}

/// The examples of `crates/<krate>`, by name, sorted; an error when there are none, so
/// that a moved directory does not pass as a run of nothing.
fn example_names(krate: &str) -> anyhow::Result<Vec<String>> {
    let dir = workspace_root().join("crates").join(krate).join("examples");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("cannot list {dir:?}"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "rs") {
            if let Some(name) = path.file_stem().and_then(|stem| stem.to_str()) {
                names.push(name.to_owned());
            }
        }
    }
    if names.is_empty() {
        bail!("{dir:?} holds no example");
    }
    names.sort();
    Ok(names)
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

/// Where cargo puts what it builds: `CARGO_TARGET_DIR` when set, else `target/`.
fn target_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

fn workspace_root() -> std::path::PathBuf {
    // xtask lives one level below the root; the manifest dir is set by cargo at build time.
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        let matches = fuzz::describe_targets(Cli::command())
            .try_get_matches_from(std::iter::once("xtask").chain(args.iter().copied()))?;
        Cli::from_arg_matches(&matches)
    }

    #[test]
    fn the_suite_finds_slice_cores_examples() {
        let names = example_names("slice-core").unwrap();
        assert_eq!(names, ["membership", "plan"]);
        assert!(example_names("no-such-crate").is_err());
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn bench_passes_every_argument_through_help_included() {
        let cli = parse(&["bench", "--help", "--peers", "ryu", "-x"]).unwrap();
        match cli.task {
            Task::Bench { args } => assert_eq!(args, ["--help", "--peers", "ryu", "-x"]),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn fuzz_takes_a_known_target_and_whole_numbers() {
        let cli = parse(&["fuzz", "openflow_stream", "--execs", "1000"]).unwrap();
        let Task::Fuzz(options) = cli.task else {
            panic!("parsed as {:?}", cli.task);
        };
        assert_eq!(options.target, "openflow_stream");
        assert_eq!((options.seconds, options.execs), (60, Some(1000)));
        assert!(parse(&["fuzz", "no_such_harness"]).is_err());
        assert!(parse(&["fuzz", "request_body", "--time", "soon"]).is_err());
        assert!(parse(&["fuzz"]).is_err());
    }

    #[test]
    fn soak_and_failover_take_their_numbers() {
        assert!(parse(&["soak", "--steps", "1000", "--seed", "7", "--of", "13"]).is_ok());
        assert!(parse(&["soak", "--cluster"]).is_ok());
        assert!(parse(&["soak", "--steps", "none"]).is_err());
        assert!(parse(&["failover", "--runs", "5", "--of", "10"]).is_ok());
        assert!(parse(&["failover", "--runs", "0"]).is_err());
    }

    #[test]
    fn a_missing_or_unknown_task_is_an_error() {
        assert!(parse(&[]).is_err());
        assert!(parse(&["deploy"]).is_err());
    }

    #[test]
    fn lldp_keeps_the_interface_the_lab_runs_in_namespaces() {
        let cli = parse(&["lldp", "forge", "h3-eth0", "0x2a", "1", "5", "100"]).unwrap();
        match cli.task {
            Task::Lldp(e2e::lldp::Lldp::Forge {
                iface,
                dpid,
                port,
                count,
                interval_ms,
            }) => {
                assert_eq!(
                    (iface.as_str(), dpid, port, count, interval_ms),
                    ("h3-eth0", 0x2a, 1, 5, 100)
                );
            }
            other => panic!("parsed as {other:?}"),
        }
        assert!(parse(&["lldp", "capture", "h3-eth0", "/tmp/probe"]).is_ok());
        assert!(parse(&["lldp", "replay", "h4-eth0", "/tmp/probe", "3", "50"]).is_ok());
        assert!(parse(&["lldp", "forge", "h3-eth0", "zz", "1", "5", "100"]).is_err());
        assert!(parse(&["lldp", "flood", "eth0", "lldp", "8000", "15"]).is_ok());
        assert!(parse(&["lldp", "flood", "eth0", "random-src", "8000", "15"]).is_ok());
        // Bounded: no rate above 20,000 a second, nothing longer than a minute.
        assert!(parse(&["lldp", "flood", "eth0", "lldp", "20001", "15"]).is_err());
        assert!(parse(&["lldp", "flood", "eth0", "lldp", "8000", "61"]).is_err());
        assert!(parse(&["lldp", "flood", "eth0", "ipv4", "8000", "15"]).is_err());
    }
}

//! `cargo xtask fuzz TARGET`: a coverage-guided fuzzing campaign with AFL++ on stable
//! Rust (cargo-afl), over the harnesses of crates/sliced-fuzz.
//!
//! The target is built with AFL++'s instrumentation into its own target directory (the
//! instrumented flags would otherwise rebuild the ordinary release build), started from
//! the seed corpus in the repository, run for a time or a number of executions, and
//! judged from AFL++'s own `fuzzer_stats`: any saved crash or hang fails the task.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

/// `cargo xtask fuzz TARGET [--time SECONDS] [--execs N]`; the task's description is on
/// `Task::Fuzz` in main.rs.
#[derive(Debug, clap::Args)]
pub(crate) struct Options {
    /// The harness: a binary of crates/sliced-fuzz (its src/bin/TARGET.rs)
    #[arg(value_parser = parse_target)]
    pub(crate) target: String,
    /// Stop after this many seconds
    #[arg(long = "time", value_name = "SECONDS", default_value_t = 60)]
    pub(crate) seconds: u64,
    /// Stop after about this many executions
    #[arg(long, value_name = "N")]
    pub(crate) execs: Option<u64>,
}

fn parse_target(name: &str) -> Result<String, String> {
    let targets = sliced_fuzz_targets().map_err(|err| format!("{err:#}"))?;
    if targets.iter().any(|target| target == name) {
        Ok(name.to_owned())
    } else {
        Err(format!(
            "no fuzz target {name:?}; targets: {}",
            targets.join(", ")
        ))
    }
}

/// The targets come from the repository at run time, so `cargo xtask fuzz --help` lists
/// them the way the derive cannot.
pub(crate) fn describe_targets(command: clap::Command) -> clap::Command {
    let Ok(targets) = sliced_fuzz_targets() else {
        // The listing's own error surfaces when a target is checked.
        return command;
    };
    command.mut_subcommand("fuzz", |fuzz| {
        fuzz.after_help(format!("targets: {}", targets.join(", ")))
    })
}

pub(crate) fn main(options: &Options) -> anyhow::Result<()> {
    let root = crate::workspace_root();
    let corpus = root.join("crates/sliced-fuzz/corpus").join(&options.target);
    let findings = root.join("target/fuzz").join(&options.target);
    let afl_target_dir = root.join("target/afl");

    if Command::new(cargo())
        .args(["afl", "--version"])
        .output()
        .map_or(true, |out| !out.status.success())
    {
        bail!("cargo-afl is not installed: run `cargo install cargo-afl` (AFL++ for stable Rust)");
    }
    run(Command::new(cargo()).current_dir(&root).args([
        "afl",
        "build",
        "--release",
        "-p",
        "sliced-fuzz",
        "--features",
        "afl",
        "--bin",
        &options.target,
        "--target-dir",
        &afl_target_dir.to_string_lossy(),
    ]))?;
    if findings.exists() {
        std::fs::remove_dir_all(&findings)
            .with_context(|| format!("cannot clear {}", findings.display()))?;
    }
    std::fs::create_dir_all(&findings)
        .with_context(|| format!("cannot create {}", findings.display()))?;
    // AFL++ writes a progress line every few seconds: into a file, shown on failure.
    let log_path = findings.with_extension("log");
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("cannot create {}", log_path.display()))?;

    let mut fuzz = Command::new(cargo());
    fuzz.current_dir(&root)
        .args(["afl", "fuzz", "-i"])
        .arg(&corpus)
        .arg("-o")
        .arg(&findings)
        .args(["-V", &options.seconds.to_string()]);
    if let Some(execs) = options.execs {
        fuzz.args(["-E", &execs.to_string()]);
    }
    fuzz.arg("--")
        .arg(afl_target_dir.join("release").join(&options.target))
        // A plain log instead of the full-screen status, no CPU-governor check (a VM
        // cannot change it), and crashes still counted when the kernel's core pattern
        // pipes cores elsewhere.
        .env("AFL_NO_UI", "1")
        .env("AFL_SKIP_CPUFREQ", "1")
        .env("AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES", "1")
        .env("AFL_NO_AFFINITY", "1")
        .stdout(log);
    if let Err(err) = run(&mut fuzz) {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(15).collect();
        for line in tail.into_iter().rev() {
            eprintln!("{line}");
        }
        return Err(err.context(format!("AFL++ failed; its log is {}", log_path.display())));
    }

    let stats = Stats::read(&findings.join("default/fuzzer_stats"))?;
    println!(
        "fuzz: {}: {} executions in {} s ({} per second), corpus {} (from {} seeds), \
         edge coverage {}, crashes {}, hangs {}",
        options.target,
        stats.get("execs_done"),
        stats.get("run_time"),
        stats.get("execs_per_sec"),
        stats.get("corpus_count"),
        std::fs::read_dir(&corpus).map_or(0, Iterator::count),
        stats.get("bitmap_cvg"),
        stats.get("saved_crashes"),
        stats.get("saved_hangs"),
    );
    let failures = [
        ("crashes", stats.count("saved_crashes")),
        ("hangs", stats.count("saved_hangs")),
    ];
    for (kind, count) in failures {
        if count > 0 {
            bail!(
                "{count} {kind} saved in {}: reproduce one with `{} < FILE`",
                findings.join("default").join(kind).display(),
                afl_target_dir
                    .join("release")
                    .join(&options.target)
                    .display()
            );
        }
    }
    println!("fuzz: {}: 0 crashes, 0 hangs", options.target);
    Ok(())
}

/// The targets are the binaries of crates/sliced-fuzz: its `src/bin/*.rs`.
fn sliced_fuzz_targets() -> anyhow::Result<Vec<String>> {
    let dir = crate::workspace_root().join("crates/sliced-fuzz/src/bin");
    let mut targets: Vec<String> = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".rs").map(str::to_owned)
        })
        .collect();
    targets.sort();
    Ok(targets)
}

/// AFL++'s `fuzzer_stats`: `name : value` lines.
struct Stats(Vec<(String, String)>);

impl Stats {
    fn read(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("AFL++ left no statistics in {}", path.display()))?;
        let pairs = text
            .lines()
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
            .collect();
        Ok(Self(pairs))
    }

    fn get(&self, name: &str) -> &str {
        self.0
            .iter()
            .find(|(key, _)| key == name)
            .map_or("?", |(_, value)| value)
    }

    fn count(&self, name: &str) -> u64 {
        self.get(name).parse().unwrap_or(0)
    }
}

fn cargo() -> PathBuf {
    std::env::var_os("CARGO").map_or_else(|| "cargo".into(), PathBuf::from)
}

fn run(command: &mut Command) -> anyhow::Result<()> {
    let status = command
        .status()
        .with_context(|| format!("cannot run {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed: {status}");
    }
    Ok(())
}

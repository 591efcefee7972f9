//! The CPU hog of `--fat-tree-hog` (issue 36 item 2's test): a spinning process pinned
//! to the machine's last core from before the tree is built until after it was measured,
//! and the quiet window that follows convergence, in which no cable changes and no link
//! may be lost.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};

use super::{FatTrees, Figures, TreeOptions};
use crate::measure::Outcome;

/// A process that keeps one core busy while it lives: a shell loop with no system calls,
/// pinned with taskset so that the scheduler cannot spread it over both cores and it
/// takes one whole core's share from whatever else runs there.
pub(crate) struct Hog {
    child: Child,
    pub(crate) core: usize,
}

impl Hog {
    pub(crate) fn start() -> anyhow::Result<Self> {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let core = cores - 1;
        let mut command = Command::new("taskset");
        command
            .args([
                "--cpu-list",
                &core.to_string(),
                "sh",
                "-c",
                "while :; do :; done",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        crate::procs::dies_with_parent(&mut command);
        let child = command
            .spawn()
            .context("cannot start the CPU hog (taskset and sh)")?;
        Ok(Self { child, core })
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the quiet window after convergence saw.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quiet {
    pub window: Duration,
    /// Links sliced lost (`sliced_link_events_total{event="down"}`) within it.
    pub lost: u64,
    /// Links it held out for flapping (`sliced_links_held_total`) within it.
    pub held: u64,
}

impl Quiet {
    pub(crate) fn passed(&self) -> bool {
        self.lost == 0 && self.held == 0
    }
}

/// With `--fat-tree-hog`, the goal of issue 36 item 2: every tree converged under the
/// hog, then lost and held no link in its quiet window. An error (the bench's exit
/// status) saying which missed it and how.
pub(crate) fn verdict(
    options: &TreeOptions,
    trees: Option<&Outcome<FatTrees>>,
) -> anyhow::Result<()> {
    if !options.fat_tree_hog {
        return Ok(());
    }
    let trees = match trees {
        Some(Ok(trees)) => trees,
        Some(Err(why)) => bail!("the CPU-hog run did not measure: {why}"),
        None => return Ok(()),
    };
    let mut missed = Vec::new();
    for (k, outcome) in &trees.trees {
        match outcome {
            Err(why) => missed.push(format!("k={k} did not converge under the hog: {why}")),
            Ok(Figures {
                quiet: Some(quiet), ..
            }) if !quiet.passed() => missed.push(format!(
                "k={k} converged, then lost {} link(s) and held {} for flapping in its {} s \
                 quiet window while no cable changed (the goal is 0)",
                quiet.lost,
                quiet.held,
                quiet.window.as_secs()
            )),
            Ok(_) => {}
        }
    }
    if !missed.is_empty() {
        bail!(
            "the CPU-hog goal (issue 36 item 2) is missed: {}",
            missed.join("; ")
        );
    }
    Ok(())
}

//! The routing benchmark: criterion in crates/slice-controller/benches/routing.rs, run
//! through cargo, its estimates read back from criterion's output directory.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

use crate::procs;

pub(crate) const GRAPHS: [&str; 2] = ["fat_tree_k16", "random_1000"];
pub(crate) const BENCHES: [&str; 4] = [
    "shortest_path",
    "route",
    "link_failure_withdraw",
    "link_failure_reroute",
];

/// One criterion estimate, in nanoseconds.
#[derive(Debug, Clone)]
pub(crate) struct Estimate {
    pub graph: String,
    pub bench: String,
    pub median_ns: f64,
    // Part of the record (and of its Debug form), not quoted on the page; it went unflagged
    // while the results lived in the crate root.
    #[allow(dead_code)]
    pub mean_ns: f64,
    pub mean_low_ns: f64,
    pub mean_high_ns: f64,
}

#[derive(Debug, Clone)]
pub(crate) struct RoutingResult {
    pub estimates: Vec<Estimate>,
    /// The `routing-info:` lines the bench printed, without the prefix.
    pub info: Vec<String>,
}

impl RoutingResult {
    /// A field (`key=value`) of the bench's info line about `graph`.
    pub(crate) fn info_field(&self, graph: &str, field: &str) -> Option<String> {
        let line = self.info.iter().find(|l| l.starts_with(graph))?;
        line.split_whitespace().find_map(|word| {
            let (key, value) = word.split_once('=')?;
            (key == field).then(|| value.to_owned())
        })
    }
}

pub(crate) const COMMAND: &str = "cargo bench -p slice-controller --bench routing -- --noplot";

/// Runs the bench and reads its estimates.
pub(crate) fn run(workspace: &Path) -> anyhow::Result<RoutingResult> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("sliced-bench: {COMMAND}");
    let stdout = procs::output(
        Command::new(&cargo)
            .current_dir(workspace)
            .args(["bench", "-p", "slice-controller", "--bench", "routing"])
            .args(["--", "--noplot"]),
    )?;
    let info = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("routing-info: "))
        .map(str::to_owned)
        .collect();
    let criterion_dir = target_dir(workspace)?.join("criterion");
    let mut estimates = Vec::new();
    for graph in GRAPHS {
        for bench in BENCHES {
            let path = criterion_dir
                .join(graph)
                .join(bench)
                .join("new")
                .join("estimates.json");
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("criterion wrote no {}", path.display()))?;
            estimates.push(parse_estimates(graph, bench, &text)?);
        }
    }
    Ok(RoutingResult { estimates, info })
}

fn target_dir(workspace: &Path) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let metadata = procs::output(Command::new(&cargo).current_dir(workspace).args([
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
    ]))?;
    let metadata: serde_json::Value = serde_json::from_str(&metadata)?;
    metadata["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .context("cargo metadata names no target directory")
}

fn parse_estimates(graph: &str, bench: &str, text: &str) -> anyhow::Result<Estimate> {
    let json: serde_json::Value = serde_json::from_str(text)?;
    let number = |pointer: &str| {
        json.pointer(pointer)
            .and_then(serde_json::Value::as_f64)
            .with_context(|| format!("no {pointer} in the estimates of {graph}/{bench}"))
    };
    Ok(Estimate {
        graph: graph.to_owned(),
        bench: bench.to_owned(),
        median_ns: number("/median/point_estimate")?,
        mean_ns: number("/mean/point_estimate")?,
        mean_low_ns: number("/mean/confidence_interval/lower_bound")?,
        mean_high_ns: number("/mean/confidence_interval/upper_bound")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_are_read_from_criterions_json() {
        let text = r#"{"mean":{"confidence_interval":{"confidence_level":0.95,"lower_bound":90.0,"upper_bound":110.0},"point_estimate":100.0,"standard_error":5.0},"median":{"confidence_interval":{"confidence_level":0.95,"lower_bound":95.0,"upper_bound":99.0},"point_estimate":97.0,"standard_error":1.0}}"#;
        let estimate = parse_estimates("g", "b", text).expect("parsed");
        assert_eq!(
            (
                estimate.median_ns,
                estimate.mean_ns,
                estimate.mean_low_ns,
                estimate.mean_high_ns
            ),
            (97.0, 100.0, 90.0, 110.0)
        );
        assert!(parse_estimates("g", "b", "{}").is_err());
    }
}

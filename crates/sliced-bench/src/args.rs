//! The flags of a benchmark run: which parts, how long, how big.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::{applies, big_emulated, fat_tree};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Part {
    Reads,
    Writes,
    Flows,
    Scale,
    Million,
    Routing,
    Applies,
    Tables,
    Big,
    FatTree,
    Verify,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct RunArgs {
    /// Where to write the report [default: <workspace>/docs/benchmarks.md]
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Use this sliced binary instead of building one with cargo
    #[arg(long, value_name = "FILE")]
    pub sliced: Option<PathBuf>,
    /// The parts to run, comma-separated [default: all]
    #[arg(long, value_enum, value_delimiter = ',')]
    pub only: Vec<Part>,
    /// Seconds of each wrk run, except the read part's
    #[arg(long, default_value_t = 5, value_name = "S")]
    pub duration: u64,
    /// Rounds of the read part: each round reads each endpoint from sliced and from the
    /// bare server
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub read_rounds: u64,
    /// Seconds of each wrk run of the read part
    #[arg(long, default_value_t = 3, value_name = "S")]
    pub read_duration: u64,
    /// Seconds of each flow-setup run
    #[arg(long, default_value_t = 3, value_name = "S")]
    pub flow_duration: u64,
    /// Rounds of the one-switch round trips: each round runs sliced, ovs-testcontroller
    /// and the no-logic floor once on each version
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub rtt_rounds: u64,
    /// Slices present during the REST read runs
    #[arg(long, default_value_t = 1000)]
    pub slices: usize,
    /// Slices created by the scale test
    #[arg(long, default_value_t = 65536)]
    pub scale_slices: usize,
    /// Slices of the million-binding part
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=65535))]
    pub million_slices: u64,
    /// MAC addresses bound to each slice of the million-binding part
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=65535))]
    pub million_macs: u64,
    /// PACKET_INs in flight per emulated switch in throughput mode
    #[arg(long, default_value_t = 64)]
    pub window: usize,
    /// Hosts (ports) per emulated switch
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(2..=64))]
    pub hosts: u16,
    /// Directory for the databases and logs [default: the system's temporary directory]
    #[arg(long, value_name = "DIR")]
    pub tmp: Option<PathBuf>,
    /// The workspace root (for cargo) [default: where sliced-bench was built from]
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    #[command(flatten)]
    pub apply: applies::Options,
    #[command(flatten)]
    pub fat_tree: fat_tree::TreeOptions,
    #[command(flatten)]
    pub big: big_emulated::BigOptions,
}

//! Everything one run measured, part by part, as the report reads it.

use std::time::Duration;

use crate::flows_part::Flows;
use crate::measure::Outcome;
use crate::rest_part::{Reads, Writes};
use crate::scale::Scale;
use crate::watcher::OtherWork;
use crate::{applies, fat_tree, machine, million, page, routing, tables};

/// Everything one run measured.
pub(crate) struct Results {
    pub machine: machine::Machine,
    pub args: Vec<String>,
    pub started: String,
    pub elapsed: Duration,
    pub duration: Duration,
    pub flow_duration: Duration,
    pub window: usize,
    pub hosts: u16,
    pub reads: Option<Outcome<Reads>>,
    pub writes: Option<Outcome<Writes>>,
    pub flows: Option<Outcome<Flows>>,
    pub scale: Option<Outcome<Scale>>,
    pub million: Option<Outcome<million::Million>>,
    pub routing: Option<Outcome<routing::RoutingResult>>,
    pub applies: Option<Outcome<applies::Applies>>,
    pub tables: Option<Outcome<tables::Tables>>,
    pub fat_trees: Option<Outcome<fat_tree::FatTrees>>,
    /// Peak resident memory (VmHWM) of each process measured: (run, process, KiB).
    pub memory: Vec<(String, String, u64)>,
    /// Other work seen running during each part.
    pub other_work: Vec<OtherWork>,
    pub load_before: f64,
    pub load_after: f64,
}

impl Results {
    /// What a section quotes of the run besides its own figures.
    pub(crate) fn stamp(&self) -> page::Stamp<'_> {
        page::Stamp {
            started: &self.started,
            args: &self.args,
            other_work: &self.other_work,
        }
    }
}

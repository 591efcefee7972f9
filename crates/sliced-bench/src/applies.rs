//! The apply part (`--only applies`): whole states through `POST /slices:apply`, in and out.
//!
//! Four fresh daemons, one after the other:
//! 1. sizes: for each of `--apply-sizes` (10,000, 100,000, 400,000), the declaration of
//!    that many slices, then the empty declaration `{"slices":[]}` that deletes them all;
//! 2. swaps: `--apply-swaps` times the same in and out with `--apply-swap-slices`, to see
//!    whether the daemon's memory comes back;
//! 3. what the data needs: each size applied, then the daemon restarted on that data, whose
//!    resident memory is what the data alone costs;
//! 4. `--apply-dry-runs` concurrent dry runs of the largest declaration the body limit takes.
//!
//! For each request: its wall time; the daemon's resident memory before, sampled every
//! [`SAMPLE_EVERY`] during it and after it settles (VmHWM only grows, so the samples give
//! each step's own peak); its CPU; and, from a reader on a connection of its own, how
//! many point reads were answered during it and the longest wait for one.

mod probes;
mod section;

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use crate::machine;
use crate::measure::Outcome;
use crate::sliced::Sliced;
use probes::{post, settled_rss, wait_for_slices, RssSampler};
pub(crate) use probes::{Answer, ReadTally, Reader};
pub(crate) use section::{in_place, section};

/// The part as the report and the other-work watcher name it.
pub(crate) const PART: &str = "applying a whole state";

/// The body limit of `POST /slices:apply` (`DECLARATION_LIMIT`, crates/slice-http/src/body.rs,
/// not exported by slice-http): the dry runs send the largest declaration within it. A size
/// over it is sent all the same and reported as refused.
pub(crate) const DECLARATION_LIMIT_BYTES: usize = 8 * 1024 * 1024;
/// How often the daemon's resident memory is sampled during a request.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_millis(20);
/// The reader's pace: one read at least this long after the start of the previous one, so
/// that it sees every stall without taking a core from the daemon on this 2-core machine.
pub(crate) const READ_EVERY: Duration = Duration::from_millis(5);
/// The slowest apply waited for (an empty apply after 419,429 slices once took 154.6 s).
const APPLY_TIMEOUT: Duration = Duration::from_secs(900);
/// How long a single read may hang before it counts as failed.
const READ_TIMEOUT: Duration = Duration::from_secs(600);
/// How long the controller's index may take to count the applied slices.
const INDEX_LIMIT: Duration = Duration::from_secs(300);
/// How long after a request resident memory is first read: sliced's allocator gives
/// emptied pages back a second after they empty (src/allocator.rs), and a reading during
/// that second measures the purge under way, not the daemon.
const SETTLE_FIRST: Duration = Duration::from_secs(3);
/// Resident memory holds still when two readings this far apart are within 1 %.
const SETTLE_PERIOD: Duration = Duration::from_millis(250);
const SETTLE_LIMIT: Duration = Duration::from_secs(10);
/// The issue's goals, read as numbers: an apply "in seconds", reads "answered throughout",
/// memory after repeated applies "within twice what its data needs".
pub(crate) const APPLY_GOAL: Duration = Duration::from_secs(10);
pub(crate) const READ_GOAL: Duration = Duration::from_secs(1);
pub(crate) const MEMORY_GOAL: f64 = 2.0;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Options {
    /// Slices declared by each apply of the apply part, comma-separated; each apply is
    /// followed by the empty one
    #[arg(
        long,
        value_delimiter = ',',
        default_values_t = [10_000u64, 100_000, 400_000],
        value_parser = clap::value_parser!(u64).range(1..=10_000_000),
        value_name = "N,..."
    )]
    pub apply_sizes: Vec<u64>,
    /// Swaps (apply in, apply out) of the apply part's memory test
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(0..=100))]
    pub apply_swaps: u64,
    /// Slices of each swap
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub apply_swap_slices: u64,
    /// Concurrent dry runs of the largest declaration within the body limit (0: none)
    #[arg(long, default_value_t = 96, value_parser = clap::value_parser!(u64).range(0..=1024))]
    pub apply_dry_runs: u64,
}

// ---- the declarations ------------------------------------------------------------------

pub(crate) fn slice_name(index: usize) -> String {
    format!("a{index}")
}

/// The declaration of slices `a0` .. `a<slices-1>`, without ports; no slices is the empty
/// declaration `{"slices":[]}`.
pub(crate) fn declaration(slices: usize) -> String {
    let mut body = String::with_capacity(declaration_bytes(slices));
    body.push_str(r#"{"slices":["#);
    for index in 0..slices {
        if index > 0 {
            body.push(',');
        }
        let _ = write!(body, r#"{{"name":"{}"}}"#, slice_name(index));
    }
    body.push_str("]}");
    body
}

/// The length of [`declaration`]`(slices)`, without building it.
pub(crate) fn declaration_bytes(slices: usize) -> usize {
    const ENVELOPE: usize = r#"{"slices":[]}"#.len();
    const ENTRY: usize = r#"{"name":"a"}"#.len();
    let digit_count: usize = (0..slices).map(digits).sum();
    ENVELOPE + slices * ENTRY + digit_count + slices.saturating_sub(1)
}

fn digits(mut value: usize) -> usize {
    let mut count = 1;
    while value >= 10 {
        value /= 10;
        count += 1;
    }
    count
}

/// The most slices whose declaration fits in `limit` bytes.
pub(crate) fn largest_within(limit: usize) -> usize {
    // Each slice costs at least 13 bytes, so the answer lies below limit / 13 + 1.
    let (mut low, mut high) = (0, limit / 13 + 1);
    while low < high {
        let middle = (low + high).div_ceil(2);
        if declaration_bytes(middle) <= limit {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    low
}

// ---- one request ------------------------------------------------------------------------

/// One `POST /slices:apply` and what it cost the daemon.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    // Part of the record (and of its Debug form), not quoted on the page; it went unflagged
    // while the results lived in the crate root.
    #[allow(dead_code)]
    pub declared: usize,
    pub body_bytes: usize,
    pub answer: Answer,
    /// From sending the request until its answer was read whole.
    pub wall: Duration,
    /// The daemon's user and system time during the request.
    pub cpu: Option<Duration>,
    pub rss_before_kib: u64,
    /// The highest VmRSS sample during the request.
    pub peak_kib: u64,
    /// VmHWM after the request: the daemon's peak so far.
    pub hwm_kib: u64,
    /// VmRSS once it held still after the request.
    pub rss_after_kib: u64,
    /// From the answer until `GET /metrics` counted the declared slices (none: refused,
    /// or not within [`INDEX_LIMIT`]).
    pub index_after: Option<Duration>,
    pub reads: ReadTally,
}

/// Applies the declaration of `slices` slices and measures it.
fn step(sliced: &Sliced, reader: &Reader, slices: usize) -> anyhow::Result<Step> {
    let body = declaration(slices);
    let pid = sliced.server.pid();
    let rss_before_kib = sliced.server.rss_kib()?;
    let cpu_before = machine::cpu_time(pid);
    reader.take();
    let sampler = RssSampler::start(pid);
    let started = Instant::now();
    let answer = post(&format!("{}/slices:apply", sliced.base), &body);
    let wall = started.elapsed();
    let reads = reader.take();
    let peak_kib = sampler.finish();
    let answer = answer?;
    let cpu = cpu_before
        .zip(machine::cpu_time(pid))
        .map(|(before, after)| after.saturating_sub(before));
    let hwm_kib = sliced.server.peak_rss_kib()?;
    let index_after = answer
        .succeeded()
        .then(|| wait_for_slices(&sliced.base, slices as u64))
        .flatten();
    let rss_after_kib = settled_rss(&sliced.server)?;
    Ok(Step {
        declared: slices,
        body_bytes: body.len(),
        answer,
        wall,
        cpu,
        rss_before_kib,
        peak_kib,
        hwm_kib,
        rss_after_kib,
        index_after,
        reads,
    })
}

// ---- the part ----------------------------------------------------------------------------

/// Each size in, then out.
pub(crate) struct SizeRow {
    pub slices: usize,
    pub into: Outcome<Step>,
    pub out: Outcome<Step>,
}

pub(crate) struct Swap {
    pub into: Step,
    pub out: Step,
}

pub(crate) struct Swaps {
    pub slices: usize,
    pub rows: Vec<Swap>,
    /// What a daemon restarted on the swaps' data directory, emptied by the last swap,
    /// holds: what the emptied store needs (sled's log still holds what it held).
    pub emptied_kib: u64,
}

/// A daemon (re)started on a data directory holding `slices` slices.
pub(crate) struct DataNeed {
    // Part of the record (and of its Debug form), not quoted on the page; it went unflagged
    // while the results lived in the crate root.
    #[allow(dead_code)]
    pub slices: usize,
    pub db_bytes: u64,
    pub start: Duration,
    /// VmRSS once it held still after serving, and VmHWM then.
    pub rss_kib: u64,
    pub hwm_kib: u64,
}

/// How many dry runs got one answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StatusCount {
    pub label: String,
    pub count: usize,
    /// The error the first of them stated.
    pub example: Option<String>,
}

pub(crate) struct DryRuns {
    pub clients: usize,
    pub declared: usize,
    pub body_bytes: usize,
    pub statuses: Vec<StatusCount>,
    /// From the first request sent until the last answer was read.
    pub wall: Duration,
    pub slowest: Duration,
    pub cpu: Option<Duration>,
    pub rss_before_kib: u64,
    pub peak_kib: u64,
    pub hwm_kib: u64,
    pub rss_after_kib: u64,
    pub reads: ReadTally,
}

impl DryRuns {
    pub(crate) fn count(&self, wanted: impl Fn(&str) -> bool) -> usize {
        self.statuses
            .iter()
            .filter(|s| wanted(&s.label))
            .map(|s| s.count)
            .sum()
    }
}

/// The answers grouped by status, in order of status ("no answer" last).
pub(crate) fn count_statuses(answers: &[Answer]) -> Vec<StatusCount> {
    let mut counts: Vec<StatusCount> = Vec::new();
    let mut sorted: Vec<&Answer> = answers.iter().collect();
    sorted.sort_by_key(|answer| answer.status.unwrap_or(u16::MAX));
    for answer in sorted {
        let label = answer.label();
        match counts.iter_mut().find(|c| c.label == label) {
            Some(count) => count.count += 1,
            None => counts.push(StatusCount {
                label,
                count: 1,
                example: answer.error.clone(),
            }),
        }
    }
    counts
}

pub(crate) struct Applies {
    pub sizes: Vec<SizeRow>,
    pub swaps: Option<Outcome<Swaps>>,
    /// Sorted by slices, from an empty data directory up.
    pub needs: Outcome<Vec<(usize, Outcome<DataNeed>)>>,
    pub dry_runs: Option<Outcome<DryRuns>>,
    pub elapsed: Duration,
}

impl Applies {
    /// The resident memory of a daemon restarted on `slices` slices, if measured.
    pub(crate) fn need_kib(&self, slices: usize) -> Option<u64> {
        let needs = self.needs.as_ref().ok()?;
        let (_, need) = needs.iter().find(|(n, _)| *n == slices)?;
        need.as_ref().ok().map(|need| need.rss_kib)
    }
}

pub(crate) fn run(
    binary: &Path,
    tmp: &Path,
    options: &Options,
    memory: &mut Vec<(String, String, u64)>,
) -> anyhow::Result<Applies> {
    let started = Instant::now();
    let sizes: Vec<usize> = options.apply_sizes.iter().map(|&n| n as usize).collect();
    let swap_slices = options.apply_swap_slices as usize;
    let sizes_rows = in_and_out(binary, &tmp.join("applies-sizes"), &sizes, memory)?;
    let swaps = (options.apply_swaps > 0).then(|| {
        crate::measure::outcome(
            swaps(
                binary,
                &tmp.join("applies-swaps"),
                swap_slices,
                options.apply_swaps as usize,
                memory,
            ),
            "the apply swaps",
        )
    });
    let mut need_sizes = sizes.clone();
    if options.apply_swaps > 0 {
        need_sizes.push(swap_slices);
    }
    need_sizes.sort_unstable();
    need_sizes.dedup();
    let needs = crate::measure::outcome(
        data_needs(binary, &tmp.join("applies-restarts"), &need_sizes, memory),
        "what the applied data needs",
    );
    let dry_runs = (options.apply_dry_runs > 0).then(|| {
        crate::measure::outcome(
            dry_runs(
                binary,
                &tmp.join("applies-dry-runs"),
                options.apply_dry_runs as usize,
                memory,
            ),
            "the concurrent dry runs",
        )
    });
    Ok(Applies {
        sizes: sizes_rows,
        swaps,
        needs,
        dry_runs,
        elapsed: started.elapsed(),
    })
}

fn reader_for(sliced: &Sliced) -> Reader {
    Reader::start(format!("{}/slices/{}", sliced.base, slice_name(0)))
}

fn log_step(what: &str, step: &Step) {
    eprintln!(
        "sliced-bench: {what}: {} in {:.2} s, CPU {:.2} s, RSS {} -> {} KiB (peak {} sampled, \
         VmHWM {}), reads {} answered / {} failed, longest {:.3} s",
        step.answer.describe(),
        step.wall.as_secs_f64(),
        step.cpu.unwrap_or_default().as_secs_f64(),
        step.rss_before_kib,
        step.rss_after_kib,
        step.peak_kib,
        step.hwm_kib,
        step.reads.answered(),
        step.reads.failed,
        step.reads.longest.as_secs_f64()
    );
}

/// Each size in, then the empty declaration, on one daemon. A step that got no answer
/// ends the sizes: the daemon may still be busy with it.
fn in_and_out(
    binary: &Path,
    dir: &Path,
    sizes: &[usize],
    memory: &mut Vec<(String, String, u64)>,
) -> anyhow::Result<Vec<SizeRow>> {
    let sliced = Sliced::start(binary, dir, &[])?;
    let reader = reader_for(&sliced);
    let mut rows = Vec::new();
    for &slices in sizes {
        eprintln!("sliced-bench: apply {slices} slices, then none");
        let what = format!("apply {slices} slices");
        let into = crate::measure::outcome(step(&sliced, &reader, slices), &what);
        if let Ok(step) = &into {
            log_step(&what, step);
        }
        let out = match &into {
            Ok(_) => {
                let what = format!("the empty apply after {slices}");
                let out = crate::measure::outcome(step(&sliced, &reader, 0), &what);
                if let Ok(step) = &out {
                    log_step(&what, step);
                }
                out
            }
            Err(_) => Err("not run: the apply before it failed".to_owned()),
        };
        let failed = out.is_err();
        rows.push(SizeRow { slices, into, out });
        if failed {
            break;
        }
    }
    drop(reader);
    crate::measure::record_peak(
        memory,
        "applies: sizes in and out",
        "sliced",
        &sliced.server,
    );
    sliced.server.stop()?;
    Ok(rows)
}

fn swaps(
    binary: &Path,
    dir: &Path,
    slices: usize,
    count: usize,
    memory: &mut Vec<(String, String, u64)>,
) -> anyhow::Result<Swaps> {
    let sliced = Sliced::start(binary, dir, &[])?;
    let reader = reader_for(&sliced);
    let mut rows = Vec::new();
    for swap in 1..=count {
        eprintln!("sliced-bench: swap {swap} of {count}: {slices} slices in and out");
        let into = step(&sliced, &reader, slices)?;
        log_step("in", &into);
        let out = step(&sliced, &reader, 0)?;
        log_step("out", &out);
        rows.push(Swap { into, out });
    }
    drop(reader);
    crate::measure::record_peak(memory, "applies: swaps", "sliced", &sliced.server);
    sliced.server.stop()?;
    eprintln!("sliced-bench: a restart on the emptied data of the swaps");
    let restarted = Sliced::start(binary, dir, &[])?;
    let emptied_kib = settled_rss(&restarted.server)?;
    restarted.server.stop()?;
    Ok(Swaps {
        slices,
        rows,
        emptied_kib,
    })
}

/// A fresh daemon, then for each size (ascending, so that each apply only adds): the
/// apply, a restart on its data, and the restarted daemon's memory.
fn data_needs(
    binary: &Path,
    dir: &Path,
    sizes: &[usize],
    memory: &mut Vec<(String, String, u64)>,
) -> anyhow::Result<Vec<(usize, Outcome<DataNeed>)>> {
    let started = Instant::now();
    let mut sliced = Sliced::start(binary, dir, &[])?;
    let mut rows = vec![(
        0,
        Ok(DataNeed {
            slices: 0,
            db_bytes: crate::measure::dir_size(&dir.join("data")),
            start: started.elapsed(),
            rss_kib: settled_rss(&sliced.server)?,
            hwm_kib: sliced.server.peak_rss_kib()?,
        }),
    )];
    for &slices in sizes {
        eprintln!("sliced-bench: {slices} slices applied, then a restart on them");
        let answer = post(
            &format!("{}/slices:apply", sliced.base),
            &declaration(slices),
        )?;
        if !answer.succeeded() {
            rows.push((slices, Err(format!("refused: {}", answer.describe()))));
            continue;
        }
        wait_for_slices(&sliced.base, slices as u64);
        sliced.server.stop()?;
        let db_bytes = crate::measure::dir_size(&dir.join("data"));
        let started = Instant::now();
        sliced = Sliced::start_within(binary, dir, &[], Duration::from_secs(300))?;
        let start = started.elapsed();
        wait_for_slices(&sliced.base, slices as u64);
        let need = DataNeed {
            slices,
            db_bytes,
            start,
            rss_kib: settled_rss(&sliced.server)?,
            hwm_kib: sliced.server.peak_rss_kib()?,
        };
        eprintln!(
            "sliced-bench: restarted on {slices} slices in {:.2} s: RSS {} KiB, VmHWM {} KiB, \
             data {} bytes",
            need.start.as_secs_f64(),
            need.rss_kib,
            need.hwm_kib,
            need.db_bytes
        );
        rows.push((slices, Ok(need)));
    }
    crate::measure::record_peak(memory, "applies: restarts", "sliced", &sliced.server);
    sliced.server.stop()?;
    Ok(rows)
}

fn dry_runs(
    binary: &Path,
    dir: &Path,
    clients: usize,
    memory: &mut Vec<(String, String, u64)>,
) -> anyhow::Result<DryRuns> {
    let sliced = Sliced::start(binary, dir, &[])?;
    let reader = reader_for(&sliced);
    let declared = largest_within(DECLARATION_LIMIT_BYTES);
    let body = declaration(declared);
    let url = format!("{}/slices:apply?dry_run=true", sliced.base);
    eprintln!(
        "sliced-bench: {clients} concurrent dry runs of {declared} slices ({} bytes)",
        body.len()
    );
    let pid = sliced.server.pid();
    let rss_before_kib = settled_rss(&sliced.server)?;
    let cpu_before = machine::cpu_time(pid);
    reader.take();
    let sampler = RssSampler::start(pid);
    let barrier = Barrier::new(clients);
    let started = Instant::now();
    let results: Vec<(Answer, Duration)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..clients)
            .map(|_| {
                let (barrier, url, body) = (&barrier, &url, &body);
                scope.spawn(move || {
                    barrier.wait();
                    let sent = Instant::now();
                    let answer = post(url, body).unwrap_or_else(|err| Answer {
                        status: None,
                        bytes: 0,
                        // The cause alone (a broken pipe, a reset): the URL adds nothing.
                        error: Some(err.root_cause().to_string()),
                    });
                    (answer, sent.elapsed())
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|handle| handle.join().ok())
            .collect()
    });
    let wall = started.elapsed();
    let reads = reader.take();
    let peak_kib = sampler.finish();
    let cpu = cpu_before
        .zip(machine::cpu_time(pid))
        .map(|(before, after)| after.saturating_sub(before));
    let hwm_kib = sliced.server.peak_rss_kib()?;
    let rss_after_kib = settled_rss(&sliced.server)?;
    drop(reader);
    crate::measure::record_peak(memory, "applies: dry runs", "sliced", &sliced.server);
    sliced.server.stop()?;
    let answers: Vec<Answer> = results.iter().map(|(answer, _)| answer.clone()).collect();
    let dry_runs = DryRuns {
        clients,
        declared,
        body_bytes: body.len(),
        statuses: count_statuses(&answers),
        wall,
        slowest: results
            .iter()
            .map(|(_, took)| *took)
            .max()
            .unwrap_or_default(),
        cpu,
        rss_before_kib,
        peak_kib,
        hwm_kib,
        rss_after_kib,
        reads,
    };
    let statuses: Vec<String> = dry_runs
        .statuses
        .iter()
        .map(|s| format!("{} × {}", s.count, s.label))
        .collect();
    eprintln!(
        "sliced-bench: dry runs: {} in {:.2} s; RSS {} -> {} KiB, peak {} sampled, VmHWM {}",
        statuses.join(", "),
        wall.as_secs_f64(),
        rss_before_kib,
        rss_after_kib,
        peak_kib,
        hwm_kib
    );
    Ok(dry_runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_are_the_wire_format_and_their_length_is_known() {
        assert_eq!(declaration(0), r#"{"slices":[]}"#);
        assert_eq!(
            declaration(2),
            r#"{"slices":[{"name":"a0"},{"name":"a1"}]}"#
        );
        for slices in [0, 1, 2, 9, 10, 11, 99, 100, 101, 12_345] {
            assert_eq!(
                declaration_bytes(slices),
                declaration(slices).len(),
                "{slices}"
            );
        }
        let parsed: slice_core::wire::Declaration =
            serde_json::from_str(&declaration(3)).expect("a declaration");
        assert_eq!(parsed.slices.len(), 3);
        assert_eq!(parsed.slices[2].name.to_string(), "a2");
    }

    #[test]
    fn the_largest_declaration_fits_and_one_more_slice_does_not() {
        for limit in [13, 24, 25, 1000, DECLARATION_LIMIT_BYTES] {
            let most = largest_within(limit);
            assert!(declaration_bytes(most) <= limit, "{limit}");
            assert!(declaration_bytes(most + 1) > limit, "{limit}");
        }
        assert_eq!(largest_within(12), 0);
        // The default sizes fit in the daemon's limit.
        assert!(declaration_bytes(400_000) <= DECLARATION_LIMIT_BYTES);
    }

    #[test]
    fn statuses_are_counted_in_order_with_an_example() {
        let answer = |status: Option<u16>, error: Option<&str>| Answer {
            status,
            bytes: 0,
            error: error.map(str::to_owned),
        };
        let counts = count_statuses(&[
            answer(Some(503), Some("busy")),
            answer(None, Some("reset")),
            answer(Some(200), None),
            answer(Some(503), Some("still busy")),
            answer(Some(200), None),
        ]);
        let summary: Vec<(&str, usize, Option<&str>)> = counts
            .iter()
            .map(|c| (c.label.as_str(), c.count, c.example.as_deref()))
            .collect();
        assert_eq!(
            summary,
            [
                ("200", 2, None),
                ("503", 2, Some("busy")),
                ("no answer", 1, Some("reset"))
            ]
        );
        assert!(answer(Some(204), None).succeeded());
        assert!(!answer(Some(413), None).succeeded());
        assert!(!answer(None, None).succeeded());
    }

    #[test]
    fn the_flags_default_to_the_issues_sizes() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            options: Options,
        }
        let defaults = Cli::try_parse_from(["bench"]).expect("no flags").options;
        assert_eq!(defaults.apply_sizes, [10_000, 100_000, 400_000]);
        assert_eq!(
            (
                defaults.apply_swaps,
                defaults.apply_swap_slices,
                defaults.apply_dry_runs
            ),
            (4, 100_000, 96)
        );
        let small = Cli::try_parse_from(["bench", "--apply-sizes", "5,7", "--apply-swaps", "0"])
            .expect("small sizes")
            .options;
        assert_eq!((small.apply_sizes, small.apply_swaps), (vec![5, 7], 0));
        assert!(Cli::try_parse_from(["bench", "--apply-sizes", "0"]).is_err());
    }
}

//! The part's section of docs/benchmarks.md, and writing it alone into the page in place.

use std::fmt::Write as _;
use std::time::Duration;

use super::{
    Answer, Applies, ReadTally, Step, APPLY_GOAL, DECLARATION_LIMIT_BYTES, MEMORY_GOAL, PART,
    READ_EVERY, READ_GOAL, SAMPLE_EVERY, SETTLE_FIRST, SETTLE_LIMIT, SETTLE_PERIOD,
};
use crate::measure::Outcome;
use crate::page::{display_args, disturbed, mib, ms, not_measured, thousands, Stamp};

/// This part's heading; `--only applies` rewrites the section under it in place.
const HEADING: &str = "## 7. Applying a whole state";
/// What a heading of this section starts with, whatever its title became.
const HEADING_NUMBER: &str = "## 7. ";
/// The section a new section 7 goes before.
const NEXT_HEADING: &str = "## Method notes";

/// docs/benchmarks.md with this part's section written in place of the one there (or
/// before the method notes), the rest untouched; none when `doc` is not a benchmarks page.
pub(crate) fn in_place(doc: &str, applies: &Outcome<Applies>, stamp: &Stamp) -> Option<String> {
    if !crate::in_place::is_benchmarks_page(doc) {
        return None;
    }
    let mut text = String::new();
    section(&mut text, applies, stamp);
    Some(splice(doc, &text))
}

/// `doc` with this part's section replaced by `section`, or inserted where it belongs.
fn splice(doc: &str, section: &str) -> String {
    crate::in_place::splice(doc, HEADING_NUMBER, NEXT_HEADING, section)
}

fn bytes(count: u64) -> String {
    if count >= 1024 * 1024 {
        format!("{:.1} MiB", count as f64 / (1024.0 * 1024.0))
    } else if count >= 1024 {
        format!("{:.0} KiB", count as f64 / 1024.0)
    } else {
        format!("{count} B")
    }
}

fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs < 1.0 {
        ms(secs * 1000.0)
    } else if secs < 10.0 {
        format!("{secs:.2} s")
    } else {
        format!("{secs:.1} s")
    }
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "not met"
    }
}

fn answer_cell(answer: &Answer) -> String {
    match (&answer.status, &answer.error) {
        (Some(status), None) => format!("{status} ({} plan)", bytes(answer.bytes)),
        (_, Some(error)) => format!("**{}**: {}", answer.label(), error.replace('|', "/")),
        (None, None) => "no answer".into(),
    }
}

fn step_cells(step: &Step) -> String {
    let index = step.index_after.map_or(String::new(), |after| {
        format!(" (+{} index)", seconds(after))
    });
    format!(
        "{} | {} | {}{index} | {}",
        bytes(step.body_bytes as u64),
        answer_cell(&step.answer),
        seconds(step.wall),
        cost_cells(
            step.cpu,
            [
                step.rss_before_kib,
                step.rss_after_kib,
                step.peak_kib,
                step.hwm_kib
            ],
            &step.reads
        ),
    )
}

/// The cells every measured request shares: daemon CPU, resident memory before and
/// after (`kib`: before, settled after, sampled peak, VmHWM), and the reads meanwhile.
fn cost_cells(cpu: Option<Duration>, kib: [u64; 4], reads: &ReadTally) -> String {
    let [before, after, peak, hwm] = kib;
    format!(
        "{} | {} → {} | {} / {} | {} ({} failed) | {} |",
        cpu.map_or("n/a".into(), seconds),
        mib(before),
        mib(after),
        mib(peak),
        mib(hwm),
        thousands(reads.answered() as f64),
        reads.failed,
        seconds(reads.longest),
    )
}

const STEP_COLUMNS: &str = "| body | answer | time (+ until the controller's index counts it) | \
     daemon CPU | RSS before → settled after | peak RSS during (sampled / VmHWM) | reads \
     answered | longest read |";
const STEP_RULE: &str = "|---:|---|---:|---:|---:|---:|---:|---:|";

/// The part's section of docs/benchmarks.md.
pub(crate) fn section(doc: &mut String, applies: &Outcome<Applies>, stamp: &Stamp) {
    let _ = writeln!(doc, "{HEADING}\n");
    disturbed(doc, stamp.other_work, PART);
    let _ = writeln!(
        doc,
        "Run of {}: `{}`. Rerun this part alone with `cargo xtask bench --only applies`, \
         which rewrites this section in place and leaves the rest of the page as it was \
         (`--apply-sizes`, `--apply-swaps`, `--apply-swap-slices` and `--apply-dry-runs` \
         change its loads).\n",
        stamp.started,
        display_args(stamp.args)
    );
    let applies = match applies {
        Ok(applies) => applies,
        Err(why) => return not_measured(doc, why),
    };
    let _ = writeln!(
        doc,
        "`POST /slices:apply` makes the slices equal to a declared state. On a fresh sliced \
         (default flags), for each size N: the declaration of N slices `a0` … `a<N-1>` \
         without ports (`{{\"slices\":[{{\"name\":\"a0\"}},…]}}`), then the empty \
         declaration `{{\"slices\":[]}}`, which deletes them all. Each request goes on a \
         connection of its own and is timed until its answer is read whole. During it, a \
         thread samples sliced's VmRSS every {} ms (the highest sample is the step's peak; \
         VmHWM, read after it, is the daemon's peak so far), and a reader on a keep-alive \
         connection of its own sends `GET /slices/a0` every {} ms (200 while the slice \
         exists, 404 when not: both are answers; the longest read counts one still \
         waiting when the step ended). After the answer: the time until `GET /metrics` \
         counts the declared slices in the controller's index, then VmRSS, from {} s on \
         (sliced's allocator gives emptied pages back a second after they empty), once \
         two readings {} ms apart are within 1 % ({} s more at most). Daemon CPU is its \
         user and system time during the request.\n",
        SAMPLE_EVERY.as_millis(),
        READ_EVERY.as_millis(),
        SETTLE_FIRST.as_secs(),
        SETTLE_PERIOD.as_millis(),
        SETTLE_LIMIT.as_secs(),
    );
    let _ = writeln!(doc, "| step {STEP_COLUMNS}\n|---{STEP_RULE}");
    for row in &applies.sizes {
        let n = thousands(row.slices as f64);
        for (what, step) in [
            (format!("apply {n} slices"), &row.into),
            (format!("apply `{{\"slices\":[]}}` after {n}"), &row.out),
        ] {
            match step {
                Ok(step) => {
                    let _ = writeln!(doc, "| {what} | {}", step_cells(step));
                }
                Err(why) => {
                    let _ = writeln!(doc, "| {what} | {} |", why.replace(['\n', '|'], " "));
                }
            }
        }
    }
    let _ = writeln!(doc);
    swaps_table(doc, applies);
    needs_table(doc, applies);
    dry_runs_table(doc, applies);
    let _ = writeln!(
        doc,
        "The part took {:.0} s.\n\n{}\n",
        applies.elapsed.as_secs_f64(),
        reading(applies)
    );
}

fn swaps_table(doc: &mut String, applies: &Applies) {
    let Some(swaps) = &applies.swaps else {
        return;
    };
    let _ = writeln!(doc, "**Swaps.** On another fresh sliced, the same in and out again and again: does the memory come back?\n");
    let swaps = match swaps {
        Ok(swaps) => swaps,
        Err(why) => return not_measured(doc, why),
    };
    let n = thousands(swaps.slices as f64);
    let _ = writeln!(doc, "| swap | step {STEP_COLUMNS}\n|---:|---{STEP_RULE}");
    for (index, swap) in swaps.rows.iter().enumerate() {
        let _ = writeln!(
            doc,
            "| {} | apply {n} slices | {}",
            index + 1,
            step_cells(&swap.into)
        );
        let _ = writeln!(
            doc,
            "| {} | apply `{{\"slices\":[]}}` | {}",
            index + 1,
            step_cells(&swap.out)
        );
    }
    let _ = writeln!(doc);
}

fn needs_table(doc: &mut String, applies: &Applies) {
    let _ = writeln!(
        doc,
        "**What the data needs.** On a third fresh sliced, each size applied (smallest \
         first, so that each apply only adds), then sliced stopped and started again on \
         that data directory: its resident memory once it serves and holds still is what \
         the data costs, without what applying it left behind.\n"
    );
    let needs = match &applies.needs {
        Ok(needs) => needs,
        Err(why) => return not_measured(doc, why),
    };
    let _ = writeln!(
        doc,
        "| slices | data directory | start until serving | RSS (settled) | VmHWM |\n\
         |---:|---:|---:|---:|---:|"
    );
    for (slices, need) in needs {
        match need {
            Ok(need) => {
                let _ = writeln!(
                    doc,
                    "| {} | {} | {} | {} | {} |",
                    thousands(*slices as f64),
                    bytes(need.db_bytes),
                    seconds(need.start),
                    mib(need.rss_kib),
                    mib(need.hwm_kib)
                );
            }
            Err(why) => {
                let _ = writeln!(
                    doc,
                    "| {} | {} | | | |",
                    thousands(*slices as f64),
                    why.replace(['\n', '|'], " ")
                );
            }
        }
    }
    let _ = writeln!(doc);
}

fn dry_runs_table(doc: &mut String, applies: &Applies) {
    let Some(dry_runs) = &applies.dry_runs else {
        return;
    };
    let d = match dry_runs {
        Ok(d) => d,
        Err(why) => {
            let _ = writeln!(doc, "**Concurrent dry runs.**\n");
            return not_measured(doc, why);
        }
    };
    let _ = writeln!(
        doc,
        "**Concurrent dry runs.** On a fourth fresh sliced (no slices), {} clients each \
         send `POST /slices:apply?dry_run=true` with the largest declaration within the \
         {} body limit ({} slices, {}) at once, each on a connection of its own.\n",
        d.clients,
        bytes(DECLARATION_LIMIT_BYTES as u64),
        thousands(d.declared as f64),
        bytes(d.body_bytes as u64),
    );
    let statuses: Vec<String> = d
        .statuses
        .iter()
        .map(|s| match &s.example {
            Some(example) => format!(
                "{} × {} (“{}”)",
                s.count,
                s.label,
                example.replace(['\n', '|'], " ")
            ),
            None => format!("{} × {}", s.count, s.label),
        })
        .collect();
    let _ = writeln!(
        doc,
        "| answers | all answered after (slowest) | daemon CPU | RSS before → settled after | \
         peak RSS during (sampled / VmHWM) | reads answered | longest read |\n\
         |---|---:|---:|---:|---:|---:|---:|\n\
         | {} | {} ({}) | {}\n",
        statuses.join("; "),
        seconds(d.wall),
        seconds(d.slowest),
        cost_cells(
            d.cpu,
            [d.rss_before_kib, d.rss_after_kib, d.peak_kib, d.hwm_kib],
            &d.reads
        ),
    );
}

/// What the figures say against the goals.
pub(super) fn reading(applies: &Applies) -> String {
    let mut text = String::from("**Reading.**");
    for row in &applies.sizes {
        let (Ok(into), Ok(out)) = (&row.into, &row.out) else {
            continue;
        };
        let n = thousands(row.slices as f64);
        let shown = |step: &Step| {
            if step.answer.succeeded() {
                seconds(step.wall)
            } else {
                format!("{} (refused: {})", seconds(step.wall), step.answer.label())
            }
        };
        let longest = into.reads.longest.max(out.reads.longest);
        let failed = into.reads.failed + out.reads.failed;
        let _ = write!(
            text,
            " {n} slices in: {}, out: {}; the longest read waited {}{} (goals: each apply \
             under {} s, {}; reads within {} s, {}).",
            shown(into),
            shown(out),
            seconds(longest),
            if failed > 0 {
                format!(" and {failed} reads failed")
            } else {
                String::new()
            },
            APPLY_GOAL.as_secs(),
            verdict(into.wall < APPLY_GOAL && out.wall < APPLY_GOAL),
            READ_GOAL.as_secs(),
            verdict(longest < READ_GOAL && failed == 0),
        );
    }
    if let Some(Ok(swaps)) = &applies.swaps {
        let full = applies.need_kib(swaps.slices);
        // The emptied store against a restart on the same emptied directory, whose
        // sled log still holds what it held.
        let empty = Some(swaps.emptied_kib);
        let ratios: Vec<String> = swaps
            .rows
            .iter()
            .map(|swap| {
                let over = |kib: u64, need: Option<u64>| {
                    need.filter(|&need| need > 0).map_or("n/a".into(), |need| {
                        format!("{:.1}×", kib as f64 / need as f64)
                    })
                };
                format!(
                    "{} ({}) in, {} ({}) out",
                    mib(swap.into.rss_after_kib),
                    over(swap.into.rss_after_kib, full),
                    mib(swap.out.rss_after_kib),
                    over(swap.out.rss_after_kib, empty)
                )
            })
            .collect();
        let worst = swaps
            .rows
            .iter()
            .filter_map(|swap| {
                let into = swap.into.rss_after_kib as f64 / full? as f64;
                let out = swap.out.rss_after_kib as f64 / empty? as f64;
                Some(into.max(out))
            })
            .fold(None, |worst: Option<f64>, ratio| {
                Some(worst.map_or(ratio, |w| w.max(ratio)))
            });
        let _ = write!(
            text,
            " After each swap of {} slices the daemon held {}: resident memory over what \
             a daemon restarted on the same data holds ({} with the slices, {} on the \
             swaps' emptied data directory).",
            thousands(swaps.slices as f64),
            ratios.join("; "),
            full.map_or("n/a".into(), mib),
            empty.map_or("n/a".into(), mib),
        );
        if let Some(worst) = worst {
            let _ = write!(
                text,
                " At worst {worst:.1}×: the goal (within {MEMORY_GOAL:.0}× what the data \
                 needs) is {}.",
                verdict(worst <= MEMORY_GOAL)
            );
        }
    }
    if let Some(Ok(d)) = &applies.dry_runs {
        let ok = d.count(|label| label.starts_with('2'));
        let _ = write!(
            text,
            " {} concurrent dry runs of {}: {ok} answered 2xx, {} 503, {} otherwise; \
             sliced's resident memory peaked at {} (sampled) from {}, and the longest read \
             meanwhile waited {}.",
            d.clients,
            bytes(d.body_bytes as u64),
            d.count(|label| label == "503"),
            d.count(|label| !label.starts_with('2') && label != "503"),
            mib(d.peak_kib),
            mib(d.rss_before_kib),
            seconds(d.reads.longest),
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_is_replaced_in_place() {
        let doc = "# Benchmarks\n\n## 6. Cluster failover\n\nsix\n\n## 7. Applying a whole state\n\nold\n\n### sub\n\nold too\n\n## Method notes\n\n- notes\n";
        assert_eq!(
            splice(doc, "## 7. Applying a whole state\n\nnew\n\n"),
            "# Benchmarks\n\n## 6. Cluster failover\n\nsix\n\n## 7. Applying a whole state\n\nnew\n\n## Method notes\n\n- notes\n"
        );
    }

    #[test]
    fn a_missing_section_goes_before_the_method_notes_or_at_the_end() {
        let doc = "# Benchmarks\n\n## 6. Cluster failover\n\nsix\n\n## Method notes\n\n- notes\n";
        assert_eq!(
            splice(doc, "## 7. A\n\nnew\n\n"),
            "# Benchmarks\n\n## 6. Cluster failover\n\nsix\n\n## 7. A\n\nnew\n\n## Method notes\n\n- notes\n"
        );
        assert_eq!(
            splice("# Benchmarks\n\nend", "## 7. A\n\nnew\n\n"),
            "# Benchmarks\n\nend\n\n## 7. A\n\nnew\n\n"
        );
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(bytes(13), "13 B");
        assert_eq!(bytes(190_000), "186 KiB");
        assert_eq!(bytes(8 * 1024 * 1024), "8.0 MiB");
        assert_eq!(seconds(Duration::from_millis(154_600)), "154.6 s");
        assert_eq!(seconds(Duration::from_millis(1_500)), "1.50 s");
        assert_eq!(seconds(Duration::from_millis(12)), "12.0 ms");
    }
}

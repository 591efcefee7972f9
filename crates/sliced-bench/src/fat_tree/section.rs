//! The fat-tree part's section of docs/benchmarks.md: the figures of each tree, and the
//! same figures beside issue 36's "before" and its goals.

use std::fmt::Write as _;
use std::time::Duration;

use super::{FatTrees, Figures, TablesRight, PART, SLICES};
use crate::measure::Outcome;
use crate::page::{display_args, disturbed, mib, ms, not_measured, thousands, Stamp};

/// This part's heading; `--only fat-tree` rewrites the section under it in place.
const HEADING: &str = "## 9. Fat trees on Open vSwitch";
const HEADING_NUMBER: &str = "## 9. ";
const NEXT_HEADING: &str = "## Method notes";

/// One column of issue 36's table: its measurements before its work began, on this
/// machine, idle.
struct Before {
    k: u32,
    connect: f64,
    discovery: f64,
    apply: f64,
    largest: usize,
    rss_mib: f64,
}

const BEFORE: [Before; 2] = [
    Before {
        k: 8,
        connect: 1.12,
        discovery: 2.05,
        apply: 0.28,
        largest: 274,
        rss_mib: 35.0,
    },
    Before {
        k: 16,
        connect: 16.7,
        discovery: 21.3,
        apply: 4.54,
        largest: 2074,
        rss_mib: 259.0,
    },
];
/// Issue 36's goals at k=16: connect, discovery, apply → tables, in seconds.
const GOALS_K16: (f64, f64, f64) = (2.0, 5.0, 1.0);

/// docs/benchmarks.md with this part's section written in place of the one there (or
/// before the method notes); none when `doc` is not a benchmarks page.
pub(crate) fn in_place(doc: &str, trees: &Outcome<FatTrees>, stamp: &Stamp) -> Option<String> {
    if !crate::in_place::is_benchmarks_page(doc) {
        return None;
    }
    let mut text = String::new();
    section(&mut text, trees, stamp);
    Some(crate::in_place::splice(
        doc,
        HEADING_NUMBER,
        NEXT_HEADING,
        &text,
    ))
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

fn tree_heading(figures: &Figures) -> String {
    format!(
        "k={} ({} switches, {} cables, {} hosts)",
        figures.k,
        thousands(figures.switches as f64),
        thousands(figures.cables as f64),
        thousands(figures.hosts as f64)
    )
}

fn tables_cell(tables: &TablesRight) -> String {
    format!("{} (±{})", seconds(tables.took), seconds(tables.round))
}

/// The part's section.
pub(crate) fn section(doc: &mut String, trees: &Outcome<FatTrees>, stamp: &Stamp) {
    let _ = writeln!(doc, "{HEADING}\n");
    disturbed(doc, stamp.other_work, PART);
    let _ = writeln!(
        doc,
        "Run of {}: `{}`. Rerun this part alone with `cargo xtask bench --only fat-tree` \
         (one tree: `--fat-tree-k 8`), which rewrites this section in place and leaves the \
         rest of the page as it was.\n",
        stamp.started,
        display_args(stamp.args)
    );
    let trees = match trees {
        Ok(trees) => trees,
        Err(why) => return not_measured(doc, why),
    };
    let _ = writeln!(
        doc,
        "sliced: {}. Each tree runs on a fresh sliced (default flags but its addresses) and a \
         fresh Open vSwitch ({}) in a network namespace of its own: userspace bridges \
         (`datapath_type=netdev`, OpenFlow 1.3, `fail_mode=secure`) joined by patch ports, \
         an internal port with its own MAC address on every host port, sliced reached over \
         a veth pair. The tree is built without a controller; the clock starts when one \
         ovs-vsctl transaction gives every bridge its controller. Hosts send nothing: these \
         are the control plane's figures.\n\n\
         - *connected*: `GET /topology/switches` lists every switch; *discovered*: `GET \
           /topology/links` holds both directions of every cable (read every 100 ms).\n\
         - *apply → every table right*: one `POST /slices:apply` binds every host port with \
           its MAC address in {SLICES} slices, round robin; a table is right when the bridge \
           holds exactly as many entries with the pipeline's cookie (`ovs-ofctl \
           dump-aggregate`, cookie `0x5c1c04…`) as sliced's `pipeline_entries` for it, and \
           that count is not the one before the apply; the time is when the last bridge was \
           found right, confirmed by one more round over all of them (each round asks every \
           bridge before it reads any answer). ± is how long before that the same bridge was \
           last seen not right yet: the figure's resolution.\n\
         - *one binding*: a second MAC address on host 0's port (`POST \
           /slices/ft0/ports/…/mac_addresses`), every table right the same way.\n\
         - *links lost*: `sliced_link_events_total{{event=\"down\"}}` from every cable \
           discovered to the cut, when nothing changed in the network.\n\
         - *cable cut*: the patch port pair of one aggregation-to-core cable deleted in one \
           ovs-vsctl transaction, until sliced lists neither direction (read every 20 ms).\n\
         - Memory is VmHWM, CPU is user + system time from `/proc/<pid>/stat`, over the \
           whole tree's run, and in brackets from the apply to every table right; *in \
           discovery* is from the controllers given to every cable discovered.\n\
         - *FLOW_MODs sent*: `sliced_flow_mods_sent_total` (each entry of a bundle counts \
           one) from the controllers given to every cable discovered, and from the apply to \
           every table right.\n",
        trees.sliced_from, trees.ovs_version,
    );
    let measured: Vec<&Figures> = trees
        .trees
        .iter()
        .filter_map(|(_, o)| o.as_ref().ok())
        .collect();
    for (k, outcome) in &trees.trees {
        if let Err(why) = outcome {
            let _ = writeln!(doc, "**k={k} not measured:** {}\n", why.replace('\n', " "));
        }
    }
    if measured.is_empty() {
        return;
    }
    let _ = write!(doc, "| |");
    for figures in &measured {
        let _ = write!(doc, " {} |", tree_heading(figures));
    }
    let _ = write!(doc, "\n|---|");
    for _ in &measured {
        let _ = write!(doc, "---:|");
    }
    let _ = writeln!(doc);
    let mut row = |label: &str, cell: &dyn Fn(&Figures) -> String| {
        let _ = write!(doc, "| {label} |");
        for figures in &measured {
            let _ = write!(doc, " {} |", cell(figures));
        }
        let _ = writeln!(doc);
    };
    row("load average as the tree began", &|f| {
        format!("{:.2}", f.load)
    });
    row("building bridges and ports (not sliced)", &|f| {
        seconds(f.build)
    });
    row("every switch connected", &|f| seconds(f.connect));
    row("every cable discovered", &|f| seconds(f.discovery));
    row("apply → every table right", &|f| tables_cell(&f.apply));
    row("the apply's answer", &|f| seconds(f.apply_answer));
    row("entries, all switches", &|f| {
        thousands(f.apply.total() as f64)
    });
    row("largest table (per host)", &|f| {
        format!(
            "{} ({:.2})",
            thousands(f.apply.largest() as f64),
            f.apply.largest() as f64 / f.hosts as f64
        )
    });
    row("one binding → every table right", &|f| {
        tables_cell(&f.binding)
    });
    row("links lost while no cable changed", &|f| {
        f.flaps
            .map_or_else(|| "n/a".into(), |n| thousands(n as f64))
    });
    if measured.iter().any(|f| f.quiet.is_some()) {
        row("CPU hog (`--fat-tree-hog`)", &|f| {
            f.hog_core
                .map_or_else(|| "none".into(), |core| format!("core {core} kept busy"))
        });
        row("quiet window after convergence: links lost, held", &|f| {
            f.quiet.map_or_else(
                || "n/a".into(),
                |quiet| {
                    format!(
                        "{}, {} in {} s{}",
                        quiet.lost,
                        quiet.held,
                        quiet.window.as_secs(),
                        if quiet.passed() { "" } else { " (goal: 0)" }
                    )
                },
            )
        });
    }
    row("FLOW_MODs sent: discovery, apply", &|f| {
        let count = |n: Option<u64>| n.map_or_else(|| "n/a".into(), |n| thousands(n as f64));
        format!(
            "{}, {}",
            count(f.flow_mods_discovery),
            count(f.flow_mods_apply)
        )
    });
    row("CPU in discovery: sliced, ovs-vswitchd", &|f| {
        format!(
            "{}, {}",
            seconds(f.discovery_cpu.0),
            seconds(f.discovery_cpu.1)
        )
    });
    row("a cable cut → link withdrawn", &|f| seconds(f.cut));
    row("sliced: peak RSS", &|f| mib(f.sliced.peak_rss_kib));
    row("ovs-vswitchd: peak RSS", &|f| mib(f.vswitchd.peak_rss_kib));
    row("sliced: CPU (apply)", &|f| {
        format!(
            "{} ({})",
            seconds(f.sliced.cpu),
            seconds(f.sliced.apply_cpu)
        )
    });
    row("ovs-vswitchd: CPU (apply)", &|f| {
        format!(
            "{} ({})",
            seconds(f.vswitchd.cpu),
            seconds(f.vswitchd.apply_cpu)
        )
    });
    let _ = writeln!(doc);
    if let Some(quiet) = measured.iter().find_map(|f| f.quiet) {
        let _ = writeln!(
            doc,
            "With `--fat-tree-hog` a spinning process (`taskset`, a shell loop) kept one core \
             busy from before the tree was built until it was measured; once every switch, \
             every cable and every table was right, the run watched a quiet window of {} s \
             with no cable changed (`sliced_link_events_total{{event=\"down\"}}` and \
             `sliced_links_held_total`): the goal is 0, and a miss fails the run.\n",
            quiet.window.as_secs()
        );
    }
    against_the_issue(doc, &measured);
}

/// The figures beside issue 36's "before" and its goals at k=16.
fn against_the_issue(doc: &mut String, measured: &[&Figures]) {
    let compared: Vec<(&Figures, &Before)> = measured
        .iter()
        .filter_map(|f| Some((*f, BEFORE.iter().find(|b| b.k == f.k)?)))
        .collect();
    if compared.is_empty() {
        return;
    }
    let _ = writeln!(
        doc,
        "Against issue 36's table (its \"before\", measured on this machine idle before the \
         issue's work) and its goals at k=16:\n"
    );
    let _ = write!(doc, "| |");
    for (figures, _) in &compared {
        let _ = write!(doc, " k={} before | k={} now |", figures.k, figures.k);
    }
    let _ = writeln!(doc, " goal, k=16 |");
    let _ = write!(doc, "|---|");
    for _ in &compared {
        let _ = write!(doc, "---:|---:|");
    }
    let _ = writeln!(doc, "---:|");
    let secs = |value: f64| seconds(Duration::from_secs_f64(value));
    let goal = |value: f64| format!("< {}", secs(value));
    type Cells<'a> = &'a dyn Fn(&Figures, &Before) -> (String, String);
    let mut row = |label: &str, cells: Cells, goal: String| {
        let _ = write!(doc, "| {label} |");
        for (figures, before) in &compared {
            let (then, now) = cells(figures, before);
            let _ = write!(doc, " {then} | {now} |");
        }
        let _ = writeln!(doc, " {goal} |");
    };
    row(
        "every switch connected",
        &|f, b| (secs(b.connect), seconds(f.connect)),
        goal(GOALS_K16.0),
    );
    row(
        "every cable discovered",
        &|f, b| (secs(b.discovery), seconds(f.discovery)),
        goal(GOALS_K16.1),
    );
    row(
        "apply → every table right",
        &|f, b| (secs(b.apply), seconds(f.apply.took)),
        goal(GOALS_K16.2),
    );
    row(
        "largest table",
        &|f, b| {
            (
                thousands(b.largest as f64),
                thousands(f.apply.largest() as f64),
            )
        },
        "".into(),
    );
    row(
        "sliced RSS, peak",
        &|f, b| (format!("{:.0} MiB", b.rss_mib), mib(f.sliced.peak_rss_kib)),
        "".into(),
    );
    let _ = writeln!(doc);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp_args() -> Vec<String> {
        vec!["sliced-bench".into(), "--only".into(), "fat-tree".into()]
    }

    #[test]
    fn the_section_goes_after_section_8_and_is_replaced_in_place() {
        let doc = "# Benchmarks\n\n## 8. Flow tables against hosts\n\ntables\n\n## Method notes\n\nnotes\n";
        let args = stamp_args();
        let stamp = Stamp {
            started: "now",
            args: &args,
            other_work: &[],
        };
        let failed: Outcome<FatTrees> = Err("no Open vSwitch".into());
        let once = in_place(doc, &failed, &stamp).expect("a benchmarks page");
        let at = once.find(HEADING).expect("written");
        assert!(once.find("## 8.").expect("kept") < at);
        assert!(at < once.find("## Method notes").expect("kept"));
        assert!(once.contains("**Not measured:** no Open vSwitch"));
        let twice = in_place(&once, &failed, &stamp).expect("a benchmarks page");
        assert_eq!(twice, once);
        assert_eq!(in_place("# Other page\n", &failed, &stamp), None);
    }

    #[test]
    fn a_tree_that_failed_says_why_beside_the_ones_measured() {
        let trees = FatTrees {
            trees: vec![(16, Err("not within 300 s: every switch connected".into()))],
            sliced_from: "built from commit abc1234".into(),
            ovs_version: "ovs-vswitchd (Open vSwitch) 3.1.0".into(),
        };
        let args = stamp_args();
        let stamp = Stamp {
            started: "now",
            args: &args,
            other_work: &[],
        };
        let mut doc = String::new();
        section(&mut doc, &Ok(trees), &stamp);
        assert!(doc.contains("**k=16 not measured:** not within 300 s"));
        assert!(doc.contains("built from commit abc1234"));
    }
}

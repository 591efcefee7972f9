//! The report's vocabulary, shared by its sections and by the parts that write their
//! own (applies, tables): how numbers read, what a run that did not measure says, and the
//! warning over a part that other work disturbed.

use std::fmt::Write as _;

use crate::watcher::OtherWork;
use crate::wire;

/// When and how a run was made, and what else ran meanwhile: what a section quotes
/// besides its own figures.
pub(crate) struct Stamp<'a> {
    pub started: &'a str,
    pub args: &'a [String],
    pub other_work: &'a [OtherWork],
}

/// 12345.6 -> "12,346".
pub(crate) fn thousands(value: f64) -> String {
    if !value.is_finite() {
        return "n/a".into();
    }
    let rounded = value.round() as i64;
    let digits = rounded.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if rounded < 0 {
        out.insert(0, '-');
    }
    out
}

/// Milliseconds with three significant-ish digits.
pub(crate) fn ms(value: f64) -> String {
    if !value.is_finite() {
        "n/a".into()
    } else if value >= 100.0 {
        format!("{value:.0} ms")
    } else if value >= 10.0 {
        format!("{value:.1} ms")
    } else if value >= 1.0 {
        format!("{value:.2} ms")
    } else {
        format!("{:.0} µs", value * 1000.0)
    }
}

pub(crate) fn us(value: f64) -> String {
    ms(value / 1000.0)
}

pub(crate) fn ns(value: f64) -> String {
    if value >= 1e6 {
        ms(value / 1e6)
    } else if value >= 1e3 {
        format!("{:.1} µs", value / 1e3)
    } else {
        format!("{value:.0} ns")
    }
}

pub(crate) fn ratio(ours: f64, theirs: f64) -> String {
    if theirs > 0.0 && ours.is_finite() && theirs.is_finite() {
        format!("{:.2}×", ours / theirs)
    } else {
        "n/a".into()
    }
}

pub(crate) fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// A warning at the top of a section when other work ran during its part.
pub(crate) fn disturbed(doc: &mut String, other_work: &[OtherWork], part: &str) {
    if let Some(work) = other_work.iter().find(|w| w.part == part) {
        let _ = writeln!(
            doc,
            "*Other work ran on the machine during this part ({}): its figures are \
             pessimistic, and a ratio whose two sides were measured at different moments \
             is noisier than usual.*\n",
            other_work_text(work)
        );
    }
}

pub(crate) fn other_work_text(work: &OtherWork) -> String {
    let names: Vec<String> = work
        .busiest
        .iter()
        .map(|(name, cores)| format!("{name} {cores:.2}"))
        .collect();
    format!(
        "other processes used {:.2} cores on average, {:.2} at most; busiest: {}",
        work.mean_cores,
        work.max_cores,
        names.join(", ")
    )
}

pub(crate) fn not_measured(doc: &mut String, why: &str) {
    let _ = writeln!(doc, "**Not measured:** {}\n", why.replace('\n', " "));
}

pub(crate) fn display_args(args: &[String]) -> String {
    let mut words = vec!["sliced-bench".to_owned()];
    words.extend(args.iter().skip(1).cloned());
    words.join(" ")
}

/// An OpenFlow version as the page writes it.
pub(crate) fn version_text(version: u8) -> &'static str {
    match version {
        wire::OFP10 => "1.0",
        wire::OFP13 => "1.3",
        _ => "?",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(ms(0.25), "250 µs");
        assert_eq!(ms(12.345), "12.3 ms");
        assert_eq!(ns(1500.0), "1.5 µs");
        assert_eq!(ratio(1.0, 4.0), "0.25×");
        assert_eq!(ratio(1.0, 0.0), "n/a");
    }
}

//! Writing one part's section into docs/benchmarks.md in place, the rest of the page as
//! it was: what a run of the apply or table parts alone does.

/// Whether `doc` is a benchmarks page this tool wrote.
pub(crate) fn is_benchmarks_page(doc: &str) -> bool {
    doc.starts_with("# Benchmarks")
}

/// `doc` with the section whose heading starts with `heading_number` (`"## 7. "`)
/// replaced by `section`, or `section` inserted before the heading `next_heading` (at the
/// end without one).
pub(crate) fn splice(doc: &str, heading_number: &str, next_heading: &str, section: &str) -> String {
    let lines: Vec<&str> = doc.split_inclusive('\n').collect();
    let (start, end) = match lines.iter().position(|l| l.starts_with(heading_number)) {
        Some(start) => {
            let end = lines[start + 1..]
                .iter()
                .position(|l| l.starts_with("## "))
                .map_or(lines.len(), |offset| start + 1 + offset);
            (start, end)
        }
        None => {
            let at = lines
                .iter()
                .position(|l| l.starts_with(next_heading))
                .unwrap_or(lines.len());
            (at, at)
        }
    };
    let mut out = lines[..start].concat();
    if !out.is_empty() && !out.ends_with("\n\n") {
        out.push_str(if out.ends_with('\n') { "\n" } else { "\n\n" });
    }
    out.push_str(section);
    out.push_str(&lines[end..].concat());
    out
}

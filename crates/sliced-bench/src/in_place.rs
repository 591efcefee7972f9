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

/// `doc` with the lines of its Headlines list that start with one of `starts` replaced
/// by `lines` (whole lines), put where the first of them was, or at the end of the list
/// when there was none; `doc` as it was without a Headlines section.
pub(crate) fn replace_headlines(doc: &str, starts: &[&str], lines: &str) -> String {
    let all: Vec<&str> = doc.split_inclusive('\n').collect();
    let Some(heading) = all.iter().position(|l| l.trim_end() == "## Headlines") else {
        return doc.to_owned();
    };
    let end = all[heading + 1..]
        .iter()
        .position(|l| l.starts_with("## "))
        .map_or(all.len(), |offset| heading + 1 + offset);
    let ours = |line: &str| starts.iter().any(|start| line.starts_with(start));
    let at = (heading + 1..end)
        .find(|&i| ours(all[i]))
        .or_else(|| {
            (heading + 1..end)
                .rev()
                .find(|&i| all[i].starts_with("- "))
                .map(|i| i + 1)
        })
        .unwrap_or(heading + 1);
    let mut out = String::with_capacity(doc.len() + lines.len());
    for (i, line) in all.iter().enumerate() {
        if i == at {
            out.push_str(lines);
        }
        if !(heading < i && i < end && ours(line)) {
            out.push_str(line);
        }
    }
    if at == all.len() {
        out.push_str(lines);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const STARTS: [&str; 2] = ["- Flow a", "- Flow b"];

    #[test]
    fn headline_lines_are_replaced_where_they_were() {
        let doc = "# Benchmarks\n\n## Headlines\n\n- REST x\n- Flow a old\n- Flow b old\n- Scale y\n\n## 1. R\n\n- Flow a not a headline\n";
        assert_eq!(
            replace_headlines(doc, &STARTS, "- Flow a new\n- Flow c new\n"),
            "# Benchmarks\n\n## Headlines\n\n- REST x\n- Flow a new\n- Flow c new\n- Scale y\n\n## 1. R\n\n- Flow a not a headline\n"
        );
        assert_eq!(
            replace_headlines(doc, &STARTS, ""),
            "# Benchmarks\n\n## Headlines\n\n- REST x\n- Scale y\n\n## 1. R\n\n- Flow a not a headline\n"
        );
    }

    #[test]
    fn missing_headline_lines_go_at_the_end_of_the_list() {
        let doc = "# Benchmarks\n\n## Headlines\n\n- REST x\n\n## 1. R\n";
        assert_eq!(
            replace_headlines(doc, &STARTS, "- Flow a new\n"),
            "# Benchmarks\n\n## Headlines\n\n- REST x\n- Flow a new\n\n## 1. R\n"
        );
        assert_eq!(
            replace_headlines("# Benchmarks\n", &STARTS, "- Flow a\n"),
            "# Benchmarks\n"
        );
    }
}

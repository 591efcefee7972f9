//! What every part does with a measurement: keep it or the reason it failed, and the
//! peak memory and disk use of what it ran.

use std::path::Path;

use crate::procs::Server;

/// A measurement that may not have happened; the reason goes into the report.
pub(crate) type Outcome<T> = Result<T, String>;

pub(crate) fn outcome<T>(result: anyhow::Result<T>, what: &str) -> Outcome<T> {
    result.map_err(|err| {
        let text = format!("{err:#}");
        eprintln!("sliced-bench: {what} not measured: {text}");
        text
    })
}

pub(crate) fn record_peak(
    memory: &mut Vec<(String, String, u64)>,
    run: &str,
    name: &str,
    server: &Server,
) {
    match server.peak_rss_kib() {
        Ok(kib) => memory.push((run.to_owned(), name.to_owned(), kib)),
        Err(err) => eprintln!("sliced-bench: no peak memory of {name}: {err:#}"),
    }
}

pub(crate) fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => dir_size(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

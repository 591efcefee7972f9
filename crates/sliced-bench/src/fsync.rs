//! The machine's raw durable-write rate: append a block, flush it, repeat.
//!
//! Two flushes are measured: `fdatasync`, what "durable" means to most users, and
//! `sync_file_range(WAIT_BEFORE | WRITE | WAIT_AFTER)`, which is what sled 0.34 (sliced's
//! storage) calls on Linux when it flushes its log. The second writes the data back and
//! waits for it but commits no file system metadata and issues no device cache flush, so
//! it is much cheaper, and weaker, than the first.

use std::io::{Seek, Write};
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::stats::Percentiles;

/// How each block is made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flush {
    Fdatasync,
    SyncFileRange,
}

impl Flush {
    pub fn name(self) -> &'static str {
        match self {
            Flush::Fdatasync => "fdatasync",
            Flush::SyncFileRange => "sync_file_range",
        }
    }
}

/// What the loop measured.
#[derive(Debug, Clone)]
pub struct FsyncResult {
    pub flush: Flush,
    pub per_sec: f64,
    /// Latency of one write + flush, in microseconds.
    pub latency_us: Percentiles,
    pub block: usize,
}

/// Appends `block` bytes and flushes them, over and over for `duration`, on a new file
/// in `dir` (the file system the database lives on), then removes the file.
pub fn measure(
    dir: &Path,
    flush: Flush,
    duration: Duration,
    block: usize,
) -> anyhow::Result<FsyncResult> {
    let path = dir.join("fsync-probe");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    let data = vec![0x5au8; block];
    let mut samples = Vec::new();
    let started = Instant::now();
    let mut offset = 0usize;
    while started.elapsed() < duration {
        let one = Instant::now();
        file.write_all(&data)?;
        match flush {
            Flush::Fdatasync => file.sync_data()?,
            Flush::SyncFileRange => sync_range(&file, offset, block)?,
        }
        samples.push(one.elapsed());
        offset += block;
        // Keep the file small: start over every 64 MiB, like a log segment.
        if offset >= 64 << 20 {
            file.set_len(0)?;
            file.rewind()?;
            file.sync_all()?;
            offset = 0;
        }
    }
    let elapsed = started.elapsed();
    drop(file);
    std::fs::remove_file(&path)?;
    Ok(FsyncResult {
        flush,
        per_sec: samples.len() as f64 / elapsed.as_secs_f64(),
        latency_us: Percentiles::of_durations(&samples),
        block,
    })
}

fn sync_range(file: &std::fs::File, offset: usize, len: usize) -> anyhow::Result<()> {
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
        | libc::SYNC_FILE_RANGE_WRITE
        | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    let offset = libc::off64_t::try_from(offset)?;
    let len = libc::off64_t::try_from(len)?;
    // SAFETY: sync_file_range(2) on a descriptor that `file` keeps open for the call; it
    // reads no memory of ours.
    let ret = unsafe { libc::sync_file_range(file.as_raw_fd(), offset, len, flags) };
    if ret < 0 {
        return Err(std::io::Error::last_os_error()).context("sync_file_range");
    }
    Ok(())
}

//! The machine's raw durable-write rate: append a block, flush it, repeat.
//!
//! Two flushes are measured: `fdatasync`, what "durable" means to most users, and
//! `sync_file_range(WAIT_BEFORE | WRITE | WAIT_AFTER)`, which is what sled 0.34 (sliced's
//! storage) calls on Linux when it flushes its log. The second writes the data back and
//! waits for it but commits no file system metadata and issues no device cache flush, so
//! it is much cheaper, and weaker, than the first.
//!
//! A third loop is the floor of sliced's own durable write: one thread applying a small
//! sled batch (the two records a slice creation writes), then `sled::Db::flush` and the
//! `fdatasync` of sled's log file that sliced's store adds, with no HTTP and no other
//! thread of sliced's in the way. sled's flush hands the write of its log buffer to its
//! own I/O thread and waits for it (`sync_file_range` included), so this loop costs more
//! than the plain fdatasync loop, and no sliced write can cost less.

use std::io::{Seek, Write};
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::stats::Percentiles;

/// How each block is made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flush {
    Fdatasync,
    SyncFileRange,
    /// sled batch + `Db::flush` + fdatasync of its log: sliced's store with nothing around it.
    SledCommit,
}

impl Flush {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Flush::Fdatasync => "fdatasync",
            Flush::SyncFileRange => "sync_file_range",
            Flush::SledCommit => "sled batch + flush + fdatasync",
        }
    }
}

/// What the loop measured.
#[derive(Debug, Clone)]
pub(crate) struct FsyncResult {
    pub flush: Flush,
    pub per_sec: f64,
    /// Latency of one write + flush, in microseconds.
    pub latency_us: Percentiles,
    pub block: usize,
}

/// Appends `block` bytes and flushes them, over and over for `duration`, on a new file
/// in `dir` (the file system the database lives on), then removes the file.
pub(crate) fn measure(
    dir: &Path,
    flush: Flush,
    duration: Duration,
    block: usize,
) -> anyhow::Result<FsyncResult> {
    if flush == Flush::SledCommit {
        return measure_sled(dir, duration);
    }
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
        // SledCommit returned above: the loop flushes a file of its own only.
        if flush == Flush::SyncFileRange {
            sync_range(&file, offset, block)?;
        } else {
            file.sync_data()?;
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

/// The sled loop of [`Flush::SledCommit`], on a fresh database in `dir`, removed after.
fn measure_sled(dir: &Path, duration: Duration) -> anyhow::Result<FsyncResult> {
    let path = dir.join("sled-probe");
    let db = sled::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
    let tree = db.open_tree("probe")?;
    // sled 0.34 keeps its log in the file "db" of its directory, as sliced's store reads it.
    let log = std::fs::File::open(path.join("db")).context("cannot open sled's log")?;
    let mut samples = Vec::new();
    let started = Instant::now();
    let mut n = 0u64;
    while started.elapsed() < duration {
        let one = Instant::now();
        let mut batch = sled::Batch::default();
        // About what a slice creation writes: a name record and an order record.
        batch.insert(
            [b"n".as_slice(), &n.to_be_bytes()].concat(),
            &n.to_be_bytes()[..],
        );
        batch.insert(
            [b"s".as_slice(), &n.to_be_bytes()].concat(),
            &b"bench-slice-name"[..],
        );
        tree.apply_batch(batch)?;
        db.flush()?;
        log.sync_data()?;
        samples.push(one.elapsed());
        n += 1;
    }
    let elapsed = started.elapsed();
    drop((tree, db, log));
    std::fs::remove_dir_all(&path)?;
    Ok(FsyncResult {
        flush: Flush::SledCommit,
        per_sec: samples.len() as f64 / elapsed.as_secs_f64(),
        latency_us: Percentiles::of_durations(&samples),
        block: 0,
    })
}

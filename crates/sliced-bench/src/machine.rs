//! What machine a run happened on, and what else was running on it.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

/// The facts the report starts with.
#[derive(Debug, Clone)]
pub(crate) struct Machine {
    pub nproc: usize,
    pub cpu: String,
    pub memory_mib: u64,
    pub kernel: String,
    /// File system type of the temporary directory (where the databases live).
    pub tmp_fs: String,
}

impl Machine {
    pub(crate) fn describe(tmp: &Path) -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|line| {
                let (key, value) = line.split_once(':')?;
                (key.trim() == "model name").then(|| value.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".into());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_kib: u64 = meminfo
            .lines()
            .find_map(|line| {
                line.strip_prefix("MemTotal:")?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()
            })
            .unwrap_or(0);
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|text| text.trim().to_owned())
            .unwrap_or_else(|_| "unknown".into());
        Self {
            nproc: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu,
            memory_mib: memory_kib / 1024,
            kernel,
            tmp_fs: fs_type(tmp),
        }
    }
}

/// The type of the file system that holds `path`: the longest mount point above it.
fn fs_type(path: &Path) -> String {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_owned());
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (device, point, kind) = (fields.next()?, fields.next()?, fields.next()?);
            path.starts_with(point)
                .then(|| (point.len(), format!("{kind} ({device} on {point})")))
        })
        .max_by_key(|(len, _)| *len)
        .map_or_else(|| "unknown".into(), |(_, text)| text)
}

/// The 1-minute load average.
pub(crate) fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// One process as /proc/<pid>/stat describes it.
struct Stat {
    ppid: u32,
    comm: String,
    /// User plus system time, in clock ticks.
    ticks: u64,
}

fn read_stat(pid: u32) -> Option<Stat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces; fields after it start with
    // the state (field 3), so ppid is field 4, utime 14 and stime 15.
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_owned();
    let fields: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(Stat {
        ppid: u32::try_from(field(4)?).ok()?,
        comm,
        ticks: field(14)? + field(15)?,
    })
}

/// The user plus system time a process has used so far, to a clock tick (10 ms on
/// Linux's usual `USER_HZ`).
pub(crate) fn cpu_time(pid: u32) -> Option<Duration> {
    let ticks = read_stat(pid)?.ticks;
    Some(Duration::from_secs_f64(ticks as f64 / ticks_per_sec()))
}

fn ticks_per_sec() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

fn all_stats() -> HashMap<u32, Stat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, read_stat(pid)?)))
        .collect()
}

/// Measures the CPU used by processes that are neither this one, its ancestors (cargo
/// run, xtask) nor its descendants (sliced, the peers, wrk, cargo bench): other work on
/// the machine while the benchmark runs.
pub(crate) struct OtherCpu {
    previous: HashMap<u32, u64>,
    at: Instant,
    ticks_per_sec: f64,
}

/// One reading: cores used by others since the previous one, and the busiest of them.
pub(crate) struct OtherCpuSample {
    pub cores: f64,
    pub busiest: Vec<(String, f64)>,
}

impl OtherCpu {
    pub(crate) fn new() -> Self {
        let mut sampler = Self {
            previous: HashMap::new(),
            at: Instant::now(),
            ticks_per_sec: ticks_per_sec(),
        };
        sampler.sample();
        sampler
    }

    pub(crate) fn sample(&mut self) -> OtherCpuSample {
        let stats = all_stats();
        let me = std::process::id();
        let mut ours: HashSet<u32> = HashSet::from([me]);
        // Ancestors.
        let mut current = me;
        while let Some(stat) = stats.get(&current) {
            if stat.ppid <= 1 || !ours.insert(stat.ppid) {
                break;
            }
            current = stat.ppid;
        }
        // Descendants: grow the set until no process has a parent in it.
        let mut descendants: HashSet<u32> = HashSet::from([me]);
        loop {
            let before = descendants.len();
            for (pid, stat) in &stats {
                if descendants.contains(&stat.ppid) {
                    descendants.insert(*pid);
                }
            }
            if descendants.len() == before {
                break;
            }
        }
        ours.extend(descendants);
        let elapsed = self.at.elapsed().as_secs_f64().max(1e-3);
        let mut by_name: HashMap<String, f64> = HashMap::new();
        let mut total = 0.0;
        for (pid, stat) in &stats {
            if ours.contains(pid) {
                continue;
            }
            // A process missing from the previous sample started since: all its time
            // falls in this interval. (One that started and ended between two samples is
            // not seen at all.)
            let before = self.previous.get(pid).copied().unwrap_or(0);
            let cores = stat.ticks.saturating_sub(before) as f64 / self.ticks_per_sec / elapsed;
            if cores > 0.0 {
                total += cores;
                *by_name.entry(stat.comm.clone()).or_default() += cores;
            }
        }
        self.previous = stats.iter().map(|(pid, stat)| (*pid, stat.ticks)).collect();
        self.at = Instant::now();
        let mut busiest: Vec<(String, f64)> = by_name.into_iter().collect();
        busiest.sort_by(|a, b| b.1.total_cmp(&a.1));
        busiest.truncate(4);
        OtherCpuSample {
            cores: total,
            busiest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_stat_parses() {
        let stat = read_stat(std::process::id()).expect("our /proc/self/stat");
        assert!(stat.ppid > 0);
        assert!(!stat.comm.is_empty());
    }

    #[test]
    fn other_cpu_is_a_finite_share() {
        let mut sampler = OtherCpu::new();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let sample = sampler.sample();
        assert!(sample.cores.is_finite() && sample.cores >= 0.0);
    }
}

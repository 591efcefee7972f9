//! Watches the machine for other work while the parts run, so that the report can say
//! which figures it may have disturbed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::machine;

/// Other work seen during one part of the benchmark.
#[derive(Debug, Clone)]
pub(crate) struct OtherWork {
    pub part: String,
    /// Mean and highest one-second share of the machine's cores used by other processes.
    pub mean_cores: f64,
    pub max_cores: f64,
    /// The busiest other processes (by name) over the part, in cores.
    pub busiest: Vec<(String, f64)>,
}

#[derive(Default)]
struct PartTally {
    part: String,
    samples: usize,
    sum: f64,
    max: f64,
    by_name: Vec<(String, f64)>,
}

/// Samples, once a second, the CPU that other processes use, per part of the benchmark.
pub(crate) struct Watcher {
    part: Arc<Mutex<String>>,
    tallies: Arc<Mutex<Vec<PartTally>>>,
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watcher {
    pub(crate) fn start() -> Self {
        let part = Arc::new(Mutex::new(String::from("setup")));
        let tallies: Arc<Mutex<Vec<PartTally>>> = Arc::default();
        let done = Arc::new(AtomicBool::new(false));
        let thread = {
            let (part, tallies, done) =
                (Arc::clone(&part), Arc::clone(&tallies), Arc::clone(&done));
            std::thread::spawn(move || {
                let mut sampler = machine::OtherCpu::new();
                while !done.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_secs(1));
                    let sample = sampler.sample();
                    let current = part.lock().unwrap_or_else(|e| e.into_inner()).clone();
                    let mut tallies = tallies.lock().unwrap_or_else(|e| e.into_inner());
                    if tallies.last().map_or(true, |t| t.part != current) {
                        tallies.push(PartTally {
                            part: current,
                            ..PartTally::default()
                        });
                    }
                    // Just pushed when missing, so there is a last tally.
                    let Some(tally) = tallies.last_mut() else {
                        continue;
                    };
                    tally.samples += 1;
                    tally.sum += sample.cores;
                    tally.max = tally.max.max(sample.cores);
                    for (name, cores) in sample.busiest {
                        match tally.by_name.iter_mut().find(|(n, _)| *n == name) {
                            Some((_, total)) => *total += cores,
                            None => tally.by_name.push((name, cores)),
                        }
                    }
                }
            })
        };
        Self {
            part,
            tallies,
            done,
            thread: Some(thread),
        }
    }

    pub(crate) fn enter(&self, part: &str) {
        eprintln!("sliced-bench: {part}");
        *self.part.lock().unwrap_or_else(|e| e.into_inner()) = part.to_owned();
    }

    /// Stops sampling; the parts during which other processes used a noticeable share of
    /// the machine (a tenth of a core on average, or a whole core at some moment).
    pub(crate) fn stop(mut self) -> Vec<OtherWork> {
        self.done.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let tallies = std::mem::take(&mut *self.tallies.lock().unwrap_or_else(|e| e.into_inner()));
        tallies
            .into_iter()
            .filter(|t| t.samples > 0 && t.part != "setup")
            .map(|mut t| {
                let samples = t.samples as f64;
                t.by_name.sort_by(|a, b| b.1.total_cmp(&a.1));
                OtherWork {
                    part: t.part,
                    mean_cores: t.sum / samples,
                    max_cores: t.max,
                    busiest: t
                        .by_name
                        .into_iter()
                        .take(4)
                        .map(|(name, total)| (name, total / samples))
                        .collect(),
                }
            })
            .filter(|w| w.mean_cores >= 0.1 || w.max_cores >= 1.0)
            .collect()
    }
}

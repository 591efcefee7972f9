//! What `GET /metrics` shows: the controller's and the store's counters, the network's
//! size read from the engine at scrape time, the process, and the build.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};
use slice_controller::{ControllerHandle, ControllerMetrics, Engine};

/// Every metric of ours is named `sliced_*`; the process metrics keep their standard
/// `process_*` names.
pub(crate) const PREFIX: &str = "sliced";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabel {
    version: &'static str,
}

/// The network's size, set from one snapshot of the engine per scrape: the engine keeps
/// no counts of its own, so its event loop pays nothing for them.
#[derive(Clone, Default)]
struct NetworkGauges {
    switches: Family<VersionLabel, Gauge>,
    ports: Gauge,
    links: Gauge,
    hosts: Gauge,
    paths: Gauge,
    slices: Gauge,
    bound_ports: Gauge,
    bound_macs: Gauge,
}

struct Census {
    switches: Vec<&'static str>,
    ports: usize,
    links: usize,
    hosts: usize,
    paths: usize,
    slices: usize,
    bound_ports: usize,
    bound_macs: usize,
}

fn census(engine: &Engine) -> Census {
    let switches = engine.switches();
    let membership = engine.membership();
    Census {
        switches: switches
            .iter()
            .map(|switch| version_label(switch.version))
            .collect(),
        ports: switches.iter().map(|switch| switch.ports.len()).sum(),
        links: engine.links().len(),
        hosts: engine.hosts().len(),
        paths: engine.paths().len(),
        slices: membership.slice_count(),
        bound_ports: membership.bound_port_count(),
        bound_macs: membership.bound_mac_count(),
    }
}

/// The OpenFlow version as operators name it.
fn version_label(wire: u8) -> &'static str {
    match wire {
        0x01 => "1.0",
        0x04 => "1.3",
        _ => "other",
    }
}

fn gauge_of(count: usize) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

impl NetworkGauges {
    fn register(&self, registry: &mut Registry) {
        let gauges: [(&str, &str, &Gauge); 7] = [
            ("ports", "Ports of the connected switches", &self.ports),
            ("links", "Links between switches", &self.links),
            ("hosts", "Hosts learned", &self.hosts),
            ("paths", "Paths between two hosts in place", &self.paths),
            ("slices", "Slices", &self.slices),
            (
                "bound_ports",
                "Ports bound to slices (a port once per slice)",
                &self.bound_ports,
            ),
            (
                "bound_mac_addresses",
                "MAC addresses bound to slices' ports",
                &self.bound_macs,
            ),
        ];
        for (name, help, gauge) in gauges {
            registry.register(name, help, gauge.clone());
        }
        registry.register(
            "switches",
            "Switches connected, by OpenFlow version",
            self.switches.clone(),
        );
    }

    fn set(&self, census: &Census) {
        // Versions no switch speaks any more go; the two the controller speaks stay at 0.
        self.switches.clear();
        for version in ["1.0", "1.3"] {
            let _ = self.switches.get_or_create(&VersionLabel { version });
        }
        for version in &census.switches {
            self.switches.get_or_create(&VersionLabel { version }).inc();
        }
        self.ports.set(gauge_of(census.ports));
        self.links.set(gauge_of(census.links));
        self.hosts.set(gauge_of(census.hosts));
        self.paths.set(gauge_of(census.paths));
        self.slices.set(gauge_of(census.slices));
        self.bound_ports.set(gauge_of(census.bound_ports));
        self.bound_macs.set(gauge_of(census.bound_macs));
    }
}

/// The store's group commits: how long each flush took and how many writes it covered.
pub(crate) struct StoreMetrics {
    latency: Histogram,
    batch: Histogram,
}

impl StoreMetrics {
    fn register(registry: &mut Registry) -> Arc<Self> {
        let metrics = Self {
            // 100 µs to about 3 s: a flush is one or two fsyncs.
            latency: Histogram::new(exponential_buckets(0.0001, 2.0, 15)),
            batch: Histogram::new(exponential_buckets(1.0, 2.0, 10)),
        };
        registry.register_with_unit(
            "store_commit_duration",
            "Time of one group commit of the store (its flush and fsync)",
            Unit::Seconds,
            metrics.latency.clone(),
        );
        registry.register(
            "store_commit_batch_size",
            "Writes made durable by one group commit",
            metrics.batch.clone(),
        );
        Arc::new(metrics)
    }
}

impl slice_store::CommitObserver for StoreMetrics {
    fn committed(&self, writes: u64, took: Duration) {
        self.latency.observe(took.as_secs_f64());
        // Precision is lost only past 2^53 writes in one flush.
        self.batch.observe(writes as f64);
    }
}

/// The standard process metrics, read from /proc at scrape time.
#[derive(Default)]
struct ProcessGauges {
    cpu_seconds: Counter<f64, std::sync::atomic::AtomicU64>,
    /// The CPU time already counted, so that each scrape adds what was used since.
    cpu_counted: Mutex<f64>,
    resident_bytes: Gauge,
    virtual_bytes: Gauge,
    open_fds: Gauge,
    max_fds: Gauge,
    threads: Gauge,
    start_time: Gauge<f64, std::sync::atomic::AtomicU64>,
}

impl ProcessGauges {
    fn register(self: &Arc<Self>, registry: &mut Registry) {
        registry.register_with_unit(
            "process_cpu",
            "User and system CPU time spent",
            Unit::Seconds,
            self.cpu_seconds.clone(),
        );
        registry.register_with_unit(
            "process_resident_memory",
            "Resident memory size",
            Unit::Bytes,
            self.resident_bytes.clone(),
        );
        registry.register_with_unit(
            "process_virtual_memory",
            "Virtual memory size",
            Unit::Bytes,
            self.virtual_bytes.clone(),
        );
        registry.register(
            "process_open_fds",
            "Open file descriptors",
            self.open_fds.clone(),
        );
        registry.register(
            "process_max_fds",
            "Limit of open file descriptors",
            self.max_fds.clone(),
        );
        registry.register("process_threads", "OS threads", self.threads.clone());
        registry.register_with_unit(
            "process_start_time",
            "Start time of the process since the Unix epoch",
            Unit::Seconds,
            self.start_time.clone(),
        );
    }

    /// Reads /proc/self; a read that fails leaves the last values (and is logged once
    /// per scrape at debug level: a scrape must not fail for it).
    fn refresh(&self) {
        if let Err(err) = self.read() {
            log::debug!("process metrics: {err}");
        }
    }

    fn read(&self) -> procfs::ProcResult<()> {
        let process = procfs::process::Process::myself()?;
        let stat = process.stat()?;
        let ticks = procfs::ticks_per_second() as f64;
        let cpu = (stat.utime + stat.stime) as f64 / ticks;
        {
            let mut counted = self.cpu_counted.lock().unwrap_or_else(|e| e.into_inner());
            if cpu > *counted {
                self.cpu_seconds.inc_by(cpu - *counted);
                *counted = cpu;
            }
        }
        let page = procfs::page_size();
        self.resident_bytes
            .set(i64::try_from(stat.rss.saturating_mul(page)).unwrap_or(i64::MAX));
        self.virtual_bytes
            .set(i64::try_from(stat.vsize).unwrap_or(i64::MAX));
        self.threads.set(stat.num_threads);
        self.open_fds.set(gauge_of(process.fd_count()?));
        if let procfs::process::LimitValue::Value(max) = process.limits()?.max_open_files.soft_limit
        {
            self.max_fds.set(i64::try_from(max).unwrap_or(i64::MAX));
        }
        let boot = procfs::boot_time_secs()?;
        self.start_time
            .set(boot as f64 + stat.starttime as f64 / ticks);
        Ok(())
    }
}

/// Everything measured, before the HTTP application adds its own.
pub(crate) struct Measured {
    pub registry: Registry,
    pub controller: Arc<ControllerMetrics>,
    pub store: Arc<StoreMetrics>,
    network: NetworkGauges,
    process: Arc<ProcessGauges>,
    /// On etcd: the keys the store skips, and the store to count them in at each scrape.
    skipped_keys: Option<(Gauge, Arc<slice_etcd::EtcdStore>)>,
}

impl Measured {
    /// The metrics of the daemon, with those of the event streams `events` serves.
    pub(crate) fn new(events: &slice_http::EventHub) -> Self {
        let mut registry = Registry::default();
        let process = Arc::new(ProcessGauges::default());
        process.register(&mut registry);
        let ours = registry.sub_registry_with_prefix(PREFIX);
        ours.register(
            "build",
            "The running build",
            Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]),
        );
        let controller = Arc::new(ControllerMetrics::register(ours));
        let store = StoreMetrics::register(ours);
        let network = NetworkGauges::default();
        network.register(ours);
        events.register_metrics(ours);
        Self {
            registry,
            controller,
            store,
            network,
            process,
            skipped_keys: None,
        }
    }

    /// Shows `sliced_etcd_foreign_keys`: the keys under the prefix in etcd that `etcd`
    /// skips, so that what another writer put there is seen without reading the log.
    pub(crate) fn count_skipped_keys(&mut self, etcd: Arc<slice_etcd::EtcdStore>) {
        let gauge = Gauge::default();
        self.registry.sub_registry_with_prefix(PREFIX).register(
            "etcd_foreign_keys",
            "Keys under the store's prefix in etcd that are skipped: not written by sliced, \
             not as sliced spells them, or without their slice's or port's key",
            gauge.clone(),
        );
        self.skipped_keys = Some((gauge, etcd));
    }

    /// The metrics `GET /metrics` renders, the gauges read from `controller` and the
    /// process at each scrape.
    pub(crate) fn into_metrics(self, controller: ControllerHandle) -> slice_http::metrics::Metrics {
        let (network, process) = (self.network, self.process);
        let skipped_keys = self.skipped_keys;
        let refresh: slice_http::metrics::Refresh = Box::new(move || {
            let (network, process, controller) =
                (network.clone(), Arc::clone(&process), controller.clone());
            // Counted from the store's copy in memory: no request to etcd.
            if let Some((gauge, etcd)) = &skipped_keys {
                gauge.set(gauge_of(etcd.skipped_keys()));
            }
            Box::pin(async move {
                process.refresh();
                // A stopped controller leaves the last values.
                if let Some(census) = controller.inspect(census).await {
                    network.set(&census);
                }
            })
        });
        slice_http::metrics::Metrics::new(self.registry, PREFIX, refresh)
    }
}

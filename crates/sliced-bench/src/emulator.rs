//! A cbench-style emulator of OpenFlow switches over TCP, for flow-setup benchmarks.
//!
//! Each emulated switch has hosts on ports 1..=hosts, one MAC address each, and no links
//! to other switches, so every path is one switch long. A run has three phases:
//!
//! 1. handshake: the switches connect, answer HELLO, FEATURES_REQUEST, PORT_DESC and the
//!    other requests, and wait until the controller falls silent;
//! 2. learning: every host sends one broadcast frame, so that learning switches (and
//!    sliced) know where every host is; the run waits for the answers and for silence;
//! 3. measurement: every switch keeps `window` PACKET_INs between two of its hosts in
//!    flight; each PACKET_OUT that carries one of those frames back answers one of them
//!    (they carry a sequence number), and FLOW_MODs are counted alongside. With a window
//!    of 1 this is cbench's latency mode: each switch has one request outstanding, and the
//!    round trips are timed.
//!
//! The emulator runs on one thread (a current-thread Tokio runtime), like cbench, so that
//! on a small machine it leaves the other cores to the controller under test.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch, Semaphore};

use crate::stats::Percentiles;
use crate::wire;

/// How a flow-setup run goes.
#[derive(Debug, Clone)]
pub(crate) struct FlowConfig {
    pub controller: SocketAddr,
    pub version: u8,
    pub switches: u64,
    /// Hosts per switch, on ports 1..=hosts.
    pub hosts: u16,
    /// PACKET_INs in flight per switch; 1 is latency mode.
    pub window: usize,
    pub duration: Duration,
}

/// What a run measured.
#[derive(Debug, Clone)]
pub(crate) struct FlowResult {
    pub elapsed: Duration,
    /// PACKET_INs sent during the measurement.
    // Part of the record (and of its Debug form), not quoted on the page; it went unflagged
    // while the results lived in the crate root.
    #[allow(dead_code)]
    pub packet_ins: u64,
    /// PACKET_OUTs that carried one of those frames back.
    pub answered: u64,
    pub flow_mods: u64,
    /// Round trips from a PACKET_IN to its PACKET_OUT, in microseconds.
    pub rtt_us: Percentiles,
    /// OpenFlow ERROR messages the controller sent during the whole run.
    pub errors: u64,
}

impl FlowResult {
    pub(crate) fn answers_per_sec(&self) -> f64 {
        self.answered as f64 / self.elapsed.as_secs_f64()
    }

    pub(crate) fn flow_mods_per_sec(&self) -> f64 {
        self.flow_mods as f64 / self.elapsed.as_secs_f64()
    }
}

const HANDSHAKE: u8 = 0;
const LEARN: u8 = 1;
const RUN: u8 = 2;
const STOP: u8 = 3;

/// How long the controller must say nothing before a phase counts as settled.
const QUIET: Duration = Duration::from_millis(300);
/// At most this many PACKET_INs go into one write.
const BATCH: usize = 64;

/// What the emulated switches of one run share: the phase, the counters, and the
/// first failure.
struct RunState {
    phase: AtomicU8,
    epoch: Instant,
    /// Microseconds since `epoch` of the last message from the controller.
    last_rx_us: AtomicU64,
    learn_answers: AtomicU64,
    answered: AtomicU64,
    flow_mods: AtomicU64,
    errors: AtomicU64,
    packet_ins: AtomicU64,
    rtts_us: Mutex<Vec<u32>>,
    /// Why a switch's connection ended early, if one did.
    failure: Mutex<Option<String>>,
}

impl RunState {
    fn touch(&self) {
        let now = self.epoch.elapsed().as_micros() as u64;
        self.last_rx_us.store(now, Ordering::Relaxed);
    }

    fn quiet_for(&self) -> Duration {
        let last = Duration::from_micros(self.last_rx_us.load(Ordering::Relaxed));
        self.epoch.elapsed().saturating_sub(last)
    }

    fn fail(&self, why: String) {
        let mut failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        failure.get_or_insert(why);
    }

    fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

struct Switch {
    dpid: u64,
    ready: AtomicBool,
    /// Sequence number -> when its PACKET_IN left, for frames in flight.
    in_flight: Mutex<HashMap<u64, Instant>>,
    credits: Semaphore,
}

/// Runs one flow-setup measurement on a thread of its own.
pub(crate) fn run(config: &FlowConfig) -> anyhow::Result<FlowResult> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the emulator's runtime")?;
    runtime.block_on(run_async(config.clone()))
}

async fn run_async(config: FlowConfig) -> anyhow::Result<FlowResult> {
    let shared = Arc::new(RunState {
        phase: AtomicU8::new(HANDSHAKE),
        epoch: Instant::now(),
        last_rx_us: AtomicU64::new(0),
        learn_answers: AtomicU64::new(0),
        answered: AtomicU64::new(0),
        flow_mods: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        packet_ins: AtomicU64::new(0),
        rtts_us: Mutex::new(Vec::new()),
        failure: Mutex::new(None),
    });
    let (phase_tx, phase_rx) = watch::channel(HANDSHAKE);
    let mut switches = Vec::new();
    let mut tasks = Vec::new();
    for dpid in 1..=config.switches {
        let connect = TcpStream::connect(config.controller);
        let stream = tokio::time::timeout(Duration::from_secs(5), connect)
            .await
            .map_err(|_| anyhow::anyhow!("connection timed out"))
            .and_then(|connected| Ok(connected?))
            .with_context(|| format!("switch {dpid} cannot connect to {}", config.controller))?;
        stream.set_nodelay(true)?;
        let (read, write) = stream.into_split();
        let switch = Arc::new(Switch {
            dpid,
            ready: AtomicBool::new(false),
            in_flight: Mutex::new(HashMap::new()),
            credits: Semaphore::new(0),
        });
        let (control_tx, control_rx) = mpsc::unbounded_channel();
        tasks.push(tokio::spawn(reader(
            read,
            control_tx,
            Arc::clone(&switch),
            Arc::clone(&shared),
            config.clone(),
        )));
        tasks.push(tokio::spawn(writer(
            write,
            control_rx,
            phase_rx.clone(),
            Arc::clone(&switch),
            Arc::clone(&shared),
            config.clone(),
        )));
        switches.push(switch);
    }
    let outcome = measure(&config, &shared, &switches, &phase_tx).await;
    let _ = phase_tx.send(STOP);
    for task in tasks {
        task.abort();
    }
    outcome
}

async fn measure(
    config: &FlowConfig,
    shared: &Arc<RunState>,
    switches: &[Arc<Switch>],
    phase: &watch::Sender<u8>,
) -> anyhow::Result<FlowResult> {
    // 1. Handshake.
    wait_until(shared, Duration::from_secs(15), "the handshake", || {
        switches.iter().all(|s| s.ready.load(Ordering::Relaxed))
    })
    .await?;
    settle(shared).await?;

    // 2. Learning: one broadcast from every host.
    shared.phase.store(LEARN, Ordering::SeqCst);
    let _ = phase.send(LEARN);
    let expected = config.switches * u64::from(config.hosts);
    wait_until(
        shared,
        Duration::from_secs(30),
        "the learning answers",
        || shared.learn_answers.load(Ordering::Relaxed) >= expected,
    )
    .await?;
    settle(shared).await?;

    // 3. Measurement.
    shared.flow_mods.store(0, Ordering::SeqCst);
    shared
        .rtts_us
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    shared.phase.store(RUN, Ordering::SeqCst);
    let _ = phase.send(RUN);
    let started = Instant::now();
    for switch in switches {
        switch.credits.add_permits(config.window);
    }
    tokio::time::sleep(config.duration).await;
    let elapsed = started.elapsed();
    let answered = shared.answered.load(Ordering::SeqCst);
    let flow_mods = shared.flow_mods.load(Ordering::SeqCst);
    let packet_ins = shared.packet_ins.load(Ordering::SeqCst);
    shared.phase.store(STOP, Ordering::SeqCst);
    let _ = phase.send(STOP);
    if let Some(why) = shared.failure() {
        bail!("during the measurement: {why}");
    }
    let mut rtts = std::mem::take(&mut *shared.rtts_us.lock().unwrap_or_else(|e| e.into_inner()));
    if answered == 0 {
        bail!(
            "the controller answered none of {packet_ins} PACKET_INs in {:.1} s",
            elapsed.as_secs_f64()
        );
    }
    Ok(FlowResult {
        elapsed,
        packet_ins,
        answered,
        flow_mods,
        rtt_us: Percentiles::of_micros(&mut rtts),
        errors: shared.errors.load(Ordering::SeqCst),
    })
}

async fn wait_until(
    shared: &RunState,
    limit: Duration,
    what: &str,
    mut done: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(why) = shared.failure() {
            bail!("during {what}: {why}");
        }
        if done() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("timed out after {} s waiting for {what}", limit.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until the controller has said nothing for [`QUIET`].
async fn settle(shared: &RunState) -> anyhow::Result<()> {
    wait_until(
        shared,
        Duration::from_secs(20),
        "the controller to settle",
        || shared.quiet_for() >= QUIET,
    )
    .await
}

async fn reader(
    mut read: OwnedReadHalf,
    control: mpsc::UnboundedSender<Vec<u8>>,
    switch: Arc<Switch>,
    shared: Arc<RunState>,
    config: FlowConfig,
) {
    let mut buffer: Vec<u8> = Vec::with_capacity(1 << 16);
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let got = match read.read(&mut chunk).await {
            Ok(0) => {
                if shared.phase.load(Ordering::SeqCst) != STOP {
                    shared.fail(format!(
                        "the controller closed switch {}'s connection",
                        switch.dpid
                    ));
                }
                return;
            }
            Ok(got) => got,
            Err(err) => {
                shared.fail(format!("switch {}: {err}", switch.dpid));
                return;
            }
        };
        buffer.extend_from_slice(&chunk[..got]);
        shared.touch();
        let mut consumed = 0;
        loop {
            match wire::frame_len(&buffer[consumed..]) {
                Ok(Some(len)) => {
                    let message = &buffer[consumed..consumed + len];
                    consumed += len;
                    handle(message, &control, &switch, &shared, &config);
                }
                Ok(None) => break,
                Err(why) => {
                    shared.fail(format!("switch {}: {why}", switch.dpid));
                    return;
                }
            }
        }
        buffer.drain(..consumed);
    }
}

fn handle(
    message: &[u8],
    control: &mpsc::UnboundedSender<Vec<u8>>,
    switch: &Switch,
    shared: &RunState,
    config: &FlowConfig,
) {
    let Some(header) = wire::Header::parse(message) else {
        return;
    };
    match header.kind {
        wire::HELLO => {}
        wire::ERROR => {
            shared.errors.fetch_add(1, Ordering::Relaxed);
        }
        wire::FLOW_MOD => {
            shared.flow_mods.fetch_add(1, Ordering::Relaxed);
        }
        wire::PACKET_OUT => {
            let Some(seq) = wire::packet_out_data(message).and_then(wire::probe_seq) else {
                return; // LLDP or some other frame of the controller's own
            };
            match shared.phase.load(Ordering::Relaxed) {
                LEARN => {
                    shared.learn_answers.fetch_add(1, Ordering::Relaxed);
                }
                RUN => {
                    let sent = switch
                        .in_flight
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&seq);
                    if let Some(sent) = sent {
                        let rtt = sent.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
                        shared
                            .rtts_us
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(rtt);
                        shared.answered.fetch_add(1, Ordering::Relaxed);
                        switch.credits.add_permits(1);
                    }
                }
                _ => {}
            }
        }
        _ => {
            let mut reply = Vec::new();
            if wire::answer(&mut reply, message, switch.dpid, config.hosts).is_some() {
                if header.kind == wire::FEATURES_REQUEST {
                    switch.ready.store(true, Ordering::SeqCst);
                }
                let _ = control.send(reply);
            }
        }
    }
}

async fn writer(
    mut write: OwnedWriteHalf,
    mut control: mpsc::UnboundedReceiver<Vec<u8>>,
    mut phase: watch::Receiver<u8>,
    switch: Arc<Switch>,
    shared: Arc<RunState>,
    config: FlowConfig,
) {
    let mut out = Vec::with_capacity(BATCH * 128);
    wire::hello(&mut out, config.version);
    if write.write_all(&out).await.is_err() {
        return;
    }
    let hosts = config.hosts;
    let pairs: Vec<(u16, u16)> = (1..=hosts)
        .flat_map(|a| (1..=hosts).filter(move |b| *b != a).map(move |b| (a, b)))
        .collect();
    let mut next_pair = 0usize;
    let mut seq = 0u64;
    let mut learned = false;
    loop {
        out.clear();
        let current = *phase.borrow();
        if current == LEARN && !learned {
            learned = true;
            for port in 1..=hosts {
                seq += 1;
                let frame = wire::probe_frame([0xff; 6], wire::host_mac(switch.dpid, port), seq);
                wire::packet_in(&mut out, config.version, seq as u32, port, &frame);
            }
        } else if current == RUN {
            tokio::select! {
                biased;
                reply = control.recv() => match reply {
                    Some(reply) => out.extend_from_slice(&reply),
                    None => return,
                },
                changed = phase.changed() => if changed.is_err() { return },
                permit = switch.credits.acquire() => {
                    let Ok(permit) = permit else { return };
                    permit.forget();
                    let mut count = 1;
                    while count < BATCH {
                        let Ok(more) = switch.credits.try_acquire() else { break };
                        more.forget();
                        count += 1;
                    }
                    let now = Instant::now();
                    {
                        let mut in_flight =
                            switch.in_flight.lock().unwrap_or_else(|e| e.into_inner());
                        for _ in 0..count {
                            let (src, dst) = pairs[next_pair % pairs.len()];
                            next_pair += 1;
                            seq += 1;
                            let frame = wire::probe_frame(
                                wire::host_mac(switch.dpid, dst),
                                wire::host_mac(switch.dpid, src),
                                seq,
                            );
                            wire::packet_in(&mut out, config.version, seq as u32, src, &frame);
                            in_flight.insert(seq, now);
                        }
                    }
                    shared.packet_ins.fetch_add(count as u64, Ordering::Relaxed);
                }
            }
        } else {
            tokio::select! {
                reply = control.recv() => match reply {
                    Some(reply) => out.extend_from_slice(&reply),
                    None => return,
                },
                changed = phase.changed() => if changed.is_err() { return },
            }
        }
        // Answers that queued up meanwhile go in the same write.
        while let Ok(reply) = control.try_recv() {
            out.extend_from_slice(&reply);
        }
        if !out.is_empty() && write.write_all(&out).await.is_err() {
            if shared.phase.load(Ordering::SeqCst) != STOP {
                shared.fail(format!("switch {}: write failed", switch.dpid));
            }
            return;
        }
    }
}

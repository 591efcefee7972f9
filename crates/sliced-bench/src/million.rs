//! The million-binding part: `--million-slices` slices × `--million-macs` MAC addresses
//! created through the REST API, then what that scale costs sliced: memory, disk, the
//! restart, point reads, and the time a membership change takes to reach a switch.
//!
//! Layout: slice `million-<i>` (i from 0) has one port, `0x<i+1>:1`, holding the MAC
//! addresses `02:01:<i, 16 bits>:<j, 16 bits>` for j below `--million-macs`. Request k
//! of the bulk load binds MAC k / slices in slice k % slices, so that the concurrent
//! clients spread over the slices and the first round creates every port.
//!
//! The change test connects one emulated OpenFlow 1.3 switch ([`CHANGE_DPID`]) whose two
//! hosts are bound in `million-0` besides its thousand, then, each cycle:
//! 1. host 1 sends to host 2: the path is installed (a FLOW_MOD that outputs);
//! 2. `DELETE .../mac_addresses` of host 2's binding: timed until the FLOW_MOD deleting
//!    the path reaches the switch;
//! 3. host 1 sends to host 2 again: the controller installs a drop flow;
//! 4. `POST .../mac_addresses` binds host 2 again: timed until the FLOW_MOD deleting the
//!    drop reaches the switch (the pair may talk again).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::bulk;
use crate::measure::Outcome;
use crate::sliced::{self, IndexEntries, Sliced};
use crate::wire::{self, FlowMod};
use crate::wrk::{self, Load, WrkResult};

/// Concurrent keep-alive clients of the bulk load.
pub(crate) const CLIENTS: usize = 64;
/// The issue's goals at a million bindings.
pub(crate) const RESTART_GOAL: Duration = Duration::from_secs(3);
pub(crate) const RSS_GOAL_KIB: u64 = 1024 * 1024;
pub(crate) const CHANGE_GOAL: Duration = Duration::from_millis(10);
/// Delete, re-add cycles of the change test.
pub(crate) const CHANGE_CYCLES: usize = 50;
/// The emulated switch of the change test; its dpid is outside the bulk ports' range.
pub(crate) const CHANGE_DPID: u64 = 0xbe_0001;
/// The slice that holds the change test's hosts.
const CHANGE_SLICE: usize = 0;
/// The slowest bulk load waited for before giving up, in bindings per second.
const SLOWEST_BINDINGS_PER_SEC: u64 = 500;
/// How long any single step of the change test may take before it counts as lost.
const STEP_LIMIT: Duration = Duration::from_secs(5);
/// How long the controller must stay silent before the switch counts as settled.
const QUIET: Duration = Duration::from_millis(300);

pub(crate) fn slice_name(index: usize) -> String {
    format!("million-{index:05}")
}

pub(crate) fn port_name(slice: usize) -> String {
    format!("{:#x}:1", slice + 1)
}

pub(crate) fn bulk_mac(slice: usize, mac: usize) -> String {
    let (s, m) = (slice as u16, mac as u16);
    format!(
        "02:01:{:02x}:{:02x}:{:02x}:{:02x}",
        s >> 8,
        s & 0xff,
        m >> 8,
        m & 0xff
    )
}

/// The median, 99th percentile and maximum of a set of timings, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Spread {
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub count: usize,
}

impl Spread {
    pub(crate) fn of(samples: &[Duration]) -> Self {
        let p = crate::stats::Percentiles::of_durations(samples);
        let max = samples.iter().max().copied().unwrap_or_default();
        Self {
            p50_ms: p.p50 / 1000.0,
            p99_ms: p.p99 / 1000.0,
            max_ms: max.as_secs_f64() * 1000.0,
            count: p.count,
        }
    }
}

/// The change test's timings, each from sending the REST request.
pub(crate) struct Change {
    pub delete_answer: Spread,
    pub delete_flow_mod: Spread,
    pub add_answer: Spread,
    pub add_flow_mod: Spread,
}

pub(crate) struct PointRead {
    pub endpoint: String,
    pub body_bytes: usize,
    pub result: WrkResult,
}

pub(crate) struct Million {
    pub slices: usize,
    pub macs: usize,
    pub create_slices: Duration,
    /// The bulk load of the bindings (wrk's wall time, connection set-up included).
    pub bind: Duration,
    pub bind_load: WrkResult,
    pub empty_start: Duration,
    pub rss_start_kib: u64,
    pub rss_kib: u64,
    /// Peak resident memory (VmHWM) of the first sliced, read after creating.
    pub create_peak_kib: u64,
    pub db_bytes: u64,
    pub entries: IndexEntries,
    /// Resident memory the index takes, built alone in a process of its own.
    pub index_kib: Outcome<u64>,
    pub restart: Duration,
    // Part of the record (and of its Debug form), not quoted on the page; it went unflagged
    // while the results lived in the crate root.
    #[allow(dead_code)]
    pub restart_entries: IndexEntries,
    pub restart_rss_kib: u64,
    /// Peak resident memory of the restarted sliced after reads and the change test.
    pub restart_peak_kib: u64,
    pub reads: Vec<PointRead>,
    pub change: Outcome<Change>,
    /// Wall time of the whole part.
    pub elapsed: Duration,
}

impl Million {
    pub(crate) fn bindings(&self) -> usize {
        self.slices * self.macs
    }

    /// One line of the figures, for the log of a run.
    pub(crate) fn summary(&self) -> String {
        let change = match &self.change {
            Ok(c) => format!(
                "delete -> FLOW_MOD p50 {:.2} p99 {:.2} max {:.2} ms (answer p50 {:.2} ms), \
                 add -> drop lifted p50 {:.2} p99 {:.2} max {:.2} ms",
                c.delete_flow_mod.p50_ms,
                c.delete_flow_mod.p99_ms,
                c.delete_flow_mod.max_ms,
                c.delete_answer.p50_ms,
                c.add_flow_mod.p50_ms,
                c.add_flow_mod.p99_ms,
                c.add_flow_mod.max_ms
            ),
            Err(why) => format!("change test failed: {why}"),
        };
        let reads: Vec<String> = self
            .reads
            .iter()
            .map(|r| format!("{} {:.0}/s", r.endpoint, r.result.requests_per_sec))
            .collect();
        format!(
            "{} bindings in {:.1} s (+{:.2} s for the slices); RSS {} KiB (start {} KiB); \
             db {} bytes; index {:?}, {:?} KiB alone; restart {:.0} ms (empty start {:.0} ms), \
             RSS after {} KiB, peak {} KiB; reads: {}; {change}; part took {:.0} s",
            self.bindings(),
            self.bind.as_secs_f64(),
            self.create_slices.as_secs_f64(),
            self.rss_kib,
            self.rss_start_kib,
            self.db_bytes,
            self.entries,
            self.index_kib,
            self.restart.as_secs_f64() * 1000.0,
            self.empty_start.as_secs_f64() * 1000.0,
            self.restart_rss_kib,
            self.restart_peak_kib,
            reads.join(", "),
            self.elapsed.as_secs_f64(),
        )
    }
}

/// Runs the part on a fresh sliced in `tmp/million`.
pub(crate) fn run(
    binary: &Path,
    tmp: &Path,
    slices: usize,
    macs: usize,
    read_duration: Duration,
    memory: &mut Vec<(String, String, u64)>,
) -> anyhow::Result<Million> {
    let part_started = Instant::now();
    if slices == 0 || macs == 0 {
        bail!("--million-slices and --million-macs must be at least 1");
    }
    let dir = tmp.join("million");
    let started = Instant::now();
    let sliced = Sliced::start(binary, &dir, &[])?;
    let empty_start = started.elapsed();
    let rss_start_kib = sliced.server.rss_kib()?;

    eprintln!("sliced-bench: creating {slices} slices with {CLIENTS} clients");
    let names: Vec<String> = (0..slices).map(slice_name).collect();
    let create_slices = sliced::parallel(&sliced.base, names, CLIENTS, |agent, base, name| {
        sliced::create_slice(agent, base, name)
    })?;

    let bindings = slices * macs;
    eprintln!("sliced-bench: binding {bindings} MAC addresses with wrk, {CLIENTS} connections");
    let (bind, bind_load) = bulk_bind(&sliced.base, &dir, slices, macs)?;
    let entries = wait_for_index(&sliced.base, bindings as u64, Duration::from_secs(60))?;
    let rss_kib = sliced.server.rss_kib()?;
    let create_peak_kib = sliced.server.peak_rss_kib()?;
    crate::measure::record_peak(
        memory,
        "a million bindings: create",
        "sliced",
        &sliced.server,
    );

    // The change test's hosts, bound besides the bulk.
    let agent = ureq::agent();
    let change_slice = slice_name(CHANGE_SLICE);
    for port in [1, 2] {
        sliced::add_mac(
            &agent,
            &sliced.base,
            &change_slice,
            &host_port(port),
            &wire::mac_text(wire::host_mac(CHANGE_DPID, port)),
        )?;
    }
    sliced.server.stop()?;
    let db_bytes = crate::measure::dir_size(&dir.join("data"));

    eprintln!("sliced-bench: restarting sliced on {bindings} bindings");
    let started = Instant::now();
    let again = Sliced::start_within(binary, &dir, &[], Duration::from_secs(120))?;
    let restart = started.elapsed();
    let restart_entries = wait_for_index(&again.base, bindings as u64 + 2, STEP_LIMIT)?;
    let restart_rss_kib = again.server.rss_kib()?;

    let last = slice_name(slices - 1);
    let last_port = port_name(slices - 1);
    let endpoints = [
        format!("/slices/{last}"),
        format!("/slices/{last}/ports/{last_port}/mac_addresses"),
        format!(
            "/slices/{last}/ports/{last_port}/mac_addresses/{}",
            bulk_mac(slices - 1, macs - 1)
        ),
    ];
    let mut reads = Vec::new();
    for endpoint in endpoints {
        let body = sliced::get(&again.base, &endpoint)?;
        eprintln!("sliced-bench: wrk GET {endpoint}");
        let url = format!("{}{endpoint}", again.base);
        let result = wrk::run(&Load {
            url: &url,
            connections: crate::plan::READ_CONNECTIONS,
            duration: read_duration,
            script: None,
        })?;
        if result.non_2xx > 0 || result.socket_errors > 0 {
            bail!(
                "GET {endpoint}: {} non-2xx responses, {} socket errors",
                result.non_2xx,
                result.socket_errors
            );
        }
        reads.push(PointRead {
            endpoint,
            body_bytes: body.len(),
            result,
        });
    }

    eprintln!(
        "sliced-bench: membership changes against an emulated switch, {CHANGE_CYCLES} cycles"
    );
    let change = crate::measure::outcome(
        change_test(&again.base, again.openflow, &change_slice),
        "membership change",
    );
    let restart_peak_kib = again.server.peak_rss_kib()?;
    crate::measure::record_peak(
        memory,
        "a million bindings: restart",
        "sliced",
        &again.server,
    );
    again.server.stop()?;

    eprintln!("sliced-bench: the membership index alone, in a process of its own");
    let index_kib = crate::measure::outcome(index_memory(slices, macs), "membership index memory");
    let million = Million {
        slices,
        macs,
        create_slices,
        bind,
        bind_load,
        empty_start,
        rss_start_kib,
        rss_kib,
        create_peak_kib,
        db_bytes,
        entries,
        index_kib,
        restart,
        restart_entries,
        restart_rss_kib,
        restart_peak_kib,
        reads,
        change,
        elapsed: part_started.elapsed(),
    };
    eprintln!("sliced-bench: {}", million.summary());
    Ok(million)
}

fn host_port(port_no: u16) -> String {
    format!("{CHANGE_DPID:#x}:{port_no}")
}

/// The bulk load: every binding once, by wrk with [`bulk::BIND_MACS_LUA`]; fails unless
/// each got 201. The time to create is the time until the last binding reached the
/// controller's index.
fn bulk_bind(
    base: &str,
    dir: &Path,
    slices: usize,
    macs: usize,
) -> anyhow::Result<(Duration, WrkResult)> {
    let bindings = (slices * macs) as u64;
    let load = bulk::Load {
        url: &format!("{base}/slices"),
        connections: CLIENTS,
        script: ("bind_macs.lua", bulk::BIND_MACS_LUA),
        args: vec![slices.to_string()],
        filler: &format!("/slices/{}", slice_name(0)),
        requests: bindings,
        limit: Duration::from_secs(60 + bindings / SLOWEST_BINDINGS_PER_SEC),
        dir,
    };
    bulk::run(&load, || {
        Ok(IndexEntries::read(base)?.bound_macs >= bindings)
    })
}

/// Waits until the controller's index holds `bound_macs` bindings: every committed write
/// reaches it through the store's change events.
fn wait_for_index(base: &str, bound_macs: u64, limit: Duration) -> anyhow::Result<IndexEntries> {
    let deadline = Instant::now() + limit;
    loop {
        let entries = IndexEntries::read(base)?;
        if entries.bound_macs == bound_macs {
            return Ok(entries);
        }
        if Instant::now() > deadline {
            bail!(
                "the controller's index holds {} MAC bindings, not {bound_macs}, {} s on",
                entries.bound_macs,
                limit.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

// ---- the membership index alone ------------------------------------------------------

/// Resident memory of the controller's index type holding the bulk layout, measured in a
/// fresh `sliced-bench membership-index` process (so that nothing else of this process
/// is counted), in KiB.
fn index_memory(slices: usize, macs: usize) -> anyhow::Result<u64> {
    let stdout = crate::procs::output(
        std::process::Command::new(std::env::current_exe()?)
            .arg("membership-index")
            .arg("--slices")
            .arg(slices.to_string())
            .arg("--macs")
            .arg(macs.to_string()),
    )?;
    stdout
        .split_whitespace()
        .next()
        .and_then(|kib| kib.parse().ok())
        .with_context(|| format!("membership-index printed {stdout:?}"))
}

/// The `membership-index` subcommand: builds a [`slice_core::Membership`] with the bulk
/// layout, the way the controller builds it from the store, and prints the growth of
/// this process's resident memory in KiB and the bindings it holds.
pub(crate) fn print_index_memory(slices: usize, macs: usize) -> anyhow::Result<()> {
    use slice_core::{MacAddress, Membership, PortId, SliceName};
    let pid = std::process::id();
    let before = crate::procs::proc_status_kib(pid, "VmRSS")?;
    let mut index = Membership::default();
    for slice in 0..slices {
        let name: SliceName = slice_name(slice).parse()?;
        let port: PortId = port_name(slice).parse()?;
        index.add_slice(&name);
        index.add_port(&name, port);
        for mac in 0..macs {
            let mac: MacAddress = bulk_mac(slice, mac).parse()?;
            index.add_mac(&name, port, mac);
        }
    }
    let after = crate::procs::proc_status_kib(pid, "VmRSS")?;
    println!(
        "{} {}",
        after.saturating_sub(before),
        index.bound_mac_count()
    );
    drop(index);
    Ok(())
}

// ---- the change test -------------------------------------------------------------------

/// What the emulated switch saw, when.
struct Event {
    at: Instant,
    seen: Seen,
}

enum Seen {
    Ready,
    FlowMod(FlowMod),
    /// A PACKET_OUT and the sequence number of the probe frame it carries, if any.
    PacketOut(Option<u64>),
    Other,
    Closed(String),
}

/// One emulated OpenFlow 1.3 switch with hosts on ports 1 and 2, on blocking sockets: a
/// reader thread answers the controller's requests and stamps what it receives.
struct TestSwitch {
    stream: TcpStream,
    writer: Arc<Mutex<TcpStream>>,
    events: Receiver<Event>,
    reader: Option<std::thread::JoinHandle<()>>,
    seq: u64,
}

const HOSTS: u16 = 2;

impl TestSwitch {
    fn connect(controller: SocketAddr) -> anyhow::Result<Self> {
        let stream = TcpStream::connect_timeout(&controller, STEP_LIMIT)
            .with_context(|| format!("the emulated switch cannot connect to {controller}"))?;
        stream.set_nodelay(true)?;
        let writer = Arc::new(Mutex::new(stream.try_clone()?));
        let (tx, events) = mpsc::channel();
        let reader = {
            let (read, writer) = (stream.try_clone()?, Arc::clone(&writer));
            std::thread::spawn(move || read_loop(read, &writer, &tx))
        };
        let switch = Self {
            stream,
            writer,
            events,
            reader: Some(reader),
            seq: 0,
        };
        let mut hello = Vec::new();
        wire::hello(&mut hello, wire::OFP13);
        switch.send(&hello)?;
        Ok(switch)
    }

    fn send(&self, bytes: &[u8]) -> anyhow::Result<()> {
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        writer
            .write_all(bytes)
            .context("the emulated switch cannot write")
    }

    /// Host `port` sends a frame to `dst`; returns the frame's sequence number.
    fn packet_in(&mut self, port: u16, dst: [u8; 6]) -> anyhow::Result<u64> {
        self.seq += 1;
        let frame = wire::probe_frame(dst, wire::host_mac(CHANGE_DPID, port), self.seq);
        let mut out = Vec::new();
        wire::packet_in(&mut out, wire::OFP13, self.seq as u32, port, &frame);
        self.send(&out)?;
        Ok(self.seq)
    }

    /// The time of the first event that `wanted` accepts; fails after [`STEP_LIMIT`].
    fn wait_for(
        &self,
        what: &str,
        mut wanted: impl FnMut(&Seen) -> bool,
    ) -> anyhow::Result<Instant> {
        let deadline = Instant::now() + STEP_LIMIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Event {
                    seen: Seen::Closed(why),
                    ..
                }) => bail!("waiting for {what}: {why}"),
                Ok(event) if wanted(&event.seen) => return Ok(event.at),
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    bail!("no {what} within {} s", STEP_LIMIT.as_secs())
                }
                Err(RecvTimeoutError::Disconnected) => {
                    bail!("waiting for {what}: the switch's reader stopped")
                }
            }
        }
    }

    /// Waits until the controller has sent nothing for [`QUIET`].
    fn settle(&self) -> anyhow::Result<()> {
        let deadline = Instant::now() + 4 * STEP_LIMIT;
        loop {
            match self.events.recv_timeout(QUIET) {
                Err(RecvTimeoutError::Timeout) => return Ok(()),
                Ok(Event {
                    seen: Seen::Closed(why),
                    ..
                }) => bail!("while the controller settled: {why}"),
                Ok(_) if Instant::now() > deadline => {
                    bail!(
                        "the controller did not fall silent within {} s",
                        4 * STEP_LIMIT.as_secs()
                    )
                }
                Ok(_) => {}
                Err(RecvTimeoutError::Disconnected) => bail!("the switch's reader stopped"),
            }
        }
    }

    /// Forgets what arrived so far.
    fn drain(&self) {
        while self.events.try_recv().is_ok() {}
    }
}

impl Drop for TestSwitch {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Both);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

fn read_loop(mut read: TcpStream, writer: &Mutex<TcpStream>, events: &Sender<Event>) {
    let mut buffer = Vec::with_capacity(1 << 16);
    let mut chunk = vec![0u8; 1 << 16];
    let closed = |why: String| {
        let _ = events.send(Event {
            at: Instant::now(),
            seen: Seen::Closed(why),
        });
    };
    loop {
        let got = match read.read(&mut chunk) {
            Ok(0) => return closed("the controller closed the connection".into()),
            Ok(got) => got,
            Err(err) => return closed(format!("reading from the controller: {err}")),
        };
        let at = Instant::now();
        buffer.extend_from_slice(&chunk[..got]);
        let mut consumed = 0;
        loop {
            let len = match wire::frame_len(&buffer[consumed..]) {
                Ok(Some(len)) => len,
                Ok(None) => break,
                Err(why) => return closed(why),
            };
            let message = &buffer[consumed..consumed + len];
            consumed += len;
            let Some(header) = wire::Header::parse(message) else {
                continue;
            };
            let seen = match header.kind {
                wire::FLOW_MOD => match wire::flow_mod_13(message) {
                    Some(flow_mod) => Seen::FlowMod(flow_mod),
                    None => return closed("a FLOW_MOD that is not OpenFlow 1.3".into()),
                },
                wire::PACKET_OUT => {
                    Seen::PacketOut(wire::packet_out_data(message).and_then(wire::probe_seq))
                }
                wire::HELLO | wire::ERROR => Seen::Other,
                kind => {
                    let mut reply = Vec::new();
                    if wire::answer(&mut reply, message, CHANGE_DPID, HOSTS).is_some() {
                        let mut writer = writer.lock().unwrap_or_else(|e| e.into_inner());
                        if writer.write_all(&reply).is_err() {
                            return closed("cannot answer the controller".into());
                        }
                    }
                    if kind == wire::FEATURES_REQUEST {
                        Seen::Ready
                    } else {
                        Seen::Other
                    }
                }
            };
            if events.send(Event { at, seen }).is_err() {
                return;
            }
        }
        buffer.drain(..consumed);
    }
}

/// Sends one REST request with a JSON body and expects `status`; returns when the
/// answer came.
fn request(
    agent: &ureq::Agent,
    method: &str,
    url: &str,
    body: &str,
    status: u16,
) -> anyhow::Result<Instant> {
    let response = agent
        .request(method, url)
        .set("Content-Type", "application/json")
        .send_string(body);
    let answered = Instant::now();
    match response {
        Ok(response) if response.status() == status => Ok(answered),
        Ok(response) => bail!("{method} {url} {body}: status {}", response.status()),
        Err(ureq::Error::Status(got, response)) => bail!(
            "{method} {url} {body}: status {got}: {}",
            response.into_string().unwrap_or_default()
        ),
        Err(err) => Err(err).with_context(|| format!("{method} {url} {body}")),
    }
}

fn change_test(base: &str, controller: SocketAddr, slice: &str) -> anyhow::Result<Change> {
    let (a, b) = (
        wire::host_mac(CHANGE_DPID, 1),
        wire::host_mac(CHANGE_DPID, 2),
    );
    let mut switch = TestSwitch::connect(controller)?;
    switch.wait_for("the FEATURES_REQUEST", |seen| matches!(seen, Seen::Ready))?;
    switch.settle()?;
    // Both hosts announce themselves; each broadcast goes out to the other's port.
    for (port, host) in [(1, "host 1"), (2, "host 2")] {
        let seq = switch.packet_in(port, [0xff; 6])?;
        switch.wait_for(
            &format!("the flood of {host}'s broadcast"),
            |seen| matches!(seen, Seen::PacketOut(Some(s)) if *s == seq),
        )?;
    }
    switch.settle()?;

    let agent = ureq::AgentBuilder::new().timeout(STEP_LIMIT).build();
    let url = format!("{base}/slices/{slice}/ports/{}/mac_addresses", host_port(2));
    let body = format!(r#"{{"name":"{}"}}"#, wire::mac_text(b));
    let mut samples: [Vec<Duration>; 4] = Default::default();
    for cycle in 1..=CHANGE_CYCLES {
        let step = |what: &str| format!("{what} (cycle {cycle})");
        let seq = switch.packet_in(1, b)?;
        switch.wait_for(&step("the path's FLOW_MOD"), |seen| {
            matches!(seen, Seen::FlowMod(f) if f.command == wire::FLOW_MOD_ADD && f.outputs && f.between(a, b))
        })?;
        switch.wait_for(
            &step("the PACKET_OUT along the path"),
            |seen| matches!(seen, Seen::PacketOut(Some(s)) if *s == seq),
        )?;

        switch.drain();
        let sent = Instant::now();
        let answered = request(&agent, "DELETE", &url, &body, 200)?;
        let deleted = switch.wait_for(
            &step("the FLOW_MOD deleting the path"),
            |seen| matches!(seen, Seen::FlowMod(f) if f.deletes() && f.between(a, b)),
        )?;
        samples[0].push(answered - sent);
        samples[1].push(deleted.saturating_duration_since(sent));

        switch.packet_in(1, b)?;
        switch.wait_for(&step("the drop FLOW_MOD"), |seen| {
            matches!(seen, Seen::FlowMod(f) if f.command == wire::FLOW_MOD_ADD && !f.outputs && f.between(a, b))
        })?;

        switch.drain();
        let sent = Instant::now();
        let answered = request(&agent, "POST", &url, &body, 201)?;
        let lifted = switch.wait_for(
            &step("the FLOW_MOD lifting the drop"),
            |seen| matches!(seen, Seen::FlowMod(f) if f.deletes() && f.between(a, b)),
        )?;
        samples[2].push(answered - sent);
        samples[3].push(lifted.saturating_duration_since(sent));
    }
    Ok(Change {
        delete_answer: Spread::of(&samples[0]),
        delete_flow_mod: Spread::of(&samples[1]),
        add_answer: Spread::of(&samples[2]),
        add_flow_mod: Spread::of(&samples[3]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_names_distinct_slices_ports_and_macs() {
        assert_eq!(slice_name(7), "million-00007");
        assert_eq!(port_name(0), "0x1:1");
        assert_eq!(port_name(999), "0x3e8:1");
        assert_eq!(bulk_mac(999, 999), "02:01:03:e7:03:e7");
        assert_ne!(bulk_mac(1, 0), bulk_mac(0, 1));
        // The change test's hosts are none of the bulk's.
        assert_ne!(
            &wire::mac_text(wire::host_mac(CHANGE_DPID, 1))[..5],
            "02:01"
        );
    }

    #[test]
    fn spreads_have_a_maximum() {
        let samples: Vec<Duration> = (1..=20).map(Duration::from_millis).collect();
        let spread = Spread::of(&samples);
        assert_eq!(spread.count, 20);
        assert_eq!(spread.p50_ms, 10.0);
        assert_eq!(spread.max_ms, 20.0);
    }
}

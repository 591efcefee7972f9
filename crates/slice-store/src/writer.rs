//! The writer thread: every write of the store runs here, one after another, and the
//! writes that queue up while one flush runs share the next one (group commit).
//!
//! A round takes every job waiting in the queue (up to [`MAX_GROUP`]), plans each against
//! the committed model, gathers their records into one sled batch per tree, and then makes
//! them durable with one flush and one fdatasync. Only then does the model take their
//! edits, do the listeners hear their changes, and does each job get its answer. So a
//! reader never sees, and the controller is never told, anything a crash could take back.
//!
//! Jobs of one round must not depend on each other: each is planned against the model as
//! committed, which does not hold the others' edits yet. A job that touches a slice an
//! earlier job of the round touched (or any job after a declared state, which touches
//! everything) therefore ends the round: the round commits, and the job is planned
//! against its outcome. Of two racing creates of one name, the first one queued wins and
//! the second is told that the slice exists, after the first is durable.
//!
//! A failed flush is final. After a failed fsync the kernel may have dropped the dirty
//! pages and marked them clean, so a retry could report success for data that never
//! reached the disk (the fsync problem PostgreSQL met in 2018). Every job of the round
//! fails, and the store refuses every later one.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use slice_core::{Change, DeclaredFabric, Plan, Port, SliceError, SliceName, Step, Write, Written};

use crate::job::{Job, Op, Reply};
use crate::journal::{self, Records};
use crate::keys::{encode_port, Key, Tag};
use crate::model::{Edit, Model};
use crate::{fabric, sessions, Error, Inner};

/// Told of every round that made writes durable: how many jobs it covered and how long
/// its apply, flush and fdatasync took. Called on the writer thread before the jobs get
/// their answers, so it must be quick.
pub trait CommitObserver: Send + Sync {
    fn committed(&self, writes: u64, took: Duration);
}

/// The most jobs one round takes: enough to cover every client a server holds waiting at
/// once, few enough that one batch stays a few hundred kilobytes.
const MAX_GROUP: usize = 1024;

/// Runs until every sender of `jobs` is gone.
pub(crate) fn run(inner: &Inner, jobs: Receiver<Job>) {
    while let Ok(first) = jobs.recv() {
        let mut round = Round::default();
        let mut next = Some(first);
        while let Some(job) = next {
            if round.conflicts_with(&job.op) {
                std::mem::take(&mut round).commit(inner);
            }
            round.take(inner, job);
            next = if round.members.len() < MAX_GROUP {
                jobs.try_recv().ok()
            } else {
                None
            };
        }
        round.commit(inner);
    }
}

/// The jobs that will share one flush.
#[derive(Default)]
struct Round {
    slices: Records,
    sessions: sled::Batch,
    wrote_sessions: bool,
    /// The slices the members' plans read or write.
    touched: HashSet<SliceName>,
    /// A member revokes a session (each revocation reads the whole revocation list).
    revokes: bool,
    /// A member applies a declared state: nothing more joins this round.
    closed: bool,
    /// The fabric a member declares: a second declaration waits for the next round, so
    /// that it is compared with this one once committed.
    fabric: Option<DeclaredFabric>,
    members: Vec<Member>,
}

struct Member {
    edits: Vec<Edit>,
    changes: Vec<Change>,
    written: Written,
    reply: Reply,
}

/// What planning a write gives: the records go into the round's batch.
struct Planned {
    edits: Vec<Edit>,
    changes: Vec<Change>,
    written: Written,
}

impl Round {
    fn conflicts_with(&self, op: &Op) -> bool {
        if self.closed {
            return true;
        }
        match op {
            Op::Write(write) => match slice_of(write) {
                Some(slice) => self.touched.contains(slice),
                None => !self.members.is_empty(),
            },
            Op::Revoke { .. } => self.revokes,
            Op::DeclareFabric(_) => self.fabric.is_some(),
            Op::Flush => false,
        }
    }

    /// Plans `job` into this round, or answers it at once when it cannot be carried out.
    fn take(&mut self, inner: &Inner, job: Job) {
        if let Err(err) = inner.refuse_if_failed() {
            return (job.reply)(Err(err));
        }
        let planned = match job.op {
            Op::Flush => Ok(Planned {
                edits: Vec::new(),
                changes: Vec::new(),
                written: Written::Done,
            }),
            Op::Revoke {
                id,
                expires_at,
                now,
            } => sessions::plan_revocation(inner, &mut self.sessions, &id, expires_at, now).map(
                |()| {
                    self.wrote_sessions = true;
                    self.revokes = true;
                    Planned {
                        edits: Vec::new(),
                        changes: Vec::new(),
                        written: Written::Done,
                    }
                },
            ),
            Op::DeclareFabric(declared) => {
                // The same declaration again writes nothing and tells nobody.
                if *inner.fabric.read() == declared {
                    return (job.reply)(Ok(Written::Done));
                }
                self.fabric = Some(declared.clone());
                Ok(Planned {
                    edits: Vec::new(),
                    changes: vec![Change::FabricDeclared(declared)],
                    written: Written::Done,
                })
            }
            Op::Write(Write::Apply(declared)) => {
                let model = inner.model.read();
                let current = model.snapshot();
                match Plan::between(&current, &declared) {
                    Err(err) => Err(err.into()),
                    // The same state again writes nothing and tells nobody.
                    Ok(plan) if plan.is_empty() => return (job.reply)(Ok(Written::Plan(plan))),
                    Ok(plan) => plan_steps(inner, &model, &mut self.slices, &plan).map(|edits| {
                        self.closed = true;
                        Planned {
                            edits,
                            changes: plan.changes(&current),
                            written: Written::Plan(plan),
                        }
                    }),
                }
            }
            Op::Write(write) => {
                let model = inner.model.read();
                if let Some(slice) = slice_of(&write) {
                    self.touched.insert(slice.clone());
                }
                plan_write(inner, &model, &mut self.slices, write)
            }
        };
        match planned {
            Ok(planned) => self.members.push(Member {
                edits: planned.edits,
                changes: planned.changes,
                written: planned.written,
                reply: job.reply,
            }),
            Err(err) => (job.reply)(Err(err)),
        }
    }

    /// Applies the round's batches, makes them durable, then publishes the edits, tells
    /// the listeners and answers every member, in the order they came.
    fn commit(self, inner: &Inner) {
        if self.members.is_empty() {
            return;
        }
        let started = Instant::now();
        let durable = (|| {
            if !self.slices.is_empty() {
                journal::write(
                    &inner.tree,
                    &inner.journal,
                    self.slices,
                    || inner.sync(),
                    || inner.chunk_written(),
                )?;
            }
            if self.wrote_sessions {
                inner.revoked_sessions.apply_batch(self.sessions)?;
            }
            if let Some(declared) = &self.fabric {
                fabric::write(&inner.fabric_tree, declared)?;
            }
            inner.sync()
        })();
        let took = started.elapsed();
        let mut members = self.members;
        if let Err(err) = durable {
            // Every member alike: none of them is durable, and the store takes no more.
            let reason = inner.fail(&err);
            for member in members {
                (member.reply)(Err(Error::Failed(reason.clone())));
            }
            return;
        }
        {
            let mut model = inner.model.write();
            let changed = members.iter().any(|member| !member.edits.is_empty());
            model.apply(
                members
                    .iter_mut()
                    .flat_map(|member| std::mem::take(&mut member.edits)),
            );
            if changed {
                // Counted under the lock, after the change: a reader that sees the new
                // count reads the new model (see `SliceRead::content_version`).
                inner.content_version.fetch_add(1, Ordering::Release);
            }
        }
        if let Some(declared) = self.fabric {
            *inner.fabric.write() = declared;
        }
        {
            let listeners = inner.listeners.read();
            for change in members.iter().flat_map(|member| &member.changes) {
                for listener in listeners.iter() {
                    listener(change);
                }
            }
        }
        if let Some(observer) = inner.observer.get() {
            observer.committed(members.len() as u64, took);
        }
        for member in members {
            (member.reply)(Ok(member.written));
        }
    }
}

/// The slice a single write names; a declared state names them all.
fn slice_of(write: &Write) -> Option<&SliceName> {
    match write {
        Write::CreateSlice(slice)
        | Write::DeleteSlice(slice)
        | Write::AddPort(slice, _)
        | Write::DeletePort(slice, _)
        | Write::AddMac(slice, _, _)
        | Write::DeleteMac(slice, _, _) => Some(slice),
        Write::Apply(_) => None,
    }
}

/// Checks one write against the committed model and puts its records into `batch`.
fn plan_write(
    inner: &Inner,
    model: &Model,
    batch: &mut Records,
    write: Write,
) -> Result<Planned, Error> {
    let done = |edits, change| Planned {
        edits,
        changes: vec![change],
        written: Written::Done,
    };
    Ok(match write {
        Write::CreateSlice(slice) => {
            if model.slice(&slice).is_ok() {
                return Err(SliceError::SliceExists(slice).into());
            }
            let id = inner.db.generate_id()?;
            insert_slice(batch, &slice, id);
            done(
                vec![Edit::CreateSlice {
                    slice: slice.clone(),
                    id,
                }],
                Change::SliceCreated(slice),
            )
        }
        Write::DeleteSlice(slice) => {
            remove_slice(model, batch, &slice)?;
            let removed = model.export(&slice)?;
            Planned {
                edits: vec![Edit::DeleteSlice { slice }],
                changes: vec![Change::SliceDeleted(removed.clone())],
                written: Written::Slice(removed),
            }
        }
        Write::AddPort(slice, port) => {
            let id = model.slice(&slice)?.id;
            if model.port(&slice, port).is_ok() {
                return Err(SliceError::PortExists(port).into());
            }
            let seq = insert_port(inner, batch, id, port)?;
            done(
                vec![Edit::AddPort {
                    slice: slice.clone(),
                    port,
                    seq,
                }],
                Change::PortAdded { slice, port },
            )
        }
        Write::DeletePort(slice, port) => {
            let record = remove_port(model, batch, &slice, port)?;
            let removed = Port {
                id: port,
                macs: record.macs.keys().copied().collect(),
            };
            Planned {
                edits: vec![Edit::DeletePort {
                    slice: slice.clone(),
                    port,
                }],
                changes: vec![Change::PortDeleted {
                    slice,
                    port: removed.clone(),
                }],
                written: Written::Port(removed),
            }
        }
        Write::AddMac(slice, port, mac) => {
            let id = model.slice(&slice)?.id;
            let mut edits = Vec::with_capacity(2);
            let port_created = match model.port(&slice, port) {
                Ok(record) if record.macs.contains_key(&mac) => {
                    return Err(SliceError::MacExists(mac).into())
                }
                Ok(_) => false,
                Err(_) => {
                    let seq = insert_port(inner, batch, id, port)?;
                    edits.push(Edit::AddPort {
                        slice: slice.clone(),
                        port,
                        seq,
                    });
                    true
                }
            };
            let seq = insert_mac(inner, batch, id, port, mac)?;
            edits.push(Edit::AddMac {
                slice: slice.clone(),
                port,
                mac,
                seq,
            });
            Planned {
                edits,
                changes: vec![Change::MacAdded { slice, port, mac }],
                written: Written::MacAdded { port_created },
            }
        }
        Write::DeleteMac(slice, port, mac) => {
            let id = model.slice(&slice)?.id;
            let seq = model.check_mac(&slice, port, mac)?;
            remove_mac(batch, id, port, mac, seq);
            done(
                vec![Edit::DeleteMac {
                    slice: slice.clone(),
                    port,
                    mac,
                }],
                Change::MacDeleted { slice, port, mac },
            )
        }
        Write::Apply(_) => {
            return Err(Error::Failed(
                "a declared state is planned as a whole, not as one write".into(),
            ))
        }
    })
}

/// The records and edits that carry out `plan` on the committed model. The plan was made
/// against that model, so every step finds what it names; a slice the plan creates is
/// found among the plan's own creations.
fn plan_steps(
    inner: &Inner,
    model: &Model,
    batch: &mut Records,
    plan: &Plan,
) -> Result<Vec<Edit>, Error> {
    let mut created: HashMap<&SliceName, u64> = HashMap::new();
    let id_of = |created: &HashMap<&SliceName, u64>, slice: &SliceName| match created.get(slice) {
        Some(id) => Ok(*id),
        None => model.slice(slice).map(|record| record.id),
    };
    let mut edits = Vec::with_capacity(plan.steps.len());
    for step in &plan.steps {
        edits.push(match step {
            Step::DeleteSlice { slice } => {
                remove_slice(model, batch, slice)?;
                Edit::DeleteSlice {
                    slice: slice.clone(),
                }
            }
            Step::DeletePort { slice, port } => {
                remove_port(model, batch, slice, *port)?;
                Edit::DeletePort {
                    slice: slice.clone(),
                    port: *port,
                }
            }
            Step::DeleteMac { slice, port, mac } => {
                let id = model.slice(slice)?.id;
                let seq = model.check_mac(slice, *port, *mac)?;
                remove_mac(batch, id, *port, *mac, seq);
                Edit::DeleteMac {
                    slice: slice.clone(),
                    port: *port,
                    mac: *mac,
                }
            }
            Step::CreateSlice { slice } => {
                let id = inner.db.generate_id()?;
                insert_slice(batch, slice, id);
                created.insert(slice, id);
                Edit::CreateSlice {
                    slice: slice.clone(),
                    id,
                }
            }
            Step::AddPort { slice, port } => {
                let id = id_of(&created, slice)?;
                let seq = insert_port(inner, batch, id, *port)?;
                Edit::AddPort {
                    slice: slice.clone(),
                    port: *port,
                    seq,
                }
            }
            Step::AddMac { slice, port, mac } => {
                let id = id_of(&created, slice)?;
                let seq = insert_mac(inner, batch, id, *port, *mac)?;
                Edit::AddMac {
                    slice: slice.clone(),
                    port: *port,
                    mac: *mac,
                    seq,
                }
            }
        });
    }
    Ok(edits)
}

// ---- the records of each kind (see the keys module for the layout) ------------------------

fn insert_slice(batch: &mut Records, slice: &SliceName, id: u64) {
    batch.insert(Key::tag(Tag::SliceName).name(slice), &id.to_be_bytes()[..]);
    batch.insert(Key::tag(Tag::SliceOrder).id(id), slice.as_str().as_bytes());
}

fn remove_slice(model: &Model, batch: &mut Records, slice: &SliceName) -> Result<(), Error> {
    let record = model.slice(slice)?;
    let id = record.id;
    batch.remove(Key::tag(Tag::SliceName).name(slice));
    batch.remove(Key::tag(Tag::SliceOrder).id(id));
    for (port, port_record) in &record.ports {
        remove_port_records(batch, id, *port, port_record);
    }
    Ok(())
}

fn insert_port(
    inner: &Inner,
    batch: &mut Records,
    id: u64,
    port: slice_core::PortId,
) -> Result<u64, Error> {
    let seq = inner.db.generate_id()?;
    batch.insert(
        Key::tag(Tag::PortIndex).id(id).port(port),
        &seq.to_be_bytes()[..],
    );
    batch.insert(
        Key::tag(Tag::PortOrder).id(id).seq(seq),
        &encode_port(port)[..],
    );
    Ok(seq)
}

/// Puts the removal of a port's records into `batch`; the port's record, as it was.
fn remove_port<'m>(
    model: &'m Model,
    batch: &mut Records,
    slice: &SliceName,
    port: slice_core::PortId,
) -> Result<&'m crate::model::PortRecord, Error> {
    let id = model.slice(slice)?.id;
    let record = model.port(slice, port)?;
    remove_port_records(batch, id, port, record);
    Ok(record)
}

fn remove_port_records(
    batch: &mut Records,
    id: u64,
    port: slice_core::PortId,
    record: &crate::model::PortRecord,
) {
    batch.remove(Key::tag(Tag::PortIndex).id(id).port(port));
    batch.remove(Key::tag(Tag::PortOrder).id(id).seq(record.seq));
    for (mac, seq) in &record.macs {
        remove_mac(batch, id, port, *mac, *seq);
    }
}

fn insert_mac(
    inner: &Inner,
    batch: &mut Records,
    id: u64,
    port: slice_core::PortId,
    mac: slice_core::MacAddress,
) -> Result<u64, Error> {
    let seq = inner.db.generate_id()?;
    batch.insert(
        Key::tag(Tag::MacIndex).id(id).port(port).mac(mac),
        &seq.to_be_bytes()[..],
    );
    batch.insert(
        Key::tag(Tag::MacOrder).id(id).port(port).seq(seq),
        &mac.octets()[..],
    );
    Ok(seq)
}

fn remove_mac(
    batch: &mut Records,
    id: u64,
    port: slice_core::PortId,
    mac: slice_core::MacAddress,
    seq: u64,
) {
    batch.remove(Key::tag(Tag::MacIndex).id(id).port(port).mac(mac));
    batch.remove(Key::tag(Tag::MacOrder).id(id).port(port).seq(seq));
}

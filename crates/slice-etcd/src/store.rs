//! [`EtcdStore`]: slice-core's `SliceStore` on etcd. Reads come from this instance's copy
//! ([`SharedMirror`], kept current by the watch); every write is one transaction whose
//! compares are the specification's checks in order, and returns once the copy has applied
//! its revision.

use std::sync::Arc;

use etcd_client::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse, TxnResponse};
use slice_core::{
    ChangeListener, DeclaredFabric, FabricDeclarations, MacAddress, MembershipSource, Plan,
    PlanError, Port, PortId, SessionRevocations, Slice, SliceError, SliceName, SliceRead,
    SliceStore, SliceWrite, StoreError, MAX_REVOKED_SESSIONS,
};

use crate::access::Access;
use crate::connection::{Connection, Failure, Retry};
use crate::error::{transient, Error};
use crate::fabric;
use crate::keys::{Key, Layout};
use crate::leftovers;
use crate::mirror::Mirror;
use crate::runtime::{connect, run, OwnedRuntime};
use crate::session_key;
use crate::txn::{self, absent, delete_under, deleted, exists, get, put, MAX_TXN_OPS};
use crate::watch::{self, SharedMirror};

/// Where the store's keys live in etcd unless told otherwise.
pub const DEFAULT_PREFIX: &str = "/sliced/";

/// The most expired revocations one revocation prunes: etcd refuses a transaction of more
/// than 128 operations by default (`--max-txn-ops`), and the rest go with later ones.
const PRUNE_BATCH: usize = 100;

/// How many times an apply is planned again when the slices changed under it.
const APPLY_ATTEMPTS: usize = 3;

/// A store of slices in etcd. See the crate documentation.
pub struct EtcdStore {
    layout: Layout,
    connection: Arc<Connection>,
    shared: Arc<SharedMirror>,
    runtime: OwnedRuntime,
}

impl EtcdStore {
    /// Connects to the cluster at `endpoints` (`host:port` or URLs), reads the store under
    /// `prefix` and starts following it. Fails when etcd does not answer within
    /// [`REQUEST_TIMEOUT`](crate::REQUEST_TIMEOUT).
    pub fn open(endpoints: &[String], prefix: &str) -> Result<Self, Error> {
        Self::open_with(endpoints, prefix, &Access::default())
    }

    /// Like [`EtcdStore::open`], with TLS and credentials for a locked-down etcd. A
    /// refused certificate, user or password fails here, within [`REQUEST_TIMEOUT`](crate::REQUEST_TIMEOUT).
    pub fn open_with(endpoints: &[String], prefix: &str, access: &Access) -> Result<Self, Error> {
        let owned = OwnedRuntime::new("slice-etcd")?;
        let runtime = owned.get()?;
        let layout = Layout::new(prefix);
        let refused = |err: Error| err.explain_refusal(access, endpoints);
        let connection = connect(runtime, endpoints, access).map_err(refused)?;
        let snapshot = {
            let (connection, layout) = (connection.clone(), layout.clone());
            run(runtime, async move {
                watch::read_snapshot(&connection, &layout).await
            })?
            .map_err(|err| refused(Error::Etcd(err)))?
        };
        let shared = Arc::new(SharedMirror::new(Mirror::from_snapshot(&layout, snapshot)));
        runtime.spawn(watch::follow(
            connection.clone(),
            layout.clone(),
            shared.clone(),
        ));
        Ok(Self {
            layout,
            connection,
            shared,
            runtime: owned,
        })
    }

    /// The etcd revision this instance's copy has applied.
    pub fn revision(&self) -> i64 {
        self.read(|mirror| mirror.revision)
    }

    /// The key that signs login sessions, shared by every instance on this prefix so that
    /// a session made on one is valid on all: read from etcd, or made (64 random bytes)
    /// by a transaction that creates it only if it is absent, so that instances starting
    /// at once agree on the first one written. It never touches the local disk.
    pub fn shared_session_key(&self) -> Result<Vec<u8>, Error> {
        let fresh = session_key::fresh().map_err(|err| Error::Random(err.to_string()))?;
        let key = self.layout.session_key();
        let txn = Txn::new()
            .when([absent(key.clone())])
            .and_then([put(key.clone(), fresh.clone())])
            .or_else([TxnOp::get(key, None)]);
        // Creating it only if absent makes a second attempt harmless.
        let response = self.txn(txn, Retry::Always)?;
        if response.succeeded() {
            return Ok(fresh);
        }
        let stored = response
            .op_responses()
            .into_iter()
            .find_map(|op| match op {
                TxnOpResponse::Get(get) => get.kvs().first().map(|kv| kv.value().to_vec()),
                _ => None,
            })
            .unwrap_or_default();
        if session_key::usable(&stored) {
            Ok(stored)
        } else {
            Err(Error::BadSessionKey(stored.len()))
        }
    }

    /// Runs one transaction, bounded by [`REQUEST_TIMEOUT`](crate::REQUEST_TIMEOUT), on another member when the
    /// one in use cannot be reached and `retry` allows. A failure after the transaction
    /// may have reached etcd says that it may have been applied.
    fn txn(&self, txn: Txn, retry: Retry) -> Result<TxnResponse, Error> {
        let connection = Arc::clone(&self.connection);
        let runtime = self.runtime.get()?;
        run(runtime, async move {
            connection
                .call(retry, |mut client| {
                    let txn = txn.clone();
                    async move { client.txn(txn).await }
                })
                .await
        })?
        .map_err(|err| match Failure::of(&err) {
            Failure::NotSent => Error::Etcd(err),
            Failure::MaybeSent => Error::Unconfirmed(err),
            // etcd's own "request timed out" and the like: it may yet commit.
            Failure::Answered if transient(&err) => Error::Unconfirmed(err),
            Failure::Answered => Error::Etcd(err),
        })
    }

    /// The etcd endpoint this instance talks to now.
    pub fn endpoint_in_use(&self) -> String {
        self.connection.endpoint()
    }

    /// Waits until the copy has applied the revision of a committed transaction, so that
    /// the writer reads its write and the listeners have been told.
    fn committed(&self, response: &TxnResponse) -> Result<(), Error> {
        let revision = response.header().ok_or(Error::NoRevision)?.revision();
        self.caught_up(revision)
    }

    /// Runs a transaction whose compares are the checks of a write; on success waits for
    /// it to come back and returns its answers, and on failure returns the answers of its
    /// `or_else` reads for `refused` to name the error with.
    fn write(
        &self,
        checks: Vec<Compare>,
        then: Vec<TxnOp>,
        reads: Vec<TxnOp>,
        refused: impl FnOnce(&[bool]) -> SliceError,
    ) -> Result<Vec<TxnOpResponse>, StoreError> {
        self.transact(checks, then, reads)?
            .map_err(|found| refused(&found).into())
    }

    /// [`EtcdStore::write`] that returns, when a check fails, which of the `reads` found
    /// their key.
    fn transact(
        &self,
        checks: Vec<Compare>,
        then: Vec<TxnOp>,
        reads: Vec<TxnOp>,
    ) -> Result<Result<Vec<TxnOpResponse>, Vec<bool>>, StoreError> {
        let txn = Txn::new().when(checks).and_then(then).or_else(reads);
        // A write applied twice would answer its own success with a conflict.
        let response = self.txn(txn, Retry::IfNotSent)?;
        if !response.succeeded() {
            let found: Vec<bool> = response
                .op_responses()
                .iter()
                .map(|read| matches!(read, TxnOpResponse::Get(get) if !get.kvs().is_empty()))
                .collect();
            return Ok(Err(found));
        }
        self.committed(&response)?;
        Ok(Ok(response.op_responses()))
    }

    /// How many keys under the prefix this instance skips: keys sliced does not write or
    /// spell so, and records without their slice's or port's key (`sliced_etcd_foreign_keys`).
    pub fn skipped_keys(&self) -> usize {
        self.read(Mirror::skipped_keys)
    }

    /// The one transaction that carries out `plan`, planned against the copy at
    /// `revision` (see [`txn::for_plan`]).
    fn transaction_for(&self, plan: &Plan, revision: i64) -> (Vec<Compare>, Vec<TxnOp>) {
        let layout = &self.layout;
        // Read after `revision`, but a copy that moved on under the prefixes compared
        // there fails the transaction, which is then planned again.
        let leftovers = self.read(|mirror| leftovers::of_plan(mirror, layout, plan));
        txn::for_plan(layout, &leftovers, plan, revision)
    }

    /// Waits until the copy has applied `revision`.
    fn caught_up(&self, revision: i64) -> Result<(), Error> {
        self.shared.caught_up(revision)
    }

    /// Reads from the copy.
    fn read<T>(&self, look: impl FnOnce(&Mirror) -> T) -> T {
        self.shared.read(look)
    }
}

impl SliceRead for EtcdStore {
    fn read_slices(
        &self,
        look: &mut dyn FnMut(&mut dyn Iterator<Item = &SliceName>),
    ) -> Result<(), StoreError> {
        self.read(|mirror| look(&mut mirror.order.iter()));
        Ok(())
    }

    fn content_version(&self) -> Result<u64, StoreError> {
        Ok(self.read(|mirror| mirror.content_version))
    }

    fn check_slice(&self, slice: &SliceName) -> Result<(), StoreError> {
        self.read(|mirror| mirror.slices.contains_key(slice))
            .then_some(())
            .ok_or_else(|| SliceError::SliceNotFound(slice.clone()).into())
    }

    fn ports(&self, slice: &SliceName) -> Result<Vec<PortId>, StoreError> {
        self.read(|mirror| {
            let ports = mirror
                .slices
                .get(slice)
                .ok_or_else(|| SliceError::SliceNotFound(slice.clone()))?;
            Ok(ports.iter().map(|port| port.id).collect())
        })
    }

    fn check_port(&self, slice: &SliceName, port: PortId) -> Result<(), StoreError> {
        self.macs(slice, port).map(drop)
    }

    fn macs(&self, slice: &SliceName, port: PortId) -> Result<Vec<MacAddress>, StoreError> {
        self.read(|mirror| {
            let ports = mirror
                .slices
                .get(slice)
                .ok_or_else(|| SliceError::SliceNotFound(slice.clone()))?;
            let held = ports
                .iter()
                .find(|held| held.id == port)
                .ok_or(SliceError::PortNotFound(port))?;
            Ok(held.macs.clone())
        })
    }

    fn check_mac(
        &self,
        slice: &SliceName,
        port: PortId,
        mac: MacAddress,
    ) -> Result<(), StoreError> {
        if self.macs(slice, port)?.contains(&mac) {
            Ok(())
        } else {
            Err(SliceError::MacNotFound(mac).into())
        }
    }
}

impl SliceWrite for EtcdStore {
    fn create_slice(&self, slice: &SliceName) -> Result<(), StoreError> {
        let layout = &self.layout;
        let key = layout.slice(slice);
        // It starts empty, whatever another writer left under its name.
        self.write(
            vec![absent(key.clone())],
            vec![
                leftovers::clear_under(layout.ports_of(slice)),
                leftovers::clear_under(layout.macs_of_slice(slice)),
                put(key, ""),
            ],
            vec![],
            |_| SliceError::SliceExists(slice.clone()),
        )
        .map(drop)
    }

    fn delete_slice(&self, slice: &SliceName) -> Result<Slice, StoreError> {
        let layout = &self.layout;
        let answers = self.write(
            vec![exists(layout.slice(slice))],
            vec![
                delete_under(layout.ports_of(slice)),
                delete_under(layout.macs_of_slice(slice)),
                TxnOp::delete(layout.slice(slice), None),
            ],
            vec![],
            |_| SliceError::SliceNotFound(slice.clone()),
        )?;
        let mut ports: Vec<Port> = deleted(answers.first())
            .iter()
            .filter_map(|kv| match layout.decode(kv.key()) {
                Some(Key::Port(_, id)) => Some(Port {
                    id,
                    macs: Vec::new(),
                }),
                _ => None,
            })
            .collect();
        for kv in deleted(answers.get(1)) {
            if let Some(Key::Mac(_, id, mac)) = layout.decode(kv.key()) {
                if let Some(port) = ports.iter_mut().find(|port| port.id == id) {
                    port.macs.push(mac);
                }
            }
        }
        Ok(Slice {
            name: slice.clone(),
            ports,
        })
    }

    fn add_port(&self, slice: &SliceName, port: PortId) -> Result<(), StoreError> {
        let (slice_key, port_key) = (self.layout.slice(slice), self.layout.port(slice, port));
        // It starts without MAC addresses, whatever another writer left under it.
        self.write(
            vec![exists(slice_key.clone()), absent(port_key.clone())],
            vec![
                leftovers::clear_under(self.layout.macs_of_port(slice, port)),
                put(port_key, ""),
            ],
            vec![get(slice_key)],
            |found| match found {
                [true] => SliceError::PortExists(port),
                _ => SliceError::SliceNotFound(slice.clone()),
            },
        )
        .map(drop)
    }

    fn delete_port(&self, slice: &SliceName, port: PortId) -> Result<Port, StoreError> {
        let layout = &self.layout;
        let (slice_key, port_key) = (layout.slice(slice), layout.port(slice, port));
        let answers = self.write(
            vec![exists(slice_key.clone()), exists(port_key.clone())],
            vec![
                delete_under(layout.macs_of_port(slice, port)),
                TxnOp::delete(port_key, None),
            ],
            vec![get(slice_key)],
            |found| match found {
                [true] => SliceError::PortNotFound(port),
                _ => SliceError::SliceNotFound(slice.clone()),
            },
        )?;
        let macs = deleted(answers.first())
            .iter()
            .filter_map(|kv| match layout.decode(kv.key()) {
                Some(Key::Mac(_, _, mac)) => Some(mac),
                _ => None,
            })
            .collect();
        Ok(Port { id: port, macs })
    }

    fn add_mac(
        &self,
        slice: &SliceName,
        port: PortId,
        mac: MacAddress,
    ) -> Result<bool, StoreError> {
        let layout = &self.layout;
        let (slice_key, port_key) = (layout.slice(slice), layout.port(slice, port));
        let mac_key = layout.mac(slice, port, mac);
        let reads = || vec![get(slice_key.clone()), get(port_key.clone())];
        // Two transactions, one for a port that exists and one that creates it: only the
        // second clears what another writer left under the port, and etcd's compares
        // cannot say "or". Which one is a guess from the copy, corrected by etcd's answer.
        let mut port_exists = self.read(|mirror| mirror.port(slice, port).is_some());
        for _ in 0..APPLY_ATTEMPTS {
            let outcome = if port_exists {
                self.transact(
                    vec![
                        exists(slice_key.clone()),
                        exists(port_key.clone()),
                        absent(mac_key.clone()),
                    ],
                    vec![put(mac_key.clone(), "")],
                    reads(),
                )?
            } else {
                let [before, after] =
                    leftovers::clear_around(&layout.macs_of_port(slice, port), &mac_key);
                self.transact(
                    vec![exists(slice_key.clone()), absent(port_key.clone())],
                    vec![
                        before,
                        after,
                        put(mac_key.clone(), ""),
                        put(port_key.clone(), ""),
                    ],
                    reads(),
                )?
            };
            match outcome {
                Ok(_) => return Ok(!port_exists),
                Err(found) => match found[..] {
                    [true, true, ..] if port_exists => {
                        return Err(SliceError::MacExists(mac).into())
                    }
                    // The port came or went since the copy's guess.
                    [true, now, ..] => port_exists = now,
                    _ => return Err(SliceError::SliceNotFound(slice.clone()).into()),
                },
            }
        }
        Err(StoreError::Unavailable(
            format!("the port {port} kept coming and going while a MAC address was added").into(),
        ))
    }

    fn delete_mac(
        &self,
        slice: &SliceName,
        port: PortId,
        mac: MacAddress,
    ) -> Result<(), StoreError> {
        let layout = &self.layout;
        let (slice_key, port_key) = (layout.slice(slice), layout.port(slice, port));
        let mac_key = layout.mac(slice, port, mac);
        self.write(
            vec![
                exists(slice_key.clone()),
                exists(port_key.clone()),
                exists(mac_key.clone()),
            ],
            vec![TxnOp::delete(mac_key, None)],
            vec![get(slice_key), get(port_key)],
            |found| match found {
                [true, true] => SliceError::MacNotFound(mac),
                [true, false] => SliceError::PortNotFound(port),
                _ => SliceError::SliceNotFound(slice.clone()),
            },
        )
        .map(drop)
    }

    fn apply(&self, declared: &[Slice]) -> Result<Plan, StoreError> {
        for _ in 0..APPLY_ATTEMPTS {
            let (current, revision) = self.read(|mirror| {
                let current: Vec<Slice> = mirror
                    .order
                    .iter()
                    .filter_map(|name| mirror.slice(name))
                    .collect();
                (current, mirror.revision)
            });
            let plan = Plan::between(&current, declared)?;
            if plan.is_empty() {
                return Ok(plan);
            }
            let (checks, ops) = self.transaction_for(&plan, revision);
            for count in [checks.len(), ops.len()] {
                if count > MAX_TXN_OPS {
                    return Err(PlanError::TooLarge {
                        needed: count,
                        limit: MAX_TXN_OPS,
                    }
                    .into());
                }
            }
            // Planned against this instance's copy at `revision`: refused by etcd when
            // any record changed since, and then planned again on the newer copy.
            let response = self.txn(Txn::new().when(checks).and_then(ops), Retry::IfNotSent)?;
            if response.succeeded() {
                self.committed(&response)?;
                return Ok(plan);
            }
            let newer = response.header().ok_or(Error::NoRevision)?.revision();
            self.caught_up(newer)?;
        }
        Err(StoreError::Unavailable(
            format!(
                "the slices kept changing while the plan was applied ({APPLY_ATTEMPTS} \
                 tries); nothing of it was applied"
            )
            .into(),
        ))
    }
}

impl SessionRevocations for EtcdStore {
    fn revoke_session(&self, id: &[u8], expires_at: u64, now: u64) -> Result<(), StoreError> {
        let layout = &self.layout;
        let (expired, live) = self.read(|mirror| {
            let expired: Vec<String> = mirror
                .revoked
                .iter()
                .filter(|(held, expiry)| **expiry <= now && held.as_slice() != id)
                .take(PRUNE_BATCH)
                .map(|(held, _)| layout.revoked(held))
                .collect();
            let live = mirror
                .revoked
                .iter()
                .filter(|(held, expiry)| **expiry > now && held.as_slice() != id)
                .count();
            (expired, live)
        });
        let ops = if live >= MAX_REVOKED_SESSIONS {
            log::warn!(
                "{live} sessions were logged out within their lifetime: \
                 ending every session issued so far"
            );
            vec![
                delete_under(layout.revoked_sessions()),
                put(layout.not_before(), (now + 1).to_string()),
            ]
        } else {
            let mut ops: Vec<TxnOp> = expired
                .into_iter()
                .map(|key| TxnOp::delete(key, None))
                .collect();
            ops.push(put(layout.revoked(id), expires_at.to_string()));
            ops
        };
        // Puts of the same values and deletes: the same outcome when applied twice.
        let response = self.txn(Txn::new().and_then(ops), Retry::Always)?;
        Ok(self.committed(&response)?)
    }

    fn session_revoked(&self, id: &[u8], issued_at: u64) -> Result<bool, StoreError> {
        Ok(self.read(|mirror| issued_at < mirror.not_before || mirror.revoked.contains_key(id)))
    }
}

impl FabricDeclarations for EtcdStore {
    fn declared_fabric(&self) -> Result<DeclaredFabric, StoreError> {
        Ok(self.read(|mirror| mirror.fabric.get().clone()))
    }

    /// One transaction that leaves the key alone when it already holds `fabric` (for an
    /// empty declaration: when the key does not exist), and writes it otherwise. etcd
    /// decides, not this instance's copy, which may lag behind another's declaration;
    /// either way the answer waits for the copy to reach the transaction's revision, so
    /// that a read after it sees what etcd holds. The copy tells the listeners only a
    /// real change.
    fn declare_fabric(&self, fabric: &DeclaredFabric) -> Result<(), StoreError> {
        let key = self.layout.fabric();
        let unchanged = if fabric.is_declared() {
            Compare::value(key, CompareOp::Equal, fabric.to_text())
        } else {
            absent(key)
        };
        let write = fabric::write(&self.layout, fabric);
        let txn = Txn::new().when([unchanged]).or_else([write]);
        // Sent again only when surely not sent: after a lost answer, a second try could
        // write over a declaration another instance made in between.
        let response = self.txn(txn, Retry::IfNotSent)?;
        Ok(self.committed(&response)?)
    }
}

impl SliceStore for EtcdStore {
    /// A linearizable read of one key nobody writes, on the member in use: it answers
    /// only with a leader, so it proves a quorum without a write (a write would be a
    /// revision for every instance's watch, once a second from each).
    fn probe(&self) -> Result<(), StoreError> {
        let connection = Arc::clone(&self.connection);
        let runtime = self.runtime.get()?;
        let probed = run(runtime, async move { Ok(connection.probe_in_use().await) })?
            .map_err(Error::Etcd)?;
        probed.map_err(|reason| StoreError::Unavailable(reason.into()))
    }
}

impl MembershipSource for EtcdStore {
    fn subscribe(&self, listener: ChangeListener) {
        self.shared.update(|mirror| mirror.listeners.push(listener));
    }

    fn snapshot(&self) -> Result<Vec<Slice>, StoreError> {
        Ok(self.read(|mirror| {
            mirror
                .order
                .iter()
                .filter_map(|name| mirror.slice(name))
                .collect()
        }))
    }
}

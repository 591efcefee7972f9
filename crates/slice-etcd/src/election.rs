//! One master per network: an election on an etcd lease.
//!
//! Every instance holds a lease of [`ElectionConfig::lease_ttl`] and keeps it alive every
//! third of it. It registers itself under `members/<id>` on that lease (so a dead
//! instance's record goes with its lease) and campaigns with one transaction: create the
//! `master` key, on its lease, if it does not exist. The instance whose transaction
//! created the key is master; the key's create revision is its generation, which only
//! grows from one master to the next since etcd's revisions do. The others read the key
//! (who is master, which generation) and watch it; when it goes (the master's lease
//! expired or was revoked) they campaign again at once. A master key that is no running
//! member's (without a lease, or naming no member record on its lease: written by hand or
//! by something else) is removed, if it is still the key read, and the campaign goes on,
//! rather than waited for forever.
//!
//! Why a key and a transaction rather than etcd's election API (`campaign`, `leader`,
//! `observe`): `campaign` is one call that blocks until this instance wins, which neither
//! reports who the master is meanwhile nor fits the one loop that also renews the lease
//! and steps down on this instance's own clock; the transaction is the same mechanism
//! (etcd's election is a key on a lease with the lowest create revision) in one call.
//!
//! A master steps down by its own clock: once the last renewal etcd confirmed is older
//! than the lease's time to live minus [`STEP_DOWN_MARGIN`] of it, it stops being master
//! at once, before etcd can have let its lease expire and given the key to another
//! instance, whether or not etcd can be reached to say so. It then stands by and keeps
//! renewing the same lease: when etcd confirms a renewal, the lease never expired, so the
//! key on it is still this instance's and it is master again with the same generation
//! (an etcd that lost its leader for a moment moves nobody); when etcd says the lease is
//! gone, it starts again with a new lease and campaigns again.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{
    Compare, CompareOp, EventType, GetOptions, PutOptions, Txn, TxnOp, TxnOpResponse, WatchOptions,
};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use slice_core::Leadership;
use tokio::sync::{watch, Notify};
use tokio::time::{timeout, Instant};

use crate::access::Access;
use crate::connection::{Connection, Retry, REQUEST_TIMEOUT};
use crate::error::Error;
use crate::keys::Layout;
use crate::runtime::{connect, run, OwnedRuntime};

/// The lease's time to live unless configured otherwise: a dead master is replaced within
/// about this long.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(2);

/// A master steps down this fraction of the lease's time to live before the lease could
/// expire in etcd: room for the clocks' drift and for the step-down to take effect.
const STEP_DOWN_MARGIN: u32 = 4;

/// The most members `GET /cluster` lists, and the most switches one member's record
/// carries: bounds on what a hostile or confused etcd can make an instance hold.
pub const MAX_MEMBERS: usize = 64;
pub const MAX_SWITCHES_PER_MEMBER: usize = 4096;
/// A member record longer than this is skipped.
const MAX_MEMBER_RECORD: usize = 512 * 1024;

/// How long the election waits before it tries etcd again after losing it.
const RETRY_DELAY: Duration = Duration::from_millis(200);

/// Who this instance is and how it campaigns.
#[derive(Debug, Clone)]
pub struct ElectionConfig {
    pub endpoints: Vec<String>,
    /// The store's prefix: the election's keys live beside the slices.
    pub prefix: String,
    /// This instance's member id, unique in the cluster.
    pub id: String,
    /// Where this instance serves the REST API and OpenFlow, for operators.
    pub http: String,
    pub openflow: String,
    /// Whole seconds, as etcd's leases have; etcd may raise a shorter one to its minimum.
    pub lease_ttl: Duration,
    /// TLS and credentials for a locked-down etcd.
    pub access: Access,
}

/// A running instance as it registered itself under `members/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberRecord {
    pub name: String,
    pub http: String,
    pub openflow: String,
    /// The role each switch connected to the member gave it.
    pub switches: Vec<SwitchRole>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchRole {
    pub dpid: u64,
    pub role: String,
}

/// How this instance last found etcd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdHealth {
    pub healthy: bool,
    pub error: Option<String>,
}

/// What the election loop keeps for readers that must not wait on etcd.
struct Known {
    members: Vec<MemberRecord>,
    health: EtcdHealth,
}

/// This instance's campaign, running on a runtime of its own until dropped. Dropping it
/// stops renewing the lease, as a crash would: the lease expires in etcd after its time
/// to live (call [`MasterElection::resign`] first to hand over at once).
pub struct MasterElection {
    id: String,
    endpoints: Vec<String>,
    leadership: watch::Receiver<Leadership>,
    switches: watch::Sender<Vec<SwitchRole>>,
    known: Arc<Mutex<Known>>,
    lease: Arc<Mutex<Option<i64>>>,
    stop: watch::Sender<bool>,
    connection: Arc<Connection>,
    runtime: OwnedRuntime,
    recheck: Arc<Notify>,
}

impl MasterElection {
    /// Connects to etcd and starts campaigning. Fails only when the client cannot be made
    /// (a malformed endpoint) or etcd does not answer the connection within
    /// [`REQUEST_TIMEOUT`]; an etcd lost later is waited out.
    pub fn start(config: ElectionConfig) -> Result<Self, Error> {
        let runtime = OwnedRuntime::new("slice-etcd-election")?;
        let connection = connect(runtime.get()?, &config.endpoints, &config.access)
            .map_err(|err| err.explain_refusal(&config.access, &config.endpoints))?;
        let (leadership_tx, leadership) = watch::channel(Leadership::UNDECIDED);
        let (switches, switches_rx) = watch::channel(Vec::new());
        let known = Arc::new(Mutex::new(Known {
            members: Vec::new(),
            health: EtcdHealth {
                healthy: false,
                error: Some("not asked yet".to_owned()),
            },
        }));
        let lease = Arc::new(Mutex::new(None));
        let recheck = Arc::new(Notify::new());
        let campaign = Campaign {
            recheck: Arc::clone(&recheck),
            layout: Layout::new(&config.prefix),
            connection: Arc::clone(&connection),
            leadership: leadership_tx,
            switches: switches_rx,
            known: Arc::clone(&known),
            lease: Arc::clone(&lease),
            known_generation: None,
            config: config.clone(),
        };
        let (stop, mut stopped) = watch::channel(false);
        runtime.get()?.spawn(async move {
            tokio::select! {
                () = campaign.run() => {}
                _ = stopped.wait_for(|stopped| *stopped) => {}
            }
        });
        Ok(Self {
            id: config.id,
            endpoints: config.endpoints,
            leadership,
            switches,
            known,
            lease,
            stop,
            connection,
            runtime,
            recheck,
        })
    }

    /// What to notify when a switch refused a role request as stale: the election reads
    /// the master key again at once, instead of waiting for its watch, and publishes a
    /// newer generation if etcd holds one, which the controller then asks the switches
    /// for. An unchanged state is not told again, so a refusal cannot start a loop.
    pub fn generation_recheck(&self) -> Arc<Notify> {
        Arc::clone(&self.recheck)
    }

    /// This instance's member id.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// This instance's place in the election, now and as it changes.
    pub fn leadership(&self) -> watch::Receiver<Leadership> {
        self.leadership.clone()
    }

    /// Publishes the roles the switches gave this instance in its member record (the
    /// first [`MAX_SWITCHES_PER_MEMBER`]); never waits on etcd.
    pub fn set_switch_roles(&self, roles: Vec<SwitchRole>) {
        let mut roles = roles;
        roles.truncate(MAX_SWITCHES_PER_MEMBER);
        self.switches.send_if_modified(|current| {
            let changed = *current != roles;
            *current = std::mem::take(&mut roles);
            changed
        });
    }

    /// The members as last read from etcd (every lease-renewal round), sorted by name.
    pub fn members(&self) -> Vec<MemberRecord> {
        self.known.lock().members.clone()
    }

    /// Whether etcd answered this instance's last request, and why not.
    pub fn etcd_health(&self) -> EtcdHealth {
        self.known.lock().health.clone()
    }

    /// Gives the election up at once: revokes the lease (the master key and the member
    /// record go with it), so that another instance takes over without waiting for the
    /// lease to expire, and stops campaigning. Bounded by [`REQUEST_TIMEOUT`].
    pub fn resign(&self) {
        self.stop.send_replace(true);
        let lease = self.lease.lock().take();
        let (Some(lease), Ok(runtime)) = (lease, self.runtime.get()) else {
            return;
        };
        let connection = Arc::clone(&self.connection);
        let _ = run(runtime, async move {
            connection
                .call(Retry::Always, |mut client| async move {
                    client.lease_revoke(lease).await
                })
                .await
        });
    }
}

/// The election loop's state.
struct Campaign {
    config: ElectionConfig,
    layout: Layout,
    connection: Arc<Connection>,
    leadership: watch::Sender<Leadership>,
    switches: watch::Receiver<Vec<SwitchRole>>,
    known: Arc<Mutex<Known>>,
    lease: Arc<Mutex<Option<i64>>>,
    known_generation: Option<u64>,
    /// Asks the loop to read the master key again ([`MasterElection::generation_recheck`]).
    recheck: Arc<Notify>,
}

/// Why one lease's campaign ended.
#[derive(Debug)]
enum Ended {
    /// etcd did not confirm a renewal in time (or said the lease is gone).
    LeaseLost(String),
    /// A request failed.
    Etcd(String),
}

impl Campaign {
    async fn run(mut self) {
        // While etcd stays away, one warning, not one per retry.
        let mut warned = false;
        loop {
            let ended = self.campaign_once().await;
            self.stand_by(None, None);
            let had_lease = self.lease.lock().take().is_some();
            let reason = match ended {
                Ended::LeaseLost(reason) | Ended::Etcd(reason) => reason,
            };
            if had_lease || !warned {
                log::warn!("master election: {reason}; campaigning again");
                warned = true;
            } else {
                log::debug!("master election: {reason}");
            }
            self.known.lock().health = EtcdHealth {
                healthy: false,
                error: Some(reason),
            };
            tokio::time::sleep(RETRY_DELAY).await;
        }
    }

    fn ttl(&self) -> Duration {
        self.config.lease_ttl.max(Duration::from_secs(1))
    }

    /// Publishes a change of this instance's place, once.
    fn publish(&self, leadership: Leadership) {
        self.leadership.send_if_modified(|current| {
            let changed = *current != leadership;
            *current = leadership;
            changed
        });
    }

    fn stand_by(&mut self, master: Option<String>, generation: Option<u64>) {
        self.known_generation = self.known_generation.max(generation);
        self.publish(Leadership::Standby { master, generation });
    }

    /// One lease: grant it, register, campaign and renew until it is lost.
    async fn campaign_once(&mut self) -> Ended {
        let ttl = self.ttl();
        let requested = i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX);
        let asked_at = Instant::now();
        // A second grant after a lost answer leaves a lease nobody renews, which expires.
        let grant = self
            .connection
            .call(Retry::Always, |mut client| async move {
                client.lease_grant(requested, None).await
            });
        let granted = match self.bounded(grant).await {
            Ok(granted) => granted,
            Err(ended) => return ended,
        };
        let lease = granted.id();
        *self.lease.lock() = Some(lease);
        self.known.lock().health = EtcdHealth {
            healthy: true,
            error: None,
        };
        // The lease runs from when etcd granted it, after `asked_at`: counting from
        // `asked_at` errs on the safe side. A TTL etcd raised is not waited for.
        let mut renewed_at = asked_at;
        let (mut keeper, mut replies) = match self.keep_alive(lease).await {
            Ok(pair) => pair,
            Err(ended) => return ended,
        };
        if let Err(ended) = self.register(lease).await {
            return ended;
        }
        let mut ticker = tokio::time::interval(ttl / 3);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The master key is watched by everyone: a standby campaigns when it goes, a
        // master re-checks that it still holds it whenever it changes (someone deleted
        // it by hand, say), and either claims again when the watch ends.
        let mut master_key = None;
        let mut is_master = false;
        // When to claim (or read) the master key next, while it is not being watched.
        let mut claim_at = Some(Instant::now());
        // Past the step-down deadline: standing by until etcd confirms the lease again.
        let mut suspended = false;
        loop {
            let step_down_at = renewed_at + ttl - ttl / STEP_DOWN_MARGIN;
            if !suspended && master_key.is_none() && claim_at.is_some_and(|at| at <= Instant::now())
            {
                claim_at = None;
                // Bounded by the step-down deadline, which only the loop below acts on.
                let claimed = self.claim_and_watch(lease, &mut is_master);
                match tokio::time::timeout_at(step_down_at, claimed).await {
                    Ok(Ok(Some(stream))) => master_key = Some(stream),
                    Ok(Ok(None)) => claim_at = Some(Instant::now()),
                    // The lease is renewed apart from this; while it lives, the key on it
                    // does, so this instance's place stands and the claim is tried again.
                    Ok(Err(ended)) => {
                        log::debug!("master election: cannot read the master key: {ended:?}");
                        claim_at = Some(Instant::now() + RETRY_DELAY);
                    }
                    Err(_) => claim_at = Some(Instant::now()),
                }
            }
            let round_deadline = if suspended {
                Instant::now() + ttl
            } else {
                step_down_at
            };
            tokio::select! {
                _ = ticker.tick() => {
                    let sent_at = Instant::now();
                    let round = self.round(lease, &mut keeper, &mut replies);
                    match tokio::time::timeout_at(round_deadline, round).await {
                        Ok(Ok(())) => {
                            renewed_at = sent_at;
                            if suspended {
                                // etcd kept the lease, so the key on it is still this
                                // instance's if it was: the claim finds it, same generation.
                                log::warn!("master election: etcd confirmed the lease again");
                                suspended = false;
                                master_key = None;
                                claim_at = Some(Instant::now());
                                if let Err(ended) = self.register(lease).await {
                                    log::debug!("cannot register again: {ended:?}");
                                }
                            }
                        }
                        Ok(Err(Ended::LeaseLost(reason))) => return Ended::LeaseLost(reason),
                        // A renewal that did not come through is tried again at the next
                        // tick; the step-down deadline decides when to stop writing.
                        Ok(Err(Ended::Etcd(reason))) => {
                            log::debug!("lease renewal failed: {reason}");
                            self.known.lock().health = EtcdHealth {
                                healthy: false,
                                error: Some(reason),
                            };
                        }
                        Err(_) if suspended => {}
                        Err(_) => {
                            self.suspend(renewed_at);
                            suspended = true;
                            master_key = None;
                        }
                    }
                }
                _ = tokio::time::sleep_until(step_down_at), if !suspended => {
                    self.suspend(renewed_at);
                    suspended = true;
                    master_key = None;
                }
                _ = sleep_until_some(claim_at), if !suspended && master_key.is_none() => {}
                () = self.recheck.notified(), if !suspended => {
                    master_key = None;
                    claim_at = Some(Instant::now());
                }
                changed = next_change(&mut master_key, is_master) => {
                    master_key = None;
                    claim_at = Some(Instant::now());
                    if let Err(reason) = changed {
                        log::debug!("the watch on the master key ended: {reason}");
                    }
                }
                changed = self.switches.changed(), if !suspended => {
                    if changed.is_ok() {
                        match tokio::time::timeout_at(step_down_at, self.register(lease)).await {
                            Ok(Ok(())) => {}
                            Ok(Err(Ended::LeaseLost(reason))) => {
                                return Ended::LeaseLost(reason)
                            }
                            // Registered again at the next change or resumption.
                            Ok(Err(Ended::Etcd(reason))) => {
                                log::debug!("cannot publish the switches' roles: {reason}");
                            }
                            Err(_) => {}
                        }
                    }
                }
            }
        }
    }

    /// Claims the master key or learns who holds it, publishes the outcome, and watches
    /// the key from there; `None` when the key went between the two.
    async fn claim_and_watch(
        &mut self,
        lease: i64,
        is_master: &mut bool,
    ) -> Result<Option<etcd_client::WatchStream>, Ended> {
        let revision = match self.claim(lease).await? {
            Claim::Won {
                generation,
                revision,
            } => {
                *is_master = true;
                self.known_generation = self.known_generation.max(Some(generation));
                self.publish(Leadership::Master { generation });
                revision
            }
            Claim::Lost {
                master,
                generation,
                revision,
            } => {
                *is_master = false;
                self.stand_by(Some(master), Some(generation));
                revision
            }
            Claim::Vanished => return Ok(None),
            Claim::Foreign { holder, master } => {
                // Not master from here (the key is not this instance's any more, and
                // another may claim it once it goes), nor standing by for a master
                // that does not exist.
                *is_master = false;
                self.stand_by(None, None);
                self.remove_foreign(&holder, &master).await?;
                return Ok(None);
            }
        };
        self.watch_master(revision + 1).await.map(Some)
    }

    /// Stops acting as master (or as a standby that knows the master) because etcd has
    /// confirmed no renewal for so long that the lease could expire soon: from here until
    /// etcd confirms one, nothing this instance thinks of its place is safe to act on.
    fn suspend(&mut self, renewed_at: Instant) {
        log::warn!(
            "master election: etcd confirmed no renewal of the lease for {:?}; standing by \
             until it does",
            renewed_at.elapsed()
        );
        self.known.lock().health = EtcdHealth {
            healthy: false,
            error: Some("no lease renewal confirmed".to_owned()),
        };
        self.stand_by(None, None);
    }

    /// Runs one request to etcd, bounded by a third of the lease's time to live (and
    /// [`REQUEST_TIMEOUT`]), so that a hung request never outlives the step-down deadline.
    /// A member that did not answer in time is left for another, in the background.
    async fn bounded<T>(
        &self,
        request: impl std::future::Future<Output = Result<T, etcd_client::Error>>,
    ) -> Result<T, Ended> {
        let limit = (self.ttl() / 3).min(REQUEST_TIMEOUT);
        let epoch = self.connection.pinned().epoch;
        match timeout(limit, request).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(err)) => Err(Ended::Etcd(format!("etcd: {err}"))),
            Err(_) => {
                let reason = format!("etcd did not answer within {limit:?}");
                self.leave_member(epoch, reason.clone());
                Err(Ended::Etcd(reason))
            }
        }
    }

    /// Moves the connection off the member in use at `epoch`, without waiting for it.
    fn leave_member(&self, epoch: u64, reason: String) {
        let connection = Arc::clone(&self.connection);
        tokio::spawn(async move { connection.move_on(epoch, &reason).await });
    }

    /// Opens a stream of renewals of `lease` on the member in use.
    async fn keep_alive(
        &self,
        lease: i64,
    ) -> Result<(etcd_client::LeaseKeeper, etcd_client::LeaseKeepAliveStream), Ended> {
        let open = async {
            let opened = self
                .connection
                .call(Retry::Always, |mut client| async move {
                    client.lease_keep_alive(lease).await
                })
                .await;
            match opened {
                // etcd answers a renewal of a lease it no longer has with a TTL of zero,
                // which the client reports so: the lease is gone (it expired while etcd
                // could not be reached), not etcd.
                Err(etcd_client::Error::LeaseKeepAliveError(why)) if why == "lease not found" => {
                    Ok(None)
                }
                other => other.map(Some),
            }
        };
        match self.bounded(open).await? {
            Some(pair) => Ok(pair),
            None => Err(Ended::LeaseLost(
                "etcd no longer has this instance's lease".to_owned(),
            )),
        }
    }

    /// One renewal round: renew the lease (on a new stream when the last one broke) and
    /// read the members.
    async fn round(
        &self,
        lease: i64,
        keeper: &mut etcd_client::LeaseKeeper,
        replies: &mut etcd_client::LeaseKeepAliveStream,
    ) -> Result<(), Ended> {
        let epoch = self.connection.pinned().epoch;
        match self.renew(keeper, replies).await {
            Ok(()) => {}
            Err(Ended::Etcd(reason)) => {
                // The stream's member failed it: renew through another.
                self.connection.move_on(epoch, &reason).await;
                let (new_keeper, new_replies) = self.keep_alive(lease).await?;
                *keeper = new_keeper;
                *replies = new_replies;
                self.renew(keeper, replies).await?;
            }
            Err(lost) => return Err(lost),
        }
        self.read_members().await
    }

    async fn renew(
        &self,
        keeper: &mut etcd_client::LeaseKeeper,
        replies: &mut etcd_client::LeaseKeepAliveStream,
    ) -> Result<(), Ended> {
        self.bounded(keeper.keep_alive()).await?;
        match self.bounded(replies.message()).await? {
            Some(reply) if reply.ttl() > 0 => Ok(()),
            Some(_) => Err(Ended::LeaseLost("etcd says the lease expired".to_owned())),
            None => Err(Ended::Etcd("the lease renewal stream ended".to_owned())),
        }
    }

    /// Writes this instance's member record, on its lease.
    async fn register(&self, lease: i64) -> Result<(), Ended> {
        let record = MemberRecord {
            name: self.config.id.clone(),
            http: self.config.http.clone(),
            openflow: self.config.openflow.clone(),
            switches: self.switches.borrow().clone(),
        };
        // Serialising plain strings and numbers cannot fail.
        let value = serde_json::to_vec(&record).unwrap_or_default();
        let key = self.layout.member(&self.config.id);
        let options = PutOptions::new().with_lease(lease);
        let put = self.connection.call(Retry::Always, |mut client| {
            let (key, value, options) = (key.clone(), value.clone(), options.clone());
            async move { client.put(key, value, Some(options)).await }
        });
        self.bounded(put).await.map(drop)
    }

    /// Reads every member's record, for readers that must not wait on etcd.
    async fn read_members(&self) -> Result<(), Ended> {
        let limit = i64::try_from(MAX_MEMBERS).unwrap_or(i64::MAX);
        let options = GetOptions::new().with_prefix().with_limit(limit);
        let read = self.connection.call(Retry::Always, |mut client| {
            let options = options.clone();
            async move { client.get(self.layout.members(), Some(options)).await }
        });
        let response = self.bounded(read).await?;
        let mut members: Vec<MemberRecord> = response
            .kvs()
            .iter()
            .filter(|kv| kv.value().len() <= MAX_MEMBER_RECORD)
            .filter_map(|kv| serde_json::from_slice::<MemberRecord>(kv.value()).ok())
            .map(|mut member| {
                member.switches.truncate(MAX_SWITCHES_PER_MEMBER);
                member
            })
            .collect();
        members.sort_by(|a, b| a.name.cmp(&b.name));
        let mut known = self.known.lock();
        known.members = members;
        known.health = EtcdHealth {
            healthy: true,
            error: None,
        };
        Ok(())
    }

    /// Creates the master key on `lease` unless it exists; otherwise says who holds it.
    async fn claim(&self, lease: i64) -> Result<Claim, Ended> {
        let key = self.layout.master();
        let txn = Txn::new()
            .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                key.clone(),
                self.config.id.clone(),
                Some(PutOptions::new().with_lease(lease)),
            )])
            .or_else([TxnOp::get(key, None)]);
        // A claim sent twice finds the key on its own lease, which counts as won.
        let claim = self.connection.call(Retry::Always, |mut client| {
            let txn = txn.clone();
            async move { client.txn(txn).await }
        });
        let response = self.bounded(claim).await?;
        let revision = response
            .header()
            .map(|header| header.revision())
            .ok_or_else(|| Ended::Etcd(Error::NoRevision.to_string()))?;
        if response.succeeded() {
            return Ok(Claim::Won {
                generation: generation(revision),
                revision,
            });
        }
        let holder = response.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Get(get) => get.kvs().first().cloned(),
            _ => None,
        });
        let Some(holder) = holder else {
            return Ok(Claim::Vanished);
        };
        let generation = generation(holder.create_revision());
        if holder.lease() == lease {
            // Ours already: an earlier claim whose answer was lost.
            return Ok(Claim::Won {
                generation,
                revision,
            });
        }
        let master: String = String::from_utf8_lossy(holder.value())
            .chars()
            .take(256)
            .collect();
        if !self.is_members(&holder).await? {
            return Ok(Claim::Foreign { holder, master });
        }
        if master == self.config.id {
            log::warn!(
                "the master key names this instance ({master}) under another lease: an \
                 earlier run of it, whose lease expires within {:?}, or another instance \
                 with the same name (names must differ)",
                self.ttl()
            );
        }
        Ok(Claim::Lost {
            master,
            generation,
            revision,
        })
    }

    /// Whether the master key `holder` is a running member's, as every claim leaves it:
    /// on a lease, naming a member record on that same lease (written before the claim,
    /// and gone with the lease). Any other key (written by hand or by something that is
    /// not sliced, maybe without a lease, so never to expire) would have every instance
    /// stand by for a master that does not exist.
    async fn is_members(&self, holder: &etcd_client::KeyValue) -> Result<bool, Ended> {
        let id = match std::str::from_utf8(holder.value()) {
            Ok(id) if holder.lease() != 0 && !id.is_empty() => id,
            _ => return Ok(false),
        };
        let key = self.layout.member(id);
        let read = self.connection.call(Retry::Always, |mut client| {
            let key = key.clone();
            async move { client.get(key, None).await }
        });
        let response = self.bounded(read).await?;
        Ok(response
            .kvs()
            .first()
            .is_some_and(|record| record.lease() == holder.lease()))
    }

    /// Deletes the master key `holder`, which is no member's, if it is still the key
    /// that was read (its mod revision): a master that claimed the key meanwhile is left
    /// alone. The campaign goes on at once.
    async fn remove_foreign(
        &self,
        holder: &etcd_client::KeyValue,
        shown: &str,
    ) -> Result<(), Ended> {
        let key = self.layout.master();
        let txn = Txn::new()
            .when([Compare::mod_revision(
                key.clone(),
                CompareOp::Equal,
                holder.mod_revision(),
            )])
            .and_then([TxnOp::delete(key, None)]);
        // Conditional on the revision read: sent twice, it deletes nothing more.
        let remove = self.connection.call(Retry::Always, |mut client| {
            let txn = txn.clone();
            async move { client.txn(txn).await }
        });
        if self.bounded(remove).await?.succeeded() {
            log::warn!(
                "master election: removed a master key that names no running member \
                 ({shown:?}, lease {}): written by something other than sliced",
                holder.lease()
            );
        }
        Ok(())
    }

    async fn watch_master(&self, from: i64) -> Result<etcd_client::WatchStream, Ended> {
        let options = WatchOptions::new().with_start_revision(from);
        let watch = self.connection.call(Retry::Always, |mut client| {
            let options = options.clone();
            async move { client.watch(self.layout.master(), Some(options)).await }
        });
        self.bounded(watch).await
    }
}

enum Claim {
    Won {
        generation: u64,
        /// The revision the claim was answered at, to watch the key from.
        revision: i64,
    },
    Lost {
        master: String,
        generation: u64,
        revision: i64,
    },
    /// The key went between the compare and the read: campaign again.
    Vanished,
    /// The key is no running member's: remove it and campaign again.
    Foreign {
        holder: etcd_client::KeyValue,
        master: String,
    },
}

/// etcd's revisions start at 1 and only grow.
fn generation(revision: i64) -> u64 {
    u64::try_from(revision).unwrap_or(0)
}

/// Sleeps until `at`, or forever when there is none.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Waits until the watched master key is deleted, or with `any` changed at all (Ok), or
/// the watch ends (Err); never, when nothing is watched.
async fn next_change(
    stream: &mut Option<etcd_client::WatchStream>,
    any: bool,
) -> Result<(), String> {
    let Some(stream) = stream else {
        return std::future::pending().await;
    };
    loop {
        match stream.message().await {
            Ok(Some(response)) => {
                if response.canceled() || response.compact_revision() > 0 {
                    return Err("the watch was cancelled".to_owned());
                }
                if response
                    .events()
                    .iter()
                    .any(|event| any || event.event_type() == EventType::Delete)
                {
                    return Ok(());
                }
            }
            Ok(None) => return Err("the watch stream ended".to_owned()),
            Err(err) => return Err(err.to_string()),
        }
    }
}

/// The roles as a member record lists them, from `(dpid, role name)` pairs.
pub fn switch_roles<'a>(roles: impl IntoIterator<Item = (u64, &'a str)>) -> Vec<SwitchRole> {
    let sorted: BTreeMap<u64, &str> = roles.into_iter().collect();
    sorted
        .into_iter()
        .map(|(dpid, role)| SwitchRole {
            dpid,
            role: role.to_owned(),
        })
        .collect()
}

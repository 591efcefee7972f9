//! Talking to one etcd member at a time, and moving to another when it goes.
//!
//! etcd-client spreads requests over every endpoint it is given (tower's power of two
//! choices) and keeps choosing a member that is down, so with one member of three away a
//! share of all requests fails and a campaign flaps (etcdv3/etcd-client#39). Instead, a
//! [`Connection`] holds one single-endpoint client per member and uses one of them, as
//! etcd's own Go client pins one endpoint. When a request cannot reach that member, the
//! connection probes the others in turn and moves to the first that answers with a leader.
//!
//! Whether the failed request itself may go again to the new member depends on whether the
//! old one could have applied it ([`Failure`]): a request that never left this process, or
//! one a member refused for having no leader, can; one lost on its way, or whose answer
//! was lost, may have been applied, so only idempotent requests go again ([`Retry`]).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use etcd_client::{Client, ConnectOptions, GetOptions};
use parking_lot::Mutex;

/// The longest any request to etcd may take, and the longest a write waits for its own
/// revision to come back through the watch: a few seconds, so that a lost quorum is a
/// prompt 503 rather than a hung request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a member may take to accept a connection, and to answer the probe that
/// decides whether to move to it: a member on a working network answers in milliseconds.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// The longest one attempt of a request may take before it counts as lost and the
/// connection moves on: under [`REQUEST_TIMEOUT`], so that a member that accepts
/// connections but never answers (stopped, partitioned) is left while the caller's
/// request is still waiting, and the next request goes elsewhere.
pub(crate) const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a request that no member took is tried again: longer than etcd takes to
/// elect a new leader after losing one (its default election timeout is 1 s; more on a
/// loaded machine), and less
/// than [`REQUEST_TIMEOUT`], so that a cluster without a quorum is reported as such
/// rather than as a timeout.
const RETRY_WINDOW: Duration = Duration::from_secs(4);

/// The pause between those tries, and the least time between two probe rounds that found
/// no other member, so that requests during an outage do not queue behind probes.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// The key the probe reads; like `etcdctl endpoint health`, one nobody writes.
const PROBE_KEY: &str = "health";

/// What a failed request says about the member it went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// It never reached a member (no connection could be made), or the member refused it
    /// before acting (it has no leader): safe to send elsewhere, and the member in use is
    /// no good.
    NotSent,
    /// The connection broke or timed out with the request in flight: the member may have
    /// applied it, and is no good.
    MaybeSent,
    /// The member answered with an error of the request itself: nothing to do with where
    /// it went.
    Answered,
}

impl Failure {
    pub(crate) fn of(err: &etcd_client::Error) -> Self {
        match err {
            // The client could not be built or the channel not made: nothing was sent.
            etcd_client::Error::TransportError(_) => Failure::NotSent,
            etcd_client::Error::IoError(_) => Failure::MaybeSent,
            etcd_client::Error::GRpcStatus(status) => {
                if caused_by_connect(status) || refused_without_leader(status) {
                    Failure::NotSent
                } else if std::error::Error::source(status).is_some() {
                    // A status made on this side of the wire from a transport error
                    // (a reset stream, a broken connection, the per-request timeout).
                    Failure::MaybeSent
                } else {
                    Failure::Answered
                }
            }
            _ => Failure::Answered,
        }
    }
}

/// Whether tonic made this status from a failure to connect: the request never left.
fn caused_by_connect(status: &tonic::Status) -> bool {
    let mut source = std::error::Error::source(status);
    while let Some(err) = source {
        if err.is::<tonic::ConnectError>() {
            return true;
        }
        source = err.source();
    }
    false
}

/// Whether a member refused the request because it has no leader, which with
/// `require_leader` it does before looking at the request (etcd's `ErrNoLeader`).
fn refused_without_leader(status: &tonic::Status) -> bool {
    status.code() == tonic::Code::Unavailable && status.message().ends_with("no leader")
}

/// Which failures a request may be sent again after, to another member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Reads, lease calls and writes whose repetition changes nothing.
    Always,
    /// Writes that must not be applied twice: again only when it was surely not sent.
    IfNotSent,
}

impl Retry {
    fn allows(self, failure: Failure) -> bool {
        match (self, failure) {
            (_, Failure::Answered) => false,
            (_, Failure::NotSent) | (Retry::Always, Failure::MaybeSent) => true,
            (Retry::IfNotSent, Failure::MaybeSent) => false,
        }
    }
}

/// The client in use, and how many moves it took to get there; a move is made once for
/// all the requests that failed on the same member.
#[derive(Clone)]
pub(crate) struct Pinned {
    pub(crate) client: Client,
    pub(crate) epoch: u64,
}

struct InUse {
    member: usize,
    epoch: u64,
    /// When a probe round at this epoch last found no other member: within
    /// [`RETRY_PAUSE`] of it, a failure does not probe again.
    fruitless_at: Option<Instant>,
}

/// One single-endpoint client per etcd member, one of them in use. Cheap to share
/// (`Arc`); every method must be called on a Tokio runtime, which the clients' channels
/// run on.
pub(crate) struct Connection {
    endpoints: Vec<String>,
    clients: Vec<Client>,
    /// The etcd user and password, when etcd has authentication on: each member's client
    /// logs in before it is used ([`Connection::log_in`]).
    credentials: Option<(String, String)>,
    /// Which members' clients have logged in.
    logged_in: Vec<AtomicBool>,
    in_use: Mutex<InUse>,
    /// Held while probing for a new member, so that concurrent failures move once.
    moving: tokio::sync::Mutex<()>,
}

impl Connection {
    /// Makes a client per endpoint, connecting to none yet, and starts with the first.
    /// Fails on an endpoint that is not a valid address, or on none. With `credentials`
    /// it logs in to the first member that answers and starts with that one: a refused
    /// user or password fails at once, while members that cannot be reached are skipped.
    pub(crate) async fn new(
        endpoints: &[String],
        options: ConnectOptions,
        credentials: Option<(String, String)>,
    ) -> Result<Arc<Self>, etcd_client::Error> {
        if endpoints.is_empty() {
            return Err(etcd_client::Error::InvalidArgs(
                "no etcd endpoint given".to_owned(),
            ));
        }
        // An expired token (etcd's simple tokens last five minutes) is renewed on the
        // request that finds it so.
        let options = options.with_auto_token_refresh(true);
        let mut clients = Vec::with_capacity(endpoints.len());
        for endpoint in endpoints {
            clients.push(Client::connect([endpoint], Some(options.clone())).await?);
        }
        let connection = Self {
            endpoints: endpoints.to_vec(),
            logged_in: endpoints.iter().map(|_| AtomicBool::new(false)).collect(),
            clients,
            credentials,
            in_use: Mutex::new(InUse {
                member: 0,
                epoch: 0,
                fruitless_at: None,
            }),
            moving: tokio::sync::Mutex::new(()),
        };
        if connection.credentials.is_some() {
            let mut last = None;
            let mut first = None;
            for member in 0..connection.endpoints.len() {
                match connection.log_in(member).await {
                    Ok(()) => {
                        first = Some(member);
                        break;
                    }
                    Err(err) if Failure::of(&err) == Failure::Answered => return Err(err),
                    Err(err) => last = Some(err),
                }
            }
            match (first, last) {
                (Some(member), _) => connection.in_use.lock().member = member,
                (None, Some(err)) => return Err(err),
                (None, None) => {}
            }
        }
        Ok(Arc::new(connection))
    }

    /// Logs `member`'s client in with the credentials, once; nothing without them.
    async fn log_in(&self, member: usize) -> Result<(), etcd_client::Error> {
        let Some(credentials) = &self.credentials else {
            return Ok(());
        };
        if self.logged_in[member].load(Ordering::Acquire) {
            return Ok(());
        }
        // Clones of a client share its credentials and token.
        let mut client = self.clients[member].clone();
        let login = client.update_user(Some(credentials.clone()));
        match tokio::time::timeout(PROBE_TIMEOUT, login).await {
            Ok(Ok(())) => {
                self.logged_in[member].store(true, Ordering::Release);
                Ok(())
            }
            Ok(Err(err)) => Err(err),
            Err(_) => Err(etcd_client::Error::GRpcStatus(tonic::Status::from_error(
                Box::new(tonic::TimeoutExpired(())),
            ))),
        }
    }

    /// The client in use now.
    pub(crate) fn pinned(&self) -> Pinned {
        let in_use = self.in_use.lock();
        Pinned {
            client: self.clients[in_use.member].clone(),
            epoch: in_use.epoch,
        }
    }

    /// The endpoint in use now, for operators.
    pub(crate) fn endpoint(&self) -> String {
        self.endpoints[self.in_use.lock().member].clone()
    }

    /// Whether the member in use answers a linearizable read within [`PROBE_TIMEOUT`]: it
    /// has a leader, so the cluster has a quorum (readiness probes). It stays on that
    /// member either way: the next request or watch that fails there moves on.
    pub(crate) async fn probe_in_use(&self) -> Result<(), String> {
        let Pinned { client, .. } = self.pinned();
        probe(&client)
            .await
            .map_err(|reason| format!("etcd member {}: {reason}", self.endpoint()))
    }

    /// Runs `request` on the member in use. When it cannot reach that member, moves to
    /// another and, as `retry` allows, sends it again there. A request refused everywhere
    /// before it was sent (the cluster is electing a leader, or has lost its quorum) goes
    /// again every [`RETRY_PAUSE`] for up to [`RETRY_WINDOW`]. Each attempt is bounded by
    /// [`ATTEMPT_TIMEOUT`] (through the clients' options).
    pub(crate) async fn call<T, F, Fut>(
        self: &Arc<Self>,
        retry: Retry,
        mut request: F,
    ) -> Result<T, etcd_client::Error>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let give_up_at = Instant::now() + RETRY_WINDOW;
        loop {
            let Pinned { client, epoch } = self.pinned();
            let err = match request(client).await {
                Ok(answer) => return Ok(answer),
                Err(err) => err,
            };
            let failure = Failure::of(&err);
            if failure == Failure::Answered {
                return Err(err);
            }
            let moved = self.move_on(epoch, &err.to_string()).await;
            if !retry.allows(failure) {
                return Err(err);
            }
            if !moved {
                if Instant::now() + RETRY_PAUSE >= give_up_at {
                    return Err(err);
                }
                tokio::time::sleep(RETRY_PAUSE).await;
            }
        }
    }

    /// Says that the member in use at `epoch` failed a stream (a watch, lease renewals)
    /// for `reason`; moves unless the failure was the member's answer. Returns whether the
    /// connection is now on another member than at `epoch`.
    pub(crate) async fn stream_failed(
        self: &Arc<Self>,
        epoch: u64,
        err: &etcd_client::Error,
    ) -> bool {
        if Failure::of(err) == Failure::Answered {
            return false;
        }
        self.move_on(epoch, &err.to_string()).await
    }

    /// Moves away from the member in use at `epoch`, which failed for `reason`, to the
    /// next one that answers a probe. Runs as a task of its own, so that a caller that
    /// gives up (its own deadline) does not leave the move half done. Returns whether the
    /// connection is on another member than at `epoch` (this move or an earlier one).
    pub(crate) async fn move_on(self: &Arc<Self>, epoch: u64, reason: &str) -> bool {
        let connection = Arc::clone(self);
        let reason = reason.to_owned();
        tokio::spawn(async move { connection.probe_and_move(epoch, &reason).await })
            .await
            // The task only fails if it panicked or the runtime is going away: then
            // nothing moved.
            .unwrap_or(false)
    }

    async fn probe_and_move(&self, epoch: u64, reason: &str) -> bool {
        let _moving = self.moving.lock().await;
        let from = {
            let in_use = self.in_use.lock();
            if in_use.epoch != epoch {
                return true;
            }
            if in_use
                .fruitless_at
                .is_some_and(|at| at.elapsed() < RETRY_PAUSE)
            {
                return false;
            }
            in_use.member
        };
        let count = self.endpoints.len();
        for step in 1..count {
            let candidate = (from + step) % count;
            let ready = match self.log_in(candidate).await {
                Ok(()) => probe(&self.clients[candidate]).await,
                Err(err) => Err(format!("cannot log in: {err}")),
            };
            match ready {
                Ok(()) => {
                    log::warn!(
                        "etcd member {} failed ({reason}); now using {}",
                        self.endpoints[from],
                        self.endpoints[candidate]
                    );
                    let mut in_use = self.in_use.lock();
                    *in_use = InUse {
                        member: candidate,
                        epoch: in_use.epoch + 1,
                        fruitless_at: None,
                    };
                    return true;
                }
                Err(why) => log::debug!(
                    "etcd member {} cannot take over: {why}",
                    self.endpoints[candidate]
                ),
            }
        }
        log::debug!(
            "etcd member {} failed ({reason}) and no other member answers",
            self.endpoints[from]
        );
        self.in_use.lock().fruitless_at = Some(Instant::now());
        false
    }
}

/// Whether a member answers a linearizable read, which needs it to have a leader.
async fn probe(client: &Client) -> Result<(), String> {
    let mut client = client.clone();
    let read = client.get(
        PROBE_KEY,
        Some(GetOptions::new().with_keys_only().with_limit(1)),
    );
    match tokio::time::timeout(PROBE_TIMEOUT, read).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err(format!("no answer within {PROBE_TIMEOUT:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_from(source: impl std::error::Error + Send + Sync + 'static) -> etcd_client::Error {
        etcd_client::Error::GRpcStatus(tonic::Status::from_error(Box::new(source)))
    }

    #[test]
    fn a_request_that_could_not_connect_was_not_sent() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let err = status_from(tonic::ConnectError(Box::new(refused)));
        assert_eq!(Failure::of(&err), Failure::NotSent);
    }

    #[test]
    fn a_member_without_a_leader_refused_before_acting() {
        let err =
            etcd_client::Error::GRpcStatus(tonic::Status::unavailable("etcdserver: no leader"));
        assert_eq!(Failure::of(&err), Failure::NotSent);
    }

    #[test]
    fn a_broken_connection_may_have_carried_the_request() {
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert_eq!(Failure::of(&status_from(reset)), Failure::MaybeSent);
        let timed_out = etcd_client::Error::GRpcStatus(tonic::Status::from_error(Box::new(
            tonic::TimeoutExpired(()),
        )));
        assert_eq!(Failure::of(&timed_out), Failure::MaybeSent);
    }

    #[test]
    fn an_answer_of_the_member_is_about_the_request_not_the_member() {
        // etcd's own "request timed out" may have been applied, and is an answer: the
        // caller reports it as unconfirmed, but no move is due to it alone.
        for status in [
            tonic::Status::invalid_argument("etcdserver: too many operations in txn request"),
            tonic::Status::unavailable("etcdserver: request timed out"),
        ] {
            let err = etcd_client::Error::GRpcStatus(status);
            assert_eq!(Failure::of(&err), Failure::Answered, "{err}");
        }
    }

    #[test]
    fn only_idempotent_requests_go_again_after_a_failure_in_flight() {
        assert!(Retry::Always.allows(Failure::MaybeSent));
        assert!(!Retry::IfNotSent.allows(Failure::MaybeSent));
        assert!(Retry::IfNotSent.allows(Failure::NotSent));
        assert!(!Retry::Always.allows(Failure::Answered));
    }
}

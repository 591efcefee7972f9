//! `GET /healthz` and `GET /readyz`: whether the daemon lives, and whether it can do its
//! work, for a load balancer, Kubernetes' probes and the systemd watchdog.
//!
//! `/healthz` is answered by the HTTP worker alone: any answer means the workers run.
//! `/readyz` asks what the daemon's work needs: the store ([`SliceStore::probe`]: on sled
//! a latched flush failure, the writer thread and the database's file; on etcd a
//! linearizable read, which only a member with a quorum answers), the OpenFlow controller
//! (a check the binary registers once its listeners are bound, see
//! [`Health::watch_openflow`]), and whether the daemon is stopping. Both are open to
//! anyone, as a probe has no session, even where `--require-auth` guards the rest; so
//! they answer anyone with the status alone. A check's reason can name an etcd member's
//! address and the system's error, which tell an outsider where the store lives and what
//! ails it: `/readyz` gives the checks and their reasons only to a requester something
//! vouches for (a session of any role, a trusted proxy's user, the local socket), as
//! `/cluster` gives the store's health to whoever may read it.
//!
//! An OpenID provider that cannot be reached, or that refuses the daemon's client, leaves
//! the daemon ready (a load balancer that took it out would cut off the API for every
//! requester who needs no new login) but degraded: the answer names `oidc` under
//! `degraded`, and its check says why to a vouched requester. It is what the last
//! exchange with the provider showed (see `Oidc::trouble`), so it costs the provider
//! nothing more than the discovery a failed one is retried with.
//!
//! A probe must not load what it probes, so the store is probed at most once per
//! [`READINESS_CACHE`]: one request probes, on a blocking thread and bounded by
//! [`PROBE_TIMEOUT`], while the others that come meanwhile wait for its outcome and share
//! it. A flood of probes costs the store one probe a second.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Map, Value};
use slice_core::SliceStore;

use crate::routing::readable;
use crate::routing::Mount;
use crate::Settings;

/// Where readiness is served: a scope of its own, which reads sessions (see `app`).
pub(crate) const READY_PATH: &str = "/readyz";

/// How long one probe of the store answers for.
pub(crate) const READINESS_CACHE: Duration = Duration::from_secs(1);

/// The longest a probe of the store may take before it counts as failed: a store that
/// takes longer cannot serve writes in time either.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// A check of a part of the daemon that slice-http does not know (the controller): `Ok`,
/// or why not. Cheap and non-blocking: it runs on an HTTP worker.
pub(crate) type Check = Box<dyn Fn() -> Result<(), String> + Send + Sync>;

/// What readiness is made of; one per daemon, shared by every worker (in [`Settings`])
/// and by whoever else asks (the watchdog).
#[derive(Default)]
pub struct Health {
    openflow: OnceLock<Check>,
    stopping: AtomicBool,
    /// The last probe of the store and when it ended. An async lock: the request that
    /// probes holds it, and the others wait for its outcome rather than probe again.
    probed: tokio::sync::Mutex<Option<(Instant, Result<(), String>)>>,
}

/// The outcome of every check, in a fixed order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    pub checks: Vec<(&'static str, Result<(), String>)>,
    /// Parts that fail without making the daemon unready, and why: the OpenID provider,
    /// without which nobody new logs in through it while the API still serves every
    /// other requester (the local socket, a proxy's users, sessions already begun).
    pub degraded: Vec<(&'static str, String)>,
}

impl Readiness {
    pub fn is_ready(&self) -> bool {
        self.checks.iter().all(|(_, outcome)| outcome.is_ok())
    }

    /// The answer's body for anyone: `{"status": "ready"}` or `{"error": "not ready"}`,
    /// which say nothing of the daemon's insides but, under `degraded`, the names of the
    /// parts that fail (never why).
    pub fn status_body(&self) -> Value {
        let mut body = if self.is_ready() {
            json!({"status": "ready"})
        } else {
            json!({"error": "not ready"})
        };
        if !self.degraded.is_empty() {
            let names: Vec<&str> = self.degraded.iter().map(|(name, _)| *name).collect();
            body["degraded"] = json!(names);
        }
        body
    }

    /// The answer's body for a requester something vouches for: `{"status": "ready",
    /// "checks": ...}`, or `{"error": ..., "checks": ...}` naming the first check that
    /// failed.
    pub fn body(&self) -> Value {
        let checks: Map<String, Value> = self
            .checks
            .iter()
            .map(|(name, outcome)| {
                let said = match outcome {
                    Ok(()) => "ok".to_owned(),
                    Err(reason) => reason.clone(),
                };
                ((*name).to_owned(), Value::String(said))
            })
            .collect();
        let mut checks = checks;
        for (name, reason) in &self.degraded {
            checks.insert((*name).to_owned(), json!(format!("degraded: {reason}")));
        }
        let mut body = match self.checks.iter().find(|(_, outcome)| outcome.is_err()) {
            Some((name, Err(reason))) => {
                json!({"error": format!("not ready: {name}: {reason}"), "checks": checks})
            }
            _ => json!({"status": "ready", "checks": checks}),
        };
        if !self.degraded.is_empty() {
            let names: Vec<&str> = self.degraded.iter().map(|(name, _)| *name).collect();
            body["degraded"] = json!(names);
        }
        body
    }
}

impl Health {
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes `check` part of readiness, as `openflow`; called once the controller's
    /// listeners are bound (a second call is ignored). Without one, readiness has no
    /// `openflow` check (an application without a controller, as in tests).
    pub fn watch_openflow(&self, check: Check) {
        let _ = self.openflow.set(check);
    }

    /// From now on the daemon is not ready: it is stopping, and a load balancer should
    /// send nothing more.
    pub fn stopping(&self) {
        self.stopping.store(true, Ordering::Release);
    }

    /// Every check, the store's as last probed within [`READINESS_CACHE`].
    pub async fn readiness(&self, store: Arc<dyn SliceStore>) -> Readiness {
        let mut checks = vec![("store", self.store_probe(store).await)];
        if let Some(check) = self.openflow.get() {
            checks.push(("openflow", check()));
        }
        let serving = if self.stopping.load(Ordering::Acquire) {
            Err("the daemon is stopping".to_owned())
        } else {
            Ok(())
        };
        checks.push(("http", serving));
        Readiness {
            checks,
            degraded: Vec::new(),
        }
    }

    async fn store_probe(&self, store: Arc<dyn SliceStore>) -> Result<(), String> {
        let mut probed = self.probed.lock().await;
        if let Some((at, outcome)) = probed.as_ref() {
            if at.elapsed() < READINESS_CACHE {
                return outcome.clone();
            }
        }
        let probe = tokio::task::spawn_blocking(move || store.probe());
        let outcome = match tokio::time::timeout(PROBE_TIMEOUT, probe).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(err))) => Err(err.to_string()),
            Ok(Err(panicked)) => Err(format!("the probe failed: {panicked}")),
            Err(_) => Err(format!("no answer within {PROBE_TIMEOUT:?}")),
        };
        *probed = Some((Instant::now(), outcome.clone()));
        outcome
    }
}

pub(crate) fn routes(cfg: &mut impl Mount) {
    cfg.mount("/healthz", crate::routing::READ, |r| {
        r.route(readable(live))
    });
}

/// `/readyz`, mounted below [`READY_PATH`].
pub(crate) fn ready_routes(cfg: &mut impl Mount) {
    cfg.mount("", crate::routing::READ, |r| r.route(readable(ready)));
}

async fn live() -> HttpResponse {
    uncached(StatusCode::OK).json(json!({"status": "ok"}))
}

async fn ready(
    req: HttpRequest,
    store: web::Data<dyn SliceStore>,
    settings: web::Data<Settings>,
) -> HttpResponse {
    let mut readiness = settings.health.readiness(store.into_inner()).await;
    if let Some(trouble) = settings.oidc.as_ref().and_then(|oidc| oidc.trouble()) {
        readiness.degraded.push(("oidc", trouble));
    }
    let status = if readiness.is_ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    // A requester that cannot be told (a session the store cannot check, a proxy's
    // refused headers) gets what anyone gets: a probe answers, it does not refuse.
    let vouched = matches!(crate::auth::requester(&req), Ok(Some(_)));
    let body = if vouched {
        readiness.body()
    } else {
        readiness.status_body()
    };
    uncached(status).json(body)
}

/// A probe's answer is about this moment: no cache between the prober and the daemon may
/// keep it.
fn uncached(status: StatusCode) -> actix_web::HttpResponseBuilder {
    let mut response = HttpResponse::build(status);
    response.insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    use actix_web::cookie::Key;
    use actix_web::test;
    use slice_core::{ChangeListener, MacAddress, MembershipSource, Port, PortId, Slice};
    use slice_core::{SessionRevocations, SliceName, SliceRead, SliceWrite, StoreError};

    /// A store whose probe counts its calls, takes `delay` and fails while `failing`.
    #[derive(Default)]
    struct Probed {
        probes: AtomicUsize,
        failing: AtomicBool,
        delay: Duration,
    }

    impl MembershipSource for Probed {
        fn subscribe(&self, _: ChangeListener) {}
        fn snapshot(&self) -> Result<Vec<Slice>, StoreError> {
            Ok(Vec::new())
        }
    }

    fn nothing() -> StoreError {
        StoreError::Failed("not a store for this".into())
    }

    impl SliceRead for Probed {
        fn read_slices(
            &self,
            look: &mut dyn FnMut(&mut dyn Iterator<Item = &SliceName>),
        ) -> Result<(), StoreError> {
            look(&mut std::iter::empty());
            Ok(())
        }
        fn content_version(&self) -> Result<u64, StoreError> {
            Ok(0)
        }
        fn check_slice(&self, _: &SliceName) -> Result<(), StoreError> {
            Err(nothing())
        }
        fn ports(&self, _: &SliceName) -> Result<Vec<PortId>, StoreError> {
            Err(nothing())
        }
        fn check_port(&self, _: &SliceName, _: PortId) -> Result<(), StoreError> {
            Err(nothing())
        }
        fn macs(&self, _: &SliceName, _: PortId) -> Result<Vec<MacAddress>, StoreError> {
            Err(nothing())
        }
        fn check_mac(&self, _: &SliceName, _: PortId, _: MacAddress) -> Result<(), StoreError> {
            Err(nothing())
        }
    }

    impl SliceWrite for Probed {
        fn create_slice(&self, _: &SliceName) -> Result<(), StoreError> {
            Err(nothing())
        }
        fn delete_slice(&self, _: &SliceName) -> Result<Slice, StoreError> {
            Err(nothing())
        }
        fn add_port(&self, _: &SliceName, _: PortId) -> Result<(), StoreError> {
            Err(nothing())
        }
        fn delete_port(&self, _: &SliceName, _: PortId) -> Result<Port, StoreError> {
            Err(nothing())
        }
        fn add_mac(&self, _: &SliceName, _: PortId, _: MacAddress) -> Result<bool, StoreError> {
            Err(nothing())
        }
        fn delete_mac(&self, _: &SliceName, _: PortId, _: MacAddress) -> Result<(), StoreError> {
            Err(nothing())
        }
        fn apply(&self, _: &[Slice]) -> Result<slice_core::Plan, StoreError> {
            Err(nothing())
        }
    }

    impl SessionRevocations for Probed {
        fn revoke_session(&self, _: &[u8], _: u64, _: u64) -> Result<(), StoreError> {
            Err(nothing())
        }
        fn session_revoked(&self, _: &[u8], _: u64) -> Result<bool, StoreError> {
            Ok(false)
        }
    }

    impl slice_core::FabricDeclarations for Probed {
        fn declared_fabric(&self) -> Result<slice_core::DeclaredFabric, StoreError> {
            Err(nothing())
        }
        fn declare_fabric(&self, _: &slice_core::DeclaredFabric) -> Result<(), StoreError> {
            Err(nothing())
        }
    }

    impl SliceStore for Probed {
        fn probe(&self) -> Result<(), StoreError> {
            self.probes.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(self.delay);
            if self.failing.load(Ordering::SeqCst) {
                Err(StoreError::Unavailable("no quorum".into()))
            } else {
                Ok(())
            }
        }
    }

    async fn get<S, B>(service: &S, path: &str) -> (StatusCode, Value)
    where
        S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
        B: actix_web::body::MessageBody,
    {
        let request = test::TestRequest::get()
            .uri(path)
            .insert_header(("Host", "localhost"))
            .to_request();
        let response = test::call_service(service, request).await;
        let status = response.status();
        let cache = response.headers().get(header::CACHE_CONTROL).cloned();
        assert_eq!(cache, Some(HeaderValue::from_static("no-store")), "{path}");
        (status, test::read_body_json(response).await)
    }

    #[actix_web::test]
    async fn readiness_names_each_check_and_the_first_that_fails() {
        let store = Arc::new(Probed::default());
        let mut settings = Settings::new(Key::generate());
        // Guarded slices change nothing here: a probe has no session.
        settings.require_auth_for_slices = true;
        let health = Arc::clone(&settings.health);
        let openflow_up = Arc::new(AtomicBool::new(true));
        let up = Arc::clone(&openflow_up);
        health.watch_openflow(Box::new(move || {
            if up.load(Ordering::SeqCst) {
                Ok(())
            } else {
                Err("the OpenFlow controller has stopped".into())
            }
        }));
        let app = crate::app(store.clone(), None, settings);
        let service = test::init_service(app).await;
        let readiness = || {
            let (health, store) = (Arc::clone(&health), Arc::clone(&store));
            async move { health.readiness(store).await.body() }
        };
        assert_eq!(
            get(&service, "/healthz").await,
            (StatusCode::OK, json!({"status": "ok"}))
        );
        // Anyone gets the status, and nothing of the checks.
        assert_eq!(
            get(&service, "/readyz").await,
            (StatusCode::OK, json!({"status": "ready"}))
        );
        assert_eq!(
            readiness().await,
            json!({"status": "ready", "checks": {"store": "ok", "openflow": "ok", "http": "ok"}})
        );

        openflow_up.store(false, Ordering::SeqCst);
        assert_eq!(
            get(&service, "/readyz").await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"error": "not ready"})
            )
        );
        let body = readiness().await;
        assert_eq!(
            body["error"],
            "not ready: openflow: the OpenFlow controller has stopped"
        );
        assert_eq!(body["checks"]["store"], "ok");

        store.failing.store(true, Ordering::SeqCst);
        std::thread::sleep(READINESS_CACHE);
        assert_eq!(
            get(&service, "/readyz").await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"error": "not ready"})
            )
        );
        assert_eq!(readiness().await["error"], "not ready: store: no quorum");

        store.failing.store(false, Ordering::SeqCst);
        openflow_up.store(true, Ordering::SeqCst);
        health.stopping();
        std::thread::sleep(READINESS_CACHE);
        assert_eq!(
            get(&service, "/readyz").await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            readiness().await["checks"]["http"],
            "the daemon is stopping"
        );
        // Liveness is not readiness: a stopping daemon still lives.
        assert_eq!(get(&service, "/healthz").await.0, StatusCode::OK);
    }

    #[actix_web::test]
    async fn a_degraded_part_leaves_the_daemon_ready_and_only_a_vouched_requester_learns_why() {
        let readiness = Readiness {
            checks: vec![("store", Ok(()))],
            degraded: vec![("oidc", "the provider cannot be reached".into())],
        };
        assert!(readiness.is_ready());
        assert_eq!(
            readiness.status_body(),
            json!({"status": "ready", "degraded": ["oidc"]})
        );
        assert_eq!(
            readiness.body(),
            json!({
                "status": "ready",
                "degraded": ["oidc"],
                "checks": {"store": "ok", "oidc": "degraded: the provider cannot be reached"}
            })
        );
    }

    #[actix_web::test]
    async fn a_flood_of_probes_costs_the_store_one_probe_a_second() {
        let store = Arc::new(Probed {
            delay: Duration::from_millis(100),
            ..Probed::default()
        });
        let health = Arc::new(Health::new());
        let asked = Instant::now();
        let probes = (0..200).map(|_| {
            let (health, store) = (Arc::clone(&health), Arc::clone(&store));
            async move { health.readiness(store).await.is_ready() }
        });
        let answers = futures_util::future::join_all(probes).await;
        assert!(answers.iter().all(|ready| *ready));
        assert_eq!(store.probes.load(Ordering::SeqCst), 1);
        assert!(asked.elapsed() < READINESS_CACHE, "{:?}", asked.elapsed());
        std::thread::sleep(READINESS_CACHE);
        assert!(health.readiness(store.clone()).await.is_ready());
        assert_eq!(store.probes.load(Ordering::SeqCst), 2);
    }

    #[actix_web::test]
    async fn a_probe_that_hangs_fails_within_its_bound() {
        let store = Arc::new(Probed {
            delay: PROBE_TIMEOUT + Duration::from_secs(1),
            ..Probed::default()
        });
        let asked = Instant::now();
        let readiness = Health::new().readiness(store).await;
        assert!(asked.elapsed() < PROBE_TIMEOUT + Duration::from_millis(500));
        assert_eq!(
            readiness.checks[0],
            ("store", Err(format!("no answer within {PROBE_TIMEOUT:?}")))
        );
    }
}

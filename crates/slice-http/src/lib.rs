//! The REST application of sliced: the slice API of the specification, its `/api/` twin
//! behind a session, and the developer login that starts the session.
//!
//! [`app`] builds the actix-web application around a shared [`SliceStore`], whichever
//! backend it is; [`serve`] builds the servers the `sliced` binary runs it on, TCP and its
//! local Unix socket, marking local connections with their [`LocalPeer`] so that they pass
//! the session guard as the peer's Unix user.

mod account_names;
mod audit;
mod auth;
mod body;
mod browser;
mod cluster;
mod error;
pub mod events;
mod fabric;
mod hangup;
mod head_guard;
mod health;
mod identity;
mod log_text;
pub mod metrics;
mod mount;
mod network;
mod oidc;
mod openapi;
mod page;
mod read_cache;
mod routing;
pub mod serve;
mod slices;
mod ui;
mod verification;

use std::sync::Arc;

use actix_session::config::{CookieContentSecurity, PersistentSession};
use actix_session::storage::CookieSessionStore;
use actix_session::SessionMiddleware;
use actix_web::body::MessageBody;
use actix_web::cookie::{time, Key, SameSite};
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::{middleware, web, App};
use slice_core::SliceStore;

pub use audit::AUDIT_LOG;
pub use auth::is_email;
pub use body::{decode_body, BodyShape, BODY_LIMIT};
pub use browser::HostPolicy;
pub use cluster::ClusterView;
pub use error::ApiError;
pub use events::EventHub;
pub use head_guard::MAX_REQUEST_HEAD;
pub use health::{Health, Readiness};
pub use identity::{LocalPeer, ProxyAuth, Role, RoleMapping, User, DEFAULT_ROLE_SEPARATOR};
pub use network::{NetworkView, ViewFuture, ViewKind};
pub use oidc::{ClientAuth, Oidc, OidcConfig, CALLBACK_PATH as OIDC_CALLBACK_PATH};
pub use openapi::document as openapi_document;
pub use slice_core::wire::{Credentials, ErrorBody, MacBody, PortBody, PortRequest, SliceBody};

/// The log target of the access log (one line per request, at info level).
pub const ACCESS_LOG: &str = "sliced::http";

/// The name of the session cookie.
pub const SESSION_COOKIE: &str = "sliced_session";

/// How long a session lasts after login, unless configured.
pub const DEFAULT_SESSION_TTL: std::time::Duration = std::time::Duration::from_secs(12 * 3600);

/// How long a client may take to send a request head, and then its body, unless
/// configured.
pub const DEFAULT_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How many records (slices, ports, MAC addresses) one declared state may hold, unless
/// configured: above every real network's, and still an apply that plans and commits in
/// seconds (see docs/benchmarks.md). The body limit of `POST /slices:apply` holds a little
/// more than this many of the smallest records.
pub const DEFAULT_MAX_APPLY_RECORDS: usize = 500_000;

/// How many declared states are read, planned or applied at once. Each holds its parsed
/// body and a plan (hundreds of megabytes at the largest), and the writer carries out one
/// apply at a time anyway; one more is refused with 503 before its body is read.
pub const APPLIES_AT_ONCE: usize = 2;

/// How the application treats clients.
#[derive(Clone)]
pub struct Settings {
    /// Key that signs and encrypts the session cookie.
    pub session_key: Key,
    /// When true the unprefixed slice endpoints need a session too.
    pub require_auth_for_slices: bool,
    /// When false, `/auth/developer/*` does not exist (production).
    pub developer_login: bool,
    /// An authenticating proxy whose user header is believed from its addresses.
    pub proxy: Option<Arc<ProxyAuth>>,
    /// The OpenID Connect login, when a provider is configured.
    pub oidc: Option<Arc<Oidc>>,
    /// Send the session cookie over HTTPS only (set it behind a TLS proxy).
    pub secure_cookie: bool,
    /// How long a session lasts after login; the server refuses it after that.
    pub session_ttl: std::time::Duration,
    /// The names clients may use for the daemon in `Host`.
    pub host_policy: HostPolicy,
    /// How long a request body may take to arrive.
    pub request_timeout: std::time::Duration,
    /// The most records one declared state may hold (`POST /slices:apply`).
    pub max_apply_records: usize,
    /// The places of the applies under way (see [`APPLIES_AT_ONCE`]); shared by every
    /// worker.
    pub applies: Arc<tokio::sync::Semaphore>,
    /// What answers `GET /cluster`; without it, 503.
    pub cluster: Option<std::sync::Arc<dyn ClusterView>>,
    /// Where `GET /events` streams from; whoever has a clone publishes to it.
    pub events: Arc<EventHub>,
    /// What `GET /metrics` renders, and where requests are counted; without it, no
    /// `/metrics` (404) and nothing counted.
    pub metrics: Option<Arc<metrics::Metrics>>,
    /// What `GET /readyz` checks; the daemon adds the controller's check and says when
    /// it stops.
    pub health: Arc<Health>,
    /// The OpenFlow listeners switches connect to, as the web view names them on an
    /// empty network; empty when there is none.
    pub openflow_addresses: Vec<String>,
    /// The daemon's settings declare the fabric: `PUT /topology/fabric` is refused (409),
    /// so that one place says where links form.
    pub fabric_in_settings: bool,
}

impl Settings {
    pub fn new(session_key: Key) -> Self {
        Self {
            session_key,
            require_auth_for_slices: false,
            developer_login: true,
            proxy: None,
            oidc: None,
            secure_cookie: false,
            session_ttl: DEFAULT_SESSION_TTL,
            host_policy: HostPolicy::default(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_apply_records: DEFAULT_MAX_APPLY_RECORDS,
            applies: Arc::new(tokio::sync::Semaphore::new(APPLIES_AT_ONCE)),
            cluster: None,
            events: Arc::new(EventHub::new()),
            metrics: None,
            health: Arc::new(Health::new()),
            openflow_addresses: Vec::new(),
            fabric_in_settings: false,
        }
    }
}

impl Settings {
    /// Where a browser without a login is sent, if anywhere: the OpenID Connect login
    /// when a provider is configured, else the developer form.
    pub(crate) fn login_page(&self) -> Option<&'static str> {
        if self.oidc.is_some() {
            return Some(oidc::LOGIN_PATH);
        }
        self.developer_login.then_some(auth::LOGIN_PAGE)
    }
}

/// What an application is made of, as actix-web's `App` takes it: a factory of the
/// service that answers each request, with the body its answers carry.
pub trait AppFactory:
    ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<Self::Body>,
        Error = actix_web::Error,
        InitError = (),
    > + 'static
{
    type Body: MessageBody + 'static;
}

impl<F, B> AppFactory for F
where
    F: ServiceFactory<
            ServiceRequest,
            Config = (),
            Response = ServiceResponse<B>,
            Error = actix_web::Error,
            InitError = (),
        > + 'static,
    B: MessageBody + 'static,
{
    type Body = B;
}

/// The whole application, on `store`: its handlers and session guard reach the store
/// only as `web::Data<dyn SliceStore>`.
pub fn app(
    store: Arc<dyn SliceStore>,
    network: Option<Arc<dyn NetworkView>>,
    settings: Settings,
) -> App<impl AppFactory> {
    // A middleware per scope that uses sessions (CookieSessionStore is not Clone).
    let (session_key, secure_cookie) = (settings.session_key.clone(), settings.secure_cookie);
    let session_ttl = time::Duration::try_from(settings.session_ttl).unwrap_or(time::Duration::MAX);
    let sessions = move || {
        SessionMiddleware::builder(CookieSessionStore::default(), session_key.clone())
            .cookie_name(SESSION_COOKIE.into())
            .cookie_http_only(true)
            .cookie_same_site(SameSite::Lax)
            .cookie_secure(secure_cookie)
            .cookie_content_security(CookieContentSecurity::Private)
            .session_lifecycle(PersistentSession::default().session_ttl(session_ttl))
            .build()
    };
    let guard_slices = settings.require_auth_for_slices;
    let cluster = settings.cluster.clone();
    let openapi = openapi::Encoded::new(&settings);
    let events = web::Data::from(Arc::clone(&settings.events));
    let app = App::new()
        .app_data(web::Data::from(store))
        .app_data(web::Data::new(read_cache::ReadCache::default()))
        // The request counter's parts for requests no resource answers; each resource
        // carries its own (see `mount`), found before this one.
        .app_data(metrics::RouteMetrics::new(routing::RoutePattern::UNMATCHED))
        .app_data(browser::AllowedHost::default())
        .app_data(web::Data::new(settings))
        .app_data(web::Data::new(network))
        .app_data(web::Data::new(cluster))
        .app_data(web::Data::new(openapi))
        .app_data(events);
    // The router tries resources in the order they are registered, so the slice API,
    // whose reads come by the thousand, goes first when nothing guards it. No pattern of
    // one group matches a path of another, so the order changes no answer.
    let app = if guard_slices {
        app
    } else {
        // Without the guard the unprefixed routes sit on the application itself: a
        // scope around them would cost every request a second routing table.
        app.configure(|cfg| twin_routes(&mut mount::Mounting::new(cfg, "")))
    };
    // Sessions cost a cookie parse and a map per request, so only the routes that use
    // them run the middleware: `/api/`, the login and logout, the web view, and the
    // unprefixed routes when `--require-auth` puts them behind the guard.
    let app = app
        .service(
            web::scope("/api")
                .wrap(middleware::from_fn(auth::require_session))
                .wrap(sessions())
                .configure(|cfg| session_routes(&mut mount::Mounting::new(cfg, "/api")))
                .configure(|cfg| twin_routes(&mut mount::Mounting::new(cfg, "/api")))
                .default_service(web::to(api_fallback)),
        )
        .service(
            web::scope(AUTH_PREFIX)
                .wrap(sessions())
                .configure(|cfg| login_routes(&mut mount::Mounting::new(cfg, AUTH_PREFIX))),
        )
        .service(
            web::scope(page::UI_PATH)
                .wrap(middleware::from_fn(auth::guard_view))
                .wrap(sessions())
                .configure(|cfg| ui::routes(&mut mount::Mounting::new(cfg, page::UI_PATH))),
        )
        // Readiness tells its reasons to a logged-in requester only, so it reads sessions.
        .service(
            web::scope(health::READY_PATH)
                .wrap(sessions())
                .configure(|cfg| {
                    health::ready_routes(&mut mount::Mounting::new(cfg, health::READY_PATH))
                }),
        )
        .configure(|cfg| open_routes(&mut mount::Mounting::new(cfg, "")));
    // The guarded scope takes every path, so it comes last.
    let app = if guard_slices {
        app.service(
            web::scope("")
                .wrap(middleware::from_fn(auth::require_session))
                .wrap(sessions())
                .configure(|cfg| twin_routes(&mut mount::Mounting::new(cfg, ""))),
        )
    } else {
        app
    };
    app.default_service(web::to(no_route))
        .wrap(middleware::from_fn(front_door))
}

/// [`app`] inside actix-web's access Logger (target [`ACCESS_LOG`]), for when that log is
/// on ([`access_log_enabled`]). A type of its own, chosen once when the servers are
/// built: the Logger renders every request whether or not its line is then filtered out,
/// and switched off inside actix's `Condition` it still cost every request a layer.
pub fn app_with_access_log(
    store: Arc<dyn SliceStore>,
    network: Option<Arc<dyn NetworkView>>,
    settings: Settings,
) -> App<impl AppFactory> {
    app(store, network, settings).wrap(
        middleware::Logger::new("%a \"%{request}xi\" %s %b %Dms")
            .custom_request_replace("request", request_line)
            .log_target(ACCESS_LOG),
    )
}

/// The most characters of a request's target the access log keeps.
const LOGGED_TARGET_CHARS: usize = 200;

/// The request line as the access log shows it: its target cut to
/// [`LOGGED_TARGET_CHARS`], so that a client cannot make one request cost the log
/// kilobytes. The target arrives percent-encoded, and anything else is escaped, so no
/// line it is in can be forged.
fn request_line(req: &actix_web::dev::ServiceRequest) -> String {
    let shown = log_text::escaped_in_quotes(&req.uri().to_string(), LOGGED_TARGET_CHARS);
    format!("{} {shown} {:?}", req.method(), req.version())
}

/// Whether the access log's target passes the log filter.
pub fn access_log_enabled() -> bool {
    log::log_enabled!(target: ACCESS_LOG, log::Level::Info)
}

/// The middleware every request passes first: it refuses foreign requests (DNS
/// rebinding, cross-site writes: see `browser`) before anything else runs, and counts
/// every request, refusals included (see `metrics`); and it tells the audit trail of an
/// answer that refused a trusted proxy's headers, once, whichever route gave it. One
/// layer for these jobs, as each layer of `from_fn` costs a boxed future per request.
pub(crate) async fn front_door(
    req: ServiceRequest,
    next: middleware::Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<actix_web::body::BoxBody>, actix_web::Error> {
    let arrival = metrics::Arrival::of(&req);
    let response = match browser::refusal(&req) {
        Some(refused) => req.error_response(refused),
        None => next.call(req).await?.map_into_boxed_body(),
    };
    audit::proxy_refused(&response);
    arrival.answered(&response);
    Ok(response)
}

/// The routes that only exist under `/api/`.
fn session_routes(cfg: &mut impl routing::Mount) {
    cfg.mount("/session", crate::routing::READ, |r| {
        r.route(routing::readable(auth::whoami))
    });
}

/// The routes served twice: under `/api/`, always behind the guard, and without the
/// prefix, open as the specification says unless `--require-auth` guards them too.
fn twin_routes(cfg: &mut impl routing::Mount) {
    slices::routes(cfg);
    network::routes(cfg);
    cluster::routes(cfg);
    verification::routes(cfg);
    events::routes(cfg);
    metrics::routes(cfg);
}

/// Where the login and logout routes live (see `login_routes`).
const AUTH_PREFIX: &str = "/auth";

/// The logins (the developer form, OpenID Connect) and the logout, below `/auth`.
fn login_routes(cfg: &mut impl routing::Mount) {
    auth::routes(cfg);
    oidc::routes(cfg);
}

/// The routes no session guard stands before, besides the login and logout and the web
/// view, which have scopes of their own.
fn open_routes(cfg: &mut impl routing::Mount) {
    openapi::routes(cfg);
    health::routes(cfg);
    ui::root_routes(cfg);
}

/// Every path the application registers (with its `{name}` segments as written), and the
/// methods it answers there, as the `Allow` header of its 405 names them. The scopes are
/// those of [`app`].
pub fn served_routes() -> Vec<(String, Vec<String>)> {
    let mut api = routing::Listing::new("/api");
    session_routes(&mut api);
    twin_routes(&mut api);
    let mut login = routing::Listing::new(AUTH_PREFIX);
    login_routes(&mut login);
    let mut web_view = routing::Listing::new(page::UI_PATH);
    ui::routes(&mut web_view);
    let mut ready = routing::Listing::new(health::READY_PATH);
    health::ready_routes(&mut ready);
    let mut root = routing::Listing::new("");
    open_routes(&mut root);
    twin_routes(&mut root);
    api.routes
        .into_iter()
        .chain(login.routes)
        .chain(web_view.routes)
        .chain(ready.routes)
        .chain(root.routes)
        .collect()
}

/// Any other GET (or HEAD) under `/api/` answers a small status; other methods find
/// nothing.
async fn api_fallback(req: actix_web::HttpRequest) -> Result<actix_web::HttpResponse, ApiError> {
    use actix_web::http::Method;
    if matches!(*req.method(), Method::GET | Method::HEAD) {
        Ok(auth::api_status().await)
    } else {
        Err(ApiError::NoRoute)
    }
}

async fn no_route() -> Result<actix_web::HttpResponse, ApiError> {
    Err(ApiError::NoRoute)
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::StatusCode;
    use actix_web::test;
    use slice_core::{
        ChangeListener, MacAddress, MembershipSource, Port, PortId, Slice, SliceName, StoreError,
    };
    use slice_core::{
        DeclaredFabric, FabricDeclarations, SessionRevocations, SliceRead, SliceWrite,
    };

    /// A backend that cannot serve anything, in the way `make` says: unavailable (a
    /// cluster without a quorum) or failed.
    struct Refusing {
        make: fn() -> StoreError,
    }

    impl MembershipSource for Refusing {
        fn subscribe(&self, _: ChangeListener) {}
        fn snapshot(&self) -> Result<Vec<Slice>, StoreError> {
            Err((self.make)())
        }
    }

    impl SliceRead for Refusing {
        fn read_slices(
            &self,
            _: &mut dyn FnMut(&mut dyn Iterator<Item = &SliceName>),
        ) -> Result<(), StoreError> {
            Err((self.make)())
        }
        fn content_version(&self) -> Result<u64, StoreError> {
            Err((self.make)())
        }
        fn check_slice(&self, _: &SliceName) -> Result<(), StoreError> {
            Err((self.make)())
        }
        fn ports(&self, _: &SliceName) -> Result<Vec<PortId>, StoreError> {
            Err((self.make)())
        }
        fn check_port(&self, _: &SliceName, _: PortId) -> Result<(), StoreError> {
            Err((self.make)())
        }
        fn macs(&self, _: &SliceName, _: PortId) -> Result<Vec<MacAddress>, StoreError> {
            Err((self.make)())
        }
        fn check_mac(&self, _: &SliceName, _: PortId, _: MacAddress) -> Result<(), StoreError> {
            Err((self.make)())
        }
    }

    impl SliceWrite for Refusing {
        fn create_slice(&self, _: &SliceName) -> Result<(), StoreError> {
            Err((self.make)())
        }
        fn delete_slice(&self, _: &SliceName) -> Result<Slice, StoreError> {
            Err((self.make)())
        }
        fn add_port(&self, _: &SliceName, _: PortId) -> Result<(), StoreError> {
            Err((self.make)())
        }
        fn delete_port(&self, _: &SliceName, _: PortId) -> Result<Port, StoreError> {
            Err((self.make)())
        }
        fn add_mac(&self, _: &SliceName, _: PortId, _: MacAddress) -> Result<bool, StoreError> {
            Err((self.make)())
        }
        fn delete_mac(&self, _: &SliceName, _: PortId, _: MacAddress) -> Result<(), StoreError> {
            Err((self.make)())
        }
        fn apply(&self, _: &[Slice]) -> Result<slice_core::Plan, StoreError> {
            Err((self.make)())
        }
    }

    impl SessionRevocations for Refusing {
        fn revoke_session(&self, _: &[u8], _: u64, _: u64) -> Result<(), StoreError> {
            Err((self.make)())
        }
        fn session_revoked(&self, _: &[u8], _: u64) -> Result<bool, StoreError> {
            Err((self.make)())
        }
    }

    impl FabricDeclarations for Refusing {
        fn declared_fabric(&self) -> Result<DeclaredFabric, StoreError> {
            Err((self.make)())
        }
        fn declare_fabric(&self, _: &DeclaredFabric) -> Result<(), StoreError> {
            Err((self.make)())
        }
    }

    impl SliceStore for Refusing {}

    /// The status and error message of each request of the slice API against `store`.
    async fn answers(store: Refusing) -> Vec<(StatusCode, String)> {
        let settings = Settings::new(Key::generate());
        let app = test::init_service(app(Arc::new(store), None, settings)).await;
        let requests = [
            test::TestRequest::get().uri("/slices"),
            test::TestRequest::get().uri("/slices/blue/ports/0x1:1"),
            test::TestRequest::post()
                .uri("/slices")
                .set_json(serde_json::json!({"name": "blue"})),
            test::TestRequest::delete()
                .uri("/slices/blue/ports/0x1:1/mac_addresses")
                .set_json(serde_json::json!({"name": "00:00:00:00:00:01"})),
            test::TestRequest::put()
                .uri("/topology/fabric")
                .set_json(serde_json::json!({"declared": ["0x1:1-0x2:1"]})),
        ];
        let mut answers = Vec::new();
        for request in requests {
            let request = request.insert_header(("Host", "localhost")).to_request();
            let response = test::call_service(&app, request).await;
            let status = response.status();
            let body: ErrorBody = test::read_body_json(response).await;
            answers.push((status, body.error));
        }
        answers
    }

    #[actix_rt::test]
    async fn a_store_without_a_quorum_answers_503_with_its_reason() {
        let unavailable = || StoreError::Unavailable("no quorum: 1 of 3 members reachable".into());
        let answers = answers(Refusing { make: unavailable }).await;
        let expected = (
            StatusCode::SERVICE_UNAVAILABLE,
            "no quorum: 1 of 3 members reachable".to_owned(),
        );
        assert_eq!(answers, vec![expected; 5]);
    }

    #[actix_rt::test]
    async fn a_failed_store_answers_500_and_keeps_its_reason_to_the_log() {
        let failed = || StoreError::Failed("the disk is on fire".into());
        let answers = answers(Refusing { make: failed }).await;
        let expected = (
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal error".to_owned(),
        );
        assert_eq!(answers, vec![expected; 5]);
    }

    struct FixedCluster;

    impl ClusterView for FixedCluster {
        fn view(&self) -> ViewFuture {
            Box::pin(std::future::ready(Some(serde_json::json!({"master": "a"}))))
        }
    }

    #[actix_web::test]
    async fn get_cluster_answers_the_view_it_is_given_behind_the_usual_guard() {
        let store = || Refusing {
            make: || StoreError::Unavailable("no quorum".into()),
        };
        let mut settings = Settings::new(Key::generate());
        settings.cluster = Some(Arc::new(FixedCluster));
        let service = test::init_service(app(Arc::new(store()), None, settings)).await;
        let get = test::TestRequest::get()
            .uri("/cluster")
            .insert_header(("Host", "localhost"))
            .to_request();
        let response = test::call_service(&service, get).await;
        assert_eq!(response.status(), StatusCode::OK);
        let body: serde_json::Value = test::read_body_json(response).await;
        assert_eq!(body, serde_json::json!({"master": "a"}));
        let post = test::TestRequest::post()
            .uri("/cluster")
            .insert_header(("Host", "localhost"))
            .to_request();
        let response = test::call_service(&service, post).await;
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        // Under /api/ a session is needed, as for every other endpoint there.
        let api = test::TestRequest::get()
            .uri("/api/cluster")
            .insert_header(("Host", "localhost"))
            .insert_header(("Accept", "application/json"))
            .to_request();
        let response = test::call_service(&service, api).await;
        assert_ne!(response.status(), StatusCode::OK);
        // Without a view (the controller gone), 503 with the error body.
        let service =
            test::init_service(app(Arc::new(store()), None, Settings::new(Key::generate()))).await;
        let get = test::TestRequest::get()
            .uri("/cluster")
            .insert_header(("Host", "localhost"))
            .to_request();
        let response = test::call_service(&service, get).await;
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
}

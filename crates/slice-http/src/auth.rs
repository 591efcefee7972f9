//! Client authentication (spec section 5): a developer login that starts a session kept
//! in a signed and encrypted cookie, and a guard in front of everything under `/api/`.

mod refusal;

use std::time::{SystemTime, UNIX_EPOCH};

use actix_session::{Session, SessionExt};
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage, HttpRequest, HttpResponse};
use serde::Serialize;
use slice_core::wire::Credentials;
use slice_core::SliceStore;

use url::Url;

use crate::audit::{self, Operation};
use crate::body::Body;
pub(crate) use crate::identity::User;
use crate::identity::{LocalPeer, ProxyVerdict, Requester, Role, Via};
use crate::page::{escape_html, UI_PATH};
use crate::routing::Mount;
use crate::{ApiError, Settings, DEFAULT_SESSION_TTL};
pub(crate) use refusal::guard_view;
use refusal::{refused, Refusal};

/// The session entry that marks a client as logged in.
const USER_KEY: &str = "user";
/// The session entry with the session's random id, the handle a logout revokes.
const SESSION_ID_KEY: &str = "sid";
/// The session entry with the login time, in seconds since the epoch. The cookie is
/// encrypted and signed, so the client can neither read nor change it.
const ISSUED_AT_KEY: &str = "iat";
/// The session entry with the expiry fixed at login, in seconds since the epoch. Sealed
/// in the cookie so that a longer lifetime configured later never extends a session
/// issued before, and so that a revocation kept until this time outlives the session.
const EXPIRES_AT_KEY: &str = "exp";

/// How far ahead of this instance's clock a login time may be: the instances of a
/// cluster log users in by their own clocks, which differ a little.
const CLOCK_SKEW_SECS: u64 = 60;

/// The login and logout routes, below `/auth` (the scope that runs the session
/// middleware for them).
pub(crate) fn routes(cfg: &mut impl Mount) {
    cfg.mount("/developer", crate::routing::READ, |r| {
        r.route(crate::routing::readable(login_form))
    });
    cfg.mount("/developer/callback", crate::routing::POST, |r| {
        r.post(developer_callback)
    });
    cfg.mount("/logout", crate::routing::POST, |r| r.post(logout));
}

async fn developer_callback(
    req: HttpRequest,
    settings: web::Data<Settings>,
    store: web::Data<dyn SliceStore>,
    session: Session,
    Body(credentials): Body<Credentials>,
) -> Result<HttpResponse, ApiError> {
    if !settings.developer_login {
        return Err(ApiError::NoRoute);
    }
    let name = credentials.name.trim();
    if name.is_empty() || name.chars().count() > 200 {
        return Err(ApiError::BadRequest(
            "name must be 1 to 200 characters".into(),
        ));
    }
    let email = credentials.email.trim();
    if !is_email(email) {
        return Err(ApiError::BadRequest(format!(
            "invalid e-mail address {email:?}"
        )));
    }
    let user = User {
        name: name.to_owned(),
        email: email.to_owned(),
        // Whoever reaches the developer login may log in as anyone: it is for
        // development, where the one using it owns the daemon.
        role: Role::Operator,
    };
    start_session(&req, &session, store, &settings, user.clone()).await?;
    let requester = Requester {
        user: Some(user),
        via: Via::Session,
    };
    audit::record(
        &req,
        &requester,
        Operation::login("developer"),
        &Ok(()),
        |_| serde_json::Value::Null,
    );
    Ok(HttpResponse::Ok().json(Status { status: "ok" }))
}

/// Logs `user` in on this client: the session it had is revoked, a new one is sealed in
/// its cookie. Every login (the developer form, OpenID Connect) ends here, so every
/// session is checked alike.
pub(crate) async fn start_session(
    req: &HttpRequest,
    session: &Session,
    store: web::Data<dyn SliceStore>,
    settings: &Settings,
    user: User,
) -> Result<(), ApiError> {
    // The session this client had is revoked, not just replaced: a copy of its cookie
    // taken before this login must not outlive it.
    if let Some(previous) = live_session(req)? {
        revoke(store, previous).await?;
    }
    // A new session id on login, so that a session planted before it is worthless.
    session.renew();
    let id = new_session_id()?;
    let now = seconds_now();
    let inserted = session
        .insert(USER_KEY, user)
        .and_then(|()| session.insert(SESSION_ID_KEY, id))
        .and_then(|()| session.insert(ISSUED_AT_KEY, now))
        .and_then(|()| {
            session.insert(
                EXPIRES_AT_KEY,
                now.saturating_add(settings.session_ttl.as_secs()),
            )
        });
    inserted.map_err(|err| ApiError::Internal(err.to_string()))
}

/// Ends the session for good: its id is revoked durably before the answer, so the cookie
/// is worthless even to a client that kept a copy, and the cookie is cleared.
async fn logout(
    req: HttpRequest,
    session: Session,
    store: web::Data<dyn SliceStore>,
) -> Result<HttpResponse, ApiError> {
    if let Some(live) = live_session(&req)? {
        let requester = Requester {
            user: Some(live.user.clone()),
            via: Via::Session,
        };
        let revoked = revoke(store, live).await;
        audit::record(&req, &requester, Operation::logout(), &revoked, |_| {
            serde_json::Value::Null
        });
        revoked?;
    }
    session.purge();
    Ok(HttpResponse::Ok().json(Status { status: "ok" }))
}

/// Revokes a session until the expiry sealed in its cookie, and returns once that is
/// durable. No later lifetime setting can make the cookie outlive the revocation.
async fn revoke(store: web::Data<dyn SliceStore>, live: LiveSession) -> Result<(), ApiError> {
    web::block(move || store.revoke_session(live.id.as_bytes(), live.expires_at, seconds_now()))
        .await??;
    Ok(())
}

/// 128 random bits in hex: unguessable, and unique across restarts without a counter.
fn new_session_id() -> Result<String, ApiError> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes)
        .map_err(|err| ApiError::Internal(format!("no randomness for a session id: {err}")))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

pub(crate) fn seconds_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// A session that the guard accepts.
#[derive(Clone)]
struct LiveSession {
    user: User,
    id: String,
    /// The expiry sealed in the cookie at login.
    expires_at: u64,
}

/// The outcome of the session check, kept in the request's extensions so that the guard
/// and the handler behind it share one check (and one store read).
#[derive(Clone)]
struct CheckedSession(Option<LiveSession>);

/// The request's session if it is logged in, before both the expiry sealed at login and
/// the lifetime configured now, and not logged out. Cookies carry their own expiry too,
/// but only a browser heeds that.
fn live_session(req: &HttpRequest) -> Result<Option<LiveSession>, ApiError> {
    if let Some(CheckedSession(checked)) = req.extensions().get::<CheckedSession>() {
        return Ok(checked.clone());
    }
    let checked = check_session(req)?;
    req.extensions_mut().insert(CheckedSession(checked.clone()));
    Ok(checked)
}

fn check_session(req: &HttpRequest) -> Result<Option<LiveSession>, ApiError> {
    let session = req.get_session();
    let field = |key| session.get::<serde_json::Value>(key).ok().flatten();
    let (Some(user), Some(id), Some(issued_at), Some(expires_at)) = (
        field(USER_KEY),
        field(SESSION_ID_KEY),
        field(ISSUED_AT_KEY),
        field(EXPIRES_AT_KEY),
    ) else {
        // Cookies from before the sealed expiry have none, and are refused: a new login.
        return Ok(None);
    };
    let (Ok(user), Some(id), Some(issued_at), Some(expires_at)) = (
        serde_json::from_value::<User>(user),
        id.as_str().map(str::to_owned),
        issued_at.as_u64(),
        expires_at.as_u64(),
    ) else {
        return Ok(None);
    };
    let ttl = req
        .app_data::<web::Data<Settings>>()
        .map_or(DEFAULT_SESSION_TTL, |settings| settings.session_ttl);
    if !within_lifetime(issued_at, expires_at, ttl, seconds_now()) {
        return Ok(None);
    }
    let store = req
        .app_data::<web::Data<dyn SliceStore>>()
        .ok_or_else(|| ApiError::Internal("the application has no store".into()))?;
    if store.session_revoked(id.as_bytes(), issued_at)? {
        return Ok(None);
    }
    Ok(Some(LiveSession {
        user,
        id,
        expires_at,
    }))
}

/// Whether a session logged in at `issued_at`, with the expiry `expires_at` sealed then,
/// is alive at `now` under the lifetime `ttl` configured now.
fn within_lifetime(issued_at: u64, expires_at: u64, ttl: std::time::Duration, now: u64) -> bool {
    // No instance logs anyone in ahead of its clock: such a cookie was sealed with a
    // stolen key, dated ahead so that ending every session (which refuses the sessions
    // issued before a time) would never end it.
    if issued_at > now.saturating_add(CLOCK_SKEW_SECS) {
        return false;
    }
    // A lifetime shortened since the login ends the session early; a longer one never
    // extends it past the sealed expiry, up to which its revocation is kept.
    let ends_at = expires_at.min(issued_at.saturating_add(ttl.as_secs()));
    now < ends_at
}

/// The login form's path.
pub(crate) const LOGIN_PAGE: &str = "/auth/developer";

/// A login page's path with the page to go to once logged in (`?next=`).
pub(crate) fn login_returning_to(page: &str, next: &str) -> String {
    let next: String = url::form_urlencoded::byte_serialize(next.as_bytes()).collect();
    format!("{page}?next={next}")
}

/// The page a browser is sent to when it needs to log in. Its script goes on to `?next=`
/// once logged in; a `next` that would leave the daemon's origin is never served with
/// the form, but redirected to the form that returns to the web view.
async fn login_form(
    req: HttpRequest,
    settings: web::Data<Settings>,
) -> Result<HttpResponse, ApiError> {
    if !settings.developer_login {
        return Err(ApiError::NoRoute);
    }
    if let Some(next) = next_of(req.query_string()) {
        if !stays_on(&page_origin(&req), &next) {
            log::debug!("login with a next that leaves the site: {next:?}");
            return Ok(HttpResponse::Found()
                .insert_header((header::LOCATION, login_returning_to(LOGIN_PAGE, UI_PATH)))
                .insert_header((header::CACHE_CONTROL, "no-store"))
                .finish());
        }
    }
    Ok(crate::page::html_page().body(login_page()))
}

/// The first `next` of a query, decoded as the page's script decodes it
/// (`URLSearchParams`: `+` is a space, bad escapes are replaced).
pub(crate) fn next_of(query: &str) -> Option<String> {
    url::form_urlencoded::parse(query.as_bytes())
        .find_map(|(key, value)| (key == "next").then(|| value.into_owned()))
}

/// The origin the browser sees the login page on, as the request (or the proxy in front)
/// names it: it passed the front door's `Host` check.
pub(crate) fn page_origin(req: &HttpRequest) -> Url {
    let info = req.connection_info();
    Url::parse(&format!("{}://{}/", info.scheme(), info.host())).unwrap_or_else(|_| {
        // A forwarded name that is no URL host: a placeholder origin still tells a path
        // of the page's own origin (which resolves onto any base) from a URL of another.
        Url::parse("http://sliced.invalid/").expect("a literal URL that parses")
    })
}

/// Whether `next`, resolved against `origin` as a browser resolves a link (the WHATWG URL
/// parser, which drops tabs and newlines and reads `\` as `/`), stays on that origin. A
/// test of the text itself cannot answer this: `/%09/evil.example` is a path to a pattern
/// but `//evil.example` to the parser.
pub(crate) fn stays_on(origin: &Url, next: &str) -> bool {
    origin
        .join(next)
        .is_ok_and(|target| target.origin() == origin.origin())
}

/// The developer login form, with the view's look and a word on what it is: any name
/// logs in, as an operator, which is why production turns it off.
fn login_page() -> String {
    // `data-home`: where the script goes when `next` fails its own check. The script
    // sits in the body (deferred all the same): the shared head takes no extras.
    let body = format!(
        r#"<p>A login for development: <strong>any name and e-mail address log you in</strong>,
as an operator who may change everything. Nothing is checked, so production turns it
off (<code>auth.developer_login = false</code>) and logs users in through OpenID Connect
or an authenticating proxy.</p>
<form method="post" action="{}" data-home="{}">
<label>Name <input name="name" required autocomplete="name"></label>
<label>E-mail <input name="email" type="email" required autocomplete="email"></label>
<button type="submit">Log in</button>
</form>
<script src="{}" defer></script>
"#,
        escape_html(&format!("{LOGIN_PAGE}/callback")),
        escape_html(UI_PATH),
        escape_html(&format!("{UI_PATH}/login.js")),
    );
    crate::page::document("Developer login", &body)
}

#[derive(Serialize)]
pub(crate) struct Status {
    pub(crate) status: &'static str,
}

/// A pragmatic check of an e-mail address: one `@`, a local part, and a dotted domain of
/// letters, digits and hyphens; no spaces or control characters anywhere.
pub fn is_email(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && local.chars().all(|c| {
            c.is_ascii_graphic()
                && !matches!(
                    c,
                    '@' | '<' | '>' | '(' | ')' | ',' | ';' | ':' | '\\' | '"' | '[' | ']'
                )
        });
    let labels_ok = domain.len() <= 253
        && domain.contains('.')
        && domain.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    local_ok && labels_ok
}

/// The requester of a request if anything vouches for them (see [`requester_of`]).
pub(crate) fn requester(req: &HttpRequest) -> Result<Option<Requester>, ApiError> {
    if let Some(requester) = req.extensions().get::<Requester>() {
        return Ok(Some(requester.clone()));
    }
    requester_of(req)
}

/// Who a request comes from, when anything vouches for them: the local socket's peer (no
/// header counts there), a trusted proxy's header, or a login session. `Err` carries the
/// answer for a request refused outright, such as one whose proxy headers are ambiguous
/// ([`ApiError::ProxyRefused`]). It only looks: the trail tells a refusal where it
/// becomes the answer (`front_door`), so a caller that answers otherwise (a probe) tells
/// nothing, and no request is told twice however many times it is asked.
fn requester_of(req: &HttpRequest) -> Result<Option<Requester>, ApiError> {
    if let Some(local) = req.conn_data::<LocalPeer>() {
        return Ok(Some(local.requester()));
    }
    let proxy = req
        .app_data::<web::Data<Settings>>()
        .and_then(|settings| settings.proxy.clone());
    if let (Some(proxy), Some(peer)) = (proxy, req.peer_addr()) {
        match proxy.judge(peer.ip(), req.headers()) {
            ProxyVerdict::Accepted(user) => {
                return Ok(Some(Requester {
                    user: Some(user),
                    via: Via::Proxy,
                }))
            }
            ProxyVerdict::Refused(reason) => return Err(ApiError::ProxyRefused(reason)),
            ProxyVerdict::NoRole(name) => {
                log::info!("the proxy's user {name:?} has no role here: refused");
                return Ok(None);
            }
            ProxyVerdict::Untrusted => {
                // Anyone can send the header; only the proxy's is believed. The request
                // goes on as if it had none, so a session still counts.
                log::debug!("a proxy user header from {peer}, not a trusted proxy: ignored");
            }
            ProxyVerdict::Absent => {}
        }
    }
    Ok(live_session(req)?.map(|live| Requester {
        user: Some(live.user),
        via: Via::Session,
    }))
}

/// The requester of a request, as the guard found it, or, where no guard stands (the
/// open slice API, where no session is read), as the request shows it: the local
/// socket, a trusted proxy's user, or anonymous. For the audit trail and `/api/session`.
/// A trusted proxy's refused headers refuse the request here too, guard or not: a write
/// asks before it reaches the store, so such a request changes nothing.
pub(crate) fn requester_seen(req: &HttpRequest) -> Result<Requester, ApiError> {
    Ok(requester(req)?.unwrap_or(Requester {
        user: None,
        via: Via::Anonymous,
    }))
}

/// Whether a method changes something: all but the reads need an operator.
fn writes(method: &actix_web::http::Method) -> bool {
    use actix_web::http::Method;
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Marks a request the guard refused, so that the audit trail leaves it out.
#[derive(Clone, Copy)]
pub(crate) struct Refused;

/// Lets a request through when something vouches for its requester (see
/// [`requester_of`]) and their role allows the method; otherwise answers 403
/// `{"status":"forbidden"}` with the reason in a header (see [`refusal`]). A browser that
/// navigates outside `/api/` without a login is sent to the login page instead, where
/// there is one; under `/api/` every client gets the contract's 403.
pub(crate) async fn require_session(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let requester = match requester_of(req.request()) {
        Ok(requester) => requester,
        Err(err) => return Ok(req.error_response(err)),
    };
    let role_suffices = requester
        .as_ref()
        .is_some_and(|requester| !writes(req.method()) || requester.role() >= Role::Operator);
    if let (Some(requester), true) = (requester.clone(), role_suffices) {
        req.extensions_mut().insert(requester);
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    req.extensions_mut().insert(Refused);
    let (req, _payload) = req.into_parts();
    let login_page = req
        .app_data::<web::Data<Settings>>()
        .and_then(|settings| settings.login_page());
    let under_api = req.path() == "/api" || req.path().starts_with("/api/");
    let response = match (requester, login_page) {
        (None, Some(page)) if wants_html(&req) && !under_api => HttpResponse::Found()
            .insert_header((header::LOCATION, page))
            .finish(),
        (None, _) => refused(&req, Refusal::LoginRequired),
        (Some(_), _) => refused(&req, Refusal::ViewerCannotWrite),
    };
    Ok(ServiceResponse::new(req, response))
}

/// True when the client prefers HTML to JSON, as a browser's navigation does.
pub(crate) fn wants_html(req: &HttpRequest) -> bool {
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    accept.contains("text/html") && !accept.contains("application/json")
}

pub(crate) async fn whoami(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let requester = requester_seen(&req)?;
    let user = requester.user.clone().unwrap_or_else(|| User {
        name: requester.name().to_owned(),
        email: String::new(),
        role: requester.role(),
    });
    Ok(HttpResponse::Ok().json(user))
}

pub(crate) async fn api_status() -> HttpResponse {
    HttpResponse::Ok().json(Status { status: "ok" })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use actix_session::storage::CookieSessionStore;
    use actix_session::SessionMiddleware;
    use actix_web::cookie::{Cookie, Key};
    use actix_web::http::StatusCode;
    use actix_web::test as actix_test;
    use actix_web::App;

    use super::*;

    const HOUR: u64 = 3600;

    #[test]
    fn a_login_time_ahead_of_the_clock_or_past_the_lifetime_is_refused() {
        let (now, ttl) = (1_700_000_000, Duration::from_secs(12 * HOUR));
        let sealed = |issued_at: u64| issued_at + 12 * HOUR;
        assert!(within_lifetime(now, sealed(now), ttl, now));
        // Another instance's clock a little ahead.
        assert!(within_lifetime(now + 60, sealed(now + 60), ttl, now));
        assert!(!within_lifetime(now + 61, sealed(now + 61), ttl, now));
        let ten_years = 10 * 365 * 24 * HOUR;
        assert!(!within_lifetime(
            now + ten_years,
            sealed(now + ten_years),
            ttl,
            now
        ));
        assert!(!within_lifetime(u64::MAX, u64::MAX, ttl, now));
        // Past the lifetime, by the sealed expiry or by the lifetime configured now.
        assert!(within_lifetime(now - 12 * HOUR + 1, now + 1, ttl, now));
        assert!(!within_lifetime(now - 12 * HOUR, now, ttl, now));
        assert!(!within_lifetime(now - 13 * HOUR, now + ten_years, ttl, now));
        assert!(!within_lifetime(
            now - 2 * HOUR,
            sealed(now),
            Duration::from_secs(HOUR),
            now
        ));
    }

    /// A cookie sealed with the application's key by someone who holds it, with the
    /// login time `issued_at` and the expiry a lifetime after it.
    async fn forged(key: &Key, issued_at: u64) -> Cookie<'static> {
        let forger = actix_test::init_service(
            App::new()
                .wrap(
                    SessionMiddleware::builder(CookieSessionStore::default(), key.clone())
                        .cookie_name(crate::SESSION_COOKIE.into())
                        .cookie_content_security(
                            actix_session::config::CookieContentSecurity::Private,
                        )
                        .build(),
                )
                .route(
                    "/",
                    web::get().to(move |session: Session| async move {
                        let user = User {
                            name: "Mallory (forged)".into(),
                            email: "m@example.com".into(),
                            role: Role::Operator,
                        };
                        session.insert(USER_KEY, user).unwrap();
                        session.insert(SESSION_ID_KEY, "00ff").unwrap();
                        session.insert(ISSUED_AT_KEY, issued_at).unwrap();
                        session
                            .insert(EXPIRES_AT_KEY, issued_at.saturating_add(12 * HOUR))
                            .unwrap();
                        HttpResponse::Ok().finish()
                    }),
                ),
        )
        .await;
        let response =
            actix_test::call_service(&forger, actix_test::TestRequest::get().to_request()).await;
        response
            .response()
            .cookies()
            .find(|cookie| cookie.name() == crate::SESSION_COOKIE)
            .expect("the forger sets a session cookie")
            .into_owned()
    }

    #[actix_web::test]
    async fn a_cookie_dated_ahead_is_refused_even_when_sealed_with_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(slice_store::Store::open(dir.path()).unwrap());
        let key = Key::generate();
        let service =
            actix_test::init_service(crate::app(store, None, crate::Settings::new(key.clone())))
                .await;
        let now = seconds_now();
        let ten_years = 10 * 365 * 24 * HOUR;
        for (issued_at, expected) in [
            // The forger's cookie works when dated honestly: the refusals below are the
            // login time's alone.
            (now, StatusCode::OK),
            (now + 30, StatusCode::OK),
            (now + ten_years, StatusCode::FORBIDDEN),
            (now + 5 * 60, StatusCode::FORBIDDEN),
            (now - 13 * HOUR, StatusCode::FORBIDDEN),
        ] {
            let request = actix_test::TestRequest::get()
                .uri("/api/whoami")
                .insert_header(("Host", "localhost"))
                .cookie(forged(&key, issued_at).await)
                .to_request();
            let response = actix_test::call_service(&service, request).await;
            assert_eq!(
                response.status(),
                expected,
                "login time {issued_at} at {now}"
            );
        }
    }

    #[test]
    fn only_a_next_that_resolves_onto_the_pages_origin_stays() {
        let origin = Url::parse("http://127.0.0.1:9292/").unwrap();
        for own in [
            "/ui",
            "ui",
            "/ui?x=1#y",
            "http://127.0.0.1:9292/ui",
            "HTTP://127.0.0.1:9292/ui",
            "",
            "?x",
        ] {
            assert!(stays_on(&origin, own), "{own:?} refused");
        }
        for foreign in [
            "/\t/evil.example/x",
            "/\n/evil.example",
            "/\r/evil.example",
            "//evil.example",
            "/\\evil.example",
            "\\\\evil.example",
            " //evil.example",
            "http://evil.example/ui",
            "http:/\\evil.example",
            "https:evil.example",
            "https://127.0.0.1:9292/ui",
            "http://127.0.0.1:9293/ui",
            "javascript:alert(1)",
            "data:text/html,x",
            "http://[",
        ] {
            assert!(!stays_on(&origin, foreign), "{foreign:?} stays");
        }
    }

    #[test]
    fn next_is_decoded_as_the_page_decodes_it_and_the_first_one_counts() {
        assert_eq!(
            next_of("a=1&next=%2F%09%2Fevil+x&next=%2Fui").as_deref(),
            Some("/\t/evil x")
        );
        assert_eq!(next_of("a=1"), None);
    }

    #[test]
    fn email_check_accepts_ordinary_addresses_only() {
        for ok in ["dev@example.com", "a.b+c@sub.example.org", "x@a-b.io"] {
            assert!(is_email(ok), "{ok} rejected");
        }
        for bad in [
            "",
            "plain",
            "@example.com",
            "dev@",
            "dev@localhost",
            "dev@exa mple.com",
            "dev@@example.com",
            "dev@-example.com",
            "dev@example..com",
            "de v@example.com",
            "dev@example.com\n",
        ] {
            assert!(!is_email(bad), "{bad:?} accepted");
        }
    }
}

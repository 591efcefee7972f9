//! The OpenID Connect login: the authorization code flow with PKCE against a provider
//! found by discovery, ending in the same session as the developer login
//! (`auth::start_session`), with the role the provider's claim gives.
//!
//! `GET /auth/oidc/login?next=` sends the browser to the provider with a fresh state,
//! nonce and PKCE challenge, kept in the (encrypted, signed) session cookie for ten
//! minutes; `GET /auth/oidc/callback?code=&state=` takes them back out (once), redeems the
//! code, validates the ID token, maps the role and logs the user in. Every failure is a
//! 4xx page (or JSON) that says what went wrong, but a provider that cannot be reached,
//! which is 503 until it can.
//!
//! Anyone can call both routes, as often as they like: what they send is quoted escaped
//! and cut short, a refusal before a valid state is logged at debug level only and not
//! audited, and only a bounded number of requests wait on the provider at once, each
//! until its client leaves at the latest.

mod provider;

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use actix_session::Session;
use actix_web::http::header;
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use openidconnect::core::CoreResponseType;
use openidconnect::{AuthenticationFlow, CsrfToken, Nonce, PkceCodeChallenge};
use serde::{Deserialize, Serialize};
use slice_core::SliceStore;
use url::Url;

use crate::audit::{self, Operation};
use crate::auth;
use crate::hangup::Hangup;
use crate::identity::{Requester, Role, RoleMapping, User, Via};
use crate::log_text;
use crate::page::{escape_html, UI_PATH};
use crate::routing::Mount;
use crate::{ApiError, Settings};

/// Where a browser starts an OpenID Connect login.
pub(crate) const LOGIN_PATH: &str = "/auth/oidc/login";
/// Where the provider sends the browser back: `redirect_url` must end in it.
pub const CALLBACK_PATH: &str = "/auth/oidc/callback";

/// The session entry with the logins under way in this browser.
const PENDING_KEY: &str = "oidc_logins";
/// How long a login may stay at the provider (a password manager, a second factor).
const PENDING_LIFETIME_SECS: u64 = 600;
/// How many logins one browser may have under way at once (tabs opened together), so
/// that the cookie stays small.
const MAX_PENDING: usize = 4;
/// The longest user name taken from a claim, as for the developer login.
const MAX_NAME_CHARS: usize = 200;
/// The longest part of a callback's parameters quoted in an answer, a log line or the
/// audit trail: a client may send kilobytes of them on every request.
const MAX_QUOTED_CHARS: usize = 200;
/// The longest line about a login logged, whatever the provider or a client said.
const MAX_LOGGED_CHARS: usize = 1000;
/// How many requests may wait on the provider at once unless the daemon says otherwise
/// ([`Oidc::with_waiting_logins`]).
const DEFAULT_WAITING_LOGINS: usize = 16;

/// What `[auth.oidc]` configures.
#[derive(Clone)]
pub struct OidcConfig {
    /// The issuer URL; discovery reads `<issuer>/.well-known/openid-configuration`.
    pub issuer: String,
    pub client_id: String,
    pub client_secret: String,
    /// The callback's public URL, as registered at the provider.
    pub redirect_url: Url,
    /// The scopes to ask for besides `openid`; `None`: `email`, `profile` and the role
    /// claim's name where the provider offers such a scope.
    pub scopes: Option<Vec<String>>,
    /// The claim (a string or an array of strings) whose values give the role.
    pub role_claim: String,
    pub roles: RoleMapping,
    /// How the daemon authenticates at the token endpoint; `None`: the first method the
    /// provider's discovery document lists that the daemon can use, and HTTP Basic when
    /// it lists none (the default of OpenID Connect Discovery).
    pub token_endpoint_auth: Option<ClientAuth>,
}

/// How the client secret goes to the token endpoint (RFC 6749 section 2.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// `client_secret_basic`: HTTP Basic, of the form-urlencoded id and secret.
    Basic,
    /// `client_secret_post`: `client_id` and `client_secret` in the request body.
    Post,
}

impl ClientAuth {
    /// The method of its name in `token_endpoint_auth_method` (and in a discovery
    /// document), if the daemon can use it.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "client_secret_basic" => Some(Self::Basic),
            "client_secret_post" => Some(Self::Post),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Basic => "client_secret_basic",
            Self::Post => "client_secret_post",
        }
    }
}

impl fmt::Debug for OidcConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcConfig")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("redirect_url", &self.redirect_url.as_str())
            .field("scopes", &self.scopes)
            .field("role_claim", &self.role_claim)
            .field("roles", &self.roles)
            .field("token_endpoint_auth", &self.token_endpoint_auth)
            .finish()
    }
}

impl OidcConfig {
    /// The default role claim.
    pub const DEFAULT_ROLE_CLAIM: &'static str = "groups";

    /// Why this configuration cannot work, in the words of `[auth.oidc]`'s keys.
    pub fn check(&self) -> Result<(), String> {
        let issuer = Url::parse(&self.issuer)
            .map_err(|err| format!("auth.oidc.issuer {:?} is no URL: {err}", self.issuer))?;
        if !(issuer.scheme() == "https" || (issuer.scheme() == "http" && is_loopback(&issuer))) {
            return Err(format!(
                "auth.oidc.issuer {:?} must be an https:// URL (http:// only on loopback)",
                self.issuer
            ));
        }
        if issuer.query().is_some() || issuer.fragment().is_some() {
            return Err("auth.oidc.issuer must have no query or fragment".into());
        }
        if self.client_id.trim().is_empty() {
            return Err("auth.oidc.client_id must not be empty".into());
        }
        if self.client_secret.is_empty() {
            return Err("auth.oidc.client_secret_file holds no secret".into());
        }
        let redirect = &self.redirect_url;
        if !matches!(redirect.scheme(), "http" | "https")
            || !redirect.path().ends_with(CALLBACK_PATH)
            || redirect.query().is_some()
            || redirect.fragment().is_some()
        {
            return Err(format!(
                "auth.oidc.redirect_url {:?} must be the public http(s) URL of the daemon's \
                 {CALLBACK_PATH}, e.g. https://sliced.example.com{CALLBACK_PATH}",
                redirect.as_str()
            ));
        }
        if let Some(scopes) = &self.scopes {
            if let Some(bad) = scopes.iter().find(|scope| {
                scope.is_empty() || scope.chars().any(|c| c.is_whitespace() || c == '"')
            }) {
                return Err(format!("auth.oidc.scopes: {bad:?} is no scope name"));
            }
        }
        if self.role_claim.trim().is_empty() {
            return Err("auth.oidc.role_claim must not be empty".into());
        }
        Ok(())
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The OpenID Connect login of a daemon: its configuration and its provider, discovered
/// once and shared by every worker.
pub struct Oidc {
    provider: provider::Provider,
    /// The places of the requests that wait on the provider: a provider that stalls
    /// holds at most these connections, and the rest (health checks, the API) are served.
    waiting: tokio::sync::Semaphore,
}

impl Oidc {
    pub fn new(config: OidcConfig) -> Result<Self, String> {
        config.check()?;
        Ok(Self {
            provider: provider::Provider::new(config)?,
            waiting: tokio::sync::Semaphore::new(DEFAULT_WAITING_LOGINS),
        })
    }

    /// At most `logins` requests (at least one) wait on the provider at once; more are
    /// answered 503 at once. The daemon keeps this well below its HTTP connection cap.
    #[must_use]
    pub fn with_waiting_logins(mut self, logins: usize) -> Self {
        self.waiting = tokio::sync::Semaphore::new(logins.max(1));
        self
    }

    /// The issuer, as configured.
    pub fn issuer(&self) -> &str {
        &self.provider.config().issuer
    }

    /// Discovers the provider ahead of the first login, so that a wrong issuer shows in
    /// the log at start-up (the discovery logs how it went). Logins try again.
    pub async fn discover(&self) {
        let _ = self.provider.discovered().await;
    }

    /// Whether logins can work, as the last exchange with the provider showed: `Err`
    /// says why not (it cannot be reached, or it refuses the daemon's client), for
    /// `/readyz`. Asked while discovery has failed and its backoff is over, it starts
    /// discovery again, so that the answer follows a provider that comes back although
    /// nobody logs in; the backoff bounds how often probes can make it ask.
    pub fn trouble(&self) -> Option<String> {
        self.provider.trouble()
    }

    /// Runs `work`, which waits on the provider, in one of the places for that, and only
    /// while the client is there to take the answer: a client that hangs up ends it.
    async fn on_provider<T>(
        &self,
        req: &HttpRequest,
        work: impl Future<Output = T>,
    ) -> Result<T, LoginError> {
        let Ok(_place) = self.waiting.try_acquire() else {
            return Err(LoginError::Busy);
        };
        let Some(mut hangup) = req.conn_data::<Hangup>().cloned() else {
            return Ok(work.await);
        };
        tokio::select! {
            done = work => Ok(done),
            () = hangup.wait() => Err(LoginError::ClientLeft),
        }
    }
}

/// Why a login failed, and so its status: the browser's or the user's doing (400, 403),
/// the provider's (503), or the daemon's own configuration (500).
#[derive(Debug)]
pub(crate) enum LoginError {
    /// A callback the daemon did not ask for, or a code the provider refused.
    BadRequest(String),
    /// The provider or the role mapping refused the user.
    Refused(String),
    /// The ID token failed validation.
    Token(String),
    /// The provider cannot be reached, or answered nonsense.
    Provider(String),
    /// The provider refuses the daemon itself (`invalid_client`, `unauthorized_client`
    /// at the token endpoint): a wrong client secret or registration, so every login
    /// fails until the operator fixes it.
    Misconfigured(String),
    /// The ID token names a key the kept key set lacks: fetch it again, then decide.
    UnknownKey,
    /// Too many requests wait on the provider already.
    Busy,
    /// The client hung up while the provider was asked.
    ClientLeft,
}

impl From<LoginError> for ApiError {
    fn from(err: LoginError) -> Self {
        match err {
            LoginError::BadRequest(text) => Self::BadRequest(text),
            LoginError::Refused(text) => Self::Forbidden(text),
            LoginError::Token(text) => Self::Forbidden(format!(
                "the OpenID provider's ID token was refused: {text}"
            )),
            LoginError::Provider(text) => Self::Unavailable(text),
            LoginError::Misconfigured(text) => Self::Misconfigured(text),
            LoginError::UnknownKey => {
                Self::Forbidden("the ID token is signed by a key the provider does not list".into())
            }
            LoginError::Busy => Self::Unavailable(
                "too many logins are waiting for the OpenID provider: try again shortly".into(),
            ),
            LoginError::ClientLeft => Self::BadRequest(
                "the client closed its connection before the OpenID provider answered".into(),
            ),
        }
    }
}

/// The login routes, below `/auth`.
pub(crate) fn routes(cfg: &mut impl Mount) {
    cfg.mount("/oidc/login", crate::routing::READ, |r| {
        r.route(crate::routing::readable(login))
    });
    cfg.mount("/oidc/callback", crate::routing::READ, |r| {
        r.route(crate::routing::readable(callback))
    });
}

/// A login under way, kept in the session cookie until its callback.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct PendingLogin {
    state: String,
    nonce: String,
    pkce_verifier: String,
    /// The path (and query) on this daemon to go to once logged in.
    next: String,
    expires_at: u64,
}

async fn login(req: HttpRequest, session: Session, settings: web::Data<Settings>) -> HttpResponse {
    let Some(oidc) = settings.oidc.clone() else {
        return answer(&req, ApiError::NoRoute, Told::Quietly);
    };
    let next = auth::next_of(req.query_string())
        .and_then(|next| path_on_site(&auth::page_origin(&req), &next))
        .unwrap_or_else(|| UI_PATH.to_owned());
    let discovered = match oidc.provider.kept() {
        Some(discovered) => discovered,
        None => match oidc.on_provider(&req, oidc.provider.discovered()).await {
            Ok(Ok(discovered)) => discovered,
            // Anyone may ask, as often as they like: the discovery logs its own failure.
            Ok(Err(err)) | Err(err) => return answer(&req, err.into(), Told::Quietly),
        },
    };
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state, nonce) = discovered
        .client()
        .authorize_url(
            AuthenticationFlow::<CoreResponseType>::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scopes(discovered.scopes().iter().cloned())
        .set_pkce_challenge(challenge)
        .url();
    let now = auth::seconds_now();
    let mut pending = pending_logins(&session, now);
    pending.push(PendingLogin {
        state: state.secret().clone(),
        nonce: nonce.secret().clone(),
        pkce_verifier: verifier.secret().clone(),
        next,
        expires_at: now + PENDING_LIFETIME_SECS,
    });
    let excess = pending.len().saturating_sub(MAX_PENDING);
    pending.drain(..excess);
    if let Err(err) = session.insert(PENDING_KEY, pending) {
        return answer(&req, ApiError::Internal(err.to_string()), Told::Quietly);
    }
    HttpResponse::Found()
        .insert_header((header::LOCATION, url.as_str()))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish()
}

/// The logins under way in this session, the expired ones left out.
fn pending_logins(session: &Session, now: u64) -> Vec<PendingLogin> {
    let mut pending: Vec<PendingLogin> =
        session.get(PENDING_KEY).ok().flatten().unwrap_or_default();
    pending.retain(|login| login.expires_at > now);
    pending
}

/// Takes the login under way whose state is `state` out of the session: each state is
/// good for one callback.
fn take_pending(session: &Session, state: &str) -> Option<PendingLogin> {
    let mut pending = pending_logins(session, auth::seconds_now());
    let index = pending.iter().position(|login| login.state == state)?;
    let taken = pending.remove(index);
    let kept = if pending.is_empty() {
        session.remove(PENDING_KEY);
        Ok(())
    } else {
        session.insert(PENDING_KEY, pending)
    };
    kept.ok()?;
    Some(taken)
}

/// `next` as a path (and query) of the page's own origin, or `None` when it would leave
/// it. The path is what the callback redirects to, so it must not itself read as another
/// host (`//evil.example`, which `/.//evil.example` resolves to).
fn path_on_site(origin: &Url, next: &str) -> Option<String> {
    if !auth::stays_on(origin, next) {
        return None;
    }
    let target = origin.join(next).ok()?;
    let path = &target[url::Position::BeforePath..url::Position::AfterQuery];
    (path.starts_with('/') && !path.starts_with("//")).then(|| path.to_owned())
}

/// The first value of each parameter of a query.
fn parameter<'q>(query: &'q [(String, String)], name: &str) -> Option<&'q str> {
    query
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

async fn callback(
    req: HttpRequest,
    session: Session,
    settings: web::Data<Settings>,
    store: web::Data<dyn SliceStore>,
) -> HttpResponse {
    let Some(oidc) = settings.oidc.clone() else {
        return answer(&req, ApiError::NoRoute, Told::Quietly);
    };
    let query: Vec<(String, String)> = url::form_urlencoded::parse(req.query_string().as_bytes())
        .into_owned()
        .collect();
    let pending = parameter(&query, "state").and_then(|state| take_pending(&session, state));
    let Some(pending) = pending else {
        // Nothing of this browser's: anyone can send it, as often as they like, so it is
        // neither audited nor logged above debug level.
        let err = match provider_error(&query) {
            Some(err) => err.into(),
            None => ApiError::BadRequest(
                "this login was not started here, has been used already, or is over \
                 (10 minutes): start the login again"
                    .into(),
            ),
        };
        return answer(&req, err, Told::Quietly);
    };
    // The state was ours: from here on every failure is told to the audit trail.
    let (result, user) = match provider_error(&query) {
        Some(err) => (Err(err), None),
        None => oidc
            .on_provider(&req, finish_login(&req, &oidc, &query, pending.clone()))
            .await
            .unwrap_or_else(|err| (Err(err), None)),
    };
    let result = match (result, user) {
        (Ok(()), Some(user)) => {
            let started = auth::start_session(&req, &session, store, &settings, user.clone()).await;
            let requester = Requester {
                user: Some(user),
                via: Via::Session,
            };
            audit::record(&req, &requester, Operation::login("oidc"), &started, |_| {
                serde_json::Value::Null
            });
            started
        }
        (Err(err), user) => {
            let requester = Requester {
                user,
                via: Via::Anonymous,
            };
            let refused: Result<(), ApiError> = Err(err.into());
            audit::record(&req, &requester, Operation::login("oidc"), &refused, |_| {
                serde_json::Value::Null
            });
            refused
        }
        (Ok(()), None) => Err(ApiError::Internal("a login without a user".into())),
    };
    match result {
        Ok(()) => HttpResponse::Found()
            .insert_header((header::LOCATION, pending.next))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .finish(),
        Err(err) => answer(&req, err, Told::Loudly),
    }
}

/// The provider's error in a callback (`error`, `error_description`), quoted short.
fn provider_error(query: &[(String, String)]) -> Option<LoginError> {
    let error = parameter(query, "error")?;
    let described = parameter(query, "error_description").map_or_else(String::new, |text| {
        format!(" ({})", log_text::quoted(text, MAX_QUOTED_CHARS))
    });
    let text = format!(
        "the OpenID provider answered {}{described}",
        log_text::quoted(error, MAX_QUOTED_CHARS)
    );
    Some(if error == "access_denied" {
        LoginError::Refused(text)
    } else {
        LoginError::BadRequest(text)
    })
}

/// Redeems the callback's code and reads the user the provider vouches for, with the
/// role they get here. The user comes back even when refused (no role), for the trail.
async fn finish_login(
    req: &HttpRequest,
    oidc: &Arc<Oidc>,
    query: &[(String, String)],
    pending: PendingLogin,
) -> (Result<(), LoginError>, Option<User>) {
    let provider = &oidc.provider;
    let config = provider.config();
    let discovered = match provider.discovered().await {
        Ok(discovered) => discovered,
        Err(err) => return (Err(err), None),
    };
    // RFC 9207: a provider that names itself in the callback must be this one, or the
    // browser was sent here by another provider's login (a mix-up).
    if let Some(issuer) = parameter(query, "iss") {
        if issuer.trim_end_matches('/') != config.issuer.trim_end_matches('/') {
            let text = format!(
                "the callback comes from issuer {}, not {}",
                log_text::quoted(issuer, MAX_QUOTED_CHARS),
                config.issuer
            );
            return (Err(LoginError::BadRequest(text)), None);
        }
    }
    let Some(code) = parameter(query, "code") else {
        let text = "the callback carries no authorization code".to_owned();
        return (Err(LoginError::BadRequest(text)), None);
    };
    let nonce = Nonce::new(pending.nonce);
    let redeemed = provider
        .redeem(
            Arc::clone(&discovered),
            code.to_owned(),
            pending.pkce_verifier,
            &nonce,
        )
        .await;
    let vouched = match redeemed {
        Ok(vouched) => provider.complete(&discovered, vouched).await,
        Err(err) => Err(err),
    };
    let vouched = match vouched {
        Ok(vouched) => vouched,
        Err(err) => return (Err(err), None),
    };
    let name = [&vouched.name, &vouched.preferred_username]
        .into_iter()
        .flatten()
        .map(|name| name.trim())
        .find(|name| !name.is_empty())
        .unwrap_or(&vouched.subject)
        .chars()
        .take(MAX_NAME_CHARS)
        .collect::<String>();
    let email = vouched
        .email
        .filter(|email| auth::is_email(email))
        .unwrap_or_default();
    let values = vouched.role_values.unwrap_or_default();
    let role = config.roles.role_of(values.iter().map(String::as_str));
    log::debug!(
        "OpenID login of {name:?} from {:?}: {} {values:?} gives {role:?}",
        req.peer_addr(),
        config.role_claim
    );
    let Some(role) = role else {
        let text = format!(
            "{name} may not use this daemon: the {} claim ({}) names no role of [auth.roles]",
            config.role_claim,
            if values.is_empty() {
                "absent or empty".to_owned()
            } else {
                values.join(", ")
            }
        );
        // The trail names the refused user; the role is a placeholder it does not show.
        let user = User {
            name,
            email,
            role: Role::Viewer,
        };
        return (Err(LoginError::Refused(text)), Some(user));
    };
    (Ok(()), Some(User { name, email, role }))
}

/// How loud a refusal is in the log.
#[derive(Clone, Copy)]
enum Told {
    /// At debug level: anyone could have caused it (a callback of no login started here,
    /// a login while the provider is away), as often as they like.
    Quietly,
    /// At info level: a login this browser started and the daemon refused.
    Loudly,
}

/// A failed login's answer: a page to a browser, `{"error": ...}` to anyone else.
fn answer(req: &HttpRequest, err: ApiError, told: Told) -> HttpResponse {
    if let ApiError::Internal(detail) = &err {
        log::error!(
            "OpenID Connect login failed: {}",
            log_text::escaped(detail, MAX_LOGGED_CHARS)
        );
    }
    let status = actix_web::ResponseError::status_code(&err);
    let text = err.to_string();
    if let ApiError::Misconfigured(_) = &err {
        // Every login fails alike until the operator acts: a warning, whoever caused it.
        log::warn!(
            "OpenID Connect login impossible ({status}): {}",
            log_text::escaped(&text, MAX_LOGGED_CHARS)
        );
    } else if status != StatusCode::NOT_FOUND {
        let level = match told {
            Told::Quietly => log::Level::Debug,
            Told::Loudly => log::Level::Info,
        };
        log::log!(
            level,
            "OpenID Connect login refused ({status}): {}",
            log_text::escaped(&text, MAX_LOGGED_CHARS)
        );
    }
    let mut response = if auth::wants_html(req) {
        crate::page::html_page()
    } else {
        HttpResponse::build(status)
    };
    response
        .status(status)
        .insert_header((header::CACHE_CONTROL, "no-store"));
    if status == StatusCode::SERVICE_UNAVAILABLE {
        // The provider is retried after a backoff of at most this long.
        response.insert_header((header::RETRY_AFTER, provider::MAX_BACKOFF.as_secs()));
    }
    if auth::wants_html(req) {
        response.body(error_page(status, &text))
    } else {
        response.json(slice_core::wire::ErrorBody { error: text })
    }
}

/// The page a browser gets for a failed login: what went wrong in words for the person
/// at the browser, and the daemon's reason below.
fn error_page(status: StatusCode, reason: &str) -> String {
    let (title, said) = match status {
        StatusCode::SERVICE_UNAVAILABLE => (
            "Login provider unreachable",
            "The login provider cannot be reached just now, so nobody can log in through \
             it. Try again in a minute; if it lasts, tell the operator of this daemon.",
        ),
        StatusCode::INTERNAL_SERVER_ERROR => (
            "Login is misconfigured",
            "The login provider refuses this daemon, so nobody can log in through it until \
             the operator of this daemon fixes its settings. Trying again will not help.",
        ),
        _ => ("Login failed", "The login did not succeed."),
    };
    let again = auth::login_returning_to(LOGIN_PATH, UI_PATH);
    let body = format!(
        r#"<p>{said}</p>
<p id="status">{}</p>
<p><a href="{}">Log in again</a></p>
"#,
        escape_html(reason),
        escape_html(&again)
    );
    crate::page::document(title, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> OidcConfig {
        OidcConfig {
            issuer: "https://id.example.com/realms/net".into(),
            client_id: "sliced".into(),
            client_secret: "secret".into(),
            redirect_url: "https://sliced.example.com/auth/oidc/callback"
                .parse()
                .unwrap(),
            scopes: None,
            role_claim: "groups".into(),
            roles: RoleMapping::default(),
            token_endpoint_auth: None,
        }
    }

    /// A change that makes a configuration wrong.
    type Breaks = fn(&mut OidcConfig);

    #[test]
    fn a_configuration_is_checked_key_by_key() {
        assert_eq!(config().check(), Ok(()));
        let loopback = OidcConfig {
            issuer: "http://127.0.0.1:5556/dex".into(),
            ..config()
        };
        assert_eq!(loopback.check(), Ok(()));
        let broken: [(Breaks, &str); 7] = [
            (
                |c| c.issuer = "http://id.example.com".into(),
                "auth.oidc.issuer",
            ),
            (|c| c.issuer = "id.example.com".into(), "auth.oidc.issuer"),
            (|c| c.client_id = " ".into(), "auth.oidc.client_id"),
            (|c| c.client_secret = String::new(), "client_secret_file"),
            (
                |c| c.redirect_url = "https://sliced.example.com/callback".parse().unwrap(),
                "auth.oidc.redirect_url",
            ),
            (|c| c.scopes = Some(vec!["a b".into()]), "auth.oidc.scopes"),
            (|c| c.role_claim = String::new(), "auth.oidc.role_claim"),
        ];
        for (breaks, key) in broken {
            let mut config = config();
            breaks(&mut config);
            let err = config.check().unwrap_err();
            assert!(err.contains(key), "{err}");
        }
        assert!(!format!("{:?}", config()).contains("secret\""));
    }

    #[test]
    fn next_becomes_a_path_of_the_site_or_nothing() {
        let origin = Url::parse("http://127.0.0.1:9292/").unwrap();
        assert_eq!(
            path_on_site(&origin, "/ui?x=1#top").as_deref(),
            Some("/ui?x=1")
        );
        assert_eq!(path_on_site(&origin, "ui").as_deref(), Some("/ui"));
        assert_eq!(
            path_on_site(&origin, "http://127.0.0.1:9292/api/session").as_deref(),
            Some("/api/session")
        );
        for foreign in [
            "//evil.example",
            "/.//evil.example",
            "https://evil.example/ui",
            "/\\evil",
        ] {
            assert_eq!(path_on_site(&origin, foreign), None, "{foreign}");
        }
    }

    #[test]
    fn a_clients_text_is_quoted_escaped_and_short() {
        assert_eq!(
            log_text::quoted("access_denied", MAX_QUOTED_CHARS),
            r#""access_denied""#
        );
        let forged = "x\n[time INFO  sliced::audit] {\"user\":\"mallory\"}\r\u{1b}[2J";
        let shown = log_text::quoted(forged, MAX_QUOTED_CHARS);
        assert!(!shown.chars().any(char::is_control), "{shown}");
        assert!(shown.contains(r"x\n[time"), "{shown}");
        let long = log_text::quoted(&"é".repeat(10_000), MAX_QUOTED_CHARS);
        assert_eq!(long.chars().count(), MAX_QUOTED_CHARS + 2 + 3, "{long}");
        assert!(long.ends_with("\"..."));

        let line = log_text::escaped(
            &format!("a\nb\t\u{2028}{}", "c".repeat(5000)),
            MAX_LOGGED_CHARS,
        );
        assert!(line.starts_with(r"a\nb\t\u{2028}ccc"), "{line}");
        assert!(!line.chars().any(char::is_control));
        // 1000 characters kept, three of them escaped (`\n`, `\t`, `\u{2028}`), then "...".
        assert_eq!(line.chars().count(), MAX_LOGGED_CHARS + 1 + 1 + 7 + 3);
    }

    #[test]
    fn the_error_page_escapes_what_it_quotes() {
        let page = error_page(
            StatusCode::BAD_REQUEST,
            "<script>alert('x')</script> & \"more\"",
        );
        assert!(
            page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;more&quot;")
        );
        assert!(!page.contains("<script>"));
    }
}

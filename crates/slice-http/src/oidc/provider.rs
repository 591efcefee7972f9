//! The OpenID provider as the login sees it: its metadata, found by discovery on the
//! first login that needs it (or at start-up) and kept; its key set, fetched again when an
//! ID token names a key it lacks; and the code exchange, the ID token's validation and
//! the userinfo request, all done by the `openidconnect` crate.
//!
//! A provider that is down or stalls must cost the daemon little: discovery and the key
//! set's fetch run as one task at a time whose outcome every waiting login shares (no
//! lock is held across a request), a failed discovery is not tried again before a
//! backoff that doubles up to [`MAX_BACKOFF`] (logins meanwhile answer 503 at once), and
//! every request to the provider gives up after short timeouts.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::watch;

use openidconnect::core::{
    CoreAuthDisplay, CoreAuthPrompt, CoreClientAuthMethod, CoreErrorResponseType, CoreGenderClaim,
    CoreJsonWebKey, CoreJsonWebKeySet, CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm,
    CoreProviderMetadata, CoreRevocableToken, CoreRevocationErrorResponse,
    CoreTokenIntrospectionResponse, CoreTokenType,
};
use openidconnect::{
    reqwest, AccessToken, AccessTokenHash, AdditionalClaims, AuthType, AuthorizationCode,
    ClaimsVerificationError, Client, ClientId, ClientSecret, EmptyExtraTokenFields,
    EndpointMaybeSet, EndpointNotSet, EndpointSet, IdToken, IdTokenFields, IssuerUrl, Nonce,
    OAuth2TokenResponse, PkceCodeVerifier, RedirectUrl, RequestTokenError, Scope,
    SignatureVerificationError, StandardErrorResponse, StandardTokenResponse, TokenResponse,
    UserInfoClaims,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ClientAuth, LoginError, OidcConfig, MAX_QUOTED_CHARS};
use crate::log_text;

/// The claims of an ID token or userinfo answer beyond the standard ones: the role claim
/// is among them, under the name the configuration gives it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub(super) struct OtherClaims(HashMap<String, Value>);

impl AdditionalClaims for OtherClaims {}

impl OtherClaims {
    /// The values of claim `name`: a string is one value, an array its strings. `None`
    /// when the claim is absent (or null), so that another source may be asked.
    pub(super) fn values(&self, name: &str) -> Option<Vec<String>> {
        match self.0.get(name)? {
            Value::Null => None,
            Value::String(value) => Some(vec![value.clone()]),
            Value::Array(values) => Some(
                values
                    .iter()
                    .filter_map(|value| value.as_str().map(str::to_owned))
                    .collect(),
            ),
            // A number or an object names no group: present, but giving no value.
            _ => Some(Vec::new()),
        }
    }
}

type IdTokenOf = IdToken<
    OtherClaims,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm,
>;

type TokenAnswer = StandardTokenResponse<
    IdTokenFields<
        OtherClaims,
        EmptyExtraTokenFields,
        CoreGenderClaim,
        CoreJweContentEncryptionAlgorithm,
        CoreJwsSigningAlgorithm,
    >,
    CoreTokenType,
>;

/// The crate's client as discovery makes it (authorization endpoint set, token and
/// userinfo endpoints as the provider lists them), with our claims in its tokens.
type ProviderClient = Client<
    OtherClaims,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    TokenAnswer,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// How long connecting to the provider may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the provider may stay silent on an open connection: one that accepts and
/// never answers is given up on after this.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one request to the provider may take in all, however it trickles in.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a whole discovery (metadata, then key set) or key set fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(12);

/// The wait after a failed discovery before the next is tried, doubled per failure...
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// ...up to this.
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The least time between two fetches of the key set for an unknown key, after the first:
/// a provider naming a key it does not list must not make every login fetch it again.
const KEY_REFETCH_INTERVAL: Duration = Duration::from_secs(10);

/// The provider as discovered: its metadata (with the key set) and the client built on it.
pub(super) struct Discovered {
    metadata: CoreProviderMetadata,
    client: ProviderClient,
    scopes: Vec<Scope>,
    /// How the client authenticates at the token endpoint.
    auth: ClientAuth,
}

impl Discovered {
    fn new(metadata: CoreProviderMetadata, config: &OidcConfig) -> Self {
        let auth = client_auth(
            config.token_endpoint_auth,
            metadata.token_endpoint_auth_methods_supported(),
        );
        // The crate form-urlencodes the id and the secret before Basic encodes them, as
        // RFC 6749 2.3.1 says (a secret with `+`, `/` or `=` depends on it).
        let client = ProviderClient::from_provider_metadata(
            metadata.clone(),
            ClientId::new(config.client_id.clone()),
            Some(ClientSecret::new(config.client_secret.clone())),
        )
        .set_redirect_uri(RedirectUrl::from_url(config.redirect_url.clone()))
        .set_auth_type(match auth {
            ClientAuth::Basic => AuthType::BasicAuth,
            ClientAuth::Post => AuthType::RequestBody,
        });
        let scopes = scopes_to_ask(config, metadata.scopes_supported().map(Vec::as_slice));
        Self {
            metadata,
            client,
            scopes,
            auth,
        }
    }

    pub(super) fn client(&self) -> &ProviderClient {
        &self.client
    }

    /// The scopes a login asks for, `openid` aside (the crate adds it).
    pub(super) fn scopes(&self) -> &[Scope] {
        &self.scopes
    }
}

/// The configured method; or else the first of the provider's list that the daemon can
/// use; or else HTTP Basic, which a provider that lists nothing must take (OpenID Connect
/// Discovery 1.0, section 3). A provider that lists methods but neither of these gets
/// Basic too: its token endpoint then says `invalid_client`, which the log shows.
fn client_auth(
    configured: Option<ClientAuth>,
    supported: Option<&Vec<CoreClientAuthMethod>>,
) -> ClientAuth {
    configured
        .or_else(|| {
            supported?.iter().find_map(|method| match method {
                CoreClientAuthMethod::ClientSecretBasic => Some(ClientAuth::Basic),
                CoreClientAuthMethod::ClientSecretPost => Some(ClientAuth::Post),
                _ => None,
            })
        })
        .unwrap_or(ClientAuth::Basic)
}

/// The configured scopes; or else `email`, `profile`, and the role claim's name when the
/// provider offers a scope of that name (as Dex and many others do for `groups`): asking
/// for a scope a provider does not know fails the whole login at some providers.
fn scopes_to_ask(config: &OidcConfig, supported: Option<&[Scope]>) -> Vec<Scope> {
    let names: Vec<String> = match &config.scopes {
        Some(configured) => configured.clone(),
        None => {
            let mut names = vec!["email".to_owned(), "profile".to_owned()];
            let offered =
                supported.is_some_and(|scopes| scopes.iter().any(|s| **s == config.role_claim));
            if offered && !names.contains(&config.role_claim) {
                names.push(config.role_claim.clone());
            }
            names
        }
    };
    names
        .into_iter()
        .filter(|name| name != "openid")
        .map(Scope::new)
        .collect()
}

/// The provider of a configuration, discovered once and kept.
pub(super) struct Provider {
    config: OidcConfig,
    http: reqwest::Client,
    /// Never held across an await: what waits on the provider waits on a [`Fetch`].
    state: Arc<Mutex<State>>,
}

/// A fetch's outcome, `None` until it is done; every login that waits for it gets it.
type Fetched = Option<Result<Arc<Discovered>, String>>;

/// A fetch from the provider under way (discovery, or the key set again).
type Fetch = watch::Receiver<Fetched>;

/// Where discovery stands.
#[derive(Default)]
struct State {
    discovered: Option<Arc<Discovered>>,
    /// The fetch under way, if any: at most one at a time.
    fetching: Option<Fetch>,
    /// Discoveries that failed in a row, and why the last did.
    failures: u32,
    last_error: String,
    /// No discovery is tried before this, after a failure.
    retry_at: Option<Instant>,
    /// When the key set was last fetched for an unknown key; `None` since discovery.
    keys_refetched: Option<Instant>,
    /// Why the last exchange with the provider failed, unless one went well since.
    trouble: Option<String>,
}

impl State {
    /// The fetch under way, unless its task is gone without an outcome (its runtime
    /// stopped), which leaves the place to a new one.
    fn fetch_under_way(&self) -> Option<Fetch> {
        self.fetching
            .as_ref()
            .filter(|fetch| fetch.has_changed().is_ok())
            .cloned()
    }
}

/// What the provider vouched for: the ID token's claims, and its access token for
/// userinfo.
pub(super) struct Vouched {
    pub(super) subject: String,
    pub(super) name: Option<String>,
    pub(super) preferred_username: Option<String>,
    pub(super) email: Option<String>,
    pub(super) role_values: Option<Vec<String>>,
    access_token: AccessToken,
}

impl Provider {
    pub(super) fn new(config: OidcConfig) -> Result<Self, String> {
        let http = reqwest::ClientBuilder::new()
            // The crate's advice: a provider's redirect followed by the client is a way
            // to make the daemon request any URL (SSRF).
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .timeout(PROVIDER_TIMEOUT)
            // Logins are rare, and each actix worker runs its own runtime: no pooled
            // connection outlives the request that opened it.
            .pool_max_idle_per_host(0)
            .build()
            .map_err(|err| format!("cannot build the OpenID Connect HTTP client: {err}"))?;
        Ok(Self {
            config,
            http,
            state: Arc::default(),
        })
    }

    pub(super) fn config(&self) -> &OidcConfig {
        &self.config
    }

    /// Keeps what an exchange with the provider showed of it for [`Self::trouble`]: a
    /// provider that fails or refuses the daemon's client is trouble, one that answers
    /// (whatever it says of the user's code) is none.
    fn noted<T>(&self, outcome: Result<T, LoginError>) -> Result<T, LoginError> {
        let mut state = self.state.lock();
        match &outcome {
            Err(LoginError::Provider(why) | LoginError::Misconfigured(why)) => {
                state.trouble = Some(why.clone());
            }
            _ => state.trouble = None,
        }
        outcome
    }

    /// Why logins cannot work now, if the last exchange with the provider showed it; see
    /// [`super::Oidc::trouble`]. A failed discovery whose backoff is over is started again.
    pub(super) fn trouble(&self) -> Option<String> {
        let mut state = self.state.lock();
        let retry_due = state.discovered.is_none()
            && state.failures > 0
            && state.retry_at.map_or(true, |at| at <= Instant::now())
            && state.fetch_under_way().is_none();
        if retry_due {
            let fetch = self.spawn_discovery();
            state.fetching = Some(fetch);
        }
        state.trouble.clone()
    }

    /// The provider's metadata if discovered already: what a login can have without
    /// waiting.
    pub(super) fn kept(&self) -> Option<Arc<Discovered>> {
        self.state.lock().discovered.clone()
    }

    /// The provider's metadata: kept from an earlier discovery, or discovered now. One
    /// discovery at a time, which every caller shares; after a failure none before its
    /// backoff is over, and meanwhile a 503 at once with what went wrong.
    pub(super) async fn discovered(&self) -> Result<Arc<Discovered>, LoginError> {
        let fetch = {
            let mut state = self.state.lock();
            if let Some(discovered) = &state.discovered {
                return Ok(Arc::clone(discovered));
            }
            match state.fetch_under_way() {
                Some(fetch) => fetch,
                None => {
                    let now = Instant::now();
                    if let Some(retry_at) = state.retry_at.filter(|at| *at > now) {
                        let wait = (retry_at - now).as_secs_f64().ceil();
                        return Err(LoginError::Provider(format!(
                            "{}; logins try again in {wait} s",
                            state.last_error
                        )));
                    }
                    let fetch = self.spawn_discovery();
                    state.fetching = Some(fetch.clone());
                    fetch
                }
            }
        };
        outcome_of(fetch).await
    }

    /// Starts a discovery as a task of its own: a login that stops waiting (its client
    /// left) leaves it to the others, and it ends within [`FETCH_TIMEOUT`] anyway.
    fn spawn_discovery(&self) -> Fetch {
        let (done, fetch) = watch::channel(None);
        let (config, http, state) = (
            self.config.clone(),
            self.http.clone(),
            Arc::clone(&self.state),
        );
        tokio::spawn(async move {
            let result = match tokio::time::timeout(FETCH_TIMEOUT, discover(&config, &http)).await {
                Ok(result) => result,
                Err(_) => Err(format!(
                    "the OpenID provider {} cannot be discovered: no answer within {} s",
                    config.issuer,
                    FETCH_TIMEOUT.as_secs()
                )),
            };
            let mut state = state.lock();
            state.fetching = None;
            match &result {
                Ok(discovered) => {
                    log::info!(
                        "OpenID provider {} discovered ({} signing keys; the client \
                         authenticates with {})",
                        config.issuer,
                        discovered.metadata.jwks().keys().len(),
                        discovered.auth.name()
                    );
                    warn_of_unlisted_auth(&config, &discovered.metadata);
                    state.discovered = Some(Arc::clone(discovered));
                    state.failures = 0;
                    state.retry_at = None;
                    state.trouble = None;
                }
                Err(err) => {
                    let backoff = backoff_after(state.failures);
                    state.failures = state.failures.saturating_add(1);
                    state.retry_at = Some(Instant::now() + backoff);
                    state.last_error.clone_from(err);
                    state.trouble = Some(err.clone());
                    // At most one line per backoff: logins cannot make more.
                    log::warn!(
                        "{err}; OpenID Connect logins answer 503 until it can be, and the \
                         next login tries again in {} s at the earliest",
                        backoff.as_secs()
                    );
                }
            }
            // Nobody waiting is no failure.
            let _ = done.send(Some(result));
        });
        fetch
    }

    /// The provider with its key set fetched again, when a token names a key the kept
    /// set lacks (the provider rotated its keys); the kept one if it was fetched lately.
    /// Logins that need it at once share one fetch.
    async fn with_fresh_keys(
        &self,
        stale: &Arc<Discovered>,
    ) -> Result<Arc<Discovered>, LoginError> {
        let fetch = {
            let mut state = self.state.lock();
            if let Some(fetch) = state.fetch_under_way() {
                fetch
            } else {
                let lately = state
                    .keys_refetched
                    .is_some_and(|at| at.elapsed() < KEY_REFETCH_INTERVAL);
                match &state.discovered {
                    Some(current) if !Arc::ptr_eq(current, stale) || lately => {
                        return Ok(Arc::clone(current));
                    }
                    _ => {}
                }
                state.keys_refetched = Some(Instant::now());
                let fetch = self.spawn_key_fetch(Arc::clone(stale));
                state.fetching = Some(fetch.clone());
                fetch
            }
        };
        outcome_of(fetch).await
    }

    fn spawn_key_fetch(&self, stale: Arc<Discovered>) -> Fetch {
        let (done, fetch) = watch::channel(None);
        let (config, http, state) = (
            self.config.clone(),
            self.http.clone(),
            Arc::clone(&self.state),
        );
        tokio::spawn(async move {
            let keys = CoreJsonWebKeySet::fetch_async(stale.metadata.jwks_uri(), &http);
            let result = match tokio::time::timeout(FETCH_TIMEOUT, keys).await {
                Ok(Ok(keys)) => {
                    log::info!(
                        "OpenID provider {}: key set fetched again ({} keys)",
                        config.issuer,
                        keys.keys().len()
                    );
                    let metadata = stale.metadata.clone().set_jwks(keys);
                    Ok(Arc::new(Discovered::new(metadata, &config)))
                }
                Ok(Err(err)) => Err(format!(
                    "cannot fetch the OpenID provider's keys: {}",
                    chain(&err)
                )),
                Err(_) => Err(format!(
                    "cannot fetch the OpenID provider's keys: no answer within {} s",
                    FETCH_TIMEOUT.as_secs()
                )),
            };
            let mut state = state.lock();
            state.fetching = None;
            match &result {
                Ok(fresh) => {
                    state.discovered = Some(Arc::clone(fresh));
                    state.trouble = None;
                }
                Err(err) => state.trouble = Some(err.clone()),
            }
            let _ = done.send(Some(result));
        });
        fetch
    }

    /// Exchanges `code` (with the PKCE verifier) for tokens and validates the ID token:
    /// issuer, audience, expiry, signature by a key of the provider's, and `nonce`.
    pub(super) async fn redeem(
        &self,
        discovered: Arc<Discovered>,
        code: String,
        verifier: String,
        nonce: &Nonce,
    ) -> Result<Vouched, LoginError> {
        let request = discovered
            .client
            .exchange_code(AuthorizationCode::new(code))
            .map_err(|err| {
                LoginError::Provider(format!("the provider has no token endpoint: {err}"))
            })?
            .set_pkce_verifier(PkceCodeVerifier::new(verifier));
        let answer = request.request_async(&self.http).await;
        let answer = self.noted(answer.map_err(|err| match err {
            RequestTokenError::ServerResponse(refusal) => {
                // The provider's own words, which it may fill with anything: quoted short.
                let said = log_text::quoted(&refusal.to_string(), MAX_QUOTED_CHARS);
                match refusal.error() {
                    CoreErrorResponseType::InvalidClient
                    | CoreErrorResponseType::UnauthorizedClient => {
                        LoginError::Misconfigured(format!(
                            "the OpenID provider refuses this daemon's client {:?} \
                             ({} at its token endpoint): it answered {said}; check \
                             auth.oidc.client_id, client_secret_file and \
                             token_endpoint_auth_method against the client registered there",
                            self.config.client_id,
                            discovered.auth.name()
                        ))
                    }
                    _ => LoginError::BadRequest(format!(
                        "the OpenID provider refused the authorization code: {said}"
                    )),
                }
            }
            other => LoginError::Provider(format!(
                "the OpenID provider's token endpoint failed: {}",
                chain(&other)
            )),
        }))?;
        let id_token = answer
            .id_token()
            .ok_or_else(|| LoginError::Provider("the OpenID provider sent no ID token".into()))?;
        let role_claim = &self.config.role_claim;
        match vouch(
            &discovered,
            id_token,
            nonce,
            answer.access_token(),
            role_claim,
        ) {
            Err(LoginError::UnknownKey) => {
                let fresh = self.with_fresh_keys(&discovered).await?;
                vouch(&fresh, id_token, nonce, answer.access_token(), role_claim).map_err(|err| {
                    match err {
                        LoginError::UnknownKey => LoginError::Token(
                            "the ID token is signed by a key the provider does not list".into(),
                        ),
                        other => other,
                    }
                })
            }
            other => other,
        }
    }

    /// Fills what the ID token left out (the role claim, the name, the e-mail address)
    /// from the userinfo endpoint, whose subject must be the token's.
    pub(super) async fn complete(
        &self,
        discovered: &Discovered,
        mut vouched: Vouched,
    ) -> Result<Vouched, LoginError> {
        let complete = vouched.role_values.is_some()
            && (vouched.name.is_some() || vouched.preferred_username.is_some())
            && vouched.email.is_some();
        if complete {
            return Ok(vouched);
        }
        let Ok(request) = discovered.client.user_info(
            vouched.access_token.clone(),
            Some(openidconnect::SubjectIdentifier::new(
                vouched.subject.clone(),
            )),
        ) else {
            // No userinfo endpoint: the token is all there is.
            return Ok(vouched);
        };
        let info: Result<UserInfoClaims<OtherClaims, CoreGenderClaim>, _> =
            request.request_async(&self.http).await;
        let info = match info {
            Ok(info) => info,
            // Only the role is worth failing a login for.
            Err(err) if vouched.role_values.is_some() => {
                log::warn!(
                    "OpenID userinfo failed, the ID token's claims are used: {}",
                    chain(&err)
                );
                return Ok(vouched);
            }
            Err(err) => {
                return self.noted(Err(LoginError::Provider(format!(
                    "the OpenID provider's userinfo endpoint failed: {}",
                    chain(&err)
                ))))
            }
        };
        vouched.name = vouched.name.or_else(|| {
            info.name()
                .and_then(|name| name.get(None))
                .map(|name| name.to_string())
        });
        vouched.preferred_username = vouched
            .preferred_username
            .or_else(|| info.preferred_username().map(|name| name.to_string()));
        vouched.email = vouched
            .email
            .or_else(|| info.email().map(|email| email.to_string()));
        vouched.role_values = vouched
            .role_values
            .or_else(|| info.additional_claims().values(&self.config.role_claim));
        Ok(vouched)
    }
}

/// A configured client authentication method the provider does not list is worth a
/// warning (the token endpoint will likely refuse it), not a refusal: some providers'
/// lists are incomplete.
fn warn_of_unlisted_auth(config: &OidcConfig, metadata: &CoreProviderMetadata) {
    let (Some(configured), Some(listed)) = (
        config.token_endpoint_auth,
        metadata.token_endpoint_auth_methods_supported(),
    ) else {
        return;
    };
    let named = |method: &CoreClientAuthMethod| {
        serde_json::to_value(method)
            .ok()
            .and_then(|value| value.as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    if !listed
        .iter()
        .any(|method| named(method) == configured.name())
    {
        let listed: Vec<String> = listed.iter().map(named).collect();
        log::warn!(
            "auth.oidc.token_endpoint_auth_method is {} but the OpenID provider {} lists only \
             {}: logins will likely fail with invalid_client",
            configured.name(),
            config.issuer,
            log_text::escaped(&listed.join(", "), MAX_QUOTED_CHARS)
        );
    }
}

/// Discovers the provider: its metadata, then its key set.
async fn discover(config: &OidcConfig, http: &reqwest::Client) -> Result<Arc<Discovered>, String> {
    let cannot = |text: String| {
        format!(
            "the OpenID provider {} cannot be discovered: {text}",
            config.issuer
        )
    };
    let issuer =
        IssuerUrl::new(config.issuer.clone()).map_err(|err| cannot(format!("bad URL: {err}")))?;
    let metadata = CoreProviderMetadata::discover_async(issuer, http)
        .await
        .map_err(|err| cannot(chain(&err)))?;
    Ok(Arc::new(Discovered::new(metadata, config)))
}

/// How long to wait after `failures` discoveries failed in a row, and one more.
fn backoff_after(failures: u32) -> Duration {
    FIRST_BACKOFF
        .saturating_mul(2u32.saturating_pow(failures))
        .min(MAX_BACKOFF)
}

/// The outcome of a fetch, once its task sends it.
async fn outcome_of(mut fetch: Fetch) -> Result<Arc<Discovered>, LoginError> {
    let outcome = match fetch.wait_for(Option::is_some).await {
        Ok(outcome) => outcome.clone(),
        // The task is gone without an outcome: its runtime stopped.
        Err(_) => None,
    };
    match outcome {
        Some(Ok(discovered)) => Ok(discovered),
        Some(Err(err)) => Err(LoginError::Provider(err)),
        None => Err(LoginError::Provider(
            "the request to the OpenID provider was stopped".into(),
        )),
    }
}

/// Validates the ID token against the provider's keys as kept, and the access token's
/// hash when the token carries one (so that no other access token was slipped in), and
/// reads what it vouches for.
fn vouch(
    discovered: &Discovered,
    id_token: &IdTokenOf,
    nonce: &Nonce,
    access_token: &AccessToken,
    role_claim: &str,
) -> Result<Vouched, LoginError> {
    let verifier = discovered.client.id_token_verifier();
    let claims = match id_token.claims(&verifier, nonce) {
        Ok(claims) => claims,
        Err(ClaimsVerificationError::SignatureVerification(
            SignatureVerificationError::NoMatchingKey,
        )) => return Err(LoginError::UnknownKey),
        Err(err) => return Err(LoginError::Token(chain(&err))),
    };
    if let Some(expected) = claims.access_token_hash() {
        let token_error = |err: &dyn std::error::Error| LoginError::Token(chain(err));
        let alg = id_token.signing_alg().map_err(|err| token_error(&err))?;
        let key = id_token
            .signing_key(&verifier)
            .map_err(|err| token_error(&err))?;
        let actual =
            AccessTokenHash::from_token(access_token, alg, key).map_err(|err| token_error(&err))?;
        if actual != *expected {
            return Err(LoginError::Token(
                "the access token does not match the ID token's at_hash".into(),
            ));
        }
    }
    Ok(Vouched {
        subject: claims.subject().to_string(),
        name: claims
            .name()
            .and_then(|name| name.get(None))
            .map(|name| name.to_string()),
        preferred_username: claims.preferred_username().map(|name| name.to_string()),
        email: claims.email().map(|email| email.to_string()),
        role_values: claims.additional_claims().values(role_claim),
        access_token: access_token.clone(),
    })
}

/// An error with its causes, as one line.
pub(super) fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text = format!("{text}: {cause_text}");
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(scopes: Option<Vec<&str>>, role_claim: &str) -> OidcConfig {
        OidcConfig {
            issuer: "https://id.example.com".into(),
            client_id: "sliced".into(),
            client_secret: "s".into(),
            redirect_url: "https://sliced.example.com/auth/oidc/callback"
                .parse()
                .unwrap(),
            scopes: scopes.map(|names| names.into_iter().map(str::to_owned).collect()),
            role_claim: role_claim.into(),
            roles: crate::RoleMapping::default(),
            token_endpoint_auth: None,
        }
    }

    fn names(scopes: Vec<Scope>) -> Vec<String> {
        scopes.into_iter().map(|scope| scope.to_string()).collect()
    }

    #[test]
    fn the_role_claims_scope_is_asked_for_only_where_the_provider_offers_it() {
        let offered = [Scope::new("openid".into()), Scope::new("groups".into())];
        assert_eq!(
            names(scopes_to_ask(&config(None, "groups"), Some(&offered))),
            ["email", "profile", "groups"]
        );
        assert_eq!(
            names(scopes_to_ask(&config(None, "roles"), Some(&offered))),
            ["email", "profile"]
        );
        assert_eq!(
            names(scopes_to_ask(&config(None, "groups"), None)),
            ["email", "profile"]
        );
        assert_eq!(
            names(scopes_to_ask(
                &config(Some(vec!["openid", "groups"]), "groups"),
                None
            )),
            ["groups"]
        );
    }

    #[test]
    fn the_client_authenticates_as_configured_or_as_the_provider_lists_first() {
        use CoreClientAuthMethod as M;
        let listed = |methods: Vec<M>| Some(methods);
        assert_eq!(client_auth(None, None), ClientAuth::Basic);
        assert_eq!(
            client_auth(
                None,
                listed(vec![
                    M::PrivateKeyJwt,
                    M::ClientSecretPost,
                    M::ClientSecretBasic
                ])
                .as_ref()
            ),
            ClientAuth::Post
        );
        assert_eq!(
            client_auth(
                None,
                listed(vec![M::ClientSecretBasic, M::ClientSecretPost]).as_ref()
            ),
            ClientAuth::Basic
        );
        assert_eq!(
            client_auth(None, listed(vec![M::PrivateKeyJwt]).as_ref()),
            ClientAuth::Basic
        );
        assert_eq!(
            client_auth(
                Some(ClientAuth::Basic),
                listed(vec![M::ClientSecretPost]).as_ref()
            ),
            ClientAuth::Basic
        );
    }

    #[test]
    fn a_failed_discovery_waits_twice_as_long_as_the_last_up_to_a_bound() {
        let waits: Vec<u64> = (0..8).map(|n| backoff_after(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30, 30]);
        assert_eq!(backoff_after(u32::MAX), MAX_BACKOFF);
    }

    #[test]
    fn a_role_claim_is_a_string_or_an_array_of_strings() {
        let claims: OtherClaims =
            serde_json::from_str(r#"{"groups":["a","b",3],"role":"operator","n":null,"x":1}"#)
                .unwrap();
        assert_eq!(claims.values("groups"), Some(vec!["a".into(), "b".into()]));
        assert_eq!(claims.values("role"), Some(vec!["operator".into()]));
        assert_eq!(claims.values("n"), None);
        assert_eq!(claims.values("absent"), None);
        assert_eq!(claims.values("x"), Some(vec![]));
    }
}

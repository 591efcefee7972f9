//! The OpenID provider as the login sees it: its metadata, found by discovery on the
//! first login that needs it (or at start-up) and kept; its key set, fetched again when an
//! ID token names a key it lacks; and the code exchange, the ID token's validation and
//! the userinfo request, all done by the `openidconnect` crate.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openidconnect::core::{
    CoreAuthDisplay, CoreAuthPrompt, CoreErrorResponseType, CoreGenderClaim, CoreJsonWebKey,
    CoreJsonWebKeySet, CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm,
    CoreProviderMetadata, CoreRevocableToken, CoreRevocationErrorResponse,
    CoreTokenIntrospectionResponse, CoreTokenType,
};
use openidconnect::{
    reqwest, AccessToken, AccessTokenHash, AdditionalClaims, AuthorizationCode,
    ClaimsVerificationError, Client, ClientId, ClientSecret, EmptyExtraTokenFields,
    EndpointMaybeSet, EndpointNotSet, EndpointSet, IdToken, IdTokenFields, IssuerUrl, Nonce,
    OAuth2TokenResponse, PkceCodeVerifier, RedirectUrl, RequestTokenError, Scope,
    SignatureVerificationError, StandardErrorResponse, StandardTokenResponse, TokenResponse,
    UserInfoClaims,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{LoginError, OidcConfig};

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

/// How long a request to the provider may take: a login waits for it.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);

/// The least time between two fetches of the key set for an unknown key, after the first:
/// a provider naming a key it does not list must not make every login fetch it again.
const KEY_REFETCH_INTERVAL: Duration = Duration::from_secs(10);

/// The provider as discovered: its metadata (with the key set) and the client built on it.
pub(super) struct Discovered {
    metadata: CoreProviderMetadata,
    client: ProviderClient,
    scopes: Vec<Scope>,
    /// When the key set was last fetched for an unknown key; `None` since discovery.
    keys_refetched: Option<Instant>,
}

impl Discovered {
    fn new(
        metadata: CoreProviderMetadata,
        config: &OidcConfig,
        keys_refetched: Option<Instant>,
    ) -> Self {
        let client = ProviderClient::from_provider_metadata(
            metadata.clone(),
            ClientId::new(config.client_id.clone()),
            Some(ClientSecret::new(config.client_secret.clone())),
        )
        .set_redirect_uri(RedirectUrl::from_url(config.redirect_url.clone()));
        let scopes = scopes_to_ask(config, metadata.scopes_supported().map(Vec::as_slice));
        Self {
            metadata,
            client,
            scopes,
            keys_refetched,
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
    discovered: tokio::sync::Mutex<Option<Arc<Discovered>>>,
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
            .timeout(PROVIDER_TIMEOUT)
            // Logins are rare, and each actix worker runs its own runtime: no pooled
            // connection outlives the request that opened it.
            .pool_max_idle_per_host(0)
            .build()
            .map_err(|err| format!("cannot build the OpenID Connect HTTP client: {err}"))?;
        Ok(Self {
            config,
            http,
            discovered: tokio::sync::Mutex::new(None),
        })
    }

    pub(super) fn config(&self) -> &OidcConfig {
        &self.config
    }

    /// The provider's metadata: kept from an earlier discovery, or discovered now. One
    /// discovery at a time; a failed one is tried again by the next login.
    pub(super) async fn discovered(&self) -> Result<Arc<Discovered>, LoginError> {
        let mut kept = self.discovered.lock().await;
        if let Some(discovered) = kept.as_ref() {
            return Ok(Arc::clone(discovered));
        }
        let issuer = IssuerUrl::new(self.config.issuer.clone())
            .map_err(|err| LoginError::Provider(format!("bad issuer URL: {err}")))?;
        let metadata = CoreProviderMetadata::discover_async(issuer, &self.http)
            .await
            .map_err(|err| {
                LoginError::Provider(format!(
                    "the OpenID provider {} cannot be discovered: {}",
                    self.config.issuer,
                    chain(&err)
                ))
            })?;
        let discovered = Arc::new(Discovered::new(metadata, &self.config, None));
        log::info!(
            "OpenID provider {} discovered ({} signing keys)",
            self.config.issuer,
            discovered.metadata.jwks().keys().len()
        );
        *kept = Some(Arc::clone(&discovered));
        Ok(discovered)
    }

    /// The provider with its key set fetched again, when a token names a key the kept
    /// set lacks (the provider rotated its keys); the kept one if it was fetched lately.
    async fn with_fresh_keys(
        &self,
        stale: &Arc<Discovered>,
    ) -> Result<Arc<Discovered>, LoginError> {
        let mut kept = self.discovered.lock().await;
        if let Some(current) = kept.as_ref() {
            let lately = current
                .keys_refetched
                .is_some_and(|at| at.elapsed() < KEY_REFETCH_INTERVAL);
            if !Arc::ptr_eq(current, stale) || lately {
                return Ok(Arc::clone(current));
            }
        }
        let keys = CoreJsonWebKeySet::fetch_async(stale.metadata.jwks_uri(), &self.http)
            .await
            .map_err(|err| {
                LoginError::Provider(format!(
                    "cannot fetch the OpenID provider's keys: {}",
                    chain(&err)
                ))
            })?;
        log::info!(
            "OpenID provider {}: key set fetched again ({} keys)",
            self.config.issuer,
            keys.keys().len()
        );
        let metadata = stale.metadata.clone().set_jwks(keys);
        let fresh = Arc::new(Discovered::new(
            metadata,
            &self.config,
            Some(Instant::now()),
        ));
        *kept = Some(Arc::clone(&fresh));
        Ok(fresh)
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
        let answer = request
            .request_async(&self.http)
            .await
            .map_err(|err| match err {
                RequestTokenError::ServerResponse(refusal) => LoginError::BadRequest(format!(
                    "the OpenID provider refused the authorization code: {refusal}"
                )),
                other => LoginError::Provider(format!(
                    "the OpenID provider's token endpoint failed: {}",
                    chain(&other)
                )),
            })?;
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
                return Err(LoginError::Provider(format!(
                    "the OpenID provider's userinfo endpoint failed: {}",
                    chain(&err)
                )))
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

//! The REST application's settings from the daemon's: the session key, the logins and the
//! names the API answers to. What the controller adds (metrics, views) comes later.

use std::sync::Arc;

use actix_web::cookie::Key;
use anyhow::Context;

use crate::config::Config;
use crate::store::Backend;

/// The settings before the controller runs.
pub(crate) fn settings(config: &Config, backend: &Backend) -> anyhow::Result<slice_http::Settings> {
    let mut settings = slice_http::Settings::new(session_key(config, backend)?);
    if let Some(required) = config.require_auth {
        settings.require_auth_for_slices = required;
    }
    if let Some(allowed) = config.developer_login {
        settings.developer_login = allowed;
    }
    if let Some(secure) = config.secure_cookie {
        settings.secure_cookie = secure;
    }
    settings.session_ttl = config.session_ttl;
    settings.proxy = config.proxy.clone().map(Arc::new);
    settings.oidc = oidc(config)?;
    log_logins(&settings);
    settings.request_timeout = config.request_timeout;
    settings.max_apply_records = config.max_apply_records;
    settings.fabric_in_settings = config.links.fabric.is_declared();
    let http = &config.http;
    settings.host_policy =
        slice_http::HostPolicy::new(&http.resolved, Some(&http.written), &config.allowed_hosts);
    Ok(settings)
}

/// Says at start which logins are on, and warns where one lets anyone in.
fn log_logins(settings: &slice_http::Settings) {
    let mut logins = Vec::new();
    if let Some(oidc) = &settings.oidc {
        logins.push(format!("OpenID Connect through {}", oidc.issuer()));
    }
    if let Some(proxy) = &settings.proxy {
        let trusted: Vec<String> = proxy.trusted.iter().map(ToString::to_string).collect();
        logins.push(format!(
            "the proxy's {} header from {}",
            proxy.user_header,
            trusted.join(", ")
        ));
    }
    let real = !logins.is_empty();
    if settings.developer_login {
        logins.push("the developer login (anyone who reaches the API, as anyone)".to_owned());
    }
    if logins.is_empty() {
        log::warn!(
            "no login over HTTP: the developer login is off and neither [auth.proxy] nor \
             [auth.oidc] is set, so only the local socket (the slice tool) can reach the \
             guarded endpoints"
        );
        return;
    }
    log::info!("logins over HTTP: {}", logins.join("; "));
    if real && settings.developer_login {
        // Asked for with auth.developer_login = true: it undoes what the real login checks.
        log::warn!(
            "the developer login is on beside a real login: whoever reaches the API logs in \
             as anyone without a password"
        );
    }
}

fn session_key(config: &Config, backend: &Backend) -> anyhow::Result<Key> {
    Ok(match backend {
        // Shared through etcd, so that a session made on one instance is valid on all.
        Backend::Etcd(etcd) if config.session_key_shared => etcd
            .shared_session_key()
            .map_err(anyhow::Error::from)
            .and_then(|bytes| Ok(Key::try_from(bytes.as_slice())?))
            .context("cannot read or make the cluster's session key in etcd")?,
        _ => slice_cli::load_or_create_session_key(&config.session_key_file)
            .map_err(anyhow::Error::from)
            .and_then(|bytes| Ok(Key::try_from(bytes.as_slice())?))
            .with_context(|| {
                format!(
                    "cannot load the session key {}",
                    config.session_key_file.display()
                )
            })?,
    })
}

/// The OpenID Connect login, its provider discovered in the background.
fn oidc(config: &Config) -> anyhow::Result<Option<Arc<slice_http::Oidc>>> {
    let Some(oidc) = config.oidc.clone() else {
        return Ok(None);
    };
    // [auth.roles] maps the role claim's values, as it maps the proxy's header.
    let oidc = slice_http::OidcConfig {
        roles: config.roles.clone(),
        ..oidc
    };
    // A provider that stalls keeps the logins waiting on it: a quarter of the HTTP
    // connections at most, so that health checks and the API always find one.
    let oidc = slice_http::Oidc::new(oidc)
        .map_err(anyhow::Error::msg)?
        .with_waiting_logins(config.max_http_connections / 4);
    let oidc = Arc::new(oidc);
    // Discovered ahead of the first login, so that a wrong issuer shows in the log;
    // a provider that is down only delays the logins.
    actix_web::rt::spawn({
        let oidc = Arc::clone(&oidc);
        async move { oidc.discover().await }
    });
    Ok(Some(oidc))
}

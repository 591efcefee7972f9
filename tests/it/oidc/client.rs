//! The daemon as a client of its provider: how it authenticates at the token endpoint
//! (HTTP Basic or the request body, as configured or as the provider lists), what a
//! provider that refuses the daemon's client (a wrong secret, a wrong method) answers the
//! browser and tells the operator, and what a provider that cannot be reached shows to a
//! browser and to `/readyz`.

use std::time::Duration;

use serde_json::Value;

use super::{
    answer, api, browser, callback_for, log_in, visit, Provider, Registered, Sliced, LOG_FILTER,
};
use crate::common::free_port;
use crate::common::switch::eventually;

/// A browser's navigation asks for this.
const NAVIGATION: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

/// The provider with `client` registered, and a daemon configured with `secret` and
/// `oidc_keys` for it; `None` when the test skips.
fn pair_for(client: Registered<'_>, secret: &str, oidc_keys: &str) -> Option<(Provider, Sliced)> {
    let http = free_port();
    let provider = Provider::start_for(
        free_port(),
        &format!("http://{http}/auth/oidc/callback"),
        client,
    )?;
    let sliced = Sliced::start_as(http, &provider.issuer(), &[], LOG_FILTER, secret, oidc_keys);
    Some((provider, sliced))
}

/// The lines the daemon logged at WARN.
fn warnings(sliced: &Sliced) -> Vec<String> {
    sliced
        .log_text()
        .lines()
        .filter(|line| line.contains(" WARN "))
        .map(str::to_owned)
        .collect()
}

/// Goes through the provider as `login` and visits the callback as a browser would; the
/// status and the page.
fn callback_page(sliced: &Sliced, login: &str) -> (u16, String) {
    let http = browser();
    let callback = callback_for(&http, sliced, login);
    let page = answer(http.get(&callback).set("Accept", NAVIGATION).call());
    let status = page.status();
    let html = page.content_type().starts_with("text/html");
    let text = page.into_string().unwrap_or_default();
    assert!(html, "{status}: {text}");
    (status, text)
}

#[test]
fn oidc_a_wrong_client_secret_is_a_server_error_and_a_warning() {
    let Some((_provider, sliced)) =
        pair_for(Registered::default(), "not-the-secret-the-provider-has", "")
    else {
        return;
    };
    let (status, page) = callback_page(&sliced, "ada");
    assert_eq!(status, 500, "{page}");
    assert!(page.contains("Login is misconfigured"), "{page}");
    assert!(page.contains("invalid_client"), "{page}");
    assert!(page.contains("/ui/style.css"), "{page}");
    // As JSON, the same reason.
    let http = browser();
    let (status, _, body) = visit(&http, &callback_for(&http, &sliced, "ada"));
    assert_eq!(status, 500, "{body}");
    let reason = body["error"].as_str().unwrap_or_default();
    assert!(
        reason.contains("invalid_client") && reason.contains("client_secret_file"),
        "{reason}"
    );
    // The operator is warned, with the provider's answer, escaped and on one line.
    let warned = warnings(&sliced);
    assert!(
        warned
            .iter()
            .any(|line| line.contains("login impossible") && line.contains("invalid_client")),
        "{warned:?}"
    );
    // Readiness holds (the API serves everyone else), but names the login as degraded.
    let (status, ready) = api(&browser(), &sliced, "GET", "/readyz", None);
    assert_eq!(status, 200, "{ready}");
    assert_eq!(ready["degraded"], serde_json::json!(["oidc"]), "{ready}");
}

#[test]
fn oidc_a_secret_with_form_characters_goes_form_urlencoded_in_basic() {
    // `+`, `/` and `=` mean something in a form: RFC 6749 2.3.1 has the id and secret
    // form-urlencoded before the Basic encoding, and the provider decodes them so.
    let secret = "a+b/c=d%e f";
    let client = Registered {
        secret,
        ..Registered::default()
    };
    let Some((_provider, sliced)) = pair_for(client, secret, "") else {
        return;
    };
    let ada = browser();
    log_in(&ada, &sliced, "ada");
    assert_eq!(
        api(&ada, &sliced, "GET", "/api/session", None).1["role"],
        "operator"
    );
}

#[test]
fn oidc_the_client_authenticates_in_the_body_as_configured_or_as_the_provider_lists() {
    let post = Registered {
        auth_method: "client_secret_post",
        ..Registered::default()
    };
    // Unset: the provider lists client_secret_post first, and the daemon uses it.
    let secret = Registered::default().secret;
    let Some((_provider, sliced)) = pair_for(post, secret, "") else {
        return;
    };
    log_in(&browser(), &sliced, "ada");
    assert!(
        sliced
            .log_text()
            .contains("authenticates with client_secret_post"),
        "{}",
        sliced.log_text()
    );
    drop(sliced);
    // Set, it is used whatever the provider lists.
    let Some((_provider, sliced)) = pair_for(
        post,
        secret,
        r#"token_endpoint_auth_method = "client_secret_post""#,
    ) else {
        return;
    };
    log_in(&browser(), &sliced, "ada");
    // Set to a method the client is not registered with: the provider refuses the
    // daemon, which says so to the browser and warns the operator.
    let Some((_provider, sliced)) = pair_for(
        post,
        secret,
        r#"token_endpoint_auth_method = "client_secret_basic""#,
    ) else {
        return;
    };
    let (status, page) = callback_page(&sliced, "ada");
    assert_eq!(status, 500, "{page}");
    assert!(page.contains("invalid_client"), "{page}");
    assert!(
        warnings(&sliced)
            .iter()
            .any(|line| line.contains("login impossible")),
        "{:?}",
        warnings(&sliced)
    );
}

#[test]
fn oidc_an_unreachable_provider_is_a_page_to_a_browser_and_degrades_readiness() {
    let provider_addr = free_port();
    let http = free_port();
    let sliced = Sliced::start(http, &format!("http://{provider_addr}"));
    let page = answer(
        browser()
            .get(&sliced.url("/auth/oidc/login?next=%2Fui"))
            .set("Accept", NAVIGATION)
            .call(),
    );
    assert_eq!(page.status(), 503);
    assert!(page.content_type().starts_with("text/html"));
    assert!(page.header("Retry-After").is_some());
    let text = page.into_string().unwrap_or_default();
    assert!(
        text.contains("Login provider unreachable") && text.contains("cannot be reached"),
        "{text}"
    );
    // Ready, degraded: anyone sees which part (a vouched requester also why).
    let degraded = || {
        let (status, body) = api(&browser(), &sliced, "GET", "/readyz", None);
        status == 200 && body["degraded"] == serde_json::json!(["oidc"])
    };
    assert!(eventually(Duration::from_secs(60), degraded));
    let Some(_provider) = Provider::start(provider_addr, &sliced.url("/auth/oidc/callback")) else {
        return;
    };
    // Probes alone, without a login, see the provider come back.
    let recovered = || {
        let (status, body): (u16, Value) = api(&browser(), &sliced, "GET", "/readyz", None);
        status == 200 && body.get("degraded").is_none()
    };
    assert!(
        eventually(Duration::from_secs(120), recovered),
        "{}",
        sliced.log_text()
    );
}

//! The web view's login through a real OpenID provider, in a real browser (headless
//! Chromium over WebDriver): `/ui` sends the browser to the provider, whose login page it
//! fills in, and the provider sends it back to the view, which names the user. Leaves a
//! screenshot at `target/ui-oidc-screenshot.png` (or in `CARGO_TARGET_DIR`).

use fantoccini::Locator;

use super::{save_screenshot, until, Driver};
use crate::common::free_port;
use crate::oidc::{Provider, Sliced};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oidc_the_web_view_logs_in_through_the_provider() {
    let Some(driver) = Driver::start() else {
        return;
    };
    let http = free_port();
    let Some(provider) = Provider::start(free_port(), &format!("http://{http}/auth/oidc/callback"))
    else {
        return;
    };
    let sliced = Sliced::start(http, &provider.issuer());
    let browser = driver.browser().await;

    browser
        .goto(&sliced.url("/ui"))
        .await
        .expect("the view opens");
    // Sent to the provider's login page.
    let provider_page = format!("location.origin === {:?}", provider.issuer());
    until(
        &browser,
        &format!("{provider_page} && document.querySelector('input[name=login]')"),
    )
    .await;
    let field = |name: &'static str| browser.find(Locator::Css(name));
    field("input[name=login]")
        .await
        .expect("a login field")
        .send_keys("ada")
        .await
        .unwrap();
    field("input[name=password]")
        .await
        .expect("a password field")
        .send_keys("any password")
        .await
        .unwrap();
    field("button[type=submit]")
        .await
        .expect("a sign-in button")
        .click()
        .await
        .unwrap();

    // Back on the view, logged in as the provider's user.
    let view = format!("location.href === {:?}", sliced.url("/ui"));
    until(
        &browser,
        &format!("{view} && document.getElementById('user').textContent.includes('Ada Lovelace')"),
    )
    .await;
    let shown = browser
        .find(Locator::Id("user"))
        .await
        .expect("the user's name")
        .text()
        .await
        .unwrap();
    assert_eq!(shown, "Ada Lovelace <ada@example.com>");

    save_screenshot(&browser, "ui-oidc-screenshot.png").await;
    browser.close().await.expect("the browser closes");
    drop(sliced);
}

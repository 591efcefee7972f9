//! How the guard says no. The contract fixes the body of an unauthenticated `/api/`
//! request byte for byte (`{"status":"forbidden"}`), so the reason travels beside it, in
//! the [`REFUSAL_HEADER`] response header, on every refusal of the guard's. A browser
//! that navigates to a page outside `/api/` (the web view, the slice API under
//! `--require-auth`) gets a page instead, saying the same and where to log in; under
//! `/api/` even a browser gets the contract's body, as a script would.

use actix_web::body::BoxBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::Next;
use actix_web::{web, HttpRequest, HttpResponse};

use super::{login_returning_to, requester, wants_html, Status};
use crate::page::{escape_html, UI_PATH};
use crate::Settings;

/// The response header with the reason of a refusal, in words (`login required`).
pub(crate) const REFUSAL_HEADER: &str = "x-sliced-refusal";

/// Why the guard refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Nothing vouches for the requester: no session, no trusted proxy's user with a
    /// role, not the local socket.
    LoginRequired,
    /// The requester may read but not write.
    ViewerCannotWrite,
}

impl Refusal {
    /// The reason as [`REFUSAL_HEADER`] carries it.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Self::LoginRequired => "login required",
            Self::ViewerCannotWrite => "viewers cannot write",
        }
    }
}

/// The answer to a request the guard refused: 403 with the contract's body and the
/// reason in [`REFUSAL_HEADER`]; to a browser asking for a page outside `/api/`, a page
/// that says why and links to the login (or says there is none).
pub(crate) fn refused(req: &HttpRequest, refusal: Refusal) -> HttpResponse {
    let under_api = req.path() == "/api" || req.path().starts_with("/api/");
    if wants_html(req) && !under_api {
        return crate::page::html_page()
            .status(actix_web::http::StatusCode::FORBIDDEN)
            .insert_header((REFUSAL_HEADER, refusal.reason()))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .body(page(req, refusal));
    }
    HttpResponse::Forbidden()
        .insert_header((REFUSAL_HEADER, refusal.reason()))
        .json(Status {
            status: "forbidden",
        })
}

/// The refusal as a page: what happened in words, and the way on.
fn page(req: &HttpRequest, refusal: Refusal) -> String {
    let login = req
        .app_data::<web::Data<Settings>>()
        .and_then(|settings| settings.login_page());
    let body = match (refusal, login) {
        (Refusal::LoginRequired, Some(login)) => format!(
            "<p>This page needs a login.</p>\n<p><a href=\"{}\">Log in</a></p>\n",
            escape_html(&login_returning_to(login, UI_PATH))
        ),
        (Refusal::LoginRequired, None) => "<p>This page needs a login, and this daemon \
             offers none in the browser: its developer login is off and no OpenID Connect \
             provider is configured.</p>\n<p>Reach it through the authenticating proxy in \
             front of it, if it has one. Its operator can use the <code>slice</code> tool on \
             the daemon's machine, or configure a login (<code>[auth.oidc]</code> in the \
             settings file).</p>\n"
            .to_owned(),
        (Refusal::ViewerCannotWrite, _) => "<p>You are logged in as a viewer: you can look \
             at the network and the slices, not change them. Ask the operator for the \
             operator role.</p>\n"
            .to_owned(),
    };
    let title = match refusal {
        Refusal::LoginRequired => "Login required",
        Refusal::ViewerCannotWrite => "Viewers cannot write",
    };
    crate::page::document(title, &body)
}

/// In front of the web view: its page, asked by someone nothing vouches for on a daemon
/// without a login page to send them to, is refused here as the guard refuses, so that
/// a browser learns why; with a login page the view sends the browser there itself.
/// The view's scripts and styles pass: the login pages use them.
pub(crate) async fn guard_view(
    req: ServiceRequest,
    next: Next<impl actix_web::body::MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let no_login = req
        .app_data::<web::Data<Settings>>()
        .is_some_and(|settings| settings.login_page().is_none());
    if no_login && req.path() == UI_PATH && matches!(requester(req.request()), Ok(None)) {
        let (req, _payload) = req.into_parts();
        let response = refused(&req, Refusal::LoginRequired);
        return Ok(ServiceResponse::new(req, response));
    }
    Ok(next.call(req).await?.map_into_boxed_body())
}

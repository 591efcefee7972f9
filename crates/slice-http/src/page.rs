//! What every HTML page of the daemon shares (the web view, the login pages): where the
//! view lives and the headers such a page is served with. A leaf, so that the logins and
//! the view can both use it without using each other.

use actix_web::http::header::{self, ContentType};
use actix_web::{HttpResponse, HttpResponseBuilder};

/// Where the page is served; the login sends the browser back here.
pub(crate) const UI_PATH: &str = "/ui";

/// Same-origin scripts, styles and requests only: no inline script or style can run even
/// if some text were ever to slip into the page as markup, and no other site may frame it.
pub(crate) const PAGE_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; \
    frame-ancestors 'none'";

/// A 200 answer carrying an HTML page of the daemon's (the view, the login form), with the
/// headers every such page needs: the policy above, no sniffing of another media type, and
/// no `Referer` that would carry the page's URL (and its `?next=`) to another site.
pub(crate) fn html_page() -> HttpResponseBuilder {
    let mut response = HttpResponse::Ok();
    response
        .content_type(ContentType::html())
        .insert_header((header::CONTENT_SECURITY_POLICY, PAGE_POLICY))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"));
    response
}

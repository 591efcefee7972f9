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

/// A page of the daemon's own besides the view (a login form, why a login failed, why a
/// request was refused): `body` (markup, its text already escaped) under `title`, with the
/// view's stylesheet and header so that it looks like the rest of the daemon. The policy
/// above allows no inline style, hence the stylesheet.
pub(crate) fn document(title: &str, body: &str) -> String {
    let title = escape_html(title);
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sliced: {title}</title>
<link rel="stylesheet" href="{UI_PATH}/style.css">
</head>
<body>
<header><h1>sliced</h1></header>
<main><section>
<h2>{title}</h2>
{body}</section></main>
</body></html>
"#
    )
}

/// `text` as HTML text or an attribute value: nothing of it can become markup.
pub(crate) fn escape_html(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            _ => escaped.push(c),
        }
    }
    escaped
}

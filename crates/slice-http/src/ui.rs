//! `GET /ui`: the live web view, a page and its scripts built into the binary so that it
//! needs nothing from the internet. The page reads and changes everything through the
//! session-guarded `/api/` endpoints and follows `/api/events`; the files here hold no
//! data, so only the page itself asks for a login. The daemon's front page `/` and
//! `/ui/` lead here, and the page carries the OpenFlow listeners for its empty-network
//! hint (`data-openflow`).

use actix_web::http::header;
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};

use crate::auth;
use crate::page::{html_page, UI_PATH};
use crate::routing::Mount;
use crate::ApiError;

/// A file of the page, with its media type.
struct Asset {
    path: &'static str,
    media_type: &'static str,
    bytes: &'static [u8],
}

const ASSETS: &[Asset] = &[
    Asset {
        path: "/app.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../assets/app.js"),
    },
    Asset {
        path: "/state.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../assets/state.js"),
    },
    Asset {
        path: "/graph.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../assets/graph.js"),
    },
    Asset {
        path: "/layout.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../assets/layout.js"),
    },
    Asset {
        path: "/panels.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../assets/panels.js"),
    },
    Asset {
        path: "/login.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../assets/login.js"),
    },
    Asset {
        path: "/style.css",
        media_type: "text/css; charset=utf-8",
        bytes: include_bytes!("../assets/style.css"),
    },
    Asset {
        path: "/vendor/cytoscape.min.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../assets/vendor/cytoscape.min.js"),
    },
];

const PAGE: &str = include_str!("../assets/index.html");

/// The attribute of the page's `<body>` that the server fills in with the OpenFlow
/// listeners, for the hint the page shows on a network without switches.
const OPENFLOW_SLOT: &str = "data-openflow=\"[]\"";

/// The page with `openflow` in its slot, as a JSON list escaped for an attribute.
fn page_naming(openflow: &[String]) -> String {
    let listeners = serde_json::json!(openflow).to_string();
    let mut escaped = String::with_capacity(listeners.len());
    for c in listeners.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            other => escaped.push(other),
        }
    }
    PAGE.replacen(OPENFLOW_SLOT, &format!("data-openflow=\"{escaped}\""), 1)
}

/// The page and its files, below [`UI_PATH`] (the scope that runs the session middleware
/// for them: the page shows the logged-in user).
pub(crate) fn routes(cfg: &mut impl Mount) {
    cfg.mount("", crate::routing::READ, |r| {
        r.route(crate::routing::readable(page))
    });
    // The view's one address is without the slash.
    cfg.mount("/", crate::routing::READ, |r| {
        r.route(crate::routing::readable(|| {
            redirect_to_view(StatusCode::PERMANENT_REDIRECT)
        }))
    });
    for asset in ASSETS {
        cfg.mount(asset.path, crate::routing::READ, |r| {
            r.route(crate::routing::readable(move || serve_asset(asset)))
        });
    }
}

/// The page for a logged-in browser (or the local socket's owner); anyone else is sent to
/// the developer login, which comes back here, or refused when there is no such login.
async fn page(
    req: HttpRequest,
    settings: web::Data<crate::Settings>,
) -> Result<HttpResponse, ApiError> {
    if auth::requester(&req)?.is_none() {
        let Some(login) = settings.login_page() else {
            return Ok(HttpResponse::Forbidden().json(auth::Status {
                status: "forbidden",
            }));
        };
        return Ok(HttpResponse::Found()
            .insert_header((header::LOCATION, auth::login_returning_to(login, UI_PATH)))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .finish());
    }
    Ok(html_page()
        // The page depends on who is logged in: never from a shared cache.
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(page_naming(&settings.openflow_addresses)))
}

/// `/`, on the application's root: the daemon's front page is the view. Temporary, so
/// that no browser keeps it should the root ever serve something of its own.
pub(crate) fn root_routes(cfg: &mut impl Mount) {
    cfg.mount("/", crate::routing::READ, |r| {
        r.route(crate::routing::readable(|| {
            redirect_to_view(StatusCode::FOUND)
        }))
    });
}

async fn redirect_to_view(status: StatusCode) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((header::LOCATION, UI_PATH))
        .finish()
}

async fn serve_asset(asset: &'static Asset) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, asset.media_type))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        // Built into the binary: a new release may change them, so ask again each time.
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(asset.bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::cookie::Key;
    use actix_web::http::StatusCode;
    use actix_web::test;
    use std::sync::Arc;

    #[actix_web::test]
    async fn the_page_needs_a_login_and_carries_a_strict_policy() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(slice_store::Store::open(dir.path()).unwrap());
        let service = test::init_service(crate::app(
            store,
            None,
            crate::Settings::new(Key::generate()),
        ))
        .await;
        let get = |uri: &str| {
            test::TestRequest::get()
                .uri(uri)
                .insert_header(("Host", "localhost"))
                .to_request()
        };
        let response = test::call_service(&service, get("/ui")).await;
        assert_eq!(response.status(), StatusCode::FOUND);
        assert_eq!(
            response.headers().get(header::LOCATION).unwrap(),
            "/auth/developer?next=%2Fui"
        );
        let login = test::TestRequest::post()
            .uri("/auth/developer/callback")
            .insert_header(("Host", "localhost"))
            .set_form([("name", "Dev"), ("email", "dev@example.com")])
            .to_request();
        let response = test::call_service(&service, login).await;
        assert_eq!(response.status(), StatusCode::OK);
        let session = response
            .response()
            .cookies()
            .find(|cookie| cookie.name() == crate::SESSION_COOKIE)
            .expect("the login sets the session cookie")
            .into_owned();
        let with_session = test::TestRequest::get()
            .uri("/ui")
            .insert_header(("Host", "localhost"))
            .cookie(session)
            .to_request();
        let response = test::call_service(&service, with_session).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response
                .headers()
                .get(header::CONTENT_SECURITY_POLICY)
                .unwrap(),
            crate::page::PAGE_POLICY
        );
        for asset in ASSETS {
            let path = format!("{UI_PATH}{}", asset.path);
            let response = test::call_service(&service, get(&path)).await;
            assert_eq!(response.status(), StatusCode::OK, "{}", asset.path);
            let body = test::read_body(response).await;
            assert_eq!(body.len(), asset.bytes.len(), "{}", asset.path);
        }
    }

    #[actix_web::test]
    async fn without_the_developer_login_the_page_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(slice_store::Store::open(dir.path()).unwrap());
        let mut settings = crate::Settings::new(Key::generate());
        settings.developer_login = false;
        let service = test::init_service(crate::app(store, None, settings)).await;
        let get = test::TestRequest::get()
            .uri("/ui")
            .insert_header(("Host", "localhost"))
            .to_request();
        let response = test::call_service(&service, get).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
    }

    #[actix_web::test]
    async fn the_root_and_the_slashed_path_lead_to_the_view() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(slice_store::Store::open(dir.path()).unwrap());
        let settings = crate::Settings::new(Key::generate());
        let service = test::init_service(crate::app(store, None, settings)).await;
        for (path, status) in [
            ("/", StatusCode::FOUND),
            ("/ui/", StatusCode::PERMANENT_REDIRECT),
        ] {
            let get = test::TestRequest::get()
                .uri(path)
                .insert_header(("Host", "localhost"))
                .to_request();
            let response = test::call_service(&service, get).await;
            assert_eq!(response.status(), status, "{path}");
            assert_eq!(response.headers().get(header::LOCATION).unwrap(), UI_PATH);
        }
    }

    #[actix_web::test]
    async fn the_page_names_the_openflow_listeners_in_an_attribute() {
        assert!(PAGE.contains(OPENFLOW_SLOT), "index.html lost its slot");
        let page = page_naming(&["127.0.0.1:6653 (tcp)".into(), "a\"<b>'&".into()]);
        assert!(page.contains(
            "data-openflow=\"[&quot;127.0.0.1:6653 (tcp)&quot;,&quot;a\\&quot;&lt;b&gt;&#39;&amp;&quot;]\""
        ));
        assert!(page_naming(&[]).contains("data-openflow=\"[]\""));
    }
}

//! `GET /openapi.json`: the OpenAPI 3.1 document of the API, as the running daemon's
//! settings make it.
//!
//! The document is kept by hand in `openapi.json` beside this crate's sources, for the
//! paths without the `/api` prefix and for GET only; this module derives the rest from
//! it, so that the repeated parts cannot disagree: HEAD beside every GET, the `/api/`
//! twin of every path marked `x-api-mirror`, the session guard's answers where the guard
//! stands, no developer login where it is off, and no OpenID Connect login where no
//! provider is configured. The tests hold the document to the
//! routes the application registers (`crate::served_routes`).

use actix_web::{web, HttpResponse};
use serde_json::{json, Map, Value};

use crate::routing::Mount;
use crate::Settings;

/// The hand-kept part of the document.
const SOURCE: &str = include_str!("../openapi.json");

/// Marks a path that is served under `/api/` too.
const MIRROR: &str = "x-api-mirror";

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

pub(crate) fn routes(cfg: &mut impl Mount) {
    cfg.mount("/openapi.json", crate::routing::READ, |r| {
        r.route(crate::routing::readable(serve))
    });
}

/// The encoded document, made once per application.
pub(crate) struct Encoded(web::Bytes);

impl Encoded {
    pub(crate) fn new(settings: &Settings) -> Self {
        Self(web::Bytes::from(document(settings).to_string()))
    }
}

async fn serve(encoded: web::Data<Encoded>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(actix_web::http::header::ContentType::json())
        .body(encoded.0.clone())
}

/// The whole document for an application with `settings`.
pub fn document(settings: &Settings) -> Value {
    // The source is part of the binary, and the crate's tests parse it.
    let mut document: Value = serde_json::from_str(SOURCE).unwrap_or_else(|err| {
        unreachable!("openapi.json is not JSON: {err}");
    });
    let paths = document["paths"].as_object_mut().map(std::mem::take);
    let mut out = Map::new();
    for (path, mut item) in paths.into_iter().flatten() {
        let mirrored = item
            .as_object_mut()
            .and_then(|item| item.remove(MIRROR))
            .is_some_and(|flag| flag == Value::Bool(true));
        if !settings.developer_login && path.starts_with("/auth/developer") {
            continue;
        }
        if settings.oidc.is_none() && path.starts_with("/auth/oidc/") {
            continue;
        }
        add_head(&mut item);
        if mirrored {
            let mut twin = item.clone();
            guard(&mut twin, settings, "api_");
            out.insert(format!("/api{path}"), twin);
            if settings.require_auth_for_slices {
                guard(&mut item, settings, "");
            }
        } else if path.starts_with("/api/") {
            guard(&mut item, settings, "");
        }
        out.insert(path, item);
    }
    link_heads(&mut out);
    document["paths"] = Value::Object(out);
    if let Some(page) = settings.login_page() {
        let location =
            &mut document["components"]["responses"]["LoginRedirect"]["headers"]["Location"];
        location["description"] = Value::String(page.into());
        location["schema"]["const"] = Value::String(page.into());
    }
    document
}

/// Beside every link to a GET, a link to its HEAD, so that stateful tests reach the HEADs
/// with identifiers that exist as they reach the GETs.
fn link_heads(paths: &mut Map<String, Value>) {
    let gets: std::collections::HashSet<String> = paths
        .values()
        .filter_map(|item| item["get"]["operationId"].as_str().map(str::to_owned))
        .collect();
    for operation in paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut())
    {
        let Some(responses) = operation
            .get_mut("responses")
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        for links in responses
            .values_mut()
            .filter_map(|response| response.get_mut("links"))
            .filter_map(Value::as_object_mut)
        {
            let heads: Vec<(String, Value)> = links
                .iter()
                .filter(|(_, link)| {
                    link["operationId"]
                        .as_str()
                        .is_some_and(|id| gets.contains(id))
                })
                .map(|(name, link)| {
                    let mut head = link.clone();
                    let target = link["operationId"].as_str().unwrap_or_default();
                    head["operationId"] = Value::String(format!("{target}Head"));
                    (format!("{name}Head"), head)
                })
                .collect();
            links.extend(heads);
        }
    }
}

/// Adds a HEAD operation beside the GET of `item`: the same answers without bodies.
fn add_head(item: &mut Value) {
    let Some(get) = item.get("get") else { return };
    let mut head = get.clone();
    if let Some(id) = head["operationId"].as_str() {
        head["operationId"] = Value::String(format!("{id}Head"));
    }
    if let Some(responses) = head["responses"].as_object_mut() {
        for response in responses.values_mut() {
            if let Some(response) = response.as_object_mut() {
                response.remove("content");
                response.remove("links");
            }
        }
    }
    item["head"] = head;
}

/// Puts the operations of `item` behind the session guard: the guard's 403 beside the
/// other 403s, its redirect for browsers when there is a login form to send them to, and
/// the session cookie as their security. `prefix` goes before every operation id, and
/// the ids its links name, so that a twin's links stay among the twins.
fn guard(item: &mut Value, settings: &Settings, prefix: &str) {
    let Some(item) = item.as_object_mut() else {
        return;
    };
    for (method, operation) in item.iter_mut() {
        if !METHODS.contains(&method.as_str()) {
            continue;
        }
        let id = operation["operationId"].as_str().unwrap_or_default();
        operation["operationId"] = Value::String(format!("{prefix}{id}"));
        operation["security"] = json!([{"session": []}]);
        let Some(responses) = operation["responses"].as_object_mut() else {
            continue;
        };
        let bodiless = method == "head";
        let forbidden = if bodiless {
            json!({"description": "No session (spec section 5), a foreign Host, or a write from another origin."})
        } else {
            json!({"$ref": "#/components/responses/SessionRequired"})
        };
        responses.insert("403".into(), forbidden);
        if settings.login_page().is_some() {
            responses.insert(
                "302".into(),
                json!({"$ref": "#/components/responses/LoginRedirect"}),
            );
        }
        for response in responses.values_mut() {
            let Some(links) = response.get_mut("links").and_then(Value::as_object_mut) else {
                continue;
            };
            for link in links.values_mut() {
                if let Some(target) = link["operationId"].as_str() {
                    link["operationId"] = Value::String(format!("{prefix}{target}"));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use actix_web::cookie::Key;
    use actix_web::http::{header, Method, StatusCode};
    use actix_web::test as actix_test;

    use super::*;

    type Routes = BTreeMap<String, Vec<String>>;

    fn documented(document: &Value) -> Routes {
        let paths = document["paths"]
            .as_object()
            .expect("the document has paths");
        paths
            .iter()
            .map(|(path, item)| {
                let mut methods: Vec<String> = METHODS
                    .iter()
                    .filter(|method| item.get(**method).is_some())
                    .map(|method| method.to_uppercase())
                    .collect();
                methods.sort();
                (path.clone(), methods)
            })
            .collect()
    }

    fn served() -> Routes {
        crate::served_routes()
            .into_iter()
            .map(|(path, mut methods)| {
                methods.sort();
                (path, methods)
            })
            .collect()
    }

    /// An OpenID Connect login, never used: its provider is not asked anything.
    fn oidc() -> Arc<crate::Oidc> {
        let config = crate::OidcConfig {
            issuer: "https://id.example.com".into(),
            client_id: "sliced".into(),
            client_secret: "secret".into(),
            redirect_url: "https://sliced.example.com/auth/oidc/callback"
                .parse()
                .expect("a URL"),
            scopes: None,
            role_claim: "groups".into(),
            roles: crate::RoleMapping::default(),
            token_endpoint_auth: None,
        };
        Arc::new(crate::Oidc::new(config).expect("a valid configuration"))
    }

    #[test]
    fn the_document_names_exactly_the_paths_and_methods_the_application_registers() {
        for require_auth_for_slices in [false, true] {
            let mut settings = Settings::new(Key::generate());
            settings.require_auth_for_slices = require_auth_for_slices;
            settings.oidc = Some(oidc());
            assert_eq!(documented(&document(&settings)), served());
        }
    }

    #[test]
    fn the_oidc_login_is_documented_only_with_a_provider_and_then_guards_lead_to_it() {
        let without = document(&Settings::new(Key::generate()));
        let paths = without["paths"].as_object().expect("paths");
        assert!(!paths.keys().any(|path| path.starts_with("/auth/oidc")));
        let mut settings = Settings::new(Key::generate());
        settings.developer_login = false;
        settings.oidc = Some(oidc());
        let with = document(&settings);
        assert!(with["paths"]["/auth/oidc/callback"]["get"].is_object());
        assert_eq!(
            with["components"]["responses"]["LoginRedirect"]["headers"]["Location"]["schema"]
                ["const"],
            "/auth/oidc/login"
        );
        assert_eq!(
            with["paths"]["/api/slices"]["get"]["responses"]["302"]["$ref"],
            "#/components/responses/LoginRedirect"
        );
    }

    #[test]
    fn without_the_developer_login_the_document_leaves_it_out() {
        let mut settings = Settings::new(Key::generate());
        settings.developer_login = false;
        let document = document(&settings);
        let paths = document["paths"]
            .as_object()
            .expect("the document has paths");
        assert!(!paths.keys().any(|path| path.starts_with("/auth/developer")));
        assert!(paths.contains_key("/auth/logout"));
        let redirects = document.to_string().matches("LoginRedirect").count();
        // Only its definition among the components is left.
        assert_eq!(redirects, 1);
    }

    #[test]
    fn every_operation_under_the_prefix_has_the_session_guard_and_ids_are_unique() {
        let document = document(&Settings::new(Key::generate()));
        let mut ids = std::collections::HashSet::new();
        for (path, item) in document["paths"].as_object().expect("paths") {
            for method in METHODS {
                let Some(operation) = item.get(method) else {
                    continue;
                };
                let id = operation["operationId"].as_str().expect("an operation id");
                assert!(ids.insert(id.to_owned()), "{id} twice");
                let guarded = operation["responses"]["403"].to_string();
                if path.starts_with("/api/") {
                    assert_eq!(operation["security"], json!([{"session": []}]), "{path}");
                    assert!(operation["responses"].get("302").is_some(), "{path}");
                    if method != "head" {
                        assert!(guarded.contains("SessionRequired"), "{path} {method}");
                    }
                } else {
                    assert!(operation.get("security").is_none(), "{path} {method}");
                    // The web view's page checks the session itself, outside the guard.
                    if path != "/ui" {
                        assert!(!guarded.contains("SessionRequired"), "{path} {method}");
                    }
                }
            }
        }
        // With --require-auth the unprefixed slice endpoints are guarded too.
        let mut settings = Settings::new(Key::generate());
        settings.require_auth_for_slices = true;
        let document = super::document(&settings);
        let slices = &document["paths"]["/slices"]["post"]["responses"]["403"];
        assert_eq!(slices["$ref"], "#/components/responses/SessionRequired");
        let login = &document["paths"]["/auth/developer/callback"]["post"];
        assert!(login.get("security").is_none());
    }

    /// Each documented path, asked with a method no resource has, must answer 405 with
    /// an `Allow` header naming exactly the documented methods: the application and the
    /// document agree on the real server too, not only on the registration's list.
    #[actix_web::test]
    async fn every_documented_path_allows_exactly_its_documented_methods() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = slice_store::Store::open(dir.path()).expect("a store");
        let settings = Settings::new(Key::generate());
        let document = document(&settings);
        let app = actix_test::init_service(crate::app(Arc::new(store), None, settings)).await;
        let login = actix_test::TestRequest::post()
            .uri("/auth/developer/callback")
            .insert_header(("Host", "localhost"))
            .set_form([("name", "Ada"), ("email", "ada@example.com")])
            .to_request();
        let response = actix_test::call_service(&app, login).await;
        assert_eq!(response.status(), StatusCode::OK);
        let cookie = response
            .response()
            .cookies()
            .next()
            .expect("a session cookie")
            .into_owned();
        for (path, methods) in documented(&document) {
            let uri = path
                .replace("{slice}", "blue")
                .replace("{port}", "0x1:1")
                .replace("{mac}", "00:00:00:00:00:01");
            let request = actix_test::TestRequest::default()
                .method(Method::PATCH)
                .uri(&uri)
                .insert_header(("Host", "localhost"))
                .cookie(cookie.clone())
                .to_request();
            let response = actix_test::call_service(&app, request).await;
            assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED, "{uri}");
            let allow = response
                .headers()
                .get(header::ALLOW)
                .expect("an Allow header");
            let mut allowed: Vec<String> = allow
                .to_str()
                .expect("a text header")
                .split(',')
                .map(|method| method.trim().to_owned())
                .collect();
            allowed.sort();
            assert_eq!(allowed, methods, "{uri}");
        }
    }
}

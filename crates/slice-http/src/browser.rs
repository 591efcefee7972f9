//! Defences against web pages that the operator's browser visits: DNS rebinding (a foreign
//! name resolving to the daemon) and cross-site requests (a page posting to the API).
//!
//! Scripts, curl and the `slice` tool send no `Origin` and no `Sec-Fetch-*` headers and
//! name the daemon by an address it listens on, so none of this changes anything for
//! them. Browsers always label a cross-origin POST with `Origin`, and modern ones add
//! `Sec-Fetch-Site`; that is what tells a page's request from the operator's own.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use actix_web::dev::ServiceRequest;
use actix_web::http::header::{HeaderMap, HOST, ORIGIN};
use actix_web::http::uri::Authority;
use actix_web::http::{Method, Uri, Version};
use actix_web::{web, HttpRequest};

use crate::{ApiError, LocalPeer, Settings};

/// Which names a client may use for the daemon in its `Host` header.
#[derive(Debug, Clone)]
pub struct HostPolicy {
    /// Lowercase host names and address literals (IPv6 in brackets), without ports.
    names: HashSet<String>,
    /// Set when listening on a wildcard address: then every address literal names the
    /// daemon, and rebinding needs a name, which must still be on the list.
    any_address: bool,
}

/// Names every daemon answers to: the loopback ones.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

impl Default for HostPolicy {
    fn default() -> Self {
        Self::new(&[], None, &[])
    }
}

impl HostPolicy {
    /// The loopback names, the addresses in `bound`, the host part of `configured` (the
    /// `--http` setting as written, which may be a name) and `extra` names.
    pub fn new(bound: &[SocketAddr], configured: Option<&str>, extra: &[String]) -> Self {
        let mut names: HashSet<String> = LOOPBACK_NAMES.iter().map(|n| n.to_string()).collect();
        for addr in bound {
            names.insert(address_literal(addr.ip()));
        }
        for name in configured
            .into_iter()
            .chain(extra.iter().map(String::as_str))
        {
            if let Some(host) = host_part(name) {
                names.insert(host);
            }
        }
        Self {
            names,
            any_address: bound.iter().any(|addr| addr.ip().is_unspecified()),
        }
    }

    /// Whether a `Host` header value names this daemon.
    pub fn allows(&self, host: &str) -> bool {
        let Some(name) = host_part(host) else {
            return false;
        };
        self.names.contains(&name) || (self.any_address && is_address_literal(&name))
    }
}

fn address_literal(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

fn is_address_literal(name: &str) -> bool {
    match name
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
    {
        Some(v6) => v6.parse::<Ipv6Addr>().is_ok(),
        None => name.parse::<std::net::Ipv4Addr>().is_ok(),
    }
}

/// The host of an authority (`host[:port]`), lowercased and without a trailing dot; None
/// when it is not a well-formed authority (parsed by the `http` crate, as actix parses
/// URIs) or carries user information, which no `Host` or `Origin` may.
fn host_part(authority: &str) -> Option<String> {
    let authority: Authority = authority.parse().ok()?;
    if authority.as_str().contains('@') {
        return None;
    }
    let host = authority.host();
    // The http crate leaves a port it cannot read unchecked: it must be a number.
    let port = &authority.as_str()[host.len()..];
    if !port.is_empty() && port.strip_prefix(':')?.parse::<u16>().is_err() {
        return None;
    }
    let host = host.strip_suffix('.').unwrap_or(host);
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// Whether the request was made by a browser on behalf of a page: it carries `Origin` or
/// a `Sec-Fetch-*` header, which only browsers send.
pub(crate) fn from_browser(req: &HttpRequest) -> bool {
    let headers = req.headers();
    headers.contains_key(ORIGIN)
        || headers
            .keys()
            .any(|name| name.as_str().starts_with("sec-fetch-"))
}

/// Why `req` is refused, if it is: its `Host` does not name the daemon, or it changes
/// state and a browser sent it from another origin. Requests over the local socket are
/// the owner's and pass. Asked before anything else runs (see `front_door`).
pub(crate) fn refusal(req: &ServiceRequest) -> Option<ApiError> {
    if req.conn_data::<LocalPeer>().is_some() {
        return None;
    }
    let fallback;
    // The application has its settings; the metrics listener, a policy of its own.
    let policy = match req
        .app_data::<web::Data<Settings>>()
        .map(|settings| &settings.host_policy)
        .or_else(|| req.app_data::<HostPolicy>())
    {
        Some(policy) => policy,
        None => {
            fallback = HostPolicy::default();
            &fallback
        }
    };
    let verdict = check(
        req.method(),
        req.version(),
        req.headers(),
        policy,
        req.app_data::<AllowedHost>(),
    );
    let err = verdict.err()?;
    log::debug!("refused {} {}: {err}", req.method(), req.path());
    Some(err)
}

/// The last `Host` value a worker found allowed, as sent: clients send the same one on
/// every request, and the same bytes get the same verdict from a policy that never
/// changes, so a repeat is let through without parsing it again. One per worker (the
/// application is built once per worker), so it needs no lock.
#[derive(Default)]
pub(crate) struct AllowedHost(std::cell::RefCell<Vec<u8>>);

/// Longer `Host` values are checked every time rather than remembered.
const REMEMBERED_HOST_MAX: usize = 256;

fn check(
    method: &Method,
    version: Version,
    headers: &HeaderMap,
    policy: &HostPolicy,
    remembered: Option<&AllowedHost>,
) -> Result<(), ApiError> {
    let mut hosts = headers.get_all(HOST);
    let host = match (hosts.next(), hosts.next()) {
        (Some(host), None) => Some(host.to_str().map_err(|_| bad_host())?),
        (Some(_), Some(_)) => return Err(ApiError::BadRequest("more than one Host header".into())),
        // HTTP/1.0 has no Host; browsers, the only rebinding vehicle, always send one.
        (None, _) if version == Version::HTTP_10 => None,
        (None, _) => return Err(ApiError::BadRequest("missing Host header".into())),
    };
    if let Some(host) = host {
        let seen = remembered.is_some_and(|last| *last.0.borrow() == host.as_bytes());
        if !seen && !policy.allows(host) {
            return Err(ApiError::Forbidden(format!(
                "host {host:?} is not allowed: name the daemon by an address it listens on, \
                 or add the name with --allowed-host"
            )));
        }
        if let Some(last) = remembered.filter(|_| !seen && host.len() <= REMEMBERED_HOST_MAX) {
            let mut last = last.0.borrow_mut();
            last.clear();
            last.extend_from_slice(host.as_bytes());
        }
    }
    let changes_state = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    if !changes_state {
        return Ok(());
    }
    if let Some(origin) = headers.get(ORIGIN) {
        let same = match (origin.to_str(), host) {
            (Ok(origin), Some(host)) => is_same_origin(origin, host),
            _ => false,
        };
        if !same {
            return Err(cross_origin());
        }
    }
    if let Some(site) = headers.get("sec-fetch-site") {
        // `same-site` includes other ports of the same host, such as any local web server.
        if !matches!(site.as_bytes(), b"same-origin" | b"none") {
            return Err(cross_origin());
        }
    }
    Ok(())
}

fn bad_host() -> ApiError {
    ApiError::BadRequest("malformed Host header".into())
}

fn cross_origin() -> ApiError {
    ApiError::Forbidden("cross-origin request refused".into())
}

/// Whether `origin` (`scheme://host[:port]`, as a browser sends it) is the origin of a
/// page served by this daemon under the name `host`: the same host and the same port,
/// a missing port being the scheme's. Either scheme is accepted so that a TLS proxy in
/// front keeps working; `null` and anything with a path are foreign.
fn is_same_origin(origin: &str, host: &str) -> bool {
    let (Ok(origin), Ok(host)) = (origin.parse::<Uri>(), host.parse::<Authority>()) else {
        return false;
    };
    let default_port = match origin.scheme_str() {
        Some(scheme) if scheme.eq_ignore_ascii_case("http") => 80,
        Some(scheme) if scheme.eq_ignore_ascii_case("https") => 443,
        _ => return false,
    };
    let path_free = origin.path_and_query().map_or(true, |path| {
        path.as_str().is_empty() || path.as_str() == "/"
    });
    let Some(origin) = origin.authority().filter(|_| path_free) else {
        return false;
    };
    let name_and_port = |authority: &Authority| {
        (
            host_part(authority.as_str()),
            authority.port_u16().unwrap_or(default_port),
        )
    };
    let origin = name_and_port(origin);
    origin.0.is_some() && origin == name_and_port(&host)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listening_on(addr: &str, extra: &[&str]) -> HostPolicy {
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        HostPolicy::new(&[addr.parse().unwrap()], Some(addr), &extra)
    }

    #[test]
    fn the_listeners_and_loopback_names_are_allowed_with_or_without_a_port() {
        let policy = listening_on("10.0.0.5:9292", &["Sliced.Example.com"]);
        for host in [
            "10.0.0.5:9292",
            "10.0.0.5",
            "localhost:9292",
            "LOCALHOST",
            "127.0.0.1:9292",
            "[::1]:9292",
            "sliced.example.com",
            "sliced.example.com.:9292",
        ] {
            assert!(policy.allows(host), "{host} refused");
        }
        for host in [
            "attacker.example:9292",
            "10.0.0.6:9292",
            "",
            "localhost:",
            "localhost:x",
            "local host",
            "[::2]:9292",
            "user@localhost:9292",
            "localhost:9292:1",
        ] {
            assert!(!policy.allows(host), "{host:?} allowed");
        }
    }

    #[test]
    fn a_wildcard_listener_allows_any_address_but_not_any_name() {
        let policy = listening_on("0.0.0.0:9292", &[]);
        assert!(policy.allows("192.0.2.7:9292"));
        assert!(policy.allows("[2001:db8::1]:9292"));
        assert!(!policy.allows("rebind.attacker.example:9292"));
        assert!(!policy.allows("1.2.3.4.attacker.example"));
    }

    #[test]
    fn only_the_exact_origin_of_the_host_is_the_same_origin() {
        assert!(is_same_origin("http://127.0.0.1:9292", "127.0.0.1:9292"));
        assert!(is_same_origin(
            "https://Sliced.example",
            "sliced.example:443"
        ));
        assert!(is_same_origin("http://sliced.example:80", "sliced.example"));
        for foreign in [
            "null",
            "http://evil.example",
            "http://127.0.0.1:8080",
            "http://127.0.0.1",
            "ftp://127.0.0.1:9292",
            "http://127.0.0.1:9292/path",
            "http://user@127.0.0.1:9292",
            "http://127.0.0.1:09292x",
        ] {
            assert!(!is_same_origin(foreign, "127.0.0.1:9292"), "{foreign}");
        }
    }

    #[test]
    fn http_1_1_without_a_host_is_a_bad_request_but_http_1_0_is_not() {
        let policy = HostPolicy::default();
        let empty = HeaderMap::new();
        assert!(matches!(
            check(&Method::GET, Version::HTTP_11, &empty, &policy, None),
            Err(ApiError::BadRequest(_))
        ));
        assert!(check(&Method::GET, Version::HTTP_10, &empty, &policy, None).is_ok());
    }

    #[test]
    fn only_an_allowed_host_is_remembered_and_a_remembered_one_passes_unparsed() {
        let policy = HostPolicy::default();
        let remembered = AllowedHost::default();
        let with_host = |host: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(
                HOST,
                actix_web::http::header::HeaderValue::from_static(host),
            );
            headers
        };
        let evil = with_host("evil.example");
        assert!(check(
            &Method::GET,
            Version::HTTP_11,
            &evil,
            &policy,
            Some(&remembered)
        )
        .is_err());
        assert!(
            remembered.0.borrow().is_empty(),
            "a refused host was remembered"
        );
        let allowed = with_host("127.0.0.1:9292");
        assert!(check(
            &Method::GET,
            Version::HTTP_11,
            &allowed,
            &policy,
            Some(&remembered)
        )
        .is_ok());
        assert_eq!(*remembered.0.borrow(), b"127.0.0.1:9292");
        // What is remembered is let through without asking the policy: a policy that
        // allows nothing shows it.
        let nothing = HostPolicy {
            names: HashSet::new(),
            any_address: false,
        };
        assert!(check(
            &Method::GET,
            Version::HTTP_11,
            &allowed,
            &nothing,
            Some(&remembered)
        )
        .is_ok());
        assert!(check(
            &Method::GET,
            Version::HTTP_11,
            &evil,
            &nothing,
            Some(&remembered)
        )
        .is_err());
        assert!(check(&Method::GET, Version::HTTP_11, &allowed, &nothing, None).is_err());
    }
}

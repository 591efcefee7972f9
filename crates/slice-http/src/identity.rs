//! Who a request comes from and what they may do: the vocabulary that the logins (the
//! developer form, OpenID Connect), the authenticating proxy, the guard and the audit trail
//! share. A leaf module: it imports nothing of the crate's.

use std::net::IpAddr;

use actix_web::http::header::{HeaderMap, HeaderName};
use ipnet::IpNet;
use serde::{Deserialize, Serialize};

/// What a user may do. Ordered: an operator may do all a viewer may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads the slices, the network, the events and the web view.
    Viewer,
    /// Changes slices too.
    Operator,
}

impl Role {
    /// The role's name, as configured and as `/api/session` shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Viewer => "viewer",
            Self::Operator => "operator",
        }
    }

    /// The role a name stands for (`viewer`, `operator`), ignoring case.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Viewer, Self::Operator]
            .into_iter()
            .find(|role| role.as_str().eq_ignore_ascii_case(name.trim()))
    }
}

/// Sessions sealed before roles existed were all the developer login's, which could
/// write: they keep doing so until they expire.
fn role_of_older_sessions() -> Role {
    Role::Operator
}

/// Who is logged in, as kept in the session and shown by `/api/session`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub email: String,
    #[serde(default = "role_of_older_sessions")]
    pub role: Role,
}

/// How a request proved who it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    /// The owner-only local socket: the daemon's owner, the `slice` tool.
    LocalSocket,
    /// A login session's cookie.
    Session,
    /// A header set by a trusted authenticating proxy.
    Proxy,
    /// Nothing: an endpoint open to anyone (the unprefixed slice API without
    /// `--require-auth`).
    Anonymous,
}

/// The requester of a request that the guard let through, kept in its extensions for
/// the handlers and the audit trail.
#[derive(Debug, Clone)]
pub(crate) struct Requester {
    /// `None` for the local socket's owner and for anonymous requests.
    pub user: Option<User>,
    pub via: Via,
}

impl Requester {
    /// What one may do: the user's role; the local socket's owner and anonymous callers
    /// of the open endpoints are operators (the specification's defaults).
    pub(crate) fn role(&self) -> Role {
        self.user.as_ref().map_or(Role::Operator, |user| user.role)
    }

    /// The name the audit trail gives the requester.
    pub(crate) fn name(&self) -> &str {
        match (&self.user, self.via) {
            (Some(user), _) => &user.name,
            (None, Via::LocalSocket) => "local",
            (None, _) => "anonymous",
        }
    }
}

/// Which values of a role claim (OpenID Connect) or role header (proxy) give which role,
/// and the role of a user whose claim names neither.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleMapping {
    /// Values that make an operator; checked first.
    pub operator_values: Vec<String>,
    /// Values that make a viewer.
    pub viewer_values: Vec<String>,
    /// The role of a user none of whose values is listed; `None` refuses the login.
    pub default_role: Option<Role>,
}

impl Default for RoleMapping {
    fn default() -> Self {
        Self {
            operator_values: vec![Role::Operator.as_str().into()],
            viewer_values: vec![Role::Viewer.as_str().into()],
            // Least privilege: a user the identity provider says nothing about reads.
            default_role: Some(Role::Viewer),
        }
    }
}

impl RoleMapping {
    /// The role the values of a claim or header give (a group list, say), or `None` when
    /// the user may not log in at all.
    pub fn role_of<'a>(&self, values: impl IntoIterator<Item = &'a str> + Clone) -> Option<Role> {
        let any_of = |listed: &[String]| {
            values
                .clone()
                .into_iter()
                .any(|value| listed.iter().any(|wanted| wanted == value.trim()))
        };
        if any_of(&self.operator_values) {
            Some(Role::Operator)
        } else if any_of(&self.viewer_values) {
            Some(Role::Viewer)
        } else {
            self.default_role
        }
    }
}

/// An authenticating proxy in front of the daemon (as Grafana's auth proxy): it logs the
/// user in and names them in a header, which is believed only from the proxy's addresses.
#[derive(Debug, Clone)]
pub struct ProxyAuth {
    /// The header with the user's name (`X-Forwarded-User`, `Remote-User`...).
    pub user_header: HeaderName,
    /// The header with the user's e-mail address, if the proxy sends one.
    pub email_header: Option<HeaderName>,
    /// The header with the user's roles or groups, comma-separated; without it every
    /// proxied user has the mapping's default role.
    pub role_header: Option<HeaderName>,
    /// The addresses the proxy connects from. Requests over the owner-only local socket
    /// are believed too.
    pub trusted: Vec<IpNet>,
    pub roles: RoleMapping,
}

/// What a proxy header said of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProxyVerdict {
    /// No user header (or no proxy configured): another way in must hold.
    Absent,
    /// A user header from an address the proxy does not connect from: never believed.
    Untrusted,
    /// The proxy's user, whose role mapping refuses them.
    NoRole(String),
    Accepted(User),
}

/// The longest user name or e-mail address a proxy header may carry.
const MAX_PROXIED_NAME: usize = 200;

impl ProxyAuth {
    /// What the proxy says of a request from `peer` (`None`: the local socket) with
    /// `headers`.
    pub fn judge(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> ProxyVerdict {
        let Some(name) = headers.get(&self.user_header) else {
            return ProxyVerdict::Absent;
        };
        let trusted = peer.map_or(true, |peer| {
            self.trusted.iter().any(|net| net.contains(&peer))
        });
        if !trusted {
            return ProxyVerdict::Untrusted;
        }
        let text = |value: &actix_web::http::header::HeaderValue| {
            value
                .to_str()
                .ok()
                .map(str::trim)
                .filter(|text| !text.is_empty() && text.len() <= MAX_PROXIED_NAME)
                .map(str::to_owned)
        };
        let Some(name) = text(name) else {
            return ProxyVerdict::Absent;
        };
        let email = self
            .email_header
            .as_ref()
            .and_then(|header| headers.get(header))
            .and_then(text)
            .unwrap_or_default();
        let groups: Vec<&str> = self
            .role_header
            .as_ref()
            .map(|header| {
                headers
                    .get_all(header)
                    .filter_map(|value| value.to_str().ok())
                    .flat_map(|value| value.split(','))
                    .collect()
            })
            .unwrap_or_default();
        match self.roles.role_of(groups.iter().copied()) {
            Some(role) => ProxyVerdict::Accepted(User { name, email, role }),
            None => ProxyVerdict::NoRole(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::HeaderValue;

    use super::*;

    fn proxy() -> ProxyAuth {
        ProxyAuth {
            user_header: HeaderName::from_static("x-forwarded-user"),
            email_header: Some(HeaderName::from_static("x-forwarded-email")),
            role_header: Some(HeaderName::from_static("x-forwarded-groups")),
            trusted: vec!["10.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()],
            roles: RoleMapping {
                operator_values: vec!["net-admins".into()],
                viewer_values: vec!["staff".into()],
                default_role: None,
            },
        }
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        map
    }

    #[test]
    fn the_header_is_believed_only_from_the_proxys_addresses_and_the_socket() {
        let said = headers(&[
            ("x-forwarded-user", "ada"),
            ("x-forwarded-groups", "staff, net-admins"),
        ]);
        let ada = |role| {
            ProxyVerdict::Accepted(User {
                name: "ada".into(),
                email: String::new(),
                role,
            })
        };
        let proxy = proxy();
        assert_eq!(
            proxy.judge(Some("10.1.2.3".parse().unwrap()), &said),
            ada(Role::Operator)
        );
        assert_eq!(proxy.judge(None, &said), ada(Role::Operator));
        assert_eq!(
            proxy.judge(Some("::1".parse().unwrap()), &said),
            ada(Role::Operator)
        );
        for outsider in ["11.0.0.1", "127.0.0.1", "::2"] {
            assert_eq!(
                proxy.judge(Some(outsider.parse().unwrap()), &said),
                ProxyVerdict::Untrusted,
                "{outsider}"
            );
        }
        assert_eq!(
            proxy.judge(Some("10.0.0.1".parse().unwrap()), &headers(&[])),
            ProxyVerdict::Absent
        );
    }

    #[test]
    fn roles_come_from_the_mapping_and_its_default() {
        let proxy = proxy();
        let peer = Some("10.0.0.1".parse().unwrap());
        let viewer = headers(&[
            ("x-forwarded-user", "bob"),
            ("x-forwarded-email", "bob@example.com"),
            ("x-forwarded-groups", "staff"),
        ]);
        assert_eq!(
            proxy.judge(peer, &viewer),
            ProxyVerdict::Accepted(User {
                name: "bob".into(),
                email: "bob@example.com".into(),
                role: Role::Viewer
            })
        );
        let stranger = headers(&[("x-forwarded-user", "eve"), ("x-forwarded-groups", "x")]);
        assert_eq!(
            proxy.judge(peer, &stranger),
            ProxyVerdict::NoRole("eve".into())
        );
        let defaults = RoleMapping::default();
        assert_eq!(defaults.role_of(["x"]), Some(Role::Viewer));
        assert_eq!(
            defaults.role_of(["viewer", "operator"]),
            Some(Role::Operator)
        );
    }

    #[test]
    fn sessions_sealed_before_roles_stay_operators() {
        let user: User = serde_json::from_str(r#"{"name":"a","email":"a@b.c"}"#).unwrap();
        assert_eq!(user.role, Role::Operator);
        assert_eq!(Role::parse(" Viewer "), Some(Role::Viewer));
        assert!(Role::Viewer < Role::Operator);
    }
}

//! Who a request comes from and what they may do: the vocabulary that the logins (the
//! developer form, OpenID Connect), the authenticating proxy, the local socket, the guard
//! and the audit trail share. A leaf module: it imports nothing of the crate's.

use std::net::IpAddr;

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use ipnet::{IpNet, Ipv4Net};
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

/// Who is at the other end of a connection to the daemon's local socket, as the kernel
/// says (`SO_PEERCRED`): the socket is owner-only, so this is the daemon's own user or
/// root, and a header of the request cannot say otherwise. In the connection's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalPeer {
    uid: u32,
    name: String,
}

impl LocalPeer {
    /// The peer with user id `uid`, whose account is named `name` (`None`: no account
    /// has that id, or the lookup failed).
    pub fn new(uid: u32, name: Option<String>) -> Self {
        // A colon cannot be part of an account's name (it separates passwd's fields), so
        // no account can pass for an id without one.
        let name = name.unwrap_or_else(|| format!("uid:{uid}"));
        Self { uid, name }
    }

    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// The account's name, or `uid:<id>` for an id without one.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The requester of every request on this connection: the Unix user, an operator
    /// (who can reach the socket can open the daemon's database anyway).
    pub(crate) fn requester(&self) -> Requester {
        Requester {
            user: Some(User {
                name: self.name.clone(),
                email: String::new(),
                role: Role::Operator,
            }),
            via: Via::LocalSocket,
        }
    }
}

/// How a request proved who it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    /// The owner-only local socket: the daemon's user or root, named by the kernel.
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
    /// `None` for anonymous requests.
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
    /// The header with the user's roles or groups, separated by `role_separator`; without
    /// it every proxied user has the mapping's default role.
    pub role_header: Option<HeaderName>,
    /// What separates the groups in `role_header` (`,` unless configured).
    pub role_separator: char,
    /// The addresses the proxy connects from. Nothing else is believed: not even the
    /// local socket, whose peer the kernel names.
    pub trusted: Vec<IpNet>,
    pub roles: RoleMapping,
}

/// What separates the groups of a proxy's role header unless configured.
pub const DEFAULT_ROLE_SEPARATOR: char = ',';

/// What a proxy header said of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProxyVerdict {
    /// No user header (or no proxy configured): another way in must hold.
    Absent,
    /// A user header from an address the proxy does not connect from: never believed.
    Untrusted,
    /// The proxy's headers say nothing that can be believed (a header twice, a value
    /// that is no text), for the reason given: the request is refused.
    Refused(String),
    /// The proxy's user, whose role mapping refuses them.
    NoRole(String),
    Accepted(User),
}

/// The longest user name or e-mail address a proxy header may carry.
const MAX_PROXIED_NAME: usize = 200;

impl ProxyAuth {
    /// What the proxy says of a request from `peer` with `headers`.
    pub fn judge(&self, peer: IpAddr, headers: &HeaderMap) -> ProxyVerdict {
        if !headers.contains_key(&self.user_header) {
            return ProxyVerdict::Absent;
        }
        if !self.trusts(peer) {
            return ProxyVerdict::Untrusted;
        }
        match self.said(headers) {
            Ok(None) => ProxyVerdict::Absent,
            Ok(Some(Said {
                name,
                email,
                groups,
            })) => match self.roles.role_of(groups.iter().map(String::as_str)) {
                Some(role) => ProxyVerdict::Accepted(User { name, email, role }),
                None => ProxyVerdict::NoRole(name),
            },
            Err(reason) => ProxyVerdict::Refused(reason),
        }
    }

    /// Whether `peer` is one of the proxy's addresses. Both sides are compared in their
    /// canonical form: a listener on `[::]` sees an IPv4 peer as `::ffff:a.b.c.d`.
    fn trusts(&self, peer: IpAddr) -> bool {
        let peer = peer.to_canonical();
        self.trusted
            .iter()
            .any(|net| canonical_net(*net).contains(&peer))
    }

    /// What the headers say (`None`: the proxy names nobody), or why they cannot be
    /// believed.
    fn said(&self, headers: &HeaderMap) -> Result<Option<Said>, String> {
        let Some(name) = once(headers, &self.user_header)? else {
            return Ok(None);
        };
        let name = short_text(&self.user_header, name)?;
        if name.is_empty() {
            return Ok(None);
        }
        let email = match &self.email_header {
            Some(header) => once(headers, header)?
                .map(|value| short_text(header, value))
                .transpose()?
                .unwrap_or_default(),
            None => String::new(),
        };
        let groups = match &self.role_header {
            Some(header) => match once(headers, header)? {
                Some(value) => text(header, value)?
                    .split(self.role_separator)
                    .map(|group| group.trim().to_owned())
                    .filter(|group| !group.is_empty())
                    .collect(),
                None => Vec::new(),
            },
            None => Vec::new(),
        };
        Ok(Some(Said {
            name,
            email,
            groups,
        }))
    }
}

/// The user a proxy's headers name: their name, e-mail address (or "") and groups.
struct Said {
    name: String,
    email: String,
    groups: Vec<String>,
}

/// The one value of `header`, if any. A header sent twice is two claims, of which the
/// daemon cannot tell the proxy's from one a client sent and the proxy passed on (a proxy
/// that appends rather than replaces): neither is believed.
fn once<'h>(
    headers: &'h HeaderMap,
    header: &HeaderName,
) -> Result<Option<&'h HeaderValue>, String> {
    let mut values = headers.get_all(header);
    let first = values.next();
    let more = values.count();
    if more > 0 {
        return Err(format!(
            "{header} came {} times; the proxy must send it once",
            more + 1
        ));
    }
    Ok(first)
}

/// A header's value as text, trimmed: UTF-8 (a proxy passes non-ASCII names and groups
/// as their UTF-8 bytes) holding nothing the log cannot show as itself
/// ([`crate::log_text::hidden`]), or why not. Only the header's name
/// is in the reason: its value is the client's, and the reason is logged.
fn text(header: &HeaderName, value: &HeaderValue) -> Result<String, String> {
    let text =
        std::str::from_utf8(value.as_bytes()).map_err(|_| format!("{header} is not UTF-8 text"))?;
    // What the log would have to escape has no place in a name or a group: the trail
    // shows names as they are.
    if text.chars().any(crate::log_text::hidden) {
        return Err(format!(
            "{header} holds a control, invisible or line-breaking character"
        ));
    }
    Ok(text.trim().to_owned())
}

/// A user name or e-mail address: [`text`] of at most [`MAX_PROXIED_NAME`] bytes.
fn short_text(header: &HeaderName, value: &HeaderValue) -> Result<String, String> {
    let text = text(header, value)?;
    if text.len() > MAX_PROXIED_NAME {
        return Err(format!("{header} is longer than {MAX_PROXIED_NAME} bytes"));
    }
    Ok(text)
}

/// `net` with an IPv4-mapped IPv6 block (`::ffff:10.0.0.0/104`) as the IPv4 block it maps.
fn canonical_net(net: IpNet) -> IpNet {
    match net {
        IpNet::V6(v6) if v6.prefix_len() >= 96 => v6
            .addr()
            .to_ipv4_mapped()
            .and_then(|v4| Ipv4Net::new(v4, v6.prefix_len() - 96).ok())
            .map_or(net, IpNet::V4),
        _ => net,
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
            role_separator: DEFAULT_ROLE_SEPARATOR,
            trusted: vec![
                "10.0.0.0/8".parse().unwrap(),
                "::1/128".parse().unwrap(),
                "::ffff:192.0.2.0/120".parse().unwrap(),
            ],
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
    fn the_header_is_believed_only_from_the_proxys_addresses_in_either_form() {
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
            proxy.judge("10.1.2.3".parse().unwrap(), &said),
            ada(Role::Operator)
        );
        // A listener on [::] sees IPv4 peers as IPv4-mapped addresses; a block written
        // in that form covers the IPv4 addresses it maps.
        for trusted in ["::1", "::ffff:10.1.2.3", "192.0.2.7", "::ffff:192.0.2.7"] {
            assert_eq!(
                proxy.judge(trusted.parse().unwrap(), &said),
                ada(Role::Operator),
                "{trusted}"
            );
        }
        for outsider in [
            "11.0.0.1",
            "127.0.0.1",
            "::2",
            "::ffff:11.0.0.1",
            "192.0.3.1",
        ] {
            assert_eq!(
                proxy.judge(outsider.parse().unwrap(), &said),
                ProxyVerdict::Untrusted,
                "{outsider}"
            );
        }
        assert_eq!(
            proxy.judge("10.0.0.1".parse().unwrap(), &headers(&[])),
            ProxyVerdict::Absent
        );
    }

    #[test]
    fn roles_come_from_the_mapping_and_its_default() {
        let proxy = proxy();
        let peer = "10.0.0.1".parse().unwrap();
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
    fn a_header_twice_or_not_text_is_refused_with_its_name() {
        let proxy = proxy();
        let peer = "10.0.0.1".parse().unwrap();
        let refused = |pairs: &[(&'static str, &'static [u8])]| {
            let mut map = HeaderMap::new();
            for (name, value) in pairs {
                map.append(
                    HeaderName::from_static(name),
                    HeaderValue::from_bytes(value).unwrap(),
                );
            }
            match proxy.judge(peer, &map) {
                ProxyVerdict::Refused(reason) => reason,
                other => panic!("{pairs:?} gave {other:?}"),
            }
        };
        for (twice, header) in [
            ("x-forwarded-user", "x-forwarded-user"),
            ("x-forwarded-email", "x-forwarded-email"),
            ("x-forwarded-groups", "x-forwarded-groups"),
        ] {
            let mut pairs = vec![
                ("x-forwarded-user", &b"ada"[..]),
                ("x-forwarded-email", b"ada@example.com"),
                ("x-forwarded-groups", b"staff"),
            ];
            pairs.push((twice, b"net-admins"));
            assert_eq!(
                refused(&pairs),
                format!("{header} came 2 times; the proxy must send it once")
            );
        }
        assert_eq!(
            refused(&[
                ("x-forwarded-user", b"ada"),
                ("x-forwarded-groups", b"staff,\xff")
            ]),
            "x-forwarded-groups is not UTF-8 text"
        );
        assert_eq!(
            refused(&[("x-forwarded-user", b"a\tda")]),
            "x-forwarded-user holds a control, invisible or line-breaking character"
        );
        assert_eq!(
            refused(&[("x-forwarded-user", &[b'a'; 201])]),
            "x-forwarded-user is longer than 200 bytes"
        );
        // Names and groups beyond ASCII are text too, as their UTF-8 bytes.
        let mut map = HeaderMap::new();
        map.append(
            HeaderName::from_static("x-forwarded-user"),
            HeaderValue::from_bytes("José".as_bytes()).unwrap(),
        );
        map.append(
            HeaderName::from_static("x-forwarded-groups"),
            HeaderValue::from_bytes("Ingénieurs, net-admins".as_bytes()).unwrap(),
        );
        assert_eq!(
            proxy.judge(peer, &map),
            ProxyVerdict::Accepted(User {
                name: "José".into(),
                email: String::new(),
                role: Role::Operator
            })
        );
    }

    #[test]
    fn a_group_counts_only_whole_between_separators() {
        let peer = "10.0.0.1".parse().unwrap();
        let dn = headers(&[
            ("x-forwarded-user", "ada"),
            ("x-forwarded-groups", "cn=x,net-admins,ou=groups"),
        ]);
        // With the default separator a distinguished name is split at its commas, and
        // one of its parts is a group name that maps.
        assert_eq!(
            proxy().judge(peer, &dn),
            ProxyVerdict::Accepted(User {
                name: "ada".into(),
                email: String::new(),
                role: Role::Operator
            })
        );
        // With `;` the whole name is one group, which the mapping does not list.
        let ldap = ProxyAuth {
            role_separator: ';',
            ..proxy()
        };
        assert_eq!(ldap.judge(peer, &dn), ProxyVerdict::NoRole("ada".into()));
        let two = headers(&[
            ("x-forwarded-user", "ada"),
            ("x-forwarded-groups", "cn=x,ou=groups; net-admins"),
        ]);
        assert!(matches!(
            ldap.judge(peer, &two),
            ProxyVerdict::Accepted(User {
                role: Role::Operator,
                ..
            })
        ));
    }

    #[test]
    fn the_local_peer_is_named_by_its_account_or_its_id() {
        assert_eq!(LocalPeer::new(0, Some("root".into())).name(), "root");
        let nameless = LocalPeer::new(4242, None);
        assert_eq!((nameless.name(), nameless.uid()), ("uid:4242", 4242));
        let requester = nameless.requester();
        assert_eq!(
            (requester.name(), requester.role()),
            ("uid:4242", Role::Operator)
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

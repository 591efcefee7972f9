//! The `[auth]` table of the configuration file: sessions, the logins, the roles and an
//! authenticating proxy in front of the daemon.

use std::path::PathBuf;
use std::time::Duration;

use actix_web::http::header::HeaderName;
use serde::Deserialize;
use slice_http::{ClientAuth, OidcConfig, ProxyAuth, Role, RoleMapping};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AuthFile {
    pub(super) require_for_slices: Option<bool>,
    pub(super) developer_login: Option<bool>,
    pub(super) secure_cookie: Option<bool>,
    pub(super) session_key_file: Option<PathBuf>,
    session_ttl_hours: Option<i64>,
    session_ttl_seconds: Option<u64>,
    #[serde(default)]
    roles: RolesFile,
    proxy: Option<ProxyFile>,
    oidc: Option<OidcFile>,
}

/// `[auth.roles]`: which values of a role claim or header make which role.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RolesFile {
    operator: Option<Vec<String>>,
    viewer: Option<Vec<String>>,
    /// `viewer`, `operator`, or `none` (refuse users named in neither list).
    default: Option<String>,
}

/// `[auth.proxy]`: an authenticating proxy that names the user in a header.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProxyFile {
    user_header: String,
    email_header: Option<String>,
    role_header: Option<String>,
    /// What separates the groups in `role_header`: one ASCII punctuation character, `,`
    /// by default (`;` for LDAP distinguished names, which hold commas).
    role_separator: Option<String>,
    /// Addresses or CIDR blocks the proxy connects from.
    trusted: Vec<String>,
}

/// `[auth.oidc]`: an OpenID Connect provider to log in through.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OidcFile {
    issuer: String,
    client_id: String,
    /// An owner-only file with the client secret (surrounding whitespace is trimmed).
    client_secret_file: PathBuf,
    /// The public URL of `/auth/oidc/callback`, as registered at the provider.
    redirect_url: String,
    scopes: Option<Vec<String>>,
    role_claim: Option<String>,
    /// `client_secret_basic` or `client_secret_post`; unset, the provider's first.
    token_endpoint_auth_method: Option<String>,
}

impl AuthFile {
    /// The role mapping of `[auth.roles]`, for OpenID Connect's claims and the proxy's
    /// header alike.
    pub(super) fn roles(&self) -> anyhow::Result<RoleMapping> {
        let defaults = RoleMapping::default();
        let default_role = match self.roles.default.as_deref() {
            None => defaults.default_role,
            Some("none") => None,
            Some(name) => Some(Role::parse(name).ok_or_else(|| {
                anyhow::anyhow!(
                    "auth.roles.default must be \"viewer\", \"operator\" or \"none\", not {name:?}"
                )
            })?),
        };
        Ok(RoleMapping {
            operator_values: self
                .roles
                .operator
                .clone()
                .unwrap_or(defaults.operator_values),
            viewer_values: self.roles.viewer.clone().unwrap_or(defaults.viewer_values),
            default_role,
        })
    }

    /// The OpenID Connect login of `[auth.oidc]`, if any, with its secret read.
    pub(super) fn oidc(&self) -> anyhow::Result<Option<OidcConfig>> {
        let Some(file) = &self.oidc else {
            return Ok(None);
        };
        let redirect_url = file.redirect_url.parse().map_err(|err| {
            anyhow::anyhow!(
                "auth.oidc.redirect_url {:?} is no URL: {err}",
                file.redirect_url
            )
        })?;
        let token_endpoint_auth = file
            .token_endpoint_auth_method
            .as_deref()
            .map(|name| {
                ClientAuth::parse(name).ok_or_else(|| {
                    anyhow::anyhow!(
                        "auth.oidc.token_endpoint_auth_method must be \"client_secret_basic\" \
                         or \"client_secret_post\", not {name:?}"
                    )
                })
            })
            .transpose()?;
        let config = OidcConfig {
            issuer: file.issuer.clone(),
            client_id: file.client_id.clone(),
            client_secret: read_secret(&file.client_secret_file)?,
            redirect_url,
            scopes: file.scopes.clone(),
            role_claim: file
                .role_claim
                .clone()
                .unwrap_or_else(|| OidcConfig::DEFAULT_ROLE_CLAIM.into()),
            roles: self.roles()?,
            token_endpoint_auth,
        };
        config.check().map_err(anyhow::Error::msg)?;
        Ok(Some(config))
    }

    /// The proxy of `[auth.proxy]`, if any.
    pub(super) fn proxy(&self) -> anyhow::Result<Option<ProxyAuth>> {
        let Some(file) = &self.proxy else {
            return Ok(None);
        };
        let header = |key: &str, name: &str| {
            name.parse::<HeaderName>()
                .map_err(|_| anyhow::anyhow!("auth.proxy.{key} {name:?} is no header name"))
        };
        anyhow::ensure!(
            !file.trusted.is_empty(),
            "auth.proxy.trusted must list the addresses the proxy connects from"
        );
        let trusted = file
            .trusted
            .iter()
            .map(|entry| {
                entry
                    .parse::<ipnet::IpNet>()
                    .or_else(|_| entry.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                    .map_err(|_| {
                        anyhow::anyhow!(
                            "auth.proxy.trusted: {entry:?} is no IP address or CIDR block"
                        )
                    })
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Some(ProxyAuth {
            user_header: header("user_header", &file.user_header)?,
            email_header: file
                .email_header
                .as_deref()
                .map(|name| header("email_header", name))
                .transpose()?,
            role_header: file
                .role_header
                .as_deref()
                .map(|name| header("role_header", name))
                .transpose()?,
            role_separator: role_separator(file.role_separator.as_deref())?,
            trusted,
            roles: self.roles()?,
        }))
    }
}

/// `auth.proxy.role_separator`: one character that is neither a letter or digit of a
/// group's name nor whitespace, which the trimming of each group would swallow.
fn role_separator(written: Option<&str>) -> anyhow::Result<char> {
    let Some(written) = written else {
        return Ok(slice_http::DEFAULT_ROLE_SEPARATOR);
    };
    let mut chars = written.chars();
    match (chars.next(), chars.next()) {
        (Some(separator), None) if separator.is_ascii_punctuation() => Ok(separator),
        _ => anyhow::bail!(
            "auth.proxy.role_separator must be one ASCII punctuation character \
             (such as \",\" or \";\"), not {written:?}"
        ),
    }
}

/// The client secret in `path`, trimmed. Like the session key and the etcd password
/// files, it must be its owner's alone: whoever reads it can pose as the daemon to the
/// provider, and tightening the mode here would hide that it may have leaked.
fn read_secret(path: &std::path::Path) -> anyhow::Result<String> {
    // Owner-only, and this user's (or root's): the rule of every secret file, checked on
    // the handle it is read from; another user's file here would have sliced pose with
    // their secret.
    const WHAT: &str = "auth.oidc.client_secret_file";
    let shown = path.display();
    let bytes = slice_store::read_secret_file(path, WHAT, false)?
        .ok_or_else(|| anyhow::anyhow!("cannot read {WHAT} {shown}: it does not exist"))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{WHAT} {shown} is not UTF-8 text"))?;
    let secret = text.trim();
    anyhow::ensure!(
        !secret.is_empty(),
        "auth.oidc.client_secret_file {shown} is empty"
    );
    Ok(secret.to_owned())
}

/// The session lifetime: `--session-ttl-seconds`, or one of `auth.session_ttl_seconds`
/// and `auth.session_ttl_hours`, at most a year.
pub(super) fn session_ttl(flag: Option<u64>, auth: &AuthFile) -> anyhow::Result<Duration> {
    const HOUR: u64 = 3600;
    const YEAR: u64 = 24 * 365 * HOUR;
    let seconds = match (flag, auth.session_ttl_seconds, auth.session_ttl_hours) {
        (Some(seconds), _, _) | (None, Some(seconds), None) => seconds,
        (None, Some(_), Some(_)) => {
            anyhow::bail!("set auth.session_ttl_hours or auth.session_ttl_seconds, not both")
        }
        (None, None, Some(hours)) => {
            anyhow::ensure!(
                (1..=24 * 365).contains(&hours),
                "auth.session_ttl_hours must be between 1 and 8760"
            );
            hours.unsigned_abs() * HOUR
        }
        (None, None, None) => return Ok(slice_http::DEFAULT_SESSION_TTL),
    };
    anyhow::ensure!(
        (1..=YEAR).contains(&seconds),
        "the session lifetime must be between 1 second and 8760 hours"
    );
    Ok(Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> AuthFile {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn a_proxy_needs_its_addresses_and_real_header_names() {
        let proxy = parse(
            r#"
            roles = { operator = ["net-admins"], default = "none" }
            proxy = { user_header = "X-Forwarded-User", role_header = "X-Forwarded-Groups", trusted = ["127.0.0.1", "10.0.0.0/8"] }
            "#,
        )
        .proxy()
        .unwrap()
        .unwrap();
        assert_eq!(proxy.user_header, "x-forwarded-user");
        assert_eq!(proxy.trusted.len(), 2);
        assert_eq!(proxy.roles.default_role, None);
        assert_eq!(proxy.roles.operator_values, ["net-admins"]);
        for bad in [
            r#"proxy = { user_header = "X-User", trusted = [] }"#,
            r#"proxy = { user_header = "X User", trusted = ["127.0.0.1"] }"#,
            r#"proxy = { user_header = "X-User", trusted = ["localhost"] }"#,
            r#"roles = { default = "admin" }
               proxy = { user_header = "X-User", trusted = ["::1"] }"#,
        ] {
            assert!(parse(bad).proxy().is_err(), "{bad}");
        }
        assert!(parse("").proxy().unwrap().is_none());
        assert_eq!(parse("").roles().unwrap(), RoleMapping::default());
    }

    #[test]
    fn the_role_separator_is_one_punctuation_character() {
        let separator = |line: &str| {
            parse(&format!(
                "proxy = {{ user_header = \"X-User\", trusted = [\"::1\"]{line} }}"
            ))
            .proxy()
            .map(|proxy| proxy.map(|proxy| proxy.role_separator))
        };
        assert_eq!(separator("").unwrap(), Some(','));
        assert_eq!(separator(", role_separator = \";\"").unwrap(), Some(';'));
        for bad in ["", " ", "ab", ";;", "x", "\\t", "é"] {
            let err = separator(&format!(", role_separator = \"{bad}\""))
                .unwrap_err()
                .to_string();
            assert!(err.contains("auth.proxy.role_separator"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn an_oidc_login_needs_an_owner_only_secret_and_a_callback_url() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "  s3cret\n").unwrap();
        let table = |redirect: &str| {
            parse(&format!(
                r#"
                roles = {{ operator = ["net-admins"] }}
                oidc = {{ issuer = "https://id.example.com", client_id = "sliced", client_secret_file = "{}", redirect_url = "{redirect}" }}
                "#,
                secret.display()
            ))
        };
        let good = table("https://sliced.example.com/auth/oidc/callback");
        for loose in [0o640, 0o604] {
            std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(loose)).unwrap();
            let err = good.oidc().unwrap_err().to_string();
            assert!(err.contains("open to other users"), "{err}");
        }
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let oidc = good.oidc().unwrap().unwrap();
        assert_eq!(oidc.client_secret, "s3cret");
        assert_eq!(oidc.role_claim, "groups");
        assert_eq!(oidc.roles.operator_values, ["net-admins"]);
        for bad in [
            "https://sliced.example.com/login",
            "sliced.example.com/auth/oidc/callback",
        ] {
            let err = table(bad).oidc().unwrap_err().to_string();
            assert!(err.contains("auth.oidc.redirect_url"), "{err}");
        }
        assert!(parse("").oidc().unwrap().is_none());
        let with_method = |method: &str| {
            parse(&format!(
                r#"oidc = {{ issuer = "https://id.example.com", client_id = "sliced", client_secret_file = "{}", redirect_url = "https://sliced.example.com/auth/oidc/callback", token_endpoint_auth_method = "{method}" }}"#,
                secret.display()
            ))
            .oidc()
        };
        let post = with_method("client_secret_post").unwrap().unwrap();
        assert_eq!(post.token_endpoint_auth, Some(ClientAuth::Post));
        let err = with_method("private_key_jwt").unwrap_err().to_string();
        assert!(
            err.contains("auth.oidc.token_endpoint_auth_method"),
            "{err}"
        );
    }
}

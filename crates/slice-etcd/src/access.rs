//! How this process reaches an etcd that is locked down as in production: TLS that
//! checks etcd's certificate and may show one of ours (with etcd's `--client-cert-auth`
//! its common name is the etcd user), and a user with a password (etcd's RBAC). See
//! docs/cluster.md, "A locked-down etcd".

use std::path::{Path, PathBuf};

use etcd_client::{Certificate, ConnectOptions, Identity, TlsOptions};

/// TLS files and credentials for etcd; all unset: plain `http://`, no user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Access {
    /// PEM certificates etcd's certificate must chain to; unset, the system's roots.
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate and its key, shown to etcd.
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// The etcd user, and a file holding its password (owner-only).
    pub user: Option<String>,
    pub password_file: Option<PathBuf>,
}

/// Why the access settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A key or password file that breaks the rule of every secret file (another user's,
    /// open to others).
    #[error(transparent)]
    NotPrivate(#[from] slice_secret::SecretFileError),
    #[error("the etcd password file {} is empty", path.display())]
    EmptyPassword { path: PathBuf },
    #[error("an etcd client certificate needs its key and a key its certificate (--etcd-certfile with --etcd-keyfile)")]
    HalfIdentity,
    #[error("an etcd user needs a password file and a password file its user (--etcd-user with --etcd-password-file)")]
    HalfUser,
    #[error("the etcd CA, certificate and key files are for https:// endpoints; {0} is not one")]
    TlsWithoutHttps(String),
    #[error("the etcd endpoints mix https:// and plain ones: {0}")]
    MixedSchemes(String),
    #[error(
        "etcd at {0} is reached without TLS: the slices, the etcd credentials and the \
         cluster's session key would cross the network in clear. Use https:// endpoints \
         (--etcd-cafile, --etcd-certfile, --etcd-keyfile) or, where the network is \
         trusted, --etcd-allow-plaintext"
    )]
    Plaintext(String),
}

impl Access {
    /// Whether the endpoints are reached over TLS.
    pub fn uses_tls(endpoints: &[String]) -> bool {
        endpoints.iter().any(|endpoint| is_https(endpoint))
    }

    /// The files of these settings that hold a secret, for the caller to check before
    /// they are read: (path, what it is, whether its group may read it, as a TLS
    /// private key's often may).
    pub fn secret_files(&self) -> Vec<(&Path, &'static str, bool)> {
        let mut files = Vec::new();
        if let Some(path) = &self.password_file {
            files.push((path.as_path(), PASSWORD, false));
        }
        if let Some(path) = &self.key_file {
            files.push((path.as_path(), KEY, true));
        }
        files
    }

    /// The one rule for `sliced` and the `slice` tool alike: plain `http://` endpoints
    /// only where `allow_plaintext` says the network to etcd is trusted. Over them the
    /// slices, a user's password (etcd's Authenticate call carries it) and the token
    /// etcd hands back, and what else sliced keeps under the prefix, travel in clear; a
    /// warning at each start would not undo that.
    pub fn refuse_plaintext(
        endpoints: &[String],
        allow_plaintext: bool,
    ) -> Result<(), AccessError> {
        if Self::uses_tls(endpoints) || allow_plaintext {
            return Ok(());
        }
        Err(AccessError::Plaintext(endpoints.join(",")))
    }

    /// The user's name and password, read from the password file.
    pub(crate) fn credentials(&self) -> Result<Option<(String, String)>, AccessError> {
        match (&self.user, &self.password_file) {
            (Some(user), Some(file)) => Ok(Some((user.clone(), read_password(file)?))),
            (None, None) => Ok(None),
            _ => Err(AccessError::HalfUser),
        }
    }

    /// `options` with TLS set up for `endpoints`. The credentials are not in them: the
    /// connection logs each member in itself, so that a member that is down at the start
    /// does not stop the others from being used.
    pub(crate) fn tls_options(
        &self,
        endpoints: &[String],
        options: ConnectOptions,
    ) -> Result<ConnectOptions, AccessError> {
        let identity = match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => {
                Some(Identity::from_pem(read(cert)?, read_secret(key, KEY)?))
            }
            (None, None) => None,
            _ => return Err(AccessError::HalfIdentity),
        };
        let https = endpoints.iter().filter(|e| is_https(e)).count();
        if https == 0 {
            if self.ca_file.is_some() || identity.is_some() {
                let first = endpoints.first().cloned().unwrap_or_default();
                return Err(AccessError::TlsWithoutHttps(first));
            }
            return Ok(options);
        }
        if https != endpoints.len() {
            return Err(AccessError::MixedSchemes(endpoints.join(",")));
        }
        let mut tls = match &self.ca_file {
            Some(ca) => TlsOptions::new().ca_certificate(Certificate::from_pem(read(ca)?)),
            None => TlsOptions::new().with_native_roots(),
        };
        if let Some(identity) = identity {
            tls = tls.identity(identity);
        }
        Ok(options.with_tls(tls))
    }
}

impl Access {
    /// The hint that goes with etcd's refusal to open, as far as these settings are the
    /// likely cause; `connection_closed` when the status carries the transport error that
    /// ended the connection. `None`: not a refusal to explain (a plain connection that
    /// closed is a network fault, not a setting).
    pub(crate) fn refusal_hint(
        &self,
        endpoints: &[String],
        connection_closed: bool,
    ) -> Option<&'static str> {
        let tls = Self::uses_tls(endpoints);
        match (connection_closed, tls, self.cert_file.is_some()) {
            (true, true, false) => {
                Some(" (etcd may require a client certificate: --etcd-certfile and --etcd-keyfile)")
            }
            (true, true, true) => Some(
                " (etcd may not accept this client certificate: is it signed by a CA etcd \
                 trusts, with the client authentication usage?)",
            ),
            (true, false, _) => None,
            (false, ..) => Some(""),
        }
    }
}

fn is_https(endpoint: &str) -> bool {
    endpoint
        .get(..8)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"))
}

fn read(path: &Path) -> Result<Vec<u8>, AccessError> {
    std::fs::read(path).map_err(|source| AccessError::Read {
        path: path.to_owned(),
        source,
    })
}

/// What the key and password files are called in errors, as [`Access::secret_files`]
/// names them.
const KEY: &str = "the etcd client key";
const PASSWORD: &str = "the etcd password file";

/// The content of the secret file `path`, read from the handle the rule of every secret
/// file checked (a TLS key root owns may be its group's too).
fn read_secret(path: &Path, what: &'static str) -> Result<Vec<u8>, AccessError> {
    slice_secret::read_secret_file(path, what, what == KEY)?.ok_or_else(|| AccessError::Read {
        path: path.to_owned(),
        source: std::io::ErrorKind::NotFound.into(),
    })
}

/// The password in `path`, without its trailing newline; the file must be its owner's
/// alone, as the session key's is.
fn read_password(path: &Path) -> Result<String, AccessError> {
    let bytes = read_secret(path, PASSWORD)?;
    let text = String::from_utf8(bytes).map_err(|err| AccessError::Read {
        path: path.to_owned(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, err),
    })?;
    let password = text.trim_end_matches(['\n', '\r']);
    if password.is_empty() {
        return Err(AccessError::EmptyPassword {
            path: path.to_owned(),
        });
    }
    Ok(password.to_owned())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn password_file(dir: &Path, text: &str, mode: u32) -> PathBuf {
        let path = dir.join("password");
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    fn with_user(file: PathBuf) -> Access {
        Access {
            user: Some("sliced".into()),
            password_file: Some(file),
            ..Access::default()
        }
    }

    #[test]
    fn a_password_file_others_may_read_is_refused_and_an_owner_only_one_read() {
        let dir = tempfile::tempdir().unwrap();
        let open = with_user(password_file(dir.path(), "secret\n", 0o644));
        assert!(matches!(
            open.credentials(),
            Err(AccessError::NotPrivate(
                slice_secret::SecretFileError::OpenToOthers { mode: 0o644, .. }
            ))
        ));
        let owned = with_user(password_file(dir.path(), "secret\n", 0o600));
        assert_eq!(
            owned.credentials().unwrap(),
            Some(("sliced".into(), "secret".into()))
        );
        let empty = with_user(password_file(dir.path(), "\n", 0o600));
        assert!(matches!(
            empty.credentials(),
            Err(AccessError::EmptyPassword { .. })
        ));
    }

    #[test]
    fn half_settings_and_tls_files_without_https_are_refused() {
        let user_only = Access {
            user: Some("sliced".into()),
            ..Access::default()
        };
        assert!(matches!(
            user_only.credentials(),
            Err(AccessError::HalfUser)
        ));
        let cert_only = Access {
            cert_file: Some("cert.pem".into()),
            ..Access::default()
        };
        let endpoints = ["https://127.0.0.1:2379".to_owned()];
        assert!(matches!(
            cert_only.tls_options(&endpoints, ConnectOptions::new()),
            Err(AccessError::HalfIdentity)
        ));
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "not checked here").unwrap();
        let ca_only = Access {
            ca_file: Some(ca),
            ..Access::default()
        };
        let plain = ["http://127.0.0.1:2379".to_owned()];
        assert!(matches!(
            ca_only.tls_options(&plain, ConnectOptions::new()),
            Err(AccessError::TlsWithoutHttps(_))
        ));
        let mixed = [plain[0].clone(), endpoints[0].clone()];
        assert!(matches!(
            ca_only.tls_options(&mixed, ConnectOptions::new()),
            Err(AccessError::MixedSchemes(_))
        ));
        assert!(Access::default()
            .tls_options(&plain, ConnectOptions::new())
            .is_ok());
    }
}

//! TLS for the OpenFlow channel, with mutual authentication: the controller shows its
//! certificate, and a switch is served only when its own certificate is signed by the
//! configured CA. rustls does the protocol and the certificate checks.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use tokio_rustls::TlsAcceptor;

/// Where the controller's TLS material lives, all PEM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The controller's certificate chain, leaf first.
    pub cert: PathBuf,
    /// The private key of that certificate (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// The CA certificate(s) that sign the switches' certificates.
    pub ca: PathBuf,
}

/// Why the TLS settings cannot be used. Each names the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read the certificate file {path}: {reason}")]
    Cert { path: PathBuf, reason: String },
    #[error("cannot read the private key file {path}: {reason}")]
    Key { path: PathBuf, reason: String },
    /// The key file breaks the rule of every secret file (another user's, open to others).
    #[error(transparent)]
    NotPrivate(#[from] slice_secret::SecretFileError),
    #[error("cannot use the CA file {path}: {reason}")]
    Ca { path: PathBuf, reason: String },
    // The reason is in the message, so it is no `source`: the chain would say it twice.
    #[error("the certificate {cert} and the key {key} do not go together: {reason}")]
    Mismatch {
        cert: PathBuf,
        key: PathBuf,
        reason: rustls::Error,
    },
}

impl TlsFiles {
    /// Reads the files and builds the acceptor that demands a client certificate signed
    /// by the CA.
    pub fn acceptor(&self) -> Result<TlsAcceptor, TlsError> {
        let cert_error = |reason: String| TlsError::Cert {
            path: self.cert.clone(),
            reason,
        };
        let chain = read_certificates(&self.cert).map_err(cert_error)?;
        let key_error = |reason: String| TlsError::Key {
            path: self.key.clone(),
            reason,
        };
        // Read through the secret-file rule, from the handle it checked; rustls gets the
        // bytes, so that nothing opens the path a second time.
        let pem = slice_secret::read_secret_file(&self.key, "the OpenFlow TLS private key", true)?
            .ok_or_else(|| {
                key_error(std::io::Error::from(std::io::ErrorKind::NotFound).to_string())
            })?;
        let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|err| key_error(pem_reason(err)))?;

        let ca_error = |reason: String| TlsError::Ca {
            path: self.ca.clone(),
            reason,
        };
        let mut roots = RootCertStore::empty();
        for ca in read_certificates(&self.ca).map_err(ca_error)? {
            roots
                .add(ca)
                .map_err(|err| ca_error(format!("not a usable CA certificate: {err}")))?;
        }

        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
                .build()
                .map_err(|err| ca_error(err.to_string()))?;
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            // The ring provider supports the safe defaults; an error here would be a bug
            // in the provider, reported against the certificate rather than hidden.
            .map_err(|err| cert_error(err.to_string()))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain, key)
            .map_err(|reason| TlsError::Mismatch {
                cert: self.cert.clone(),
                key: self.key.clone(),
                reason,
            })?;
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

/// Every certificate in a PEM file; at least one.
fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(pem_reason)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem_reason)?;
    if certificates.is_empty() {
        return Err("no PEM certificate in it".into());
    }
    Ok(certificates)
}

fn pem_reason(err: rustls::pki_types::pem::Error) -> String {
    match err {
        rustls::pki_types::pem::Error::Io(err) => err.to_string(),
        rustls::pki_types::pem::Error::NoItemsFound => "no PEM item of the right kind".into(),
        other => format!("malformed PEM: {other}"),
    }
}

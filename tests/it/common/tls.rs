//! Certificates made by the test (rcgen) and TLS clients that play switches.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::io::AsyncReadExt;

/// The name in the controller's certificate that the switches check.
const CONTROLLER_NAME: &str = "localhost";

/// A CA with the controller's certificate, written as PEM files into a directory.
pub(crate) struct Pki {
    ca: rcgen::Certificate,
    ca_key: KeyPair,
    pub ca_file: PathBuf,
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

impl Pki {
    pub(crate) fn new(dir: &Path, name: &str) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, format!("{name} CA"));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = params.self_signed(&ca_key).unwrap();

        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(vec![CONTROLLER_NAME.into(), "127.0.0.1".into()]).unwrap();
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params.signed_by(&key, &ca, &ca_key).unwrap();

        let pki = Self {
            ca_file: dir.join(format!("{name}-ca.pem")),
            cert_file: dir.join(format!("{name}-cert.pem")),
            key_file: dir.join(format!("{name}-key.pem")),
            ca,
            ca_key,
        };
        std::fs::write(&pki.ca_file, pki.ca.pem()).unwrap();
        std::fs::write(&pki.cert_file, cert.pem()).unwrap();
        write_key(&pki.key_file, &key.serialize_pem());
        pki
    }

    /// The daemon's flags for TLS on `addr` with this PKI.
    pub(crate) fn flags(&self, addr: SocketAddr) -> Vec<String> {
        vec![
            "--openflow-tls".into(),
            addr.to_string(),
            "--openflow-cert".into(),
            self.cert_file.display().to_string(),
            "--openflow-key".into(),
            self.key_file.display().to_string(),
            "--openflow-ca".into(),
            self.ca_file.display().to_string(),
        ]
    }

    /// A switch's client certificate signed by this CA, as rustls takes it.
    fn client_identity(
        &self,
        switch: &str,
    ) -> (
        Vec<rustls::pki_types::CertificateDer<'static>>,
        PrivateKeyDer<'static>,
    ) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, switch);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        (vec![cert.der().clone()], key)
    }

    /// A client certificate with common name `name`, signed by this CA, written as PEM
    /// files beside the others: (certificate, key).
    pub(crate) fn client_files(&self, name: &str) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        let dir = self.ca_file.parent().unwrap();
        let files = (
            dir.join(format!("client-{name}-cert.pem")),
            dir.join(format!("client-{name}-key.pem")),
        );
        std::fs::write(&files.0, cert.pem()).unwrap();
        write_key(&files.1, &key.serialize_pem());
        files
    }

    /// A client that trusts `server`'s CA and shows a certificate from `self`'s CA.
    pub(crate) fn client_for(&self, server: &Pki, switch: &str) -> Arc<ClientConfig> {
        let (chain, key) = self.client_identity(switch);
        Arc::new(
            client_builder(server)
                .with_client_auth_cert(chain, key)
                .unwrap(),
        )
    }

    /// A client of this PKI's controller with a certificate this CA signed.
    pub(crate) fn client(&self, switch: &str) -> Arc<ClientConfig> {
        self.client_for(self, switch)
    }

    /// A client of this PKI's controller that shows no certificate at all.
    pub(crate) fn anonymous_client(&self) -> Arc<ClientConfig> {
        Arc::new(client_builder(self).with_no_client_auth())
    }
}

fn client_builder(
    server: &Pki,
) -> rustls::ConfigBuilder<ClientConfig, rustls::client::WantsClientCert> {
    let mut roots = RootCertStore::empty();
    roots.add(server.ca.der().clone()).unwrap();
    ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn connect(
    controller: SocketAddr,
    client: Arc<ClientConfig>,
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let tcp = tokio::net::TcpStream::connect(controller).await?;
    let name = ServerName::try_from(CONTROLLER_NAME).unwrap();
    tokio_rustls::TlsConnector::from(client)
        .connect(name, tcp)
        .await
}

/// A loopback stream whose far end goes to `controller` over TLS: an emulated switch keeps
/// speaking plain bytes while the wire to the controller is TLS. The stream ends when the
/// controller ends the TLS connection or refuses the handshake.
pub(crate) fn bridge(controller: SocketAddr, client: Arc<ClientConfig>) -> TcpStream {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let local = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let Ok((plain, _)) = listener.accept() else {
            return;
        };
        runtime().block_on(async move {
            plain.set_nonblocking(true).unwrap();
            let plain = tokio::net::TcpStream::from_std(plain).unwrap();
            let Ok(tls) = connect(controller, client).await else {
                return;
            };
            let (mut plain_read, mut plain_write) = plain.into_split();
            let (mut tls_read, mut tls_write) = tokio::io::split(tls);
            // Either side ending ends both: the emulated switch sees the controller close.
            tokio::select! {
                _ = tokio::io::copy(&mut plain_read, &mut tls_write) => {}
                _ = tokio::io::copy(&mut tls_read, &mut plain_write) => {}
            }
        });
    });
    TcpStream::connect(local).unwrap()
}

/// Whether the controller refuses a TLS client: the handshake fails, or the connection
/// ends before any OpenFlow byte arrives. False when OpenFlow (the controller's HELLO)
/// comes through within `wait`.
pub(crate) fn refused(controller: SocketAddr, client: Arc<ClientConfig>, wait: Duration) -> bool {
    runtime().block_on(async move {
        let Ok(mut tls) = connect(controller, client).await else {
            return true;
        };
        let mut first = [0u8; 8];
        match tokio::time::timeout(wait, tls.read(&mut first)).await {
            Ok(Ok(0)) | Ok(Err(_)) => true,
            Ok(Ok(_)) => false,
            Err(_) => panic!("the controller neither refused nor served the client"),
        }
    })
}

/// A private key file as sliced takes one: its owner's alone.
fn write_key(path: &Path, pem: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .unwrap();
    file.write_all(pem.as_bytes()).unwrap();
}

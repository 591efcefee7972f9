//! Certificates for the lab's TLS runs, made with rcgen: one CA signs both sliced's
//! certificate and the one Open vSwitch shows (`ovs-vsctl set-ssl`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};

/// The PEM files of one stage's PKI.
#[derive(Debug, Clone)]
pub(super) struct LabPki {
    pub ca: PathBuf,
    pub controller_cert: PathBuf,
    pub controller_key: PathBuf,
    pub switch_cert: PathBuf,
    pub switch_key: PathBuf,
}

impl LabPki {
    pub(super) fn create(dir: &Path) -> anyhow::Result<LabPki> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let ca_key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, "sliced lab CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = params.self_signed(&ca_key)?;

        let leaf = |name: &str, usage: ExtendedKeyUsagePurpose| -> anyhow::Result<_> {
            let key = KeyPair::generate()?;
            let mut params = CertificateParams::new(vec![name.to_owned()])?;
            params.distinguished_name.push(DnType::CommonName, name);
            params.extended_key_usages = vec![usage];
            let cert = params.signed_by(&key, &ca, &ca_key)?;
            Ok((cert.pem(), key.serialize_pem()))
        };
        let (controller_cert, controller_key) =
            leaf("127.0.0.1", ExtendedKeyUsagePurpose::ServerAuth)?;
        let (switch_cert, switch_key) = leaf("lab-switch", ExtendedKeyUsagePurpose::ClientAuth)?;

        let pki = LabPki {
            ca: dir.join("cacert.pem"),
            controller_cert: dir.join("sliced-cert.pem"),
            controller_key: dir.join("sliced-privkey.pem"),
            switch_cert: dir.join("switch-cert.pem"),
            switch_key: dir.join("switch-privkey.pem"),
        };
        for (path, text) in [
            (&pki.ca, ca.pem()),
            (&pki.controller_cert, controller_cert),
            (&pki.controller_key, controller_key),
            (&pki.switch_cert, switch_cert),
            (&pki.switch_key, switch_key),
        ] {
            std::fs::write(path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        // sliced refuses a private key others may read; Open vSwitch runs as root.
        for key in [&pki.controller_key, &pki.switch_key] {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(key, std::fs::Permissions::from_mode(0o600))
                .with_context(|| format!("cannot make {} owner-only", key.display()))?;
        }
        Ok(pki)
    }

    /// sliced's flags for TLS only, on `port`.
    pub(super) fn sliced_args(&self, port: u16) -> Vec<String> {
        let path = |p: &Path| p.display().to_string();
        vec![
            "--openflow".into(),
            "none".into(),
            "--openflow-tls".into(),
            format!("127.0.0.1:{port}"),
            "--openflow-cert".into(),
            path(&self.controller_cert),
            "--openflow-key".into(),
            path(&self.controller_key),
            "--openflow-ca".into(),
            path(&self.ca),
        ]
    }

    /// `ovs-vsctl set-ssl`: the key and certificate every bridge shows, and the CA that
    /// must have signed the controller's.
    pub(super) fn set_ssl_args(&self) -> Vec<String> {
        vec![
            "set-ssl".into(),
            self.switch_key.display().to_string(),
            self.switch_cert.display().to_string(),
            self.ca.display().to_string(),
        ]
    }
}

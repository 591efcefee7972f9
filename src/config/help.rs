//! The examples of `sliced --help`, and the one place that names where the Debian
//! package installs the settings, which the help, the unit, the package's assets and its
//! test must all agree on (checked below).

/// Where the package installs `contrib/sliced.toml`, and the unit reads it from.
pub(crate) const PACKAGED_CONFIG: &str = "/etc/sliced/sliced.toml";

pub(super) fn examples() -> String {
    format!(
        "Examples:
  sliced                                  # foreground, defaults
  sliced --db /var/lib/sliced -d --pid-file /run/sliced.pid
  sliced --config {PACKAGED_CONFIG} --check-config
  sliced --config {PACKAGED_CONFIG} --log-level debug
  sliced --etcd http://10.0.0.1:2379,http://10.0.0.2:2379,http://10.0.0.3:2379
  sliced --openflow-tls 0.0.0.0:6653 --openflow-cert sc-cert.pem \\
         --openflow-key sc-privkey.pem --openflow-ca switchca/cacert.pem
  sliced completions bash > ~/.local/share/bash-completion/completions/sliced
  RUST_LOG=debug,sliced::http=info sliced --http 0.0.0.0:9292   # with the access log"
    )
}

#[cfg(test)]
mod tests {
    use super::PACKAGED_CONFIG;

    fn read(path: &str) -> String {
        std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{path}: {err}"))
    }

    /// The package's asset, the unit, the package test and the docs name the same file
    /// as the help: the help once named /etc/sliced.toml, which the package never made.
    #[test]
    fn the_packaged_settings_path_is_one_path() {
        let asset = format!(
            "[\"contrib/sliced.toml\", \"{}\", \"644\"]",
            PACKAGED_CONFIG.trim_start_matches('/')
        );
        assert!(read("Cargo.toml").contains(&asset), "Cargo.toml: {asset}");
        let exec = format!("ExecStart=/usr/bin/sliced --config {PACKAGED_CONFIG}\n");
        assert!(read("contrib/sliced.service").contains(&exec), "{exec}");
        for file in [
            "xtask/src/deb.rs",
            "docs/operations.md",
            "contrib/sliced.toml",
        ] {
            assert!(read(file).contains(PACKAGED_CONFIG), "{file}");
        }
        for file in ["README.md", "docs/operations.md", "contrib/sliced.toml"] {
            assert!(!read(file).contains("/etc/sliced.toml"), "{file}");
        }
        assert!(super::examples().contains(&format!("--config {PACKAGED_CONFIG}")));
    }
}

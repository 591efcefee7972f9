//! Listener addresses as the settings give them, typed once at start: an address that may
//! be turned off, an address resolved to sockets, and a datapath id.

use std::convert::Infallible;
use std::net::{SocketAddr, ToSocketAddrs};

use anyhow::Context;
use serde::Deserialize;

/// The `--openflow` value that turns plain TCP off.
pub(super) const OPENFLOW_OFF: &str = "none";

/// A listener that the settings may turn off with [`OPENFLOW_OFF`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub(crate) enum Listen {
    Off,
    /// As written: the controller binds it, and a name is allowed.
    At(String),
}

impl Listen {
    /// For clap, which takes any error; this parse cannot fail.
    pub(crate) fn parse(text: &str) -> Result<Self, Infallible> {
        Ok(Self::from(text.to_owned()))
    }
}

impl From<String> for Listen {
    fn from(text: String) -> Self {
        if text == OPENFLOW_OFF {
            Self::Off
        } else {
            Self::At(text)
        }
    }
}

/// A TCP listener's address, resolved once: `localhost:9292` is as good as `127.0.0.1:9292`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListenAddr {
    /// As written, for messages, for what the cluster shows, and because its host part is
    /// a name clients may use in `Host`.
    pub written: String,
    pub resolved: Vec<SocketAddr>,
}

impl ListenAddr {
    /// Resolves `written`, the address of `what` ("the HTTP address") given by `setting`
    /// (the flag and the settings key, named in every message so the operator knows what
    /// to change).
    pub(crate) fn resolve(written: String, what: &str, setting: &str) -> anyhow::Result<Self> {
        check_host_port(&written, what, setting)?;
        let resolved = written
            .to_socket_addrs()
            .with_context(|| format!("cannot resolve {what} {written} ({setting})"))?
            .collect();
        Ok(Self { written, resolved })
    }
}

/// A listener's address is HOST:PORT; a bare port (`--http 9299`), the commonest slip, is
/// answered with the address it probably meant.
pub(crate) fn check_host_port(written: &str, what: &str, setting: &str) -> anyhow::Result<()> {
    let port = written
        .rsplit_once(':')
        .and_then(|(host, port)| (!host.is_empty()).then_some(port))
        .and_then(|port| port.parse::<u16>().ok());
    if port.is_some() {
        return Ok(());
    }
    let example = match written.parse::<u16>() {
        Ok(port) => format!("127.0.0.1:{port}, or 0.0.0.0:{port} for every interface"),
        Err(_) => "127.0.0.1:9292".to_owned(),
    };
    anyhow::bail!("{what} {written:?} is not HOST:PORT: give one such as {example} ({setting})")
}

/// Why a listener could not be bound, with the setting that moves it.
pub(crate) fn listen_failure(
    listener: &str,
    written: &str,
    err: &std::io::Error,
    setting: &str,
) -> anyhow::Error {
    let advice = match err.kind() {
        std::io::ErrorKind::AddrInUse => "stop what listens there, or choose another address",
        _ => "choose another address",
    };
    anyhow::anyhow!("cannot listen for {listener} on {written}: {err}; {advice} with {setting}")
}

/// A text that is no datapath id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DpidError(String);

impl std::fmt::Display for DpidError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?} is not a datapath id (0x<hex> or decimal, 64 bits)",
            self.0
        )
    }
}

impl std::error::Error for DpidError {}

/// A datapath id as `0x` and hex digits, the form the API shows, or decimal.
pub(super) fn parse_dpid(text: &str) -> Result<u64, DpidError> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            u64::from_str_radix(hex, 16).ok()
        }
        Some(_) => None,
        None if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => text.parse().ok(),
        None => None,
    };
    parsed.ok_or_else(|| DpidError(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_turns_a_listener_off() {
        assert_eq!(Listen::from("none".to_owned()), Listen::Off);
        assert_eq!(
            Listen::from("0.0.0.0:6653".to_owned()),
            Listen::At("0.0.0.0:6653".to_owned())
        );
    }

    #[test]
    fn a_host_name_resolves() {
        let addr = ListenAddr::resolve("localhost:9292".to_owned(), "the address", "--x").unwrap();
        assert!(addr.resolved.iter().all(|a| a.port() == 9292));
        let err = ListenAddr::resolve("no port".to_owned(), "the address", "--x").unwrap_err();
        assert!(err.to_string().contains("is not HOST:PORT"), "{err}");
        let err = ListenAddr::resolve("9299".to_owned(), "the address", "--x").unwrap_err();
        assert!(err.to_string().contains("127.0.0.1:9299"), "{err}");
        let err = ListenAddr::resolve("no.such.host.invalid:1".to_owned(), "the address", "--x")
            .unwrap_err();
        assert!(
            err.to_string().starts_with("cannot resolve the address"),
            "{err}"
        );
    }

    #[test]
    fn datapath_ids_in_hex_or_decimal() {
        assert_eq!(parse_dpid("0x1f"), Ok(31));
        assert_eq!(parse_dpid("31"), Ok(31));
        for bad in ["", "0x", "0xzz", "-1", "0x10000000000000000"] {
            let err = parse_dpid(bad).unwrap_err();
            assert!(err.to_string().contains("is not a datapath id"), "{bad}");
        }
    }
}

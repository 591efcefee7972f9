//! `SwitchLimitArgs`: what one switch may make the controller hold or do, with the LLDP
//! secret and the flow-table verification beside them; their flags, the same keys in
//! `[controller]`, the ranges both keep, and a flag winning over its key.

use std::path::PathBuf;

use super::file::ControllerFile;

/// What one switch (or the hosts behind it) may make the controller hold or do.
#[derive(Debug, Default, Clone, clap::Args)]
pub(crate) struct SwitchLimitArgs {
    /// File with the secret that signs LLDP probes (share it within a cluster)
    /// [default: a random secret per start]
    #[arg(long, value_name = "FILE")]
    pub lldp_secret_file: Option<PathBuf>,
    /// Ports a switch may announce; more closes its connection [default: 4096]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_ports_per_switch: Option<u32>,
    /// Bytes of port list a switch may send in its handshake [default: 1048576]
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(65536..))]
    pub max_multipart_bytes: Option<u64>,
    /// Bytes that may wait to be written to one switch [default: 16777216]
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(65536..))]
    pub max_outbound_bytes: Option<u64>,
    /// Hosts learned per switch port; hosts bound in a slice are exempt [default: 256]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_hosts_per_port: Option<u32>,
    /// Hosts learned per switch [default: 16384]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_hosts_per_switch: Option<u32>,
    /// Seconds before an idle host is forgotten [default: 300]
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u32).range(1..))]
    pub host_idle_timeout: Option<u32>,
    /// PACKET_INs per second a switch may send; the rest are dropped [default: 1000]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub packet_in_rate: Option<u32>,
    /// PACKET_INs a switch may send in one burst [default: 2000]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub packet_in_burst: Option<u32>,
    /// PACKET_INs per second from one switch port, burst twice that [default: 250]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub packet_in_port_rate: Option<u32>,
    /// OpenFlow connections open at once; more are closed at once (never more than a
    /// quarter of the open files limit) [default: 1024]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_switch_connections: Option<u32>,
    /// OpenFlow connections in their handshake past the HELLO (sent at once) [default: 64]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_pending_handshakes: Option<u32>,
    /// Seconds within which every switch's flow tables are read back, verified and
    /// repaired (besides after each pipeline write); 0 turns verification off [default: 30]
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub verification_interval: Option<u64>,
    /// Violations of each kind a verification report lists; its totals count them all
    /// [default: 100]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub verification_list_limit: Option<u32>,
}

impl SwitchLimitArgs {
    /// The same ranges as the flags, for values from the file.
    pub(super) fn check(&self) -> anyhow::Result<()> {
        let counts = [
            ("max_ports_per_switch", self.max_ports_per_switch),
            ("max_hosts_per_port", self.max_hosts_per_port),
            ("max_hosts_per_switch", self.max_hosts_per_switch),
            ("host_idle_timeout", self.host_idle_timeout),
            ("packet_in_rate", self.packet_in_rate),
            ("packet_in_burst", self.packet_in_burst),
            ("packet_in_port_rate", self.packet_in_port_rate),
            ("max_switch_connections", self.max_switch_connections),
            ("max_pending_handshakes", self.max_pending_handshakes),
        ];
        for (key, value) in counts {
            anyhow::ensure!(value != Some(0), "controller.{key} must be at least 1");
        }
        anyhow::ensure!(
            self.verification_interval
                .map_or(true, |secs| secs <= 86_400),
            "controller.verification_interval must be between 0 and 86400"
        );
        anyhow::ensure!(
            (self.verification_list_limit).map_or(true, |n| (1..=100_000).contains(&n)),
            "controller.verification_list_limit must be between 1 and 100000"
        );
        let sizes = [
            ("max_multipart_bytes", self.max_multipart_bytes),
            ("max_outbound_bytes", self.max_outbound_bytes),
        ];
        for (key, value) in sizes {
            anyhow::ensure!(
                value.map_or(true, |bytes| bytes >= 65536),
                "controller.{key} must be at least 65536"
            );
        }
        Ok(())
    }

    /// Each setting from the flags, else from the file.
    pub(super) fn or(&self, file: ControllerFile) -> SwitchLimitArgs {
        SwitchLimitArgs {
            lldp_secret_file: self.lldp_secret_file.clone().or(file.lldp_secret_file),
            max_ports_per_switch: self.max_ports_per_switch.or(file.max_ports_per_switch),
            max_multipart_bytes: self.max_multipart_bytes.or(file.max_multipart_bytes),
            max_outbound_bytes: self.max_outbound_bytes.or(file.max_outbound_bytes),
            max_hosts_per_port: self.max_hosts_per_port.or(file.max_hosts_per_port),
            max_hosts_per_switch: self.max_hosts_per_switch.or(file.max_hosts_per_switch),
            host_idle_timeout: self.host_idle_timeout.or(file.host_idle_timeout),
            packet_in_rate: self.packet_in_rate.or(file.packet_in_rate),
            packet_in_burst: self.packet_in_burst.or(file.packet_in_burst),
            packet_in_port_rate: self.packet_in_port_rate.or(file.packet_in_port_rate),
            max_switch_connections: self.max_switch_connections.or(file.max_switch_connections),
            max_pending_handshakes: self.max_pending_handshakes.or(file.max_pending_handshakes),
            verification_interval: self.verification_interval.or(file.verification_interval),
            verification_list_limit: (self.verification_list_limit)
                .or(file.verification_list_limit),
        }
    }
}

//! How the controller runs: the settings of the engine, the sessions and the server.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::EngineConfig;
use crate::metrics::ControllerMetrics;
use crate::session::SessionConfig;

/// How the controller runs.
#[derive(Debug, Clone)]
pub struct ControllerConfig {
    pub engine: EngineConfig,
    /// How often LLDP goes out of every port (and stale links are dropped).
    pub lldp_interval: Duration,
    /// A switch that says nothing for this long is sent an echo request...
    pub echo_interval: Duration,
    /// ...and one silent for this long is disconnected.
    pub dead_after: Duration,
    /// The time a switch has to complete the handshake (the TLS handshake, where there
    /// is one, gets the same time again).
    pub handshake_timeout: Duration,
    /// The datapath ids allowed to connect; None lets any in.
    pub allowed_dpids: Option<BTreeSet<u64>>,
    /// Bytes of multipart replies (the port list) a switch may send in its handshake.
    pub max_multipart_bytes: usize,
    /// Bytes of commands that may wait for one switch, queued or unwritten; a switch
    /// that lets more pile up, or does not take a write within `dead_after`, is
    /// disconnected.
    pub max_outbound_bytes: usize,
    /// PACKET_INs per second a switch may send on average, and in a burst; the rest
    /// are dropped by its connection (and counted).
    pub packet_in_rate: u32,
    pub packet_in_burst: u32,
    /// PACKET_INs per second from any one ingress port (burst twice that), so that one
    /// flooding host leaves the rest of the switch's budget to the others.
    pub packet_in_port_rate: u32,
    /// OpenFlow connections open at once, over both listeners; more are closed at once.
    /// Never more than a quarter of the open-files limit, whatever is configured.
    pub max_switch_connections: usize,
    /// Of those, connections in their OpenFlow handshake past the HELLO, which every
    /// connection is sent at once: a peer that answers the HELLO and says nothing more
    /// holds one for up to `handshake_timeout`.
    pub max_pending_handshakes: usize,
    /// How often every switch's flow tables are read back and verified (besides after
    /// each pipeline write); zero turns the data-plane verification off.
    pub verification_interval: Duration,
    /// Violations of each kind a verification report lists (its totals count them all).
    pub verification_list_limit: usize,
    /// Where the controller counts what it does; counters nobody reads by default.
    pub metrics: Arc<ControllerMetrics>,
    /// Set by [`crate::Controller::start_in`] when the instance is one of a cluster: its
    /// sessions then write nothing until a switch confirms it as master.
    pub(crate) in_cluster: bool,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        let mut config = Self {
            engine: EngineConfig::default(),
            lldp_interval: Duration::ZERO,
            echo_interval: Duration::from_secs(5),
            dead_after: Duration::from_secs(15),
            handshake_timeout: Duration::from_secs(10),
            allowed_dpids: None,
            max_multipart_bytes: 1 << 20,
            max_outbound_bytes: 16 << 20,
            packet_in_rate: 1000,
            packet_in_burst: 2000,
            packet_in_port_rate: 250,
            max_switch_connections: 1024,
            max_pending_handshakes: 64,
            verification_interval: crate::verification::DEFAULT_VERIFICATION_INTERVAL,
            verification_list_limit: slice_verify::VIOLATIONS_KEPT,
            metrics: Arc::default(),
            in_cluster: false,
        };
        config.set_lldp_interval(crate::engine::DEFAULT_LLDP_INTERVAL);
        config
    }
}

impl ControllerConfig {
    /// Sets how often LLDP goes out, and with it how long an unconfirmed link lives
    /// ([`crate::engine::link_max_age`], up to [`crate::engine::link_age_ceiling`] on a
    /// late switch) and how fast a flapping link's penalty decays.
    pub fn set_lldp_interval(&mut self, interval: Duration) {
        self.lldp_interval = interval;
        self.engine.link_max_age = crate::engine::link_max_age(interval);
        self.engine.link_age_ceiling = crate::engine::link_age_ceiling(interval);
        self.engine.link_flap_half_life = crate::engine::link_flap_half_life(interval);
    }

    /// LLDP PACKET_INs per second one port may send (burst twice that), outside the
    /// switch's PACKET_IN budget: a link port receives one probe per interval, so two
    /// per interval leave room for a late one and still bound a forged-LLDP flood.
    pub fn lldp_port_rate(&self) -> u32 {
        let interval_ms = self.lldp_interval.as_millis().max(1);
        u32::try_from(2000 / interval_ms).unwrap_or(u32::MAX).max(2)
    }

    /// What each switch session needs of these settings.
    pub fn session(&self) -> SessionConfig {
        SessionConfig {
            handshake_timeout: self.handshake_timeout,
            echo_interval: self.echo_interval,
            dead_after: self.dead_after,
            allowed_dpids: self.allowed_dpids.clone(),
            max_multipart_bytes: self.max_multipart_bytes,
            max_ports_per_switch: self.engine.max_ports_per_switch,
            max_outbound_bytes: self.max_outbound_bytes,
            packet_in_rate: self.packet_in_rate,
            packet_in_burst: self.packet_in_burst,
            packet_in_port_rate: self.packet_in_port_rate,
            lldp_port_rate: self.lldp_port_rate(),
            role_gated: self.in_cluster,
        }
    }
}

//! Port descriptions: 1.0's `ofp_phy_port` and 1.3's `ofp_port`.

use crate::port;
use crate::wire::sub;
use crate::Error;

/// Size of the NUL-padded port name field.
const NAME_LEN: usize = 16;
/// `OFPPC_PORT_DOWN`: the port is administratively down.
pub const CONFIG_PORT_DOWN: u32 = 1 << 0;
/// `OFPPS_LINK_DOWN`: no physical link.
pub const STATE_LINK_DOWN: u32 = 1 << 0;

/// Byte offsets of 1.0's `ofp_phy_port`.
mod field_v10 {
    pub(super) const PORT_NO: usize = 0;
    pub(super) const HW_ADDR: usize = 2;
    pub(super) const NAME: usize = 8;
    pub(super) const CONFIG: usize = 24;
    pub(super) const STATE: usize = 28;
    pub(super) const CURR: usize = 32;
    pub(super) const ADVERTISED: usize = 36;
    pub(super) const SUPPORTED: usize = 40;
    pub(super) const PEER: usize = 44;
}

/// Length of 1.0's `ofp_phy_port`.
pub const PHY_PORT_V10_LEN: usize = 48;

/// Byte offsets of 1.3's `ofp_port` (4 pad bytes after the port number, 2 after the
/// address).
mod field_v13 {
    pub(super) const PORT_NO: usize = 0;
    pub(super) const HW_ADDR: usize = 8;
    pub(super) const NAME: usize = 16;
    pub(super) const CONFIG: usize = 32;
    pub(super) const STATE: usize = 36;
    pub(super) const CURR: usize = 40;
    pub(super) const ADVERTISED: usize = 44;
    pub(super) const SUPPORTED: usize = 48;
    pub(super) const PEER: usize = 52;
    pub(super) const CURR_SPEED: usize = 56;
    pub(super) const MAX_SPEED: usize = 60;
}

/// Length of 1.3's `ofp_port`.
pub const PORT_V13_LEN: usize = 64;

view! {
    /// A view of OpenFlow 1.0's `ofp_phy_port` (48 bytes).
    PhyPortV10
}

fields!(PhyPortV10 {
    /// 16-bit port number (see [`crate::port`] for the reserved ones).
    port_no / set_port_no: u16 = field_v10::PORT_NO;
    /// The port's MAC address.
    hw_addr / set_hw_addr: [u8; 6] = field_v10::HW_ADDR;
    /// The NUL-padded name bytes.
    name_bytes / set_name_bytes: [u8; NAME_LEN] = field_v10::NAME;
    /// `OFPPC_*` configuration bits.
    config / set_config: u32 = field_v10::CONFIG;
    /// `OFPPS_*` state bits.
    state / set_state: u32 = field_v10::STATE;
    /// Current `OFPPF_*` features.
    curr / set_curr: u32 = field_v10::CURR;
    /// Advertised features.
    advertised / set_advertised: u32 = field_v10::ADVERTISED;
    /// Supported features.
    supported / set_supported: u32 = field_v10::SUPPORTED;
    /// Features advertised by the link partner.
    peer / set_peer: u32 = field_v10::PEER;
});

impl<T: AsRef<[u8]>> PhyPortV10<T> {
    /// Checks that the buffer holds the whole structure.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("ofp_phy_port", self.buffer.as_ref(), PHY_PORT_V10_LEN)
    }
}

view! {
    /// A view of OpenFlow 1.3's `ofp_port` (64 bytes).
    PortV13
}

fields!(PortV13 {
    /// 32-bit port number.
    port_no / set_port_no: u32 = field_v13::PORT_NO;
    /// The port's MAC address.
    hw_addr / set_hw_addr: [u8; 6] = field_v13::HW_ADDR;
    /// The NUL-padded name bytes.
    name_bytes / set_name_bytes: [u8; NAME_LEN] = field_v13::NAME;
    /// `OFPPC_*` configuration bits.
    config / set_config: u32 = field_v13::CONFIG;
    /// `OFPPS_*` state bits.
    state / set_state: u32 = field_v13::STATE;
    /// Current `OFPPF_*` features.
    curr / set_curr: u32 = field_v13::CURR;
    /// Advertised features.
    advertised / set_advertised: u32 = field_v13::ADVERTISED;
    /// Supported features.
    supported / set_supported: u32 = field_v13::SUPPORTED;
    /// Features advertised by the link partner.
    peer / set_peer: u32 = field_v13::PEER;
    /// Current bit rate in kb/s.
    curr_speed / set_curr_speed: u32 = field_v13::CURR_SPEED;
    /// Maximum bit rate in kb/s.
    max_speed / set_max_speed: u32 = field_v13::MAX_SPEED;
});

impl<T: AsRef<[u8]>> PortV13<T> {
    /// Checks that the buffer holds the whole structure.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("ofp_port", self.buffer.as_ref(), PORT_V13_LEN)
    }
}

/// A port description, in either version's terms.
///
/// 1.0 has no `curr_speed` / `max_speed`: they are 0 after parsing a 1.0 port and not
/// sent on 1.0. The name travels in a 16-byte NUL-padded field: both parsing
/// and emitting keep at most 15 bytes of it, cut at a character boundary, so that a
/// NUL always ends it; parsing stops at the first NUL and replaces invalid UTF-8.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PortDesc {
    /// Port number, 32-bit numbering.
    pub port_no: u32,
    /// MAC address.
    pub hw_addr: [u8; 6],
    /// Human-readable name.
    pub name: String,
    /// `OFPPC_*` configuration bits.
    pub config: u32,
    /// `OFPPS_*` state bits.
    pub state: u32,
    /// Current features.
    pub curr: u32,
    /// Advertised features.
    pub advertised: u32,
    /// Supported features.
    pub supported: u32,
    /// Link partner's advertised features.
    pub peer: u32,
    /// Current bit rate in kb/s (1.3 only).
    pub curr_speed: u32,
    /// Maximum bit rate in kb/s (1.3 only).
    pub max_speed: u32,
}

impl PortDesc {
    /// Whether the port can carry traffic: neither administratively down
    /// (`OFPPC_PORT_DOWN`) nor without link (`OFPPS_LINK_DOWN`).
    pub fn is_live(&self) -> bool {
        self.config & CONFIG_PORT_DOWN == 0 && self.state & STATE_LINK_DOWN == 0
    }

    /// Reads a 1.0 port.
    pub fn parse_v10<T: AsRef<[u8]>>(view: &PhyPortV10<T>) -> Result<PortDesc, Error> {
        view.check_len()?;
        Ok(PortDesc {
            port_no: port::from_v10(view.port_no()),
            hw_addr: view.hw_addr(),
            name: decode_name(&view.name_bytes()),
            config: view.config(),
            state: view.state(),
            curr: view.curr(),
            advertised: view.advertised(),
            supported: view.supported(),
            peer: view.peer(),
            curr_speed: 0,
            max_speed: 0,
        })
    }

    /// Writes a 1.0 port into a view of [`PHY_PORT_V10_LEN`] bytes. Fails when the port
    /// number has no 1.0 form.
    pub fn emit_v10<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        view: &mut PhyPortV10<T>,
    ) -> Result<(), Error> {
        view.set_port_no(port::encode_v10("port number", self.port_no)?);
        view.set_hw_addr(self.hw_addr);
        view.set_name_bytes(encode_name(&self.name));
        view.set_config(self.config);
        view.set_state(self.state);
        view.set_curr(self.curr);
        view.set_advertised(self.advertised);
        view.set_supported(self.supported);
        view.set_peer(self.peer);
        Ok(())
    }

    /// Reads a 1.3 port.
    pub fn parse_v13<T: AsRef<[u8]>>(view: &PortV13<T>) -> Result<PortDesc, Error> {
        view.check_len()?;
        Ok(PortDesc {
            port_no: view.port_no(),
            hw_addr: view.hw_addr(),
            name: decode_name(&view.name_bytes()),
            config: view.config(),
            state: view.state(),
            curr: view.curr(),
            advertised: view.advertised(),
            supported: view.supported(),
            peer: view.peer(),
            curr_speed: view.curr_speed(),
            max_speed: view.max_speed(),
        })
    }

    /// Writes a 1.3 port into a view of [`PORT_V13_LEN`] bytes (pad bytes are left as
    /// they are, zero in a fresh buffer).
    pub fn emit_v13<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut PortV13<T>) {
        view.set_port_no(self.port_no);
        view.set_hw_addr(self.hw_addr);
        view.set_name_bytes(encode_name(&self.name));
        view.set_config(self.config);
        view.set_state(self.state);
        view.set_curr(self.curr);
        view.set_advertised(self.advertised);
        view.set_supported(self.supported);
        view.set_peer(self.peer);
        view.set_curr_speed(self.curr_speed);
        view.set_max_speed(self.max_speed);
    }
}

fn decode_name(bytes: &[u8; NAME_LEN]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(NAME_LEN);
    // Replacing invalid UTF-8 can lengthen the name, and a peer may fill all 16 bytes
    // without a NUL: keep what `encode_name` can send back, so that a parsed port
    // encodes to a field that parses to the same name.
    fit_name(&String::from_utf8_lossy(sub(bytes, 0, end))).to_owned()
}

fn encode_name(name: &str) -> [u8; NAME_LEN] {
    let mut out = [0u8; NAME_LEN];
    crate::wire::write_slice(&mut out, 0, fit_name(name).as_bytes());
    out
}

/// The longest prefix of `name` that fits the field with its NUL, cut at a character
/// boundary.
fn fit_name(name: &str) -> &str {
    let mut end = name.len().min(NAME_LEN - 1);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// Parses a run of 1.0 ports filling `bytes` exactly.
pub(crate) fn parse_list_v10(bytes: &[u8]) -> Result<Vec<PortDesc>, Error> {
    parse_list(bytes, PHY_PORT_V10_LEN, |chunk| {
        PortDesc::parse_v10(&PhyPortV10::new_unchecked(chunk))
    })
}

/// Parses a run of 1.3 ports filling `bytes` exactly.
pub(crate) fn parse_list_v13(bytes: &[u8]) -> Result<Vec<PortDesc>, Error> {
    parse_list(bytes, PORT_V13_LEN, |chunk| {
        PortDesc::parse_v13(&PortV13::new_unchecked(chunk))
    })
}

fn parse_list(
    bytes: &[u8],
    size: usize,
    parse: impl Fn(&[u8]) -> Result<PortDesc, Error>,
) -> Result<Vec<PortDesc>, Error> {
    if bytes.len() % size != 0 {
        return Err(Error::BadLength {
            what: "port list",
            length: bytes.len(),
        });
    }
    bytes.chunks_exact(size).map(parse).collect()
}

/// Writes `ports` as 1.0 structures into `out`, which holds exactly that many.
pub(crate) fn emit_list_v10(ports: &[PortDesc], out: &mut [u8]) -> Result<(), Error> {
    for (desc, chunk) in ports.iter().zip(out.chunks_exact_mut(PHY_PORT_V10_LEN)) {
        desc.emit_v10(&mut PhyPortV10::new_unchecked(chunk))?;
    }
    Ok(())
}

/// Writes `ports` as 1.3 structures into `out`, which holds exactly that many.
pub(crate) fn emit_list_v13(ports: &[PortDesc], out: &mut [u8]) {
    for (desc, chunk) in ports.iter().zip(out.chunks_exact_mut(PORT_V13_LEN)) {
        desc.emit_v13(&mut PortV13::new_unchecked(chunk));
    }
}

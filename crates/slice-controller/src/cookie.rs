//! The cookie every flow sliced installs carries, so that a flow read back from a switch
//! says whether sliced installed it and what for.
//!
//! Layout, most significant bits first:
//!
//! | bits   | what |
//! | ------ | ---- |
//! | 63..48 | [`TAG`], 0x5c1c: installed by sliced |
//! | 47..40 | the [`FlowKind`]: 1 table-miss, 2 path, 3 drop, 4 pipeline |
//! | 39..32 | zero |
//! | 31..0  | for a path, [`endpoint_hash`] of the pair of ports it was installed for; else zero |
//!
//! The endpoint hash binds a path flow to the two slice ports whose hosts it connects,
//! so that a flow installed for a binding that was removed while no controller watched
//! is recognised as such. It is FNV-1a (32 bits) over the two `PortId`s, big-endian,
//! source first: the same on every build, platform and instance, which a randomly seeded
//! hasher (std's) would not be.

use slice_core::PortId;

/// The top 16 bits of every cookie sliced sets.
pub const TAG: u16 = 0x5c1c;

const TAG_SHIFT: u32 = 48;
const KIND_SHIFT: u32 = 40;
const ENDPOINTS_MASK: u64 = 0xffff_ffff;

/// What a flow of sliced's is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlowKind {
    /// Priority 0, matches everything, sends it to the controller (1.3).
    TableMiss,
    /// One hop of a path between two hosts; the hash of the endpoints it was set up for.
    Path { endpoints: u32 },
    /// Drops one forbidden pair's traffic at its ingress, for a while.
    Drop,
    /// An entry of the 1.3 pipeline ([`crate::pipeline`]); the entry itself says which.
    Pipeline,
}

const KIND_TABLE_MISS: u64 = 1;
const KIND_PATH: u64 = 2;
const KIND_DROP: u64 = 3;
const KIND_PIPELINE: u64 = 4;

impl FlowKind {
    /// The cookie of a flow of this kind.
    pub fn cookie(self) -> u64 {
        let (kind, low) = match self {
            FlowKind::TableMiss => (KIND_TABLE_MISS, 0),
            FlowKind::Path { endpoints } => (KIND_PATH, u64::from(endpoints)),
            FlowKind::Drop => (KIND_DROP, 0),
            FlowKind::Pipeline => (KIND_PIPELINE, 0),
        };
        (u64::from(TAG) << TAG_SHIFT) | (kind << KIND_SHIFT) | low
    }

    /// What a cookie read from a switch says: `None` when sliced did not set it (another
    /// tag, or a layout this version does not write).
    pub fn of_cookie(cookie: u64) -> Option<FlowKind> {
        if (cookie >> TAG_SHIFT) as u16 != TAG {
            return None;
        }
        let kind = (cookie >> KIND_SHIFT) & 0xff;
        let reserved = (cookie >> 32) & 0xff;
        let low = cookie & ENDPOINTS_MASK;
        match (kind, reserved, low) {
            (KIND_TABLE_MISS, 0, 0) => Some(FlowKind::TableMiss),
            (KIND_PATH, 0, low) => Some(FlowKind::Path {
                endpoints: low as u32,
            }),
            (KIND_DROP, 0, 0) => Some(FlowKind::Drop),
            (KIND_PIPELINE, 0, 0) => Some(FlowKind::Pipeline),
            _ => None,
        }
    }

    /// The cookie of a path flow between the hosts bound at `src` and `dst`.
    pub fn path(src: PortId, dst: PortId) -> FlowKind {
        FlowKind::Path {
            endpoints: endpoint_hash(src, dst),
        }
    }
}

const FNV_OFFSET_BASIS: u32 = 0x811c_9dc5;
const FNV_PRIME: u32 = 0x0100_0193;

/// FNV-1a, 32 bits, over `src.dpid`, `src.port_no`, `dst.dpid`, `dst.port_no`, each
/// big-endian.
pub fn endpoint_hash(src: PortId, dst: PortId) -> u32 {
    let mut bytes = [0u8; 24];
    bytes[0..8].copy_from_slice(&src.dpid.to_be_bytes());
    bytes[8..12].copy_from_slice(&src.port_no.to_be_bytes());
    bytes[12..20].copy_from_slice(&dst.dpid.to_be_bytes());
    bytes[20..24].copy_from_slice(&dst.port_no.to_be_bytes());
    bytes.iter().fold(FNV_OFFSET_BASIS, |hash, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(FNV_PRIME)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_survives_its_cookie() {
        for kind in [
            FlowKind::TableMiss,
            FlowKind::Drop,
            FlowKind::Pipeline,
            FlowKind::Path { endpoints: 0 },
            FlowKind::Path {
                endpoints: u32::MAX,
            },
            FlowKind::path(PortId::new(1, 2), PortId::new(3, 4)),
        ] {
            assert_eq!(FlowKind::of_cookie(kind.cookie()), Some(kind));
            assert_eq!(kind.cookie() >> 48, 0x5c1c);
        }
    }

    #[test]
    fn the_layout_is_the_documented_one() {
        assert_eq!(FlowKind::TableMiss.cookie(), 0x5c1c_0100_0000_0000);
        assert_eq!(FlowKind::Drop.cookie(), 0x5c1c_0300_0000_0000);
        assert_eq!(
            FlowKind::Path {
                endpoints: 0x1234_5678
            }
            .cookie(),
            0x5c1c_0200_1234_5678
        );
    }

    #[test]
    fn foreign_cookies_are_not_ours() {
        for cookie in [
            0,
            u64::MAX,
            0x5c1d_0100_0000_0000,
            // Our tag, a kind we never write.
            0x5c1c_0500_0000_0000,
            // Our tag and kind, but bits we always leave zero are set.
            0x5c1c_0101_0000_0000,
            0x5c1c_0100_0000_0001,
            0x5c1c_0300_0000_0010,
            0x5c1c_0400_0000_0001,
        ] {
            assert_eq!(FlowKind::of_cookie(cookie), None, "{cookie:#x}");
        }
    }

    #[test]
    fn the_endpoint_hash_is_fnv_1a_and_ordered() {
        // FNV-1a of 24 zero bytes, worked out by hand from the offset basis and prime.
        let mut expected = FNV_OFFSET_BASIS;
        for _ in 0..24 {
            expected = expected.wrapping_mul(FNV_PRIME);
        }
        assert_eq!(
            endpoint_hash(PortId::new(0, 0), PortId::new(0, 0)),
            expected
        );
        // A published FNV-1a test vector, to pin the constants: "a" -> 0xe40c292c.
        assert_eq!(
            (FNV_OFFSET_BASIS ^ u32::from(b'a')).wrapping_mul(FNV_PRIME),
            0xe40c_292c
        );
        let (a, b) = (PortId::new(1, 1), PortId::new(2, 1));
        assert_ne!(endpoint_hash(a, b), endpoint_hash(b, a));
        assert_eq!(endpoint_hash(a, b), endpoint_hash(a, b));
        // Stable across builds and instances: a fixed value (worked out independently,
        // with Python's struct and the FNV constants), not a seeded one.
        assert_eq!(endpoint_hash(a, b), 0xde72_145c);
    }
}

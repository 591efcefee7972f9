//! Authenticated LLDP probes: each probe carries a nonce and an HMAC-SHA256 over the
//! datapath id, the port and the nonce, keyed with a secret only the controller holds.
//! A host can copy a probe's format but cannot compute its tag, and an old probe goes
//! stale because the nonce counts rounds of probes from a random start.

use hmac::{Hmac, Mac};
use openflow::packet::{ProbeProof, PROOF_TAG_LEN};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The probe secret's length when the controller makes its own.
pub const SECRET_LEN: usize = 32;

/// Why a probe secret could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ProbeKeyError {
    #[error("the probe secret is empty")]
    Empty,
}

/// The secret probes are signed with, and the random start of their nonces.
#[derive(Clone)]
pub struct ProbeKey {
    mac: HmacSha256,
    /// Nonce of round 0: random per start, so that probes recorded during an earlier
    /// run with the same (file) secret do not verify as fresh ones.
    nonce_base: u64,
}

impl std::fmt::Debug for ProbeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProbeKey(..)")
    }
}

impl ProbeKey {
    /// A fresh random secret, known to this process only.
    pub fn random() -> Self {
        let mut secret = [0u8; SECRET_LEN];
        fill_random(&mut secret);
        Self::with_nonce_base(&secret, random_u64())
    }

    /// A key from a shared secret (a cluster's controllers sign alike), with a nonce
    /// start of this process's own.
    pub fn from_secret(secret: &[u8]) -> Result<Self, ProbeKeyError> {
        if secret.is_empty() {
            return Err(ProbeKeyError::Empty);
        }
        Ok(Self::with_nonce_base(secret, random_u64()))
    }

    /// A key with a chosen nonce start, for deterministic tests.
    pub fn with_nonce_base(secret: &[u8], nonce_base: u64) -> Self {
        // HMAC takes keys of any length; only an empty one is refused above.
        let mac = HmacSha256::new_from_slice(secret)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
        Self { mac, nonce_base }
    }

    fn keyed(&self, dpid: u64, port_no: u32, nonce: u64) -> HmacSha256 {
        let mut mac = self.mac.clone();
        mac.update(&dpid.to_be_bytes());
        mac.update(&port_no.to_be_bytes());
        mac.update(&nonce.to_be_bytes());
        mac
    }

    /// The proof for a probe out of `port_no` of `dpid` in probe round `round`.
    pub fn sign(&self, dpid: u64, port_no: u32, round: u64) -> ProbeProof {
        let nonce = self.nonce_base.wrapping_add(round);
        let full = self.keyed(dpid, port_no, nonce).finalize().into_bytes();
        let mut tag = [0u8; PROOF_TAG_LEN];
        tag.copy_from_slice(&full[..PROOF_TAG_LEN]);
        ProbeProof { nonce, tag }
    }

    /// The round a probe was signed in, when its tag is genuine (checked in constant
    /// time); None for a forgery.
    pub fn verify(&self, dpid: u64, port_no: u32, proof: &ProbeProof) -> Option<u64> {
        self.keyed(dpid, port_no, proof.nonce)
            .verify_truncated_left(&proof.tag)
            .ok()?;
        Some(proof.nonce.wrapping_sub(self.nonce_base))
    }
}

fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    fill_random(&mut bytes);
    u64::from_be_bytes(bytes)
}

/// The operating system's random bytes. Should it have none, the bytes come from std's
/// randomly keyed SipHash instead (std needs the same OS source to key its hash maps,
/// which the engine already uses), which still keeps 128 bits of secret.
fn fill_random(out: &mut [u8]) {
    if let Err(err) = getrandom::getrandom(out) {
        log::warn!("no OS random source for the probe secret ({err}); using std's hash keys");
        use std::hash::{BuildHasher, Hasher};
        let state = std::collections::hash_map::RandomState::new();
        for (index, chunk) in out.chunks_mut(8).enumerate() {
            let mut hasher = state.build_hasher();
            hasher.write_usize(index);
            let bytes = hasher.finish().to_be_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_probe_verifies_with_its_round() {
        let key = ProbeKey::random();
        let proof = key.sign(7, 3, 42);
        assert_eq!(key.verify(7, 3, &proof), Some(42));
    }

    #[test]
    fn tampering_with_anything_signed_is_detected() {
        let key = ProbeKey::with_nonce_base(b"secret", 1000);
        let proof = key.sign(7, 3, 5);
        assert_eq!(key.verify(8, 3, &proof), None, "other switch");
        assert_eq!(key.verify(7, 4, &proof), None, "other port");
        let renonced = ProbeProof {
            nonce: proof.nonce + 1,
            ..proof
        };
        assert_eq!(key.verify(7, 3, &renonced), None, "other nonce");
        for byte in 0..PROOF_TAG_LEN {
            let mut tag = proof.tag;
            tag[byte] ^= 1;
            assert_eq!(key.verify(7, 3, &ProbeProof { tag, ..proof }), None);
        }
        let other = ProbeKey::with_nonce_base(b"other secret", 1000);
        assert_eq!(other.verify(7, 3, &proof), None, "other secret");
    }

    #[test]
    fn the_same_secret_with_another_start_does_not_accept_old_rounds_as_new() {
        let before = ProbeKey::with_nonce_base(b"shared", 1000);
        let after = ProbeKey::with_nonce_base(b"shared", 500_000);
        let recorded = before.sign(7, 3, 1);
        // Genuine, but from a round far in the past of the new start.
        let round = after.verify(7, 3, &recorded).unwrap();
        assert!(round > u64::MAX / 2);
    }

    #[test]
    fn an_empty_secret_is_refused() {
        assert!(matches!(
            ProbeKey::from_secret(b""),
            Err(ProbeKeyError::Empty)
        ));
    }
}

//! Authenticated LLDP probes: each probe carries a timestamp and an HMAC-SHA256 over the
//! datapath id, the port and the timestamp, keyed with a secret only the controller (or
//! its cluster) holds. A host can copy a probe's format but cannot compute its tag, and
//! a recorded probe goes stale: it verifies only while its timestamp is within the
//! link's maximum age of the receiver's clock.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use openflow::packet::{ProbeProof, PROOF_TAG_LEN};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The probe secret's length when the controller makes its own.
pub const SECRET_LEN: usize = 32;

/// The shortest probe secret accepted from a file: 128 bits, if it is random.
pub const MIN_SECRET_LEN: usize = 16;

/// Why a probe secret could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ProbeKeyError {
    #[error("the probe secret is empty")]
    Empty,
    #[error("cannot read the LLDP secret file {path}: {source}")]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// The file breaks the rule of every secret file (another user's, open to others).
    #[error(transparent)]
    NotPrivate(#[from] slice_secret::SecretFileError),
    #[error(
        "LLDP secret file {path} holds {len} bytes; it needs at least {MIN_SECRET_LEN} \
         (for example `head -c 32 /dev/urandom > {path}`)"
    )]
    TooShort {
        path: std::path::PathBuf,
        len: usize,
    },
    #[error("the operating system's random source failed ({0}); refusing a weaker secret")]
    NoRandom(getrandom::Error),
}

/// What checking a probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Genuine,
    /// Signed by us, but too old (or too far ahead): a replay.
    Stale,
    Forged,
}

/// The secret probes are signed with, and how the engine's clock maps to wall-clock
/// time (the nonce is milliseconds since the Unix epoch, which a cluster's controllers
/// agree on where their monotonic clocks do not).
#[derive(Clone)]
pub struct ProbeKey {
    mac: HmacSha256,
    anchor: Instant,
    anchor_unix_ms: u64,
    /// Why this key has no secret: the OS random source failed. The controller refuses
    /// to start with such a key, and it verifies nothing.
    no_secret: Option<getrandom::Error>,
}

impl std::fmt::Debug for ProbeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProbeKey(..)")
    }
}

impl ProbeKey {
    /// A fresh random secret, known to this process only; an error when the operating
    /// system has no random source, rather than a secret someone could guess.
    pub fn random() -> Result<Self, ProbeKeyError> {
        let mut secret = [0u8; SECRET_LEN];
        getrandom::getrandom(&mut secret).map_err(ProbeKeyError::NoRandom)?;
        Ok(Self::with_clock(
            &secret,
            Instant::now(),
            unix_ms(SystemTime::now()),
        ))
    }

    /// [`ProbeKey::random`], or a key that [`ProbeKey::check`] refuses: what a default
    /// configuration holds, so that building one cannot fail but starting with it can.
    pub fn random_or_refused() -> Self {
        Self::random().unwrap_or_else(|err| {
            let no_secret = match err {
                ProbeKeyError::NoRandom(cause) => Some(cause),
                _ => Some(getrandom::Error::UNSUPPORTED),
            };
            Self {
                no_secret,
                ..Self::with_clock(&[], Instant::now(), 0)
            }
        })
    }

    /// Whether the key has a secret to sign with.
    pub fn check(&self) -> Result<(), ProbeKeyError> {
        match self.no_secret {
            Some(cause) => Err(ProbeKeyError::NoRandom(cause)),
            None => Ok(()),
        }
    }

    /// A key from a secret file shared by a cluster's controllers. Like an ssh private
    /// key, the file must be the owner's alone (tightening the mode ourselves would hide
    /// that it may have leaked) and hold at least [`MIN_SECRET_LEN`] bytes, not counting
    /// a trailing newline.
    pub fn from_file(path: &std::path::Path) -> Result<Self, ProbeKeyError> {
        let bytes = slice_secret::read_secret_file(path, "the LLDP secret file", false)?
            .ok_or_else(|| ProbeKeyError::Read {
                path: path.to_path_buf(),
                source: std::io::ErrorKind::NotFound.into(),
            })?;
        let secret = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        let secret = secret.strip_suffix(b"\r").unwrap_or(secret);
        if secret.len() < MIN_SECRET_LEN {
            return Err(ProbeKeyError::TooShort {
                path: path.to_path_buf(),
                len: secret.len(),
            });
        }
        Self::from_secret(secret)
    }

    /// A key from a shared secret (a cluster's controllers sign alike).
    pub fn from_secret(secret: &[u8]) -> Result<Self, ProbeKeyError> {
        if secret.is_empty() {
            return Err(ProbeKeyError::Empty);
        }
        Ok(Self::with_clock(
            secret,
            Instant::now(),
            unix_ms(SystemTime::now()),
        ))
    }

    /// A key whose clock reads `anchor_unix_ms` at `anchor`, for tests with a made-up
    /// clock.
    pub fn with_clock(secret: &[u8], anchor: Instant, anchor_unix_ms: u64) -> Self {
        // HMAC accepts keys of every length, so this cannot fail.
        let mac = HmacSha256::new_from_slice(secret)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
        Self {
            mac,
            anchor,
            anchor_unix_ms,
            no_secret: None,
        }
    }

    fn timestamp(&self, now: Instant) -> u64 {
        let since = now.saturating_duration_since(self.anchor).as_millis();
        let before = self.anchor.saturating_duration_since(now).as_millis();
        let since = u64::try_from(since).unwrap_or(u64::MAX);
        let before = u64::try_from(before).unwrap_or(u64::MAX);
        self.anchor_unix_ms
            .saturating_add(since)
            .saturating_sub(before)
    }

    fn keyed(&self, dpid: u64, port_no: u32, nonce: u64) -> HmacSha256 {
        let mut mac = self.mac.clone();
        mac.update(&dpid.to_be_bytes());
        mac.update(&port_no.to_be_bytes());
        mac.update(&nonce.to_be_bytes());
        mac
    }

    /// The proof for a probe out of `port_no` of `dpid`, sent at `now`.
    pub fn sign(&self, dpid: u64, port_no: u32, now: Instant) -> ProbeProof {
        let nonce = self.timestamp(now);
        let full = self.keyed(dpid, port_no, nonce).finalize().into_bytes();
        let mut tag = [0u8; PROOF_TAG_LEN];
        tag.copy_from_slice(&full[..PROOF_TAG_LEN]);
        ProbeProof { nonce, tag }
    }

    /// Checks a probe claiming to come from `port_no` of `dpid`, received at `now`: the
    /// tag (in constant time), then that it was signed within `max_age` of `now`.
    pub fn verify(
        &self,
        dpid: u64,
        port_no: u32,
        proof: &ProbeProof,
        now: Instant,
        max_age: Duration,
    ) -> Verdict {
        if self.no_secret.is_some()
            || self
                .keyed(dpid, port_no, proof.nonce)
                .verify_truncated_left(&proof.tag)
                .is_err()
        {
            return Verdict::Forged;
        }
        let max_age = u64::try_from(max_age.as_millis()).unwrap_or(u64::MAX);
        if self.timestamp(now).abs_diff(proof.nonce) > max_age {
            return Verdict::Stale;
        }
        Verdict::Genuine
    }
}

impl ProbeKey {
    /// How long ago, by `now`, the probe with `proof` was signed (zero for one signed
    /// ahead of this clock). Its round trip when the proof verifies.
    pub fn age(&self, proof: &ProbeProof, now: Instant) -> Duration {
        Duration::from_millis(self.timestamp(now).saturating_sub(proof.nonce))
    }
}

fn unix_ms(time: SystemTime) -> u64 {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const AGE: Duration = Duration::from_millis(3500);

    fn key(secret: &[u8], start: Instant) -> ProbeKey {
        ProbeKey::with_clock(secret, start, 1_700_000_000_000)
    }

    #[test]
    fn a_signed_probe_verifies_while_fresh() {
        let start = Instant::now();
        let key = key(b"secret", start);
        let proof = key.sign(7, 3, start);
        assert_eq!(key.verify(7, 3, &proof, start, AGE), Verdict::Genuine);
        let later = start + Duration::from_millis(3400);
        assert_eq!(key.verify(7, 3, &proof, later, AGE), Verdict::Genuine);
        let too_late = start + Duration::from_millis(3600);
        assert_eq!(key.verify(7, 3, &proof, too_late, AGE), Verdict::Stale);
        let random = ProbeKey::random().unwrap();
        let now = Instant::now();
        let proof = random.sign(1, 1, now);
        assert_eq!(random.verify(1, 1, &proof, now, AGE), Verdict::Genuine);
    }

    #[test]
    fn tampering_with_anything_signed_is_detected() {
        let start = Instant::now();
        let key = key(b"secret", start);
        let proof = key.sign(7, 3, start);
        assert_eq!(key.verify(8, 3, &proof, start, AGE), Verdict::Forged);
        assert_eq!(key.verify(7, 4, &proof, start, AGE), Verdict::Forged);
        let renonced = ProbeProof {
            nonce: proof.nonce + 1,
            ..proof
        };
        assert_eq!(key.verify(7, 3, &renonced, start, AGE), Verdict::Forged);
        for byte in 0..PROOF_TAG_LEN {
            let mut tag = proof.tag;
            tag[byte] ^= 1;
            let tampered = ProbeProof { tag, ..proof };
            assert_eq!(key.verify(7, 3, &tampered, start, AGE), Verdict::Forged);
        }
        let other = self::key(b"other secret", start);
        assert_eq!(other.verify(7, 3, &proof, start, AGE), Verdict::Forged);
    }

    #[test]
    fn controllers_sharing_a_secret_accept_each_others_probes() {
        // Two processes: different monotonic clocks, the same wall clock.
        let (one, two) = (Instant::now(), Instant::now() + Duration::from_secs(1000));
        let a = ProbeKey::with_clock(b"cluster", one, 1_700_000_000_000);
        let b = ProbeKey::with_clock(b"cluster", two, 1_700_000_000_000);
        let proof = a.sign(7, 3, one + Duration::from_millis(10));
        let arrival = two + Duration::from_millis(20);
        assert_eq!(b.verify(7, 3, &proof, arrival, AGE), Verdict::Genuine);
    }

    #[test]
    fn a_key_without_a_secret_is_refused_and_verifies_nothing() {
        let start = Instant::now();
        let broken = ProbeKey {
            no_secret: Some(getrandom::Error::UNSUPPORTED),
            ..key(b"", start)
        };
        assert!(matches!(broken.check(), Err(ProbeKeyError::NoRandom(_))));
        let proof = broken.sign(7, 3, start);
        assert_eq!(broken.verify(7, 3, &proof, start, AGE), Verdict::Forged);
        assert!(ProbeKey::random_or_refused().check().is_ok());
    }

    #[test]
    fn a_secret_file_must_be_long_and_the_owners_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("sliced-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("lldp.key");
        let write = |bytes: &[u8], mode: u32| {
            std::fs::write(&file, bytes).unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        write(b"0123456789abcdef\n", 0o600);
        assert!(ProbeKey::from_file(&file).is_ok());
        write(b"0123456789abcde\n", 0o600);
        let short = ProbeKey::from_file(&file).unwrap_err();
        assert!(matches!(short, ProbeKeyError::TooShort { len: 15, .. }));
        write(b"0123456789abcdef", 0o640);
        let open = ProbeKey::from_file(&file).unwrap_err().to_string();
        assert!(
            open.contains("chmod 600") && open.contains("mode 640"),
            "{open}"
        );
        assert!(open.contains(&file.display().to_string()), "{open}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_empty_secret_is_refused() {
        assert!(matches!(
            ProbeKey::from_secret(b""),
            Err(ProbeKeyError::Empty)
        ));
    }
}

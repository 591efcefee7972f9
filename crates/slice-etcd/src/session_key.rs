//! The size of the key that signs login sessions, shared by every instance on a prefix:
//! how long a new one is, and which lengths of one found in etcd are used.

/// Bytes of a session key: actix's cookie `Key` signs with one half of 64 bytes and
/// encrypts with the other, and refuses fewer. A new shared key is this long, and so is
/// the key file of an instance without etcd (slice-cli's `data_dir`); a shorter one found
/// in etcd is not used.
pub const SESSION_KEY_LEN: usize = 64;

/// The longest session key found in etcd that is used.
pub(crate) const MAX_SESSION_KEY_LEN: usize = 1024;

/// A new key of [`SESSION_KEY_LEN`] random bytes.
pub(crate) fn fresh() -> Result<Vec<u8>, getrandom::Error> {
    let mut key = vec![0u8; SESSION_KEY_LEN];
    getrandom::getrandom(&mut key)?;
    Ok(key)
}

/// Whether a key found in etcd is long enough to sign with and short enough to be one.
pub(crate) fn usable(key: &[u8]) -> bool {
    (SESSION_KEY_LEN..=MAX_SESSION_KEY_LEN).contains(&key.len())
}

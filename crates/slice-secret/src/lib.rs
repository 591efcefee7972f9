//! The one rule for a file that holds a secret (a key, a password) that sliced or the
//! `slice` tool reads: it belongs to the user the process runs as (or to root, who is
//! trusted with everything anyway) and is closed to the group and others; a TLS private
//! key that root owns may be readable by its group (`root:sliced 0640`, the rule
//! PostgreSQL applies to its server key).
//!
//! The file is opened once, the rule is checked on the open handle (fstat), and the
//! secret is read from that same handle. Checking a path and reading it later would let
//! another user who can write a directory on the way put another file there in between.
//! Symbolic links are followed: certbot's `live/` keys and Kubernetes secret volumes are
//! links, and the rule applies to the file the link leads to, which is the file read, so
//! a link cannot lead to anything that would not pass itself.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// No secret sliced reads comes near this; a file larger than this is not one, and is
/// not read into memory.
pub const MAX_SECRET_LEN: u64 = 1 << 20;

/// Why a secret file is not read.
#[derive(Debug, thiserror::Error)]
pub enum SecretFileError {
    #[error(
        "{what} {} belongs to uid {owner}, not to uid {uid} that runs this command: another \
         user may have made it or put it there. Run the command as its owner if that is the \
         user sliced runs as; otherwise check it (ls -ln {}) and remove it",
        path.display(),
        path.display()
    )]
    Owner {
        what: &'static str,
        path: PathBuf,
        owner: u32,
        uid: u32,
    },
    #[error(
        "{what} {} is open to other users (mode {mode:o}): it may have leaked or been \
         replaced, so it is not tightened quietly. Check it, then chmod 600 {} (or replace \
         it)",
        path.display(),
        path.display()
    )]
    OpenToOthers {
        what: &'static str,
        path: PathBuf,
        mode: u32,
    },
    #[error("{what} {} is not a regular file", path.display())]
    NotAFile { what: &'static str, path: PathBuf },
    #[error(
        "{what} {} is larger than {MAX_SECRET_LEN} bytes, which no secret is",
        path.display()
    )]
    TooLarge { what: &'static str, path: PathBuf },
    #[error("cannot read {what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The effective user id of this process: the owner its files must have.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid takes no arguments, touches no memory of ours and cannot fail.
    unsafe { libc::geteuid() }
}

/// The content of the secret file `path`, read from the handle whose owner and mode
/// passed the rule (see the crate's documentation); `None` when there is no such file.
/// `what` names the file in the error; `group_may_read` admits a group read permission
/// on a file root owns.
pub fn read_secret_file(
    path: &Path,
    what: &'static str,
    group_may_read: bool,
) -> Result<Option<Vec<u8>>, SecretFileError> {
    let io = |source| SecretFileError::Io {
        what,
        path: path.to_owned(),
        source,
    };
    let Some(file) = open_checked(path, what, group_may_read)? else {
        return Ok(None);
    };
    #[cfg(test)]
    tests::AFTER_CHECK.with(|hook| hook.borrow_mut().take().map(|hook| hook(path)));
    let mut secret = Vec::new();
    // One byte past the limit tells a file at the limit from a larger one, and a file
    // that grows after the check is still read no further.
    file.take(MAX_SECRET_LEN + 1)
        .read_to_end(&mut secret)
        .map_err(io)?;
    if secret.len() as u64 > MAX_SECRET_LEN {
        return Err(SecretFileError::TooLarge {
            what,
            path: path.to_owned(),
        });
    }
    Ok(Some(secret))
}

/// The rule alone, for a start that refuses every bad secret file before it reads any;
/// the read itself goes through [`read_secret_file`] and checks again. A missing file
/// passes.
pub fn check_secret_file(
    path: &Path,
    what: &'static str,
    group_may_read: bool,
) -> Result<(), SecretFileError> {
    open_checked(path, what, group_may_read).map(drop)
}

fn open_checked(
    path: &Path,
    what: &'static str,
    group_may_read: bool,
) -> Result<Option<std::fs::File>, SecretFileError> {
    let io = |source| SecretFileError::Io {
        what,
        path: path.to_owned(),
        source,
    };
    // Non-blocking: opening a FIFO put in the file's place would otherwise wait for a
    // writer forever, before the check could refuse it. Reads of a regular file ignore it.
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(io(err)),
    };
    let metadata = file.metadata().map_err(io)?;
    let uid = effective_uid();
    if metadata.uid() != uid && metadata.uid() != 0 {
        return Err(SecretFileError::Owner {
            what,
            path: path.to_owned(),
            owner: metadata.uid(),
            uid,
        });
    }
    if !metadata.is_file() {
        return Err(SecretFileError::NotAFile {
            what,
            path: path.to_owned(),
        });
    }
    let mode = metadata.mode() & 0o777;
    let forbidden = if group_may_read && metadata.uid() == 0 {
        0o037
    } else {
        0o077
    };
    if mode & forbidden != 0 {
        return Err(SecretFileError::OpenToOthers {
            what,
            path: path.to_owned(),
            mode,
        });
    }
    Ok(Some(file))
}

#[cfg(test)]
mod tests;

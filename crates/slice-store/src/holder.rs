//! Who holds the database: sled takes an exclusive `flock` on its log file, and Linux lists
//! every lock, with the holder's pid, in `/proc/locks`.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// A process holding the database's lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockHolder {
    pub pid: u32,
    /// The process's command name (`/proc/<pid>/comm`), such as `slice` or `sliced`.
    pub command: Option<String>,
}

impl std::fmt::Display for LockHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.command {
            Some(command) => write!(f, "pid {}, {command}", self.pid),
            None => write!(f, "pid {}", self.pid),
        }
    }
}

/// The process holding a lock on `file`, when the system says (Linux); `None` elsewhere,
/// or when nobody holds it.
pub(crate) fn lock_holder(file: &Path) -> Option<LockHolder> {
    let metadata = std::fs::metadata(file).ok()?;
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let pid = holder_in(&locks, metadata.dev(), metadata.ino())?;
    let command = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|name| name.trim_end().to_owned());
    Some(LockHolder { pid, command })
}

/// Finds the pid holding a lock on the file `(dev, ino)` in the text of `/proc/locks`,
/// whose lines read `1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF`: the device as hex
/// major:minor, then the inode in decimal. Waiting requests (`1: -> FLOCK ...`) are not
/// holders.
fn holder_in(locks: &str, dev: u64, ino: u64) -> Option<u32> {
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let wanted = format!("{major:02x}:{minor:02x}:{ino}");
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.get(1) == Some(&"->") {
            return None;
        }
        // 0 "1:", 1 class, 2 mode, 3 access, 4 pid, 5 dev:ino.
        if fields.get(5) != Some(&wanted.as_str()) {
            return None;
        }
        fields.get(4)?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_holder_is_found_by_device_and_inode() {
        let locks = "1: POSIX  ADVISORY  WRITE 10 00:19:77 0 EOF\n\
                     2: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF\n\
                     2: -> FLOCK  ADVISORY  WRITE 99 08:01:1234 0 EOF\n";
        let dev = (8 << 8) | 1;
        assert_eq!(holder_in(locks, dev, 1234), Some(4242));
        assert_eq!(holder_in(locks, dev, 123), None);
        assert_eq!(holder_in(locks, dev + 1, 1234), None);
    }

    #[test]
    fn a_store_held_by_this_process_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let _store = crate::Store::open(dir.path()).unwrap();
        let holder = lock_holder(&dir.path().join(crate::SLED_LOG_FILE));
        assert_eq!(holder.map(|h| h.pid), Some(std::process::id()));
    }
}

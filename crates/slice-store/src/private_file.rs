//! Writing a small owner-only file so that a crash leaves either the old file or the new
//! one, never half of one: the session key and the store's format marker.

use std::io::Write;
use std::path::Path;

/// Replaces `path` with `bytes`, durably and owner-only from the first byte. The content
/// goes to a temporary file beside it (tempfile creates it 0600 with a fresh random name,
/// so no leftover of an earlier attempt can lend it a looser mode), is synced, renamed
/// over `path`, and the directory is synced so that the rename survives a power cut.
pub fn write_private_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut staged = tempfile::Builder::new()
        .prefix(".staged-")
        .tempfile_in(dir)?;
    staged.write_all(bytes)?;
    staged.as_file().sync_all()?;
    staged.persist(path).map_err(|err| err.error)?;
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_file_is_owner_only_and_replaces_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, b"old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_private_durably(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "nothing staged is left behind");
    }
}

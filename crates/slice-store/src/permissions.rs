//! Owner-only permissions for sliced's files: the data directory holds the session key
//! and the database.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;
use std::path::PathBuf;

/// Creates `dir` owner-only (0700) when it is missing, and takes the group's and others'
/// permissions away when it has them. Returns what was changed, for the caller to report.
pub fn make_private_dir(dir: &Path) -> std::io::Result<Vec<Tightened>> {
    if !dir.is_dir() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    Ok(tighten(dir)?.into_iter().collect())
}

/// A permission taken away from one of sliced's files or directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tightened {
    pub path: PathBuf,
    /// The permission bits before and after.
    pub from: u32,
    pub to: u32,
}

impl std::fmt::Display for Tightened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tightened the permissions of {} from {:04o} to {:04o}",
            self.path.display(),
            self.from,
            self.to
        )
    }
}

/// Owner-only: whatever the owner has, the group and others lose.
const NOT_FOR_OTHERS: u32 = 0o077;

/// Takes the group's and others' permissions away from `path`.
fn tighten(path: &Path) -> std::io::Result<Option<Tightened>> {
    let from = std::fs::metadata(path)?.permissions().mode() & 0o7777;
    if from & NOT_FOR_OTHERS == 0 {
        return Ok(None);
    }
    let to = from & !NOT_FOR_OTHERS;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(to))?;
    Ok(Some(Tightened {
        path: path.to_owned(),
        from,
        to,
    }))
}

/// Takes the group's and others' permissions away from the directory `dir` and everything
/// in it; symbolic links are left alone (their targets are not ours to change).
pub(crate) fn tighten_tree(dir: &Path) -> std::io::Result<Vec<Tightened>> {
    let mut changed: Vec<Tightened> = tighten(dir)?.into_iter().collect();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            changed.extend(tighten_tree(&entry.path())?);
        } else if kind.is_file() {
            changed.extend(tighten(&entry.path())?);
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loose_data_dir_and_store_lose_group_and_other_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("data");
        let store = root.join("store");
        std::fs::create_dir_all(store.join("blobs")).unwrap();
        std::fs::write(store.join("db"), "").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", store.join("link")).unwrap();
        let set = |path: &Path, mode| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        set(&root, 0o755);
        set(&store, 0o755);
        set(&store.join("db"), 0o644);
        let changed = make_private_dir(&root).unwrap();
        assert_eq!(
            changed,
            [Tightened {
                path: root.clone(),
                from: 0o755,
                to: 0o700
            }]
        );
        let changed = tighten_tree(&store).unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&store), 0o700);
        assert_eq!(mode(&store.join("db")), 0o600);
        assert_eq!(mode(&store.join("blobs")), 0o700);
        assert_eq!(changed.len(), 3, "{changed:?}");
        assert!(tighten_tree(&store).unwrap().is_empty());
        assert!(make_private_dir(&root).unwrap().is_empty());
    }
}

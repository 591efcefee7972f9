//! Whether the user running the tool may use the data directory at all.
//!
//! The data directory is the daemon's user's and owner-only, so a `slice` run as anyone
//! else (but root) can neither reach the socket nor see the database. The failures that
//! follow from that (a refused connection, a store that seems absent, permissions that
//! cannot be tightened) would each describe a symptom; this module names the cause
//! first: who owns the path and who runs the command.

use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::{CliError, DataDir};

/// A local account, by name when the system knows one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub uid: u32,
    pub name: Option<String>,
}

impl Account {
    pub(crate) fn of(uid: u32) -> Self {
        let name = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
            .ok()
            .flatten()
            .map(|user| user.name);
        Self { uid, name }
    }

    pub(crate) fn current() -> Self {
        Self::of(slice_store::effective_uid())
    }

    /// What to pass to `sudo -u`: the name, or `#uid` as sudo takes one without a name.
    pub fn sudo_name(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("#{}", self.uid))
    }
}

impl fmt::Display for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "{name} (uid {})", self.uid),
            None => write!(f, "uid {}", self.uid),
        }
    }
}

/// The owner of the data directory, `None` while it does not exist. Where a directory
/// above it cannot be searched, that directory is named as the cause.
pub(crate) fn data_dir_owner(data_dir: &DataDir) -> Result<Option<u32>, CliError> {
    match std::fs::metadata(data_dir.root()) {
        Ok(metadata) => Ok(Some(metadata.uid())),
        Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => {
            Err(denied_below(data_dir.root()))
        }
        // Missing, or not a directory: what comes next reports it in its own words.
        Err(_) => Ok(None),
    }
}

/// The refusal for a `path` this user may not enter, naming its owner.
pub(crate) fn denied(path: &Path) -> CliError {
    let owner = std::fs::symlink_metadata(path)
        .map(|metadata| Account::of(metadata.uid()))
        .ok();
    CliError::PermissionDenied {
        path: path.to_owned(),
        owner,
        me: Account::current(),
    }
}

/// The refusal for a `path` that cannot be looked at: the closest directory above it that
/// can be, for that is the one this user may not search.
pub(crate) fn denied_below(path: &Path) -> CliError {
    let blocking = path
        .ancestors()
        .skip(1)
        .find(|ancestor| std::fs::metadata(ancestor).is_ok())
        .unwrap_or(path);
    denied(blocking)
}

/// The data directory found to belong to `owner` when no daemon answers on its socket:
/// another user's is refused before this process opens (or creates) anything in it. A
/// user other than root cannot use it anyway; root could, and would leave files behind
/// that the daemon's user cannot open.
pub(crate) fn refuse_foreign(data_dir: &DataDir, owner: Option<u32>) -> Result<(), CliError> {
    let Some(owner) = owner else {
        return Ok(());
    };
    let me = Account::current();
    if owner == me.uid {
        return Ok(());
    }
    let path = data_dir.root().to_owned();
    let owner = Account::of(owner);
    Err(if me.uid == 0 {
        CliError::ForeignDataDir { path, owner }
    } else {
        CliError::PermissionDenied {
            path,
            owner: Some(owner),
            me,
        }
    })
}

/// How the owner of a refused path is shown: by name, or as unknown when the path could
/// not be looked at either.
pub(crate) fn owner_text(owner: &Option<Account>) -> String {
    match owner {
        Some(owner) => format!("belongs to {owner}"),
        None => "cannot be looked at".to_owned(),
    }
}

/// The command to run instead, when the owner is known.
pub(crate) fn sudo_hint(owner: &Option<Account>) -> String {
    owner
        .as_ref()
        .map(|owner| format!(" (sudo -u {} slice ...)", owner.sudo_name()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounts_show_their_name_and_uid() {
        let root = Account::of(0);
        assert_eq!(root.to_string(), "root (uid 0)");
        assert_eq!(root.sudo_name(), "root");
        let nameless = Account {
            uid: 4_000_000,
            name: None,
        };
        assert_eq!(nameless.to_string(), "uid 4000000");
        assert_eq!(nameless.sudo_name(), "#4000000");
    }

    #[test]
    fn a_missing_directory_has_no_owner_and_ones_own_is_used() {
        let dir = tempfile::tempdir().unwrap();
        let missing = DataDir::new(dir.path().join("missing"));
        assert_eq!(data_dir_owner(&missing).unwrap(), None);
        let own = DataDir::new(dir.path());
        let owner = data_dir_owner(&own).unwrap();
        assert_eq!(owner, Some(slice_store::effective_uid()));
        refuse_foreign(&own, owner).unwrap();
    }
}

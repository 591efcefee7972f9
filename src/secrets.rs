//! The files that hold the daemon's secrets, checked before any of them is read: each
//! must belong to the user sliced runs as (or to root) and be closed to other users.
//! Another user's file in the place of a key would make sliced trust what that user
//! chose (a planted session key seals any login; a planted LLDP secret signs probes).
//! The OIDC client secret is checked where the settings read it (`config::auth`), by
//! the same rule. This check refuses a bad file before anything starts; each reader
//! then reads its file through `slice_store::read_secret_file`, which checks the handle
//! it reads from again, so a file swapped in after this check is never read.

use crate::config::Config;

/// Refuses the first secret file (of those configured) that another user owns or that
/// others may read or write, naming it and what to check.
pub(crate) fn check(config: &Config) -> anyhow::Result<()> {
    // (path, what, whether its group may read it: TLS private keys are often shared with
    // a service's group; a secret sliced shares with other controllers is owner-only).
    let mut files: Vec<(&std::path::Path, &'static str, bool)> = Vec::new();
    if !config.session_key_shared {
        files.push((&config.session_key_file, "the session key", false));
    }
    if let Some(path) = &config.switch_limits.lldp_secret_file {
        files.push((path, "the LLDP secret file", false));
    }
    if let Some((_, tls)) = &config.openflow.tls {
        files.push((&tls.key, "the OpenFlow TLS private key", true));
    }
    if let Some(etcd) = &config.etcd {
        files.extend(etcd.access.secret_files());
    }
    for (path, what, group_may_read) in files {
        slice_store::check_secret_file(path, what, group_may_read)?;
    }
    Ok(())
}

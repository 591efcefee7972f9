//! `sliced --check-config`: whether the daemon could start on these settings, as
//! `nginx -t` or `promtool check config` answer it, without starting anything. The
//! settings are resolved as a start resolves them, then every file they name is read as
//! the start would read it (certificates and keys parsed, secret files held to their
//! rule); the data directory is checked, not made, and no database is opened and no port
//! bound, so a check beside a running daemon disturbs nothing.

use std::path::Path;

use crate::config::{Args, Config};

/// Prints one line and returns `Ok` when every check passes; otherwise every problem
/// found, one a line.
pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let config = Config::resolve(args)?;
    let problems = problems(&config);
    match problems.len() {
        0 => {
            let source = match &args.config {
                Some(file) => format!("the settings in {}", file.display()),
                None => "the settings".to_owned(),
            };
            println!(
                "sliced: {source} are valid (data directory {})",
                config.data_dir.root().display()
            );
            Ok(())
        }
        1 => Err(anyhow::anyhow!("{}", problems[0])),
        count => Err(anyhow::anyhow!(
            "{count} problems in the settings:\n  {}",
            problems.join("\n  ")
        )),
    }
}

/// What would stop a start, or make it refuse a file, each said once.
fn problems(config: &Config) -> Vec<String> {
    let mut problems = Vec::new();
    let mut found = |result: anyhow::Result<()>| {
        if let Err(err) = result {
            problems.push(err.to_string());
        }
    };
    found(crate::secrets::check(config));
    found(data_directory(config));
    if let Some((_, tls)) = &config.openflow.tls {
        found(tls.acceptor().map(drop).map_err(Into::into));
    }
    if let Some(path) = &config.switch_limits.lldp_secret_file {
        found(
            slice_controller::ProbeKey::from_file(path)
                .map(drop)
                .map_err(Into::into),
        );
    }
    if let Some(etcd) = &config.etcd {
        let access = &etcd.access;
        for (file, what) in [
            (&access.ca_file, "the etcd CA file (etcd_cafile)"),
            (
                &access.cert_file,
                "the etcd client certificate (etcd_certfile)",
            ),
        ] {
            if let Some(file) = file {
                found(readable(file, what));
            }
        }
        // The key and the password are secret files: read by the rule they are held to.
        for (file, what, group_may_read) in access.secret_files() {
            found(
                slice_store::read_secret_file(file, what, group_may_read)
                    .map_err(Into::into)
                    .and_then(|read| match read {
                        Some(_) => Ok(()),
                        None => Err(anyhow::anyhow!("{what} {} does not exist", file.display())),
                    }),
            );
        }
    }
    for (file, what) in [
        (&config.pid_file, "the pid file (--pid-file)"),
        (&config.log_file, "the log file (--log-file)"),
    ] {
        if let Some(file) = file {
            found(parent_exists(file, what));
        }
    }
    problems
}

/// The data directory as a start would find it: an existing one passes the ownership
/// rule, a missing one could be made (its parent exists).
fn data_directory(config: &Config) -> anyhow::Result<()> {
    let root = config.data_dir.root();
    match std::fs::metadata(root) {
        Ok(metadata) if metadata.is_dir() => Ok(slice_store::check_private_dir(root)?),
        Ok(_) => anyhow::bail!("the data directory {} is not a directory", root.display()),
        Err(_) => crate::store::refuse_missing_parent(config),
    }
}

fn readable(file: &Path, what: &str) -> anyhow::Result<()> {
    std::fs::read(file)
        .map(drop)
        .map_err(|err| anyhow::anyhow!("cannot read {what} {}: {err}", file.display()))
}

fn parent_exists(file: &Path, what: &str) -> anyhow::Result<()> {
    let parent = file
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty());
    match parent {
        Some(parent) if !parent.is_dir() => {
            anyhow::bail!("the directory of {what} {} does not exist", file.display())
        }
        _ => Ok(()),
    }
}

//! The tool run by a user who may not use the data directory: the real binary as nobody
//! against root's owner-only data directory, with and without a daemon, and root against
//! another user's. The cause (permission denied, the path and its owner) comes first,
//! and nothing changes.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use super::{list, ok, Run, MAC1};
use crate::common::{ANOTHER_UID, SLICE};

/// `slice --db data_dir args` run as nobody.
fn as_nobody(data_dir: &Path, args: &[&str]) -> Run {
    Command::new(SLICE)
        .arg("--db")
        .arg(data_dir)
        .args(args)
        .stdin(Stdio::null())
        .uid(ANOTHER_UID)
        .gid(ANOTHER_UID)
        .output()
        .expect("slice runs")
        .into()
}

/// A directory nobody may enter, below one everybody may: the data directory root
/// keeps, as sliced made it (0700).
fn roots_data_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let parent = tempfile::tempdir().unwrap();
    std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = parent.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
    (parent, data)
}

/// Every kind of command: reads, an addition, removals and an apply.
fn commands(declaration: &str) -> Vec<Vec<&str>> {
    vec![
        vec!["list"],
        vec!["list", "--json"],
        vec!["export"],
        vec!["add", "red"],
        vec!["add_host", "-m", MAC1, "-p", "0x1:1", "-s", "blue"],
        vec!["delete", "blue"],
        vec!["apply", "-f", declaration],
    ]
}

fn check_denied(data: &Path, declaration: &str) {
    let before = list(data);
    let expected = format!(
        "slice: permission denied: {} belongs to root (uid 0), and this command runs as \
         nobody (uid {ANOTHER_UID}). Run slice as the user sliced runs as, the owner of the \
         data directory (sudo -u root slice ...), or name a data directory of your own with \
         --db\n",
        data.display()
    );
    for args in commands(declaration) {
        let run = as_nobody(data, &args);
        assert_eq!(run.code, Some(1), "{args:?}: {run:?}");
        assert_eq!(run.stdout, "", "{args:?}");
        assert_eq!(run.stderr, expected, "{args:?}");
    }
    assert_eq!(list(data), before, "a refused command changed something");
}

#[test]
fn another_user_is_told_permission_denied_with_the_owner_not_that_there_is_no_database() {
    if !crate::common::running_as_root("the wrong-user test") {
        return;
    }
    let (parent, data) = roots_data_dir();
    let declaration = parent.path().join("slices.toml");
    std::fs::write(&declaration, "").unwrap();
    let declaration = declaration.to_str().unwrap();
    ok(&data, &["add", "blue"]);
    // The database opened by the tool itself.
    check_denied(&data, declaration);
    // Before any database was made, too.
    let (_fresh_parent, fresh) = roots_data_dir();
    for args in commands(declaration) {
        let run = as_nobody(&fresh, &args);
        assert_eq!(run.code, Some(1), "{args:?}: {run:?}");
        assert!(
            run.stderr.starts_with(&format!(
                "slice: permission denied: {} belongs to root (uid 0)",
                fresh.display()
            )),
            "{args:?}: {}",
            run.stderr
        );
    }
    assert_eq!(std::fs::read_dir(&fresh).unwrap().count(), 0);
    // A data directory to be made inside one nobody may not enter names that one.
    let below = data.join("deeper");
    let run = as_nobody(&below, &["add", "red"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.starts_with(&format!(
            "slice: permission denied: {} belongs to root (uid 0)",
            data.display()
        )),
        "{}",
        run.stderr
    );
    assert!(!below.exists());
}

#[test]
fn another_user_is_told_permission_denied_while_the_daemon_runs() {
    if !crate::common::running_as_root("the wrong-user daemon test") {
        return;
    }
    let (parent, data) = roots_data_dir();
    let declaration = parent.path().join("slices.toml");
    std::fs::write(&declaration, "[[slice]]\nname = \"x\"\n").unwrap();
    let _daemon = crate::common::Daemon::start(&data);
    ok(&data, &["add", "blue"]);
    check_denied(&data, declaration.to_str().unwrap());
}

#[test]
fn root_without_a_daemon_leaves_another_users_data_directory_alone() {
    if !crate::common::running_as_root("the foreign data directory test") {
        return;
    }
    let (_parent, data) = roots_data_dir();
    std::os::unix::fs::chown(&data, Some(ANOTHER_UID), Some(ANOTHER_UID)).unwrap();
    for args in [&["list"][..], &["add", "blue"][..]] {
        let run = super::run(&data, args);
        assert_eq!(run.code, Some(1), "{args:?}: {run:?}");
        assert_eq!(
            run.stderr,
            format!(
                "slice: the data directory {} belongs to nobody (uid {ANOTHER_UID}), not to \
                 root that runs this command, and no sliced answers on its socket: a \
                 database opened here would get files its owner cannot open. Run slice as \
                 its owner (sudo -u nobody slice ...)\n",
                data.display()
            ),
            "{args:?}"
        );
    }
    assert_eq!(std::fs::read_dir(&data).unwrap().count(), 0);
}

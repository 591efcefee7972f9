//! The database the tool opens: where its data directory is (`--db`, `SLICED_DB`, the
//! per-user default), none there, one another process holds, one open to others, and one
//! damaged.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{list, ok, private_tempdir, run, Run, MAC1};
use crate::common::SLICE;

/// `slice` with a chosen environment and no `--db`.
fn slice_with_env(env: &[(&str, &Path)], args: &[&str]) -> Run {
    let mut command = Command::new(SLICE);
    command
        .args(args)
        .env_remove("SLICED_DB")
        .env_remove("XDG_DATA_HOME")
        .stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("slice runs").into()
}

/// Every command that only reads or removes: the reads first.
fn reads_and_removals(declaration: &str) -> Vec<Vec<&str>> {
    vec![
        vec!["list"],
        vec!["list", "--json"],
        vec!["export"],
        vec!["apply", "-f", declaration, "--dry-run"],
        vec!["delete", "blue"],
        vec!["delete_port", "-p", "0x1:1", "-s", "blue"],
        vec!["delete_host", "-m", MAC1, "-p", "0x1:1", "-s", "blue"],
    ]
}

#[test]
fn a_read_where_there_is_no_database_says_so_exits_1_and_creates_nothing() {
    let dir = private_tempdir().unwrap();
    let declaration = dir.path().join("slices.toml");
    std::fs::write(&declaration, "[[slice]]\nname = \"blue\"\n").unwrap();
    let declaration = declaration.to_str().unwrap();
    // A mistyped directory, and one that exists but holds no database.
    let typo = dir.path().join("typo");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for data_dir in [&typo, &empty] {
        for args in reads_and_removals(declaration) {
            let run = run(data_dir, &args);
            assert_eq!(run.code, Some(1), "{args:?}: {run:?}");
            assert_eq!(run.stdout, "", "{args:?}");
            assert_eq!(
                run.stderr,
                format!(
                    "slice: no database in {} (is the daemon's data directory elsewhere? \
                     see --db / SLICED_DB)\n",
                    data_dir.display()
                ),
                "{args:?}"
            );
        }
        let named = slice_with_env(&[("SLICED_DB", data_dir)], &["list"]);
        assert_eq!(named.code, Some(1), "{named:?}");
    }
    assert!(!typo.exists(), "a read made the directory it did not find");
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
    // A write makes the database, as a first run does; then reads find it.
    ok(&typo, &["add", "blue"]);
    assert_eq!(list(&typo), "blue\n");
    for args in &reads_and_removals(declaration)[..4] {
        assert_eq!(run(&typo, args).code, Some(0), "{args:?}");
    }
}

#[test]
fn sliced_db_names_the_data_directory_and_db_wins_over_it() {
    let dir = private_tempdir().unwrap();
    let other = private_tempdir().unwrap();
    let run = slice_with_env(&[("SLICED_DB", dir.path())], &["add", "from-env"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(list(dir.path()), "from-env\n");

    let db = dir.path().to_str().unwrap();
    let run = slice_with_env(
        &[("SLICED_DB", other.path())],
        &["--db", db, "add", "from-flag"],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(list(dir.path()), "from-env\nfrom-flag\n");
    let other_listed = crate::common::slice(other.path(), &["list"]);
    assert_eq!(other_listed.status.code(), Some(1), "--db won");
    assert_eq!(std::fs::read_dir(other.path()).unwrap().count(), 0);
}

#[test]
fn without_db_the_per_user_data_directory_is_used() {
    let home = private_tempdir().unwrap();
    let xdg = private_tempdir().unwrap();

    let run = slice_with_env(&[("HOME", home.path())], &["add", "in-home"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let home_dir = home.path().join(".local/share/sliced");
    assert_eq!(list(&home_dir), "in-home\n");

    let run = slice_with_env(
        &[("HOME", home.path()), ("XDG_DATA_HOME", xdg.path())],
        &["add", "in-xdg"],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(list(&xdg.path().join("sliced")), "in-xdg\n");
    assert_eq!(list(&home_dir), "in-home\n");
}

#[test]
fn an_unusable_data_directory_is_named() {
    let dir = private_tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "not a directory").unwrap();
    for db in [file.join("db"), file.clone()] {
        for args in [&["list"][..], &["add", "blue"][..]] {
            let run = run(&db, args);
            assert_eq!(run.code, Some(1), "{db:?} {args:?}: {run:?}");
            assert_eq!(run.stdout, "");
            assert!(
                run.stderr.starts_with("slice: ") && run.stderr.contains(db.to_str().unwrap()),
                "{}",
                run.stderr
            );
            assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        }
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a directory");
}

#[test]
fn a_database_held_by_another_process_is_waited_for() {
    let dir = private_tempdir().unwrap();
    ok(dir.path(), &["add", "blue"]);
    // A holder that is no daemon, like one still starting: it lets go after a moment.
    let holder = slice_store::Store::open(&dir.path().join("store")).unwrap();
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        drop(holder);
    });
    let started = Instant::now();
    ok(dir.path(), &["add", "red"]);
    assert!(started.elapsed() >= Duration::from_millis(400));
    releaser.join().unwrap();
    assert_eq!(list(dir.path()), "blue\nred\n");
}

/// Sets a file's permission bits.
fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_database_readable_by_others_is_made_owner_only_and_the_change_reported() {
    let dir = private_tempdir().unwrap();
    let d = dir.path().join("data");
    ok(&d, &["add", "blue"]);
    // As an earlier release, or a careless hand, left them.
    let store = d.join("store");
    for (path, mode) in [(&d, 0o755), (&store, 0o755), (&store.join("db"), 0o644)] {
        chmod(path, mode);
    }
    let run = run(&d, &["list"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "blue\n");
    for expected in [
        format!(
            "slice: tightened the permissions of {} from 0755 to 0700",
            d.display()
        ),
        format!(
            "slice: tightened the permissions of {} from 0755 to 0700",
            store.display()
        ),
        format!(
            "slice: tightened the permissions of {} from 0644 to 0600",
            store.join("db").display()
        ),
    ] {
        assert!(
            run.stderr.contains(&expected),
            "{expected} not in {}",
            run.stderr
        );
    }
    assert_eq!(mode_of(&d), 0o700);
    assert_eq!(mode_of(&store), 0o700);
    for entry in std::fs::read_dir(&store).unwrap() {
        let path = entry.unwrap().path();
        let expected = if path.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode_of(&path), expected, "{}", path.display());
    }
    // Tight now: the next command has nothing to say.
    assert_eq!(list(&d), "blue\n");
}

/// `slice list` on a damaged database: status 1, nothing listed, one line on stderr that
/// names the database as corrupt.
fn list_of_damaged_database(d: &Path) -> Run {
    let run = run(d, &["list"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stdout, "");
    let expected = format!(
        "slice: the database {} is corrupt: ",
        d.join("store").display()
    );
    assert!(run.stderr.starts_with(&expected), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    run
}

/// A database whose start was overwritten must not list as "no slices": the tool says it
/// is corrupt, naming it, and leaves every byte as it found it.
#[test]
fn a_damaged_database_is_reported_and_left_untouched_never_listed_as_empty() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    ok(d, &["add", "blue"]);
    let damaged = crate::common::damage_start_of_log(d);
    list_of_damaged_database(d);
    assert!(
        crate::common::files_with_bytes(d) == damaged,
        "the damaged database was rewritten"
    );
}

/// The same once sled has written a snapshot (every open after the first does): sled
/// itself finds the damage then, and the tool reports it alike.
#[test]
fn a_damaged_database_with_a_snapshot_is_reported_too() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    ok(d, &["add", "blue"]);
    ok(d, &["add", "red"]);
    let damaged = crate::common::damage_start_of_log(d);
    list_of_damaged_database(d);
    assert!(
        crate::common::files_with_bytes(d) == damaged,
        "the damaged database was rewritten"
    );
}

/// A database of two slices, one with a host, written by three runs: its log is one
/// segment, and sled has written a snapshot of it.
fn small_database(d: &Path) {
    ok(d, &["add", "blue"]);
    ok(d, &["add_host", "-m", MAC1, "-p", "0x1:1", "-s", "blue"]);
    ok(d, &["add", "red"]);
}

/// A database of many slices written in one run, so that its log spans several of
/// sled's segments and sled has written no snapshot of it yet.
fn large_database(d: &Path) {
    let declaration = d.join("slices.toml");
    let text: String = (0..3000)
        .map(|n| format!("[[slice]]\nname = \"s{n}\"\n"))
        .collect();
    std::fs::write(&declaration, text).unwrap();
    ok(d, &["apply", "-f", declaration.to_str().unwrap()]);
    std::fs::remove_file(&declaration).unwrap();
}

/// sled takes the first bad message of its log for the end of the log, zeroes what
/// follows, writes a new snapshot, and panics on some damage: the tool exited 101 with a
/// backtrace, sliced likewise, and a failed start had rewritten the damaged log. After a
/// clean close the log is checked against what the close recorded before sled sees it:
/// both binaries exit 1 naming the database as corrupt, and every byte stays as it was.
#[test]
fn damage_in_the_middle_of_the_log_or_a_log_cut_in_half_stops_both_binaries_and_changes_nothing() {
    for (case, large, cut) in [
        ("small, middle", false, false),
        ("large, middle", true, false),
        ("large, cut in half", true, true),
    ] {
        let dir = private_tempdir().unwrap();
        let d = dir.path();
        if large {
            large_database(d);
        } else {
            small_database(d);
        }
        let damaged = if cut {
            crate::common::cut_log_in_half(d)
        } else {
            crate::common::damage_middle_of_log(d)
        };
        let run = list_of_damaged_database(d);
        assert!(!run.stderr.contains("panicked"), "{case}: {}", run.stderr);
        assert!(
            crate::common::files_with_bytes(d) == damaged,
            "{case}: the tool rewrote the damaged database"
        );
        let refused = crate::common::refused_start(d, &[]);
        let expected = format!(
            "sliced: the database {} is corrupt: ",
            d.join("store").display()
        );
        assert!(refused.contains(&expected), "{case}: {refused}");
        assert!(!refused.contains("panicked"), "{case}: {refused}");
        assert!(
            crate::common::files_with_bytes(d) == damaged,
            "{case}: sliced rewrote the damaged database"
        );
    }
}

/// Without the record of a clean close (a crash, as removing it stands for here), sled
/// opens a scratch copy first. A log whose second segment carries the first one's header
/// makes sled panic ("duplicate segment LSN"): the panic is caught on the copy, and both
/// binaries exit 1 naming the database as corrupt, with no backtrace and every byte left
/// as it was.
#[test]
fn a_log_sled_panics_on_after_a_crash_is_reported_without_a_panic_and_left_untouched() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    large_database(d);
    std::fs::remove_file(d.join("store").join("sliced-closed")).unwrap();
    let damaged = crate::common::duplicate_first_segment_header(d);
    let run = list_of_damaged_database(d);
    assert!(
        run.stderr.contains("sled cannot recover its log"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(
        crate::common::files_with_bytes(d) == damaged,
        "the tool rewrote it"
    );
    let refused = crate::common::refused_start(d, &[]);
    assert!(
        refused.contains("is corrupt: sled cannot recover its log"),
        "{refused}"
    );
    assert!(!refused.contains("panicked"), "{refused}");
    assert!(
        crate::common::files_with_bytes(d) == damaged,
        "sliced rewrote it"
    );
}

/// The tool applies sliced's rule when it opens the database itself: a data directory
/// others may write, one made inside a directory others may write, and a database of
/// which a file or directory belongs to another user are refused, with the path and what
/// to check, and nothing is made or changed.
#[test]
fn a_data_directory_others_may_write_or_a_database_file_of_another_user_is_refused() {
    if !crate::common::running_as_root("the tool's planted file test") {
        return;
    }
    let dir = private_tempdir().unwrap();
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    chmod(&open, 0o777);
    let refused = run(&open, &["add", "blue"]);
    assert_eq!(refused.code, Some(1), "{refused:?}");
    let expected = format!(
        "slice: the data directory {} may be written by other users (mode 0777)",
        open.display()
    );
    assert!(refused.stderr.starts_with(&expected), "{}", refused.stderr);
    assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0);
    assert_eq!(mode_of(&open), 0o777);

    let inside = open.join("data");
    let refused = run(&inside, &["add", "blue"]);
    assert_eq!(refused.code, Some(1), "{refused:?}");
    let expected = format!(
        "slice: the data directory would be made in {}, which other users may write",
        open.display()
    );
    assert!(refused.stderr.starts_with(&expected), "{}", refused.stderr);
    assert!(!inside.exists());

    let d = dir.path().join("data");
    ok(&d, &["add", "blue"]);
    let conf = d.join("store").join("conf");
    std::os::unix::fs::chown(&conf, Some(crate::common::ANOTHER_UID), None).unwrap();
    let before = crate::common::files_with_bytes(&d);
    let refused = run(&d, &["add", "red"]);
    assert_eq!(refused.code, Some(1), "{refused:?}");
    let expected = format!(
        "the database file {} belongs to uid {}",
        conf.display(),
        crate::common::ANOTHER_UID
    );
    assert!(refused.stderr.contains(&expected), "{}", refused.stderr);
    assert!(
        crate::common::files_with_bytes(&d) == before,
        "the database changed"
    );
}

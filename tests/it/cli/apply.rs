//! Slices as a file: `slice export` and `slice apply -f`, on the database and through the
//! daemon and REST.

use std::path::Path;

use super::{fails, list, make_example, ok, private_tempdir, EXAMPLE_LIST};

/// `slice export`, changed, `slice apply -f` back: the plan printed, the state equal to
/// the file, and the file's errors named by line; in `dir`'s mode (direct or daemon).
fn check_export_and_apply(dir: &Path) {
    make_example(dir);
    let exported = ok(dir, &["export"]);
    let file = dir.join("slices.toml");
    // The same state again: nothing to change.
    std::fs::write(&file, &exported).unwrap();
    assert_eq!(
        ok(dir, &["apply", "-f", file.to_str().unwrap()]),
        "nothing to change\n"
    );
    assert_eq!(list(dir), EXAMPLE_LIST);

    let wanted = "[[slice]]\nname = \"green\"\n\n[[slice.port]]\nname = \"0x3:1\"\nmac_addresses = [\"00:00:00:00:00:03\"]\n\n[[slice]]\nname = \"blue\"\n\n[[slice.port]]\nname = \"0x1:1\"\nmac_addresses = [\"00:00:00:00:00:02\"]\n";
    std::fs::write(&file, wanted).unwrap();
    let path = file.to_str().unwrap();
    // Removals in the current order (blue, then red), then additions in the file's.
    let plan = "- host 00:00:00:00:00:01 at 0x1:1 of blue\n- port 0x2:3 of blue\n- slice red\n\
                + slice green\n+ port 0x3:1 of green\n+ host 00:00:00:00:00:03 at 0x3:1 of green\n\
                + host 00:00:00:00:00:02 at 0x1:1 of blue\n";
    assert_eq!(
        ok(dir, &["apply", "-f", path, "--dry-run"]),
        format!("{plan}dry run: nothing was changed\n")
    );
    assert_eq!(list(dir), EXAMPLE_LIST);
    assert_eq!(ok(dir, &["apply", "-f", path]), format!("{plan}applied\n"));
    assert_eq!(
        list(dir),
        "blue\n  0x1:1\n    00:00:00:00:00:02\ngreen\n  0x3:1\n    00:00:00:00:00:03\n"
    );
    // What is exported now is what was applied, and applies as nothing.
    std::fs::write(&file, ok(dir, &["export"])).unwrap();
    assert_eq!(ok(dir, &["apply", "-f", path]), "nothing to change\n");

    // A file with an error changes nothing and says where.
    std::fs::write(
        &file,
        "[[slice]]\nname = \"blue\"\n\n[[slice.port]]\nname = \"0x1:1\"\nmac_addresses = [\"00:00:00:00:00:0g\"]\n",
    )
    .unwrap();
    let err = fails(dir, &["apply", "-f", path]);
    assert!(
        err.starts_with(&format!("slice: {path}:6: invalid MAC address")),
        "{err}"
    );
    std::fs::write(&file, "[[slice]]\nname = \"a\"\n[[slice]]\nname = \"a\"\n").unwrap();
    let err = fails(dir, &["apply", "-f", path]);
    assert!(
        err.contains(":4: slice a is declared twice (first on line 2)"),
        "{err}"
    );
    let err = fails(dir, &["apply", "-f", "/nonexistent/slices.toml"]);
    assert!(
        err.contains("cannot read /nonexistent/slices.toml"),
        "{err}"
    );
}

/// A plan that deletes more than half of the slices, all of them for an empty or
/// truncated file, is refused without `--prune` and changes nothing; with it, it is
/// applied. `--dry-run` shows it and warns. In `dir`'s mode; expects no slices.
fn check_prune_guard(dir: &Path) {
    for name in ["a", "b", "c", "d"] {
        ok(dir, &["add", name]);
    }
    let before = list(dir);
    let file = dir.join("slices.toml");
    let path = file.to_str().unwrap();
    let next_steps = format!(
        ": nothing was changed. Check the file (slice apply -f {path} --dry-run shows the \
         plan), and pass --prune if that is meant\n"
    );
    for (text, what) in [
        (
            "",
            format!("{path} declares no slices: applying it would delete every slice there is (4)"),
        ),
        (
            "# only a comment\n",
            format!("{path} declares no slices: applying it would delete every slice there is (4)"),
        ),
        (
            "[[slice]]\nname = \"z\"\n",
            format!("applying {path} would delete every slice there is (4): it names none of them"),
        ),
        // A file cut short after its first slice.
        (
            "[[slice]]\nname = \"a\"\n",
            format!("applying {path} would delete 3 of the 4 slices, more than half"),
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        assert_eq!(
            fails(dir, &["apply", "-f", path]),
            format!("slice: {what}{next_steps}"),
            "{text:?}"
        );
        let run = super::run(dir, &["apply", "-f", path, "--dry-run"]);
        assert_eq!(run.code, Some(0), "{run:?}");
        assert!(
            run.stdout.ends_with("dry run: nothing was changed\n"),
            "{run:?}"
        );
        assert_eq!(
            run.stderr,
            format!("slice: warning: {what}; that needs --prune\n")
        );
        assert_eq!(list(dir), before);
    }
    // Half of them goes through as before.
    std::fs::write(&file, "[[slice]]\nname = \"a\"\n[[slice]]\nname = \"b\"\n").unwrap();
    assert_eq!(
        ok(dir, &["apply", "-f", path]),
        "- slice c\n- slice d\napplied\n"
    );
    // All of them, when asked for.
    std::fs::write(&file, "").unwrap();
    assert_eq!(
        ok(dir, &["apply", "-f", path, "--prune"]),
        "- slice a\n- slice b\napplied\n"
    );
    assert_eq!(list(dir), "");
    // With nothing there, an empty file has nothing to change.
    assert_eq!(ok(dir, &["apply", "-f", path]), "nothing to change\n");
}

#[test]
fn a_file_that_deletes_most_slices_needs_prune_on_the_database() {
    let dir = private_tempdir().unwrap();
    check_prune_guard(dir.path());
}

#[test]
fn a_file_that_deletes_most_slices_needs_prune_through_the_daemon() {
    let dir = private_tempdir().unwrap();
    let daemon = crate::common::Daemon::start(dir.path());
    check_prune_guard(dir.path());
    assert!(daemon.terminate().success());
}

#[test]
fn export_and_apply_work_on_the_database() {
    let dir = private_tempdir().unwrap();
    check_export_and_apply(dir.path());
}

#[test]
fn export_and_apply_work_through_the_daemon_and_rest() {
    let dir = private_tempdir().unwrap();
    let daemon = crate::common::Daemon::start(dir.path());
    check_export_and_apply(dir.path());
    // Over REST: the same plan, and a body that names something twice is 400.
    let (status, body) = crate::common::status_json(
        crate::common::agent()
            .post(&daemon.url("/slices:apply?dry_run=true"))
            .send_json(serde_json::json!({"slices": [{"name": "blue"}]})),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["applied"], false);
    assert_eq!(
        body["plan"],
        serde_json::json!([
            {"op": "delete_port", "slice": "blue", "port": "0x1:1"},
            {"op": "delete_slice", "slice": "green"},
        ])
    );
    let (status, body) = crate::common::status_json(
        crate::common::agent()
            .post(&daemon.url("/slices:apply"))
            .send_json(serde_json::json!({"slices": [{"name": "a"}, {"name": "a"}]})),
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "slice a is declared twice");
    let (status, body) = crate::common::status_json(
        crate::common::agent()
            .get(&daemon.url("/slices:export"))
            .call(),
    );
    assert_eq!(status, 200);
    assert_eq!(body["slices"][0]["name"], "blue");
}

//! Black-box tests of what `sliced` tells about itself: its man pages (`--write-manuals`,
//! a flag an operator building from source uses too), its shell completions
//! (`sliced completions SHELL`, as `slice completions` prints its own) and its help.

use std::process::{Command, Output, Stdio};

use crate::common::SLICED;

fn sliced(args: &[&str]) -> Output {
    Command::new(SLICED)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("sliced runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Issue 35, item 12: the synopsis names each option's value, as `--help` does
/// (clap_mangen's own drops them), and the page is one roff document.
#[test]
fn the_man_page_synopsis_names_each_value() {
    let dir = tempfile::tempdir().unwrap();
    let output = sliced(&["--write-manuals", dir.path().to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    let page = std::fs::read_to_string(dir.path().join("man/sliced.1")).unwrap();
    let synopsis = page
        .split(".SH SYNOPSIS\n")
        .nth(1)
        .and_then(|rest| rest.split("\n.SH ").next())
        .expect("a synopsis");
    for option in [
        r"[\fB\-\-db\fR \fIPATH\fR]",
        r"[\fB\-\-http\fR \fIADDR\fR]",
        r"[\fB\-\-allowed\-dpid\fR \fIDPID\fR]...",
        r"[\fB\-d\fR|\fB\-\-daemon\fR]",
        r"[\fB\-\-log\-level\fR \fILEVEL\fR]",
        r"[\fICOMMAND\fR]",
    ] {
        assert!(synopsis.contains(option), "{option} in {synopsis}");
    }
    assert_eq!(page.matches(".TH ").count(), 1, "{page}");
    assert!(dir.path().join("man/sliced-completions.1").is_file());
    let slice_add = std::fs::read_to_string(dir.path().join("man/slice-add.1")).unwrap();
    assert!(
        slice_add.contains(r"[\fB\-\-db\fR \fIPATH\fR]"),
        "{slice_add}"
    );
}

/// Issue 35, item 12: `--write-manuals` and the completions are in `--help`.
#[test]
fn the_help_shows_the_manuals_and_the_completions() {
    let help = stdout(&sliced(&["--help"]));
    assert!(help.contains("--write-manuals <DIR>"), "{help}");
    assert!(help.contains("completions"), "{help}");
    assert!(help.contains("--config /etc/sliced/sliced.toml"), "{help}");
    assert!(!help.contains("/etc/sliced.toml"), "{help}");
}

/// Issue 35, item 12: `sliced completions SHELL` prints the script of each shell the
/// package ships, naming the daemon's flags, and needs no data directory.
#[test]
fn sliced_completions_prints_the_script_of_each_shell() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    for (shell, marker) in [
        ("bash", "complete -F _sliced"),
        ("zsh", "#compdef sliced"),
        ("fish", "complete -c sliced"),
    ] {
        let output = sliced(&["--db", db.to_str().unwrap(), "completions", shell]);
        assert!(output.status.success(), "{shell}: {output:?}");
        let script = stdout(&output);
        assert!(script.contains(marker), "{shell}: {script}");
        assert!(script.contains("check-config"), "{shell}: {script}");
    }
    assert!(!db.exists(), "completions made the data directory");

    // --output, as `slice completions --output`: a directory gets the shell's file name.
    let target = dir.path().join("a/completions/");
    let output = sliced(&[
        "completions",
        "zsh",
        "--output",
        &format!("{}/", target.display()),
    ]);
    assert!(output.status.success(), "{output:?}");
    let written = std::fs::read_to_string(target.join("_sliced")).unwrap();
    assert!(written.contains("#compdef sliced"), "{written}");
    let output = sliced(&["completions", "tcsh"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
}

//! The seed corpus runs through every harness in the ordinary test suite: a seed that
//! crashes a harness, or a target without seeds, fails CI rather than the next fuzzing
//! campaign.

use std::path::{Path, PathBuf};

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target)
}

fn seeds(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = corpus_dir(target);
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("cannot read the corpus {}: {err}", dir.display()));
    entries
        .map(|entry| {
            let path = entry.expect("a readable corpus entry").path();
            let bytes = std::fs::read(&path)
                .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
            (path, bytes)
        })
        .collect()
}

#[test]
fn every_target_has_seeds_and_runs_them() {
    for target in sliced_fuzz::TARGETS {
        let seeds = seeds(target);
        assert!(
            seeds.len() >= 5,
            "{target}: only {} seeds in {}",
            seeds.len(),
            corpus_dir(target).display()
        );
        for (path, bytes) in seeds {
            assert!(
                sliced_fuzz::run(target, &bytes),
                "{target} is not a target that run() knows ({})",
                path.display()
            );
        }
    }
}

/// Hand-made seeds are only worth their place if the decoder gets past the framing: each
/// holds at least one whole message that decodes. (What AFL++ found, `found_*`, is kept
/// for the paths it reaches, error paths included.)
#[test]
fn openflow_seeds_hold_decodable_messages() {
    let hand_made = seeds("openflow_stream").into_iter().filter(|(path, _)| {
        !path
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name.starts_with("found_"))
    });
    for (path, bytes) in hand_made {
        let decoded = openflow::frame_len(&bytes)
            .ok()
            .flatten()
            .and_then(|len| openflow::Message::parse(&bytes[..len]).ok());
        assert!(decoded.is_some(), "{} decodes to nothing", path.display());
    }
}

/// `cargo xtask fuzz` finds targets by their binaries, this test by `TARGETS`: the two
/// lists must name the same harnesses.
#[test]
fn targets_match_the_fuzz_binaries() {
    let bin_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bin");
    let mut binaries: Vec<String> = std::fs::read_dir(&bin_dir)
        .expect("src/bin is readable")
        .map(|entry| entry.expect("a readable entry").file_name())
        .filter_map(|name| name.to_str()?.strip_suffix(".rs").map(str::to_owned))
        .collect();
    binaries.sort();
    let mut targets: Vec<&str> = sliced_fuzz::TARGETS.to_vec();
    targets.sort_unstable();
    assert_eq!(binaries, targets);
}

/// The request-body seeds reach every body type as a valid body: a fuzzer that starts
/// from errors only would take long to find the success paths.
#[test]
fn request_body_seeds_decode_to_every_body_type() {
    use slice_http::{decode_body, Credentials, MacBody, PortRequest, SliceBody};
    const CONTENT_TYPES: [Option<&str>; 3] = [
        None,
        Some("application/json"),
        Some("application/x-www-form-urlencoded"),
    ];
    let mut reached = [false; 4];
    for (_, bytes) in seeds("request_body") {
        let Some((&selector, body)) = bytes.split_first() else {
            continue;
        };
        let Some(&content_type) = CONTENT_TYPES.get(usize::from(selector)) else {
            continue;
        };
        reached[0] |= decode_body::<SliceBody>(content_type, body).is_ok();
        reached[1] |= decode_body::<PortRequest>(content_type, body).is_ok();
        reached[2] |= decode_body::<MacBody>(content_type, body).is_ok();
        reached[3] |= decode_body::<Credentials>(content_type, body).is_ok();
    }
    assert_eq!(reached, [true; 4], "slice, port, MAC address, credentials");
}

/// The flow statistics seeds reach the entry decoder: each is a reply with one flow.
#[test]
fn flow_stats_seeds_decode_as_flow_stats_replies() {
    for name in ["flow_stats_of10", "flow_stats_of13"] {
        let bytes = std::fs::read(corpus_dir("openflow_stream").join(name)).expect(name);
        let (_, message) = openflow::Message::parse(&bytes).expect(name);
        assert!(
            matches!(&message, openflow::Message::FlowStatsReply { flows, .. } if flows.len() == 1),
            "{name}: {message:?}"
        );
    }
}

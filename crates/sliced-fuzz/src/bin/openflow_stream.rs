//! AFL++ entry point for [`sliced_fuzz::openflow_stream`].

fn main() {
    afl::fuzz!(|data: &[u8]| sliced_fuzz::openflow_stream(data));
}

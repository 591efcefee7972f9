//! AFL++ entry point for [`sliced_fuzz::request_body`].

fn main() {
    afl::fuzz!(|data: &[u8]| sliced_fuzz::request_body(data));
}

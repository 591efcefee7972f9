//! The REST API (spec sections 4 and 7). The contract (every endpoint, the errors and the
//! order they are checked in, identifiers, bodies) is tested in-process against the
//! application on a real store; what needs the real `sliced` over real sockets
//! (durability across restarts and SIGKILL, concurrent clients on several workers) is
//! tested black-box. One module per area: `endpoints` (spec section 4), `errors` (spec
//! section 7), `identifiers`, `bad_input` and `daemon` (the real daemon).

mod bad_input;
mod bindings;
mod daemon;
mod endpoints;
mod errors;
mod identifiers;

use serde_json::{json, Value};

fn error(message: &str) -> Value {
    json!({ "error": message })
}

// A build script only so that the build-dependency on protoc-bin-vendored is fetched with
// the rest of the graph (see Cargo.toml and .cargo/protoc); it builds nothing.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
}

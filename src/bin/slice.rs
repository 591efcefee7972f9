//! `slice`: manages the slices of sliced. Everything lives in the slice-cli crate.

fn main() -> std::process::ExitCode {
    slice_cli::main()
}

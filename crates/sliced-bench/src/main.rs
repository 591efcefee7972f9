//! sliced-bench: measures sliced against what a user would pick instead, in one run on
//! one machine, and writes docs/benchmarks.md.
//!
//! - REST reads against a bare actix-web server answering the same JSON from memory;
//! - durable REST writes against the machine's raw write + fdatasync rate;
//! - flow setup (a cbench-style switch emulator) against ovs-testcontroller and an
//!   os-ken learning switch;
//! - scale: 65,536 slices through the REST API; a million MAC bindings through it, with
//!   the restart, reads and membership changes at that scale (`million`); path computation
//!   and rerouting on a k=16 fat-tree and a 1,000-switch random graph (criterion, in
//!   slice-controller); flow-table sizes against hosts on the OpenFlow 1.3 pipeline and on
//!   per-pair flows, in-process on the controller's engine (`tables`);
//! - fat trees of real Open vSwitch bridges under sliced, k=8 and k=16: connect, discovery,
//!   apply to every table right, one binding, a cable cut, and sliced's memory and CPU
//!   beside ovs-vswitchd's (`fat_tree`).
//!
//! Everything runs on loopback (the fat trees in a network namespace of their own, joined
//! by a veth pair); every process started here is stopped before it returns.

mod applies;
mod args;
mod bare;
mod big_emulated;
mod bulk;
mod emulator;
mod fat_tree;
mod first_packet;
mod floor;
mod flows_part;
mod fsync;
mod in_place;
mod machine;
mod measure;
mod million;
mod page;
mod peers;
mod plan;
mod procs;
mod reads;
mod report;
mod rest_part;
mod results;
mod round_trips;
mod routing;
mod run;
mod scale;
mod sliced;
mod stats;
mod tables;
mod verify_part;
mod watcher;
mod wire;
mod wrk;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::args::RunArgs;

#[derive(Debug, Parser)]
#[command(
    version,
    about = "Benchmarks sliced against its peers and writes docs/benchmarks.md"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The REST peer: serve fixed JSON bodies from memory (started by the harness itself)
    #[command(hide = true)]
    BareServer {
        #[arg(long)]
        addr: String,
        /// PATH=FILE: answer GET PATH with the contents of FILE
        #[arg(long = "route", value_parser = bare::parse_route)]
        routes: Vec<(String, PathBuf)>,
    },
    /// The flow-setup floor: a controller with no logic (started by the harness itself)
    #[command(hide = true)]
    FloorController {
        #[arg(long)]
        addr: String,
    },
    /// Build the controller's membership index with the million part's layout and print
    /// its resident memory in KiB (started by the harness itself)
    #[command(hide = true)]
    MembershipIndex {
        #[arg(long)]
        slices: usize,
        #[arg(long)]
        macs: usize,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::BareServer { addr, routes }) => bare::serve(&addr, &routes),
        Some(Command::FloorController { addr }) => floor::serve(&addr),
        Some(Command::MembershipIndex { slices, macs }) => {
            million::print_index_memory(slices, macs)
        }
        None => run::run(&cli.run),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("sliced-bench: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

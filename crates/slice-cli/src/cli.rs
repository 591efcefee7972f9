//! The command line of `slice`: subcommands and options, with their help texts.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use clap_complete::engine::ArgValueCompleter;
use slice_core::{MacAddress, PortId, SliceName};

const ABOUT: &str = "Manage the slices of sliced: named groups of switch ports and the host \
MAC addresses behind them";

const LONG_ABOUT: &str = "Manage the slices of sliced: named groups of switch ports and the host \
MAC addresses behind them. Hosts in a common slice can talk; nobody else can.

When a sliced daemon runs on the data directory, the commands go to it over its local \
socket (<data dir>/sliced.sock), so that the controller applies them at once; otherwise \
slice opens the database (<data dir>/store) itself. Either way every change is on disk when \
the command returns. Commands that only read or remove (list, export, apply --dry-run, \
delete, delete_port, delete_host) need a database to be there: where the data directory \
holds none and no daemon answers, they say so and exit with status 1, creating nothing. \
Commands that add create the data directory and the database when they are missing. \
With --etcd, a daemon on the socket is sent the command only if it serves that etcd and \
prefix. A change the tool makes itself (no daemon) is recorded in <data dir>/audit.log and \
sent to syslog.

Port names are 0x<hex datapath id>:<decimal port number>, such as 0x1:1 or 0xab:12. MAC \
addresses are six colon-separated pairs of hex digits, such as 00:1b:21:3a:4f:0c. Slice \
names are 1 to 64 letters, digits, '-', '_' or '.'.

Commands that change something print nothing when they succeed. A failure prints one line \
starting with \"slice: \" on standard error, changes nothing, and exits with status 1; a \
command line that cannot be parsed exits with status 2.";

const EXAMPLES: &str = "Example session:
  $ slice add blue
  $ slice add_port --port 0x1:1 --slice blue
  $ slice add_host --mac 00:00:00:00:00:01 --port 0x1:1 --slice blue
  $ slice add_host -m 00:00:00:00:00:02 -p 0x2:3 -s blue     # creates port 0x2:3
  $ slice add red
  $ slice list
  blue
    0x1:1
      00:00:00:00:00:01
    0x2:3
      00:00:00:00:00:02
  red
  $ slice add blue
  slice: Slice blue already exists";

#[derive(Debug, Parser)]
#[command(
    name = "slice",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = EXAMPLES,
    // A bare `slice` is a mistake worth the full list of commands, not just an error.
    arg_required_else_help = true,
)]
pub struct Cli {
    /// Data directory shared with sliced [default: $XDG_DATA_HOME/sliced, else
    /// ~/.local/share/sliced]
    #[arg(long, global = true, env = "SLICED_DB", value_name = "PATH")]
    pub db: Option<PathBuf>,

    /// Work on the slices this etcd cluster keeps, as `sliced --etcd` does (comma-separated
    /// endpoints); a daemon answering on the data directory's socket is still asked first
    #[arg(
        long,
        global = true,
        env = "SLICED_ETCD",
        value_name = "URL[,URL...]",
        value_delimiter = ','
    )]
    pub etcd: Vec<String>,

    /// The prefix of the store's keys in etcd, as the daemon's `store.etcd_prefix`
    #[arg(
        long,
        global = true,
        env = "SLICED_ETCD_PREFIX",
        value_name = "PREFIX",
        default_value = slice_etcd::DEFAULT_PREFIX,
        requires = "etcd"
    )]
    pub etcd_prefix: String,

    /// CA certificates (PEM) etcd's certificate must chain to, for https:// endpoints
    /// [default: the system's roots]
    #[arg(
        long,
        global = true,
        env = "SLICED_ETCD_CAFILE",
        value_name = "FILE",
        requires = "etcd"
    )]
    pub etcd_cafile: Option<PathBuf>,

    /// Client certificate (PEM) shown to etcd
    #[arg(
        long,
        global = true,
        env = "SLICED_ETCD_CERTFILE",
        value_name = "FILE",
        requires = "etcd"
    )]
    pub etcd_certfile: Option<PathBuf>,

    /// The client certificate's key (PEM)
    #[arg(
        long,
        global = true,
        env = "SLICED_ETCD_KEYFILE",
        value_name = "FILE",
        requires = "etcd"
    )]
    pub etcd_keyfile: Option<PathBuf>,

    /// etcd user (with --etcd-password-file)
    #[arg(
        long,
        global = true,
        env = "SLICED_ETCD_USER",
        value_name = "NAME",
        requires = "etcd"
    )]
    pub etcd_user: Option<String>,

    /// File holding the etcd user's password, its owner's alone (chmod 600)
    #[arg(
        long,
        global = true,
        env = "SLICED_ETCD_PASSWORD_FILE",
        value_name = "FILE",
        requires = "etcd"
    )]
    pub etcd_password_file: Option<PathBuf>,

    /// Accept etcd over plain http://, where the network to it is trusted: the slices
    /// and the etcd credentials would cross it in clear (refused otherwise, as by sliced)
    #[arg(long, global = true, requires = "etcd")]
    pub etcd_allow_plaintext: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print every slice with its ports and their MAC addresses
    #[command(
        long_about = "Print every slice in creation order: its name on a line of its own, \
        then each of its ports, in the order they were added, indented by two spaces, each \
        followed by its MAC addresses indented by four. With no slices it prints nothing.",
        after_help = "Examples:
  $ slice list
  blue
    0x1:1
      00:00:00:00:00:01
  $ slice list --json
  [
    {
      \"name\": \"blue\",
      \"ports\": [
        {
          \"name\": \"0x1:1\",
          \"dpid\": 1,
          \"port_no\": 1,
          \"mac_addresses\": [
            {
              \"name\": \"00:00:00:00:00:01\"
            }
          ]
        }
      ]
    }
  ]"
    )]
    List {
        /// Print the same tree as JSON (an empty list when there are no slices)
        #[arg(long)]
        json: bool,
    },

    /// Create a slice
    #[command(after_help = "Example:\n  $ slice add blue")]
    Add {
        #[arg(value_name = "SLICE_NAME")]
        slice: SliceName,
    },

    /// Delete a slice with its ports and MAC addresses
    #[command(after_help = "Example:\n  $ slice delete blue")]
    Delete {
        #[arg(value_name = "SLICE_NAME", add = slice_names())]
        slice: SliceName,
    },

    /// Add a switch port to a slice
    #[command(
        name = "add_port",
        after_help = "Example:\n  $ slice add_port --port 0x1:1 --slice blue"
    )]
    AddPort {
        /// The port, as 0x<hex datapath id>:<decimal port number>
        #[arg(short, long, value_name = "PORT_NAME")]
        port: PortId,
        /// The slice's name
        #[arg(short, long, value_name = "SLICE_NAME", add = slice_names())]
        slice: SliceName,
    },

    /// Remove a port, with its MAC addresses, from a slice
    #[command(
        name = "delete_port",
        after_help = "Example:\n  $ slice delete_port --port 0x1:1 --slice blue"
    )]
    DeletePort {
        /// The port, as 0x<hex datapath id>:<decimal port number>
        #[arg(short, long, value_name = "PORT_NAME")]
        port: PortId,
        /// The slice's name
        #[arg(short, long, value_name = "SLICE_NAME", add = slice_names())]
        slice: SliceName,
    },

    /// Admit a host (a MAC address behind a port) to a slice, adding the port when needed
    #[command(
        name = "add_host",
        after_help = "Example:\n  $ slice add_host --mac 00:00:00:00:00:01 --port 0x1:1 --slice blue"
    )]
    AddHost {
        /// The host's MAC address, as six colon-separated pairs of hex digits
        #[arg(short, long, value_name = "MAC_ADDRESS")]
        mac: MacAddress,
        /// The port, as 0x<hex datapath id>:<decimal port number>
        #[arg(short, long, value_name = "PORT_NAME")]
        port: PortId,
        /// The slice's name
        #[arg(short, long, value_name = "SLICE_NAME", add = slice_names())]
        slice: SliceName,
    },

    /// Remove a host's MAC address from a port of a slice; the port stays
    #[command(
        name = "delete_host",
        after_help = "Example:\n  $ slice delete_host --mac 00:00:00:00:00:01 --port 0x1:1 --slice blue"
    )]
    DeleteHost {
        /// The host's MAC address, as six colon-separated pairs of hex digits
        #[arg(short, long, value_name = "MAC_ADDRESS")]
        mac: MacAddress,
        /// The port, as 0x<hex datapath id>:<decimal port number>
        #[arg(short, long, value_name = "PORT_NAME")]
        port: PortId,
        /// The slice's name
        #[arg(short, long, value_name = "SLICE_NAME", add = slice_names())]
        slice: SliceName,
    },

    /// Print every slice, with its ports and MAC addresses, as a file `slice apply` takes
    #[command(
        long_about = "Print the whole slice state as TOML: a [[slice]] table per slice in \
        creation order, each with a [[slice.port]] table per port in the order they were \
        added, listing its MAC addresses. `slice apply -f` takes the file back.",
        after_help = "Example:\n  $ slice export > slices.toml"
    )]
    Export,

    /// Make the slices equal to a file, in one atomic change
    #[command(
        long_about = "Make the slices equal to FILE (as `slice export` writes it): print the \
        plan (a line per slice, port and host to remove, `-`, or to add, `+`), then apply it \
        all at once, or nothing on an error. What the file and the slices both hold stays \
        as it is; new entries come in the file's order. A file with an error changes \
        nothing and names its line. A plan that deletes more than half of the slices (or \
        all of them: an empty file) is refused, changing nothing, unless --prune is given; \
        --dry-run shows it with a warning.",
        after_help = "Examples:\n  $ slice apply -f slices.toml --dry-run\n  $ slice apply -f slices.toml\n  $ slice apply -f fewer-slices.toml --prune"
    )]
    Apply {
        /// The file of slices (`-` for standard input)
        #[arg(short, long, value_name = "FILE")]
        file: String,
        /// Print the plan and change nothing
        #[arg(long)]
        dry_run: bool,
        /// Allow deleting more than half of the slices (all of them, for a file that
        /// declares none); refused without it, as a truncated or wrong file would do that
        #[arg(long)]
        prune: bool,
    },

    /// Print a shell completion script, or write it to a file
    #[command(
        long_about = "Print the completion script of SHELL, or write it to --output. The \
        script completes commands and options, and slice names by asking `slice` itself, \
        which asks the daemon running on the data directory ($SLICED_DB, the default, or \
        the --db on the line being completed); with no daemon, slice names are not offered.",
        after_help = "Examples:\n  $ slice completions bash --output ~/.local/share/bash-completion/completions/\n          $ slice completions zsh > ~/.zfunc/_slice"
    )]
    Completions {
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
        /// Write the script here instead of standard output, creating the directories on
        /// the way; a directory (existing, or written with a final /) gets the file name
        /// the shell looks for (slice, _slice, slice.fish, slice.elv, _slice.ps1)
        #[arg(short, long, value_name = "PATH", value_hint = clap::ValueHint::AnyPath)]
        output: Option<PathBuf>,
    },

    /// Show the switches connected to the running daemon
    #[command(
        long_about = "Show the switches connected to the running daemon: datapath id, \
        OpenFlow version, ports (and how many are up), whether the switch meters \
        PACKET_INs itself, and how many messages the controller refused from it. --json \
        prints GET /topology/switches as the daemon answers it.",
        after_help = "Example:\n  $ slice switches\n  DPID  OPENFLOW  PORTS  LIVE  PACKET_IN METER  DROPPED\n          0x1   1.3       3      3     yes              0"
    )]
    Switches {
        /// Print the daemon's JSON instead of a table
        #[arg(long)]
        json: bool,
    },

    /// Show the hosts the running daemon has learned
    #[command(
        long_about = "Show the hosts the running daemon has learned: MAC address, the \
        switch port it was seen on, and the IP addresses it announced (its own claim). \
        --json prints GET /topology/hosts.",
        after_help = "Example:\n  $ slice hosts\n  MAC                PORT   IP ADDRESSES\n          00:00:00:00:00:01  0x1:1  10.0.0.1"
    )]
    Hosts {
        /// Print the daemon's JSON instead of a table
        #[arg(long)]
        json: bool,
    },

    /// Show the flows the running daemon installed: one path per pair of hosts
    #[command(
        long_about = "Show the host-to-host paths the running daemon installed as flows, \
        each with its hops (switch ports, in order); paths kept from the switches' tables \
        after a restart are marked (adopted). --json prints GET /paths.",
        after_help = "Example:\n  $ slice flows\n  SRC                DST                HOPS\n          00:00:00:00:00:01  00:00:00:00:00:02  0x1:1 0x1:2"
    )]
    Flows {
        /// Print the daemon's JSON instead of a table
        #[arg(long)]
        json: bool,
    },

    /// Show the network the running daemon sees: switches, links and the fabric
    #[command(
        long_about = "Show the network the running daemon sees: its switches, the links \
        between them (each direction of a cable), and where links may form (the fabric: \
        discovered, or declared by the settings or the API). --json prints one object \
        with GET /topology/switches, /topology/links and /topology/fabric under \
        \"switches\", \"links\" and \"fabric\".",
        after_help = "Example:\n  $ slice topology\n  switches:\n    0x1\n    0x2\n  links:\n            0x1:2 -> 0x2:2\n    0x2:2 -> 0x1:2\n  fabric: discovered"
    )]
    Topology {
        /// Print the daemon's JSON instead of text
        #[arg(long)]
        json: bool,
    },

    /// Prove from the switches' own flow tables that the slices hold
    #[command(
        long_about = "Show what the running daemon last proved from the flow tables its \
        switches reported (read back after each write and every verification interval): \
        either that isolation holds, with the pairs of hosts checked, or each violation (a \
        leak between hosts that share no slice, a black hole between hosts that do, a \
        loop) with the entries that cause it, and the entries sliced did not write that it \
        found and removed. Exits with status 1 on any violation, and when there is no \
        verification to show (verification off, none yet, or a cluster's standby). --json \
        prints GET /verification.",
        after_help = "Example:\n  $ slice verify\n  isolation proven: 12 pairs checked (4 hosts, 2 switches, 31 entries)"
    )]
    Verify {
        /// Print the daemon's JSON instead of text
        #[arg(long)]
        json: bool,
    },

    /// Show whether the running daemon is ready, and its cluster
    #[command(
        long_about = "Show whether the running daemon is ready, each of its checks (store, \
        OpenFlow, HTTP), the instance, its store, the master and the members. Exits with \
        status 1 when the daemon is not ready (after printing why), so scripts can wait on \
        it. --json prints one object with GET /readyz and GET /cluster under \"ready\" and \
        \"cluster\".",
        after_help = "Example:\n  $ slice status\n  ready: yes\n    CHECK     STATE\n            store     ok\n  ..."
    )]
    Status {
        /// Print the daemon's JSON instead of text
        #[arg(long)]
        json: bool,
    },
}

/// Completes an existing slice's name (see [`crate::complete`]).
fn slice_names() -> ArgValueCompleter {
    ArgValueCompleter::new(crate::complete::slice_names)
}

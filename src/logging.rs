//! The daemon's logger: env_logger, at `--log-level` or as RUST_LOG says, with one
//! correction for actix.
//!
//! actix-http answers a malformed request (a garbage request line, a bad Content-Length,
//! a head over its buffer) itself, and then logs the parse error at ERROR as a "stream
//! error". That is the client's fault, not the daemon's, and a client can send thousands
//! of them a second: at ERROR they would flood the log. They are logged at DEBUG instead.

use log::{Level, Log, Metadata, Record};

use crate::config::LogLevel;

/// Where actix-http's connection handling logs.
const DISPATCHER_TARGET: &str = "actix_http::h1::dispatcher";

/// The access log (target sliced::http) is opt-in: a line per request costs throughput.
/// actix-server's start-up chatter is not the daemon's.
const QUIET_TARGETS: &str = "actix_server=warn,sliced::http=warn";

/// Installs the logger: `--log-level` when given, else RUST_LOG when set, else info.
/// `--log-level` sets one level and keeps the access log off; RUST_LOG remains the way to
/// filter by target (`RUST_LOG=info,sliced::http=info` for the access log).
pub(crate) fn init(level: Option<LogLevel>) {
    let ignored_env = level.is_some() && std::env::var_os(env_logger::DEFAULT_FILTER_ENV).is_some();
    let inner = match level {
        Some(level) => {
            let name = match level {
                LogLevel::Error => "error",
                LogLevel::Warn => "warn",
                LogLevel::Info => "info",
                LogLevel::Debug => "debug",
                LogLevel::Trace => "trace",
            };
            // At error, the quiet targets would say more than asked for.
            let filter = match level {
                LogLevel::Error => name.to_owned(),
                _ => format!("{name},{QUIET_TARGETS}"),
            };
            env_logger::Builder::new().parse_filters(&filter).build()
        }
        None => env_logger::Builder::from_env(
            env_logger::Env::default().default_filter_or(format!("info,{QUIET_TARGETS}")),
        )
        .build(),
    };
    let max_level = inner.filter();
    let logger = DemoteClientErrors { inner };
    if log::set_boxed_logger(Box::new(logger)).is_ok() {
        log::set_max_level(max_level);
    }
    if ignored_env {
        log::warn!("RUST_LOG is ignored: --log-level wins over it");
    }
}

struct DemoteClientErrors {
    inner: env_logger::Logger,
}

impl DemoteClientErrors {
    fn is_client_error(record: &Record) -> bool {
        record.level() == Level::Error
            && record.target() == DISPATCHER_TARGET
            && record.args().to_string().starts_with("stream error")
    }
}

impl Log for DemoteClientErrors {
    fn enabled(&self, metadata: &Metadata) -> bool {
        self.inner.enabled(metadata)
    }

    fn log(&self, record: &Record) {
        if !Self::is_client_error(record) {
            return self.inner.log(record);
        }
        let demoted = Metadata::builder()
            .level(Level::Debug)
            .target(record.target())
            .build();
        if self.inner.enabled(&demoted) {
            self.inner.log(
                &Record::builder()
                    .metadata(demoted)
                    .args(*record.args())
                    .module_path(record.module_path())
                    .file(record.file())
                    .line(record.line())
                    .build(),
            );
        }
    }

    fn flush(&self) {
        self.inner.flush();
    }
}

//! The daemon's logger: env_logger, with one correction for actix.
//!
//! actix-http answers a malformed request (a garbage request line, a bad Content-Length,
//! a head over its buffer) itself, and then logs the parse error at ERROR as a "stream
//! error". That is the client's fault, not the daemon's, and a client can send thousands
//! of them a second: at ERROR they would flood the log. They are logged at DEBUG instead.

use log::{Level, Log, Metadata, Record};

/// Where actix-http's connection handling logs.
const DISPATCHER_TARGET: &str = "actix_http::h1::dispatcher";

/// Installs the logger; `default_filter` applies when RUST_LOG is not set.
pub(crate) fn init(default_filter: &str) {
    let inner =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(default_filter))
            .build();
    let max_level = inner.filter();
    let logger = DemoteClientErrors { inner };
    if log::set_boxed_logger(Box::new(logger)).is_ok() {
        log::set_max_level(max_level);
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

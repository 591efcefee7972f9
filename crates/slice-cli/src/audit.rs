//! The tool's audit trail, for the writes it makes itself.
//!
//! Through a daemon, a write is audited by that daemon (its `sliced::audit` log and event
//! stream). Written by the tool itself, into the sled database or straight into etcd,
//! nothing else sees it; so the tool appends an entry of the same kind, one JSON line,
//! to `<data dir>/audit.log` (owner-only, synced before the command returns, kept to two
//! files of [`MAX_FILE_BYTES`]), and sends it to the machine's syslog socket (`/dev/log`,
//! which journald serves too) as `slice`, facility authpriv, where there is one. The
//! file is opened before the write, so a write the tool could not audit is not made.
//!
//! An apply is one entry with its counts, followed by detail entries (`apply_steps`) of
//! at most [`STEPS_PER_ENTRY`] steps each, as the daemon writes them.

use std::cell::OnceCell;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use slice_core::audit::{ApplyOutcome, Entry, Operation, Target, STEPS_PER_ENTRY};
use slice_core::{Write, Written};

use crate::{CliError, DataDir};

/// The trail's file in the data directory.
pub(crate) const AUDIT_FILE: &str = "audit.log";

/// Past this size the file becomes `audit.log.1` (replacing the one before) and a new one
/// starts: the trail keeps the last 16 to 32 MiB of entries.
const MAX_FILE_BYTES: u64 = 16 << 20;

/// syslog's authpriv facility (10) at info severity (6): `<10 * 8 + 6>`.
const SYSLOG_PRIORITY: u8 = 86;

/// The machine's syslog socket.
const SYSLOG_SOCKET: &str = "/dev/log";

/// Where one command's writes are audited; the file is opened at the first write.
pub(crate) struct Trail {
    data_dir: DataDir,
    /// The store the writes go to, as errors name it.
    store: String,
    file: OnceCell<std::fs::File>,
}

impl Trail {
    pub(crate) fn new(data_dir: DataDir, store: String) -> Self {
        Self {
            data_dir,
            store,
            file: OnceCell::new(),
        }
    }

    fn path(&self) -> PathBuf {
        self.data_dir.root().join(AUDIT_FILE)
    }

    /// Opens the file (making the data directory first, owner-only): called before a
    /// write, so that a write that could not be audited is never made.
    pub(crate) fn ready(&self) -> Result<&std::fs::File, CliError> {
        if let Some(file) = self.file.get() {
            return Ok(file);
        }
        let failed = |source| CliError::Audit {
            path: self.path(),
            source,
        };
        self.data_dir.make_private().map_err(|err| match err {
            slice_store::NotPrivate::Io { source, .. } => failed(source),
            refused => CliError::NotPrivate(refused),
        })?;
        let path = self.path();
        slice_store::check_secret_file(&path, "the audit log", false)
            .map_err(CliError::NotPrivate)?;
        rotate(&path).map_err(failed)?;
        let file = open_append(&path).map_err(failed)?;
        Ok(self.file.get_or_init(|| file))
    }

    /// Appends the entries of `write`, which came to `result`, syncs them, and sends them
    /// to syslog.
    pub(crate) fn record(
        &self,
        write: &Write,
        result: &Result<Written, CliError>,
    ) -> Result<(), CliError> {
        let file = self.ready()?;
        // An apply's entries share an id, so that its details are found among others'.
        let apply = apply_id();
        let (text, outcome, steps) = match result {
            Ok(Written::Plan(plan)) => (
                "ok".to_owned(),
                Some(ApplyOutcome::of(plan.steps.len(), &apply)),
                plan.steps.as_slice(),
            ),
            Ok(_) => ("ok".to_owned(), None, &[][..]),
            Err(err) => (err.to_string(), None, &[][..]),
        };
        let user = User::current();
        let mut lines = vec![self.entry(&user, Operation::of(write), &text, outcome)];
        let parts = steps.len().div_ceil(STEPS_PER_ENTRY);
        for (index, chunk) in steps.chunks(STEPS_PER_ENTRY).enumerate() {
            let operation = Operation::apply_steps(&apply, index + 1, parts, chunk);
            lines.push(self.entry(&user, operation, "ok", None));
        }
        let mut text = lines.join("\n");
        text.push('\n');
        let mut writer = file;
        writer
            .write_all(text.as_bytes())
            .and_then(|()| file.sync_data())
            .map_err(|source| CliError::Audit {
                path: self.path(),
                source,
            })?;
        for line in &lines {
            // Best effort: the file above is the record that is kept for certain.
            let _ = send_syslog(Path::new(SYSLOG_SOCKET), line);
        }
        Ok(())
    }

    /// One entry, as one line of JSON, in the words and fields of the daemon's trail.
    fn entry(
        &self,
        user: &User,
        operation: Operation<'_>,
        result: &str,
        outcome: Option<ApplyOutcome<'_>>,
    ) -> String {
        let entry: Entry<'_, Target<'_>, ApplyOutcome<'_>> = Entry {
            time: jiff::Timestamp::now().to_string(),
            user: &user.name,
            email: "",
            uid: Some(user.uid),
            via: "slice_tool",
            source: "local",
            store: Some(&self.store),
            operation: operation.name,
            target: operation.target,
            result,
            status: None,
            outcome,
        };
        // Encoding names, identifiers and counts cannot fail; if it did, the line still
        // says which operation it was.
        serde_json::to_string(&entry).unwrap_or_else(|err| {
            serde_json::json!({ "operation": entry.operation, "error": err.to_string() })
                .to_string()
        })
    }
}

/// The account running the tool.
struct User {
    uid: u32,
    name: String,
}

impl User {
    fn current() -> Self {
        let uid = slice_store::effective_uid();
        let name = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
            .ok()
            .flatten()
            .map_or_else(|| format!("uid:{uid}"), |user| user.name);
        Self { uid, name }
    }
}

/// 16 random hex digits.
fn apply_id() -> String {
    let mut bytes = [0u8; 8];
    // Without randomness the entries still say everything; only their link is weaker.
    let _ = getrandom::getrandom(&mut bytes);
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Moves a file past [`MAX_FILE_BYTES`] aside, replacing the one moved aside before.
fn rotate(path: &Path) -> std::io::Result<()> {
    match std::fs::metadata(path) {
        Ok(metadata) if metadata.len() > MAX_FILE_BYTES => {
            let mut old = path.as_os_str().to_owned();
            old.push(".1");
            std::fs::rename(path, &old)
        }
        Ok(_) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err),
    }
}

fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)?;
    // A new file's directory entry must survive a crash along with what it holds.
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(file)
}

/// Sends `line` to the syslog socket at `socket` (RFC 3164 framing, no timestamp: the
/// receiver adds its own).
fn send_syslog(socket: &Path, line: &str) -> std::io::Result<()> {
    let sender = std::os::unix::net::UnixDatagram::unbound()?;
    let message = format!("<{SYSLOG_PRIORITY}>slice[{}]: {line}", std::process::id());
    sender.send_to(message.as_bytes(), socket).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_goes_to_a_syslog_socket_as_one_authpriv_datagram() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("log");
        let receiver = std::os::unix::net::UnixDatagram::bind(&socket).unwrap();
        send_syslog(&socket, r#"{"operation":"create_slice"}"#).unwrap();
        let mut buf = [0u8; 512];
        let read = receiver.recv(&mut buf).unwrap();
        let text = std::str::from_utf8(&buf[..read]).unwrap();
        let expected = format!(
            "<86>slice[{}]: {{\"operation\":\"create_slice\"}}",
            std::process::id()
        );
        assert_eq!(text, expected);
    }

    #[test]
    fn a_full_file_moves_aside_and_the_trail_starts_a_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(AUDIT_FILE);
        std::fs::write(&path, vec![b'x'; 10]).unwrap();
        rotate(&path).unwrap();
        assert!(path.exists(), "a small file stays");
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_len(MAX_FILE_BYTES + 1).unwrap();
        rotate(&path).unwrap();
        assert!(!path.exists());
        assert_eq!(
            std::fs::metadata(dir.path().join("audit.log.1"))
                .unwrap()
                .len(),
            MAX_FILE_BYTES + 1
        );
    }
}

use super::*;
use std::os::unix::fs::PermissionsExt;

/// Something another user does to the secret's path.
type Meddling = Box<dyn FnOnce(&Path)>;

thread_local! {
    /// Runs between the check and the read, to stand for another user acting then.
    pub(crate) static AFTER_CHECK: std::cell::RefCell<Option<Meddling>> =
        const { std::cell::RefCell::new(None) };
}

/// Another user's uid, to hand files to: making them needs root, as CI runs these.
const OTHER_UID: u32 = 65534;

fn running_as_root() -> bool {
    effective_uid() == 0
}

fn secret_file(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

#[test]
fn a_missing_file_is_none_and_an_owner_only_one_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secret");
    assert!(read_secret_file(&path, "the secret", false)
        .unwrap()
        .is_none());
    secret_file(dir.path(), "secret", "hush\n", 0o600);
    let read = read_secret_file(&path, "the secret", false).unwrap();
    assert_eq!(read.as_deref(), Some(&b"hush\n"[..]));
}

#[test]
fn the_secret_read_is_the_file_checked_even_when_the_path_is_replaced_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let path = secret_file(dir.path(), "secret", "ours", 0o600);
    let planted = secret_file(dir.path(), "planted", "theirs", 0o644);
    AFTER_CHECK.with(|hook| {
        *hook.borrow_mut() = Some(Box::new(move |path: &Path| {
            std::fs::rename(&planted, path).unwrap();
        }));
    });
    let read = read_secret_file(&path, "the secret", false).unwrap();
    assert_eq!(read.as_deref(), Some(&b"ours"[..]));
    // The path now names the planted file, which the rule refuses on its own.
    assert!(matches!(
        read_secret_file(&path, "the secret", false),
        Err(SecretFileError::OpenToOthers { mode: 0o644, .. })
    ));
}

#[test]
fn a_link_is_judged_by_the_file_it_leads_to() {
    let dir = tempfile::tempdir().unwrap();
    let target = secret_file(dir.path(), "target", "key", 0o600);
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let read = read_secret_file(&link, "the key", false).unwrap();
    assert_eq!(read.as_deref(), Some(&b"key"[..]));
    // A link to a file others may read (as /etc/shadow's group may) leads nowhere.
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
    assert!(matches!(
        read_secret_file(&link, "the key", false),
        Err(SecretFileError::OpenToOthers { mode: 0o640, .. })
    ));
    if !running_as_root() {
        eprintln!("not root: cannot hand the link's target to another user");
        return;
    }
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&target, Some(OTHER_UID), None).unwrap();
    let refused = read_secret_file(&link, "the key", true).unwrap_err();
    assert!(
        matches!(
            refused,
            SecretFileError::Owner {
                owner: OTHER_UID,
                ..
            }
        ),
        "{refused}"
    );
    assert!(refused.to_string().contains(&link.display().to_string()));
}

#[test]
fn a_fifo_in_a_secrets_place_is_refused_without_waiting_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `name` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    assert!(matches!(
        read_secret_file(&fifo, "the secret", false),
        Err(SecretFileError::NotAFile { .. })
    ));
}

#[test]
fn a_file_larger_than_any_secret_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(MAX_SECRET_LEN + 1).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(matches!(
        read_secret_file(&path, "the secret", false),
        Err(SecretFileError::TooLarge { .. })
    ));
}

#[test]
fn modes_open_to_others_are_refused_and_a_group_read_only_on_roots_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = secret_file(dir.path(), "secret", "x", 0o600);
    // Root's own files admit the group read where asked; anyone else's never do.
    let own = !running_as_root();
    for (mode, group_may_read, refused) in [
        (0o600, false, false),
        (0o400, false, false),
        (0o640, false, true),
        (0o640, true, own),
        (0o660, true, true),
        (0o604, true, true),
    ] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let read = read_secret_file(&path, "the secret", group_may_read);
        assert_eq!(
            read.is_err(),
            refused,
            "{mode:o} {group_may_read}: {read:?}"
        );
        assert_eq!(
            check_secret_file(&path, "the secret", group_may_read).is_err(),
            refused
        );
    }
}

//! One capturing hookscope per data dir. `listen` and the window hold an exclusive OS lock on
//! `hookscope.lock` in the data dir for as long as they run (`flock` on Unix, `LockFileEx` on
//! Windows, through `std::fs::File::try_lock`). The lock follows the file, not the name: a
//! second hookscope that reaches the same dir through a symlink or another spelling of its path
//! is refused too. The lock ends with the process, however it ends, so a crash leaves nothing to
//! clean up. Commands that only read, resend or import take no lock: they share the store
//! through SQLite's own locking.

use std::io::{Read as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};

use crate::store::error::StoreError;

/// The lock file's name inside the data dir.
pub const LOCK_FILE: &str = "hookscope.lock";

/// Held while this process captures into a data dir; dropping it releases the lock.
#[derive(Debug)]
pub struct CaptureLock {
    _file: std::fs::File,
}

impl CaptureLock {
    /// Takes the data dir's lock, creating the dir if needed. Another process holding it is
    /// [`StoreError::InUse`], naming that process; a dir that cannot be written is
    /// [`StoreError::Unwritable`] with the system's reason.
    pub fn acquire(dir: &Path) -> Result<CaptureLock, StoreError> {
        let unwritable = |e: std::io::Error| StoreError::Unwritable {
            dir: dir.to_path_buf(),
            reason: super::health::io_reason(&e),
        };
        std::fs::create_dir_all(dir).map_err(unwritable)?;
        let path = dir.join(LOCK_FILE);
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(unwritable)?;
        if !try_exclusive(&file).map_err(unwritable)? {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            return Err(StoreError::InUse {
                dir: canonical(dir),
                holder: if holder.is_empty() {
                    "another process".into()
                } else {
                    holder.to_string()
                },
            });
        }
        // Say who holds it, for the sentence the next one prints. Best effort: the lock itself
        // is what refuses a second hookscope.
        let _ = file
            .set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| write!(file, "process {}", std::process::id()))
            .and_then(|()| file.flush());
        Ok(CaptureLock { _file: file })
    }
}

/// Takes an exclusive OS lock on `file` without waiting (`flock` on Unix, `LockFileEx` on
/// Windows; released when the file is closed): `true` when this handle holds it, or when the file
/// system has no locks (some network mounts: what it guards goes on unguarded rather than not at
/// all); `false` when another handle holds it.
pub(crate) fn try_exclusive(file: &std::fs::File) -> std::io::Result<bool> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(e)) if e.kind() == std::io::ErrorKind::Unsupported => {
            Ok(true)
        }
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// The dir as the OS resolves it (symlinks followed), for a sentence; as given if that fails.
fn canonical(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_dir_is_refused_and_names_the_holder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let held = CaptureLock::acquire(dir.path()).expect("first");
        let err = CaptureLock::acquire(dir.path()).expect_err("second");
        let sentence = err.to_string();
        assert!(
            sentence.contains(&format!("process {}", std::process::id())),
            "{sentence}"
        );
        assert!(sentence.contains("already capturing"), "{sentence}");
        drop(held);
        CaptureLock::acquire(dir.path()).expect("free again once dropped");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_to_a_locked_dir_is_refused_too() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("real");
        let link = dir.path().join("link");
        std::fs::create_dir(&real).expect("dir");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let _held = CaptureLock::acquire(&real).expect("first");
        let err = CaptureLock::acquire(&link).expect_err("through the symlink");
        assert!(
            err.to_string()
                .contains(&canonical(&real).display().to_string()),
            "names the real dir: {err}"
        );
    }
}

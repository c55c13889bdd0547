//! Whether the store can take writes now, kept by the writer thread and read by every front
//! end. A failing write names its cause once (disk full, a read-only dir, a store file that
//! vanished), every delivery is refused while it lasts (503 with `Retry-After`, never 2xx), and
//! the first write that succeeds again ends it, without a restart.

use crate::domain::sync::Lock;
use std::path::{Path, PathBuf};

use crate::domain::clock::now_ms;

/// Seconds a sender is asked to wait (`Retry-After`) while the store refuses writes.
pub const RETRY_AFTER_SECS: u64 = 30;

/// Why the store refuses writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trouble {
    /// The volume (or the store's size cap) is full.
    DiskFull,
    /// The data dir or its volume is read-only, or permission is denied.
    ReadOnly(String),
    /// The store file is no longer at its path (the dir was removed, the volume unmounted).
    Vanished,
    /// Another process (an `import`, a resend) holds the store's write lock: deliveries wait
    /// for it, and are refused only after the writer's longest wait.
    Busy,
    /// Any other failure, as SQLite or the system named it.
    Failing(String),
}

impl Trouble {
    /// One sentence naming the cause, the place and what happens to deliveries meanwhile.
    pub fn sentence(&self, store: &Path) -> String {
        let dir = store.parent().unwrap_or(store).display();
        match self {
            Trouble::DiskFull => format!(
                "disk full: deliveries are being refused (503, Retry-After {RETRY_AFTER_SECS} s) until there is space for the store in {dir}; capture resumes by itself"
            ),
            Trouble::ReadOnly(reason) => format!(
                "the data dir {dir} cannot be written ({reason}): deliveries are being refused (503, Retry-After {RETRY_AFTER_SECS} s) until it can; capture resumes by itself"
            ),
            Trouble::Vanished => format!(
                "the store {} is gone (its dir was removed or its volume unmounted): deliveries are being refused (503) rather than written to a deleted file; restart hookscope to start a new store",
                store.display()
            ),
            Trouble::Busy => format!(
                "another hookscope command is writing to the store {}: deliveries wait for it to finish (answers are delayed; after 10 s they are refused with 503, Retry-After {RETRY_AFTER_SECS} s)",
                store.display()
            ),
            Trouble::Failing(reason) => format!(
                "the store {} cannot be written ({reason}): deliveries are being refused (503, Retry-After {RETRY_AFTER_SECS} s); capture resumes by itself when a write succeeds",
                store.display()
            ),
        }
    }
}

/// The store's state as a front end reads it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HealthReport {
    /// What is wrong now; `None` when writes succeed.
    pub trouble: Option<Trouble>,
    /// Since when (Unix ms) the current trouble lasts.
    pub since_ms: i64,
    /// Deliveries refused since the current (or the last) trouble began.
    pub refused: u64,
    /// Counts every change of state, so a front end says each change once.
    pub changes: u64,
    /// The last delivery the store refused by itself (a row SQLite would not take), and why:
    /// capture went on. Each such refusal is a change.
    pub refused_row: Option<String>,
}

/// Shared between the writer thread and the front ends: whether writes succeed.
#[derive(Debug, Default)]
pub struct Health {
    state: Lock<HealthReport>,
}

impl Health {
    /// The state now.
    pub fn report(&self) -> HealthReport {
        self.lock().clone()
    }

    /// Whether the store is known to be gone (writes are not even tried).
    pub(crate) fn vanished(&self) -> bool {
        self.lock().trouble == Some(Trouble::Vanished)
    }

    /// A write of `refused` deliveries failed for `trouble`. The writer thread calls it; a
    /// front end's tests may too, to draw a trouble without filling a disk.
    pub fn failed(&self, trouble: Trouble, refused: u64) {
        let mut state = self.lock();
        if state.trouble.as_ref() != Some(&trouble) {
            state.trouble = Some(trouble);
            state.since_ms = now_ms();
            state.refused = 0;
            state.changes += 1;
        }
        state.refused += refused;
    }

    /// One delivery was refused for its own row (the store takes writes).
    pub(crate) fn row_refused(&self, reason: &str) {
        let mut state = self.lock();
        state.refused_row = Some(reason.to_string());
        state.changes += 1;
    }

    /// Deliveries refused without trying (the trouble is already known).
    pub(crate) fn refused(&self, n: u64) {
        self.lock().refused += n;
    }

    /// A write succeeded; answers whether that ended a trouble.
    pub fn ok(&self) -> bool {
        let mut state = self.lock();
        if state.trouble.is_none() {
            return false;
        }
        state.trouble = None;
        state.since_ms = now_ms();
        state.changes += 1;
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HealthReport> {
        self.state.lock()
    }
}

/// What a failed write means, from SQLite's code and, when SQLite only says "I/O error", from
/// trying to create a file beside the store.
pub(crate) fn classify(err: &rusqlite::Error, store: &Path) -> Trouble {
    match err.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DiskFull) => Trouble::DiskFull,
        Some(rusqlite::ErrorCode::ReadOnly) => probe_dir(store)
            .unwrap_or_else(|| Trouble::ReadOnly("the database is read-only".into())),
        Some(_) => probe_dir(store).unwrap_or_else(|| Trouble::Failing(err.to_string())),
        None => Trouble::Failing(err.to_string()),
    }
}

/// Tries to create (and remove) a file beside the store; the system's answer names the cause
/// (`None`: the dir takes writes).
pub(crate) fn probe_dir(store: &Path) -> Option<Trouble> {
    let dir = store.parent()?;
    if !store.exists() {
        return Some(Trouble::Vanished);
    }
    let probe = dir.join(format!(".hookscope-probe-{}", std::process::id()));
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&probe)
        .and_then(|mut f| {
            std::io::Write::write_all(&mut f, &[0u8; 4096]).and_then(|()| f.sync_all())
        });
    let _ = std::fs::remove_file(&probe);
    match created {
        Ok(()) => None,
        Err(e) => Some(match e.kind() {
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => {
                Trouble::DiskFull
            }
            std::io::ErrorKind::NotFound => Trouble::Vanished,
            _ => Trouble::ReadOnly(io_reason(&e)),
        }),
    }
}

/// The system's reason in a few words ("Read-only file system"), without the "(os error 30)".
pub(crate) fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Notices that the store file was removed or replaced under the writer: writing on would put
/// acknowledged deliveries into a file nobody can open again.
pub(crate) struct Identity {
    path: PathBuf,
    #[cfg(unix)]
    inode: Option<(u64, u64)>,
    checked: std::time::Instant,
}

impl Identity {
    pub(crate) fn new(path: &Path) -> Identity {
        Identity {
            path: path.to_path_buf(),
            #[cfg(unix)]
            inode: inode(path),
            checked: std::time::Instant::now(),
        }
    }

    /// Whether the file is still where it was opened; looked at no more than once a second.
    pub(crate) fn still_there(&mut self) -> bool {
        if self.checked.elapsed() < std::time::Duration::from_secs(1) {
            return true;
        }
        self.checked = std::time::Instant::now();
        #[cfg(unix)]
        {
            let now = inode(&self.path);
            now.is_some() && now == self.inode
        }
        #[cfg(not(unix))]
        {
            // Windows refuses to delete an open file, so presence is the whole question.
            self.path.exists()
        }
    }
}

#[cfg(unix)]
fn inode(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_change_is_counted_once_and_refusals_add_up() {
        let health = Health::default();
        health.failed(Trouble::DiskFull, 1);
        health.failed(Trouble::DiskFull, 3);
        let report = health.report();
        assert_eq!(report.trouble, Some(Trouble::DiskFull));
        assert_eq!((report.refused, report.changes), (4, 1));
        assert!(health.ok(), "a success ends the trouble");
        assert!(!health.ok(), "and only once");
        let report = health.report();
        assert_eq!(
            (report.trouble, report.refused, report.changes),
            (None, 4, 2)
        );
    }

    #[test]
    fn the_disk_full_sentence_names_the_dir_and_the_answer() {
        let sentence = Trouble::DiskFull.sentence(Path::new("/data/hookscope.sqlite"));
        assert!(
            sentence.starts_with("disk full: deliveries are being refused"),
            "{sentence}"
        );
        assert!(sentence.contains("/data"), "{sentence}");
        assert!(sentence.contains("Retry-After 30 s"), "{sentence}");
    }

    #[cfg(unix)]
    #[test]
    fn a_removed_store_file_is_noticed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.sqlite");
        std::fs::write(&path, b"x").expect("write");
        let mut identity = Identity::new(&path);
        identity.checked -= std::time::Duration::from_secs(2);
        assert!(identity.still_there());
        std::fs::remove_file(&path).expect("rm");
        std::fs::write(&path, b"y").expect("a new file under the old name");
        identity.checked -= std::time::Duration::from_secs(2);
        // A new file under the same name may reuse the inode on some file systems; removing
        // it too leaves no doubt.
        std::fs::remove_file(&path).expect("rm");
        assert!(!identity.still_there());
    }
}

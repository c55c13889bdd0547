//! Damaged stores: a file that is not a database, was cut short, is corrupt or comes from a
//! newer hookscope is named as such, kept aside under a new name (never deleted), and a fresh
//! store is opened in its place.

use std::path::{Path, PathBuf};

use crate::domain::clock::now_secs;
use crate::store::error::StoreError;

/// Moves a damaged store file (and its `-wal` and `-shm` files, its text index's, and an older
/// hookscope's capture journal) aside
/// under a new name, never deleting anything; returns the new name and the reason to give.
pub(crate) fn move_aside(path: &Path, err: &StoreError) -> Result<(PathBuf, String), StoreError> {
    let stamp = now_secs();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let aside = path.with_file_name(format!("{name}.damaged-{stamp}"));
    let move_err =
        |e: std::io::Error| StoreError::Write(format!("cannot move the damaged store aside: {e}"));
    std::fs::rename(path, &aside).map_err(move_err)?;
    // An older hookscope's capture journal goes with its store: beside the fresh one it would be
    // taken for that one's.
    let journal = crate::store::legacy::journal_beside(path);
    if journal.exists() {
        std::fs::rename(
            &journal,
            aside.with_file_name(format!(
                "{name}.damaged-{stamp}-{}",
                crate::store::legacy::JOURNAL_FILE
            )),
        )
        .map_err(move_err)?;
    }
    for suffix in ["-wal", "-shm"]
        .into_iter()
        .chain(crate::store::text::FILE_SUFFIXES)
    {
        let side = path.with_file_name(format!("{name}{suffix}"));
        if side.exists() {
            std::fs::rename(
                &side,
                aside.with_file_name(format!("{name}.damaged-{stamp}{suffix}")),
            )
            .map_err(move_err)?;
        }
    }
    let reason = match err {
        StoreError::DamagedFile { what, .. } => what.clone(),
        other => other.to_string(),
    };
    Ok((aside, reason))
}

/// Turns SQLite's "not a database", "corrupt" and "busy" answers into what they mean here.
pub(crate) fn classify(err: StoreError, path: &Path) -> StoreError {
    let source = match &err {
        StoreError::Open { source, .. } | StoreError::Query(source) => source,
        _ => return err,
    };
    match source.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => StoreError::DamagedFile {
            path: path.to_path_buf(),
            what: "it is not a SQLite database".into(),
        },
        Some(rusqlite::ErrorCode::DatabaseCorrupt) => StoreError::DamagedFile {
            path: path.to_path_buf(),
            what: "SQLite reports it as corrupt".into(),
        },
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            StoreError::Locked {
                path: path.to_path_buf(),
            }
        }
        _ => err,
    }
}

/// A file shorter than the size its header declares lost its end (a copy or a disk that
/// stopped short). Checked only without a pending write-ahead log, where the header is exact.
pub(crate) fn check_not_truncated(path: &Path) -> Result<(), StoreError> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let wal = path.with_file_name(format!(
        "{}-wal",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) || meta.len() == 0 {
        return Ok(());
    }
    let mut header = [0u8; 100];
    let read =
        std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut header));
    let damaged = |what: String| StoreError::DamagedFile {
        path: path.to_path_buf(),
        what,
    };
    if read.is_err() || &header[..16] != b"SQLite format 3\0" {
        return Err(damaged("it is not a SQLite database".into()));
    }
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65_536u64,
        n => u64::from(n),
    };
    let pages = u64::from(u32::from_be_bytes([
        header[28], header[29], header[30], header[31],
    ]));
    if pages > 0 && meta.len() < pages * page_size {
        return Err(damaged(format!(
            "it is truncated: {} bytes where its header declares {}",
            meta.len(),
            pages * page_size
        )));
    }
    Ok(())
}

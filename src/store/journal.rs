//! The capture journal: an append-only file beside the store (`hookscope.journal`) that holds
//! every acknowledged delivery until the SQLite store holds it durably.
//!
//! The writer appends a batch's rows and `fdatasync`s the journal before any delivery of the
//! batch is answered: that sync is what makes a 2xx mean "on disk", across a power cut. The
//! SQLite tables are written in the same thread, but committed every few tens of milliseconds
//! without a sync of their own (`synchronous = NORMAL`), so a trickle of deliveries no longer
//! rewrites the row's pages, its indexes and the log behind them once per delivery. When the
//! store has checkpointed everything (its database file synced), the journal is emptied. At
//! start, rows of the journal the store does not hold (`journal_state.built_id` says how far it
//! got) are written again: the journal is the truth for what was acknowledged.
//!
//! A frame is `[payload length u32 LE][CRC-32 of the payload u32 LE][payload]`. A frame cut
//! short or failing its CRC ends the journal (a crash during an append: those rows were never
//! acknowledged, since their sync had not returned), and so does a zero length (the padding
//! below).
//!
//! On Linux, where the file system allows it, appends bypass the page cache (`O_DIRECT`) and
//! are durable when the write returns (`O_DSYNC`): each rewrites the journal's last partial
//! 512-byte sector followed by its own frames, padded with zeros to a whole sector. With the
//! page cache, each `fdatasync` wrote back whole 4 KiB pages (one or two per delivery at a
//! trickle: ~5.3 KB for a 1.2 KB delivery, measured with `write_bytes`); this way the disk gets
//! the frames and at most a sector on either side (~1.7 KB). Elsewhere, or when the file system
//! refuses `O_DIRECT`, appends are written and then `fdatasync`ed.
//!
//! **The file keeps its blocks.** An append never makes the file longer: the journal writes
//! zeros ahead of its frames ([`GROW`] at a time, synced) and appends over them, and emptying it
//! writes an end at the start instead of cutting the file. A synced write that makes a file
//! longer must also commit the file system's own journal, and such syncs now and then took
//! 40–400 ms on the development machine while rewrites in place mostly stayed under 16 ms
//! (`hookscope-dev disk-probe`, BENCHMARKS.md, issue 19's fourth and fifth passes); each was an
//! acknowledgement stall. The growth steps are of that kind, once per [`GROW`] the journal has
//! never reached before; on Unix the journal's own thread ([`Ahead`]) writes them ahead of need,
//! so an append waits for one only in a new file or after a body larger than what is ahead.
//! Every
//! append leaves at least [`END`] zero bytes after its frames, so the frames a cleared journal
//! held are never read again. Should a crash tear an append so that its end did not reach the
//! disk, older frames may follow the new ones; they are rows the store already holds (their
//! ids are at most `journal_state.built_id`), which a replay skips.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};

/// The journal's file name, beside the store.
pub const FILE_NAME: &str = "hookscope.journal";

/// One delivery as the store writes it: every column, and what it does to the event-id table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub id: i64,
    pub received_at_ms: i64,
    pub method: String,
    pub path: String,
    pub query: String,
    pub headers: Vec<u8>,
    pub body: Vec<u8>,
    pub body_size: i64,
    pub body_complete: bool,
    pub remote_addr: Option<String>,
    pub endpoint: String,
    pub scheme: Option<String>,
    pub event_id: Option<String>,
    pub event_type: Option<String>,
    pub job_id: Option<String>,
    pub job_status: Option<String>,
    pub sig_status: String,
    pub ts_status: String,
    pub dup_status: String,
    pub first_id: Option<i64>,
    /// The checks, compacted ([`crate::store::compact`]).
    pub checks: Vec<u8>,
    pub response_status: i64,
    pub latency_ms: i64,
    pub note: Option<String>,
    pub job_created_at_ms: Option<i64>,
    /// What the delivery did to the event-id table.
    pub event: EventEffect,
}

/// What a delivery did to the (endpoint, event id) table when its duplicate verdict was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventEffect {
    /// Nothing (no event id, or a failing signature that must not claim it).
    None,
    /// It claimed the event id: the first verified copy.
    Claimed,
    /// It counted one more copy of an event already claimed.
    Counted,
}

impl Row {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; 8]);
        let mut e = Encoder(out);
        e.i64(self.id);
        e.i64(self.received_at_ms);
        e.str(&self.method);
        e.str(&self.path);
        e.str(&self.query);
        e.bytes(&self.headers);
        e.bytes(&self.body);
        e.i64(self.body_size);
        e.u8(self.body_complete as u8);
        e.opt_str(&self.remote_addr);
        e.str(&self.endpoint);
        e.opt_str(&self.scheme);
        e.opt_str(&self.event_id);
        e.opt_str(&self.event_type);
        e.opt_str(&self.job_id);
        e.opt_str(&self.job_status);
        e.str(&self.sig_status);
        e.str(&self.ts_status);
        e.str(&self.dup_status);
        e.opt_i64(self.first_id);
        e.bytes(&self.checks);
        e.i64(self.response_status);
        e.i64(self.latency_ms);
        e.opt_str(&self.note);
        e.opt_i64(self.job_created_at_ms);
        e.u8(match self.event {
            EventEffect::None => 0,
            EventEffect::Claimed => 1,
            EventEffect::Counted => 2,
        });
        let len = (out.len() - start - 8) as u32;
        let crc = crc32fast::hash(&out[start + 8..]);
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
        out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    }

    fn decode(payload: &[u8]) -> Option<Row> {
        let mut d = Decoder(payload);
        let row = Row {
            id: d.i64()?,
            received_at_ms: d.i64()?,
            method: d.str()?,
            path: d.str()?,
            query: d.str()?,
            headers: d.bytes()?,
            body: d.bytes()?,
            body_size: d.i64()?,
            body_complete: d.u8()? != 0,
            remote_addr: d.opt_str()?,
            endpoint: d.str()?,
            scheme: d.opt_str()?,
            event_id: d.opt_str()?,
            event_type: d.opt_str()?,
            job_id: d.opt_str()?,
            job_status: d.opt_str()?,
            sig_status: d.str()?,
            ts_status: d.str()?,
            dup_status: d.str()?,
            first_id: d.opt_i64()?,
            checks: d.bytes()?,
            response_status: d.i64()?,
            latency_ms: d.i64()?,
            note: d.opt_str()?,
            job_created_at_ms: d.opt_i64()?,
            event: match d.u8()? {
                0 => EventEffect::None,
                1 => EventEffect::Claimed,
                2 => EventEffect::Counted,
                _ => return None,
            },
        };
        d.0.is_empty().then_some(row)
    }
}

struct Encoder<'a>(&'a mut Vec<u8>);

impl Encoder<'_> {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, v: &[u8]) {
        self.0.extend_from_slice(&(v.len() as u32).to_le_bytes());
        self.0.extend_from_slice(v);
    }
    fn str(&mut self, v: &str) {
        self.bytes(v.as_bytes());
    }
    fn opt_str(&mut self, v: &Option<String>) {
        match v {
            None => self.u8(0),
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
        }
    }
    fn opt_i64(&mut self, v: Option<i64>) {
        match v {
            None => self.u8(0),
            Some(n) => {
                self.u8(1);
                self.i64(n);
            }
        }
    }
}

struct Decoder<'a>(&'a [u8]);

impl Decoder<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn i64(&mut self) -> Option<i64> {
        self.take(8)
            .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
    }
    fn bytes(&mut self) -> Option<Vec<u8>> {
        let len = u32::from_le_bytes(self.take(4)?.try_into().ok()?) as usize;
        self.take(len).map(<[u8]>::to_vec)
    }
    fn str(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?).ok()
    }
    fn opt_str(&mut self) -> Option<Option<String>> {
        match self.u8()? {
            0 => Some(None),
            1 => self.str().map(Some),
            _ => None,
        }
    }
    fn opt_i64(&mut self) -> Option<Option<i64>> {
        match self.u8()? {
            0 => Some(None),
            1 => self.i64().map(Some),
            _ => None,
        }
    }
}

/// The most of its encoding buffer the journal keeps between appends.
const KEEP_BUFFER: usize = 1 << 20;
/// The file grows by at least this much at a time, zeros written and synced ahead of the frames.
const GROW: u64 = 1 << 20;
/// When emptied, a file grown larger than this (by a large body, say) is cut back to it.
const KEEP_FILE: u64 = 32 << 20;
/// Zero bytes that always follow the frames: a zero length ends them.
const END: usize = 4;

/// The unit direct appends are written in (the smallest logical block size disks have).
const SECTOR: usize = 512;
/// Where direct appends' buffers start in memory (a page: what any `O_DIRECT` asks).
const ALIGN: usize = 4096;

/// Appends that bypass the page cache and are durable on return (`O_DIRECT | O_DSYNC`).
#[derive(Debug)]
struct Direct {
    file: File,
    /// The journal's bytes from the last sector boundary at or before its length to its length:
    /// each append writes them again in front of its own frames.
    tail: Vec<u8>,
    /// The aligned buffer a write is assembled in.
    scratch: Vec<u8>,
}

impl Direct {
    /// A second handle on the journal, opened `O_DIRECT | O_DSYNC`, when the file system allows
    /// it; `len` is where the journal's frames end.
    #[cfg(target_os = "linux")]
    fn open(path: &Path, journal: &File, len: u64) -> Option<Direct> {
        use std::os::unix::fs::{FileExt as _, OpenOptionsExt as _};
        let file = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_DIRECT | libc::O_DSYNC)
            .open(path)
            .ok()?;
        let start = len - len % SECTOR as u64;
        let mut tail = vec![0; (len - start) as usize];
        journal.read_exact_at(&mut tail, start).ok()?;
        Some(Direct {
            file,
            tail,
            scratch: Vec::new(),
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn open(_path: &Path, _journal: &File, _len: u64) -> Option<Direct> {
        None
    }

    /// Writes `frames` at `len` (after the tail), padded with zeros to a whole sector with at
    /// least [`END`] of them; they are on disk when this returns.
    #[cfg(target_os = "linux")]
    fn append(&mut self, len: u64, frames: &[u8]) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt as _;
        let start = len - self.tail.len() as u64;
        let data = self.tail.len() + frames.len();
        let padded = (data + END).div_ceil(SECTOR) * SECTOR;
        self.scratch.clear();
        self.scratch.resize(padded + ALIGN, 0);
        let at = self.scratch.as_ptr().align_offset(ALIGN);
        let block = &mut self.scratch[at..at + padded];
        block[..self.tail.len()].copy_from_slice(&self.tail);
        block[self.tail.len()..data].copy_from_slice(frames);
        self.file.write_all_at(block, start)?;
        let keep = ((len + frames.len() as u64) % SECTOR as u64) as usize;
        self.tail.clear();
        self.tail.extend_from_slice(&block[data - keep..data]);
        if self.scratch.capacity() > KEEP_BUFFER {
            self.scratch = Vec::new();
        }
        Ok(())
    }

    #[cfg(not(target_os = "linux"))]
    fn append(&mut self, _len: u64, _frames: &[u8]) -> std::io::Result<()> {
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

/// The most bytes a direct append writes past the end of its frames.
const PAST_FRAMES: u64 = (END + SECTOR) as u64;

/// Once fewer zero bytes than this are left ahead of the frames, the next [`GROW`] is written by
/// the journal's own thread ([`Ahead`]), off the answer's path: at 2,000 deliveries/s of 1 KiB
/// that leaves it ~100 ms, where a growth normally takes 1–2 ms.
const AHEAD: u64 = 256 << 10;

/// The file's length and its growth, shared by the writer and the journal's thread.
#[derive(Debug, Default)]
struct Growth {
    /// The file's length: written (frames, then zeros) and synced up to here.
    size: u64,
    /// A growth is being written, by either thread; the other waits for it before it grows or
    /// cuts the file.
    growing: bool,
    /// The length the journal's thread is asked to grow the file to.
    wanted: u64,
    /// The last growth written ahead failed: none is asked again until one on the answer's
    /// path succeeds (which reports its error, as any append's).
    failed: bool,
    /// The journal is closing: the thread ends.
    stop: bool,
}

#[derive(Debug, Default)]
struct Sizes {
    growth: std::sync::Mutex<Growth>,
    changed: std::sync::Condvar,
}

impl Sizes {
    fn lock(&self) -> std::sync::MutexGuard<'_, Growth> {
        self.growth.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The growth, once no growth is being written.
    fn settled(&self) -> std::sync::MutexGuard<'_, Growth> {
        let growth = self.lock();
        self.changed
            .wait_while(growth, |g| g.growing)
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Grows `file` from its length to `to` ([`write_zeros`]), for the writer and the journal's
    /// thread alike: `growing` is set and the lock released while the zeros are written, so the
    /// other waits rather than grows or cuts the file too. Then the new length is recorded when
    /// they were written, `settle` sets what the outcome means to its caller (`true`: written),
    /// and whoever waits is woken.
    fn grow_to(
        &self,
        mut growth: std::sync::MutexGuard<'_, Growth>,
        file: &File,
        to: u64,
        settle: impl FnOnce(&mut Growth, bool),
    ) -> std::io::Result<()> {
        let from = growth.size;
        growth.growing = true;
        drop(growth);
        let written = write_zeros(file, from, to);
        let mut growth = self.lock();
        growth.growing = false;
        if written.is_ok() {
            growth.size = growth.size.max(to);
        }
        settle(&mut growth, written.is_ok());
        self.changed.notify_all();
        written
    }
}

/// Writes zeros from `from` to `to` and syncs them: the file is `to` long and its blocks are
/// written, so writes over them change no metadata. Positional writes (the journal's thread and
/// the writer's appends share the file); elsewhere than Unix only the writer grows the file.
fn write_zeros(file: &File, from: u64, to: u64) -> std::io::Result<()> {
    let zeros = vec![0; 64 * 1024];
    let mut at = from;
    while at < to {
        let n = (to - at).min(zeros.len() as u64) as usize;
        #[cfg(unix)]
        std::os::unix::fs::FileExt::write_all_at(file, &zeros[..n], at)?;
        #[cfg(not(unix))]
        {
            let mut file = file;
            file.seek(std::io::SeekFrom::Start(at))?;
            file.write_all(&zeros[..n])?;
        }
        at += n as u64;
    }
    file.sync_data()
}

/// The journal's thread: writes the growth the writer asks for ahead of need, so that the
/// synced write that makes the file longer (which must commit the file system's own journal,
/// and now and then waits 40–400 ms for it) is not on any answer's path. Unix only (positional
/// writes); ends when dropped.
#[derive(Debug)]
struct Ahead {
    sizes: std::sync::Arc<Sizes>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ahead {
    #[cfg(unix)]
    fn start(file: &File, sizes: &std::sync::Arc<Sizes>) -> Option<Ahead> {
        let file = file.try_clone().ok()?;
        let shared = std::sync::Arc::clone(sizes);
        let thread = std::thread::Builder::new()
            .name("hookscope-journal-grow".into())
            .spawn(move || {
                let mut growth = shared.lock();
                loop {
                    if growth.stop {
                        return;
                    }
                    if growth.wanted > growth.size && !growth.growing {
                        let to = growth.wanted;
                        let _ = shared.grow_to(growth, &file, to, |growth, written| {
                            growth.failed |= !written;
                            // Asked for, or given up: either way nothing more is asked.
                            growth.wanted = growth.size;
                        });
                        growth = shared.lock();
                        continue;
                    }
                    growth = shared
                        .changed
                        .wait(growth)
                        .unwrap_or_else(|e| e.into_inner());
                }
            })
            .ok()?;
        Some(Ahead {
            sizes: std::sync::Arc::clone(sizes),
            thread: Some(thread),
        })
    }

    #[cfg(not(unix))]
    fn start(_file: &File, _sizes: &std::sync::Arc<Sizes>) -> Option<Ahead> {
        None
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        self.sizes.lock().stop = true;
        self.sizes.changed.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The open journal file.
#[derive(Debug)]
pub(crate) struct Journal {
    file: File,
    /// Where the frames end.
    len: u64,
    /// The file's length, and its growth ahead of need.
    sizes: std::sync::Arc<Sizes>,
    buffer: Vec<u8>,
    /// A failed append could not be cut back.
    torn: bool,
    /// Appends written around the page cache, when the file system allows it.
    direct: Option<Direct>,
    /// The thread that grows the file ahead of need (Unix).
    ahead: Option<Ahead>,
    /// Growths written on the answer's path, by [`Journal::grow`] (the first of a new file, and
    /// any the journal's thread had not written in time).
    grown_inline: u64,
}

impl Journal {
    /// Opens (or creates) the journal beside the store file `store` and takes it: one writer
    /// at a time owns a journal (an OS lock on the file, released when it is dropped). `None`
    /// when another writer owns it: that one is capturing, and this one writes without a
    /// journal (each commit synced).
    pub(crate) fn open(store: &Path) -> std::io::Result<Option<Journal>> {
        let path = path_beside(store);
        // Not `append`: frames are written over the zeros written ahead of them.
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)?;
        if !crate::store::lock::try_exclusive(&file)? {
            return Ok(None);
        }
        // Where the frames end: zeros (or a cleared journal's older frames) follow them.
        let size = file.metadata()?.len();
        let len = read_frames(&file)?.len() as u64;
        let direct = Direct::open(&path, &file, len);
        let sizes = std::sync::Arc::new(Sizes::default());
        sizes.lock().size = size;
        let ahead = Ahead::start(&file, &sizes);
        Ok(Some(Journal {
            file,
            len,
            sizes,
            buffer: Vec::new(),
            torn: false,
            direct,
            ahead,
            grown_inline: 0,
        }))
    }

    /// Cuts the file to `len` (once no growth is being written).
    fn cut(&mut self, len: u64) -> std::io::Result<()> {
        let mut growth = self.sizes.settled();
        let cut = self.file.set_len(len);
        // Even when the cut failed, nothing past `len` is known to be written.
        growth.size = len;
        growth.wanted = growth.wanted.min(len);
        cut
    }

    /// Asks the journal's thread for the next [`GROW`] when fewer than [`AHEAD`] zero bytes are
    /// left ahead of the frames.
    fn grow_ahead(&self) {
        if self.ahead.is_none() {
            return;
        }
        let mut growth = self.sizes.lock();
        let used = self.len + PAST_FRAMES;
        if !growth.failed
            && !growth.growing
            && growth.wanted <= growth.size
            && growth.size < used + AHEAD
        {
            growth.wanted = (growth.size + GROW).next_multiple_of(SECTOR as u64);
            self.sizes.changed.notify_all();
        }
    }

    /// Appends the rows and waits until they are on disk.
    pub(crate) fn append(&mut self, rows: &[Row]) -> std::io::Result<()> {
        if self.torn {
            // A failed append left part of a frame: rows after it would be unreadable.
            self.cut(self.len)?;
            self.torn = false;
        }
        self.buffer.clear();
        for row in rows {
            row.encode(&mut self.buffer);
        }
        let frames = self.buffer.len();
        self.grow(self.len + frames as u64 + PAST_FRAMES)?;
        let result = match &mut self.direct {
            Some(direct) => match direct.append(self.len, &self.buffer) {
                // The file system takes no direct writes of this alignment: from now on, the
                // page cache and fdatasync.
                Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                    self.direct = None;
                    self.write_synced()
                }
                other => other,
            },
            None => self.write_synced(),
        };
        let size = frames as u64;
        if self.buffer.capacity() > KEEP_BUFFER {
            // One large body must not keep its size allocated for the rest of the run.
            self.buffer = Vec::new();
        }
        match result {
            Ok(()) => {
                self.len += size;
                self.grow_ahead();
                Ok(())
            }
            Err(e) => {
                // Leave no half-written frame behind for the next append to follow (a reader
                // would stop at it): cut the file back to its last good length, now or before
                // the next append.
                self.torn = self.cut(self.len).is_err();
                Err(e)
            }
        }
    }

    /// Writes the encoded frames and [`END`] zeros where the frames end, through the page
    /// cache, then `fdatasync`s them.
    fn write_synced(&mut self) -> std::io::Result<()> {
        let mut file = &self.file;
        file.seek(std::io::SeekFrom::Start(self.len))?;
        file.write_all(&self.buffer)?;
        file.write_all(&[0; END])?;
        file.sync_data()
    }

    /// Makes the file at least `needed` long, by [`GROW`] or more at a time: zeros written and
    /// synced, so appends over them change no metadata. The sync that makes the file longer is
    /// the slow kind (see the module's note). Usually the journal's thread has written the
    /// growth ahead already (or is writing it: then this waits for it); here it is written only
    /// for a new file's first frames, a body larger than what is ahead, or where there is no
    /// such thread.
    fn grow(&mut self, needed: u64) -> std::io::Result<()> {
        let growth = self.sizes.settled();
        if needed <= growth.size {
            return Ok(());
        }
        let target = needed
            .max(growth.size + GROW)
            .next_multiple_of(SECTOR as u64);
        self.grown_inline += 1;
        self.sizes
            .grow_to(growth, &self.file, target, |growth, written| {
                if written {
                    growth.wanted = growth.wanted.max(growth.size);
                    growth.failed = false;
                }
            })
    }

    /// Bytes held.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Empties the journal (once the store holds every row durably): an end written at the
    /// start, in place. The file keeps its blocks for the next appends, up to [`KEEP_FILE`].
    pub(crate) fn clear(&mut self) -> std::io::Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        let mut file = &self.file;
        file.seek(std::io::SeekFrom::Start(0))?;
        file.write_all(&[0; END])?;
        self.file.sync_data()?;
        self.len = 0;
        if let Some(direct) = &mut self.direct {
            direct.tail.clear();
        }
        if self.sizes.lock().size > KEEP_FILE {
            self.cut(KEEP_FILE)?;
            self.file.sync_all()?;
        }
        Ok(())
    }

    /// Every complete row in the journal, in order. Read through the locked handle (on
    /// Windows a locked range cannot be read through another one; appends still go to the end).
    pub(crate) fn rows(&self) -> std::io::Result<Vec<Row>> {
        let mut file = &self.file;
        file.seek(std::io::SeekFrom::Start(0))?;
        Ok(parse(&read_frames(file)?))
    }
}

/// The journal's path beside the store file.
pub fn path_beside(store: &Path) -> PathBuf {
    store.with_file_name(FILE_NAME)
}

/// The ids of the complete rows in the journal beside `store` (for tests and tools: a delivery
/// whose id is here was on disk when it was acknowledged).
pub fn journaled_ids(store: &Path) -> Vec<i64> {
    File::open(path_beside(store))
        .and_then(read_frames)
        .map(|bytes| parse(&bytes).iter().map(|row| row.id).collect())
        .unwrap_or_default()
}

/// The newest delivery id the journal beside `store` holds, when a writer appended to it in the
/// last second (a journal left by a crash waits for the next start, not for a reader).
pub(crate) fn newest_journaled(store: &Path) -> Option<i64> {
    let path = path_beside(store);
    let file = File::open(&path).ok()?;
    let fresh = file
        .metadata()
        .ok()?
        .modified()
        .ok()
        .and_then(|m| m.elapsed().ok())
        .is_some_and(|age| age < std::time::Duration::from_secs(1));
    if !fresh {
        return None;
    }
    let bytes = read_frames(file).ok()?;
    // A row's payload starts with its id.
    let last = frames(&bytes).last()?;
    Some(i64::from_le_bytes(last.get(..8)?.try_into().ok()?))
}

/// Reads the complete frames at the start of `file`, and little past them: the file keeps its
/// blocks, so after the frames come up to 32 MiB of zeros (or older frames) not worth reading.
fn read_frames(mut file: impl std::io::Read) -> std::io::Result<Vec<u8>> {
    const CHUNK: u64 = 256 * 1024;
    let mut bytes = Vec::new();
    let mut end = 0;
    loop {
        let read = file.by_ref().take(CHUNK).read_to_end(&mut bytes)?;
        end += frames_end(&bytes[end..]);
        let rest = &bytes[end..];
        // The frames stop here for good when the file ended, at a zero length, or at a frame
        // that is all there and failed its CRC; otherwise the next frame is cut by the chunk.
        let next = rest
            .get(..4)
            .map(|l| u32::from_le_bytes(l.try_into().unwrap_or_default()) as usize);
        let ended = read == 0 || next == Some(0) || next.is_some_and(|len| rest.len() >= 8 + len);
        if ended {
            bytes.truncate(end);
            return Ok(bytes);
        }
    }
}

/// The payloads of the complete frames at the start of `bytes`; stops at the first frame cut
/// short or failing its CRC, and at a zero length (a direct append's padding).
fn frames(mut bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        let len = u32::from_le_bytes(bytes.get(0..4)?.try_into().ok()?) as usize;
        if len == 0 {
            return None;
        }
        let crc = u32::from_le_bytes(bytes.get(4..8)?.try_into().ok()?);
        let payload = bytes.get(8..8 + len)?;
        if crc32fast::hash(payload) != crc {
            return None;
        }
        bytes = &bytes[8 + len..];
        Some(payload)
    })
}

/// Where the complete frames at the start of `bytes` end.
fn frames_end(bytes: &[u8]) -> usize {
    frames(bytes).map(|payload| payload.len() + 8).sum()
}

/// The complete rows at the start of `bytes`; stops at the first frame cut short or damaged.
fn parse(bytes: &[u8]) -> Vec<Row> {
    frames(bytes).map_while(Row::decode).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn row(id: i64) -> Row {
        Row {
            id,
            received_at_ms: 1_700_000_000_000 + id,
            method: "POST".into(),
            path: "/hooks".into(),
            query: String::new(),
            headers: vec![1, 2, 3],
            body: format!("{{\"n\":{id}}}").into_bytes(),
            body_size: 8,
            body_complete: true,
            remote_addr: Some("127.0.0.1:1".into()),
            endpoint: "/hooks".into(),
            scheme: None,
            event_id: Some(format!("evt_{id}")),
            event_type: None,
            job_id: Some("job_1".into()),
            job_status: None,
            sig_status: "skipped".into(),
            ts_status: "skipped".into(),
            dup_status: "first".into(),
            first_id: Some(id),
            checks: b"{}".to_vec(),
            response_status: 200,
            latency_ms: 0,
            note: None,
            job_created_at_ms: Some(5),
            event: EventEffect::Claimed,
        }
    }

    #[test]
    fn rows_come_back_as_written_and_a_torn_tail_is_not_a_row() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = dir.path().join("hookscope.sqlite");
        let mut journal = Journal::open(&store).expect("open").expect("not owned");
        assert!(
            Journal::open(&store).expect("open").is_none(),
            "a second writer does not get the journal"
        );
        journal.append(&[row(1), row(2)]).expect("append");
        journal.append(&[row(3)]).expect("append");
        assert_eq!(journal.rows().expect("rows"), [row(1), row(2), row(3)]);
        // A crash in the middle of the next append: half a frame where the frames end (a
        // direct append's padding after them is overwritten).
        let mut frame = Vec::new();
        row(4).encode(&mut frame);
        let mut file = OpenOptions::new()
            .write(true)
            .open(path_beside(&store))
            .expect("file");
        file.seek(std::io::SeekFrom::Start(journal.len()))
            .expect("seek");
        file.write_all(&frame[..frame.len() / 2]).expect("torn");
        assert_eq!(journal.rows().expect("rows").len(), 3);
        // A flipped byte in a frame ends the journal there (the last byte of the third).
        let mut bytes = std::fs::read(path_beside(&store)).expect("read");
        let third = journal.len() as usize - 1;
        bytes[third] ^= 0xff;
        assert_eq!(parse(&bytes).len(), 2);
        journal.clear().expect("clear");
        assert!(journal.rows().expect("rows").is_empty());
        // Emptied in place: the file keeps the blocks it grew by.
        assert_eq!(
            std::fs::metadata(path_beside(&store)).expect("meta").len(),
            GROW
        );
        drop(journal);
        let reopened = Journal::open(&store).expect("open").expect("released");
        assert_eq!(reopened.len(), 0);
        assert!(reopened.rows().expect("rows").is_empty());
    }

    /// After a clear, new frames are written over the old ones: whatever their sizes (ending
    /// exactly on a sector boundary, or a few bytes short of one), the old rows never come
    /// back, through a reopen too, and the file does not grow again.
    #[test]
    fn a_cleared_journal_is_written_over_in_place_and_its_old_rows_never_come_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = dir.path().join("hookscope.sqlite");
        let mut journal = Journal::open(&store).expect("open").expect("not owned");
        let old: Vec<Row> = (1..=200).map(row).collect();
        journal.append(&old).expect("append");
        let size = std::fs::metadata(path_beside(&store)).expect("meta").len();
        assert_eq!(size, GROW, "grown once, ahead of the frames");
        // Frames that end exactly on a sector boundary, then 1..=4 bytes short of one.
        let encoded = |r: &Row| {
            let mut out = Vec::new();
            r.encode(&mut out);
            out.len()
        };
        for short in 0..=4 {
            let sized = |id: i64| {
                let mut r = row(id);
                let base = encoded(&r) - r.body.len();
                r.body = vec![b'y'; 3 * SECTOR - short - base];
                assert_eq!(encoded(&r), 3 * SECTOR - short);
                r
            };
            // Old frames: one of the new one's size, then another, right where the new one
            // will end.
            journal.clear().expect("clear");
            journal
                .append(&[sized(500 + short as i64), row(600 + short as i64)])
                .expect("append");
            journal.clear().expect("clear");
            let r = sized(1000 + short as i64);
            journal.append(std::slice::from_ref(&r)).expect("append");
            let ids = |rows: Vec<Row>| rows.iter().map(|r| r.id).collect::<Vec<_>>();
            assert_eq!(ids(journal.rows().expect("rows")), [r.id]);
            assert_eq!(journaled_ids(&store), [r.id]);
            drop(journal);
            journal = Journal::open(&store).expect("reopen").expect("not owned");
            let rows = journal.rows().expect("rows after a reopen");
            assert_eq!(ids(rows.clone()), [r.id]);
            assert_eq!(rows[0], r);
            assert_eq!(journal.len(), encoded(&r) as u64);
            assert_eq!(
                std::fs::metadata(path_beside(&store)).expect("meta").len(),
                size,
                "written over in place"
            );
        }
        // A journal larger than it keeps is cut back when emptied.
        let mut big = row(2000);
        big.body = vec![b'z'; KEEP_FILE as usize];
        journal.append(&[big]).expect("a large row");
        assert!(std::fs::metadata(path_beside(&store)).expect("meta").len() > KEEP_FILE);
        // Read back in chunks (a frame across many of them), through a reopen too.
        let held = journal.len();
        drop(journal);
        journal = Journal::open(&store).expect("reopen").expect("not owned");
        assert_eq!(journal.len(), held);
        let ids: Vec<i64> = journal.rows().expect("rows").iter().map(|r| r.id).collect();
        assert_eq!(ids, [1004, 2000]);
        assert_eq!(journaled_ids(&store), [1004, 2000]);
        journal.clear().expect("clear");
        assert_eq!(
            std::fs::metadata(path_beside(&store)).expect("meta").len(),
            KEEP_FILE
        );
        assert!(journal.rows().expect("rows").is_empty());
    }

    /// Once fewer than [`AHEAD`] zero bytes are left ahead of the frames, the journal's own
    /// thread writes the next [`GROW`] without an append asking: only a new file's first append
    /// grows it on the answer's path.
    #[cfg(unix)]
    #[test]
    fn the_journal_grows_ahead_of_its_frames_on_its_own_thread() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = dir.path().join("hookscope.sqlite");
        let size = || std::fs::metadata(path_beside(&store)).expect("meta").len();
        let mut journal = Journal::open(&store).expect("open").expect("not owned");
        let mut written = Vec::new();
        let mut append = |journal: &mut Journal, id: i64| {
            let mut r = row(id);
            r.body = vec![b'w'; 4000];
            journal.append(std::slice::from_ref(&r)).expect("append");
            written.push(r);
        };
        append(&mut journal, 1);
        assert_eq!(
            journal.grown_inline, 1,
            "a new file grows on the first append"
        );
        assert_eq!(size(), GROW);
        let mut id = 2;
        while journal.len() + PAST_FRAMES + AHEAD < GROW {
            append(&mut journal, id);
            id += 1;
        }
        // Grown by the thread, while no append comes.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while size() < 2 * GROW {
            assert!(
                std::time::Instant::now() < deadline,
                "the journal's thread did not grow the file ahead ({} bytes)",
                size()
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // Appends into what was grown ahead write no growth of their own.
        while journal.len() + 2 * PAST_FRAMES + 4200 < 2 * GROW {
            append(&mut journal, id);
            id += 1;
        }
        assert_eq!(journal.grown_inline, 1, "no append grew the file itself");
        assert_eq!(journal.rows().expect("rows"), written);
        drop(journal);
        let reopened = Journal::open(&store).expect("reopen").expect("released");
        assert_eq!(reopened.rows().expect("rows"), written);
    }

    /// Appends of every size across sector boundaries, a reopen in the middle (where the frames
    /// end, not where a direct append's padding does), and a torn frame after padding.
    #[test]
    fn appends_across_sectors_and_a_reopen_read_back_exactly() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = dir.path().join("hookscope.sqlite");
        let mut written = Vec::new();
        let mut journal = Journal::open(&store).expect("open").expect("not owned");
        let direct = journal.direct.is_some();
        for id in 1..=40 {
            let mut r = row(id);
            r.body = vec![b'x'; (id as usize * 97) % 1500];
            journal.append(std::slice::from_ref(&r)).expect("append");
            written.push(r);
            if direct {
                let size = std::fs::metadata(path_beside(&store)).expect("meta").len();
                assert_eq!(
                    size % SECTOR as u64,
                    0,
                    "direct appends write whole sectors"
                );
            }
            if id == 20 {
                drop(journal);
                journal = Journal::open(&store).expect("reopen").expect("not owned");
                assert_eq!(journal.rows().expect("rows"), written);
            }
        }
        assert_eq!(journal.rows().expect("rows"), written);
        assert_eq!(journaled_ids(&store), (1..=40).collect::<Vec<_>>());
        assert_eq!(
            journal.len(),
            std::fs::read(path_beside(&store))
                .map(|b| frames_end(&b) as u64)
                .expect("read")
        );
        journal.clear().expect("clear");
        journal.append(&[row(41)]).expect("append after clear");
        assert_eq!(journal.rows().expect("rows"), [row(41)]);
    }
}

//! Answers deliveries once the journal holding them is on disk, from a thread of its own.
//!
//! The writer decides a batch, writes its rows into the open transaction and its frames into
//! the journal, and hands the batch's answers here; then it goes on with the next batch while
//! this thread waits for `fdatasync`. One sync covers every batch handed over before it began,
//! so the batches that arrive while a sync is under way share the next one. Before the writer
//! commits (which makes rows visible to readers), it waits until every batch handed over is
//! answered ([`JournalSync::settle`]): the store never shows a delivery whose sync failed.
//!
//! When a sync fails, that batch and every one handed over after it are refused (503), and
//! [`JournalSync::settle`] tells the writer how long the journal was at the last good sync: it
//! rolls its transaction back, cuts the journal back there, and writes the journal's rows again
//! (the acknowledged ones), as after a failed commit.

use std::fs::File;
use std::sync::{Arc, Condvar, Mutex, mpsc};

use tokio::sync::oneshot;

use crate::store::error::StoreError;
use crate::store::records::StoredDelivery;

/// Batches waiting for a sync, at most (each sync takes all that wait).
const SYNC_QUEUE: usize = 1024;

/// Where one delivery's answer goes.
pub(crate) type Reply = oneshot::Sender<Result<StoredDelivery, StoreError>>;

/// A written batch waiting for the sync that covers it.
struct Batch {
    /// The batch's number (from 1, in the order handed over).
    seq: u64,
    /// The journal's length once the batch was written.
    end: u64,
    answers: Vec<(Reply, StoredDelivery)>,
}

/// What the sync thread has done.
#[derive(Default)]
struct State {
    /// The newest batch answered (either way).
    answered: u64,
    /// The journal's length at the last sync that succeeded.
    synced_len: u64,
    /// The first sync failure the writer has not yet dealt with.
    failure: Option<std::io::Error>,
}

/// The sync thread, and what the writer has handed it.
pub(crate) struct JournalSync {
    batches: Option<mpsc::SyncSender<Batch>>,
    shared: Arc<(Mutex<State>, Condvar)>,
    /// Batches handed over.
    sent: u64,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl JournalSync {
    /// Starts the thread that syncs `file` (a handle on the journal, which is `len` bytes long
    /// and on disk).
    pub(crate) fn start(file: File, len: u64) -> std::io::Result<JournalSync> {
        let shared = Arc::new((
            Mutex::new(State {
                synced_len: len,
                ..State::default()
            }),
            Condvar::new(),
        ));
        // Bounded: on a slow disk the writer waits here rather than piling up answers.
        let (batches, incoming) = mpsc::sync_channel::<Batch>(SYNC_QUEUE);
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("hookscope-journal-sync".into())
                .spawn(move || sync_loop(&file, &incoming, &shared))?
        };
        Ok(JournalSync {
            batches: Some(batches),
            shared,
            sent: 0,
            thread: Some(thread),
        })
    }

    /// Hands over a batch written into the journal up to `end`: its deliveries are answered
    /// once a sync covers it (refused if that sync fails).
    pub(crate) fn answer_after_sync(&mut self, end: u64, answers: Vec<(Reply, StoredDelivery)>) {
        self.sent += 1;
        let batch = Batch {
            seq: self.sent,
            end,
            answers,
        };
        if let Some(sender) = &self.batches
            && let Err(mpsc::SendError(batch)) = sender.send(batch)
        {
            // The thread is gone (it cannot panic short of a bug): nothing may be answered
            // unsynced.
            self.refuse_unsynced(batch);
        }
    }

    fn refuse_unsynced(&self, batch: Batch) {
        for (reply, _) in batch.answers {
            let _ = reply.send(Err(StoreError::Refused(
                "the capture journal could not be synced to disk".into(),
            )));
        }
        let (lock, wake) = &*self.shared;
        let mut state = lock.lock().unwrap_or_else(|e| e.into_inner());
        state.answered = state.answered.max(batch.seq);
        state
            .failure
            .get_or_insert_with(|| std::io::Error::other("the journal's sync thread stopped"));
        wake.notify_all();
    }

    /// Whether a sync failed since the last [`JournalSync::settle`] (without waiting).
    pub(crate) fn failed(&self) -> bool {
        let (lock, _) = &*self.shared;
        lock.lock()
            .unwrap_or_else(|e| e.into_inner())
            .failure
            .is_some()
    }

    /// Waits until every batch handed over is answered. `Err` carries the first sync failure
    /// since the last call and the journal's length at the last good sync: everything after it
    /// was refused.
    pub(crate) fn settle(&mut self) -> Result<(), (std::io::Error, u64)> {
        let (lock, wake) = &*self.shared;
        let mut state = lock.lock().unwrap_or_else(|e| e.into_inner());
        while state.answered < self.sent {
            state = wake.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        match state.failure.take() {
            Some(e) => Err((e, state.synced_len)),
            None => Ok(()),
        }
    }

    /// After the writer cut the journal back to `len`, or emptied it.
    pub(crate) fn reset_len(&mut self, len: u64) {
        let (lock, _) = &*self.shared;
        lock.lock().unwrap_or_else(|e| e.into_inner()).synced_len = len;
    }
}

impl Drop for JournalSync {
    fn drop(&mut self) {
        // Closing the channel ends the thread once it has answered what it holds.
        self.batches = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn sync_loop(file: &File, incoming: &mpsc::Receiver<Batch>, shared: &(Mutex<State>, Condvar)) {
    let (lock, wake) = shared;
    while let Ok(first) = incoming.recv() {
        let mut batches = vec![first];
        batches.extend(incoming.try_iter());
        // After a failure nothing is synced until the writer has cut the journal back: what
        // follows the failure may sit on pages the kernel dropped.
        let failed_before = lock
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .failure
            .is_some();
        let result = if failed_before {
            Err(None)
        } else {
            file.sync_data().map_err(Some)
        };
        let newest = batches.last().map_or((0, 0), |b| (b.seq, b.end));
        let refusal = {
            let mut state = lock.lock().unwrap_or_else(|e| e.into_inner());
            let refusal = match result {
                Ok(()) => {
                    state.synced_len = newest.1;
                    None
                }
                Err(error) => {
                    let sentence = match &error {
                        Some(e) => format!("the capture journal could not be synced to disk: {e}"),
                        None => "the capture journal could not be synced to disk".to_string(),
                    };
                    if let Some(e) = error {
                        state.failure.get_or_insert(e);
                    }
                    Some(sentence)
                }
            };
            state.answered = newest.0;
            wake.notify_all();
            refusal
        };
        for batch in batches {
            for (reply, stored) in batch.answers {
                let answer = match &refusal {
                    None => Ok(stored),
                    Some(sentence) => Err(StoreError::Refused(sentence.clone())),
                };
                let _ = reply.send(answer);
            }
        }
    }
}

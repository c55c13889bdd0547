//! The capture session: what `hookscope listen` and the window both run while they capture. It
//! holds the data dir's capture lock, the capturing store, the settings every source reads
//! (with the contracts reloaded when their files change), the switches the front end flips, the
//! HTTP receiver (the first source of deliveries; a source hands `capture::decide` a request
//! and stores what it decides), the background reconciler, the retention schedule and the
//! store's health. The two front ends start the same [`Session`] and differ only in how they
//! say what it reports ([`Said`]).
//!
//! Decided once for both: retention runs at start, on a saved config and every
//! [`RETENTION_EVERY`]; the housekeeping ([`Session::tick`]: the health, a contract edited on
//! disk, the retention when due) runs every [`HOUSEKEEPING_EVERY`]; when another hookscope
//! holds the data dir, the window opens its history read-only and `listen` refuses to start
//! ([`SessionOptions::read_only_fallback`]).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::app::paths::STORE_FILE;
use crate::app::{self, AppError};
use crate::capture::{Controls, SharedSettings};
use crate::config::{ConfigFile, Overrides, Settings};
use crate::domain::clock::now_ms;
use crate::net::receiver::Receiver;
use crate::store::{CaptureLock, HealthReport, Store, StoreError, StoreWriter, StoredDelivery};

/// How often the front end calls [`Session::tick`].
pub const HOUSEKEEPING_EVERY: Duration = Duration::from_millis(250);

/// How often retention runs while capturing (besides at start and on a saved config).
pub const RETENTION_EVERY: Duration = Duration::from_secs(600);

/// What a session is started with.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// The data dir (the store, the capture lock).
    pub data_dir: PathBuf,
    /// The config file as loaded.
    pub config: ConfigFile,
    /// What the command line overrides in it.
    pub overrides: Overrides,
    /// The switches, as the front end set them (`listen --forward-to`; the window's start
    /// empty).
    pub controls: Arc<Controls>,
    /// When another hookscope captures into the data dir (or it cannot be written) and a
    /// history is there: open it read-only and capture nothing (the window), rather than
    /// fail (`listen`).
    pub read_only_fallback: bool,
}

/// What a session has to say; each front end says it its own way.
#[derive(Debug, Clone, PartialEq)]
pub enum Said {
    /// The store was damaged and kept aside: the sentence that says so.
    Recovered(String),
    /// Retention removed this many old deliveries.
    Retained(usize),
    /// The store's health changed: how it is now.
    Health(HealthReport),
    /// A contract file changed and is applied from now: the sentence that says so.
    ContractApplied(String),
    /// Something the session did failed (retention, a changed contract that does not compile).
    Failed(String),
    /// The relay connection changed (connected, caught up, lost and why), or a relayed
    /// delivery could not be opened: the sentence that says so.
    Relay(String),
}

/// A running capture session.
/// Dropped without [`Session::shutdown`] (the window's engine ending), its fields go in this
/// order: the receiver stops (in-flight deliveries committed and answered), the reconciler
/// stops and is joined, then the store's handle, and the capture lock last.
pub struct Session {
    receiver: Option<Receiver>,
    reconciler: Option<app::background::Background>,
    store: Store,
    read_only: Option<String>,
    settings: SharedSettings,
    controls: Arc<Controls>,
    config: ConfigFile,
    overrides: Overrides,
    /// When the retention last ran (`None`: it is due).
    last_retention: Option<Instant>,
    health_changes: u64,
    relay: Option<(
        tokio::task::AbortHandle,
        Arc<crate::net::relay::RelayStatus>,
    )>,
    _lock: Option<CaptureLock>,
}

impl Session {
    /// Takes the data dir's capture lock and opens the store (keeping a damaged one aside);
    /// returns the session and what it has to say already. The front end applies the retention
    /// ([`Session::apply_retention`]) when it is ready to wait for it: `listen` before its
    /// receiver starts, the window on its engine's thread.
    pub fn open(options: SessionOptions) -> Result<(Session, Vec<Said>), AppError> {
        let settings = Settings::resolve(&options.config, &options.overrides)?;
        let (store, recovered, lock, read_only) = open_store(&options)?;
        let health_changes = store.writer().health().changes;
        let session = Session {
            store,
            _lock: lock,
            read_only,
            settings: SharedSettings::new(settings),
            controls: options.controls,
            config: options.config,
            overrides: options.overrides,
            receiver: None,
            reconciler: None,
            last_retention: Some(Instant::now()),
            health_changes,
            relay: None,
        };
        Ok((
            session,
            recovered.into_iter().map(Said::Recovered).collect(),
        ))
    }

    /// Starts the HTTP receiver on `bind:port` (port 0 picks a free one), replacing the one
    /// running; each stored delivery is sent on `events`. Refused on a read-only history.
    pub fn start_receiver(
        &mut self,
        bind: IpAddr,
        port: u16,
        events: Option<mpsc::Sender<StoredDelivery>>,
    ) -> Result<SocketAddr, AppError> {
        self.stop_receiver();
        if let Some(sentence) = &self.read_only {
            return Err(AppError::Failed(sentence.clone()));
        }
        let receiver = Receiver::start(
            bind,
            port,
            self.settings.clone(),
            self.store.writer(),
            events,
            Arc::clone(&self.controls),
        )
        .map_err(|e| AppError::Failed(e.to_string()))?;
        let addr = receiver.local_addr();
        self.receiver = Some(receiver);
        Ok(addr)
    }

    /// Subscribes to a relay channel as well: its deliveries take the receiver's pipeline, with
    /// the relay's receive time, exactly once. Needs the receiver running.
    pub fn start_relay(
        &mut self,
        config: crate::net::relay::RelayConfig,
    ) -> Result<Arc<crate::net::relay::RelayStatus>, AppError> {
        let Some(receiver) = &mut self.receiver else {
            return Err(AppError::Failed(
                "the relay needs the receiver running".to_string(),
            ));
        };
        if let Some((task, _)) = self.relay.take() {
            task.abort();
        }
        let (task, status) = crate::net::relay::start(receiver, config);
        self.relay = Some((task, Arc::clone(&status)));
        Ok(status)
    }

    /// Stops taking deliveries from the relay (those queued are stored).
    pub fn stop_relay(&mut self) {
        if let Some((task, _)) = self.relay.take() {
            task.abort();
        }
    }

    /// The relay connection, when one was started.
    pub fn relay(&self) -> Option<&Arc<crate::net::relay::RelayStatus>> {
        self.relay.as_ref().map(|(_, status)| status)
    }

    /// The receiver, taken out of the session, for a front end that stops it on a thread of its
    /// own while it shows the deliveries still in flight (`listen` on Ctrl-C).
    pub fn take_receiver(&mut self) -> Option<Receiver> {
        self.receiver.take()
    }

    /// Stops the receiver (in-flight deliveries committed and answered).
    pub fn stop_receiver(&mut self) {
        if let Some(receiver) = self.receiver.take() {
            receiver.stop();
        }
    }

    /// Starts the background reconciler when an endpoint has a job API (not on a read-only
    /// history): a pass at start-up, then one every `app::reconcile::BACKGROUND_EVERY`; `report`
    /// gets each sentence, on the reconciler's thread.
    pub fn start_reconciler(
        &mut self,
        report: impl FnMut(String) + Send + 'static,
    ) -> Result<(), AppError> {
        let settings = Settings::clone(&self.settings.get());
        if self.read_only.is_some() || app::reconcile::apis(&settings, None).is_err() {
            return Ok(());
        }
        let (path, writer) = (self.store.path().to_path_buf(), self.store.writer());
        let stuck = app::jobs::stuck_after_ms(None, &self.config);
        self.reconciler = Some(app::background::spawn(
            "hookscope-reconcile",
            move |mut stop| async move {
                let passes = app::reconcile::background(
                    settings,
                    path,
                    writer,
                    stuck,
                    app::reconcile::BACKGROUND_EVERY,
                    report,
                );
                tokio::select! {
                    () = passes => {}
                    () = stop.stopped() => {}
                }
            },
        )?);
        Ok(())
    }

    /// The housekeeping, every [`HOUSEKEEPING_EVERY`]: a change of the store's health, a
    /// contract whose files changed (applied to the next delivery), the retention when due.
    /// Called outside an async runtime: the retention waits for the store's writer.
    pub fn tick(&mut self) -> Vec<Said> {
        let mut said = Vec::new();
        if let Some((_, relay)) = &self.relay {
            said.extend(relay.take_sentences().into_iter().map(Said::Relay));
        }
        let health = self.store.writer().health();
        if health.changes != self.health_changes {
            self.health_changes = health.changes;
            said.push(Said::Health(health));
        }
        match app::contract::reload_if_changed(&self.config, &self.overrides, &self.settings) {
            Some(Ok(sentence)) => said.push(Said::ContractApplied(sentence)),
            Some(Err(e)) => said.push(Said::Failed(e.to_string())),
            None => {}
        }
        if self
            .last_retention
            .is_none_or(|at| at.elapsed() >= RETENTION_EVERY)
        {
            said.extend(self.apply_retention());
        }
        said
    }

    /// A config saved by the front end: resolved (a bad one is refused and nothing changes),
    /// applied to the next delivery, and its retention applied.
    pub fn replace_config(&mut self, file: ConfigFile) -> Result<Option<Said>, AppError> {
        let settings = Settings::resolve(&file, &self.overrides)?;
        self.settings.replace(settings);
        self.config = file;
        Ok(self.apply_retention())
    }

    /// Applies the config's retention now (nothing on a read-only history).
    pub fn apply_retention(&mut self) -> Option<Said> {
        self.last_retention = Some(Instant::now());
        if self.read_only.is_some() {
            return None;
        }
        // Whole seconds: two passes in the same second remove the same rows.
        let now = (now_ms() / 1000) * 1000;
        match app::history::apply_retention(&self.store.writer(), &self.config.retention, now) {
            Ok(0) => None,
            Ok(n) => Some(Said::Retained(n)),
            Err(e) => Some(Said::Failed(e.to_string())),
        }
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// A handle on the store's writer.
    pub fn writer(&self) -> StoreWriter {
        self.store.writer()
    }

    /// The settings every source reads.
    pub fn settings(&self) -> &SharedSettings {
        &self.settings
    }

    /// The config in use.
    pub fn config(&self) -> &ConfigFile {
        &self.config
    }

    /// The switches the front end flips.
    pub fn controls(&self) -> &Arc<Controls> {
        &self.controls
    }

    /// Why the history is read-only, when it is.
    pub fn read_only(&self) -> Option<&str> {
        self.read_only.as_deref()
    }

    /// Where the receiver listens, when it runs.
    pub fn receiver_addr(&self) -> Option<SocketAddr> {
        self.receiver.as_ref().map(Receiver::local_addr)
    }

    /// Stops the reconciler and the receiver (in-flight deliveries committed and answered),
    /// then the store's writer.
    pub fn shutdown(mut self) {
        if let Some(reconciler) = self.reconciler.take() {
            reconciler.stop();
        }
        if let Some(receiver) = self.receiver.take() {
            receiver.stop();
        }
        self.store.shutdown();
    }
}

/// The store to capture into, with the data dir's lock, and the sentence of a recovery; or,
/// with `read_only_fallback`, when another hookscope holds the lock or the dir cannot be
/// written and a history is there, that history read-only, with the sentence that says so.
#[allow(clippy::type_complexity)]
fn open_store(
    options: &SessionOptions,
) -> Result<(Store, Option<String>, Option<CaptureLock>, Option<String>), AppError> {
    let path = options.data_dir.join(STORE_FILE);
    match CaptureLock::acquire(&options.data_dir) {
        Ok(lock) => {
            let (store, recovered) = Store::open_capturing(&path, &lock)?;
            Ok((store, recovered, Some(lock), None))
        }
        Err(err @ (StoreError::InUse { .. } | StoreError::Unwritable { .. }))
            if options.read_only_fallback && path.exists() =>
        {
            let reason = match &err {
                StoreError::InUse { holder, .. } => {
                    format!("another hookscope ({holder}) is capturing into it")
                }
                StoreError::Unwritable { reason, .. } => reason.clone(),
                _ => err.to_string(),
            };
            let store = Store::open_read_only(&path, &reason)?;
            let sentence = format!(
                "history opened read-only: {err} This window shows what is stored and does not capture."
            );
            Ok((store, None, None, Some(sentence)))
        }
        Err(err) => Err(err.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::delivery::{Delivery, Header};

    fn session(dir: &std::path::Path, max_deliveries: u64) -> Session {
        let mut config = ConfigFile::default();
        config.retention.max_deliveries = Some(max_deliveries);
        let (session, said) = Session::open(SessionOptions {
            data_dir: dir.to_path_buf(),
            config,
            overrides: Overrides::default(),
            controls: Arc::new(Controls::default()),
            read_only_fallback: false,
        })
        .expect("opens");
        assert!(said.is_empty(), "{said:?}");
        session
    }

    /// The retention a long-running capture applies: at its next housekeeping once
    /// `RETENTION_EVERY` has passed, from the thread `listen` and the window call it on (no
    /// runtime), and not before.
    #[test]
    fn the_housekeeping_applies_the_retention_when_it_is_due() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut session = session(dir.path(), 2);
        let records = (0..5)
            .map(|n| {
                let body = format!("{{\"id\":\"evt_{n}\"}}");
                let delivery = Delivery {
                    received_at_ms: now_ms(),
                    method: "POST".into(),
                    path: "/hooks".into(),
                    query: String::new(),
                    headers: vec![Header::new("content-type", "application/json")],
                    body_size: body.len() as u64,
                    body: body.into_bytes(),
                    body_complete: true,
                    remote_addr: None,
                };
                crate::store::NewRecord::checked(
                    delivery,
                    &crate::domain::endpoint::Endpoint::catch_all(),
                    now_ms() / 1000,
                )
            })
            .collect();
        session
            .writer()
            .insert_many_blocking(records)
            .expect("stored");
        assert!(
            !session
                .tick()
                .iter()
                .any(|s| matches!(s, Said::Retained(_))),
            "not due yet"
        );
        // As if `RETENTION_EVERY` had passed since the last one.
        session.last_retention = None;
        let said = session.tick();
        assert!(said.contains(&Said::Retained(3)), "{said:?}");
        let reader = session.store().reader().expect("reader");
        assert_eq!(reader.count().expect("count"), 2);
        session.shutdown();
    }
}

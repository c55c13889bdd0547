//! The engine behind the desktop window: the receiver, the store and the config, driven by
//! commands and reporting back through events, on its own thread.
//!
//! The window never touches the network or the disk itself: it sends a [`Command`] and later
//! reads an [`Event`]. Events go through a bounded channel and each one calls the waker the
//! window gave (in practice `request_repaint`), so bursts are drawn in one frame. New deliveries
//! are not sent one by one: the engine bumps [`EngineHandle::latest_id`] and the window asks for
//! the rows it shows.

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc::{Receiver as StdReceiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use base64::Engine as _;

use crate::checks;
use crate::config::{self, ConfigFile, EndpointConfig, Overrides, Settings};
use crate::filter::Filter;
use crate::receiver::{Receiver, SharedSettings};
use crate::scheme::{Scheme, Secret};
use crate::store::{ListRow, Maintenance, Reader, Store, StoredDelivery};

/// The path prefix of the endpoint the "Send a test delivery" button creates and uses.
pub const TEST_ENDPOINT: &str = "/hookscope-test";

/// What the window asks of the engine.
#[derive(Debug, Clone)]
pub enum Command {
    /// Start (or restart) the receiver on a port of the configured address.
    StartReceiver {
        /// The port; 0 picks a free one.
        port: u16,
    },
    /// Stop the receiver.
    StopReceiver,
    /// Fetch rows `offset..offset + limit` of the list under a filter, and the total.
    Query {
        /// Echoed back, so stale answers can be told apart.
        generation: u64,
        /// The filter text.
        filter: String,
        /// First row; `usize::MAX` for the last page.
        offset: usize,
        /// How many rows.
        limit: usize,
    },
    /// List the most recently active jobs whose id starts with `prefix`, with their timelines.
    Jobs {
        /// Echoed back, so stale answers can be told apart.
        generation: u64,
        /// Job id prefix.
        prefix: String,
        /// How many jobs.
        limit: usize,
    },
    /// Send a stored delivery again to a handler.
    Resend {
        /// The delivery.
        id: i64,
        /// The handler's URL.
        url: String,
        /// `Some((scheme, secrets))` to re-sign with a fresh timestamp.
        resign: Option<(String, Vec<String>)>,
        /// Give the event a new id.
        new_id: bool,
        /// A replacement body.
        body: Option<Vec<u8>>,
    },
    /// The outbound attempts made from a delivery.
    Attempts {
        /// The delivery.
        id: i64,
    },
    /// Run the receiver checklist against a handler.
    Probe {
        /// The handler's URL.
        url: String,
        /// The scheme it verifies.
        scheme: String,
        /// Its secrets.
        secrets: Vec<String>,
    },
    /// Write deliveries to a file or directory.
    Export {
        /// The deliveries.
        ids: Vec<i64>,
        /// The format.
        format: crate::export::Format,
        /// Re-sign fixtures with a generated test secret.
        resign_with_test_secret: bool,
        /// JSON pointers to redact in fixtures.
        redact: Vec<String>,
        /// Write example tests beside fixtures.
        snippets: bool,
        /// Where.
        out: PathBuf,
    },
    /// Import the requests of a HAR file.
    ImportHar {
        /// The file.
        path: PathBuf,
    },
    /// Find a delivery's position in the list under a filter.
    Locate {
        /// The delivery.
        id: i64,
        /// The filter text.
        filter: String,
    },
    /// Load one whole delivery for the detail pane.
    Load {
        /// The delivery.
        id: i64,
    },
    /// Save the config (endpoints and secrets) and apply it to the receiver at once.
    SaveConfig(Box<ConfigFile>),
    /// Re-run the checks of one delivery with the current endpoints.
    Recheck {
        /// The delivery.
        id: i64,
    },
    /// Sign a sample job event for the test endpoint and post it to the receiver.
    SendTestDelivery,
    /// Delete deliveries.
    Delete(Vec<i64>),
    /// Delete every delivery.
    ClearHistory,
}

/// The receiver's state, as the top bar shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReceiverState {
    /// Listening.
    Running {
        /// The bound address.
        addr: SocketAddr,
    },
    /// Not listening (stopped by the user).
    Stopped,
    /// Could not start; the sentence says why.
    Failed(String),
}

/// What the engine reports.
#[derive(Debug, Clone)]
pub enum Event {
    /// The receiver started, stopped or failed.
    Receiver(ReceiverState),
    /// Rows for a [`Command::Query`].
    Page {
        /// The query's generation.
        generation: u64,
        /// The first row's position.
        offset: usize,
        /// How many rows match the filter in all.
        total: usize,
        /// The rows.
        rows: Vec<ListRow>,
    },
    /// A query failed (e.g. a bad filter).
    QueryFailed {
        /// The query's generation.
        generation: u64,
        /// What went wrong.
        message: String,
    },
    /// Timelines for [`Command::Jobs`], most recently active first.
    Jobs {
        /// The query's generation.
        generation: u64,
        /// How many jobs the store knows in all.
        total: usize,
        /// The timelines.
        jobs: Vec<crate::timeline::JobTimeline>,
    },
    /// The attempts of a delivery (after [`Command::Attempts`] or a resend).
    Attempts {
        /// The delivery.
        delivery_id: i64,
        /// Oldest first.
        attempts: Vec<crate::store::Attempt>,
    },
    /// A probe's report, or why it could not run.
    Probed(Result<Box<crate::send::ProbeReport>, String>),
    /// The position of a delivery for [`Command::Locate`] (`None`: not under this filter).
    Located {
        /// The delivery.
        id: i64,
        /// Its position.
        position: Option<usize>,
    },
    /// A whole delivery for [`Command::Load`].
    Loaded(Box<StoredDelivery>),
    /// The config was saved and applied.
    ConfigSaved(Box<ConfigFile>),
    /// A delivery's checks were re-run and stored.
    Rechecked {
        /// The delivery.
        id: i64,
    },
    /// The history changed other than by new deliveries (delete, clear, retention).
    HistoryChanged,
    /// Something the user should read in the status line.
    Notice(String),
    /// Something went wrong; the sentence says what.
    Error(String),
}

/// The window's side of the engine.
pub struct EngineHandle {
    commands: SyncSender<Command>,
    events: StdReceiver<Event>,
    /// The id of the newest stored delivery; the window re-queries when it changes.
    pub latest_id: Arc<AtomicI64>,
    /// The receiver's switches (forward, mirror, fail next N), flipped directly by the window.
    pub controls: Arc<crate::receiver::Controls>,
    /// The config as loaded at start.
    pub config: ConfigFile,
    /// The data directory.
    pub data_dir: PathBuf,
    /// The config file.
    pub config_path: PathBuf,
}

impl EngineHandle {
    /// Sends a command; never blocks the window (a full queue drops the command and says so).
    pub fn send(&self, command: Command) -> bool {
        self.commands.try_send(command).is_ok()
    }

    /// The next event, if one is waiting.
    pub fn try_recv(&self) -> Option<Event> {
        self.events.try_recv().ok()
    }
}

/// Where the engine keeps its data and how it listens.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// The data directory (store).
    pub data_dir: PathBuf,
    /// The config file.
    pub config_path: PathBuf,
    /// The address to bind.
    pub bind: IpAddr,
    /// The port to start on (`None`: the config's, else the default).
    pub port: Option<u16>,
}

/// A function the engine calls after sending events (the window's repaint request).
pub type Waker = Arc<dyn Fn() + Send + Sync>;

struct Engine {
    options: EngineOptions,
    store: Store,
    reader: Reader,
    receiver: Option<Receiver>,
    settings: SharedSettings,
    config: ConfigFile,
    events: SyncSender<Event>,
    waker: Waker,
    latest_id: Arc<AtomicI64>,
    test_counter: u64,
    controls: Arc<crate::receiver::Controls>,
}

/// Opens the store and the config, starts the engine thread and the receiver.
pub fn spawn(options: EngineOptions, waker: Waker) -> anyhow::Result<EngineHandle> {
    let config = config::load_file(&options.config_path)?;
    let settings = Settings::resolve(&config, &Overrides::default())?;
    let (store, recovered) =
        Store::open_or_recover(&options.data_dir.join(crate::cli::STORE_FILE))?;
    let reader = store.reader()?;
    let latest = reader.list(1, None)?.first().map(|d| d.id).unwrap_or(0);
    let latest_id = Arc::new(AtomicI64::new(latest));
    let controls = Arc::new(crate::receiver::Controls::default());
    let (command_tx, command_rx) = sync_channel(256);
    let (event_tx, event_rx) = sync_channel(1024);
    if let Some(sentence) = recovered {
        let _ = event_tx.try_send(Event::Error(sentence));
    }
    if let Some(warning) = config::permission_warning(&options.config_path) {
        let _ = event_tx.try_send(Event::Error(warning));
    }
    let mut engine = Engine {
        options: options.clone(),
        store,
        reader,
        receiver: None,
        settings: Arc::new(RwLock::new(Arc::new(settings))),
        config: config.clone(),
        events: event_tx,
        waker,
        latest_id: Arc::clone(&latest_id),
        test_counter: 0,
        controls: Arc::clone(&controls),
    };
    let port = options
        .port
        .or(config.receiver.port)
        .unwrap_or(config::DEFAULT_PORT);
    std::thread::Builder::new()
        .name("hookscope-engine".into())
        .spawn(move || {
            engine.start_receiver(port);
            engine.apply_retention();
            engine.run(command_rx);
        })?;
    Ok(EngineHandle {
        commands: command_tx,
        events: event_rx,
        latest_id,
        controls,
        config,
        data_dir: options.data_dir,
        config_path: options.config_path,
    })
}

impl Engine {
    fn run(&mut self, commands: StdReceiver<Command>) {
        let mut last_retention = Instant::now();
        loop {
            match commands.recv_timeout(Duration::from_secs(60)) {
                Ok(command) => self.handle(command),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if last_retention.elapsed() > Duration::from_secs(600) {
                self.apply_retention();
                last_retention = Instant::now();
            }
        }
        if let Some(receiver) = self.receiver.take() {
            receiver.stop();
        }
    }

    fn emit(&self, event: Event) {
        let _ = self.events.send(event);
        (self.waker)();
    }

    fn handle(&mut self, command: Command) {
        match command {
            Command::StartReceiver { port } => self.start_receiver(port),
            Command::StopReceiver => {
                if let Some(receiver) = self.receiver.take() {
                    receiver.stop();
                }
                self.emit(Event::Receiver(ReceiverState::Stopped));
            }
            Command::Query {
                generation,
                filter,
                offset,
                limit,
            } => {
                let result = Filter::parse(&filter)
                    .map_err(|e| e.to_string())
                    .and_then(|f| {
                        let total = self.reader.count_matching(&f).map_err(|e| e.to_string())?;
                        // `usize::MAX` asks for the last page, whatever the total is now: walked
                        // from the newest end rather than skipped to with OFFSET.
                        let (offset, rows) = if offset == usize::MAX {
                            let rows = self
                                .reader
                                .page_tail(&f, limit)
                                .map_err(|e| e.to_string())?;
                            ((total.max(0) as usize).saturating_sub(rows.len()), rows)
                        } else {
                            (
                                offset,
                                self.reader
                                    .page(&f, offset, limit)
                                    .map_err(|e| e.to_string())?,
                            )
                        };
                        Ok((total, offset, rows))
                    });
                match result {
                    Ok((total, offset, rows)) => self.emit(Event::Page {
                        generation,
                        offset,
                        total: total.max(0) as usize,
                        rows,
                    }),
                    Err(message) => self.emit(Event::QueryFailed {
                        generation,
                        message,
                    }),
                }
            }
            Command::Jobs {
                generation,
                prefix,
                limit,
            } => {
                let stuck_after_ms = self.config.jobs.stuck_after_ms();
                let now = (crate::now_ms() / 1000) * 1000;
                let result = self.reader.recent_jobs(&prefix, limit).and_then(|ids| {
                    let total = self.reader.count_jobs()?;
                    let jobs = ids
                        .iter()
                        .map(|id| {
                            let deliveries = self.reader.job_deliveries(id)?;
                            Ok(crate::timeline::analyze(
                                id,
                                deliveries,
                                now,
                                stuck_after_ms,
                            ))
                        })
                        .collect::<Result<Vec<_>, crate::store::StoreError>>()?;
                    Ok((total, jobs))
                });
                match result {
                    Ok((total, jobs)) => self.emit(Event::Jobs {
                        generation,
                        total: total.max(0) as usize,
                        jobs,
                    }),
                    Err(e) => self.emit(Event::Error(e.to_string())),
                }
            }
            Command::Resend {
                id,
                url,
                resign,
                new_id,
                body,
            } => self.resend(id, url, resign, new_id, body),
            Command::Attempts { id } => match self.reader.attempts_for(id) {
                Ok(attempts) => self.emit(Event::Attempts {
                    delivery_id: id,
                    attempts,
                }),
                Err(e) => self.emit(Event::Error(e.to_string())),
            },
            Command::Probe {
                url,
                scheme,
                secrets,
            } => self.probe(url, scheme, secrets),
            Command::Export {
                ids,
                format,
                resign_with_test_secret,
                redact,
                snippets,
                out,
            } => self.export(ids, format, resign_with_test_secret, redact, snippets, out),
            Command::ImportHar { path } => self.import_har(path),
            Command::Locate { id, filter } => {
                // The rows before it, and whether it is itself under the filter (the count
                // grows by one past it).
                let position = Filter::parse(&filter).ok().and_then(|f| {
                    let before = self.reader.position_of(&f, id).ok()?;
                    let through = self.reader.position_of(&f, id.saturating_add(1)).ok()?;
                    (through > before).then_some(before.max(0) as usize)
                });
                self.emit(Event::Located { id, position });
            }
            Command::Load { id } => match self.reader.get(id) {
                Ok(Some(stored)) => self.emit(Event::Loaded(Box::new(stored))),
                Ok(None) => self.emit(Event::Error(format!(
                    "delivery #{id} is no longer in the store"
                ))),
                Err(e) => self.emit(Event::Error(e.to_string())),
            },
            Command::SaveConfig(file) => self.save_config(*file),
            Command::Recheck { id } => self.recheck(id),
            Command::SendTestDelivery => self.send_test_delivery(),
            Command::Delete(ids) => self.maintain(Maintenance::Delete(ids), "deleted"),
            Command::ClearHistory => self.maintain(Maintenance::Clear, "cleared"),
        }
    }

    /// Runs outbound work on its own thread, so queries keep flowing while a handler is slow.
    fn spawn_outbound(
        &self,
        work: impl FnOnce(&tokio::runtime::Runtime) -> Vec<Event> + Send + 'static,
    ) {
        let events = self.events.clone();
        let waker = Arc::clone(&self.waker);
        let spawned = std::thread::Builder::new()
            .name("hookscope-send".into())
            .spawn(move || {
                let out = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => work(&runtime),
                    Err(e) => vec![Event::Error(format!("cannot start the sender: {e}"))],
                };
                for event in out {
                    let _ = events.send(event);
                }
                waker();
            });
        if let Err(e) = spawned {
            self.emit(Event::Error(format!("cannot start the sender: {e}")));
        }
    }

    fn resend(
        &mut self,
        id: i64,
        url: String,
        resign: Option<(String, Vec<String>)>,
        new_id: bool,
        body: Option<Vec<u8>>,
    ) {
        let stored = match self.reader.get(id) {
            Ok(Some(stored)) => stored,
            Ok(None) => {
                return self.emit(Event::Error(format!(
                    "delivery #{id} is no longer in the store"
                )));
            }
            Err(e) => return self.emit(Event::Error(e.to_string())),
        };
        let resign = match resign {
            None => None,
            Some((name, secrets)) => match config::find_scheme(&self.config, &name) {
                Ok(Some(scheme)) => Some((scheme, secrets.into_iter().map(Secret::new).collect())),
                _ => return self.emit(Event::Error(format!("unknown scheme \"{name}\""))),
            },
        };
        let options = crate::send::ResendOptions {
            resign,
            new_id,
            body,
        };
        let outgoing = match crate::send::prepare_resend(&stored, &options, crate::now_ms() / 1000)
        {
            Ok(o) => o,
            Err(e) => return self.emit(Event::Error(e.to_string())),
        };
        let writer = self.store.writer();
        let path = self.store.path().to_path_buf();
        self.spawn_outbound(move |runtime| {
            let sent = runtime.block_on(async {
                let client = crate::send::Client::new(crate::send::DEFAULT_TIMEOUT)?;
                let attempt = client.send(&url, &outgoing, "resend", Some(id)).await?;
                let status = attempt.status;
                let error = attempt.error.clone();
                writer
                    .attempt(attempt)
                    .await
                    .map_err(|e| crate::send::SendError::Build(e.to_string()))?;
                Ok::<_, crate::send::SendError>((status, error))
            });
            let attempts = Reader::open(&path).and_then(|r| r.attempts_for(id));
            let mut out = Vec::new();
            match sent {
                Ok((Some(status), _)) => {
                    out.push(Event::Notice(format!("resent #{id} to {url}: {status}")))
                }
                Ok((None, error)) => out.push(Event::Error(format!(
                    "resent #{id} to {url}: {}",
                    error.unwrap_or_else(|| "no answer".into())
                ))),
                Err(e) => out.push(Event::Error(e.to_string())),
            }
            if let Ok(attempts) = attempts {
                out.push(Event::Attempts {
                    delivery_id: id,
                    attempts,
                });
            }
            out
        });
    }

    fn export(
        &mut self,
        ids: Vec<i64>,
        format: crate::export::Format,
        resign_with_test_secret: bool,
        redact: Vec<String>,
        snippets: bool,
        out: PathBuf,
    ) {
        let mut selected = Vec::new();
        for id in ids {
            match self.reader.get(id) {
                Ok(Some(stored)) => selected.push(stored),
                Ok(None) => {}
                Err(e) => return self.emit(Event::Error(e.to_string())),
            }
        }
        let options = crate::export::FixtureOptions {
            resign_with_test_secret,
            scheme: None,
            redact,
        };
        match crate::export::write_export(&selected, format, &options, snippets, &out) {
            Ok(written) => self.emit(Event::Notice(format!(
                "exported {} deliveries: {} file(s) in {}",
                selected.len(),
                written.len(),
                written
                    .first()
                    .and_then(|p| p.parent())
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            ))),
            Err(e) => self.emit(Event::Error(format!("export failed: {e}"))),
        }
    }

    fn import_har(&mut self, path: PathBuf) {
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) => {
                return self.emit(Event::Error(format!("cannot read {}: {e}", path.display())));
            }
        };
        let requests = match crate::export::read_har(&text) {
            Ok(r) => r,
            Err(e) => return self.emit(Event::Error(format!("{}: {e}", path.display()))),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let records = crate::export::import_records(requests, &name, &self.current_settings());
        match self.store.writer().insert_many_blocking(records) {
            Ok(n) => {
                if let Ok(Some(latest)) = self.reader.list(1, None).map(|l| l.first().map(|d| d.id))
                {
                    self.latest_id.fetch_max(latest, Ordering::SeqCst);
                }
                self.emit(Event::HistoryChanged);
                self.emit(Event::Notice(format!(
                    "imported {n} deliveries from {name}"
                )));
            }
            Err(e) => self.emit(Event::Error(e.to_string())),
        }
    }

    fn probe(&mut self, url: String, scheme: String, secrets: Vec<String>) {
        let scheme = match config::find_scheme(&self.config, &scheme) {
            Ok(Some(s)) => s,
            _ => return self.emit(Event::Probed(Err(format!("unknown scheme \"{scheme}\"")))),
        };
        let secrets: Vec<Secret> = secrets.into_iter().map(Secret::new).collect();
        self.spawn_outbound(move |runtime| {
            let report = runtime.block_on(async {
                let client = crate::send::Client::new(crate::send::DEFAULT_TIMEOUT)?;
                crate::send::probe(&client, &url, &scheme, &secrets, None).await
            });
            vec![Event::Probed(
                report.map(Box::new).map_err(|e| e.to_string()),
            )]
        });
    }

    fn start_receiver(&mut self, port: u16) {
        if let Some(receiver) = self.receiver.take() {
            receiver.stop();
        }
        let (events_tx, mut events_rx) = tokio::sync::mpsc::channel::<StoredDelivery>(1024);
        let latest = Arc::clone(&self.latest_id);
        let waker = Arc::clone(&self.waker);
        // Drain the receiver's events at once so it never waits on the window; the window
        // reads rows from the store when it sees the newest id move.
        let drained = std::thread::Builder::new()
            .name("hookscope-ui-events".into())
            .spawn(move || {
                while let Some(stored) = events_rx.blocking_recv() {
                    latest.fetch_max(stored.id, Ordering::SeqCst);
                    waker();
                }
            });
        if let Err(e) = drained {
            self.emit(Event::Receiver(ReceiverState::Failed(format!(
                "cannot start: {e}"
            ))));
            return;
        }
        match Receiver::start(
            self.options.bind,
            port,
            Arc::clone(&self.settings),
            self.store.writer(),
            Some(events_tx),
            Arc::clone(&self.controls),
        ) {
            Ok(receiver) => {
                let addr = receiver.local_addr();
                self.receiver = Some(receiver);
                self.emit(Event::Receiver(ReceiverState::Running { addr }));
            }
            Err(e) => self.emit(Event::Receiver(ReceiverState::Failed(e.to_string()))),
        }
    }

    fn save_config(&mut self, file: ConfigFile) {
        let settings = match Settings::resolve(&file, &Overrides::default()) {
            Ok(s) => s,
            Err(e) => return self.emit(Event::Error(e.to_string())),
        };
        if let Err(e) = config::save_file(&self.options.config_path, &file) {
            return self.emit(Event::Error(e.to_string()));
        }
        match self.settings.write() {
            Ok(mut guard) => *guard = Arc::new(settings),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(settings),
        }
        self.config = file.clone();
        self.emit(Event::ConfigSaved(Box::new(file)));
        self.apply_retention();
    }

    fn current_settings(&self) -> Arc<Settings> {
        match self.settings.read() {
            Ok(guard) => Arc::clone(&guard),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    fn recheck(&mut self, id: i64) {
        let stored = match self.reader.get(id) {
            Ok(Some(stored)) => stored,
            Ok(None) => return,
            Err(e) => return self.emit(Event::Error(e.to_string())),
        };
        let settings = self.current_settings();
        let endpoint = settings.endpoint_for(&stored.delivery.path);
        let evaluation = checks::evaluate(
            &stored.delivery,
            endpoint,
            stored.delivery.received_at_ms.div_euclid(1000),
        );
        let task = Maintenance::Recheck {
            id,
            scheme: evaluation.scheme,
            signature: Box::new(evaluation.signature),
            timestamp: Box::new(evaluation.timestamp),
        };
        match self.store.writer().maintain_blocking(task) {
            Ok(_) => self.emit(Event::Rechecked { id }),
            Err(e) => self.emit(Event::Error(e.to_string())),
        }
    }

    fn maintain(&mut self, task: Maintenance, verb: &str) {
        match self.store.writer().maintain_blocking(task) {
            Ok(n) => {
                self.emit(Event::HistoryChanged);
                self.emit(Event::Notice(format!("{verb} {n} deliveries")));
            }
            Err(e) => self.emit(Event::Error(e.to_string())),
        }
    }

    fn apply_retention(&mut self) {
        let retention = &self.config.retention;
        if retention.max_days.is_none() && retention.max_deliveries.is_none() {
            return;
        }
        let task = Maintenance::Retain {
            max_age_ms: retention.max_days.map(|d| i64::from(d) * 86_400_000),
            max_count: retention
                .max_deliveries
                .map(|n| n.min(i64::MAX as u64) as i64),
            now_ms: (crate::now_ms() / 1000) * 1000,
        };
        match self.store.writer().maintain_blocking(task) {
            Ok(0) => {}
            Ok(n) => {
                self.emit(Event::HistoryChanged);
                self.emit(Event::Notice(format!(
                    "retention removed {n} old deliveries"
                )));
            }
            Err(e) => self.emit(Event::Error(e.to_string())),
        }
    }

    /// Makes sure the test endpoint exists (Standard Webhooks, a generated secret), signs a
    /// sample job event with it, and posts it to the running receiver.
    fn send_test_delivery(&mut self) {
        let Some(addr) = self.receiver.as_ref().map(Receiver::local_addr) else {
            return self.emit(Event::Error(
                "start the receiver first: the test delivery is sent to it".into(),
            ));
        };
        if !self
            .config
            .endpoints
            .iter()
            .any(|e| e.path == TEST_ENDPOINT)
        {
            let mut file = self.config.clone();
            file.endpoints.push(EndpointConfig {
                path: TEST_ENDPOINT.into(),
                scheme: Some("standard-webhooks".into()),
                secrets: vec![generate_secret()],
                ..EndpointConfig::new("/")
            });
            self.save_config(file);
        }
        let settings = self.current_settings();
        let endpoint = settings.endpoint_for(TEST_ENDPOINT);
        let (Some(scheme), false) = (endpoint.scheme.clone(), endpoint.secrets.is_empty()) else {
            return self.emit(Event::Error(format!(
                "the {TEST_ENDPOINT} endpoint needs a scheme and a secret"
            )));
        };
        self.test_counter += 1;
        let now = crate::now_ms() / 1000;
        let n = format!("{now}_{}", self.test_counter);
        let body = format!(
            r#"{{"id":"evt_test_{n}","type":"job.completed","created_at":{now},"data":{{"job_id":"job_test_{n}","status":"completed","result_url":"https://example.com/results/job_test_{n}"}}}}"#
        );
        let result = sign_and_post(
            addr,
            &scheme,
            &endpoint.secrets,
            &format!("msg_test_{n}"),
            now,
            &body,
        );
        match result {
            Ok(status) => self.emit(Event::Notice(format!(
                "test delivery sent: hookscope answered {status}"
            ))),
            Err(e) => self.emit(Event::Error(format!(
                "the test delivery could not be sent: {e}"
            ))),
        }
    }
}

/// A Standard Webhooks style secret: `whsec_` and 32 random bytes in base64.
pub fn generate_secret() -> Secret {
    let mut bytes = [0u8; 32];
    // The OS random source does not fail on the platforms we build for; if it ever did, an
    // all-zero key would be obvious in the config rather than silently weak.
    let _ = getrandom::fill(&mut bytes);
    Secret::new(format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    ))
}

/// Signs `body` and posts it over loopback HTTP/1.1; returns the response status.
fn sign_and_post(
    addr: SocketAddr,
    scheme: &Scheme,
    secrets: &[Secret],
    event_id: &str,
    timestamp: i64,
    body: &str,
) -> Result<u16, String> {
    let headers = scheme
        .sign(secrets, event_id, timestamp, body.as_bytes())
        .map_err(|e| e.to_string())?;
    let connect_to = if addr.ip().is_unspecified() {
        SocketAddr::new(IpAddr::from([127, 0, 0, 1]), addr.port())
    } else {
        addr
    };
    let mut stream = TcpStream::connect_timeout(&connect_to, Duration::from_secs(5))
        .map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let mut request = format!(
        "POST {TEST_ENDPOINT}/jobs HTTP/1.1\r\nHost: {connect_to}\r\nUser-Agent: hookscope-test\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    )
    .into_bytes();
    for h in headers {
        request.extend_from_slice(h.name.as_bytes());
        request.extend_from_slice(b": ");
        request.extend_from_slice(&h.value);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"\r\n");
    request.extend_from_slice(body.as_bytes());
    stream.write_all(&request).map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .map_err(|e| e.to_string())?;
    let status_line = String::from_utf8_lossy(&response);
    status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| "the receiver's answer was not HTTP".to_string())
}

//! The engine behind the desktop window: the receiver, the store and the config, driven by
//! commands and reporting back through events, on its own thread.
//!
//! The window never touches the network or the disk itself: it sends a [`Command`] and later
//! reads an [`Event`]. Events go through a bounded channel and each one calls the waker the
//! window gave (in practice `request_repaint`), so bursts are drawn in one frame. New deliveries
//! are not sent one by one: the engine bumps [`EngineHandle::latest_id`] and the window asks for
//! the rows it shows.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::domain::sync::Lock;
use std::sync::mpsc::{Receiver as StdReceiver, RecvTimeoutError, SyncSender, sync_channel};
use std::time::Duration;

use crate::app::capture::{HOUSEKEEPING_EVERY, Said, Session, SessionOptions};
use crate::app::export::ExportRequest;
use crate::app::probe::ProbeRequest;
use crate::app::resend::ResendRequest;
use crate::app::{self, AppError};
use crate::capture::Controls;
use crate::config::{self, ConfigFile, Overrides, Settings};
use crate::domain::attempt::Attempt;
use crate::domain::clock::now_ms;
use crate::domain::timeline::JobTimeline;
use crate::net::probe::ProbeReport;
use crate::store::{ListRow, Reader, StoredDelivery};

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
    /// Count every stored delivery, whatever the view shows (the status line).
    CountStored,
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
    Resend(ResendRequest),
    /// Compare two deliveries.
    Compare {
        /// The first.
        a: i64,
        /// The second.
        b: i64,
    },
    /// Compare a delivery with its partner: its event's first, its job's previous, its
    /// forwarded copy.
    CompareWith {
        /// The delivery.
        id: i64,
        /// Which partner.
        with: app::compare::With,
    },
    /// Confirm the subscription a handshake asks to confirm by its URL (SNS, Event Grid).
    Confirm {
        /// The handshake's delivery.
        id: i64,
        /// Confirm a URL that is not on the provider's own hosts.
        any_host: bool,
    },
    /// The outbound attempts made from a delivery.
    Attempts {
        /// The delivery.
        id: i64,
    },
    /// Run the receiver checklist against a handler.
    Probe(ProbeRequest),
    /// Write deliveries to a file or directory.
    Export(ExportRequest),
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
    /// *Copy as curl*: the command for this delivery, its body written to a file in the data
    /// dir when it is not text.
    CopyAsCurl(Box<crate::store::StoredDelivery>),
    /// Make this laptop's relay key (kept in the data dir, mode 0600), or read the one made.
    MakeRelayKey,
    /// Re-run the checks of one delivery with the current endpoints.
    Recheck {
        /// The delivery.
        id: i64,
    },
    /// Sign a sample job event for the test endpoint and post it to the receiver.
    SendTestDelivery,
    /// Send a contract's example of an event type to an endpoint, signed with its scheme.
    SendExample {
        /// The endpoint's path.
        endpoint: String,
        /// The event type.
        event_type: String,
    },
    /// Delete deliveries.
    Delete(Vec<i64>),
    /// Delete every delivery.
    ClearHistory,
    /// Start the provider simulator.
    StartSimulation(Box<app::simulate::SimulateRequest>),
    /// Stop it (its scorecard follows).
    StopSimulation,
    /// Replay a selection to a handler.
    Replay {
        /// What to replay.
        selection: app::replay::Selection,
        /// Where and how.
        request: Box<app::replay::ReplayRequest>,
    },
    /// Stop the running replay (its summary follows).
    StopReplay,
    /// Which forwarding conditions (`when`) a stored delivery meets, for the endpoint editor's
    /// *Test*.
    TestRules {
        /// The delivery.
        id: i64,
        /// The conditions as written.
        conditions: Vec<String>,
    },
    /// Ask the job API about one job, or every job seen in the last 24 hours, finished or not
    /// (*Check now*).
    Reconcile {
        /// The job (`None`: every quiet job, and the in-flight listing).
        job: Option<String>,
    },
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
    /// How many deliveries are stored, for [`Command::CountStored`], and how many of them met
    /// none of their endpoint's forwarding rules.
    Stored {
        /// Every stored delivery.
        total: i64,
        /// Those not forwarded for want of a rule they met.
        unrouted: i64,
    },
    /// Timelines for [`Command::Jobs`], most recently active first.
    Jobs {
        /// The query's generation.
        generation: u64,
        /// How many jobs the store knows in all.
        total: usize,
        /// The timelines.
        jobs: Vec<JobTimeline>,
    },
    /// The attempts of a delivery (after [`Command::Attempts`] or a resend).
    Attempts {
        /// The delivery.
        delivery_id: i64,
        /// Oldest first.
        attempts: Vec<Attempt>,
    },
    /// A probe's report, or why it could not run.
    Probed(Result<Box<ProbeReport>, String>),
    /// Two deliveries compared.
    Compared(Box<crate::domain::compare::Comparison>),
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
    ConfigSaved(Box<ConfigFile>, Arc<Settings>),
    /// The config the window asked to save does not resolve: why, for the editor to show.
    ConfigRefused(String),
    /// Delivery `id` as a curl command to copy, and the file its body was written to (a body
    /// that is not text).
    CurlReady {
        /// The delivery.
        id: i64,
        /// The command.
        command: String,
        /// The body's file, when one was written.
        body: Option<PathBuf>,
    },
    /// This laptop's relay key (its public half), for [`Command::MakeRelayKey`].
    RelayKey(String),
    /// A delivery's checks were re-run and stored.
    Rechecked {
        /// The delivery.
        id: i64,
    },
    /// The history changed other than by new deliveries (delete, clear, retention).
    HistoryChanged,
    /// The job API was asked; the jobs view should refresh.
    Reconciled,
    /// The simulator's state: progress, the latest attempts, the scorecard at the end.
    Simulation(Box<SimulationView>),
    /// A replay's progress, and its summary once it ended.
    Replay(Box<ReplayView>),
    /// Which conditions a delivery meets (`Command::TestRules`): one answer per condition, or
    /// why it cannot be decided.
    RulesTested {
        /// The delivery.
        id: i64,
        /// Per condition: met or not, or the reason it cannot be decided.
        results: Vec<Result<bool, String>>,
    },
    /// A contract file changed and its endpoints now check against it: the sentence.
    ContractChanged(String, Arc<Settings>),
    /// Something the user should read in the status line.
    Notice(String),
    /// Something went wrong; the sentence says what.
    Error(String),
    /// The simulator refused the Simulate form's request: the form says why beside the field
    /// [`app::Refused::field`] names.
    SimulationRefused(app::Refused),
    /// A use case refused the request: the window says `refused` in its own terms, after
    /// `context` (empty, or what was being done); [`app::Refused::field`] names the input.
    Refused {
        /// What was being done, as the start of the sentence (may be empty).
        context: &'static str,
        /// The refusal.
        refused: app::Refused,
    },
}

/// Why something ended without a result: a sentence, or a refusal the window words.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The sentence says what went wrong.
    Said(String),
    /// A use case refused the request.
    Refused(app::Refused),
}

impl From<AppError> for Failure {
    fn from(e: AppError) -> Self {
        match e {
            AppError::Refused(refused) => Failure::Refused(refused),
            other => Failure::Said(other.to_string()),
        }
    }
}

impl Event {
    /// The event for a use case's error: a refusal for the window to word, else its sentence
    /// after `context`.
    fn failed(context: &'static str, e: AppError) -> Event {
        match e {
            AppError::Refused(refused) => Event::Refused { context, refused },
            other => Event::Error(format!("{context}{other}")),
        }
    }
}

/// What the Simulate view shows of a run.
#[derive(Debug, Clone)]
pub struct SimulationView {
    /// The job API's URL.
    pub api: String,
    /// Counts so far.
    pub progress: app::simulate::Progress,
    /// The latest attempts, newest first.
    pub recent: Vec<crate::domain::sim::world::Sent>,
    /// The scorecard, once the run ended.
    pub scorecard: Option<Vec<crate::domain::sim::Check>>,
    /// Whether it is still running.
    pub running: bool,
}

/// What the window shows of a replay.
#[derive(Debug, Clone)]
pub struct ReplayView {
    /// Where it goes (a password in it masked).
    pub url: String,
    /// Counts, rate, time left.
    pub snapshot: app::replay::Snapshot,
    /// The summary, once it ended.
    pub summary: Option<app::replay::Summary>,
    /// Why it ended without a summary (nothing could be sent).
    pub failed: Option<Failure>,
}

/// The window's side of the engine.
pub struct EngineHandle {
    commands: SyncSender<Command>,
    events: StdReceiver<Event>,
    /// The id of the newest stored delivery; the window re-queries when it changes.
    pub latest_id: Arc<AtomicI64>,
    /// The receiver's switches (forward, mirror, fail next N), flipped directly by the window.
    pub controls: Arc<Controls>,
    /// The config as loaded at start.
    pub config: ConfigFile,
    /// That config resolved (its schemes, its contracts read): the window never resolves one
    /// itself, since resolving reads contract files.
    pub settings: Arc<Settings>,
    /// The data directory.
    pub data_dir: PathBuf,
    /// The config file.
    pub config_path: PathBuf,
    /// Whether the store takes writes now (the top bar says "disk full" and the like).
    pub health: Arc<crate::store::Health>,
    /// Set when the history was opened read-only (another hookscope captures into the data
    /// dir, or it cannot be written): the sentence that says so. Nothing is captured then.
    pub read_only: Option<String>,
    /// The relay subscription (`[relay]` in the config), once the engine started it: the top bar
    /// reads its state each frame.
    pub relay: Arc<RelaySlot>,
    /// This laptop's relay key (its public half), when one was made.
    pub relay_key: Option<String>,
}

/// Where the engine puts the relay subscription it started, for the window to read.
#[derive(Default)]
pub struct RelaySlot(Lock<Option<RelayView>>);

impl RelaySlot {
    /// The subscription now, when there is one.
    pub fn get(&self) -> Option<RelayView> {
        self.0.lock().clone()
    }

    fn set(&self, view: Option<RelayView>) {
        *self.0.lock() = view;
    }
}

/// The relay as the window shows it.
#[derive(Clone)]
pub struct RelayView {
    /// The subscribe URL.
    pub url: String,
    /// The public URL providers post to, when the config names it.
    pub public_url: Option<String>,
    /// The connection's state and counts, kept by the relay source.
    pub status: Arc<crate::net::relay::RelayStatus>,
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

/// The engine's state. Its fields drop in this order when the engine ends: a running
/// simulation and replay are stopped first (as *Stop* stops them), then the capture session.
struct Engine {
    /// The running (or last) simulation.
    simulation: Option<app::background::Background>,
    /// The running (or last) replay: its progress (its stop switch) and its thread.
    replay: Option<(Arc<app::replay::Progress>, app::background::Background)>,
    options: EngineOptions,
    /// The capture session, the same `listen` runs.
    session: Session,
    reader: Reader,
    events: SyncSender<Event>,
    waker: Waker,
    latest_id: Arc<AtomicI64>,
    test_counter: u64,
    relay: Arc<RelaySlot>,
}

/// Opens the config and the capture session, starts the engine thread and the receiver.
pub fn spawn(options: EngineOptions, waker: Waker) -> Result<EngineHandle, AppError> {
    let config = config::load_file(&options.config_path)?;
    let (session, said) = Session::open(SessionOptions {
        data_dir: options.data_dir.clone(),
        config: config.clone(),
        overrides: Overrides::default(),
        controls: Arc::new(crate::capture::Controls::default()),
        // The window shows the history another hookscope captures into.
        read_only_fallback: true,
    })?;
    let reader = session.store().reader()?;
    let latest = reader.list(1, None)?.first().map(|d| d.id).unwrap_or(0);
    let latest_id = Arc::new(AtomicI64::new(latest));
    let controls = Arc::clone(session.controls());
    let health = session.writer().health_handle();
    let read_only = session.read_only().map(str::to_string);
    let settings = session.settings().get();
    let (command_tx, command_rx) = sync_channel(256);
    let (event_tx, event_rx) = sync_channel(1024);
    if let Some(warning) = config::permission_warning(&options.config_path, &config) {
        let _ = event_tx.try_send(Event::Error(warning));
    }
    let mut engine = Engine {
        options: options.clone(),
        session,
        reader,
        events: event_tx,
        waker,
        latest_id: Arc::clone(&latest_id),
        test_counter: 0,
        simulation: None,
        replay: None,
        relay: Arc::default(),
    };
    let relay = Arc::clone(&engine.relay);
    let relay_key = app::relay::existing_key(&options.data_dir);
    for said in said {
        engine.say(said);
    }
    let port = app::paths::port(options.port, &config);
    engine.start_reconciler();
    std::thread::Builder::new()
        .name("hookscope-engine".into())
        .spawn(move || {
            engine.start_receiver(port);
            if let Some(said) = engine.session.apply_retention() {
                engine.say(said);
            }
            engine.run(command_rx);
        })
        .map_err(|e| AppError::Failed(format!("cannot start the engine thread: {e}")))?;
    Ok(EngineHandle {
        commands: command_tx,
        events: event_rx,
        latest_id,
        controls,
        config,
        settings,
        data_dir: options.data_dir,
        config_path: options.config_path,
        health,
        read_only,
        relay,
        relay_key,
    })
}

impl Engine {
    fn run(&mut self, commands: StdReceiver<Command>) {
        loop {
            match commands.recv_timeout(HOUSEKEEPING_EVERY) {
                Ok(command) => self.handle(command),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            for said in self.session.tick() {
                self.say(said);
            }
        }
    }

    /// What the capture session says, as the window shows it: a change in the store's health
    /// (disk full, space back) wakes the window, which draws it in the top bar; a changed
    /// contract re-checks the selected delivery.
    fn say(&self, said: Said) {
        match said {
            Said::Recovered(sentence) | Said::Failed(sentence) => self.emit(Event::Error(sentence)),
            // The top bar shows the relay's state as it is; the notice says what changed.
            Said::Relay(sentence) => self.emit(Event::Notice(sentence)),
            Said::Retained(n) => {
                self.emit(Event::HistoryChanged);
                self.emit(Event::Notice(format!(
                    "retention removed {n} old deliveries"
                )));
            }
            Said::Health(_) => (self.waker)(),
            Said::ContractApplied(sentence) => {
                let settings = self.current_settings();
                self.emit(Event::ContractChanged(sentence, settings));
            }
        }
    }

    fn emit(&self, event: Event) {
        let _ = self.events.send(event);
        (self.waker)();
    }

    /// [`Engine::emit`] for a thread of the engine's own: sends an event and wakes the window.
    fn sender(&self) -> impl Fn(Event) + Send + Clone + 'static {
        let (events, waker) = (self.events.clone(), Arc::clone(&self.waker));
        move |event| {
            let _ = events.send(event);
            waker();
        }
    }

    /// Emits the event a result makes, or the error's sentence.
    fn emit_result<T>(&self, result: Result<T, AppError>, event: impl FnOnce(T) -> Event) {
        match result {
            Ok(value) => self.emit(event(value)),
            Err(e) => self.emit(Event::failed("", e)),
        }
    }

    fn handle(&mut self, command: Command) {
        match command {
            Command::StartReceiver { port } => self.start_receiver(port),
            Command::StopReceiver => {
                self.session.stop_receiver();
                self.emit(Event::Receiver(ReceiverState::Stopped));
            }
            Command::Query {
                generation,
                filter,
                offset,
                limit,
            } => self.query(generation, &filter, offset, limit),
            Command::Jobs {
                generation,
                prefix,
                limit,
            } => self.jobs(generation, &prefix, limit),
            Command::Resend(request) => self.resend(request),
            Command::Confirm { id, any_host } => self.confirm(id, any_host),
            Command::Compare { a, b } => {
                let result = app::compare::compare(&self.reader, a, b);
                self.emit_result(result, |c| Event::Compared(Box::new(c)));
            }
            Command::CompareWith { id, with } => {
                let result = app::compare::compare_with(&self.reader, id, with);
                self.emit_result(result, |c| Event::Compared(Box::new(c)));
            }
            Command::CountStored => self.count_stored(),
            Command::Attempts { id } => {
                let result = self.reader.attempts_for(id).map_err(AppError::from);
                self.emit_result(result, |attempts| Event::Attempts {
                    delivery_id: id,
                    attempts,
                });
            }
            Command::Probe(request) => self.probe(request),
            Command::Export(request) => {
                match app::export::export(self.session.config(), &self.reader, &request) {
                    Ok(exported) => self.emit(Event::Notice(exported.summary())),
                    Err(e) => self.emit(Event::failed("export failed: ", e)),
                }
            }
            Command::ImportHar { path } => self.import_har(path),
            Command::Locate { id, filter } => {
                let position = app::list::locate(&self.reader, &filter, id);
                self.emit(Event::Located { id, position });
            }
            Command::Load { id } => self.load(id),
            Command::SaveConfig(file) => self.save_config(*file),
            Command::CopyAsCurl(stored) => self.copy_as_curl(&stored),
            Command::MakeRelayKey => {
                let key = app::relay::key(&self.options.data_dir);
                self.emit_result(key, |key| Event::RelayKey(key.recipient));
            }
            Command::Recheck { id } => self.recheck(id),
            Command::SendTestDelivery => self.send_test_delivery(),
            Command::SendExample {
                endpoint,
                event_type,
            } => self.send_example(&endpoint, &event_type),
            Command::Delete(ids) => {
                let done = app::history::delete(&self.session.writer(), ids);
                self.history_changed(done, "deleted");
            }
            Command::ClearHistory => {
                let done = app::history::clear(&self.session.writer());
                self.history_changed(done, "cleared");
            }
            Command::Reconcile { job } => self.reconcile(job),
            Command::StartSimulation(request) => self.start_simulation(*request),
            Command::StopSimulation => {
                if let Some(simulation) = &self.simulation {
                    simulation.ask_stop();
                }
            }
            Command::Replay { selection, request } => self.replay(selection, *request),
            Command::StopReplay => {
                if let Some((progress, _)) = &self.replay {
                    progress.stop("stopped in the window");
                }
            }
            Command::TestRules { id, conditions } => {
                let results = app::list::test_conditions(&self.reader, id, &conditions);
                self.emit(Event::RulesTested { id, results });
            }
        }
    }

    /// Every stored delivery, and how many met none of their forwarding rules (the status line).
    fn count_stored(&self) {
        let counted = self.reader.count().and_then(|total| {
            Ok(Event::Stored {
                total,
                unrouted: self.reader.count_unrouted()?,
            })
        });
        match counted {
            Ok(event) => self.emit(event),
            Err(e) => self.emit(Event::Error(e.to_string())),
        }
    }

    /// *Re-check*: delivery `id` checked again with the settings in use.
    fn recheck(&self, id: i64) {
        let settings = self.current_settings();
        match app::history::recheck(&self.reader, &self.session.writer(), &settings, id) {
            Ok(true) => self.emit(Event::Rechecked { id }),
            Ok(false) => {}
            Err(e) => self.emit(Event::Error(e.to_string())),
        }
    }

    /// A replay on a thread of its own (`app::background`): the selection is read (or stored,
    /// for fixtures and HAR files) here, then sent while the window watches its progress.
    fn replay(&mut self, selection: app::replay::Selection, request: app::replay::ReplayRequest) {
        if let Some((_, running)) = &self.replay
            && !running.is_finished()
        {
            return self.emit(Event::Error(
                "a replay is already running: stop it first".into(),
            ));
        }
        if let Err(e) = request.check() {
            return self.emit(Event::Error(e.to_string()));
        }
        let writer = self.session.writer();
        let ids =
            match app::replay::select(self.session.config(), &self.reader, &writer, &selection) {
                Ok(ids) => ids,
                Err(e) => return self.emit(Event::Error(e.to_string())),
            };
        if matches!(
            selection,
            app::replay::Selection::Fixtures(_) | app::replay::Selection::Har(_)
        ) {
            self.emit(Event::HistoryChanged);
        }
        let progress = app::replay::Progress::new(ids.len());
        let (config, path) = (
            self.session.config().clone(),
            self.session.store().path().to_path_buf(),
        );
        let send = self.sender();
        let watched = Arc::clone(&progress);
        let spawned = app::background::spawn("hookscope-replay", move |mut stop| async move {
            let progress = watched;
            let view = |summary: Option<app::replay::Summary>, failed: Option<Failure>| {
                Event::Replay(Box::new(ReplayView {
                    url: crate::domain::delivery::masked_url(&request.url),
                    snapshot: progress.snapshot(),
                    summary,
                    failed,
                }))
            };
            // The window's *Stop* stops it through its progress, as Ctrl+C does `replay`.
            let run = app::replay::run(
                &config,
                &path,
                &writer,
                &ids,
                &request,
                Arc::clone(&progress),
            );
            tokio::pin!(run);
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            let mut closing = false;
            let summary = loop {
                tokio::select! {
                    summary = &mut run => break summary,
                    _ = tick.tick() => send(view(None, None)),
                    // The window is closing: stop as *Stop* does, the attempts on the wire
                    // recorded.
                    () = stop.stopped(), if !closing => {
                        closing = true;
                        progress.stop("the window closed");
                    }
                }
            };
            match summary {
                Ok(summary) => {
                    // The status line's share: the counts (the window has the rest).
                    let notice = format!(
                        "replayed {} of {}: {}",
                        summary.outcomes.len(),
                        summary.selected,
                        summary.counts()
                    );
                    send(view(Some(summary), None));
                    send(Event::Notice(notice));
                }
                Err(e) => send(view(None, Some(e.into()))),
            }
        });
        match spawned {
            Ok(running) => self.replay = Some((progress, running)),
            Err(e) => self.emit(Event::Error(format!("cannot start the replay: {e}"))),
        }
    }

    fn history_changed(&self, done: Result<usize, AppError>, verb: &str) {
        match done {
            Ok(n) => {
                self.emit(Event::HistoryChanged);
                self.emit(Event::Notice(format!("{verb} {n} deliveries")));
            }
            Err(e) => self.emit(Event::Error(e.to_string())),
        }
    }

    /// Runs outbound work on its own thread (`app::background`), so queries keep flowing while
    /// a handler is slow; the events it ends with go to the window.
    fn spawn_outbound<Fut>(&self, work: impl FnOnce() -> Fut + Send + 'static)
    where
        Fut: std::future::Future<Output = Vec<Event>>,
    {
        let send = self.sender();
        match app::background::spawn("hookscope-send", move |_| async move {
            work().await.into_iter().for_each(send);
        }) {
            Ok(sending) => sending.detach(),
            Err(e) => self.emit(Event::Error(format!("cannot start the sender: {e}"))),
        }
    }

    /// A page of the list under a filter.
    fn query(&mut self, generation: u64, filter: &str, offset: usize, limit: usize) {
        match app::list::page(&self.reader, filter, offset, limit) {
            Ok(page) => self.emit(Event::Page {
                generation,
                offset: page.offset,
                total: page.total,
                rows: page.rows,
            }),
            Err(e) => self.emit(Event::QueryFailed {
                generation,
                message: e.to_string(),
            }),
        }
    }

    /// The most recent jobs whose id starts with `prefix`, with the count of all.
    fn jobs(&mut self, generation: u64, prefix: &str, limit: usize) {
        let stuck_after_ms = app::jobs::stuck_after_ms(None, self.session.config());
        let now = (now_ms() / 1000) * 1000;
        let result = app::jobs::recent(&self.reader, prefix, limit, now, stuck_after_ms)
            .and_then(|jobs| Ok((app::jobs::count(&self.reader)?, jobs)));
        self.emit_result(result, |(total, jobs)| Event::Jobs {
            generation,
            total,
            jobs,
        });
    }

    /// One delivery, whole, for the detail pane.
    fn load(&mut self, id: i64) {
        let result = app::list::delivery(&self.reader, id).map_err(|e| match e {
            AppError::Usage(_) => {
                AppError::Usage(format!("delivery #{id} is no longer in the store"))
            }
            other => other,
        });
        let loaded = result.is_ok();
        self.emit_result(result, |stored| Event::Loaded(Box::new(stored)));
        // Its attempts too: the detail pane and "copy as JSON" show them.
        if loaded && let Ok(attempts) = self.reader.attempts_for(id) {
            self.emit(Event::Attempts {
                delivery_id: id,
                attempts,
            });
        }
    }

    fn confirm(&mut self, id: i64, any_host: bool) {
        let confirmation = match app::confirm::prepare(&self.reader, id, any_host) {
            Ok(confirmation) => confirmation,
            Err(e) => return self.emit(Event::failed("", e)),
        };
        let writer = self.session.writer();
        let path = self.session.store().path().to_path_buf();
        self.spawn_outbound(move || async move {
            let mut out = Vec::new();
            match app::confirm::send(&confirmation, &writer).await {
                Ok(attempt) if attempt.succeeded() => out.push(Event::Notice(
                    app::confirm::summary(&confirmation, &attempt),
                )),
                Ok(attempt) => {
                    out.push(Event::Error(app::confirm::summary(&confirmation, &attempt)))
                }
                Err(e) => out.push(Event::Error(e.to_string())),
            }
            out.extend(attempts_event(&path, id));
            out
        });
    }

    fn resend(&mut self, request: ResendRequest) {
        let prepared = match app::resend::prepare(self.session.config(), &self.reader, &request) {
            Ok(prepared) => prepared,
            Err(e) => return self.emit(Event::failed("", e)),
        };
        let writer = self.session.writer();
        let path = self.session.store().path().to_path_buf();
        self.spawn_outbound(move || async move {
            let id = prepared.delivery_id;
            let mut out = Vec::new();
            match app::resend::send(&prepared, &writer).await {
                Ok(attempt) if attempt.status.is_some() => {
                    out.push(Event::Notice(app::resend::summary(&prepared, &attempt)))
                }
                Ok(attempt) => out.push(Event::Error(app::resend::summary(&prepared, &attempt))),
                Err(e) => out.push(Event::Error(e.to_string())),
            }
            out.extend(attempts_event(&path, id));
            out
        });
    }

    /// The background reconciler: a pass at start-up, then one a minute, on its own thread
    /// (nothing to do when no endpoint has a job API). It works on the endpoints as they were
    /// at start; `Check now` uses the saved ones.
    fn start_reconciler(&mut self) {
        let send = self.sender();
        let started = self.session.start_reconciler(move |sentence| {
            send(Event::Notice(sentence));
            send(Event::Reconciled);
        });
        if let Err(e) = started {
            self.emit(Event::Error(format!("cannot start the reconciler: {e}")));
        }
    }

    /// Starts the provider simulator on its own thread; it reports its progress every 250 ms
    /// and its scorecard when every job ended (or when stopped).
    fn start_simulation(&mut self, request: app::simulate::SimulateRequest) {
        if self.simulation.as_ref().is_some_and(|s| !s.is_finished()) {
            return self.emit(Event::Error(
                "a simulation is already running: stop it first".into(),
            ));
        }
        let prepared = match app::simulate::prepare(self.session.config(), &request) {
            Ok(p) => p,
            Err(app::AppError::Refused(refused)) => {
                return self.emit(Event::SimulationRefused(refused));
            }
            Err(e) => return self.emit(Event::failed("", e)),
        };
        let writer = self.session.writer();
        let send = self.sender();
        let spawned =
            app::background::spawn_on_workers("hookscope-simulate", 2, move |stop| async move {
                let running = match app::simulate::start(prepared, writer).await {
                    Ok(r) => r,
                    Err(e) => return send(Event::failed("", e)),
                };
                let api = format!("http://{}", running.api_addr);
                let view =
                    |running: &app::simulate::Running,
                     scorecard: Option<Vec<crate::domain::sim::Check>>| {
                        let recent = (running.world.lock().recent.iter().rev().take(60))
                            .cloned()
                            .collect();
                        SimulationView {
                            api: api.clone(),
                            progress: running.progress(),
                            recent,
                            running: scorecard.is_none(),
                            scorecard,
                        }
                    };
                loop {
                    let current = view(&running, None);
                    let finished = current.progress.finished;
                    send(Event::Simulation(Box::new(current)));
                    if finished || stop.is_stopped() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                let last = view(&running, Some(running.scorecard()));
                running.stop().await;
                send(Event::Simulation(Box::new(last)));
                send(Event::Reconciled);
            });
        match spawned {
            Ok(running) => self.simulation = Some(running),
            Err(e) => self.emit(Event::Error(format!("cannot start the simulator: {e}"))),
        }
    }

    /// *Check now*: asks the job API about one job or every job of the last 24 hours, with the
    /// saved endpoints.
    fn reconcile(&mut self, job: Option<String>) {
        let settings = Settings::clone(&self.session.settings().get());
        let writer = self.session.writer();
        let path = self.session.store().path().to_path_buf();
        let stuck = app::jobs::stuck_after_ms(None, self.session.config());
        // *Check now* asks about every recent job, finished or not: a finished job whose
        // webhook and API disagree is what it is there to find.
        let request = app::reconcile::ReconcileRequest {
            job,
            endpoint: None,
            which: app::reconcile::Which::on_demand(),
        };
        self.spawn_outbound(move || async move {
            let outcome =
                app::reconcile::reconcile(&settings, &path, &writer, &request, stuck).await;
            match outcome {
                Ok(reconciled) => {
                    let mut out: Vec<Event> = reconciled
                        .problems
                        .iter()
                        .map(|p| Event::Error(p.clone()))
                        .collect();
                    out.push(Event::Notice(app::reconcile::summary(&reconciled)));
                    out.push(Event::Reconciled);
                    out
                }
                Err(e) => vec![Event::failed("", e)],
            }
        });
    }

    fn import_har(&mut self, path: PathBuf) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match app::export::import_har(self.session.config(), &self.session.writer(), &path) {
            Ok(ids) => {
                let n = ids.len();
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

    fn probe(&mut self, request: ProbeRequest) {
        let prepared = match app::probe::prepare(self.session.config(), request) {
            Ok(prepared) => prepared,
            Err(e) => return self.emit(Event::Probed(Err(e.to_string()))),
        };
        self.spawn_outbound(move || async move {
            let report = app::probe::run(&prepared).await;
            vec![Event::Probed(
                report.map(Box::new).map_err(|e| e.to_string()),
            )]
        });
    }

    fn start_receiver(&mut self, port: u16) {
        if let Some(sentence) = self.session.read_only() {
            let failed = ReceiverState::Failed(sentence.to_string());
            return self.emit(Event::Receiver(failed));
        }
        let (events_tx, mut events_rx) = tokio::sync::mpsc::channel::<StoredDelivery>(1024);
        let latest = Arc::clone(&self.latest_id);
        let waker = Arc::clone(&self.waker);
        // Drain the receiver's events at once so it never waits on the window; the window
        // reads rows from the store when it sees the newest id move (a stored delivery is
        // committed: every reader sees it).
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
        match self
            .session
            .start_receiver(self.options.bind, port, Some(events_tx))
        {
            Ok(addr) => {
                self.emit(Event::Receiver(ReceiverState::Running { addr }));
                self.start_relay();
            }
            Err(e) => self.emit(Event::Receiver(ReceiverState::Failed(e.to_string()))),
        }
    }

    /// Subscribes to the relay `[relay]` names, as `listen --relay` does (the receiver's pipeline
    /// takes its deliveries, so it starts and stops with the receiver).
    fn start_relay(&mut self) {
        self.session.stop_relay();
        self.relay.set(None);
        let relay = self.session.config().relay.clone();
        let flags = app::relay::RelayFlags::default();
        let subscription = match app::relay::subscription(&self.options.data_dir, &relay, &flags) {
            Ok(Some(subscription)) => subscription,
            Ok(None) => return,
            Err(e) => return self.emit(Event::Error(format!("relay: {e}"))),
        };
        let url = subscription.url.clone();
        match self.session.start_relay(subscription) {
            Ok(status) => {
                let view = RelayView {
                    url,
                    public_url: relay.public_url,
                    status,
                };
                self.relay.set(Some(view));
                (self.waker)();
            }
            Err(e) => self.emit(Event::Error(format!("relay: {e}"))),
        }
    }

    /// *Copy as curl*: the command, a body that is not text written to `exports/` in the data dir.
    fn copy_as_curl(&self, stored: &crate::store::StoredDelivery) {
        let dir = self.options.data_dir.join("exports");
        match crate::export::curl_to_copy(stored, &dir) {
            Ok((command, body)) => self.emit(Event::CurlReady {
                id: stored.id,
                command,
                body,
            }),
            Err(e) => self.emit(Event::Error(format!(
                "cannot write the body of delivery #{} in {}: {e}",
                stored.id,
                dir.display()
            ))),
        }
    }

    fn save_config(&mut self, file: ConfigFile) {
        if let Err(e) = Settings::resolve(&file, &Overrides::default()) {
            return self.emit(Event::ConfigRefused(e.to_string()));
        }
        if let Err(e) = config::save_file(&self.options.config_path, &file) {
            return self.emit(Event::Error(e.to_string()));
        }
        let relay_changed = self.session.config().relay != file.relay;
        match self.session.replace_config(file.clone()) {
            Ok(said) => {
                if relay_changed && self.session.receiver_addr().is_some() {
                    self.start_relay();
                }
                let settings = self.current_settings();
                self.emit(Event::ConfigSaved(Box::new(file), settings));
                if let Some(said) = said {
                    self.say(said);
                }
            }
            Err(e) => self.emit(Event::Error(e.to_string())),
        }
    }

    fn current_settings(&self) -> Arc<Settings> {
        self.session.settings().get()
    }

    fn send_example(&mut self, endpoint: &str, event_type: &str) {
        let Some(addr) = self.session.receiver_addr() else {
            return self.emit(Event::Error(
                "start the receiver first: the example is sent to it".into(),
            ));
        };
        let settings = self.current_settings();
        match app::test_delivery::send_example(&settings, addr, endpoint, event_type) {
            Ok(status) => self.emit(Event::Notice(format!(
                "the contract's {event_type} sent to {endpoint}: hookscope answered {status}"
            ))),
            Err(e) => self.emit(Event::Error(format!("the example could not be sent: {e}"))),
        }
    }

    fn send_test_delivery(&mut self) {
        let Some(addr) = self.session.receiver_addr() else {
            return self.emit(Event::Error(
                "start the receiver first: the test delivery is sent to it".into(),
            ));
        };
        if let Some(file) = app::test_delivery::with_test_endpoint(self.session.config()) {
            self.save_config(file);
        }
        self.test_counter += 1;
        let settings = self.current_settings();
        match app::test_delivery::send(&settings, addr, self.test_counter) {
            Ok(status) => self.emit(Event::Notice(format!(
                "test delivery sent: hookscope answered {status}"
            ))),
            Err(e) => self.emit(Event::Error(format!(
                "the test delivery could not be sent: {e}"
            ))),
        }
    }
}

/// The attempts of delivery `id` as they are stored now, for the Resend tab after an outbound
/// request (a resend, a confirmation).
fn attempts_event(path: &std::path::Path, id: i64) -> Option<Event> {
    let attempts = Reader::open(path).and_then(|r| r.attempts_for(id)).ok()?;
    Some(Event::Attempts {
        delivery_id: id,
        attempts,
    })
}

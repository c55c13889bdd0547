//! The desktop window. Each panel is a type in its own file that owns its state; what they share
//! is in `shared`. This file holds the panels, drains the engine's events with a time budget and
//! routes each to the panels it concerns, delivers the panels' messages, and lays them out.
//!
//! The window never waits on I/O: it sends [`Command`]s to the engine and draws whatever it has.
//! The list holds a window of rows around what is visible, fetched from the store by position.

mod detail;
mod empty;
mod endpoints;
mod export;
mod jobs;
mod list;
mod refusals;
mod replay;
mod send;
mod shared;
mod simulate;
mod status;
#[cfg(test)]
mod tests;
mod timeline;
mod top_bar;
mod widgets;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use eframe::egui;
use hookscope::engine::{self, Command, EngineOptions, Event};
use serde::{Deserialize, Serialize};
use shared::{Msg, Shared, Window};

/// When the process started, for `HOOKSCOPE_TRACE_STARTUP`.
static PROCESS_START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

/// Records the process start; `HOOKSCOPE_TRACE_STARTUP=1` then prints when the first rows show.
pub fn mark_process_start() {
    let _ = PROCESS_START.set(Instant::now());
}

/// `HOOKSCOPE_TRACE_FRAMES=1`: the CPU time of every frame's update (hookscope's own work:
/// events, queries answered, layout; not the GPU's painting), summed up on stderr every 10 s
/// for the soak and the benchmarks.
#[derive(Debug)]
struct FrameTrace {
    frames_ms: Vec<f32>,
    since_print: usize,
    printed_at: Instant,
}

impl FrameTrace {
    fn from_env() -> Option<FrameTrace> {
        std::env::var_os("HOOKSCOPE_TRACE_FRAMES").map(|_| FrameTrace {
            frames_ms: Vec::new(),
            since_print: 0,
            printed_at: Instant::now(),
        })
    }

    fn record(&mut self, took: Duration) {
        self.frames_ms.push(took.as_secs_f32() * 1000.0);
        self.since_print += 1;
        if self.printed_at.elapsed() >= Duration::from_secs(10) {
            let at = |all: &mut Vec<f32>, q: f64| {
                all.sort_by(f32::total_cmp);
                all.get(((all.len().max(1) - 1) as f64 * q).round() as usize)
                    .copied()
                    .unwrap_or(0.0)
            };
            let mut recent = self.frames_ms[self.frames_ms.len() - self.since_print..].to_vec();
            let mut all = self.frames_ms.clone();
            eprintln!(
                "hookscope: frames: last 10 s {} p99 {:.2} ms max {:.2} ms; all {} p50 {:.2} ms p99 {:.2} ms max {:.2} ms",
                recent.len(),
                at(&mut recent, 0.99),
                at(&mut recent, 1.0),
                all.len(),
                at(&mut all, 0.5),
                at(&mut all, 0.99),
                at(&mut all, 1.0)
            );
            self.since_print = 0;
            self.printed_at = Instant::now();
        }
    }
}

/// How long one frame may spend reading engine events.
const EVENT_BUDGET: Duration = Duration::from_millis(4);

/// Which list the window shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum View {
    /// Every delivery.
    #[default]
    Deliveries,
    /// Async jobs and their timelines.
    Jobs,
    /// The provider simulator.
    Simulate,
}

/// What is remembered between runs (the layout and the filter, not the data).
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct UiState {
    /// The filter text.
    pub filter: String,
    /// The detail pane's tab.
    pub detail_tab: detail::Tab,
    /// How the body is shown.
    pub body_view: detail::BodyView,
    /// Deliveries or jobs.
    pub view: View,
    /// Times in UTC rather than local time.
    pub utc: bool,
}

/// The hookscope window: the panels, what they share, and the frame's own bookkeeping.
pub struct HookscopeApp {
    pub shared: Shared,
    pub top_bar: top_bar::TopBar,
    pub list: list::List,
    pub detail: detail::Detail,
    pub jobs: jobs::JobsState,
    pub simulate: simulate::SimulateForm,
    pub replay: replay::ReplayForm,
    pub export: export::ExportForm,
    pub probe: send::ProbeForm,
    pub endpoints: endpoints::Editor,
    pub status: status::StatusLine,
    /// `HOOKSCOPE_TRACE_FRAMES`: each frame's CPU time.
    frame_trace: Option<FrameTrace>,
    /// Whether `HOOKSCOPE_TRACE_STARTUP`'s line was printed (or not asked for).
    startup_traced: bool,
}

impl HookscopeApp {
    /// Starts the engine (receiver and store) and builds the window's state.
    pub fn new(
        ctx: &egui::Context,
        options: EngineOptions,
        state: UiState,
    ) -> anyhow::Result<Self> {
        let repaint_ctx = ctx.clone();
        let waker: engine::Waker =
            Arc::new(move || repaint_ctx.request_repaint_after(Duration::from_millis(10)));
        let engine = engine::spawn(options, waker)?;
        let port = engine
            .config
            .receiver
            .port
            .unwrap_or(hookscope::config::DEFAULT_PORT);
        let endpoints = endpoints::Editor::new(engine.config.clone(), engine.relay_key.clone());
        let latest = engine.latest_id.load(Ordering::SeqCst);
        Ok(Self {
            shared: Shared::new(ctx, engine, state.view, state.filter, state.utc),
            top_bar: top_bar::TopBar::new(port),
            list: list::List::new(latest),
            detail: detail::Detail::new(state.detail_tab, state.body_view),
            jobs: jobs::JobsState::default(),
            simulate: simulate::SimulateForm::default(),
            replay: replay::ReplayForm::default(),
            export: export::ExportForm::default(),
            probe: send::ProbeForm::default(),
            endpoints,
            status: status::StatusLine::new(latest),
            startup_traced: std::env::var_os("HOOKSCOPE_TRACE_STARTUP").is_none(),
            frame_trace: FrameTrace::from_env(),
        })
    }

    /// What is remembered between runs.
    pub fn ui_state(&self) -> UiState {
        UiState {
            filter: self.shared.filter.clone(),
            detail_tab: self.detail.tab,
            body_view: self.detail.body_view,
            view: self.shared.view,
            utc: self.shared.utc,
        }
    }

    fn drain_events(&mut self) {
        let started = Instant::now();
        while started.elapsed() < EVENT_BUDGET {
            let Some(event) = self.shared.engine.try_recv() else {
                break;
            };
            self.apply(event);
        }
        let latest = self.shared.engine.latest_id.load(Ordering::SeqCst);
        self.status.store_grew(latest);
        if self.list.store_grew(latest, &self.shared) {
            self.jobs.fresh = false;
        }
    }

    /// Routes an engine event to the panels it concerns.
    fn apply(&mut self, event: Event) {
        let shared = &mut self.shared;
        match event {
            Event::Receiver(state) => {
                self.top_bar.receiver_changed(&state);
                shared.receiver = state;
            }
            event @ (Event::Page { .. } | Event::QueryFailed { .. } | Event::Located { .. }) => {
                self.list.on_event(event, shared)
            }
            Event::Stored { total, unrouted } => self.status.counted(total, unrouted),
            event @ (Event::Jobs { .. } | Event::Reconciled) => self.jobs.on_event(event),
            Event::Attempts {
                delivery_id,
                attempts,
            } => {
                self.detail.attempts_loaded(delivery_id);
                shared.selection.attempts_loaded(delivery_id, attempts);
            }
            Event::Probed(report) => self.probe.finished(report),
            Event::Compared(comparison) => self.detail.comparison = Some(*comparison),
            Event::Loaded(stored) => self.loaded(stored),
            Event::RelayKey(key) => self.endpoints.relay_key = Some(key),
            Event::ConfigSaved(file, settings) => {
                self.endpoints.saved(*file, settings, shared);
                shared.notice("endpoints saved", false);
                // A changed secret or scheme applies to the delivery being read at once.
                recheck_selected(shared);
            }
            Event::Rechecked { id } => {
                self.list.cache.stale = true;
                if Some(id) == shared.selection.id {
                    shared.send(Command::Load { id });
                }
            }
            Event::HistoryChanged => {
                self.list.cache.stale = true;
                self.status.stored.stale = true;
                self.jobs.fresh = false;
                if let Some(id) = shared.selection.id {
                    shared.send(Command::Load { id });
                }
            }
            Event::Simulation(view) => self.simulated(*view),
            Event::Replay(view) => {
                if view.summary.is_some()
                    && let Some(id) = shared.selection.id
                {
                    // Attempts were added: the detail pane's list of them is out of date.
                    shared.send(Command::Attempts { id });
                }
                self.replay.reported(*view);
            }
            Event::RulesTested { id, results } => self.endpoints.rules_tested(id, results),
            Event::ContractChanged(text, settings) => {
                shared.notice(text, false);
                shared.saved.settings = settings;
                // As a changed secret: the delivery being read is checked again at once.
                recheck_selected(shared);
            }
            Event::Notice(text) => shared.notice(text, false),
            Event::Error(text) => shared.notice(text, true),
            Event::SimulationRefused(refused) => {
                if let Some(refused) = self.simulate.refused(refused) {
                    shared.notice(refusals::say(&refused), true);
                }
            }
            Event::Refused { context, refused } => {
                shared.notice(refusals::said(context, &refused), true)
            }
            Event::ConfigRefused(why) => self.endpoints.refused(why),
            Event::CurlReady { id, command, body } => {
                export::copied_curl(shared, id, command, body)
            }
        }
    }

    /// The selected delivery loaded: the detail pane shows it, and a copy waiting for it runs.
    fn loaded(&mut self, stored: Box<hookscope::store::StoredDelivery>) {
        let selection = &mut self.shared.selection;
        if Some(stored.id) != selection.id {
            return;
        }
        // The detail pane opening takes the lower half of the list: bring the row just chosen
        // back into view (a list following its newest rows kept its bottom in view and pushed
        // the row out of it).
        selection.scroll_to |= selection.loaded.is_none();
        selection.loaded = Some(stored);
        self.detail.loaded();
        self.list.run_pending_copy(&mut self.shared);
    }

    /// The simulator's report; at the end its scorecard is summed up in the status line.
    fn simulated(&mut self, view: hookscope::engine::SimulationView) {
        if let Some(card) = &view.scorecard {
            let failed = card
                .iter()
                .filter(|c| c.status == hookscope::domain::sim::Verdict::Fail)
                .count();
            self.shared.notice(
                format!(
                    "simulation finished: {failed} failed check(s) of {}",
                    card.len()
                ),
                false,
            );
            self.list.cache.stale = true;
        }
        self.simulate.view = Some(view);
    }

    /// Delivers the messages the panels left for each other this frame.
    fn route_messages(&mut self, ctx: &egui::Context) {
        for msg in self.shared.take_messages() {
            match msg {
                Msg::Open(Window::Export) => self.export.open = true,
                Msg::Open(Window::Probe) => self.probe.open = true,
                Msg::Open(Window::Endpoints) => self.endpoints.open = true,
                Msg::ConfirmDelete(ids) => self.list.confirm_delete = Some(ids),
                Msg::ShowJob(job_id) => self.jobs.show(job_id, &mut self.shared),
                Msg::DetailTab(tab) => self.detail.tab = tab,
                Msg::Replay(choice) => self.replay.open_on(choice),
                Msg::JobsStale => self.jobs.fresh = false,
                Msg::ImportHar => {
                    self.export
                        .open_dialog(ctx, &mut self.shared, export::DialogFor::Import)
                }
            }
        }
    }

    /// The window's own keys (Ctrl+Q, Ctrl+F, Esc), then the list's.
    fn keyboard(&mut self, ctx: &egui::Context) {
        let (quit, find, escape) = ctx.input(|i| {
            (
                i.modifiers.command && i.key_pressed(egui::Key::Q),
                i.modifiers.command && i.key_pressed(egui::Key::F),
                i.key_pressed(egui::Key::Escape),
            )
        });
        if quit {
            // Ctrl+Q (Cmd+Q) closes the window the way its close button does: state is saved.
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
        }
        if find {
            self.top_bar.focus_filter = true;
        }
        if escape {
            self.escape();
        }
        self.list.keyboard(ctx, &mut self.shared);
    }

    /// Esc: closes the topmost window, else dismisses an error, else clears the selection.
    fn escape(&mut self) {
        if self.list.confirm_delete.take().is_some() {
            return;
        }
        if self.status.about_open {
            self.status.about_open = false;
        } else if self.detail.comparison.is_some() {
            self.detail.comparison = None;
        } else if self.probe.open {
            self.probe.open = false;
        } else if self.export.open {
            self.export.open = false;
        } else if self.endpoints.open {
            self.endpoints.open = false;
        } else if self.shared.notice.as_ref().is_some_and(|n| n.error) {
            self.shared.notice = None;
        } else {
            self.shared.selection.clear();
        }
    }

    /// Draws the whole window into `ui` (the root).
    pub fn draw(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        self.drain_events();
        self.status.request_count(&ctx, &mut self.shared);
        self.keyboard(&ctx);
        // Before the status line is drawn, so the frame that drops a faded notice draws none.
        status::fade_notice(&ctx, &mut self.shared);
        let list_error = self.list.cache.error.clone();
        egui::Panel::top("top_bar").show(ui, |ui| {
            self.top_bar.ui(ui, &mut self.shared, list_error.as_deref())
        });
        let listed = self.list.total();
        egui::Panel::bottom("status_line")
            .show(ui, |ui| self.status.ui(ui, &mut self.shared, listed));
        match self.shared.view {
            View::Simulate => {
                egui::CentralPanel::default().show(ui, |ui| self.simulate.ui(ui, &mut self.shared));
                self.route_messages(&ctx);
                self.endpoints.window(&ctx, &mut self.shared);
            }
            View::Jobs => self.draw_jobs(ui, &ctx),
            View::Deliveries => self.draw_deliveries(ui, &ctx),
        }
        self.route_messages(&ctx);
    }

    /// The jobs view: the selected job's timeline under the jobs table.
    fn draw_jobs(&mut self, ui: &mut egui::Ui, ctx: &egui::Context) {
        self.jobs.timeline_panel(ui, &mut self.shared);
        egui::CentralPanel::default().show(ui, |ui| self.jobs.ui(ui, &mut self.shared));
        self.route_messages(ctx);
        self.endpoints.window(ctx, &mut self.shared);
        self.probe.window(ctx, &mut self.shared);
        self.jobs.request_jobs(ctx, &mut self.shared);
        if self.jobs.in_flight {
            ctx.request_repaint_after(Duration::from_millis(30));
        }
    }

    /// The deliveries view: the list (or the empty state), the detail pane, and its windows.
    fn draw_deliveries(&mut self, ui: &mut egui::Ui, ctx: &egui::Context) {
        let shared = &mut self.shared;
        let has_history = self.list.has_history(shared);
        if has_history && shared.selection.id.is_some() {
            egui::Panel::bottom("detail")
                .resizable(true)
                .default_size(360.0)
                .min_size(160.0)
                .show(ui, |ui| self.detail.ui(ui, shared));
        }
        egui::CentralPanel::default().show(ui, |ui| {
            if has_history {
                self.list.ui(ui, shared);
            } else {
                empty::empty_ui(ui, shared);
            }
        });
        self.route_messages(ctx);
        let shared = &mut self.shared;
        self.endpoints.window(ctx, shared);
        self.probe.window(ctx, shared);
        self.export.window(ctx, shared);
        self.detail.compare_window(ctx, shared);
        self.replay.window(ctx, shared, self.list.total());
        self.status.about_window(ctx, shared);
        self.list.confirm_delete_window(ctx, shared);
        self.export.poll_dialog(shared);
        if !self.startup_traced && self.list.cache.loaded {
            self.startup_traced = true;
            if let Some(start) = PROCESS_START.get() {
                eprintln!(
                    "hookscope: first frame with rows {} ms after start ({} deliveries)",
                    start.elapsed().as_millis(),
                    self.list.total()
                );
            }
        }
        self.list.request_rows(shared);
        if self.list.cache.in_flight {
            ctx.request_repaint_after(Duration::from_millis(30));
        }
    }
}

/// Checks the selected delivery again (after a change of secrets, schemes or contracts).
fn recheck_selected(shared: &mut Shared) {
    if let Some(id) = shared.selection.id {
        shared.send(Command::Recheck { id });
    }
}

impl eframe::App for HookscopeApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        let started = Instant::now();
        self.draw(ui);
        if let Some(trace) = &mut self.frame_trace {
            trace.record(started.elapsed());
        }
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, eframe::APP_KEY, &self.ui_state());
    }
}

/// How long the window has to close after a signal before the process ends anyway.
#[cfg(unix)]
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// Closes the window the way its close button does when the process is asked to terminate
/// (SIGTERM: a logout, `systemctl`, a task manager; SIGINT: Ctrl+C in the terminal that started
/// it): eframe saves the window's state and [`run`] returns, so hookscope exits 0. Where there
/// are no such signals (Windows), the system closes the window through its own messages.
fn close_on_terminate(ctx: egui::Context) {
    #[cfg(unix)]
    {
        let watch = move || {
            use tokio::signal::unix::{SignalKind, signal};
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .enable_time()
                .build()
            else {
                return;
            };
            runtime.block_on(async {
                let (Ok(mut term), Ok(mut int)) = (
                    signal(SignalKind::terminate()),
                    signal(SignalKind::interrupt()),
                ) else {
                    return;
                };
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
                ctx.send_viewport_cmd(egui::ViewportCommand::Close);
                ctx.request_repaint();
                // Handling the signals replaced their default action for the whole process: a
                // second one, or a window that has not closed in time (one that draws no frames
                // while minimised), ends the process, so it can always be stopped.
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                    () = tokio::time::sleep(CLOSE_GRACE) => {
                        eprintln!(
                            "hookscope: the window did not close within {} s of the signal; exiting",
                            CLOSE_GRACE.as_secs()
                        );
                    }
                }
                std::process::exit(0);
            });
        };
        if let Err(e) = std::thread::Builder::new()
            .name("hookscope-signals".into())
            .spawn(watch)
        {
            eprintln!(
                "hookscope: cannot watch for SIGTERM ({e}); the window state is saved when it is closed"
            );
        }
    }
    #[cfg(not(unix))]
    let _ = ctx;
}

/// The file in the data dir where the window keeps its layout, filter and tabs.
pub const WINDOW_STATE_FILE: &str = "window.ron";

/// Opens the window on the given data dir and runs until it is closed.
pub fn run(options: EngineOptions) -> anyhow::Result<()> {
    if std::env::var_os("DISPLAY").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none() {
        anyhow::bail!(
            "no display available (neither DISPLAY nor WAYLAND_DISPLAY is set): use `hookscope listen` for the headless receiver"
        );
    }
    let mut viewport = egui::ViewportBuilder::default()
        .with_title("hookscope")
        .with_app_id("dev.hookscope.hookscope")
        .with_inner_size([1280.0, 820.0])
        .with_min_inner_size([760.0, 480.0]);
    if let Ok(icon) =
        eframe::icon_data::from_png_bytes(include_bytes!("../../assets/icons/hookscope-256.png"))
    {
        viewport = viewport.with_icon(icon);
    }
    let native = eframe::NativeOptions {
        viewport,
        // The window's layout, filter and tabs live beside the store, so `--data-dir` moves
        // everything hookscope writes.
        persistence_path: Some(options.data_dir.join(WINDOW_STATE_FILE)),
        ..Default::default()
    };
    eframe::run_native(
        "hookscope",
        native,
        Box::new(move |cc| {
            let state: UiState = cc
                .storage
                .and_then(|s| eframe::get_value(s, eframe::APP_KEY))
                .unwrap_or_default();
            // Watched before the engine starts, so a signal during start-up closes it too.
            close_on_terminate(cc.egui_ctx.clone());
            let app = HookscopeApp::new(&cc.egui_ctx, options, state)?;
            Ok(Box::new(app))
        }),
    )
    .map_err(|e| {
        anyhow::anyhow!(
            "the window could not open ({e}): check the display and its OpenGL drivers, or use `hookscope listen` for the headless receiver"
        )
    })
}

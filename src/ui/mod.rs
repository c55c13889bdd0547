//! The desktop window. Each panel is its own file; this one holds the app state, drains the
//! engine's events with a time budget, and lays the panels out.
//!
//! The window never waits on I/O: it sends [`Command`]s to the engine and draws whatever it has.
//! The list holds a window of rows around what is visible, fetched from the store by position.

mod detail;
mod empty;
mod endpoints;
mod export;
mod jobs;
mod list;
mod replay;
mod send;
mod simulate;
#[cfg(test)]
mod tests;
mod top_bar;
mod widgets;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use eframe::egui;
use hookscope::domain::fmt::Zone;
use hookscope::engine::{self, Command, EngineHandle, EngineOptions, Event, ReceiverState};
use hookscope::store::{ListRow, StoredDelivery};
use serde::{Deserialize, Serialize};

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

/// Rows fetched beyond each side of the visible ones.
const PREFETCH_PAD: usize = 300;

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

/// The rows the list holds, around what is visible.
#[derive(Debug, Default)]
struct ListCache {
    /// The generation of the newest query sent.
    generation: u64,
    /// Whether a query is waiting for its answer.
    in_flight: bool,
    /// The filter the cached rows were fetched with.
    filter: String,
    /// Rows matching the filter, in all.
    total: usize,
    /// The position of `rows[0]`.
    offset: usize,
    rows: Vec<ListRow>,
    /// The store changed since the rows were fetched.
    stale: bool,
    /// Whether any answer has arrived yet.
    loaded: bool,
    /// The filter's error, if it has one.
    error: Option<String>,
    /// The visible positions in the last frame.
    visible: std::ops::Range<usize>,
    /// A position to bring into view on the next frame.
    scroll_to: Option<usize>,
    /// The list follows its newest rows and the total just changed: this frame's visible rows
    /// are a scroll position about to move to the end.
    settling: bool,
}

/// How many deliveries the store holds, whatever the view: the status line's count.
#[derive(Debug, Default)]
struct StoredCount {
    /// The last answer (`None` before the first).
    total: Option<i64>,
    /// How many of them met none of their endpoint's forwarding rules.
    unrouted: i64,
    /// The store changed since it was counted.
    stale: bool,
    /// A count is waiting for its answer.
    in_flight: bool,
    /// When the last count was asked for.
    asked_at: Option<Instant>,
}

/// The least time between two counts while deliveries keep arriving.
const COUNT_EVERY: Duration = Duration::from_millis(250);

impl ListCache {
    fn row_at(&self, position: usize) -> Option<&ListRow> {
        position
            .checked_sub(self.offset)
            .and_then(|i| self.rows.get(i))
    }

    fn position_of(&self, id: i64) -> Option<usize> {
        self.rows
            .iter()
            .position(|r| r.id == id)
            .map(|i| i + self.offset)
    }

    fn covers(&self, range: &std::ops::Range<usize>) -> bool {
        let end = range.end.min(self.total);
        range.start >= self.offset && end <= self.offset + self.rows.len()
    }

    /// Whether the visible rows come near an edge of the cached ones (and there is more beyond
    /// it), so the next rows are fetched before they scroll into view.
    fn near_edge(&self, range: &std::ops::Range<usize>) -> bool {
        let margin = PREFETCH_PAD / 2;
        let cached_end = self.offset + self.rows.len();
        (range.start < self.offset + margin && self.offset > 0)
            || (range.end + margin > cached_end && cached_end < self.total)
    }
}

/// A message in the status line.
/// The keys the list answers to, read once per frame.
struct Keys {
    up: bool,
    down: bool,
    home: bool,
    end: bool,
    page_up: bool,
    page_down: bool,
    enter: bool,
    escape: bool,
    delete: bool,
    find: bool,
    copy: bool,
    quit: bool,
}

/// How long a confirmation stays in the status line (errors stay until dismissed).
const NOTICE_FADES_AFTER: Duration = Duration::from_secs(6);

struct Notice {
    text: String,
    error: bool,
    shown_at: Instant,
}

/// The hookscope window.
pub struct HookscopeApp {
    /// `HOOKSCOPE_TRACE_FRAMES`: each frame's CPU time.
    frame_trace: Option<FrameTrace>,
    /// The store health's change counter as last drawn.
    health_seen: u64,
    engine: EngineHandle,
    /// egui's context, for work that happens outside a frame's drawing (a copy after a load).
    ctx: egui::Context,
    /// The local time zone, read once at start (`TZ` honoured).
    local_zone: Zone,
    /// UTC, for the switch.
    utc_zone: Zone,
    /// Remembered between runs.
    pub state: UiState,
    receiver: ReceiverState,
    port_text: String,
    paused: bool,
    paused_at_id: i64,
    seen_latest: i64,
    /// The newest id when the store was last counted.
    stored_latest: i64,
    list: ListCache,
    stored: StoredCount,
    jobs: jobs::JobsState,
    simulate: simulate::SimulateForm,
    replay: replay::ReplayForm,
    export: export::ExportForm,
    multi: std::collections::BTreeSet<i64>,
    resend: send::ResendForm,
    attempts: Vec<(i64, Vec<hookscope::domain::attempt::Attempt>)>,
    probe: send::ProbeForm,
    forward_url: String,
    fail_count: u32,
    selected: Option<i64>,
    scroll_to_selected: bool,
    detail: Option<Box<StoredDelivery>>,
    body_cache: detail::BodyCache,
    endpoints: endpoints::Editor,
    notice: Option<Notice>,
    focus_filter: bool,
    confirm_clear: bool,
    /// Deliveries waiting for the user to confirm their deletion.
    confirm_delete: Option<Vec<i64>>,
    /// The delivery whose "Confirm a host that is not the provider's" the user ticked; the
    /// tick holds for that delivery only, and until it is confirmed.
    pub confirm_any_host: Option<i64>,
    /// Two deliveries compared, shown in the *Compare* window until it is closed.
    pub comparison: Option<hookscope::domain::compare::Comparison>,
    /// The delivery whose confirmation is on the wire (its button waits).
    pub confirm_pending: Option<i64>,
    /// The delivery whose attempts the Checks tab asked for (to show a confirmation).
    pub confirm_attempts_asked: Option<i64>,
    /// A row's context-menu action waiting for its delivery to load.
    pending_copy: Option<(i64, list::Copy)>,
    about_open: bool,
    startup_traced: bool,
}

impl HookscopeApp {
    /// The zone times are shown in: UTC when the switch is on, else local time.
    pub fn zone(&self) -> &Zone {
        if self.state.utc {
            &self.utc_zone
        } else {
            &self.local_zone
        }
    }

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
        let config = engine.config.clone();
        let engine_relay_key = engine.relay_key.clone();
        let engine_settings = std::sync::Arc::clone(&engine.settings);
        let latest = engine.latest_id.load(Ordering::SeqCst);
        Ok(Self {
            ctx: ctx.clone(),
            local_zone: hookscope::domain::clock::local_zone(),
            utc_zone: Zone::utc(),
            engine,
            state,
            receiver: ReceiverState::Stopped,
            port_text: port.to_string(),
            paused: false,
            paused_at_id: latest,
            seen_latest: latest,
            stored_latest: latest,
            list: ListCache::default(),
            stored: StoredCount {
                stale: true,
                ..StoredCount::default()
            },
            jobs: jobs::JobsState::default(),
            simulate: simulate::SimulateForm::default(),
            replay: replay::ReplayForm::default(),
            export: export::ExportForm::default(),
            multi: std::collections::BTreeSet::new(),
            resend: send::ResendForm::default(),
            attempts: Vec::new(),
            probe: send::ProbeForm::default(),
            forward_url: "http://localhost:3000/webhooks".into(),
            fail_count: 3,
            selected: None,
            scroll_to_selected: false,
            detail: None,
            body_cache: detail::BodyCache::default(),
            endpoints: endpoints::Editor::new(config, engine_settings, engine_relay_key),
            notice: None,
            confirm_delete: None,
            confirm_any_host: None,
            comparison: None,
            confirm_pending: None,
            confirm_attempts_asked: None,
            pending_copy: None,
            focus_filter: false,
            confirm_clear: false,
            about_open: false,
            startup_traced: std::env::var_os("HOOKSCOPE_TRACE_STARTUP").is_none(),
            frame_trace: FrameTrace::from_env(),
            health_seen: 0,
        })
    }

    fn notice(&mut self, text: impl Into<String>, error: bool) {
        self.notice = Some(Notice {
            text: text.into(),
            error,
            shown_at: Instant::now(),
        });
    }

    fn send(&mut self, command: Command) {
        if !self.engine.send(command) {
            self.notice("hookscope is busy; try again in a moment", true);
        }
    }

    /// The attempts made from delivery `id`, as last loaded (none when not loaded).
    pub(crate) fn attempts_of(&self, id: i64) -> &[hookscope::domain::attempt::Attempt] {
        self.attempts
            .iter()
            .find(|(d, _)| *d == id)
            .map(|(_, a)| a.as_slice())
            .unwrap_or(&[])
    }

    /// Shows a delivery in the list, selected (from a summary or a timeline).
    pub(crate) fn show_delivery(&mut self, id: i64) {
        self.state.view = View::Deliveries;
        self.select(id);
        self.scroll_to_selected = true;
    }

    /// Selects a delivery and loads it for the detail pane.
    fn select(&mut self, id: i64) {
        if self.selected != Some(id) {
            self.selected = Some(id);
            self.send(Command::Load { id });
        }
    }

    fn drain_events(&mut self) {
        let started = Instant::now();
        while started.elapsed() < EVENT_BUDGET {
            let Some(event) = self.engine.try_recv() else {
                break;
            };
            self.apply(event);
        }
        let latest = self.engine.latest_id.load(Ordering::SeqCst);
        if latest != self.stored_latest {
            // Counted whether or not the list is paused: the status line says what is stored.
            self.stored_latest = latest;
            self.stored.stale = true;
        }
        if latest != self.seen_latest && !self.paused {
            self.seen_latest = latest;
            self.list.stale = true;
            self.jobs.fresh = false;
        }
    }

    fn apply(&mut self, event: Event) {
        match event {
            Event::Receiver(state) => {
                if let ReceiverState::Running { addr } = &state {
                    self.port_text = addr.port().to_string();
                }
                self.receiver = state;
            }
            Event::Page {
                generation,
                offset,
                total,
                rows,
            } => {
                if generation == self.list.generation {
                    // A list showing its newest rows keeps showing them when the total changes
                    // (a new filter, new deliveries), but the table scrolls there only at the
                    // end of the next frame: until then its visible rows are the old scroll
                    // position in the new list, and must not be fetched.
                    self.list.settling = !self.paused
                        && self.list.loaded
                        && total != self.list.total
                        && self.list.visible.end >= self.list.total;
                    self.list.in_flight = false;
                    self.list.offset = offset;
                    self.list.total = total;
                    self.list.rows = rows;
                    self.list.loaded = true;
                    self.list.error = None;
                }
            }
            Event::QueryFailed {
                generation,
                message,
            } => {
                if generation == self.list.generation {
                    self.list.in_flight = false;
                    self.list.error = Some(message);
                }
            }
            Event::Stored { total, unrouted } => {
                self.stored.in_flight = false;
                self.stored.total = Some(total);
                self.stored.unrouted = unrouted;
            }
            Event::Jobs {
                generation,
                total,
                jobs,
            } => {
                if generation == self.jobs.generation {
                    self.jobs.in_flight = false;
                    self.jobs.total = total;
                    self.jobs.jobs = jobs;
                }
            }
            Event::Attempts {
                delivery_id,
                attempts,
            } => {
                if self.confirm_pending == Some(delivery_id) {
                    self.confirm_pending = None;
                }
                self.attempts.retain(|(id, _)| *id != delivery_id);
                self.attempts.push((delivery_id, attempts));
                // Keep the attempts of the last few deliveries looked at.
                if self.attempts.len() > 16 {
                    self.attempts.remove(0);
                }
            }
            Event::Probed(report) => self.probe.finished(report),
            Event::Compared(comparison) => self.comparison = Some(*comparison),
            Event::Located { id, position } => {
                if Some(id) == self.selected {
                    match position {
                        Some(position) => self.list.scroll_to = Some(position),
                        None => self.notice(
                            format!("delivery #{id} is not in the list under this filter"),
                            false,
                        ),
                    }
                }
            }
            Event::Loaded(stored) => {
                if Some(stored.id) == self.selected {
                    // The detail pane opening takes the lower half of the list: bring the row
                    // just chosen back into view (a list following its newest rows kept its
                    // bottom in view and pushed the row out of it).
                    self.scroll_to_selected |= self.detail.is_none();
                    self.body_cache = detail::BodyCache::default();
                    self.detail = Some(stored);
                    self.run_pending_copy();
                }
            }
            Event::RelayKey(key) => self.endpoints.relay_key = Some(key),
            Event::ConfigSaved(file, settings) => {
                self.endpoints.saved(*file, settings);
                self.notice("endpoints saved", false);
                // A changed secret or scheme applies to the delivery being read at once.
                if let Some(id) = self.selected {
                    self.send(Command::Recheck { id });
                }
            }
            Event::Rechecked { id } => {
                self.list.stale = true;
                if Some(id) == self.selected {
                    self.send(Command::Load { id });
                }
            }
            Event::HistoryChanged => {
                self.list.stale = true;
                self.stored.stale = true;
                self.jobs.fresh = false;
                if let Some(id) = self.selected {
                    self.send(Command::Load { id });
                }
            }
            Event::Reconciled => {
                self.jobs.fresh = false;
            }
            Event::Simulation(view) => {
                if let Some(card) = &view.scorecard {
                    let failed = card
                        .iter()
                        .filter(|c| c.status == hookscope::domain::sim::Verdict::Fail)
                        .count();
                    self.notice(
                        format!(
                            "simulation finished: {failed} failed check(s) of {}",
                            card.len()
                        ),
                        false,
                    );
                    self.list.stale = true;
                }
                self.simulate.view = Some(*view);
            }
            Event::Replay(view) => {
                if view.summary.is_some() {
                    // Attempts were added: the detail pane's list of them is out of date.
                    if let Some(id) = self.selected {
                        self.send(Command::Attempts { id });
                    }
                    self.replay.open = true;
                }
                self.replay.view = Some(*view);
            }
            Event::RulesTested { id, results } => self.endpoints.rules_tested(id, results),
            Event::ContractChanged(text, settings) => {
                self.notice(text, false);
                self.endpoints.refresh(settings);
                // As a changed secret: the delivery being read is checked again at once.
                if let Some(id) = self.selected {
                    self.send(Command::Recheck { id });
                }
            }
            Event::Notice(text) => self.notice(text, false),
            Event::Error(text) => self.notice(text, true),
            Event::ConfigRefused(why) => self.endpoints.refused(why),
            Event::CurlReady { id, command, body } => export::copied_curl(self, id, command, body),
        }
    }

    /// Asks the engine for the jobs when the view needs them.
    fn request_jobs(&mut self) {
        let prefix = jobs::JobsFilter::parse(&self.state.filter).prefix;
        let changed = prefix != self.jobs.prefix;
        if !changed && (self.jobs.fresh || self.jobs.in_flight) {
            return;
        }
        // While deliveries stream in, the jobs are re-read at most every JOBS_REFRESH: each
        // answer re-lays out the whole table, and a person cannot read faster than that.
        if !changed
            && let Some(at) = self.jobs.requested_at
            && at.elapsed() < jobs::JOBS_REFRESH
        {
            self.ctx
                .request_repaint_after(jobs::JOBS_REFRESH.saturating_sub(at.elapsed()));
            return;
        }
        self.jobs.requested_at = Some(Instant::now());
        self.jobs.generation += 1;
        self.jobs.in_flight = true;
        self.jobs.fresh = true;
        self.jobs.prefix = prefix.clone();
        let command = Command::Jobs {
            generation: self.jobs.generation,
            prefix,
            limit: jobs::JOBS_SHOWN,
        };
        self.send(command);
    }

    /// Shows a job's timeline in the jobs view.
    fn show_job(&mut self, job_id: String) {
        self.state.view = View::Jobs;
        self.state.filter = job_id.clone();
        self.jobs.selected = Some(job_id);
    }

    /// Counts the store again when it changed, at most one count at a time and one per
    /// [`COUNT_EVERY`], in every view.
    fn request_count(&mut self, ctx: &egui::Context) {
        if !self.stored.stale || self.stored.in_flight {
            return;
        }
        let since = self.stored.asked_at.map(|at| at.elapsed());
        if let Some(since) = since.filter(|s| *s < COUNT_EVERY) {
            ctx.request_repaint_after(COUNT_EVERY - since);
            return;
        }
        self.stored.stale = false;
        self.stored.in_flight = true;
        self.stored.asked_at = Some(Instant::now());
        self.send(Command::CountStored);
    }

    /// Asks the engine for the rows the list needs, at most one query at a time.
    fn request_rows(&mut self) {
        const PAD: usize = PREFETCH_PAD;
        let filter_changed = self.list.filter != self.state.filter;
        if self.list.in_flight && !filter_changed {
            return;
        }
        if std::mem::take(&mut self.list.settling) && !filter_changed && !self.list.stale {
            return;
        }
        let visible = self.list.visible.clone();
        let need = !self.list.loaded
            || filter_changed
            || self.list.stale
            || !self.list.covers(&visible)
            || self.list.near_edge(&visible);
        if !need {
            return;
        }
        // Before the first answer, after a new filter, or while following the newest rows: ask
        // for the last page. Otherwise refetch around what is visible (new rows only append).
        let following = visible.end >= self.list.total;
        let offset = if !self.list.loaded || filter_changed || following {
            usize::MAX
        } else {
            visible.start.saturating_sub(PAD)
        };
        self.list.generation += 1;
        self.list.in_flight = true;
        self.list.stale = false;
        self.list.filter = self.state.filter.clone();
        let command = Command::Query {
            generation: self.list.generation,
            filter: self.state.filter.clone(),
            offset,
            limit: visible.len().max(60) + 2 * PAD,
        };
        self.send(command);
    }

    fn keyboard(&mut self, ctx: &egui::Context) {
        let keys = ctx.input(|i| Keys {
            up: i.key_pressed(egui::Key::ArrowUp),
            down: i.key_pressed(egui::Key::ArrowDown),
            home: i.key_pressed(egui::Key::Home),
            end: i.key_pressed(egui::Key::End),
            page_up: i.key_pressed(egui::Key::PageUp),
            page_down: i.key_pressed(egui::Key::PageDown),
            enter: i.key_pressed(egui::Key::Enter),
            escape: i.key_pressed(egui::Key::Escape),
            delete: i.key_pressed(egui::Key::Delete),
            find: i.modifiers.command && i.key_pressed(egui::Key::F),
            copy: i.events.iter().any(|e| matches!(e, egui::Event::Copy)),
            quit: i.modifiers.command && i.key_pressed(egui::Key::Q),
        });
        if keys.quit {
            // Ctrl+Q (Cmd+Q) closes the window the way its close button does: state is saved.
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
        }
        if keys.find {
            self.focus_filter = true;
        }
        if keys.escape {
            self.escape();
        }
        let typing = ctx.memory(|m| m.focused().is_some());
        if typing || self.state.view != View::Deliveries {
            return;
        }
        if keys.copy
            && let Some(stored) = &self.detail
        {
            let json = hookscope::app::report::delivery_json(stored, self.attempts_of(stored.id));
            ctx.copy_text(json.to_string());
            self.notice(format!("copied delivery #{} as JSON", stored.id), false);
        }
        if keys.delete {
            self.ask_delete();
        }
        if keys.enter
            && let Some(id) = self.selected
            && self.detail.is_none()
        {
            self.send(Command::Load { id });
        }
        let total = self.list.total;
        let page = self.list.visible.len().max(1);
        let current = self.selected.and_then(|id| self.list.position_of(id));
        let target = if keys.home {
            (total > 0).then_some(0)
        } else if keys.end {
            total.checked_sub(1)
        } else if keys.page_up {
            current
                .map(|p| p.saturating_sub(page))
                .or(total.checked_sub(1))
        } else if keys.page_down {
            current
                .map(|p| (p + page).min(total.saturating_sub(1)))
                .or(total.checked_sub(1))
        } else if keys.up {
            match current {
                Some(p) => p.checked_sub(1),
                None => total.checked_sub(1),
            }
        } else if keys.down {
            match current {
                Some(p) => Some(p + 1).filter(|p| *p < total),
                None => total.checked_sub(1),
            }
        } else {
            return;
        };
        let Some(position) = target else { return };
        match self.list.row_at(position).map(|r| r.id) {
            Some(id) => self.select(id),
            // Not loaded yet (a jump to the other end): scroll there; the rows follow.
            None => self.list.scroll_to = Some(position),
        }
        self.scroll_to_selected = true;
    }

    /// Copies the delivery a context menu asked for, once it is loaded.
    fn run_pending_copy(&mut self) {
        let Some((id, what)) = self.pending_copy else {
            return;
        };
        let Some(stored) = self.detail.clone().filter(|d| d.id == id) else {
            return;
        };
        self.pending_copy = None;
        match what {
            list::Copy::Json => {
                let json =
                    hookscope::app::report::delivery_json(&stored, self.attempts_of(stored.id));
                self.ctx.copy_text(json.to_string());
                self.notice(format!("copied delivery #{id} as JSON"), false);
            }
            list::Copy::Curl => export::copy_as_curl(self, &stored),
        }
    }

    /// Esc: closes the topmost window, else dismisses an error, else clears the selection.
    fn escape(&mut self) {
        if self.confirm_delete.take().is_some() {
            return;
        }
        if self.about_open {
            self.about_open = false;
        } else if self.comparison.is_some() {
            self.comparison = None;
        } else if self.probe.open {
            self.probe.open = false;
        } else if self.export.open {
            self.export.open = false;
        } else if self.endpoints.open {
            self.endpoints.open = false;
        } else if self.notice.as_ref().is_some_and(|n| n.error) {
            self.notice = None;
        } else {
            self.selected = None;
            self.detail = None;
            self.multi.clear();
        }
    }

    /// Asks to delete the selected deliveries (the multi-selection, else the selected one).
    fn ask_delete(&mut self) {
        let ids: Vec<i64> = if self.multi.is_empty() {
            self.selected.into_iter().collect()
        } else {
            self.multi.iter().copied().collect()
        };
        if !ids.is_empty() {
            self.confirm_delete = Some(ids);
        }
    }

    /// The confirmation of a deletion, while one is asked.
    fn confirm_delete_window(&mut self, ctx: &egui::Context) {
        let Some(ids) = self.confirm_delete.clone() else {
            return;
        };
        let what = if ids.len() == 1 {
            format!("delivery #{}", ids[0])
        } else {
            format!("{} deliveries", ids.len())
        };
        let mut decided = None;
        egui::Window::new("Delete from the store")
            .collapsible(false)
            .resizable(false)
            .anchor(egui::Align2::CENTER_CENTER, egui::vec2(0.0, 0.0))
            .show(ctx, |ui| {
                ui.label(format!(
                    "Delete {what} from the store? This cannot be undone."
                ));
                ui.horizontal(|ui| {
                    if ui
                        .button(egui::RichText::new("Yes, delete").color(widgets::FAIL))
                        .clicked()
                        || ui.input(|i| i.key_pressed(egui::Key::Enter))
                    {
                        decided = Some(true);
                    }
                    if ui.button("Cancel").clicked() {
                        decided = Some(false);
                    }
                });
            });
        match decided {
            Some(true) => {
                self.confirm_delete = None;
                self.send(Command::Delete(ids));
                self.selected = None;
                self.detail = None;
                self.multi.clear();
            }
            Some(false) => self.confirm_delete = None,
            None => {}
        }
    }

    /// Draws the whole window into `ui` (the root).
    pub fn draw(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        self.drain_events();
        self.request_count(&ctx);
        self.keyboard(&ctx);

        egui::Panel::top("top_bar").show(ui, |ui| top_bar::top_bar_ui(self, ui));
        egui::Panel::bottom("status_line").show(ui, |ui| self.status_line_ui(ui));
        if self.state.view == View::Simulate {
            let own = match &self.receiver {
                ReceiverState::Running { addr } => {
                    Some(format!("http://127.0.0.1:{}/", addr.port()))
                }
                _ => None,
            };
            egui::CentralPanel::default().show(ui, |ui| simulate::simulate_ui(self, ui, own));
            endpoints::endpoints_window(self, &ctx);
            return;
        }
        if self.state.view == View::Jobs {
            jobs::timeline_panel(self, ui);
            egui::CentralPanel::default().show(ui, |ui| jobs::jobs_ui(self, ui));
            endpoints::endpoints_window(self, &ctx);
            send::probe_window(self, &ctx);
            self.request_jobs();
            if self.jobs.in_flight {
                ctx.request_repaint_after(Duration::from_millis(30));
            }
            return;
        }
        let has_history = self.list.total > 0 || !self.state.filter.is_empty() || !self.list.loaded;
        if has_history && self.selected.is_some() {
            egui::Panel::bottom("detail")
                .resizable(true)
                .default_size(360.0)
                .min_size(160.0)
                .show(ui, |ui| detail::detail_ui(self, ui));
        }
        egui::CentralPanel::default().show(ui, |ui| {
            if has_history {
                list::list_ui(self, ui);
            } else {
                empty::empty_ui(self, ui);
            }
        });
        endpoints::endpoints_window(self, &ctx);
        send::probe_window(self, &ctx);
        export::export_window(self, &ctx);
        detail::compare_window(self, &ctx);
        replay::replay_window(self, &ctx);
        self.about_window(&ctx);
        self.confirm_delete_window(&ctx);
        export::poll_dialog(self);
        if !self.startup_traced && self.list.loaded {
            self.startup_traced = true;
            if let Some(start) = PROCESS_START.get() {
                eprintln!(
                    "hookscope: first frame with rows {} ms after start ({} deliveries)",
                    start.elapsed().as_millis(),
                    self.list.total
                );
            }
        }
        self.request_rows();
        if self.list.in_flight {
            ctx.request_repaint_after(Duration::from_millis(30));
        }
        // Confirmations fade after a few seconds; errors stay until dismissed.
        if let Some(notice) = self.notice.as_ref().filter(|n| !n.error) {
            let left = NOTICE_FADES_AFTER.saturating_sub(notice.shown_at.elapsed());
            if left.is_zero() {
                self.notice = None;
            } else {
                ctx.request_repaint_after(left.min(Duration::from_millis(100)));
            }
        }
    }

    fn about_window(&mut self, ctx: &egui::Context) {
        let mut open = self.about_open;
        egui::Window::new("About hookscope")
            .open(&mut open)
            .collapsible(false)
            .resizable(false)
            .show(ctx, |ui| {
                ui.heading(format!("hookscope {}", env!("CARGO_PKG_VERSION")));
                ui.label("A local inspector for webhook integrations.");
                ui.hyperlink_to("Documentation and source", env!("CARGO_PKG_REPOSITORY"));
                ui.add_space(6.0);
                egui::Grid::new("about_grid").num_columns(2).spacing([12.0, 4.0]).show(ui, |ui| {
                    ui.weak("data dir");
                    ui.monospace(self.engine.data_dir.display().to_string());
                    ui.end_row();
                    ui.weak("store");
                    ui.monospace(self.engine.data_dir.join(hookscope::app::paths::STORE_FILE).display().to_string());
                    ui.end_row();
                    ui.weak("config");
                    ui.monospace(self.engine.config_path.display().to_string());
                    ui.end_row();
                    ui.weak("window state");
                    ui.monospace(self.engine.data_dir.join(WINDOW_STATE_FILE).display().to_string());
                    ui.end_row();
                });
                ui.add_space(6.0);
                ui.weak("The same engine runs headless: hookscope listen, verify, list, jobs, resend, probe, export, import.");
            });
        self.about_open = open;
    }

    /// What the status line counts: in the deliveries view the list (and, under a filter, of
    /// how many); in every other view what the store holds, which the list there does not
    /// follow.
    fn count_sentence(&self) -> String {
        let deliveries = |n: i64| {
            if n == 1 {
                "1 delivery".to_string()
            } else {
                format!("{n} deliveries")
            }
        };
        let listed = self.list.total as i64;
        let filtered = !self.state.filter.trim().is_empty();
        match (self.state.view, self.stored.total) {
            (View::Deliveries, Some(stored)) if filtered => {
                format!("{listed} of {} match the filter", deliveries(stored))
            }
            (View::Deliveries, None) if filtered => {
                format!("{} match the filter", deliveries(listed))
            }
            (View::Deliveries, _) => deliveries(listed),
            (_, Some(stored)) => format!("{} stored", deliveries(stored)),
            (_, None) => format!("{} stored", deliveries(listed)),
        }
    }

    fn status_line_ui(&mut self, ui: &mut egui::Ui) {
        ui.horizontal(|ui| {
            ui.label(self.count_sentence());
            if self.stored.unrouted > 0 {
                ui.separator();
                let n = self.stored.unrouted;
                let text = format!("{n} unrouted (no forwarding rule met)");
                ui.colored_label(widgets::WARN, text).on_hover_text(
                    "Deliveries whose endpoint has forwarding rules and that met none of their conditions",
                );
            }
            if self.paused {
                let waiting = self.engine.latest_id.load(Ordering::SeqCst) - self.paused_at_id;
                ui.separator();
                ui.colored_label(
                    widgets::WARN,
                    format!("live updates paused: {waiting} new since"),
                );
            }
            let mut dismissed = false;
            if let Some(notice) = &self.notice {
                ui.separator();
                if notice.error {
                    ui.colored_label(widgets::FAIL, &notice.text);
                    dismissed = ui
                        .small_button("Dismiss")
                        .on_hover_text("Errors stay until dismissed (Esc too)")
                        .clicked();
                } else {
                    // Fade out over the last second.
                    let age = notice.shown_at.elapsed().as_secs_f32();
                    let fade = (NOTICE_FADES_AFTER.as_secs_f32() - age).clamp(0.0, 1.0);
                    ui.colored_label(ui.visuals().text_color().gamma_multiply(fade), &notice.text);
                }
            }
            if dismissed {
                self.notice = None;
            }
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                if ui.small_button("About").clicked() {
                    self.about_open = true;
                }
                let local = self.local_zone.name_at(hookscope::domain::clock::now_ms());
                ui.toggle_value(&mut self.state.utc, "UTC").on_hover_text(format!(
                    "Show times in UTC instead of local time ({local}). Exports and JSON are always UTC."
                ));
                ui.weak(if self.state.utc { "times in UTC".to_string() } else { format!("times in {local}") });
                ui.weak(format!("store: {}", self.engine.data_dir.display()));
            });
        });
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
        eframe::set_value(storage, eframe::APP_KEY, &self.state);
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

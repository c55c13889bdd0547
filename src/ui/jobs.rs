//! The jobs view: the most recently active jobs with their state and flags, and the selected
//! job's timeline under them (drawn by [`super::timeline`]).

use std::time::Instant;

use eframe::egui::{self, Color32, Sense};
use egui_extras::{Column, TableBuilder};
use hookscope::domain::fmt::{Zone, full_time, human_duration, short_time};
use hookscope::domain::timeline::{FlagKind, JobTimeline};
use hookscope::engine::{Command, Event};

use super::shared::{Msg, Shared};
use super::{View, widgets};

/// How many jobs the view holds.
pub const JOBS_SHOWN: usize = 500;

/// The jobs the view holds and the one selected.
#[derive(Default)]
pub struct JobsState {
    /// The generation of the newest query sent.
    pub generation: u64,
    /// Whether a query is waiting for its answer.
    pub in_flight: bool,
    /// Whether any answer arrived since the view was opened or the store changed.
    pub fresh: bool,
    /// The job id prefix the jobs were fetched with.
    pub prefix: String,
    /// Jobs known in all.
    pub total: usize,
    /// The timelines, most recently active first.
    pub jobs: Vec<JobTimeline>,
    /// The selected job.
    pub selected: Option<String>,
    /// When the last query was sent.
    pub requested_at: Option<std::time::Instant>,
}

/// The shortest time between two re-reads of the jobs while deliveries stream in.
pub const JOBS_REFRESH: std::time::Duration = std::time::Duration::from_millis(250);

/// The jobs filter: free text is a job id prefix; `flag:KIND` and `state:NAME` narrow the jobs
/// held (the most recently active [`JOBS_SHOWN`]).
pub struct JobsFilter {
    /// Job id prefix.
    pub prefix: String,
    flags: Vec<String>,
    states: Vec<String>,
}

impl JobsFilter {
    /// Parses the filter box's text for the jobs view.
    pub fn parse(text: &str) -> JobsFilter {
        let mut filter = JobsFilter {
            prefix: String::new(),
            flags: Vec::new(),
            states: Vec::new(),
        };
        for term in text.split_whitespace() {
            match term.split_once(':') {
                Some(("flag", kind)) => filter.flags.push(kind.to_ascii_lowercase()),
                Some(("state", state)) => filter.states.push(state.to_ascii_lowercase()),
                Some(("job", id)) => filter.prefix = id.to_string(),
                _ => filter.prefix = term.to_string(),
            }
        }
        filter
    }

    fn keeps(&self, job: &JobTimeline) -> bool {
        let flag_ok = self.flags.iter().all(|wanted| {
            job.flags
                .iter()
                .any(|f| hookscope::domain::checks::status_word(&f.kind) == *wanted)
        });
        let state_ok = self.states.iter().all(|wanted| {
            job.current_state
                .as_deref()
                .is_some_and(|s| s.eq_ignore_ascii_case(wanted))
        });
        flag_ok && state_ok
    }
}

pub fn flag_color(kind: FlagKind) -> Color32 {
    match kind {
        FlagKind::DedupeByJobId => widgets::SKIPPED,
        FlagKind::DuplicateDelivery
        | FlagKind::Stuck
        | FlagKind::Unreachable
        | FlagKind::OutputExpired
        | FlagKind::ClockSkew => widgets::WARN,
        _ => widgets::FAIL,
    }
}

pub fn flag_name(kind: FlagKind) -> String {
    hookscope::domain::checks::status_word(&kind).replace('_', " ")
}

impl JobsState {
    /// The engine's answers about jobs.
    pub fn on_event(&mut self, event: Event) {
        match event {
            Event::Jobs {
                generation,
                total,
                jobs,
            } if generation == self.generation => {
                self.in_flight = false;
                self.total = total;
                self.jobs = jobs;
            }
            Event::Reconciled => self.fresh = false,
            _ => {}
        }
    }

    /// Asks the engine for the jobs when the view needs them.
    pub fn request_jobs(&mut self, ctx: &egui::Context, shared: &mut Shared) {
        let prefix = JobsFilter::parse(&shared.filter).prefix;
        let changed = prefix != self.prefix;
        if !changed && (self.fresh || self.in_flight) {
            return;
        }
        // While deliveries stream in, the jobs are re-read at most every JOBS_REFRESH: each
        // answer re-lays out the whole table, and a person cannot read faster than that.
        if !changed
            && let Some(at) = self.requested_at
            && at.elapsed() < JOBS_REFRESH
        {
            ctx.request_repaint_after(JOBS_REFRESH.saturating_sub(at.elapsed()));
            return;
        }
        self.requested_at = Some(Instant::now());
        self.generation += 1;
        self.in_flight = true;
        self.fresh = true;
        self.prefix = prefix.clone();
        let command = Command::Jobs {
            generation: self.generation,
            prefix,
            limit: JOBS_SHOWN,
        };
        shared.send(command);
    }

    /// Shows a job's timeline.
    pub fn show(&mut self, job_id: String, shared: &mut Shared) {
        shared.view = View::Jobs;
        shared.filter = job_id.clone();
        self.selected = Some(job_id);
    }

    /// Draws the selected job's timeline in a bottom panel of the root `ui` (before the central
    /// area, so the jobs table ends above it).
    pub fn timeline_panel(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let selected_job = self
            .selected
            .as_ref()
            .and_then(|id| self.jobs.iter().find(|j| &j.job_id == id))
            .cloned();
        if let Some(job) = &selected_job {
            egui::Panel::bottom("job_timeline")
                .resizable(true)
                .default_size(330.0)
                .min_size(200.0)
                .show(ui, |ui| timeline_panel_ui(ui, shared, job));
        }
    }

    /// Draws the jobs view into the central area.
    pub fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let filter = JobsFilter::parse(&shared.filter);
        // Indices, not copies: a timeline carries every delivery, poll and sent attempt.
        let shown: Vec<usize> = self
            .jobs
            .iter()
            .enumerate()
            .filter(|(_, j)| filter.keeps(j))
            .map(|(i, _)| i)
            .collect();
        if can_reconcile(shared) {
            ui.horizontal(|ui| {
                if ui
                    .button("Check now")
                    .on_hover_text("Ask the job API about every job seen in the last 24 hours, finished or not (the 500 most recent), and read its in-flight listing")
                    .clicked()
                {
                    shared.send(Command::Reconcile { job: None });
                }
                ui.weak("Every job of the last 24 hours, finished or not. On its own, hookscope asks at start-up and every minute about jobs past the stuck threshold.");
            });
            ui.add_space(4.0);
        }
        if self.jobs.is_empty() {
            ui.vertical_centered(|ui| {
                ui.add_space(60.0);
                ui.heading("No jobs yet");
                ui.add_space(8.0);
                ui.label("A job appears when a delivery's JSON body names one (job_id, data.job_id, or data.id of a job.* event).");
                ui.weak("Set job_id_pointer, status_pointer and created_at_pointer on an endpoint for other shapes.");
            });
            return;
        }
        if let Some(id) = self.table_ui(ui, &shown, shared.zone()) {
            self.selected = Some(id);
        }
    }

    /// The jobs table; returns the job clicked.
    fn table_ui(&self, ui: &mut egui::Ui, shown: &[usize], zone: &Zone) -> Option<String> {
        let now = hookscope::domain::clock::now_ms();
        ui.style_mut().interaction.selectable_labels = false;
        let mut clicked = None;
        let text = |width: f32| {
            Column::initial(width)
                .at_least(90.0)
                .clip(true)
                .resizable(true)
        };
        TableBuilder::new(ui)
            .striped(true)
            .sense(Sense::click())
            .cell_layout(egui::Layout::left_to_right(egui::Align::Center))
            .column(text(170.0))
            .column(text(190.0))
            .column(Column::exact(104.0))
            .column(Column::exact(104.0))
            .column(Column::exact(80.0))
            .column(Column::exact(110.0))
            .column(Column::remainder().at_least(120.0))
            .header(20.0, |mut header| {
                for title in [
                    "Job",
                    "State",
                    "First seen",
                    "Last seen",
                    "Duration",
                    "Events",
                    "Flags",
                ] {
                    header.col(|ui| {
                        ui.strong(title);
                    });
                }
            })
            .body(|body| {
                body.rows(22.0, shown.len(), |mut row| {
                    let job = &self.jobs[shown[row.index()]];
                    row.set_selected(self.selected.as_deref() == Some(job.job_id.as_str()));
                    job_cells(&mut row, job, now, zone);
                    if row.response().clicked() {
                        clicked = Some(job.job_id.clone());
                    }
                });
            });
        clicked
    }
}

/// One job's cells.
fn job_cells(row: &mut egui_extras::TableRow<'_, '_>, job: &JobTimeline, now: i64, zone: &Zone) {
    row.col(|ui| {
        ui.monospace(&job.job_id);
    });
    row.col(|ui| {
        let state = job.current_state.as_deref().unwrap_or("?");
        let shown = match &job.api_state {
            Some(api) if Some(api.as_str()) != job.current_state.as_deref() => {
                format!("{state} (api: {api})")
            }
            _ => state.to_string(),
        };
        if job.terminal {
            ui.label(shown);
        } else {
            ui.colored_label(widgets::WARN, shown);
        }
    });
    for ms in [job.first_seen_ms, job.last_seen_ms] {
        row.col(|ui| {
            ui.monospace(short_time(ms, now, zone))
                .on_hover_text(full_time(ms, zone));
        });
    }
    row.col(|ui| {
        ui.label(human_duration(
            ((job.last_seen_ms - job.first_seen_ms) / 1000).max(0) as u64,
        ));
    });
    row.col(|ui| {
        ui.label(format!(
            "{} in {} deliveries",
            job.events,
            job.arrival_order.len()
        ));
    });
    row.col(|ui| flag_badges(ui, job));
}

/// Hints hold for any job with several events: not a badge in the list. One badge per kind,
/// with how many ("out of order ×5"); the first's sentence on hover, the rest in the timeline.
fn flag_badges(ui: &mut egui::Ui, job: &JobTimeline) {
    let mut kinds: Vec<(FlagKind, usize, &str)> = Vec::new();
    for flag in job.problems() {
        match kinds.iter_mut().find(|(k, _, _)| *k == flag.kind) {
            Some((_, n, _)) => *n += 1,
            None => kinds.push((flag.kind, 1, &flag.detail)),
        }
    }
    for (kind, n, detail) in kinds {
        let name = if n > 1 {
            format!("{} ×{n}", flag_name(kind))
        } else {
            flag_name(kind)
        };
        widgets::badge(ui, &name, flag_color(kind), detail);
    }
}

/// Whether any saved endpoint has a job API to ask.
fn can_reconcile(shared: &Shared) -> bool {
    shared
        .saved
        .settings
        .endpoints
        .iter()
        .any(|e| e.reconcile.is_some())
}

/// The selected job: its state, *Check now* and *Replay…*, the timeline, and its flags.
fn timeline_panel_ui(ui: &mut egui::Ui, shared: &mut Shared, job: &JobTimeline) {
    ui.add_space(4.0);
    ui.horizontal(|ui| {
        ui.strong(format!("job {}", job.job_id));
        ui.label(format!(
            "{}{} · {} events in {} deliveries",
            job.current_state.as_deref().unwrap_or("state unknown"),
            if job.terminal { " (terminal)" } else { "" },
            job.events,
            job.arrival_order.len()
        ));
        if let Some(api) = &job.api_state {
            ui.label(format!("· the job API says {api}"));
        }
        if can_reconcile(shared)
            && ui
                .small_button("Check now")
                .on_hover_text("Ask the job API about this job")
                .clicked()
        {
            shared.send(Command::Reconcile {
                job: Some(job.job_id.clone()),
            });
        }
        if ui
            .small_button("Replay…")
            .on_hover_text("Send this job's deliveries again to a handler, in the order stored")
            .clicked()
        {
            shared.tell(Msg::Replay(super::replay::Choice::Job(job.job_id.clone())));
        }
    });
    let zone = shared.zone().clone();
    if let Some(id) = super::timeline::timeline_ui(ui, job, &zone) {
        shared.view = View::Deliveries;
        shared.filter = format!("job:{}", job.job_id);
        shared.select_in_view(id);
    }
    ui.add_space(4.0);
    super::timeline::flags_ui(ui, job);
}

//! The jobs view: the most recently active jobs with their state and flags, and the selected
//! job's timeline drawn on a time axis with a lane for the events' creation time and one for
//! their arrival. Lines join the two positions of each delivery, so reordering shows as
//! crossing lines; retries of one event stack up.

use eframe::egui::{self, Color32, RichText, Sense, Stroke};
use egui_extras::{Column, TableBuilder};
use hookscope::domain::checks::{SignatureStatus, TimestampStatus};
use hookscope::domain::fmt::human_duration;
use hookscope::domain::fmt::{full_time, short_time};
use hookscope::domain::reconcile::Poll;
use hookscope::domain::timeline::{FlagKind, JobDelivery, JobTimeline};
use hookscope::engine::Command;

use super::{HookscopeApp, View, widgets};

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

fn flag_color(kind: FlagKind) -> Color32 {
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

fn flag_name(kind: FlagKind) -> String {
    hookscope::domain::checks::status_word(&kind).replace('_', " ")
}

/// Draws the selected job's timeline in a bottom panel of the root `ui` (before the central
/// area, so the jobs table ends above it).
pub fn timeline_panel(app: &mut HookscopeApp, ui: &mut egui::Ui) {
    let selected_job = app
        .jobs
        .selected
        .as_ref()
        .and_then(|id| app.jobs.jobs.iter().find(|j| &j.job_id == id))
        .cloned();
    if let Some(job) = &selected_job {
        egui::Panel::bottom("job_timeline")
            .resizable(true)
            .default_size(330.0)
            .min_size(200.0)
            .show(ui, |ui| timeline_ui(app, ui, job));
    }
}

/// Draws the jobs view into the central area.
pub fn jobs_ui(app: &mut HookscopeApp, ui: &mut egui::Ui) {
    let zone = app.zone().clone();
    let now = hookscope::domain::clock::now_ms();
    let filter = JobsFilter::parse(&app.state.filter);
    // Indices, not copies: a timeline carries every delivery, poll and sent attempt.
    let shown: Vec<usize> = app
        .jobs
        .jobs
        .iter()
        .enumerate()
        .filter(|(_, j)| filter.keeps(j))
        .map(|(i, _)| i)
        .collect();
    if can_reconcile(app) {
        ui.horizontal(|ui| {
            if ui
                .button("Check now")
                .on_hover_text("Ask the job API about every job seen in the last 24 hours, finished or not (the 500 most recent), and read its in-flight listing")
                .clicked()
            {
                app.send(Command::Reconcile { job: None });
            }
            ui.weak("Every job of the last 24 hours, finished or not. On its own, hookscope asks at start-up and every minute about jobs past the stuck threshold.");
        });
        ui.add_space(4.0);
    }
    if app.jobs.jobs.is_empty() {
        ui.vertical_centered(|ui| {
            ui.add_space(60.0);
            ui.heading("No jobs yet");
            ui.add_space(8.0);
            ui.label("A job appears when a delivery's JSON body names one (job_id, data.job_id, or data.id of a job.* event).");
            ui.weak("Set job_id_pointer, status_pointer and created_at_pointer on an endpoint for other shapes.");
        });
        return;
    }
    ui.style_mut().interaction.selectable_labels = false;
    let mut clicked = None;
    TableBuilder::new(ui)
        .striped(true)
        .sense(Sense::click())
        .cell_layout(egui::Layout::left_to_right(egui::Align::Center))
        .column(
            Column::initial(170.0)
                .at_least(90.0)
                .clip(true)
                .resizable(true),
        )
        .column(
            Column::initial(190.0)
                .at_least(90.0)
                .clip(true)
                .resizable(true),
        )
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
                let job = &app.jobs.jobs[shown[row.index()]];
                row.set_selected(app.jobs.selected.as_deref() == Some(job.job_id.as_str()));
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
                        ui.monospace(short_time(ms, now, &zone))
                            .on_hover_text(full_time(ms, &zone));
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
                row.col(|ui| {
                    // Hints hold for any job with several events: not a badge in the list.
                    // One badge per kind, with how many ("out of order ×5"); the first's
                    // sentence on hover, the rest in the timeline below.
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
                });
                if row.response().clicked() {
                    clicked = Some(job.job_id.clone());
                }
            });
        });
    if let Some(id) = clicked {
        app.jobs.selected = Some(id);
    }
}

/// Whether any saved endpoint has a job API to ask.
fn can_reconcile(app: &HookscopeApp) -> bool {
    app.endpoints
        .saved_settings()
        .endpoints
        .iter()
        .any(|e| e.reconcile.is_some())
}

fn poll_color(poll: &Poll) -> Color32 {
    if poll.failure().is_some() {
        widgets::FAIL
    } else if poll.terminal() {
        widgets::PASS
    } else {
        widgets::WARN
    }
}

fn marker_color(d: &JobDelivery) -> Color32 {
    match (d.signature, d.timestamp) {
        (SignatureStatus::Fail, _) | (_, TimestampStatus::Fail) => widgets::FAIL,
        (_, TimestampStatus::Warn) => widgets::WARN,
        (SignatureStatus::Pass, _) => widgets::PASS,
        _ => widgets::SKIPPED,
    }
}

/// Draws one job's timeline, its flags, and makes each marker open its delivery.
fn timeline_ui(app: &mut HookscopeApp, ui: &mut egui::Ui, job: &JobTimeline) {
    let zone = app.zone().clone();
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
        if can_reconcile(app)
            && ui
                .small_button("Check now")
                .on_hover_text("Ask the job API about this job")
                .clicked()
        {
            app.send(Command::Reconcile {
                job: Some(job.job_id.clone()),
            });
        }
        if ui
            .small_button("Replay…")
            .on_hover_text("Send this job's deliveries again to a handler, in the order stored")
            .clicked()
        {
            super::replay::open(app, super::replay::Choice::Job(job.job_id.clone()));
        }
    });
    let deliveries = &job.by_event_time;
    // The drawing's width is known before its height: markers are placed first, then the labels
    // find their rows, then the rect is allocated tall enough for them.
    let origin = ui.cursor().left();
    let full_width = ui.available_width();
    let text_color = ui.visuals().text_color();
    let weak = ui.visuals().weak_text_color();
    let left = origin + 90.0;
    let right = origin + full_width - 24.0;
    // Each lane has its own scale: creation and arrival can be hours apart (a backlog, a skewed
    // clock), and a shared axis would squeeze one of them into a point.
    let span = |times: Vec<i64>| {
        let start = times.iter().copied().min().unwrap_or(0);
        let end = times
            .iter()
            .copied()
            .max()
            .unwrap_or(start)
            .max(start + 1000);
        (start, end)
    };
    let created_span = span(
        deliveries
            .iter()
            .map(|d| d.created_at_ms.unwrap_or(d.received_at_ms))
            .collect(),
    );
    // Arrivals in the store's order, never drawn backwards when the clock moved back (the
    // timeline flags that as clock skew).
    let arrivals: Vec<(i64, i64)> = {
        let ordered: Vec<&JobDelivery> = job
            .arrival_order
            .iter()
            .filter_map(|id| deliveries.iter().find(|d| d.delivery_id == *id))
            .collect();
        let times = hookscope::domain::timeline::monotone(ordered.iter().map(|d| d.received_at_ms));
        ordered.iter().map(|d| d.delivery_id).zip(times).collect()
    };
    let arrival_span = span(arrivals.iter().map(|(_, ms)| *ms).collect());
    let x_in = |(start, end): (i64, i64), ms: i64| {
        left + (right - left) * ((ms - start) as f32 / (end - start) as f32)
    };
    let font = egui::FontId::proportional(12.0);
    let small = egui::FontId::monospace(11.0);
    // Markers closer than a marker's width are spread apart, keeping their order, so each one
    // can be seen and clicked (a burst arrives within milliseconds).
    const GAP: f32 = 16.0;
    // How high each delivery stacks on the creation lane; level 0 is an event's first delivery.
    let levels = stack_levels(deliveries);
    let mut created_xs: Vec<(i64, f32)> = deliveries
        .iter()
        .zip(&levels)
        .filter(|(_, level)| **level == 0)
        .map(|(d, _)| {
            (
                d.delivery_id,
                x_in(created_span, d.created_at_ms.unwrap_or(d.received_at_ms)),
            )
        })
        .collect();
    spread(&mut created_xs, left, right, GAP);
    let mut arrival_xs: Vec<(i64, f32)> = arrivals
        .iter()
        .map(|(id, ms)| (*id, x_in(arrival_span, *ms)))
        .collect();
    spread(&mut arrival_xs, left, right, GAP);
    let created_x = |d: &JobDelivery| {
        // Retries share the x of their event's first delivery.
        let first = deliveries
            .iter()
            .find(|o| o.event_id.is_some() && o.event_id == d.event_id)
            .map(|o| o.delivery_id)
            .unwrap_or(d.delivery_id);
        created_xs
            .iter()
            .find(|(id, _)| *id == first)
            .map(|(_, x)| *x)
            .unwrap_or(left)
    };
    let arrival_x = |d: &JobDelivery| {
        arrival_xs
            .iter()
            .find(|(id, _)| *id == d.delivery_id)
            .map(|(_, x)| *x)
            .unwrap_or(left)
    };
    let labels = layout_labels(
        ui, deliveries, &levels, &created_x, &font, origin, full_width,
    );
    let label_rows = labels.iter().map(|l| l.row + 1).max().unwrap_or(1);
    let max_stack = levels.iter().copied().max().unwrap_or(0);
    let created_lane_offset = 20.0 + 14.0 * label_rows as f32 + 12.0 * max_stack as f32;
    // The job API's answers and what the simulator sent get lanes of their own when present.
    let resource_height = if job.polls.is_empty() { 0.0 } else { 66.0 };
    let sent_height = if job.sent.is_empty() { 0.0 } else { 66.0 };
    let height = created_lane_offset + 108.0 + resource_height + sent_height;
    let (rect, _) = ui.allocate_exact_size(egui::vec2(full_width, height), Sense::hover());
    let painter = ui.painter_at(rect);
    let created_lane = rect.top() + created_lane_offset;
    let arrival_lane = created_lane + 66.0;
    let resource_lane = arrival_lane + 66.0;
    let sent_lane = resource_lane + resource_height;
    let poll_times = hookscope::domain::timeline::monotone(job.polls.iter().map(|p| p.at_ms));
    let resource_span = span(poll_times.clone());
    let sent_span = span(job.sent.iter().map(|s| s.at_ms).collect());
    // A job only the API knows has no webhook lanes to draw.
    let mut lanes = Vec::new();
    if !deliveries.is_empty() {
        lanes.push((created_lane, "created", created_span));
        lanes.push((arrival_lane, "arrived", arrival_span));
    }
    if !job.polls.is_empty() {
        lanes.push((resource_lane, "job resource", resource_span));
    }
    if !job.sent.is_empty() {
        lanes.push((sent_lane, "sent", sent_span));
    }
    for (lane, name, (start, end)) in lanes {
        painter.text(
            egui::pos2(rect.left(), lane),
            egui::Align2::LEFT_CENTER,
            name,
            font.clone(),
            weak,
        );
        painter.line_segment(
            [egui::pos2(left, lane), egui::pos2(right, lane)],
            Stroke::new(1.0, weak),
        );
        let below = lane + 16.0;
        painter.text(
            egui::pos2(left, below),
            egui::Align2::LEFT_CENTER,
            full_time(start, &zone),
            small.clone(),
            weak,
        );
        painter.text(
            egui::pos2(right, below),
            egui::Align2::RIGHT_CENTER,
            format!("+{}", human_duration(((end - start) / 1000) as u64)),
            small.clone(),
            weak,
        );
    }
    // Retries of one event stack up on the creation lane.
    let mut open = None;
    for (d, &level) in deliveries.iter().zip(&levels) {
        let created = egui::pos2(created_x(d), created_lane - level as f32 * 12.0);
        let arrived = egui::pos2(arrival_x(d), arrival_lane);
        let color = marker_color(d);
        painter.line_segment(
            [created, arrived],
            Stroke::new(1.0, color.gamma_multiply(0.6)),
        );
        if d.created_at_ms.is_some() {
            painter.circle_filled(created, 5.0, color);
        } else {
            painter.circle_stroke(created, 5.0, Stroke::new(1.5, color));
        }
        painter.circle_filled(arrived, 5.0, color);
        if let Some(label) = labels.iter().find(|l| l.delivery_id == d.delivery_id) {
            painter.text(
                egui::pos2(label.x, created.y - 9.0 - label.row as f32 * 14.0),
                egui::Align2::CENTER_BOTTOM,
                &label.text,
                font.clone(),
                text_color,
            );
        }
        let rank = job.arrival_rank(d.delivery_id);
        for (point, lane) in [(created, "created"), (arrived, "arrived")] {
            let id = ui.scope_id().with(("marker", d.delivery_id, lane));
            let response = ui.interact(
                egui::Rect::from_center_size(point, egui::vec2(14.0, 14.0)),
                id,
                Sense::click(),
            );
            let label = format!("delivery #{} ({lane})", d.delivery_id);
            response.widget_info(|| {
                egui::WidgetInfo::labeled(egui::accesskit::Role::Button, true, &label)
            });
            let response = response.on_hover_text(format!(
                "#{} {} · event {}\ncreated {}\narrived {} ({} to arrive)\nsignature {}, timestamp {}, {}\nclick to open the delivery",
                d.delivery_id,
                d.state.as_deref().unwrap_or("-"),
                d.event_id.as_deref().unwrap_or("-"),
                d.created_at_ms.map(|ms| full_time(ms, &zone)).unwrap_or_else(|| "unknown".into()),
                full_time(d.received_at_ms, &zone),
                hookscope::domain::fmt::ordinal(rank),
                d.signature,
                d.timestamp,
                d.duplicate
            ));
            if response.clicked() {
                open = Some(d.delivery_id);
            }
        }
    }
    // The job API's answers: one marker per poll, its state above it when it changed.
    let mut poll_xs: Vec<(i64, f32)> = job
        .polls
        .iter()
        .zip(&poll_times)
        .map(|(p, ms)| (p.id, x_in(resource_span, *ms)))
        .collect();
    spread(&mut poll_xs, left, right, GAP);
    let mut last_state: Option<&str> = None;
    for (poll, (_, x)) in job.polls.iter().zip(&poll_xs) {
        let point = egui::pos2(*x, resource_lane);
        let color = poll_color(poll);
        painter.rect_filled(
            egui::Rect::from_center_size(point, egui::vec2(9.0, 9.0)),
            1.5,
            color,
        );
        let said = poll.state.as_deref().unwrap_or("?");
        if poll.failure().is_none() && last_state != Some(said) {
            painter.text(
                egui::pos2(*x, resource_lane - 9.0),
                egui::Align2::CENTER_BOTTOM,
                said,
                small.clone(),
                text_color,
            );
            last_state = Some(said);
        }
        let id = ui.scope_id().with(("poll", poll.id));
        let response = ui.interact(
            egui::Rect::from_center_size(point, egui::vec2(14.0, 14.0)),
            id,
            Sense::hover(),
        );
        let label = format!("job resource at {}", full_time(poll.at_ms, &zone));
        response
            .widget_info(|| egui::WidgetInfo::labeled(egui::accesskit::Role::Image, true, &label));
        let answer = match poll.failure() {
            None => format!("said {said}"),
            Some(why) => format!("no state: {why}"),
        };
        response.on_hover_text(format!(
            "the job API at {}
{answer}
{} ms",
            full_time(poll.at_ms, &zone),
            poll.latency_ms
        ));
    }
    // What the provider simulator sent: one tick per attempt, green when answered 2xx.
    let mut sent_xs: Vec<(i64, f32)> = job
        .sent
        .iter()
        .enumerate()
        .map(|(i, s)| (i as i64, x_in(sent_span, s.at_ms)))
        .collect();
    spread(&mut sent_xs, left, right, 6.0);
    for (sent, (i, x)) in job.sent.iter().zip(&sent_xs) {
        let color = match sent.status {
            Some(s) if (200..300).contains(&s) => widgets::PASS,
            _ => widgets::FAIL,
        };
        let point = egui::pos2(*x, sent_lane);
        painter.line_segment(
            [point - egui::vec2(0.0, 6.0), point + egui::vec2(0.0, 6.0)],
            Stroke::new(2.5, color),
        );
        let response = ui.interact(
            egui::Rect::from_center_size(point, egui::vec2(8.0, 14.0)),
            ui.scope_id().with(("sent", *i)),
            Sense::hover(),
        );
        response.on_hover_text(format!(
            "sent at {}
{} in {} ms",
            full_time(sent.at_ms, &zone),
            sent.status
                .map(|s| format!("answered {s}"))
                .unwrap_or_else(|| "no answer".into()),
            sent.latency_ms
        ));
    }
    if let Some(id) = open {
        app.state.view = View::Deliveries;
        app.state.filter = format!("job:{}", job.job_id);
        app.select(id);
        app.scroll_to_selected = true;
    }
    ui.add_space(4.0);
    egui::ScrollArea::vertical().id_salt("job_flags").show(ui, |ui| {
        if job.problems().next().is_none() {
            ui.weak("Nothing to flag: the events arrived in order, once each, and the job finished.");
        }
        egui::Grid::new("job_flags_grid").num_columns(2).spacing([10.0, 6.0]).show(ui, |ui| {
            for flag in job.problems() {
                widgets::badge(ui, &flag_name(flag.kind), flag_color(flag.kind), "");
                ui.add(egui::Label::new(RichText::new(&flag.detail)).wrap());
                ui.end_row();
            }
            for flag in job.hints() {
                ui.weak("hint");
                ui.add(egui::Label::new(RichText::new(&flag.detail).weak()).wrap());
                ui.end_row();
            }
        });
    });
}

/// A state label over a creation marker: where it is drawn and on which row above the lane.
struct Label {
    delivery_id: i64,
    text: String,
    /// The centre, kept inside the drawing.
    x: f32,
    row: usize,
}

/// How high each delivery stacks on the creation lane: retries of one event go up one level each.
fn stack_levels(deliveries: &[JobDelivery]) -> Vec<usize> {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    deliveries
        .iter()
        .map(|d| match d.event_id.as_deref() {
            Some(event) => match seen.iter_mut().find(|(e, _)| *e == event) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    seen.push((event, 0));
                    0
                }
            },
            None => 0,
        })
        .collect()
}

/// Places the state label of each event's first delivery: centred over its marker, kept inside
/// `origin..origin + width`, and raised a row wherever it would overlap a label to its left.
fn layout_labels(
    ui: &egui::Ui,
    deliveries: &[JobDelivery],
    levels: &[usize],
    created_x: &dyn Fn(&JobDelivery) -> f32,
    font: &egui::FontId,
    origin: f32,
    width: f32,
) -> Vec<Label> {
    let mut placed: Vec<(Label, f32)> = Vec::new();
    let mut firsts: Vec<(&JobDelivery, f32)> = deliveries
        .iter()
        .zip(levels)
        .filter(|(_, level)| **level == 0)
        .map(|(d, _)| (d, created_x(d)))
        .collect();
    firsts.sort_by(|a, b| a.1.total_cmp(&b.1));
    for (d, marker_x) in firsts {
        let text = d
            .state
            .as_deref()
            .or(d.event_type.as_deref())
            .unwrap_or("event")
            .to_string();
        let text_width = ui
            .painter()
            .layout_no_wrap(text.clone(), font.clone(), egui::Color32::WHITE)
            .size()
            .x;
        let x = marker_x.clamp(
            origin + text_width / 2.0,
            (origin + width - text_width / 2.0 - 2.0).max(origin + text_width / 2.0),
        );
        let (start, end) = (x - text_width / 2.0 - 4.0, x + text_width / 2.0 + 4.0);
        let rows = label_rows(placed.iter().map(|(l, end)| (l.row, *end)), start);
        placed.push((
            Label {
                delivery_id: d.delivery_id,
                text,
                x,
                row: rows,
            },
            end,
        ));
    }
    placed.into_iter().map(|(label, _)| label).collect()
}

/// The lowest row whose labels all end before `start`, given each placed label's row and end.
fn label_rows(placed: impl Iterator<Item = (usize, f32)>, start: f32) -> usize {
    let mut ends: Vec<f32> = Vec::new();
    for (row, end) in placed {
        if ends.len() <= row {
            ends.resize(row + 1, f32::MIN);
        }
        ends[row] = ends[row].max(end);
    }
    ends.iter()
        .position(|end| *end < start)
        .unwrap_or(ends.len())
}

/// Pushes positions apart to at least `gap`, in order, within `left..=right` where they fit.
fn spread(xs: &mut [(i64, f32)], left: f32, right: f32, gap: f32) {
    for i in 1..xs.len() {
        xs[i].1 = xs[i].1.max(xs[i - 1].1 + gap);
    }
    if let Some(last) = xs.last_mut() {
        last.1 = last.1.min(right);
    }
    for i in (0..xs.len().saturating_sub(1)).rev() {
        xs[i].1 = xs[i].1.min(xs[i + 1].1 - gap);
    }
    for x in xs.iter_mut() {
        x.1 = x.1.max(left);
    }
}

#[cfg(test)]
mod tests {
    use super::label_rows;

    #[test]
    fn a_label_goes_to_the_lowest_row_where_it_overlaps_nothing() {
        // Three labels 10 px apart, each 30 px wide: rows 0, 1, 2; a fourth far right: row 0.
        let mut placed: Vec<(usize, f32)> = Vec::new();
        for start in [0.0, 10.0, 20.0, 100.0] {
            let row = label_rows(placed.iter().copied(), start);
            placed.push((row, start + 30.0));
        }
        assert_eq!(
            placed.iter().map(|(row, _)| *row).collect::<Vec<_>>(),
            [0, 1, 2, 0]
        );
        // A label starting where row 0 is still busy but row 1 is free takes row 1.
        assert_eq!(label_rows([(0, 50.0), (1, 20.0)].into_iter(), 25.0), 1);
    }
}

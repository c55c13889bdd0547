//! A job's timeline: a lane for the events' creation time and one for their arrival, joined by
//! a line per delivery (reordering shows as crossing lines; retries of one event stack up), and
//! lanes for the job API's answers and what the simulator sent when there are any.
//!
//! [`TimelineLayout`] places everything (lanes, markers, state labels) from the job alone, and
//! is tested on its own; [`timeline_ui`] paints it and makes each marker open its delivery.

use eframe::egui::{self, Color32, RichText, Sense, Stroke};
use hookscope::domain::checks::{SignatureStatus, TimestampStatus};
use hookscope::domain::fmt::{Zone, full_time, human_duration};
use hookscope::domain::reconcile::Poll;
use hookscope::domain::timeline::{JobDelivery, JobTimeline, monotone};

use super::widgets;

/// Markers closer than a marker's width are spread apart, keeping their order, so each one can
/// be seen and clicked (a burst arrives within milliseconds).
const GAP: f32 = 16.0;
/// The space between two lanes.
const LANE: f32 = 66.0;
/// The height of a row of state labels.
const LABEL_ROW: f32 = 14.0;
/// How much higher each retry of an event sits on the creation lane.
const STACK: f32 = 12.0;
/// Where the lanes start, right of their names.
const AXIS_LEFT: f32 = 90.0;

/// A state label over a creation marker: its centre and its row above the lane.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub delivery_id: i64,
    pub text: String,
    /// The centre, kept inside the drawing.
    pub x: f32,
    /// 0 is the row just above the markers; each row up clears the labels below it.
    pub row: usize,
    /// The label's width, as measured.
    pub width: f32,
}

/// One delivery's two markers.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub delivery_id: i64,
    /// On the creation lane; retries share their event's first delivery's x.
    pub created_x: f32,
    /// How many levels up it stacks (0: an event's first delivery).
    pub level: usize,
    /// On the arrival lane.
    pub arrived_x: f32,
}

/// A lane: its name, its height from the drawing's top, and the times its ends stand for.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    pub name: &'static str,
    pub y: f32,
    pub span: (i64, i64),
}

/// Where everything of a job's timeline goes, in a drawing `width` wide from x `origin`, its
/// heights measured from the drawing's top.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineLayout {
    pub left: f32,
    pub right: f32,
    pub height: f32,
    pub lanes: Vec<Lane>,
    /// One per delivery, in the job's event-time order.
    pub markers: Vec<Marker>,
    pub labels: Vec<Label>,
    /// The x of each poll of the job API, in order.
    pub polls: Vec<f32>,
    /// The x of each attempt the simulator sent, in order.
    pub sent: Vec<f32>,
}

/// The first and last of `times`, at least a second apart (a lane needs a length).
fn span(times: &[i64]) -> (i64, i64) {
    let start = times.iter().copied().min().unwrap_or(0);
    let end = times
        .iter()
        .copied()
        .max()
        .unwrap_or(start)
        .max(start + 1000);
    (start, end)
}

impl TimelineLayout {
    /// Lays `job` out; `measure` gives a label's width.
    pub fn new(job: &JobTimeline, origin: f32, width: f32, measure: &dyn Fn(&str) -> f32) -> Self {
        let left = origin + AXIS_LEFT;
        let right = origin + width - 24.0;
        let x_in = |(start, end): (i64, i64), ms: i64| {
            left + (right - left) * ((ms - start) as f32 / (end - start) as f32)
        };
        let deliveries = &job.by_event_time;
        let created = created_times(deliveries);
        let arrivals = arrivals(job);
        let created_span = span(&created);
        let arrival_span = span(&arrivals.iter().map(|(_, ms)| *ms).collect::<Vec<_>>());
        let markers = markers(
            deliveries,
            (&created, created_span),
            (&arrivals, arrival_span),
            (left, right),
            &x_in,
        );
        let labels = layout_labels(deliveries, &markers, measure, origin, width);
        let label_rows = labels.iter().map(|l| l.row + 1).max().unwrap_or(1);
        let max_stack = markers.iter().map(|m| m.level).max().unwrap_or(0);
        let created_y = 20.0 + LABEL_ROW * label_rows as f32 + STACK * max_stack as f32;
        let arrival_y = created_y + LANE;
        let poll_times = monotone(job.polls.iter().map(|p| p.at_ms));
        let sent_times: Vec<i64> = job.sent.iter().map(|s| s.at_ms).collect();
        // Each lane has its own scale: creation and arrival can be hours apart (a backlog, a
        // skewed clock), and a shared axis would squeeze one of them into a point.
        let mut lanes = Vec::new();
        // A job only the API knows has no webhook lanes to draw.
        if !deliveries.is_empty() {
            lanes.push(Lane {
                name: "created",
                y: created_y,
                span: created_span,
            });
            lanes.push(Lane {
                name: "arrived",
                y: arrival_y,
                span: arrival_span,
            });
        }
        let mut below = arrival_y + LANE;
        let (resource_span, sent_span) = (span(&poll_times), span(&sent_times));
        if !job.polls.is_empty() {
            lanes.push(Lane {
                name: "job resource",
                y: below,
                span: resource_span,
            });
            below += LANE;
        }
        if !job.sent.is_empty() {
            lanes.push(Lane {
                name: "sent",
                y: below,
                span: sent_span,
            });
            below += LANE;
        }
        let mut polls: Vec<f32> = poll_times
            .iter()
            .map(|ms| x_in(resource_span, *ms))
            .collect();
        spread(&mut polls, left, right, GAP);
        let mut sent: Vec<f32> = sent_times.iter().map(|ms| x_in(sent_span, *ms)).collect();
        spread(&mut sent, left, right, 6.0);
        Self {
            left,
            right,
            height: below - LANE + 42.0,
            lanes,
            markers,
            labels,
            polls,
            sent,
        }
    }

    /// The lane named `name`, when the job has it.
    pub fn lane(&self, name: &str) -> Option<&Lane> {
        self.lanes.iter().find(|l| l.name == name)
    }
}

/// When each delivery's event was created (its arrival when it does not say).
fn created_times(deliveries: &[JobDelivery]) -> Vec<i64> {
    deliveries
        .iter()
        .map(|d| d.created_at_ms.unwrap_or(d.received_at_ms))
        .collect()
}

/// Arrivals in the store's order, never backwards when the clock moved back (the timeline
/// flags that as clock skew): (delivery id, time).
fn arrivals(job: &JobTimeline) -> Vec<(i64, i64)> {
    let ordered: Vec<&JobDelivery> = job
        .arrival_order
        .iter()
        .filter_map(|id| job.by_event_time.iter().find(|d| d.delivery_id == *id))
        .collect();
    let times = monotone(ordered.iter().map(|d| d.received_at_ms));
    ordered.iter().map(|d| d.delivery_id).zip(times).collect()
}

/// Each delivery's markers: events spread apart on the creation lane (retries at their first
/// delivery's x, a level up each), arrivals spread apart on theirs.
fn markers(
    deliveries: &[JobDelivery],
    (created, created_span): (&[i64], (i64, i64)),
    (arrivals, arrival_span): (&[(i64, i64)], (i64, i64)),
    (left, right): (f32, f32),
    x_in: &dyn Fn((i64, i64), i64) -> f32,
) -> Vec<Marker> {
    let levels = stack_levels(deliveries);
    let firsts: Vec<usize> = (0..deliveries.len()).filter(|i| levels[*i] == 0).collect();
    let mut created_xs: Vec<f32> = firsts
        .iter()
        .map(|i| x_in(created_span, created[*i]))
        .collect();
    spread(&mut created_xs, left, right, GAP);
    let mut arrival_xs: Vec<f32> = arrivals
        .iter()
        .map(|(_, ms)| x_in(arrival_span, *ms))
        .collect();
    spread(&mut arrival_xs, left, right, GAP);
    deliveries
        .iter()
        .zip(&levels)
        .enumerate()
        .map(|(i, (d, &level))| {
            // Retries share the x of their event's first delivery.
            let first = deliveries
                .iter()
                .position(|o| o.event_id.is_some() && o.event_id == d.event_id)
                .unwrap_or(i);
            let created_x = firsts
                .iter()
                .position(|f| *f == first)
                .map_or(left, |k| created_xs[k]);
            let arrived_x = arrivals
                .iter()
                .position(|(id, _)| *id == d.delivery_id)
                .map_or(left, |k| arrival_xs[k]);
            Marker {
                delivery_id: d.delivery_id,
                created_x,
                level,
                arrived_x,
            }
        })
        .collect()
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
    deliveries: &[JobDelivery],
    markers: &[Marker],
    measure: &dyn Fn(&str) -> f32,
    origin: f32,
    width: f32,
) -> Vec<Label> {
    let mut firsts: Vec<(&JobDelivery, f32)> = deliveries
        .iter()
        .zip(markers)
        .filter(|(_, m)| m.level == 0)
        .map(|(d, m)| (d, m.created_x))
        .collect();
    firsts.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut placed: Vec<(Label, f32)> = Vec::new();
    for (d, marker_x) in firsts {
        let text = d
            .state
            .as_deref()
            .or(d.event_type.as_deref())
            .unwrap_or("event")
            .to_string();
        let text_width = measure(&text);
        let half = text_width / 2.0;
        let x = marker_x.clamp(
            origin + half,
            (origin + width - half - 2.0).max(origin + half),
        );
        let (start, end) = (x - half - 4.0, x + half + 4.0);
        let row = label_rows(placed.iter().map(|(l, end)| (l.row, *end)), start);
        let label = Label {
            delivery_id: d.delivery_id,
            text,
            x,
            row,
            width: text_width,
        };
        placed.push((label, end));
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
fn spread(xs: &mut [f32], left: f32, right: f32, gap: f32) {
    for i in 1..xs.len() {
        xs[i] = xs[i].max(xs[i - 1] + gap);
    }
    if let Some(last) = xs.last_mut() {
        *last = last.min(right);
    }
    for i in (0..xs.len().saturating_sub(1)).rev() {
        xs[i] = xs[i].min(xs[i + 1] - gap);
    }
    for x in xs.iter_mut() {
        *x = x.max(left);
    }
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

/// What painting needs besides the layout.
struct Paint<'a> {
    painter: egui::Painter,
    top: f32,
    zone: &'a Zone,
    font: egui::FontId,
    small: egui::FontId,
    text: Color32,
    weak: Color32,
}

/// Paints `job`'s timeline into `ui`; returns the delivery whose marker was clicked.
pub fn timeline_ui(ui: &mut egui::Ui, job: &JobTimeline, zone: &Zone) -> Option<i64> {
    let font = egui::FontId::proportional(12.0);
    let measure = |text: &str| {
        ui.painter()
            .layout_no_wrap(text.to_string(), font.clone(), Color32::WHITE)
            .size()
            .x
    };
    let layout = TimelineLayout::new(job, ui.cursor().left(), ui.available_width(), &measure);
    let full_width = ui.available_width();
    let (rect, _) = ui.allocate_exact_size(egui::vec2(full_width, layout.height), Sense::hover());
    let paint = Paint {
        painter: ui.painter_at(rect),
        top: rect.top(),
        zone,
        font,
        small: egui::FontId::monospace(11.0),
        text: ui.visuals().text_color(),
        weak: ui.visuals().weak_text_color(),
    };
    paint_lanes(&paint, &layout, rect.left());
    let open = paint_deliveries(ui, &paint, &layout, job);
    if let Some(lane) = layout.lane("job resource") {
        paint_polls(ui, &paint, &layout.polls, lane.y, &job.polls);
    }
    if let Some(lane) = layout.lane("sent") {
        paint_sent(ui, &paint, &layout.sent, lane.y, job);
    }
    open
}

/// Each lane's name, axis, start time and length.
fn paint_lanes(paint: &Paint, layout: &TimelineLayout, rect_left: f32) {
    for lane in &layout.lanes {
        let y = paint.top + lane.y;
        let (start, end) = lane.span;
        paint.painter.text(
            egui::pos2(rect_left, y),
            egui::Align2::LEFT_CENTER,
            lane.name,
            paint.font.clone(),
            paint.weak,
        );
        paint.painter.line_segment(
            [egui::pos2(layout.left, y), egui::pos2(layout.right, y)],
            Stroke::new(1.0, paint.weak),
        );
        let below = y + 16.0;
        paint.painter.text(
            egui::pos2(layout.left, below),
            egui::Align2::LEFT_CENTER,
            full_time(start, paint.zone),
            paint.small.clone(),
            paint.weak,
        );
        paint.painter.text(
            egui::pos2(layout.right, below),
            egui::Align2::RIGHT_CENTER,
            format!("+{}", human_duration(((end - start) / 1000) as u64)),
            paint.small.clone(),
            paint.weak,
        );
    }
}

/// Each delivery's markers, the line joining them and its event's state label; returns the
/// delivery whose marker was clicked.
fn paint_deliveries(
    ui: &mut egui::Ui,
    paint: &Paint,
    layout: &TimelineLayout,
    job: &JobTimeline,
) -> Option<i64> {
    let (Some(created_lane), Some(arrival_lane)) = (layout.lane("created"), layout.lane("arrived"))
    else {
        return None;
    };
    let mut open = None;
    for (d, marker) in job.by_event_time.iter().zip(&layout.markers) {
        let created_y = paint.top + created_lane.y - marker.level as f32 * STACK;
        let created = egui::pos2(marker.created_x, created_y);
        let arrived = egui::pos2(marker.arrived_x, paint.top + arrival_lane.y);
        let color = marker_color(d);
        paint.painter.line_segment(
            [created, arrived],
            Stroke::new(1.0, color.gamma_multiply(0.6)),
        );
        if d.created_at_ms.is_some() {
            paint.painter.circle_filled(created, 5.0, color);
        } else {
            paint
                .painter
                .circle_stroke(created, 5.0, Stroke::new(1.5, color));
        }
        paint.painter.circle_filled(arrived, 5.0, color);
        if let Some(label) = layout
            .labels
            .iter()
            .find(|l| l.delivery_id == d.delivery_id)
        {
            paint.painter.text(
                egui::pos2(label.x, created.y - 9.0 - label.row as f32 * LABEL_ROW),
                egui::Align2::CENTER_BOTTOM,
                &label.text,
                paint.font.clone(),
                paint.text,
            );
        }
        for (point, lane) in [(created, "created"), (arrived, "arrived")] {
            if marker_response(ui, paint, job, d, point, lane).clicked() {
                open = Some(d.delivery_id);
            }
        }
    }
    open
}

/// A marker's click area, its name for screen readers and its sentence on hover.
fn marker_response(
    ui: &mut egui::Ui,
    paint: &Paint,
    job: &JobTimeline,
    d: &JobDelivery,
    point: egui::Pos2,
    lane: &str,
) -> egui::Response {
    let zone = paint.zone;
    let id = ui.scope_id().with(("marker", d.delivery_id, lane));
    let response = ui.interact(
        egui::Rect::from_center_size(point, egui::vec2(14.0, 14.0)),
        id,
        Sense::click(),
    );
    let label = format!("delivery #{} ({lane})", d.delivery_id);
    response.widget_info(|| egui::WidgetInfo::labeled(egui::accesskit::Role::Button, true, &label));
    response.on_hover_text(format!(
        "#{} {} · event {}\ncreated {}\narrived {} ({} to arrive)\nsignature {}, timestamp {}, {}\nclick to open the delivery",
        d.delivery_id,
        d.state.as_deref().unwrap_or("-"),
        d.event_id.as_deref().unwrap_or("-"),
        d.created_at_ms.map(|ms| full_time(ms, zone)).unwrap_or_else(|| "unknown".into()),
        full_time(d.received_at_ms, zone),
        hookscope::domain::fmt::ordinal(job.arrival_rank(d.delivery_id)),
        d.signature,
        d.timestamp,
        d.duplicate
    ))
}

/// The job API's answers: one marker per poll, its state above it when it changed.
fn paint_polls(ui: &mut egui::Ui, paint: &Paint, xs: &[f32], lane_y: f32, polls: &[Poll]) {
    let zone = paint.zone;
    let mut last_state: Option<&str> = None;
    for (poll, x) in polls.iter().zip(xs) {
        let point = egui::pos2(*x, paint.top + lane_y);
        paint.painter.rect_filled(
            egui::Rect::from_center_size(point, egui::vec2(9.0, 9.0)),
            1.5,
            poll_color(poll),
        );
        let said = poll.state.as_deref().unwrap_or("?");
        if poll.failure().is_none() && last_state != Some(said) {
            paint.painter.text(
                egui::pos2(*x, point.y - 9.0),
                egui::Align2::CENTER_BOTTOM,
                said,
                paint.small.clone(),
                paint.text,
            );
            last_state = Some(said);
        }
        let id = ui.scope_id().with(("poll", poll.id));
        let response = ui.interact(
            egui::Rect::from_center_size(point, egui::vec2(14.0, 14.0)),
            id,
            Sense::hover(),
        );
        let label = format!("job resource at {}", full_time(poll.at_ms, zone));
        response
            .widget_info(|| egui::WidgetInfo::labeled(egui::accesskit::Role::Image, true, &label));
        let answer = match poll.failure() {
            None => format!("said {said}"),
            Some(why) => format!("no state: {why}"),
        };
        response.on_hover_text(format!(
            "the job API at {}\n{answer}\n{} ms",
            full_time(poll.at_ms, zone),
            poll.latency_ms
        ));
    }
}

/// What the provider simulator sent: one tick per attempt, green when answered 2xx.
fn paint_sent(ui: &mut egui::Ui, paint: &Paint, xs: &[f32], lane_y: f32, job: &JobTimeline) {
    for (i, (sent, x)) in job.sent.iter().zip(xs).enumerate() {
        let color = match sent.status {
            Some(s) if (200..300).contains(&s) => widgets::PASS,
            _ => widgets::FAIL,
        };
        let point = egui::pos2(*x, paint.top + lane_y);
        paint.painter.line_segment(
            [point - egui::vec2(0.0, 6.0), point + egui::vec2(0.0, 6.0)],
            Stroke::new(2.5, color),
        );
        let response = ui.interact(
            egui::Rect::from_center_size(point, egui::vec2(8.0, 14.0)),
            ui.scope_id().with(("sent", i)),
            Sense::hover(),
        );
        response.on_hover_text(format!(
            "sent at {}\n{} in {} ms",
            full_time(sent.at_ms, paint.zone),
            sent.status
                .map(|s| format!("answered {s}"))
                .unwrap_or_else(|| "no answer".into()),
            sent.latency_ms
        ));
    }
}

/// The job's flags, a sentence each, and its hints.
pub fn flags_ui(ui: &mut egui::Ui, job: &JobTimeline) {
    egui::ScrollArea::vertical().id_salt("job_flags").show(ui, |ui| {
        if job.problems().next().is_none() {
            ui.weak("Nothing to flag: the events arrived in order, once each, and the job finished.");
        }
        egui::Grid::new("job_flags_grid").num_columns(2).spacing([10.0, 6.0]).show(ui, |ui| {
            for flag in job.problems() {
                widgets::badge(ui, &super::jobs::flag_name(flag.kind), super::jobs::flag_color(flag.kind), "");
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

#[cfg(test)]
mod tests {
    use super::*;
    use hookscope::domain::checks::DuplicateStatus;

    fn delivery(
        id: i64,
        event: &str,
        state: &str,
        created_ms: i64,
        received_ms: i64,
    ) -> JobDelivery {
        JobDelivery {
            delivery_id: id,
            event_id: Some(event.into()),
            event_type: Some(format!("job.{state}")),
            state: Some(state.into()),
            created_at_ms: Some(created_ms),
            received_at_ms: received_ms,
            signature: SignatureStatus::Pass,
            timestamp: TimestampStatus::Pass,
            duplicate: DuplicateStatus::First,
        }
    }

    fn job(deliveries: Vec<JobDelivery>, arrival_order: Vec<i64>) -> JobTimeline {
        JobTimeline {
            job_id: "job_1".into(),
            current_state: Some("completed".into()),
            terminal: true,
            first_seen_ms: 0,
            last_seen_ms: 0,
            events: deliveries.len(),
            by_event_time: deliveries,
            arrival_order,
            flags: Vec::new(),
            api_state: None,
            polls: Vec::new(),
            sent: Vec::new(),
        }
    }

    /// About 7 px a character, as egui's 12 px proportional font is.
    fn measure(text: &str) -> f32 {
        text.len() as f32 * 7.0
    }

    #[test]
    fn three_events_one_millisecond_apart_get_labels_that_overlap_nothing() {
        let t = 1_700_000_000_000;
        let job = job(
            vec![
                delivery(1, "evt_1", "queued", t, t + 100),
                delivery(2, "evt_2", "processing", t + 1, t + 101),
                delivery(3, "evt_3", "completed", t + 2, t + 102),
            ],
            vec![1, 2, 3],
        );
        let layout = TimelineLayout::new(&job, 0.0, 900.0, &measure);
        assert_eq!(layout.labels.len(), 3);
        for (i, a) in layout.labels.iter().enumerate() {
            for b in &layout.labels[i + 1..] {
                let apart = (a.x - b.x).abs() >= (a.width + b.width) / 2.0;
                assert!(
                    a.row != b.row || apart,
                    "{:?} and {:?} overlap on row {}",
                    a.text,
                    b.text,
                    a.row
                );
            }
        }
        // The markers are spread a marker's width apart, in their order.
        let xs: Vec<f32> = layout.markers.iter().map(|m| m.created_x).collect();
        assert!(xs.windows(2).all(|w| w[1] - w[0] >= GAP - 0.01), "{xs:?}");
        let rows = layout.labels.iter().map(|l| l.row).max().expect("labels") + 1;
        assert!(rows > 1, "1 ms apart, the three labels cannot share a row");
    }

    #[test]
    fn retries_stack_over_their_first_delivery_and_arrivals_keep_store_order() {
        let t = 1_700_000_000_000;
        let job = job(
            vec![
                delivery(1, "evt_1", "processing", t, t + 5_000),
                delivery(3, "evt_1", "processing", t, t + 9_000),
                delivery(2, "evt_2", "completed", t + 2_000, t + 3_000),
            ],
            vec![2, 1, 3],
        );
        let layout = TimelineLayout::new(&job, 0.0, 900.0, &measure);
        let by_id = |id: i64| {
            layout
                .markers
                .iter()
                .find(|m| m.delivery_id == id)
                .expect("a marker")
        };
        assert_eq!((by_id(1).level, by_id(3).level, by_id(2).level), (0, 1, 0));
        assert_eq!(by_id(3).created_x, by_id(1).created_x);
        // Arrived: 2 first, then 1, then 3 (the line from 2 crosses the others: out of order).
        assert!(by_id(2).arrived_x < by_id(1).arrived_x && by_id(1).arrived_x < by_id(3).arrived_x);
        assert!(by_id(2).created_x > by_id(1).created_x);
        // One label per event, not per retry.
        assert_eq!(layout.labels.len(), 2);
        let names: Vec<&str> = layout.lanes.iter().map(|l| l.name).collect();
        assert_eq!(names, ["created", "arrived"]);
    }

    #[test]
    fn a_job_only_the_api_knows_has_only_its_resource_lane() {
        let mut job = job(Vec::new(), Vec::new());
        job.polls.push(Poll {
            id: 1,
            job_id: "job_1".into(),
            endpoint: "/hooks".into(),
            at_ms: 1_700_000_000_000,
            status: Some(200),
            state: Some("running".into()),
            latency_ms: 12,
            error: None,
            result_url: None,
            expires_at_ms: None,
            output_status: None,
        });
        let layout = TimelineLayout::new(&job, 0.0, 900.0, &measure);
        let names: Vec<&str> = layout.lanes.iter().map(|l| l.name).collect();
        assert_eq!(names, ["job resource"]);
        assert_eq!(layout.polls.len(), 1);
        assert!(layout.markers.is_empty() && layout.labels.is_empty());
    }

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

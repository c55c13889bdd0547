//! The *Replay* window: the selected rows, every delivery matching the filter, or a job, sent
//! again to a handler at a rate; a progress bar with the count, the rate and the time left, a
//! Stop button, and at the end the summary with each failure linking to its delivery. The run
//! is `app::replay`, the same as `hookscope replay`.

use eframe::egui::{self, RichText};
use hookscope::app::replay::{self, Pace, ReplayRequest, Selection};
use hookscope::engine::{Command, ReplayView};

use super::shared::Shared;
use super::widgets;

/// What the window replays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// The rows selected in the list (or the one shown), or every row the filter matches.
    Rows(Vec<i64>),
    /// A job's deliveries.
    Job(String),
}

/// Where the deliveries come from, when the window was opened on rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The rows selected.
    Rows,
    /// Every row the list's filter matches.
    Matching,
    /// A fixtures folder or a HAR file, stored first.
    File,
}

/// How fast the window replays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PaceMode {
    /// At the rate typed.
    Rate,
    /// At the original spacing, scaled.
    Spacing,
    /// As fast as the concurrency bound allows.
    Asap,
}

/// The *Replay* window's form and the run it shows.
pub struct ReplayForm {
    /// Whether the window is open.
    pub open: bool,
    /// What the Replay button was pressed on.
    pub choice: Choice,
    /// What to take when the choice is rows: them, every matching row, or a file.
    source: Source,
    /// A fixtures folder or a HAR file (`Source::File`).
    file: String,
    /// How fast.
    pace: PaceMode,
    /// The original spacing's divisor (`PaceMode::Spacing`).
    speed: f64,
    /// The scheme to re-sign with (`None`: each delivery's).
    scheme: Option<String>,
    pub(crate) url: String,
    pub(crate) resign: bool,
    /// The secret to re-sign with (empty: each delivery's endpoint's).
    secret: String,
    new_ids: bool,
    rate: String,
    concurrency: usize,
    insecure: bool,
    /// What the engine last reported.
    pub view: Option<ReplayView>,
}

impl Default for ReplayForm {
    fn default() -> Self {
        Self {
            open: false,
            choice: Choice::Rows(Vec::new()),
            source: Source::Rows,
            file: String::new(),
            pace: PaceMode::Rate,
            speed: 10.0,
            scheme: None,
            url: "http://localhost:3000/webhooks".into(),
            resign: true,
            secret: String::new(),
            new_ids: false,
            rate: "20/s".into(),
            concurrency: replay::DEFAULT_CONCURRENCY,
            insecure: false,
            view: None,
        }
    }
}

impl ReplayForm {
    /// Whether a replay is running (the window cannot start another).
    pub fn running(&self) -> bool {
        self.view
            .as_ref()
            .is_some_and(|v| v.summary.is_none() && v.failed.is_none())
    }
}

impl ReplayForm {
    /// Opens the window on `choice`, keeping the form's last values.
    pub fn open_on(&mut self, choice: Choice) {
        if !self.running() {
            self.view = None;
        }
        self.source = Source::Rows;
        self.choice = choice;
        self.open = true;
    }

    /// The engine's report of the run: a summary at the end opens the window on it.
    pub fn reported(&mut self, mut view: ReplayView) {
        if let Some(summary) = &mut view.summary {
            // Each delivery the run refused is said in the window's terms.
            summary.word(super::refusals::say);
            self.open = true;
        }
        self.view = Some(view);
    }

    /// The *Replay* window, when open; `matching` is how many deliveries the list's filter matches.
    pub fn window(&mut self, ctx: &egui::Context, shared: &mut Shared, matching: usize) {
        if !self.open {
            return;
        }
        let mut open = true;
        egui::Window::new("Replay")
            .open(&mut open)
            .collapsible(false)
            .resizable(true)
            .default_width(520.0)
            .pivot(egui::Align2::CENTER_CENTER)
            .default_pos(ctx.content_rect().center())
            .show(ctx, |ui| match self.view.clone() {
                Some(view) => self.run_ui(ui, shared, &view),
                None => self.form_ui(ui, shared, matching),
            });
        // Closing the window does not stop a run; its summary waits for the next opening.
        self.open = open;
        if self.running() {
            ctx.request_repaint_after(std::time::Duration::from_millis(200));
        }
    }

    fn form_ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared, matching: usize) {
        let filter = shared.filter.trim().to_string();
        self.source_ui(ui, &filter, matching);
        ui.add_space(6.0);
        self.pace_grid_ui(ui);
        let schemes = super::send::scheme_names(&shared.saved.config);
        self.signing_ui(ui, &schemes);
        ui.add_space(6.0);
        if ui.button(RichText::new("Start replay").strong()).clicked() {
            self.start(shared);
        }
    }

    /// What to replay: the rows, every matching one, a file; or a job's deliveries.
    fn source_ui(&mut self, ui: &mut egui::Ui, filter: &str, matching: usize) {
        let form = self;
        match &form.choice {
            Choice::Rows(ids) => {
                let rows = match ids.len() {
                    1 => format!("delivery #{}", ids[0]),
                    n => format!("the {n} selected deliveries"),
                };
                ui.radio_value(&mut form.source, Source::Rows, rows);
                let everything = if filter.is_empty() {
                    format!("all {matching} stored deliveries")
                } else {
                    format!("all {matching} deliveries matching {filter}")
                };
                ui.radio_value(&mut form.source, Source::Matching, everything);
                ui.horizontal(|ui| {
                    ui.radio_value(
                        &mut form.source,
                        Source::File,
                        "a fixtures folder or HAR file:",
                    );
                    let edit = ui.add_enabled(
                        form.source == Source::File,
                        egui::TextEdit::singleline(&mut form.file)
                            .desired_width(260.0)
                            .hint_text("fixtures/ or morning.har (stored first)"),
                    );
                    if edit.clicked() {
                        form.source = Source::File;
                    }
                });
            }
            Choice::Job(job) => {
                ui.label(format!("Every delivery of job {job}, in the order stored"));
            }
        }
    }

    /// Where to, how fast, how many at once.
    fn pace_grid_ui(&mut self, ui: &mut egui::Ui) {
        let form = self;
        egui::Grid::new("replay_form")
            .num_columns(2)
            .spacing([12.0, 6.0])
            .show(ui, |ui| {
                let label = ui.label("To");
                ui.add(egui::TextEdit::singleline(&mut form.url).desired_width(320.0))
                    .labelled_by(label.id);
                ui.end_row();
                ui.label("Pace");
                ui.horizontal(|ui| {
                    ui.radio_value(&mut form.pace, PaceMode::Rate, "rate");
                    ui.add_enabled(
                        form.pace == PaceMode::Rate,
                        egui::TextEdit::singleline(&mut form.rate).desired_width(70.0),
                    )
                    .on_hover_text("20/s, 300/m or 3600/h");
                    ui.radio_value(&mut form.pace, PaceMode::Spacing, "original spacing ×");
                    ui.add_enabled(
                        form.pace == PaceMode::Spacing,
                        egui::DragValue::new(&mut form.speed).range(0.001..=100_000.0),
                    )
                    .on_hover_text("How many times faster than they arrived (1: as they came)");
                    ui.radio_value(&mut form.pace, PaceMode::Asap, "as fast as allowed");
                });
                ui.end_row();
                ui.label("");
                ui.horizontal(|ui| {
                    let label = ui.label("at most");
                    ui.add(egui::DragValue::new(&mut form.concurrency).range(1..=256))
                        .labelled_by(label.id);
                    ui.label("in flight");
                });
                ui.end_row();
            });
    }

    /// Re-signing (scheme and secret), new ids, and TLS.
    fn signing_ui(&mut self, ui: &mut egui::Ui, schemes: &[String]) {
        let form = self;
        ui.checkbox(
            &mut form.resign,
            "Re-sign with a fresh timestamp (each delivery's scheme)",
        )
        .on_hover_text(
            "Unticked: each is sent exactly as captured, its old signature and timestamp included",
        );
        if form.resign {
            ui.horizontal(|ui| {
                ui.label("Scheme");
                egui::ComboBox::from_id_salt("replay_scheme")
                    .selected_text(
                        form.scheme
                            .clone()
                            .unwrap_or_else(|| "each delivery's".into()),
                    )
                    .show_ui(ui, |ui| {
                        ui.selectable_value(&mut form.scheme, None, "each delivery's");
                        for name in schemes {
                            ui.selectable_value(&mut form.scheme, Some(name.clone()), name);
                        }
                    });
                let label = ui.label("Secret");
                ui.add(
                    egui::TextEdit::singleline(&mut form.secret)
                        .password(true)
                        .desired_width(300.0)
                        .hint_text("empty: each delivery's endpoint's secrets"),
                )
                .labelled_by(label.id);
            });
        }
        ui.checkbox(&mut form.new_ids, "New event ids (new events, not retries)");
        super::send::insecure_ui(ui, &form.url, &mut form.insecure);
    }

    fn start(&mut self, shared: &mut Shared) {
        let form = &*self;
        let pace = match (form.pace, form.rate.trim()) {
            (PaceMode::Asap, _) | (PaceMode::Rate, "") => Pace::Asap,
            (PaceMode::Spacing, _) => Pace::Speed(form.speed),
            (PaceMode::Rate, text) => match replay::parse_rate(text) {
                Ok(rate) => Pace::Rate(rate),
                Err(e) => return shared.notice(e.to_string(), true),
            },
        };
        let selection = match (&form.choice, form.source) {
            (Choice::Job(job), _) => Selection::Job(job.clone()),
            (Choice::Rows(_), Source::Matching) => {
                Selection::Filter(shared.filter.trim().to_string())
            }
            (Choice::Rows(ids), Source::Rows) => Selection::Ids(ids.clone()),
            (Choice::Rows(_), Source::File) => {
                let path = std::path::PathBuf::from(form.file.trim());
                if form.file.trim().is_empty() {
                    return shared.notice("type the fixtures folder or HAR file to replay", true);
                }
                if path
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("har"))
                {
                    Selection::Har(path)
                } else {
                    Selection::Fixtures(path)
                }
            }
        };
        let request = ReplayRequest {
            url: form.url.trim().to_string(),
            resign: form.resign,
            scheme: form.scheme.clone().filter(|_| form.resign),
            secrets: match form.secret.trim() {
                "" => Vec::new(),
                secret => vec![secret.to_string()],
            },
            new_ids: form.new_ids,
            pace,
            concurrency: form.concurrency,
            insecure: form.insecure && form.url.trim().starts_with("https://"),
            self_signed_hint: Some(super::refusals::SELF_SIGNED_HINT),
            ..ReplayRequest::to("")
        };
        if let Err(e) = request.check() {
            return shared.notice(e.to_string(), true);
        }
        shared.send(Command::Replay {
            selection,
            request: Box::new(request),
        });
    }

    fn run_ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared, view: &ReplayView) {
        let snapshot = &view.snapshot;
        ui.label(format!("To {}", view.url));
        // Once ended, the summary's own figures (its clock started with the first send).
        let text = match &view.summary {
            Some(summary) => {
                let failed = summary.outcomes.iter().filter(|o| !o.succeeded()).count();
                let mut text = format!(
                    "{}/{} · {:.1}/s",
                    summary.outcomes.len(),
                    summary.selected,
                    summary.rate()
                );
                if failed > 0 {
                    text.push_str(&format!(" · {failed} failed"));
                }
                text
            }
            None => snapshot.line(),
        };
        ui.add(
            egui::ProgressBar::new(snapshot.fraction())
                .text(text)
                .desired_width(480.0),
        );
        if let Some(why) = &view.failed {
            let why = super::refusals::failure(why);
            ui.colored_label(widgets::FAIL, format!("Nothing was sent: {why}"));
            if ui.button("Change and try again…").clicked() {
                self.view = None;
            }
            return;
        }
        let Some(summary) = &view.summary else {
            if ui
                .add_enabled(!snapshot.stopping, egui::Button::new("Stop"))
                .on_hover_text("Nothing new is sent; what is in flight finishes and is stored")
                .clicked()
            {
                shared.send(Command::StopReplay);
            }
            return;
        };
        ui.add_space(4.0);
        ui.label(summary.sentence());
        ui.horizontal_wrapped(|ui| {
            for (status, n) in summary.by_status() {
                let color = if status.starts_with('2') {
                    widgets::PASS
                } else {
                    widgets::FAIL
                };
                widgets::badge(
                    ui,
                    &format!("{n} × {status}"),
                    color,
                    "attempts answered so",
                );
            }
        });
        let failures = summary.failures();
        if !failures.is_empty() {
            ui.add_space(4.0);
            ui.strong(format!("Not answered 2xx ({})", failures.len()));
            let row_height = ui.text_style_height(&egui::TextStyle::Body) + 4.0;
            let mut chosen = None;
            egui::ScrollArea::vertical()
                .max_height(220.0)
                .auto_shrink([false, true])
                .show_rows(ui, row_height, failures.len(), |ui, range| {
                    for failure in &failures[range] {
                        ui.horizontal(|ui| {
                            if ui
                                .link(format!("#{}", failure.delivery_id))
                                .on_hover_text(
                                    "Show this delivery (its attempt is on the Resend tab)",
                                )
                                .clicked()
                            {
                                chosen = Some(failure.delivery_id);
                            }
                            ui.label(failure.event_type.as_deref().unwrap_or(""));
                            ui.label(RichText::new(failure.result()).color(widgets::FAIL));
                        });
                    }
                });
            if let Some(id) = chosen {
                shared.show_delivery(id);
            }
        }
        ui.add_space(6.0);
        if ui.button("New replay…").clicked() {
            self.view = None;
        }
    }
}

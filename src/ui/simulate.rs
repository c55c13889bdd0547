//! The Simulate view: pick a lifecycle preset, a target and the knobs, start and stop the
//! provider simulator; its jobs and attempts appear live, and its scorecard at the end. The
//! run itself is `app::simulate`, the same as `hookscope simulate`.

use std::time::Duration;

use eframe::egui::{self, RichText};
use egui_extras::{Column, TableBuilder};
use hookscope::app::simulate::{ChaosOverrides, SimulateRequest};
use hookscope::app::{Field, Refused};
use hookscope::domain::fmt::short_time;
use hookscope::domain::sim::world::WorkKind;
use hookscope::domain::sim::{Verdict, lifecycles, schedules};
use hookscope::engine::{Command, ReceiverState, SimulationView};

use super::shared::Shared;
use super::widgets;

/// The form's values and the latest report.
pub struct SimulateForm {
    preset: String,
    scenario: String,
    target: String,
    jobs: usize,
    time_scale: f64,
    schedule: String,
    scheme: String,
    secret: String,
    show_secret: bool,
    /// The provider whose handshake goes first ("" for none).
    handshake: String,
    /// Meta's Verify token, for Meta's handshake.
    verify_token: String,
    timeout_secs: u64,
    duplicate_rate: f64,
    reorder_rate: f64,
    drop_rate: f64,
    late_retry_rate: f64,
    seed: u64,
    /// What the engine last reported.
    pub view: Option<SimulationView>,
    /// Why the simulator refused the form, and the refused field's value then: shown beside
    /// that field until the value changes.
    refusal: Option<(Refused, String)>,
}

impl Default for SimulateForm {
    fn default() -> Self {
        Self {
            preset: "render".into(),
            scenario: String::new(),
            target: String::new(),
            jobs: 20,
            time_scale: 3600.0,
            schedule: "standard-webhooks".into(),
            scheme: "standard-webhooks".into(),
            secret: String::new(),
            show_secret: false,
            handshake: String::new(),
            verify_token: String::new(),
            timeout_secs: 10,
            duplicate_rate: 0.1,
            reorder_rate: 0.1,
            drop_rate: 0.0,
            late_retry_rate: 0.05,
            seed: 1,
            view: None,
            refusal: None,
        }
    }
}

fn combo(ui: &mut egui::Ui, id: &str, value: &mut String, choices: &[String]) {
    egui::ComboBox::from_id_salt(id)
        .selected_text(value.as_str())
        .width(200.0)
        .show_ui(ui, |ui| {
            for choice in choices {
                ui.selectable_value(value, choice.clone(), choice);
            }
        });
}

impl SimulateForm {
    /// The value of the form's `field` as typed, or `None` for a field the form does not have.
    fn value_of(&self, field: Field) -> Option<String> {
        Some(match field {
            Field::Target => self.target.clone(),
            Field::Jobs => self.jobs.to_string(),
            Field::TimeScale => self.time_scale.to_string(),
            Field::Handshake => self.handshake.clone(),
            Field::VerifyToken => self.verify_token.clone(),
            Field::Secret => self.secret.clone(),
            Field::Scheme => self.scheme.clone(),
            Field::DuplicateRate => self.duplicate_rate.to_string(),
            Field::ReorderRate => self.reorder_rate.to_string(),
            Field::DropRate => self.drop_rate.to_string(),
            Field::LateRetryRate => self.late_retry_rate.to_string(),
            _ => return None,
        })
    }

    /// The simulator refused the form: kept to show beside its field, or given back when the
    /// form has no such field (the status line says it then).
    pub fn refused(&mut self, refused: Refused) -> Option<Refused> {
        match self.value_of(refused.field()) {
            Some(value) => {
                self.refusal = Some((refused, value));
                None
            }
            None => Some(refused),
        }
    }

    /// Why `field` was refused, while its value is still the one refused.
    fn refusal_for(&mut self, field: Field) -> Option<String> {
        let (refused, value) = self.refusal.as_ref()?;
        if refused.field() != field {
            return None;
        }
        if self.value_of(field).as_ref() != Some(value) {
            self.refusal = None;
            return None;
        }
        Some(super::refusals::say(refused))
    }

    /// The refusal about `field` under its row, when there is one.
    fn refusal_row(&mut self, ui: &mut egui::Ui, field: Field) {
        if let Some(why) = self.refusal_for(field) {
            ui.label("");
            ui.add(egui::Label::new(RichText::new(why).color(widgets::FAIL)).wrap());
            ui.end_row();
        }
    }

    /// Draws the Simulate view into the central area.
    pub fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let running = self.view.as_ref().is_some_and(|v| v.running);
        if self.target.is_empty()
            && let ReceiverState::Running { addr } = &shared.receiver
        {
            self.target = format!("http://127.0.0.1:{}/hooks/sim", addr.port());
        }
        egui::Panel::left("simulate_form")
        .resizable(false)
        .exact_size(370.0)
        .show(ui, |ui| {
            ui.add_space(6.0);
            ui.label("hookscope plays an async job API and its at-least-once, unordered, retried webhooks against your handler.");
            ui.add_space(6.0);
            ui.add_enabled_ui(!running, |ui| self.fields_ui(ui));
            if !running {
                self.own_receiver_offer(ui, shared);
            }
            ui.add_space(8.0);
            ui.horizontal(|ui| {
                if running {
                    if ui.button("Stop").clicked() {
                        shared.send(Command::StopSimulation);
                    }
                } else if ui.button("Start").clicked() {
                    // A new request is judged anew: the last refusal goes.
                    self.refusal = None;
                    match self.request() {
                        Ok(request) => shared.send(Command::StartSimulation(Box::new(request))),
                        Err(e) => shared.notice(e.to_string(), true),
                    }
                }
                if let Some(view) = &self.view {
                    ui.weak(format!("job API on {}", view.api));
                }
            });
        });
        egui::CentralPanel::default().show(ui, |ui| self.report_ui(ui, shared));
        if running {
            ui.ctx().request_repaint_after(Duration::from_millis(250));
        }
    }

    /// The form's fields: target, lifecycle, pace, retries, signing, handshake and chaos.
    fn fields_ui(&mut self, ui: &mut egui::Ui) {
        let form = self;
        egui::Grid::new("simulate_grid")
        .num_columns(2)
        .spacing([10.0, 6.0])
        .show(ui, |ui| {
            let label = ui.label("Target");
            ui.add(egui::TextEdit::singleline(&mut form.target).desired_width(220.0).hint_text("http://localhost:3000/webhooks"))
                .labelled_by(label.id);
            ui.end_row();
            form.refusal_row(ui, Field::Target);
            ui.label("Lifecycle");
            let presets: Vec<String> = lifecycles().into_iter().map(|l| l.name).collect();
            ui.add_enabled_ui(form.scenario.trim().is_empty(), |ui| {
                combo(ui, "sim_preset", &mut form.preset, &presets);
            });
            ui.end_row();
            let label = ui.label("Scenario");
            ui.add(egui::TextEdit::singleline(&mut form.scenario).desired_width(220.0).hint_text("a scenario .toml (optional)"))
                .labelled_by(label.id)
                .on_hover_text("A TOML file with the lifecycle, delivery, chaos, signing and api; the fields here win over it");
            ui.end_row();
            ui.label("Jobs");
            ui.add(egui::DragValue::new(&mut form.jobs).range(1..=100_000));
            ui.end_row();
            form.refusal_row(ui, Field::Jobs);
            ui.label("Time scale");
            ui.add(egui::DragValue::new(&mut form.time_scale).range(1.0..=1_000_000.0).speed(100.0).suffix("×"))
                .on_hover_text("Simulated seconds per real second: 3600 runs an hour of schedule in a second");
            ui.end_row();
            form.refusal_row(ui, Field::TimeScale);
            ui.label("Retries");
            let names: Vec<String> = schedules().into_iter().map(|(n, _)| n.to_string()).collect();
            combo(ui, "sim_schedule", &mut form.schedule, &names);
            ui.end_row();
            ui.label("Timeout");
            ui.add(egui::DragValue::new(&mut form.timeout_secs).range(1..=120).suffix(" s"));
            ui.end_row();
            ui.label("Scheme");
            let schemes: Vec<String> = hookscope::domain::scheme::presets().into_iter().map(|s| s.name).collect();
            combo(ui, "sim_scheme", &mut form.scheme, &schemes);
            ui.end_row();
            form.refusal_row(ui, Field::Scheme);
            let label = ui.label("Secret");
            ui.horizontal(|ui| {
                ui.add(egui::TextEdit::singleline(&mut form.secret).password(!form.show_secret).desired_width(160.0).hint_text("your handler's secret"))
                    .labelled_by(label.id);
                if ui.small_button(if form.show_secret { "Hide" } else { "Reveal" }).clicked() {
                    form.show_secret = !form.show_secret;
                }
            });
            ui.end_row();
            form.refusal_row(ui, Field::Secret);
            ui.label("Handshake").on_hover_text("Send a provider's handshake first; like the provider, nothing is delivered unless the handler answers it right");
            let shown = hookscope::domain::handshake::Provider::from_name(&form.handshake)
                .map(|p| p.label().to_string())
                .unwrap_or_else(|| "none".into());
            egui::ComboBox::from_id_salt("sim_handshake").selected_text(shown).width(200.0).show_ui(ui, |ui| {
                ui.selectable_value(&mut form.handshake, String::new(), "none");
                for provider in hookscope::domain::handshake::Provider::ALL {
                    ui.selectable_value(&mut form.handshake, provider.name().to_string(), provider.label());
                }
            });
            ui.end_row();
            form.refusal_row(ui, Field::Handshake);
            if form.handshake == "meta" {
                let label = ui.label("Verify token");
                ui.add(egui::TextEdit::singleline(&mut form.verify_token).password(!form.show_secret).desired_width(160.0).hint_text("the token your handler checks"))
                    .labelled_by(label.id);
                ui.end_row();
                form.refusal_row(ui, Field::VerifyToken);
            }
            for (name, field, hover) in [
                ("Duplicates", Field::DuplicateRate, "Send an attempt twice at once"),
                ("Reorders", Field::ReorderRate, "Deliver an event after the job's next one"),
                ("Drops", Field::DropRate, "Never deliver an event: only the job API knows"),
                ("Late retries", Field::LateRetryRate, "Retry an old event after a newer one was acknowledged"),
            ] {
                let value = match field {
                    Field::DuplicateRate => &mut form.duplicate_rate,
                    Field::ReorderRate => &mut form.reorder_rate,
                    Field::DropRate => &mut form.drop_rate,
                    _ => &mut form.late_retry_rate,
                };
                ui.label(name).on_hover_text(hover);
                ui.add(egui::Slider::new(value, 0.0..=1.0).fixed_decimals(2));
                ui.end_row();
                form.refusal_row(ui, field);
            }
            ui.label("Seed");
            ui.add(egui::DragValue::new(&mut form.seed));
            ui.end_row();
        });
    }

    /// The simulation the form describes (the scenario file read, when one is named).
    fn request(&self) -> Result<SimulateRequest, hookscope::app::AppError> {
        let form = self;
        let path = form.scenario.trim();
        let scenario = if path.is_empty() {
            Ok(None)
        } else {
            hookscope::app::simulate::read_scenario(std::path::Path::new(path)).map(Some)
        };
        let scenario = scenario?;
        Ok(SimulateRequest {
            target: Some(form.target.trim().to_string()),
            preset: scenario.is_none().then(|| form.preset.clone()),
            scenario,
            jobs: Some(form.jobs),
            time_scale: Some(form.time_scale),
            scheme: Some(form.scheme.clone()),
            secrets: vec![form.secret.clone()]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect(),
            timeout: Some(Duration::from_secs(form.timeout_secs)),
            schedule: Some(form.schedule.clone()),
            chaos: ChaosOverrides {
                duplicate_rate: Some(form.duplicate_rate),
                reorder_rate: Some(form.reorder_rate),
                drop_rate: Some(form.drop_rate),
                late_retry_rate: Some(form.late_retry_rate),
                max_delay_secs: None,
            },
            api_port: 0,
            style: None,
            key_required: None,
            submit_delay: None,
            poll_gap: None,
            seed: form.seed,
            insecure: false,
            handshake: Some(form.handshake.clone()).filter(|h| !h.is_empty()),
            verify_token: Some(form.verify_token.trim().to_string()).filter(|t| !t.is_empty()),
            contract: None,
            self_signed_hint: Some(super::refusals::SIMULATE_SELF_SIGNED_HINT),
        })
    }

    /// Aimed at this window's own receiver, which does not know the simulator's secret, every
    /// delivery would show *sig skipped*: offers the endpoint that verifies them.
    fn own_receiver_offer(&self, ui: &mut egui::Ui, shared: &mut Shared) {
        let ReceiverState::Running { addr } = &shared.receiver else {
            return;
        };
        let form = self;
        let Some((path, fixed)) = hookscope::app::simulate::own_receiver_endpoint(
            &shared.saved.config,
            &form.target,
            addr.port(),
            &form.scheme,
            &form.secret,
        ) else {
            return;
        };
        ui.add_space(6.0);
        ui.colored_label(
        widgets::WARN,
        format!("This window's receiver has no endpoint for {path} with this secret: every simulated delivery would show sig skipped."),
    );
        if ui
            .button(format!(
                "Add endpoint {path} ({}, this secret)",
                form.scheme
            ))
            .on_hover_text("Saved to config.toml, as the Endpoints & secrets panel saves it")
            .clicked()
        {
            shared.send(Command::SaveConfig(Box::new(fixed)));
        }
    }

    fn report_ui(&self, ui: &mut egui::Ui, shared: &Shared) {
        let zone = shared.zone().clone();
        let Some(view) = &self.view else {
            ui.add_space(40.0);
            ui.vertical_centered(|ui| {
                ui.heading("No simulation yet");
                ui.label(
                    "Point it at your handler (or at this window's receiver) and press Start.",
                );
            });
            return;
        };
        let p = view.progress;
        ui.add_space(6.0);
        ui.horizontal(|ui| {
        ui.strong(if view.running { "Running" } else { "Finished" });
        ui.label(format!(
            "{} jobs ({} ended) · {} events: {} acknowledged, {} dropped, {} out of attempts · {} attempts, {} on the wire",
            p.jobs, p.jobs_done, p.events, p.acknowledged, p.dropped, p.exhausted, p.attempts, p.in_flight
        ));
    });
        if let Some(card) = &view.scorecard {
            ui.add_space(6.0);
            egui::Grid::new("scorecard")
                .num_columns(3)
                .spacing([10.0, 6.0])
                .show(ui, |ui| {
                    for check in card {
                        let color = match check.status {
                            Verdict::Pass => widgets::PASS,
                            Verdict::Fail => widgets::FAIL,
                            Verdict::Unknown => widgets::WARN,
                            Verdict::Skipped => widgets::SKIPPED,
                        };
                        widgets::badge(ui, check.status.as_str(), color, &check.detail);
                        ui.monospace(&check.name);
                        ui.add(egui::Label::new(&check.detail).wrap());
                        ui.end_row();
                    }
                });
        }
        ui.add_space(6.0);
        ui.label(RichText::new("Latest attempts").strong());
        let now = hookscope::domain::clock::now_ms();
        TableBuilder::new(ui)
            .striped(true)
            .column(Column::exact(110.0))
            .column(Column::exact(150.0))
            .column(Column::exact(110.0))
            .column(Column::exact(90.0))
            .column(Column::exact(70.0))
            .column(Column::remainder())
            .header(20.0, |mut header| {
                for title in ["Time", "Job", "Event", "Attempt", "Status", "Latency"] {
                    header.col(|ui| {
                        ui.strong(title);
                    });
                }
            })
            .body(|body| {
                body.rows(20.0, view.recent.len(), |mut row| {
                    let sent = &view.recent[row.index()];
                    row.col(|ui| {
                        ui.monospace(short_time(sent.at_ms, now, &zone));
                    });
                    row.col(|ui| {
                        ui.monospace(&sent.job_id);
                    });
                    row.col(|ui| {
                        ui.label(&sent.state);
                    });
                    row.col(|ui| {
                        ui.label(match sent.kind {
                            WorkKind::Attempt => format!("#{}", sent.attempt),
                            WorkKind::Copy => "duplicate".into(),
                            WorkKind::LateRetry => "late retry".into(),
                            WorkKind::Tampered => "tampered".into(),
                            WorkKind::Stale => "stale".into(),
                        });
                    });
                    row.col(|ui| {
                        let (text, color) = match sent.status {
                            Some(s) if (200..300).contains(&s) => (s.to_string(), widgets::PASS),
                            Some(s) => (s.to_string(), widgets::FAIL),
                            None => ("none".to_string(), widgets::FAIL),
                        };
                        ui.colored_label(color, text);
                    });
                    row.col(|ui| {
                        ui.label(format!("{} ms", sent.latency_ms));
                    });
                });
            });
    }
}

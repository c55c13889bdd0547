//! Driving the developer's handler from the window: the *Resend* tab of a delivery, the
//! *Probe handler* window, and the receiver's switches (forward, mirror, fail next N).

use std::sync::atomic::Ordering;

use eframe::egui::{self, RichText};
use hookscope::app::probe::ProbeRequest;
use hookscope::app::resend::{self, ResendRequest};
use hookscope::domain::attempt::Attempt;
use hookscope::domain::fmt::human_bytes;
use hookscope::domain::fmt::{Zone, time_of_day};
use hookscope::domain::scheme::presets;
use hookscope::engine::Command;
use hookscope::net::probe::{ProbeReport, Verdict};
use hookscope::store::StoredDelivery;

use super::shared::Shared;
use super::widgets;

/// The *Resend* tab's form.
pub struct ResendForm {
    /// The handler's URL.
    pub url: String,
    resign: bool,
    new_id: bool,
    scheme: String,
    secret: String,
    /// How many secrets the delivery's endpoint has (used when `secret` is left empty).
    default_secrets: usize,
    edit_body: bool,
    body: String,
    /// Accept any TLS certificate for an https:// URL.
    insecure: bool,
    /// The delivery the form was filled for.
    for_delivery: Option<i64>,
}

impl Default for ResendForm {
    fn default() -> Self {
        Self {
            url: "http://localhost:3000/webhooks".into(),
            resign: false,
            new_id: false,
            scheme: "standard-webhooks".into(),
            secret: String::new(),
            default_secrets: 0,
            insecure: false,
            edit_body: false,
            body: String::new(),
            for_delivery: None,
        }
    }
}

/// The *Probe handler* window's state.
pub struct ProbeForm {
    /// Whether the window is open.
    pub open: bool,
    /// The handler's URL.
    pub url: String,
    scheme: String,
    secret: String,
    insecure: bool,
    running: bool,
    /// The last report.
    pub report: Option<Result<Box<ProbeReport>, String>>,
}

impl Default for ProbeForm {
    fn default() -> Self {
        Self {
            open: false,
            url: "http://localhost:3000/webhooks".into(),
            scheme: "standard-webhooks".into(),
            secret: String::new(),
            insecure: false,
            running: false,
            report: None,
        }
    }
}

impl ProbeForm {
    /// Takes a finished probe's report.
    pub fn finished(&mut self, report: Result<Box<ProbeReport>, String>) {
        self.running = false;
        self.report = Some(report);
    }
}

/// The schemes a delivery can be re-signed with: the presets, then the saved `[[scheme]]`s.
pub(crate) fn scheme_names(saved: &hookscope::config::ConfigFile) -> Vec<String> {
    presets()
        .into_iter()
        .map(|s| s.name)
        .chain(saved.schemes.iter().map(|s| s.name.clone()))
        .collect()
}

impl ResendForm {
    /// Fills the form from a delivery: its body, and the re-signing defaults the library uses for
    /// the CLI too (its scheme, its endpoint's secrets).
    fn fill_for(&mut self, stored: &StoredDelivery, shared: &mut Shared) {
        self.for_delivery = Some(stored.id);
        self.body = String::from_utf8_lossy(&stored.delivery.body).into_owned();
        self.edit_body = false;
        self.secret.clear();
        let defaults = resend::resign_defaults(&shared.saved.settings, stored);
        if let Some(scheme) = defaults.scheme {
            self.scheme = scheme;
        }
        self.default_secrets = defaults.secrets.len();
        shared.send(Command::Attempts { id: stored.id });
    }

    /// The *Resend* tab of the selected delivery.
    pub fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared, stored: &StoredDelivery) {
        if self.for_delivery != Some(stored.id) {
            self.fill_for(stored, shared);
        }
        let names = scheme_names(&shared.saved.config);
        self.fields_ui(ui, &names);
        let form = self;
        if form.edit_body {
            let valid = serde_json::from_str::<serde::de::IgnoredAny>(&form.body);
            match &valid {
                Ok(_) => ui.colored_label(widgets::PASS, "valid JSON"),
                Err(e) => ui.colored_label(
                    widgets::WARN,
                    format!("not valid JSON: {e} (it will be sent as it is)"),
                ),
            };
            ui.add(
                egui::TextEdit::multiline(&mut form.body)
                    .code_editor()
                    .desired_rows(8)
                    .desired_width(f32::INFINITY),
            );
        }
        let secret = form.secret.trim();
        let command = Command::Resend(ResendRequest {
            resign: form.resign,
            scheme: form.resign.then(|| form.scheme.clone()),
            secrets: if secret.is_empty() {
                Vec::new()
            } else {
                vec![secret.to_string()]
            },
            new_id: form.new_id,
            insecure: form.insecure && form.url.trim().starts_with("https://"),
            body: form.edit_body.then(|| form.body.clone().into_bytes()),
            self_signed_hint: Some(super::refusals::SELF_SIGNED_HINT),
            ..ResendRequest::as_captured(stored.id, form.url.trim())
        });
        let ready = !form.resign || !secret.is_empty() || form.default_secrets > 0;
        if ui
            .add_enabled(ready, egui::Button::new(RichText::new("Send").strong()))
            .clicked()
        {
            shared.send(command);
        }
        if !ready {
            ui.weak("Give the secret to sign with.");
        }
        ui.add_space(8.0);
        attempts_ui(ui, shared.selection.attempts_of(stored.id), shared.zone());
    }

    /// Where to send, how to sign, which event id, whether to edit the body.
    fn fields_ui(&mut self, ui: &mut egui::Ui, names: &[String]) {
        let form = self;
        egui::Grid::new("resend_grid")
            .num_columns(2)
            .spacing([12.0, 8.0])
            .show(ui, |ui| {
                let label = ui.label("Send to");
                ui.add(egui::TextEdit::singleline(&mut form.url).desired_width(420.0))
                    .labelled_by(label.id);
                ui.end_row();
                ui.label("Signature");
                ui.horizontal(|ui| {
                    ui.radio_value(
                        &mut form.resign,
                        false,
                        "as captured (an honest replay: a stale timestamp should be refused)",
                    );
                    ui.radio_value(&mut form.resign, true, "re-signed now");
                });
                ui.end_row();
                if form.resign {
                    ui.label("Scheme");
                    egui::ComboBox::from_id_salt("resend_scheme")
                        .selected_text(form.scheme.clone())
                        .show_ui(ui, |ui| {
                            for name in names {
                                ui.selectable_value(&mut form.scheme, name.clone(), name);
                            }
                        });
                    ui.end_row();
                    let label = ui.label("Secret");
                    let hint = match form.default_secrets {
                        0 => "the endpoint has none: give one".to_string(),
                        1 => "empty: the endpoint's secret".to_string(),
                        n => format!("empty: the endpoint's {n} secrets"),
                    };
                    ui.add(
                        egui::TextEdit::singleline(&mut form.secret)
                            .password(true)
                            .hint_text(hint)
                            .desired_width(420.0),
                    )
                    .labelled_by(label.id);
                    ui.end_row();
                }
                if form.url.trim().starts_with("https://") {
                    ui.label("TLS");
                    ui.vertical(|ui| insecure_ui(ui, &form.url, &mut form.insecure));
                    ui.end_row();
                }
                ui.label("Event id");
                ui.horizontal(|ui| {
                    ui.radio_value(&mut form.new_id, false, "keep it (a retry)");
                    ui.radio_value(&mut form.new_id, true, "a new one (a new event)");
                });
                ui.end_row();
                ui.label("Body");
                ui.checkbox(
                    &mut form.edit_body,
                    "edit before sending (the signature is computed over the edited bytes)",
                );
                ui.end_row();
            });
    }
}

fn attempts_ui(ui: &mut egui::Ui, attempts: &[Attempt], zone: &Zone) {
    if attempts.is_empty() {
        ui.weak("Not resent or forwarded yet.");
        return;
    }
    ui.strong(format!("Sent from this delivery ({})", attempts.len()));
    for attempt in attempts.iter().rev() {
        let (color, outcome) = match (attempt.status, &attempt.error) {
            (Some(s), _) if (200..300).contains(&s) => (widgets::PASS, s.to_string()),
            (Some(s), _) => (widgets::FAIL, s.to_string()),
            (None, Some(e)) => (widgets::FAIL, e.clone()),
            (None, None) => (widgets::SKIPPED, "no answer".into()),
        };
        egui::CollapsingHeader::new(
            RichText::new(format!(
                "{}  {}  {}  {} ms",
                time_of_day(attempt.sent_at_ms, zone),
                attempt.kind.as_str(),
                attempt.url,
                attempt.latency_ms
            ))
            .monospace(),
        )
        .id_salt(("attempt", attempt.id))
        .show(ui, |ui| {
            ui.colored_label(color, format!("answered: {outcome}"));
            for h in &attempt.response_headers {
                ui.monospace(format!("{}: {}", h.name, h.shown_lossy()));
            }
            let body = String::from_utf8_lossy(&attempt.response_body);
            if !body.is_empty() {
                ui.label(format!(
                    "response body ({}):",
                    human_bytes(attempt.response_body.len() as u64)
                ));
                ui.add(
                    egui::Label::new(
                        RichText::new(body.chars().take(4000).collect::<String>()).monospace(),
                    )
                    .wrap(),
                );
            }
        });
    }
}

/// The "accept self-signed certificates" checkbox, shown for https:// URLs, with its warning.
pub(super) fn insecure_ui(ui: &mut egui::Ui, url: &str, insecure: &mut bool) {
    if !url.trim().starts_with("https://") {
        return;
    }
    ui.checkbox(insecure, "accept self-signed certificates")
        .on_hover_text(
            "For a handler on a development certificate: the certificate is not checked at all.",
        );
    if *insecure {
        ui.colored_label(
            widgets::WARN,
            "the certificate is not verified: anyone in the path could read or change the request",
        );
    }
}

impl ProbeForm {
    /// The *Probe handler* window.
    pub fn window(&mut self, ctx: &egui::Context, shared: &mut Shared) {
        if !self.open {
            return;
        }
        let names = scheme_names(&shared.saved.config);
        let mut open = true;
        let mut run = None;
        egui::Window::new("Probe handler").open(&mut open).default_width(760.0).show(ctx, |ui| {
        ui.label("Sends the cases every receiver must handle to your handler and checks each answer.");
        let form = &mut *self;
        egui::Grid::new("probe_grid").num_columns(2).spacing([12.0, 8.0]).show(ui, |ui| {
            let label = ui.label("Handler URL");
            ui.add(egui::TextEdit::singleline(&mut form.url).desired_width(420.0)).labelled_by(label.id);
            ui.end_row();
            ui.label("Scheme");
            egui::ComboBox::from_id_salt("probe_scheme").selected_text(form.scheme.clone()).show_ui(ui, |ui| {
                for name in &names {
                    ui.selectable_value(&mut form.scheme, name.clone(), name);
                }
            });
            ui.end_row();
            let label = ui.label("Its secret");
            ui.add(egui::TextEdit::singleline(&mut form.secret).password(true).desired_width(420.0))
                .labelled_by(label.id);
            ui.end_row();
            if form.url.trim().starts_with("https://") {
                ui.label("TLS");
                ui.vertical(|ui| insecure_ui(ui, &form.url, &mut form.insecure));
                ui.end_row();
            }
        });
        let ready = !form.running && !form.secret.is_empty();
        if ui.add_enabled(ready, egui::Button::new(RichText::new("Run the probe").strong())).clicked() {
            form.running = true;
            form.report = None;
            run = Some(Command::Probe(ProbeRequest {
                insecure: form.insecure && form.url.trim().starts_with("https://"),
                self_signed_hint: Some(super::refusals::SELF_SIGNED_HINT),
                ..ProbeRequest::new(form.url.trim(), form.scheme.clone(), vec![form.secret.clone()])
            }));
        }
        if form.running {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label("probing…");
            });
        }
        report_ui(ui, &form.report);
    });
        self.open = open;
        if let Some(command) = run {
            shared.send(command);
        }
    }
}

/// The probe's report: a line a case, or why it could not run.
fn report_ui(ui: &mut egui::Ui, report: &Option<Result<Box<ProbeReport>, String>>) {
    match report {
        Some(Ok(report)) => {
            ui.add_space(6.0);
            let (color, text) = if report.passed {
                (widgets::PASS, "every case passed".to_string())
            } else {
                let failed = report
                    .cases
                    .iter()
                    .filter(|c| c.verdict == Verdict::Fail)
                    .count();
                (widgets::FAIL, format!("{failed} case(s) failed"))
            };
            ui.colored_label(color, RichText::new(text).strong());
            egui::Grid::new("probe_results")
                .num_columns(3)
                .spacing([10.0, 6.0])
                .striped(true)
                .show(ui, |ui| {
                    for case in &report.cases {
                        let (color, word) = match case.verdict {
                            Verdict::Pass => (widgets::PASS, "pass"),
                            Verdict::Fail => (widgets::FAIL, "fail"),
                            Verdict::Warn => (widgets::WARN, "warn"),
                            Verdict::Skipped => (widgets::SKIPPED, "skipped"),
                        };
                        widgets::badge(ui, word, color, &format!("expected {}", case.expected));
                        ui.monospace(&case.name);
                        ui.add(egui::Label::new(&case.detail).wrap());
                        ui.end_row();
                    }
                });
        }
        Some(Err(error)) => {
            ui.colored_label(widgets::FAIL, error);
        }
        None => {}
    }
}

/// The receiver's switches as typed: where to forward, how many to fail.
pub struct Switches {
    /// Where *Forward every delivery* sends.
    pub forward_url: String,
    /// How many deliveries *Arm* fails.
    pub fail_count: u32,
}

impl Default for Switches {
    fn default() -> Self {
        Self {
            forward_url: "http://localhost:3000/webhooks".into(),
            fail_count: 3,
        }
    }
}

impl Switches {
    /// The receiver's switches: forward every delivery, mirror the handler's answer, fail the
    /// next N deliveries with 500.
    pub fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let controls = std::sync::Arc::clone(&shared.engine.controls);
        // Each endpoint's forwarding rules, switched on or off as a whole.
        for endpoint in &shared.saved.settings.endpoints {
            if endpoint.forward.is_empty() {
                continue;
            }
            ui.horizontal(|ui| {
                ui.strong("Forward");
                let mut on = controls.endpoint_forwarding(&endpoint.path);
                let rules = match endpoint.forward.len() {
                    1 => "its rule".to_string(),
                    n => format!("its {n} rules"),
                };
                let hover: Vec<String> = endpoint.forward.iter().map(|r| r.describe()).collect();
                if ui
                    .checkbox(&mut on, format!("{} by {rules}", endpoint.path))
                    .on_hover_text(hover.join("\n"))
                    .changed()
                {
                    controls.set_endpoint_forwarding(&endpoint.path, on);
                }
            });
        }
        ui.horizontal(|ui| {
        ui.strong("Forward");
        let mut on = controls.forward_url().is_some();
        let label = ui.label("every delivery to");
        ui.add(egui::TextEdit::singleline(&mut self.forward_url).desired_width(260.0)).labelled_by(label.id);
        if ui.checkbox(&mut on, "on").changed()
            && let Err(why) = controls.set_forward(on.then_some(self.forward_url.as_str()))
        {
            shared.notice(format!("cannot forward: {why}"), true);
        }
        let mut mirror = controls.mirror_response.load(Ordering::SeqCst);
        if ui
            .checkbox(&mut mirror, "answer with the handler's status")
            .on_hover_text("Off: the sender gets hookscope's own answer, so a crashing handler causes no retries")
            .changed()
        {
            controls.mirror_response.store(mirror, Ordering::SeqCst);
        }
    });
        if self.forward_url.trim().starts_with("https://") {
            let mut insecure = controls.forward_insecure.load(Ordering::SeqCst);
            insecure_ui(ui, &self.forward_url, &mut insecure);
            controls.forward_insecure.store(insecure, Ordering::SeqCst);
        }
        ui.horizontal(|ui| {
            ui.strong("Fail");
            ui.label("the next");
            ui.add(egui::DragValue::new(&mut self.fail_count).range(1..=1000));
            ui.label("deliveries with 500");
            if ui
                .button("Arm")
                .on_hover_text("To watch a sender's retries and backoff arrive")
                .clicked()
            {
                controls.fail_next.store(self.fail_count, Ordering::SeqCst);
            }
            let left = controls.fail_next.load(Ordering::SeqCst);
            if left > 0 {
                ui.colored_label(widgets::WARN, format!("{left} left to fail"));
                if ui.button("Disarm").clicked() {
                    controls.fail_next.store(0, Ordering::SeqCst);
                }
            }
        });
    }
}

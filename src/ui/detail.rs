//! The detail pane of the selected delivery: its checks explained, the request (headers and
//! body as pretty JSON, raw text or hex), and what hookscope answered.

use std::sync::Arc;

use eframe::egui::{self, Color32, RichText, text::LayoutJob};
use hookscope::app::report::delivery_json;
use hookscope::domain::advice::AdviceStatus;
use hookscope::domain::fmt::{Zone, full_time, human_bytes, rfc3339_ms};
use hookscope::domain::pretty::{Token, hexdump, pretty_json};
use hookscope::store::StoredDelivery;
use serde::{Deserialize, Serialize};

use super::shared::{Msg, Shared, Window};
use super::widgets;
use hookscope::engine::Command;

/// The most of a body drawn at once; larger bodies show their beginning, so the window stays
/// responsive with a 10 MiB capture.
const BODY_VIEW_LIMIT: usize = 256 * 1024;

/// The detail pane's tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Tab {
    /// Verdicts and their sentences.
    #[default]
    Checks,
    /// Headers and body.
    Request,
    /// hookscope's answer.
    Response,
    /// Send it again to a handler.
    Resend,
}

/// How the body is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum BodyView {
    /// JSON re-indented and coloured (falls back to raw for non-JSON).
    #[default]
    Pretty,
    /// The text exactly as received.
    Raw,
    /// A hex dump.
    Hex,
    /// Form fields decoded one by one (`application/x-www-form-urlencoded`).
    Form,
    /// A collapsible JSON tree; a click on a key copies its JSON pointer.
    Tree,
}

/// The laid-out body of the shown delivery, computed once per delivery and view, and the body
/// parsed as JSON and as form fields, once per delivery (not once per frame).
#[derive(Default)]
pub struct BodyCache {
    key: Option<(i64, BodyView, bool)>,
    job: Option<LayoutJob>,
    note: Option<String>,
    parsed_for: Option<i64>,
    json: Option<Arc<serde_json::Value>>,
    form: Option<FormFields>,
}

/// A form body's fields, shared between the cache and the frame that draws them.
type FormFields = Arc<Vec<(String, String)>>;

impl BodyCache {
    /// The body as JSON and as form fields (each `None` when it is not one), parsed on the first
    /// call for a delivery. Bodies past the view limit are not parsed, as the pretty view is not.
    fn parsed(
        &mut self,
        id: i64,
        body: &[u8],
    ) -> (Option<Arc<serde_json::Value>>, Option<FormFields>) {
        if self.parsed_for != Some(id) {
            let small = body.len() <= BODY_VIEW_LIMIT;
            self.parsed_for = Some(id);
            self.json = small
                .then(|| serde_json::from_slice(body).ok().map(Arc::new))
                .flatten();
            self.form = small
                .then(|| hookscope::domain::pretty::form_fields(body).map(Arc::new))
                .flatten();
        }
        (self.json.clone(), self.form.clone())
    }
}

/// The detail pane's own state: its tab, the body's view and layout, the handshake's
/// confirmation, the comparison shown, and the Resend tab's form.
#[derive(Default)]
pub struct Detail {
    /// The tab shown.
    pub tab: Tab,
    /// How the body is shown.
    pub body_view: BodyView,
    body_cache: BodyCache,
    /// The delivery whose "Confirm a host that is not the provider's" the user ticked; the
    /// tick holds for that delivery only, and until it is confirmed.
    confirm_any_host: Option<i64>,
    /// The delivery whose confirmation is on the wire (its button waits).
    confirm_pending: Option<i64>,
    /// The delivery whose attempts the Checks tab asked for (to show a confirmation).
    confirm_attempts_asked: Option<i64>,
    /// Two deliveries compared, shown in the *Compare* window until it is closed.
    pub comparison: Option<hookscope::domain::compare::Comparison>,
    /// The Resend tab's form.
    pub resend: super::send::ResendForm,
}

impl Detail {
    /// The pane on the tab and body view remembered from the last run.
    pub fn new(tab: Tab, body_view: BodyView) -> Self {
        Self {
            tab,
            body_view,
            ..Self::default()
        }
    }

    /// Another delivery was loaded: its body is laid out anew.
    pub fn loaded(&mut self) {
        self.body_cache = BodyCache::default();
    }

    /// The attempts of delivery `id` arrived: a confirmation waiting for them is over.
    pub fn attempts_loaded(&mut self, id: i64) {
        if self.confirm_pending == Some(id) {
            self.confirm_pending = None;
        }
    }

    /// Draws the detail pane.
    pub fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let Some(stored) = shared.selection.loaded.clone() else {
            ui.weak("Loading…");
            return;
        };
        ui.add_space(4.0);
        ui.horizontal(|ui| {
            ui.strong(format!("#{}", stored.id));
            ui.monospace(format!(
                "{} {}",
                stored.delivery.method, stored.delivery.path
            ));
            ui.weak(full_time(stored.delivery.received_at_ms, shared.zone()))
                .on_hover_text(rfc3339_ms(stored.delivery.received_at_ms));
            ui.separator();
            for (tab, label) in [
                (Tab::Checks, "Checks"),
                (Tab::Request, "Request"),
                (Tab::Response, "Response"),
                (Tab::Resend, "Resend"),
            ] {
                ui.selectable_value(&mut self.tab, tab, label);
            }
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                if ui
                    .button("Delete")
                    .on_hover_text(
                        "Delete this delivery from the store (asks first; the Delete key too)",
                    )
                    .clicked()
                {
                    shared.tell(Msg::ConfirmDelete(vec![stored.id]));
                }
                // "Export…", or "Export 3…" with several rows selected.
                let selected = shared.selection.multi.len();
                let label = |verb: &str| match selected {
                    0 | 1 => format!("{verb}…"),
                    n => format!("{verb} {n}…"),
                };
                if ui
                    .button(label("Export"))
                    .on_hover_text("As a test fixture, HAR or curl (Ctrl+click rows to export several)")
                    .clicked()
                {
                    shared.tell(Msg::Open(Window::Export));
                }
                if ui
                    .button(label("Replay"))
                    .on_hover_text("Send these again to a handler at a rate, or every delivery matching the filter")
                    .clicked()
                {
                    let ids = shared.selection.ids();
                    shared.tell(Msg::Replay(super::replay::Choice::Rows(ids)));
                }
                self.compare_with_menu(ui, shared, &stored);
                if shared.selection.multi.len() == 2 {
                    let mut ids: Vec<i64> = shared.selection.multi.iter().copied().collect();
                    ids.sort_unstable();
                    if ui
                        .button("Compare")
                        .on_hover_text(format!(
                            "What differs between #{} and #{}: headers, the body by JSON pointer, the checks",
                            ids[0], ids[1]
                        ))
                        .clicked()
                    {
                        shared.send(Command::Compare { a: ids[0], b: ids[1] });
                    }
                }
                if ui.button("Copy as curl").clicked() {
                    shared.send(Command::CopyAsCurl(stored.clone()));
                }
                if ui.button("Copy as JSON").on_hover_text("Ctrl+C").clicked() {
                    let json = delivery_json(&stored, shared.selection.attempts_of(stored.id));
                    ui.ctx().copy_text(json.to_string());
                    shared.notice(format!("copied delivery #{} as JSON", stored.id), false);
                }
            });
        });
        ui.separator();
        egui::ScrollArea::vertical()
            .id_salt("detail_scroll")
            .auto_shrink([false, false])
            .show(ui, |ui| match self.tab {
                Tab::Checks => self.checks_ui(ui, shared, &stored),
                Tab::Request => self.request_ui(ui, shared, &stored),
                Tab::Response => {
                    // The body hookscope answers with is the endpoint's, when it has one configured.
                    let configured = shared
                        .saved
                        .settings
                        .endpoint_for(&stored.delivery.path)
                        .respond_body
                        .clone();
                    response_ui(ui, &stored, shared.zone(), configured)
                }
                Tab::Resend => self.resend.ui(ui, shared, &stored),
            });
    }

    /// A provider's handshake: what it asked, what was answered (exactly), and for a subscription
    /// confirmed by a URL (SNS, Event Grid), the URL and the one GET the user starts.
    fn handshake_ui(
        &mut self,
        ui: &mut egui::Ui,
        shared: &mut Shared,
        stored: &StoredDelivery,
        handshake: &hookscope::domain::handshake::Handshake,
    ) {
        use hookscope::domain::handshake::Outcome;
        let id = stored.id;
        let (color, word) = widgets::handshake_look(handshake.outcome);
        ui.horizontal(|ui| {
            ui.label(RichText::new("Handshake").strong());
            widgets::badge(ui, word, color, &handshake.detail);
            ui.weak(handshake.provider.label());
        });
        ui.add(egui::Label::new(&handshake.detail).wrap());
        // What was answered stays as it was; a Re-check since may see it otherwise.
        if handshake.outcome == Outcome::Refused
            && handshake.provider.signs()
            && stored.checks.signature.status == hookscope::domain::checks::SignatureStatus::Pass
        {
            ui.colored_label(
                widgets::WARN,
                format!(
                    "Re-checked with today's secrets, its signature verifies: ask {} to send its challenge again.",
                    handshake.provider.label()
                ),
            );
        }
        egui::Grid::new("handshake_grid")
            .num_columns(2)
            .spacing([12.0, 4.0])
            .show(ui, |ui| {
                ui.weak("asked");
                ui.add(
                    egui::Label::new(RichText::new(&handshake.asked).monospace()).selectable(true),
                );
                ui.end_row();
                if let Some(answer) = &handshake.answer {
                    ui.weak("answered");
                    let mut lines = vec![format!(
                        "{} {}",
                        answer.status,
                        answer.content_type.as_deref().unwrap_or("")
                    )];
                    lines.extend(answer.headers.iter().map(|(n, v)| format!("{n}: {v}")));
                    if !answer.body.is_empty() {
                        lines.push(answer.body.clone());
                    }
                    ui.add(
                        egui::Label::new(RichText::new(lines.join("\n")).monospace())
                            .selectable(true),
                    );
                    ui.end_row();
                }
            });
        if let Some(url) = &handshake.confirm_url {
            self.confirm_url_ui(ui, shared, handshake, url, id);
        }
    }

    /// A subscription confirmed by a URL (SNS, Event Grid): the URL, whether it was confirmed,
    /// and the one GET the user starts.
    fn confirm_url_ui(
        &mut self,
        ui: &mut egui::Ui,
        shared: &mut Shared,
        handshake: &hookscope::domain::handshake::Handshake,
        url: &str,
        id: i64,
    ) {
        use hookscope::domain::handshake::{Outcome, Provider};
        ui.add_space(6.0);
        // Event Grid's own handshake was answered: its URL is for manual validation only.
        let optional =
            handshake.provider == Provider::EventGrid && handshake.outcome == Outcome::Answered;
        ui.label(if optional {
                "Its validationUrl is for manual validation, not needed now that the handshake was answered; a GET of it validates by hand:"
            } else {
                "Confirming is the one GET of this URL, made when you press the button:"
            });
        ui.add(
            egui::Label::new(RichText::new(url).monospace())
                .selectable(true)
                .wrap(),
        );
        let known = shared.selection.known_attempts(id).is_some();
        if !known && self.confirm_attempts_asked != Some(id) {
            self.confirm_attempts_asked = Some(id);
            shared.send(Command::Attempts { id });
        }
        let confirmed: Option<(u16, i64)> = shared.selection.known_attempts(id).and_then(|all| {
            all.iter().rev().find_map(|a| {
                let status = a.status.filter(|s| (200..300).contains(s))?;
                (a.kind == hookscope::domain::attempt::AttemptKind::Confirm)
                    .then_some((status, a.sent_at_ms))
            })
        });
        if let Some((status, at_ms)) = confirmed {
            ui.colored_label(
                widgets::PASS,
                format!(
                    "Confirmed: {} answered {status} at {}.",
                    handshake.provider.label(),
                    full_time(at_ms, shared.zone())
                ),
            );
        }
        let own = hookscope::app::confirm::is_providers_own(handshake.provider, url);
        if !own {
            ui.colored_label(
                    widgets::WARN,
                    format!(
                        "This URL is not on {}'s own hosts: anyone can post a confirmation request. Confirm it only if you trust it (LocalStack, a test double).",
                        handshake.provider.label()
                    ),
                );
        }
        let pending = self.confirm_pending == Some(id);
        ui.horizontal(|ui| {
                if !own {
                    let mut ticked = self.confirm_any_host == Some(id);
                    if ui
                        .checkbox(&mut ticked, "Confirm a host that is not the provider's")
                        .changed()
                    {
                        self.confirm_any_host = ticked.then_some(id);
                    }
                }
                let allowed = (own || self.confirm_any_host == Some(id)) && !pending;
                let label = match (optional, confirmed.is_some()) {
                    (true, _) => "Validate manually",
                    (false, true) => "Confirm again",
                    (false, false) => "Confirm subscription",
                };
                if ui
                    .add_enabled(allowed, egui::Button::new(RichText::new(label).strong()))
                    .on_hover_text("GET this URL once, as the provider asks; the answer is kept on the Resend tab's attempts")
                    .clicked()
                {
                    self.confirm_pending = Some(id);
                    self.confirm_any_host = None;
                    shared.send(Command::Confirm { id, any_host: !own });
                }
                if pending {
                    ui.spinner();
                }
                if ui.button("Copy URL").clicked() {
                    ui.ctx().copy_text(url.to_string());
                    shared.notice("copied the confirmation URL".to_string(), false);
                }
            });
    }

    fn checks_ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared, stored: &StoredDelivery) {
        let checks = &stored.checks;
        ui.horizontal(|ui| {
            ui.weak("As checked when it arrived, or when last re-checked.");
            if ui
                .small_button("Re-check")
                .on_hover_text(
                    "Run the checks again with the endpoints, secrets and rules in force now, at the time the delivery was received",
                )
                .clicked()
            {
                shared.send(Command::Recheck { id: stored.id });
            }
        });
        ui.add_space(4.0);
        if let Some(handshake) = &stored.handshake {
            self.handshake_ui(ui, shared, stored, handshake);
            ui.add_space(8.0);
        }
        checks_grid_ui(ui, checks);
        schema_items_ui(ui, checks);
        advice_items_ui(ui, checks);
        if let Some(diagnosis) = &checks.signature.diagnosis {
            ui.add_space(8.0);
            diagnosis_ui(ui, diagnosis);
        }
        ui.add_space(8.0);
        if let Some(job_id) = facts_ui(ui, stored) {
            shared.tell(Msg::ShowJob(job_id));
        }
        self.first_of_event_ui(ui, shared, stored);
        notes_ui(ui, stored);
    }

    /// A retry's link to its event's first delivery, and *Compare with it*.
    fn first_of_event_ui(
        &mut self,
        ui: &mut egui::Ui,
        shared: &mut Shared,
        stored: &StoredDelivery,
    ) {
        let checks = &stored.checks;
        if let (hookscope::domain::checks::DuplicateStatus::Duplicate, Some(first)) =
            (checks.duplicate.status, checks.duplicate.first_id)
        {
            ui.add_space(6.0);
            ui.horizontal(|ui| {
                if ui
                    .link(format!("Go to the first delivery of this event (#{first})"))
                    .clicked()
                {
                    shared.select_in_view(first);
                }
                if ui
                    .small_button("Compare with it")
                    .on_hover_text("What differs between this retry and the event's first delivery")
                    .clicked()
                {
                    shared.send(Command::Compare {
                        a: first,
                        b: stored.id,
                    });
                }
            });
        }
    }

    fn request_ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared, stored: &StoredDelivery) {
        let d = &stored.delivery;
        egui::CollapsingHeader::new(format!("Headers ({})", d.headers.len()))
            .default_open(true)
            .show(ui, |ui| {
                egui::Grid::new("headers_grid")
                    .num_columns(2)
                    .spacing([16.0, 2.0])
                    .striped(true)
                    .show(ui, |ui| {
                        for h in &d.headers {
                            ui.monospace(&h.name);
                            ui.add(
                                egui::Label::new(RichText::new(h.shown_lossy()).monospace())
                                    .selectable(true)
                                    .wrap(),
                            );
                            ui.end_row();
                        }
                    });
            });
        ui.add_space(6.0);
        let text = std::str::from_utf8(&d.body).ok();
        let (json, form) = self.body_cache.parsed(stored.id, &d.body);
        ui.horizontal(|ui| {
            ui.strong(format!("Body ({})", human_bytes(d.body_size)));
            ui.separator();
            let view = &mut self.body_view;
            ui.add_enabled_ui(text.is_some(), |ui| {
                ui.selectable_value(view, BodyView::Pretty, "Pretty");
                ui.selectable_value(view, BodyView::Raw, "Raw");
            });
            ui.selectable_value(view, BodyView::Hex, "Hex");
            ui.add_enabled_ui(json.is_some(), |ui| {
                ui.selectable_value(view, BodyView::Tree, "Tree")
                    .on_hover_text(
                        "Click a key to copy its JSON pointer (to redact a field on export, or for job_id_pointer…)",
                    );
            });
            ui.add_enabled_ui(form.is_some(), |ui| {
                ui.selectable_value(view, BodyView::Form, "Form");
            });
        });
        if !d.body_complete {
            ui.colored_label(
                widgets::WARN,
                stored
                    .note
                    .clone()
                    .unwrap_or_else(|| "The body was not kept whole.".into()),
            );
            return;
        }
        if d.body.is_empty() {
            ui.weak("(empty body)");
            return;
        }
        let dark = ui.visuals().dark_mode;
        let view = match self.body_view {
            _ if text.is_none() => BodyView::Hex,
            BodyView::Tree if json.is_none() => BodyView::Pretty,
            BodyView::Form if form.is_none() => BodyView::Pretty,
            view => view,
        };
        if let (BodyView::Tree, Some(json)) = (view, json.as_deref()) {
            if let Some(pointer) = json_tree_ui(ui, json, "", "body") {
                ui.ctx().copy_text(pointer.clone());
                shared.notice(format!("copied the JSON pointer {pointer}"), false);
            }
            return;
        }
        if let (BodyView::Form, Some(fields)) = (view, form.as_deref()) {
            form_ui(ui, fields);
            return;
        }
        let cache = &mut self.body_cache;
        if cache.key != Some((stored.id, view, dark)) {
            let (job, note) = layout_body(&d.body, view, dark);
            cache.key = Some((stored.id, view, dark));
            cache.job = Some(job);
            cache.note = note;
        }
        if let Some(note) = &cache.note {
            ui.weak(note);
        }
        if let Some(job) = &cache.job {
            ui.add(egui::Label::new(job.clone()).selectable(true));
        }
    }

    /// *Compare with…*: the delivery and its event's first, its job's previous delivery, or the
    /// copy forwarded to the handler, each offered when the delivery has one.
    fn compare_with_menu(
        &mut self,
        ui: &mut egui::Ui,
        shared: &mut Shared,
        stored: &StoredDelivery,
    ) {
        use hookscope::app::compare::With;
        let retry = stored
            .checks
            .duplicate
            .first_id
            .is_some_and(|first| first != stored.id);
        let forwarded = shared
            .selection
            .attempts_of(stored.id)
            .iter()
            .any(|a| a.kind == hookscope::domain::attempt::AttemptKind::Forward);
        let choices = [
            (
                With::First,
                retry,
                "the first delivery of its event",
                "It is a retry: what changed since the first copy",
            ),
            (
                With::Previous,
                stored.job.is_some(),
                "its job's previous delivery",
                "What changed since the job's delivery before it",
            ),
            (
                With::Forwarded,
                forwarded,
                "the copy forwarded to the handler",
                "What the handler received: the request as hookscope forwarded it",
            ),
        ];
        if !choices.iter().any(|(_, offered, _, _)| *offered) {
            return;
        }
        ui.menu_button("Compare with…", |ui| {
            for (with, offered, label, hover) in choices {
                if ui
                    .add_enabled(offered, egui::Button::new(label))
                    .on_hover_text(hover)
                    .clicked()
                {
                    shared.send(Command::CompareWith {
                        id: stored.id,
                        with,
                    });
                    ui.close();
                }
            }
        });
    }

    /// The *Compare* window: two deliveries' differences, a line each, coloured by kind (added,
    /// removed, changed), with the headers expected to differ folded into one line.
    pub fn compare_window(&mut self, ctx: &egui::Context, shared: &mut Shared) {
        let Some(comparison) = &self.comparison else {
            return;
        };
        let text = hookscope::domain::compare::human_lines(comparison);
        let mut open = true;
        let mut copy = false;
        egui::Window::new(format!("Compare {}", comparison.title))
            .open(&mut open)
            .default_width(760.0)
            .pivot(egui::Align2::CENTER_CENTER)
            .default_pos(ctx.content_rect().center())
            .show(ctx, |ui| {
                ui.label(if comparison.differs {
                    "What differs (+ only in the second, - only in the first, ~ changed):"
                } else {
                    "Nothing differs beyond what differs between any two attempts of one event."
                });
                ui.add_space(4.0);
                egui::ScrollArea::vertical()
                    .max_height(480.0)
                    .show(ui, |ui| {
                        for line in text.lines().skip(1) {
                            let color = match line.chars().next() {
                                Some('+') => widgets::PASS,
                                Some('-') => widgets::FAIL,
                                Some('~') | Some('^') => widgets::WARN,
                                _ => ui.visuals().text_color(),
                            };
                            ui.add(
                                egui::Label::new(RichText::new(line).monospace().color(color))
                                    .selectable(true),
                            );
                        }
                    });
                ui.add_space(4.0);
                copy = ui.button("Copy").clicked();
            });
        if copy {
            ctx.copy_text(text.clone());
            shared.notice("copied the comparison".to_string(), false);
        }
        if !open {
            self.comparison = None;
        }
    }
}

fn check_row(ui: &mut egui::Ui, name: &str, color: Color32, word: &str, detail: &str) {
    ui.label(RichText::new(name).strong());
    widgets::badge(ui, word, color, detail);
    ui.add(egui::Label::new(detail).wrap());
    ui.end_row();
}

fn checks_grid_ui(ui: &mut egui::Ui, checks: &hookscope::domain::checks::Checks) {
    egui::Grid::new("checks_grid")
        .num_columns(3)
        .spacing([12.0, 10.0])
        .min_col_width(70.0)
        .show(ui, |ui| {
            let (color, word) = widgets::signature_look(checks.signature.status);
            check_row(ui, "Signature", color, word, &checks.signature.detail);
            let (color, word) = widgets::timestamp_look(checks.timestamp.status);
            check_row(ui, "Timestamp", color, word, &checks.timestamp.detail);
            let (color, word) = widgets::duplicate_look(checks.duplicate.status);
            check_row(ui, "Duplicate", color, word, &checks.duplicate.detail);
            let color = match checks.advice.status {
                AdviceStatus::Advice => widgets::ADVICE,
                AdviceStatus::Clear => widgets::SKIPPED,
            };
            check_row(
                ui,
                "Advice",
                color,
                checks.advice.status.as_str(),
                &checks.advice.detail,
            );
            if let Some(schema) = &checks.schema {
                let (color, word) = widgets::schema_look(schema.status);
                check_row(ui, "Schema", color, word, &schema.detail);
            }
        });
}

/// The schema's violations and the fields it does not document, one line each.
fn schema_items_ui(ui: &mut egui::Ui, checks: &hookscope::domain::checks::Checks) {
    if let Some(schema) = checks
        .schema
        .as_ref()
        .filter(|s| !s.violations.is_empty() || !s.drift.is_empty())
    {
        let title = match (schema.violations.len() + schema.more, schema.drift.len()) {
            (0, d) => format!("Undocumented fields ({d})"),
            (v, 0) => format!("Schema violations ({v})"),
            (v, d) => format!("Schema violations ({v}) and undocumented fields ({d})"),
        };
        egui::CollapsingHeader::new(title)
            .id_salt("schema_items")
            .default_open(true)
            .show(ui, |ui| {
                egui::Grid::new("schema_grid")
                    .num_columns(3)
                    .spacing([12.0, 4.0])
                    .show(ui, |ui| {
                        for v in &schema.violations {
                            let at = if v.pointer.is_empty() {
                                "(body)"
                            } else {
                                v.pointer.as_str()
                            };
                            ui.add(
                                egui::Label::new(RichText::new(at).monospace()).selectable(true),
                            );
                            ui.colored_label(widgets::FAIL, &v.rule);
                            ui.add(egui::Label::new(&v.detail).wrap());
                            ui.end_row();
                        }
                        if schema.more > 0 {
                            ui.weak("");
                            ui.weak("");
                            ui.weak(format!("… and {} more", schema.more));
                            ui.end_row();
                        }
                        for d in &schema.drift {
                            ui.add(
                                egui::Label::new(RichText::new(&d.pointer).monospace())
                                    .selectable(true),
                            );
                            ui.colored_label(widgets::ADVICE, "drift");
                            ui.add(
                                egui::Label::new("undocumented: the provider may have added it")
                                    .wrap(),
                            );
                            ui.end_row();
                        }
                    });
            });
    }
}

/// The advice, one line a JSON pointer.
fn advice_items_ui(ui: &mut egui::Ui, checks: &hookscope::domain::checks::Checks) {
    if !checks.advice.items.is_empty() {
        egui::CollapsingHeader::new(format!("Advice ({})", checks.advice.items.len()))
            .id_salt("advice_items")
            .default_open(true)
            .show(ui, |ui| {
                egui::Grid::new("advice_grid")
                    .num_columns(2)
                    .spacing([12.0, 4.0])
                    .show(ui, |ui| {
                        for item in &checks.advice.items {
                            ui.add(
                                egui::Label::new(
                                    RichText::new(item.pointer.as_deref().unwrap_or("(body)"))
                                        .monospace(),
                                )
                                .selectable(true),
                            );
                            ui.add(egui::Label::new(&item.detail).wrap());
                            ui.end_row();
                        }
                    });
            });
    }
}

/// The delivery's facts (scheme, endpoint, ids, CloudEvent, job); returns the job whose
/// timeline was asked for.
fn facts_ui(ui: &mut egui::Ui, stored: &StoredDelivery) -> Option<String> {
    let checks = &stored.checks;
    let mut show_job = None;
    egui::Grid::new("facts_grid")
        .num_columns(2)
        .spacing([12.0, 4.0])
        .show(ui, |ui| {
            let fact = |ui: &mut egui::Ui, name: &str, value: String| {
                ui.weak(name);
                ui.add(egui::Label::new(RichText::new(value).monospace()).selectable(true));
                ui.end_row();
            };
            fact(
                ui,
                "scheme",
                stored
                    .scheme
                    .clone()
                    .unwrap_or_else(|| "none recognised".into()),
            );
            fact(ui, "endpoint", stored.endpoint.clone());
            if let Some(secret) = &checks.signature.secret {
                fact(ui, "matched", secret.clone());
            }
            if let Some(skew) = checks.timestamp.skew_secs {
                fact(ui, "skew", format!("{skew:+} s"));
            }
            fact(
                ui,
                "event id",
                stored.event_id.clone().unwrap_or_else(|| "-".into()),
            );
            fact(
                ui,
                "event type",
                stored.event_type.clone().unwrap_or_else(|| "-".into()),
            );
            if let Some(event) = hookscope::domain::cloudevents::read(&stored.delivery) {
                let mode = match event.mode {
                    hookscope::domain::cloudevents::Mode::Binary => "binary mode (ce- headers)",
                    hookscope::domain::cloudevents::Mode::Structured => {
                        "structured mode (JSON envelope)"
                    }
                };
                fact(ui, "CloudEvent", format!("{} {mode}", event.specversion));
                fact(ui, "source", event.source.clone());
                // The occurrence's time: a retry carries the old one, so it is not judged.
                fact(
                    ui,
                    "event time",
                    event.time.clone().unwrap_or_else(|| "-".into()),
                );
            }
            if let Some(job) = &stored.job {
                let status = job.status.as_deref().unwrap_or("?");
                ui.weak("job");
                ui.horizontal(|ui| {
                    ui.monospace(format!("{} ({status})", job.job_id));
                    if ui.link("Show the job's timeline").clicked() {
                        show_job = Some(job.job_id.clone());
                    }
                });
                ui.end_row();
            }
        });
    show_job
}

/// What was noted on arrival, and why no forwarding rule took it.
fn notes_ui(ui: &mut egui::Ui, stored: &StoredDelivery) {
    if let Some(note) = &stored.note {
        ui.add_space(6.0);
        ui.colored_label(widgets::WARN, note);
    }
    if let Some(rules) = stored.unrouted {
        ui.add_space(6.0);
        ui.colored_label(
            widgets::WARN,
            format!(
                "{} (Endpoints & secrets: Test with the selected delivery shows which conditions it meets).",
                hookscope::app::report::unrouted_sentence(rules)
            ),
        );
    }
}

/// A JSON value as a collapsible tree. Returns the pointer of a key that was clicked.
fn json_tree_ui(
    ui: &mut egui::Ui,
    value: &serde_json::Value,
    pointer: &str,
    label: &str,
) -> Option<String> {
    use serde_json::Value;
    let mut clicked = None;
    let children: Vec<(String, &Value)> = match value {
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), v))
            .collect(),
        _ => Vec::new(),
    };
    for (key, child) in children {
        let child_pointer = format!(
            "{pointer}/{}",
            hookscope::domain::pretty::pointer_segment(&key)
        );
        match child {
            Value::Object(_) | Value::Array(_) => {
                let size = match child {
                    Value::Object(m) => format!("{{{}}}", m.len()),
                    Value::Array(a) => format!("[{}]", a.len()),
                    _ => String::new(),
                };
                let id = ui.make_persistent_id((label, &child_pointer));
                egui::collapsing_header::CollapsingState::load_with_default_open(
                    ui.ctx(),
                    id,
                    true,
                )
                .show_header(ui, |ui| {
                    if ui
                        .add(
                            egui::Label::new(RichText::new(&key).monospace().strong())
                                .sense(egui::Sense::click()),
                        )
                        .on_hover_text(format!("{child_pointer}\nclick to copy the pointer"))
                        .clicked()
                    {
                        clicked = Some(child_pointer.clone());
                    }
                    ui.weak(size);
                })
                .body(|ui| {
                    if let Some(p) = json_tree_ui(ui, child, &child_pointer, label) {
                        clicked = Some(p);
                    }
                });
            }
            leaf => {
                ui.horizontal(|ui| {
                    ui.add_space(18.0);
                    if ui
                        .add(
                            egui::Label::new(RichText::new(&key).monospace())
                                .sense(egui::Sense::click()),
                        )
                        .on_hover_text(format!("{child_pointer}\nclick to copy the pointer"))
                        .clicked()
                    {
                        clicked = Some(child_pointer.clone());
                    }
                    ui.add(
                        egui::Label::new(RichText::new(leaf.to_string()).monospace())
                            .selectable(true)
                            .wrap(),
                    );
                });
            }
        }
    }
    clicked
}

/// Form fields one per row; a value that is JSON (Slack's `payload`) is shown pretty.
fn form_ui(ui: &mut egui::Ui, fields: &[(String, String)]) {
    egui::Grid::new("form_fields")
        .num_columns(2)
        .spacing([16.0, 4.0])
        .striped(true)
        .show(ui, |ui| {
            for (name, value) in fields {
                ui.monospace(name);
                let shown = serde_json::from_str::<serde_json::Value>(value)
                    .ok()
                    .filter(|v| v.is_object() || v.is_array())
                    .and_then(|v| serde_json::to_string_pretty(&v).ok())
                    .unwrap_or_else(|| value.clone());
                ui.add(
                    egui::Label::new(RichText::new(shown).monospace())
                        .selectable(true)
                        .wrap(),
                );
                ui.end_row();
            }
        });
}

fn layout_body(body: &[u8], view: BodyView, dark: bool) -> (LayoutJob, Option<String>) {
    let shown = &body[..body.len().min(BODY_VIEW_LIMIT)];
    let mut note = (body.len() > BODY_VIEW_LIMIT).then(|| {
        format!(
            "Showing the first {} of {}; copy the delivery as JSON or export it for the rest.",
            human_bytes(BODY_VIEW_LIMIT as u64),
            human_bytes(body.len() as u64)
        )
    });
    let font = egui::FontId::monospace(12.5);
    let plain = if dark {
        Color32::from_gray(215)
    } else {
        Color32::from_gray(30)
    };
    let mut job = LayoutJob::default();
    let text_of = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    match view {
        BodyView::Hex => job.append(&hexdump(shown), 0.0, format(&font, plain)),
        BodyView::Raw => job.append(&text_of(shown), 0.0, format(&font, plain)),
        // Drawn as widgets by `request_ui`; as text they read like the pretty view.
        BodyView::Pretty | BodyView::Tree | BodyView::Form => {
            let text = text_of(shown);
            match pretty_json(&text).filter(|_| body.len() <= BODY_VIEW_LIMIT) {
                Some(pretty) => {
                    let color = |token: Token| match (token, dark) {
                        (Token::Key, true) => Color32::from_rgb(140, 190, 255),
                        (Token::Key, false) => Color32::from_rgb(20, 80, 170),
                        (Token::String, true) => Color32::from_rgb(150, 210, 140),
                        (Token::String, false) => Color32::from_rgb(30, 120, 40),
                        (Token::Number, true) => Color32::from_rgb(240, 180, 110),
                        (Token::Number, false) => Color32::from_rgb(170, 90, 0),
                        (Token::Literal, true) => Color32::from_rgb(210, 150, 240),
                        (Token::Literal, false) => Color32::from_rgb(130, 40, 160),
                        (Token::Punct, _) => plain,
                    };
                    let mut at = 0;
                    for (start, end, token) in &pretty.spans {
                        if *start > at {
                            job.append(&pretty.text[at..*start], 0.0, format(&font, plain));
                        }
                        job.append(
                            &pretty.text[*start..*end],
                            0.0,
                            format(&font, color(*token)),
                        );
                        at = *end;
                    }
                    job.append(&pretty.text[at..], 0.0, format(&font, plain));
                }
                None => {
                    if note.is_none() && text.trim_start().starts_with(['{', '[']) {
                        note = Some("Not valid JSON: shown as received.".into());
                    }
                    job.append(&text, 0.0, format(&font, plain));
                }
            }
        }
    }
    (job, note)
}

fn format(font: &egui::FontId, color: Color32) -> egui::TextFormat {
    egui::TextFormat::simple(font.clone(), color)
}

fn response_ui(
    ui: &mut egui::Ui,
    stored: &StoredDelivery,
    zone: &Zone,
    configured: Option<String>,
) {
    egui::Grid::new("response_grid")
        .num_columns(2)
        .spacing([12.0, 6.0])
        .show(ui, |ui| {
            ui.weak("status");
            ui.monospace(stored.response_status.to_string());
            ui.end_row();
            ui.weak("answered after");
            ui.monospace(format!("{} ms", stored.latency_ms));
            ui.end_row();
            ui.weak("received at");
            ui.monospace(full_time(stored.delivery.received_at_ms, zone))
                .on_hover_text(rfc3339_ms(stored.delivery.received_at_ms));
            ui.end_row();
            ui.weak("from");
            ui.monospace(
                stored
                    .delivery
                    .remote_addr
                    .clone()
                    .unwrap_or_else(|| "-".into()),
            );
            ui.end_row();
            if let Some(relayed) = &stored.relayed {
                ui.weak("via");
                let words = hookscope::app::report::relay_words(relayed);
                ui.monospace(words.trim_start_matches("via "));
                ui.end_row();
            }
            ui.weak("body");
            if stored.response_status == 413 {
                ui.monospace(format!(
                    "{{\"error\":\"body over the limit\",\"delivery_id\":{}}}",
                    stored.id
                ));
            } else if let Some(body) = configured {
                ui.monospace(body)
                    .on_hover_text("the endpoint's respond_body, as configured now");
            } else {
                ui.monospace(format!(
                    "{{\"received\":true,\"delivery_id\":{}}}",
                    stored.id
                ));
            }
            ui.end_row();
        });
    ui.add_space(6.0);
    ui.weak("hookscope answers only after the delivery is committed to the store, so this answer means it is on disk.");
}

fn diagnosis_ui(ui: &mut egui::Ui, diagnosis: &hookscope::domain::diagnose::Diagnosis) {
    egui::Frame::group(ui.style()).show(ui, |ui| {
        ui.horizontal(|ui| {
            ui.strong("Diagnosis");
            let color = if diagnosis.cause == hookscope::domain::diagnose::Cause::Unknown {
                widgets::SKIPPED
            } else {
                widgets::FAIL
            };
            widgets::badge(
                ui,
                diagnosis.cause.code(),
                color,
                "the cause code scripts see in checks.signature.diagnosis.cause",
            );
        });
        ui.add(egui::Label::new(&diagnosis.detail).wrap());
        ui.add_space(4.0);
        egui::Grid::new("diagnosis_grid")
            .num_columns(2)
            .spacing([12.0, 4.0])
            .show(ui, |ui| {
                if let (Some(expected), Some(received)) = (&diagnosis.expected, &diagnosis.received)
                {
                    let at = first_difference(expected, received);
                    ui.weak(format!(
                        "expected ({})",
                        diagnosis.secret.as_deref().unwrap_or("secret")
                    ));
                    ui.add(
                        egui::Label::new(marked(ui, expected, at))
                            .selectable(true)
                            .wrap(),
                    );
                    ui.end_row();
                    ui.weak("received");
                    ui.add(
                        egui::Label::new(marked(ui, received, at))
                            .selectable(true)
                            .wrap(),
                    );
                    ui.end_row();
                }
                if let Some(signed) = &diagnosis.expected_signed {
                    ui.weak("hookscope signed");
                    ui.add(
                        egui::Label::new(RichText::new(signed).monospace())
                            .selectable(true)
                            .wrap(),
                    );
                    ui.end_row();
                }
                if let Some(signed) = &diagnosis.sender_signed {
                    ui.weak("the sender signed");
                    ui.add(
                        egui::Label::new(RichText::new(signed).monospace())
                            .selectable(true)
                            .wrap(),
                    );
                    ui.end_row();
                }
            });
        egui::CollapsingHeader::new(format!("Hypotheses tried ({})", diagnosis.tried.len()))
            .id_salt("diagnosis_tried")
            .show(ui, |ui| {
                for hypothesis in &diagnosis.tried {
                    ui.label(format!("- {hypothesis}"));
                }
            });
    });
}

/// The index (in characters) of the first difference between two strings.
fn first_difference(a: &str, b: &str) -> Option<usize> {
    let mut chars = a.chars().zip(b.chars()).enumerate();
    chars
        .find(|(_, (x, y))| x != y)
        .map(|(i, _)| i)
        .or_else(|| {
            (a.chars().count() != b.chars().count())
                .then(|| a.chars().count().min(b.chars().count()))
        })
}

/// Monospace text with the character at `at` marked in red.
fn marked(ui: &egui::Ui, text: &str, at: Option<usize>) -> LayoutJob {
    let font = egui::FontId::monospace(12.5);
    let plain = ui.visuals().text_color();
    let mut job = LayoutJob::default();
    let Some(at) = at.filter(|i| *i < text.chars().count()) else {
        job.append(text, 0.0, format(&font, plain));
        return job;
    };
    let split = text
        .char_indices()
        .nth(at)
        .map(|(i, _)| i)
        .unwrap_or(text.len());
    let next = text[split..]
        .chars()
        .next()
        .map(|c| split + c.len_utf8())
        .unwrap_or(text.len());
    job.append(&text[..split], 0.0, format(&font, plain));
    let mut highlighted = format(&font, Color32::WHITE);
    highlighted.background = widgets::FAIL;
    job.append(&text[split..next], 0.0, highlighted);
    job.append(&text[next..], 0.0, format(&font, plain));
    job
}

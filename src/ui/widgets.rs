//! Small pieces shared by the panels: verdict colours and badges.

use eframe::egui::{self, Color32, RichText};
use hookscope::domain::advice::AdviceStatus;
use hookscope::domain::checks::{Checks, DuplicateStatus, SignatureStatus, TimestampStatus};
use hookscope::domain::handshake::{Handshake, Outcome};

/// A check that passed.
pub const PASS: Color32 = Color32::from_rgb(38, 150, 70);
/// A check that warns.
pub const WARN: Color32 = Color32::from_rgb(200, 140, 20);
/// A check that failed.
pub const FAIL: Color32 = Color32::from_rgb(210, 50, 50);
/// A check that did not run.
pub const SKIPPED: Color32 = Color32::from_rgb(120, 120, 128);
/// Payload advice: never a failure, so grey, a shade apart from "skipped".
pub const ADVICE: Color32 = Color32::from_rgb(96, 104, 122);
/// A handshake answered: not an event, so neither green nor grey.
pub const HANDSHAKE: Color32 = Color32::from_rgb(52, 102, 190);

/// The colour and words of a handshake's outcome.
pub fn handshake_look(outcome: Outcome) -> (Color32, &'static str) {
    match outcome {
        Outcome::Answered => (HANDSHAKE, "handshake"),
        Outcome::Refused => (FAIL, "handshake refused"),
        Outcome::Awaiting => (WARN, "confirm subscription"),
    }
}

/// The colour and word of a signature verdict.
pub fn signature_look(status: SignatureStatus) -> (Color32, &'static str) {
    match status {
        SignatureStatus::Pass => (PASS, "pass"),
        SignatureStatus::Fail => (FAIL, "fail"),
        SignatureStatus::Skipped => (SKIPPED, "skipped"),
    }
}

/// The colour and word of a timestamp verdict.
pub fn timestamp_look(status: TimestampStatus) -> (Color32, &'static str) {
    match status {
        TimestampStatus::Pass => (PASS, "pass"),
        TimestampStatus::Warn => (WARN, "warn"),
        TimestampStatus::Fail => (FAIL, "fail"),
        TimestampStatus::Skipped => (SKIPPED, "skipped"),
    }
}

/// The colour and word of a duplicate verdict.
pub fn duplicate_look(status: DuplicateStatus) -> (Color32, &'static str) {
    match status {
        DuplicateStatus::First => (PASS, "first"),
        DuplicateStatus::Duplicate => (WARN, "duplicate"),
        DuplicateStatus::Skipped => (SKIPPED, "no id"),
    }
}

/// The colour and word of a schema verdict.
pub fn schema_look(status: hookscope::domain::contract::SchemaStatus) -> (Color32, &'static str) {
    use hookscope::domain::contract::SchemaStatus;
    match status {
        SchemaStatus::Pass => (PASS, "pass"),
        SchemaStatus::Fail => (FAIL, "fail"),
        SchemaStatus::Skipped => (SKIPPED, "skipped"),
    }
}

/// A filled badge with white text; its hover text is the check's sentence.
pub fn badge(ui: &mut egui::Ui, label: &str, color: Color32, hover: &str) -> egui::Response {
    let text = RichText::new(label)
        .color(Color32::WHITE)
        .size(11.5)
        .strong();
    let button = egui::Button::new(text)
        .fill(color)
        .stroke(egui::Stroke::NONE)
        .corner_radius(4.0)
        .min_size(egui::vec2(0.0, 16.0))
        .sense(egui::Sense::hover());
    ui.add(button).on_hover_text(hover)
}

/// The three badges of a delivery, in the order signature, timestamp, duplicate.
pub fn check_badges(ui: &mut egui::Ui, checks: &Checks) {
    let (color, word) = signature_look(checks.signature.status);
    badge(ui, &format!("sig {word}"), color, &checks.signature.detail);
    let (color, word) = timestamp_look(checks.timestamp.status);
    badge(ui, &format!("ts {word}"), color, &checks.timestamp.detail);
    let (color, word) = duplicate_look(checks.duplicate.status);
    badge(ui, word, color, &checks.duplicate.detail);
    if checks.advice.status == AdviceStatus::Advice {
        badge(ui, "advice", ADVICE, &checks.advice.detail);
    }
    if let Some(schema) = &checks.schema {
        let (color, word) = schema_look(schema.status);
        badge(ui, &format!("schema {word}"), color, &schema.detail);
    }
}

/// The badges of a handshake: its outcome, and its signature when its provider signs it (a
/// handshake is no event, so it has no timestamp or duplicate verdict worth a badge).
pub fn handshake_badges(ui: &mut egui::Ui, handshake: &Handshake, checks: &Checks) {
    let (color, word) = handshake_look(handshake.outcome);
    badge(ui, word, color, &handshake.detail);
    if handshake.verified.is_some() {
        let (color, word) = signature_look(checks.signature.status);
        badge(ui, &format!("sig {word}"), color, &checks.signature.detail);
    }
}

/// A coloured dot followed by a label, for states (the default fonts have no "●").
pub fn status_dot(ui: &mut egui::Ui, color: Color32, label: &str) -> egui::Response {
    ui.horizontal(|ui| {
        ui.spacing_mut().item_spacing.x = 5.0;
        let (rect, _) = ui.allocate_exact_size(egui::vec2(10.0, 10.0), egui::Sense::hover());
        ui.painter().circle_filled(rect.center(), 4.5, color);
        ui.colored_label(color, label)
    })
    .inner
}

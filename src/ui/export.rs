//! Export and import from the window: the *Export* window for the selected deliveries (fixture,
//! HAR or curl, with re-signing, redaction and test snippets), *Import HAR…*, and the native file
//! dialogs, which run on their own thread so the window never waits on them.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, sync_channel};

use eframe::egui::{self, RichText};
use hookscope::app::export::ExportRequest;
use hookscope::engine::Command;
use hookscope::export::Format;

use super::shared::Shared;

/// What a file dialog was opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DialogFor {
    /// The export's destination.
    Export,
    /// The HAR file to import.
    Import,
}

/// The *Export* window's form.
pub struct ExportForm {
    /// Whether the window is open.
    pub open: bool,
    /// The format.
    pub format: Format,
    resign: bool,
    redact: String,
    snippets: bool,
    /// Where to write.
    pub out: String,
    dialog: Option<(DialogFor, Receiver<Option<PathBuf>>)>,
}

impl Default for ExportForm {
    fn default() -> Self {
        let base = std::env::current_dir().unwrap_or_default();
        Self {
            open: false,
            format: Format::Fixture,
            resign: true,
            redact: String::new(),
            snippets: true,
            out: format!("{}/", base.join("fixtures").display()),
            dialog: None,
        }
    }
}

impl ExportForm {
    /// Opens a native file dialog on its own thread; the answer arrives in [`Self::poll_dialog`].
    pub fn open_dialog(&mut self, ctx: &egui::Context, shared: &mut Shared, purpose: DialogFor) {
        let (tx, rx) = sync_channel(1);
        let repaint = ctx.clone();
        let spawned = std::thread::Builder::new()
            .name("hookscope-dialog".into())
            .spawn(move || {
                let dialog = rfd::FileDialog::new();
                let picked = match purpose {
                    DialogFor::Export => dialog.set_file_name("fixture.json").save_file(),
                    DialogFor::Import => dialog.add_filter("HAR", &["har", "json"]).pick_file(),
                };
                let _ = tx.send(picked);
                repaint.request_repaint();
            });
        match spawned {
            Ok(_) => self.dialog = Some((purpose, rx)),
            Err(e) => shared.notice(format!("cannot open a file dialog: {e}"), true),
        }
    }

    /// Takes a finished dialog's answer.
    pub fn poll_dialog(&mut self, shared: &mut Shared) {
        let Some((purpose, rx)) = &self.dialog else {
            return;
        };
        let purpose = *purpose;
        let Ok(picked) = rx.try_recv() else { return };
        self.dialog = None;
        match (purpose, picked) {
            (DialogFor::Export, Some(path)) => self.out = path.display().to_string(),
            (DialogFor::Import, Some(path)) => shared.send(Command::ImportHar { path }),
            (_, None) => shared.notice(
                "no file chosen (or no file dialog on this desktop: type the path instead)",
                false,
            ),
        }
    }

    /// The *Export* window.
    pub fn window(&mut self, ctx: &egui::Context, shared: &mut Shared) {
        if !self.open {
            return;
        }
        let ids = shared.selection.ids();
        let mut open = true;
        let mut command = None;
        let mut choose = false;
        egui::Window::new("Export").open(&mut open).default_width(620.0).show(ctx, |ui| {
        let form = &mut *self;
        ui.label(match ids.len() {
            0 => "Select deliveries in the list first (Ctrl+click adds, Shift+click extends).".to_string(),
            1 => format!("Delivery #{}", ids[0]),
            n => format!("{n} selected deliveries"),
        });
        ui.horizontal(|ui| {
            ui.label("Format");
            ui.radio_value(&mut form.format, Format::Fixture, "test fixture");
            ui.radio_value(&mut form.format, Format::Har, "HAR 1.2");
            ui.radio_value(&mut form.format, Format::Curl, "curl script");
        });
        if form.format == Format::Fixture {
            ui.checkbox(&mut form.resign, "re-sign with a generated test secret (written into the fixture; the real secret never is)");
            ui.horizontal(|ui| {
                let label = ui.label("Redact");
                ui.add_enabled(
                    form.resign,
                    egui::TextEdit::singleline(&mut form.redact)
                        .hint_text("JSON pointers, e.g. /data/patient/name /data/member_id")
                        .desired_width(380.0),
                )
                .labelled_by(label.id);
            });
            if !form.resign {
                ui.weak("Redaction changes the body, so it needs re-signing to stay valid.");
            }
            ui.checkbox(&mut form.snippets, "with example tests (pytest, node:test, Rust) that load the fixture")
                .on_hover_text("Each checks the signature as the scheme's libraries do. When the delivery's endpoint has a contract, the fixture carries its schema, and the pytest and node:test files check the body against it (jsonschema, ajv).");
        }
        ui.horizontal(|ui| {
            let label = ui.label("Write to");
            ui.add(egui::TextEdit::singleline(&mut form.out).desired_width(420.0)).labelled_by(label.id);
            if ui.button("Choose…").clicked() {
                choose = true;
            }
        });
        ui.weak("A path ending in / is a folder: one fixture file per delivery.");
        if ui.add_enabled(!ids.is_empty(), egui::Button::new(RichText::new("Export").strong())).clicked() {
            command = Some(Command::Export(ExportRequest {
                ids: ids.clone(),
                filter: None,
                scheme: None,
                format: form.format,
                resign_with_test_secret: form.format == Format::Fixture && form.resign,
                // Redacting goes with re-signing, which only a fixture does.
                redact: if form.format == Format::Fixture && form.resign { form.redact.split_whitespace().map(str::to_string).collect() } else { Vec::new() },
                snippets: form.format == Format::Fixture && form.snippets,
                out: PathBuf::from(form.out.trim()),
            }));
        }
    });
        self.open = open;
        if choose {
            self.open_dialog(ctx, shared, DialogFor::Export);
        }
        if let Some(command) = command {
            shared.send(command);
        }
    }
}

/// The engine's curl command for delivery `id` (it writes a body that is not text to a file in
/// the data dir, which the command reads), copied.
pub fn copied_curl(shared: &mut Shared, id: i64, command: String, body: Option<PathBuf>) {
    let extra = body
        .map(|path| format!(" (the body is in {})", path.display()))
        .unwrap_or_default();
    shared.copy(command, format!("copied delivery #{id} as curl{extra}"));
}

//! The top bar: the receiver's state and URL, start/stop, port, pause, the filter, and the
//! buttons that open the other panels.

use eframe::egui::{self, RichText};
use hookscope::engine::{Command, ReceiverState};
use hookscope::net::relay::RelayState;

use super::shared::{Msg, Shared, Window};
use super::{View, widgets};

/// The top bar's own state: the port typed, and what it asked.
pub struct TopBar {
    /// The port to start the receiver on, as typed.
    pub port_text: String,
    /// Focus the filter box on the next frame (Ctrl+F).
    pub focus_filter: bool,
    /// *Clear history…* asked for its confirmation.
    confirm_clear: bool,
    /// The store health's change counter as last drawn.
    health_seen: u64,
}

/// The filter box's id, so Ctrl+F can focus it.
pub fn filter_id() -> egui::Id {
    egui::Id::unique("hookscope_filter")
}

impl TopBar {
    /// The bar, with the port the receiver is configured for.
    pub fn new(port: u16) -> Self {
        Self {
            port_text: port.to_string(),
            focus_filter: false,
            confirm_clear: false,
            health_seen: 0,
        }
    }

    /// The receiver moved: the port box follows it.
    pub fn receiver_changed(&mut self, state: &ReceiverState) {
        if let ReceiverState::Running { addr } = state {
            self.port_text = addr.port().to_string();
        }
    }

    /// Draws the top bar; `list_error` is the deliveries filter's error, if it has one.
    pub fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared, list_error: Option<&str>) {
        ui.add_space(4.0);
        self.main_row(ui, shared);
        // The relay gets a line of its own, under the local URL: the bar has no room for it.
        relay_ui(shared, ui);
        self.trouble_line(ui, shared);
        // The simulator has no filter: its view is a form and a live report.
        if shared.view == View::Simulate {
            ui.add_space(2.0);
            return;
        }
        self.filter_row(ui, shared);
        if let Some(error) = list_error {
            ui.colored_label(widgets::FAIL, error);
        }
        ui.add_space(2.0);
    }

    /// The views, the receiver, pause, and the buttons that open the other panels.
    fn main_row(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        ui.horizontal(|ui| {
            ui.heading(RichText::new("hookscope").strong());
            ui.separator();
            let view = shared.view;
            if ui.selectable_label(view == View::Deliveries, "Deliveries").clicked() && view != View::Deliveries {
                shared.view = View::Deliveries;
                shared.filter.clear();
            }
            if ui.selectable_label(view == View::Jobs, "Jobs").clicked() && view != View::Jobs {
                shared.view = View::Jobs;
                shared.filter.clear();
                shared.tell(Msg::JobsStale);
            }
            if ui.selectable_label(view == View::Simulate, "Simulate").clicked() && view != View::Simulate {
                shared.view = View::Simulate;
            }
            ui.separator();
            match shared.receiver.clone() {
                ReceiverState::Running { addr } => {
                    widgets::status_dot(ui, widgets::PASS, "listening");
                    let host = if addr.ip().is_unspecified() { "127.0.0.1".to_string() } else { addr.ip().to_string() };
                    let url = format!("http://{host}:{}/", addr.port());
                    // The scheme is left off to keep the bar on one line; Copy URL copies it whole.
                    ui.monospace(url.trim_start_matches("http://"))
                        .on_hover_text(format!("{url}: give this URL (plus any path) to the sender, or to your tunnel"));
                    if ui.button("Copy URL").clicked() {
                        ui.ctx().copy_text(url.clone());
                        shared.notice(format!("copied {url}"), false);
                    }
                    if !addr.ip().is_loopback() {
                        ui.colored_label(widgets::WARN, format!("reachable from the network ({})", addr.ip()))
                            .on_hover_text("Bound beyond loopback: anyone who can reach this port can send and read deliveries");
                    }
                    if ui.button("Stop").clicked() {
                        shared.send(Command::StopReceiver);
                    }
                    self.start_controls(ui, shared, "Change port");
                }
                ReceiverState::Stopped => {
                    widgets::status_dot(ui, widgets::SKIPPED, "stopped");
                    self.start_controls(ui, shared, "Start");
                }
                ReceiverState::Failed(reason) => {
                    widgets::status_dot(ui, widgets::FAIL, "not listening").on_hover_text(&reason);
                    self.start_controls(ui, shared, "Retry");
                }
            }
            // Pausing freezes the deliveries list: only there is it shown.
            let pause_label = if shared.paused_at.is_some() { "Resume live" } else { "Pause live" };
            if shared.view == View::Deliveries
                && ui
                    .button(pause_label)
                .on_hover_text("Freeze the list while you read; the receiver keeps capturing and nothing is lost")
                .clicked()
            {
                shared.paused_at = match shared.paused_at {
                    Some(_) => None,
                    None => Some(shared.engine.latest_id.load(std::sync::atomic::Ordering::SeqCst)),
                };
            }
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                if ui.button("Endpoints & secrets").clicked() {
                    shared.tell(Msg::Open(Window::Endpoints));
                }
                if ui.button("Probe handler").clicked() {
                    shared.tell(Msg::Open(Window::Probe));
                }
                ui.menu_button("History", |ui| {
                    if ui.button("Export selected…").clicked() {
                        shared.tell(Msg::Open(Window::Export));
                        ui.close();
                    }
                    if ui.button("Import HAR…").clicked() {
                        shared.tell(Msg::ImportHar);
                        ui.close();
                    }
                    ui.separator();
                    if self.confirm_clear {
                        ui.label("Delete every delivery?");
                        if ui.button(RichText::new("Yes, delete all").color(widgets::FAIL)).clicked() {
                            shared.send(Command::ClearHistory);
                            shared.selection.clear();
                            self.confirm_clear = false;
                            ui.close();
                        }
                        if ui.button("Keep them").clicked() {
                            self.confirm_clear = false;
                        }
                    } else if ui.button("Clear history…").clicked() {
                        self.confirm_clear = true;
                    }
                });
            });
        });
    }

    /// Why the receiver or the store is in trouble, on a line of its own.
    fn trouble_line(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        // The reason gets a line of its own: the bar has no room for a sentence.
        let health = shared.engine.health.report();
        if let ReceiverState::Failed(reason) = &shared.receiver {
            ui.colored_label(widgets::FAIL, reason);
        } else if let Some(trouble) = &health.trouble {
            // Disk full, a read-only dir, a vanished store: said while it lasts, gone when a
            // write succeeds again.
            let store = shared
                .engine
                .data_dir
                .join(hookscope::app::paths::STORE_FILE);
            ui.colored_label(widgets::FAIL, trouble.sentence(&store));
        }
        // The line changes the bar's height: lay the frame out again at once, or the filter row
        // stays clipped until something else repaints.
        if health.changes != self.health_seen {
            self.health_seen = health.changes;
            ui.ctx()
                .request_discard("the store's health line changed the top bar's height");
        }
    }

    fn filter_row(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        ui.horizontal(|ui| {
            let label = ui.label("Filter");
            let hint = match shared.view {
                View::Deliveries => "text, or terms: sig:fail dup:yes type:invoice.* job:job_123 path:/hooks/acme after:-1h -term, a OR b, (…)  (Ctrl+F)",
                View::Jobs | View::Simulate => "job id prefix, or terms: flag:stuck flag:out_of_order state:needs_review  (Ctrl+F)",
            };
            let edit = egui::TextEdit::singleline(&mut shared.filter)
                .id(filter_id())
                .hint_text(hint)
                .desired_width(ui.available_width() - 90.0);
            let response = ui.add(edit).labelled_by(label.id);
            if self.focus_filter {
                response.request_focus();
                self.focus_filter = false;
            }
            if !shared.filter.is_empty() && ui.button("Clear").clicked() {
                shared.filter.clear();
            }
        });
    }

    fn start_controls(&mut self, ui: &mut egui::Ui, shared: &mut Shared, verb: &str) {
        let label = ui.label("port");
        ui.add(egui::TextEdit::singleline(&mut self.port_text).desired_width(52.0))
            .labelled_by(label.id);
        if ui.button(verb).clicked() {
            match self.port_text.trim().parse::<u16>() {
                Ok(port) => shared.send(Command::StartReceiver { port }),
                Err(_) => shared.notice(
                    format!("\"{}\" is not a port (0-65535)", self.port_text.trim()),
                    true,
                ),
            }
        }
    }
}

/// The relay beside the local URL, when `[relay]` names one: its state (live, catching up with
/// how many behind, reconnecting and why) and the public URL providers post to, with *Copy*.
fn relay_ui(shared: &mut Shared, ui: &mut egui::Ui) {
    let view = shared.engine.relay.get();
    let Some(view) = view else {
        return;
    };
    ui.horizontal(|ui| relay_line(shared, ui, &view));
}

fn relay_line(shared: &mut Shared, ui: &mut egui::Ui, view: &hookscope::engine::RelayView) {
    let unreadable = view.status.unreadable();
    let (colour, word, hover) = match view.status.state() {
        RelayState::Live => (
            widgets::PASS,
            "relay connected".to_string(),
            format!(
                "Connected to {}: deliveries come as the relay takes them",
                view.url
            ),
        ),
        RelayState::CatchingUp { behind } => (
            widgets::WARN,
            format!("relay: catching up ({behind} behind)"),
            format!("Taking what {} kept while this laptop was away", view.url),
        ),
        RelayState::Connecting => (
            widgets::SKIPPED,
            "relay: connecting".to_string(),
            view.url.clone(),
        ),
        RelayState::Reconnecting { reason } => {
            (widgets::FAIL, "relay: reconnecting".to_string(), reason)
        }
    };
    let hover = if unreadable > 0 {
        format!("{hover}\n{unreadable} deliveries were sealed to another key and skipped")
    } else {
        hover
    };
    widgets::status_dot(ui, colour, &word).on_hover_text(hover);
    if let Some(public) = &view.public_url {
        ui.label("public URL");
        ui.monospace(public)
            .on_hover_text(format!("{public}: give this URL (plus any path) to the provider; the relay keeps what arrives while this laptop sleeps"));
        if ui.button("Copy public URL").clicked() {
            ui.ctx().copy_text(public.clone());
            shared.notice(format!("copied {public}"), false);
        }
    }
}

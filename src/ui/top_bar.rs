//! The top bar: the receiver's state and URL, start/stop, port, pause, the filter, and the
//! buttons that open the other panels.

use eframe::egui::{self, RichText};
use hookscope::engine::{Command, ReceiverState};
use hookscope::net::relay::RelayState;

use super::{HookscopeApp, View, widgets};

/// The filter box's id, so Ctrl+F can focus it.
pub fn filter_id() -> egui::Id {
    egui::Id::unique("hookscope_filter")
}

/// Draws the top bar.
pub fn top_bar_ui(app: &mut HookscopeApp, ui: &mut egui::Ui) {
    ui.add_space(4.0);
    ui.horizontal(|ui| {
        ui.heading(RichText::new("hookscope").strong());
        ui.separator();
        let view = app.state.view;
        if ui.selectable_label(view == View::Deliveries, "Deliveries").clicked() && view != View::Deliveries {
            app.state.view = View::Deliveries;
            app.state.filter.clear();
        }
        if ui.selectable_label(view == View::Jobs, "Jobs").clicked() && view != View::Jobs {
            app.state.view = View::Jobs;
            app.state.filter.clear();
            app.jobs.fresh = false;
        }
        if ui.selectable_label(view == View::Simulate, "Simulate").clicked() && view != View::Simulate {
            app.state.view = View::Simulate;
        }
        ui.separator();
        match app.receiver.clone() {
            ReceiverState::Running { addr } => {
                widgets::status_dot(ui, widgets::PASS, "listening");
                let host = if addr.ip().is_unspecified() { "127.0.0.1".to_string() } else { addr.ip().to_string() };
                let url = format!("http://{host}:{}/", addr.port());
                // The scheme is left off to keep the bar on one line; Copy URL copies it whole.
                ui.monospace(url.trim_start_matches("http://"))
                    .on_hover_text(format!("{url}: give this URL (plus any path) to the sender, or to your tunnel"));
                if ui.button("Copy URL").clicked() {
                    ui.ctx().copy_text(url.clone());
                    app.notice(format!("copied {url}"), false);
                }
                if !addr.ip().is_loopback() {
                    ui.colored_label(widgets::WARN, format!("reachable from the network ({})", addr.ip()))
                        .on_hover_text("Bound beyond loopback: anyone who can reach this port can send and read deliveries");
                }
                if ui.button("Stop").clicked() {
                    app.send(Command::StopReceiver);
                }
                start_controls(app, ui, "Change port");
            }
            ReceiverState::Stopped => {
                widgets::status_dot(ui, widgets::SKIPPED, "stopped");
                start_controls(app, ui, "Start");
            }
            ReceiverState::Failed(reason) => {
                widgets::status_dot(ui, widgets::FAIL, "not listening").on_hover_text(&reason);
                start_controls(app, ui, "Retry");
            }
        }
        // Pausing freezes the deliveries list: only there is it shown.
        let pause_label = if app.paused { "Resume live" } else { "Pause live" };
        if app.state.view == View::Deliveries
            && ui
                .button(pause_label)
            .on_hover_text("Freeze the list while you read; the receiver keeps capturing and nothing is lost")
            .clicked()
        {
            app.paused = !app.paused;
            app.paused_at_id = app.engine.latest_id.load(std::sync::atomic::Ordering::SeqCst);
        }
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
            if ui.button("Endpoints & secrets").clicked() {
                app.endpoints.open = true;
            }
            if ui.button("Probe handler").clicked() {
                app.probe.open = true;
            }
            ui.menu_button("History", |ui| {
                if ui.button("Export selected…").clicked() {
                    app.export.open = true;
                    ui.close();
                }
                if ui.button("Import HAR…").clicked() {
                    let ctx = ui.ctx().clone();
                    super::export::open_dialog(app, &ctx, super::export::DialogFor::Import);
                    ui.close();
                }
                ui.separator();
                if app.confirm_clear {
                    ui.label("Delete every delivery?");
                    if ui.button(RichText::new("Yes, delete all").color(widgets::FAIL)).clicked() {
                        app.send(Command::ClearHistory);
                        app.selected = None;
                        app.detail = None;
                        app.multi.clear();
                        app.confirm_clear = false;
                        ui.close();
                    }
                    if ui.button("Keep them").clicked() {
                        app.confirm_clear = false;
                    }
                } else if ui.button("Clear history…").clicked() {
                    app.confirm_clear = true;
                }
            });
        });
    });
    // The relay gets a line of its own, under the local URL: the bar has no room for it.
    relay_ui(app, ui);
    // The reason gets a line of its own: the bar has no room for a sentence.
    let health = app.engine.health.report();
    if let ReceiverState::Failed(reason) = &app.receiver {
        ui.colored_label(widgets::FAIL, reason);
    } else if let Some(trouble) = &health.trouble {
        // Disk full, a read-only dir, a vanished store: said while it lasts, gone when a
        // write succeeds again.
        let store = app.engine.data_dir.join(hookscope::app::paths::STORE_FILE);
        ui.colored_label(widgets::FAIL, trouble.sentence(&store));
    }
    // The line changes the bar's height: lay the frame out again at once, or the filter row
    // stays clipped until something else repaints.
    if health.changes != app.health_seen {
        app.health_seen = health.changes;
        ui.ctx()
            .request_discard("the store's health line changed the top bar's height");
    }
    // The simulator has no filter: its view is a form and a live report.
    if app.state.view == View::Simulate {
        ui.add_space(2.0);
        return;
    }
    ui.horizontal(|ui| {
        let label = ui.label("Filter");
        let hint = match app.state.view {
            View::Deliveries => "text, or terms: sig:fail dup:yes type:invoice.* job:job_123 path:/hooks/acme after:-1h -term, a OR b, (…)  (Ctrl+F)",
            View::Jobs | View::Simulate => "job id prefix, or terms: flag:stuck flag:out_of_order state:needs_review  (Ctrl+F)",
        };
        let edit = egui::TextEdit::singleline(&mut app.state.filter)
            .id(filter_id())
            .hint_text(hint)
            .desired_width(ui.available_width() - 90.0);
        let response = ui.add(edit).labelled_by(label.id);
        if app.focus_filter {
            response.request_focus();
            app.focus_filter = false;
        }
        if !app.state.filter.is_empty() && ui.button("Clear").clicked() {
            app.state.filter.clear();
        }
    });
    if let Some(error) = &app.list.error {
        ui.colored_label(widgets::FAIL, error);
    }
    ui.add_space(2.0);
}

fn start_controls(app: &mut HookscopeApp, ui: &mut egui::Ui, verb: &str) {
    let label = ui.label("port");
    ui.add(egui::TextEdit::singleline(&mut app.port_text).desired_width(52.0))
        .labelled_by(label.id);
    if ui.button(verb).clicked() {
        match app.port_text.trim().parse::<u16>() {
            Ok(port) => app.send(Command::StartReceiver { port }),
            Err(_) => app.notice(
                format!("\"{}\" is not a port (0-65535)", app.port_text.trim()),
                true,
            ),
        }
    }
}

/// The relay beside the local URL, when `[relay]` names one: its state (live, catching up with
/// how many behind, reconnecting and why) and the public URL providers post to, with *Copy*.
fn relay_ui(app: &mut HookscopeApp, ui: &mut egui::Ui) {
    let view = app.engine.relay.get();
    let Some(view) = view else {
        return;
    };
    ui.horizontal(|ui| relay_line(app, ui, &view));
}

fn relay_line(app: &mut HookscopeApp, ui: &mut egui::Ui, view: &hookscope::engine::RelayView) {
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
            app.notice(format!("copied {public}"), false);
        }
    }
}

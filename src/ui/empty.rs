//! The empty state: what to give the sender, how to reach this laptop from the internet, and a
//! button that sends a signed test delivery so the first row appears within seconds.

use eframe::egui::{self, RichText};
use hookscope::app::test_delivery::TEST_ENDPOINT;
use hookscope::engine::{Command, ReceiverState};

use super::shared::Shared;
use super::widgets;

/// Draws the empty state.
pub fn empty_ui(ui: &mut egui::Ui, shared: &mut Shared) {
    ui.vertical_centered(|ui| {
        ui.add_space(ui.available_height() * 0.12);
        ui.heading(RichText::new("No deliveries yet").size(24.0));
        ui.add_space(12.0);
        match shared.receiver.clone() {
            ReceiverState::Running { addr } => {
                let url = format!("http://127.0.0.1:{}/", addr.port());
                ui.label("Point your webhook sender at this URL (any path works):");
                ui.add_space(4.0);
                ui.horizontal(|ui| {
                    let width = 420.0;
                    ui.add_space((ui.available_width() - width).max(0.0) / 2.0);
                    ui.label(RichText::new(&url).monospace().size(18.0).strong());
                    if ui.button("Copy").clicked() {
                        ui.ctx().copy_text(url.clone());
                        shared.notice(format!("copied {url}"), false);
                    }
                });
            }
            ReceiverState::Stopped => {
                ui.colored_label(widgets::SKIPPED, "The receiver is stopped: start it from the top bar.");
            }
            ReceiverState::Failed(reason) => {
                ui.colored_label(widgets::FAIL, reason);
                ui.label("Pick another port in the top bar (0 picks a free one) and press Retry.");
            }
        }
        ui.add_space(16.0);
        ui.label("From a provider on the internet, expose it through a tunnel, or through hookscope's relay, which keeps what arrives while this laptop sleeps:");
        ui.add_space(4.0);
        let port = match &shared.receiver {
            ReceiverState::Running { addr } => addr.port(),
            _ => 7878,
        };
        ui.horizontal(|ui| {
            ui.add_space((ui.available_width() - 640.0).max(0.0) / 2.0);
            tunnels_ui(ui, port);
        });
        ui.add_space(20.0);
        let running = matches!(shared.receiver, ReceiverState::Running { .. });
        let button = egui::Button::new(RichText::new("Send a test delivery").size(16.0)).min_size(egui::vec2(220.0, 34.0));
        if ui
            .add_enabled(running, button)
            .on_hover_text(format!(
                "Signs a sample job.completed event (Standard Webhooks, a generated secret on the {TEST_ENDPOINT} endpoint) and posts it here"
            ))
            .clicked()
        {
            shared.send(Command::SendTestDelivery);
        }
        // From a contract: its example of a chosen event type, to the endpoint that has it.
        let contracts: Vec<(String, Vec<String>, String)> = shared
            .saved
            .settings
            .endpoints
            .iter()
            .filter_map(|e| {
                e.contract
                    .as_ref()
                    .map(|c| (e.path.clone(), c.event_types(), c.name.clone()))
            })
            .collect();
        for (path, types, name) in contracts {
            ui.add_space(6.0);
            ui.horizontal(|ui| {
                ui.add_space((ui.available_width() - 560.0).max(0.0) / 2.0);
                let label = ui.label(format!("or from {name}:"));
                let chosen = super::endpoints::choice(&mut shared.examples, &path, &types);
                super::endpoints::event_type_picker(
                    ui,
                    ("empty_example", path.as_str()),
                    label.id,
                    chosen,
                    &types,
                );
                let event_type = chosen.clone();
                if ui
                    .add_enabled(running, egui::Button::new(format!("Send an example to {path}")))
                    .on_hover_text("The contract's example of this event type (or one made from its schema), signed with the endpoint's scheme and secret when it has them")
                    .clicked()
                {
                    shared.send(Command::SendExample {
                        endpoint: path.clone(),
                        event_type,
                    });
                }
            });
        }
        ui.add_space(6.0);
        ui.weak("Then add your provider's secret under Endpoints & secrets to verify its signatures.");
        ui.add_space(14.0);
        ui.label(format!(
            "Providers that verify an endpoint before they deliver get their challenge answered here: {}.",
            hookscope::domain::handshake::Provider::labels()
        ));
        ui.weak("Zoom and X answer with your secret, Meta checks your verify token: add them under Endpoints & secrets.");
    });
}

fn tunnels_ui(ui: &mut egui::Ui, port: u16) {
    egui::Grid::new("tunnels").num_columns(2).spacing([16.0, 6.0]).show(ui, |ui| {
        for (tool, command) in [
            ("ngrok", format!("ngrok http {port}")),
            ("cloudflared", format!("cloudflared tunnel --url http://localhost:{port}")),
            ("Stripe CLI", format!("stripe listen --all-snapshot --forward-to localhost:{port}/hooks/stripe")),
            ("smee", format!("smee --url https://smee.io/<channel> --target http://localhost:{port}/hooks/github")),
            ("hookscope relay", "hookscope relay serve   (on a public host; see docs/relay.md)".to_string()),
        ] {
            ui.label(tool);
            ui.monospace(command);
            ui.end_row();
        }
    });
}

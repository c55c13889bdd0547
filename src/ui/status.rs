//! The status line at the bottom: how many deliveries there are, the unrouted and the paused,
//! the notice (a confirmation that fades, an error that stays until dismissed), the time zone
//! switch, and the About window it opens.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use eframe::egui;
use hookscope::engine::Command;

use super::shared::{NOTICE_FADES_AFTER, Shared};
use super::{View, WINDOW_STATE_FILE, widgets};

/// The least time between two counts while deliveries keep arriving.
const COUNT_EVERY: Duration = Duration::from_millis(250);

/// How many deliveries the store holds, whatever the view: the status line's count.
#[derive(Debug, Default)]
pub struct StoredCount {
    /// The last answer (`None` before the first).
    pub total: Option<i64>,
    /// How many of them met none of their endpoint's forwarding rules.
    pub unrouted: i64,
    /// The store changed since it was counted.
    pub stale: bool,
    /// A count is waiting for its answer.
    in_flight: bool,
    /// When the last count was asked for.
    asked_at: Option<Instant>,
}

/// The status line and the About window.
pub struct StatusLine {
    pub stored: StoredCount,
    /// The newest id when the store was last counted.
    stored_latest: i64,
    /// Whether the About window is open.
    pub about_open: bool,
}

impl StatusLine {
    /// A status line that counts the store at once.
    pub fn new(latest: i64) -> Self {
        Self {
            stored: StoredCount {
                stale: true,
                ..StoredCount::default()
            },
            stored_latest: latest,
            about_open: false,
        }
    }

    /// The store's newest id moved: counted again, paused or not, since the line says what is
    /// stored.
    pub fn store_grew(&mut self, latest: i64) {
        if latest != self.stored_latest {
            self.stored_latest = latest;
            self.stored.stale = true;
        }
    }

    /// The engine's count.
    pub fn counted(&mut self, total: i64, unrouted: i64) {
        self.stored.in_flight = false;
        self.stored.total = Some(total);
        self.stored.unrouted = unrouted;
    }

    /// Counts the store again when it changed, at most one count at a time and one per
    /// [`COUNT_EVERY`], in every view.
    pub fn request_count(&mut self, ctx: &egui::Context, shared: &mut Shared) {
        if !self.stored.stale || self.stored.in_flight {
            return;
        }
        let since = self.stored.asked_at.map(|at| at.elapsed());
        if let Some(since) = since.filter(|s| *s < COUNT_EVERY) {
            ctx.request_repaint_after(COUNT_EVERY - since);
            return;
        }
        self.stored.stale = false;
        self.stored.in_flight = true;
        self.stored.asked_at = Some(Instant::now());
        shared.send(Command::CountStored);
    }

    /// What the status line counts: in the deliveries view the list (and, under a filter, of
    /// how many); in every other view what the store holds, which the list there does not
    /// follow.
    fn count_sentence(&self, shared: &Shared, listed: usize) -> String {
        let deliveries = |n: i64| {
            if n == 1 {
                "1 delivery".to_string()
            } else {
                format!("{n} deliveries")
            }
        };
        let listed = listed as i64;
        let filtered = !shared.filter.trim().is_empty();
        match (shared.view, self.stored.total) {
            (View::Deliveries, Some(stored)) if filtered => {
                format!("{listed} of {} match the filter", deliveries(stored))
            }
            (View::Deliveries, None) if filtered => {
                format!("{} match the filter", deliveries(listed))
            }
            (View::Deliveries, _) => deliveries(listed),
            (_, Some(stored)) => format!("{} stored", deliveries(stored)),
            (_, None) => format!("{} stored", deliveries(listed)),
        }
    }

    /// Draws the line; `listed` is how many rows the deliveries list holds under its filter.
    pub fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared, listed: usize) {
        ui.horizontal(|ui| {
            ui.label(self.count_sentence(shared, listed));
            if self.stored.unrouted > 0 {
                ui.separator();
                let n = self.stored.unrouted;
                let text = format!("{n} unrouted (no forwarding rule met)");
                ui.colored_label(widgets::WARN, text).on_hover_text(
                    "Deliveries whose endpoint has forwarding rules and that met none of their conditions",
                );
            }
            if let Some(paused_at) = shared.paused_at {
                let waiting = shared.engine.latest_id.load(Ordering::SeqCst) - paused_at;
                ui.separator();
                ui.colored_label(
                    widgets::WARN,
                    format!("live updates paused: {waiting} new since"),
                );
            }
            notice_ui(ui, shared);
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                if ui.small_button("About").clicked() {
                    self.about_open = true;
                }
                let local = shared.local_zone().name_at(hookscope::domain::clock::now_ms());
                ui.toggle_value(&mut shared.utc, "UTC").on_hover_text(format!(
                    "Show times in UTC instead of local time ({local}). Exports and JSON are always UTC."
                ));
                ui.weak(if shared.utc { "times in UTC".to_string() } else { format!("times in {local}") });
                ui.weak(format!("store: {}", shared.engine.data_dir.display()));
            });
        });
    }

    /// The About window, while it is open.
    pub fn about_window(&mut self, ctx: &egui::Context, shared: &Shared) {
        let mut open = self.about_open;
        let data_dir = &shared.engine.data_dir;
        egui::Window::new("About hookscope")
            .open(&mut open)
            .collapsible(false)
            .resizable(false)
            .show(ctx, |ui| {
                ui.heading(format!("hookscope {}", env!("CARGO_PKG_VERSION")));
                ui.label("A local inspector for webhook integrations.");
                ui.hyperlink_to("Documentation and source", env!("CARGO_PKG_REPOSITORY"));
                ui.add_space(6.0);
                egui::Grid::new("about_grid").num_columns(2).spacing([12.0, 4.0]).show(ui, |ui| {
                    ui.weak("data dir");
                    ui.monospace(data_dir.display().to_string());
                    ui.end_row();
                    ui.weak("store");
                    ui.monospace(data_dir.join(hookscope::app::paths::STORE_FILE).display().to_string());
                    ui.end_row();
                    ui.weak("config");
                    ui.monospace(shared.engine.config_path.display().to_string());
                    ui.end_row();
                    ui.weak("window state");
                    ui.monospace(data_dir.join(WINDOW_STATE_FILE).display().to_string());
                    ui.end_row();
                });
                ui.add_space(6.0);
                ui.weak("The same engine runs headless: hookscope listen, verify, list, jobs, resend, probe, export, import.");
            });
        self.about_open = open;
    }
}

/// The notice: an error with its *Dismiss*, or a confirmation fading over its last second.
fn notice_ui(ui: &mut egui::Ui, shared: &mut Shared) {
    let mut dismissed = false;
    if let Some(notice) = &shared.notice {
        ui.separator();
        if notice.error {
            ui.colored_label(widgets::FAIL, &notice.text);
            dismissed = ui
                .small_button("Dismiss")
                .on_hover_text("Errors stay until dismissed (Esc too)")
                .clicked();
        } else {
            let age = notice.shown_at.elapsed().as_secs_f32();
            let fade = (NOTICE_FADES_AFTER.as_secs_f32() - age).clamp(0.0, 1.0);
            ui.colored_label(ui.visuals().text_color().gamma_multiply(fade), &notice.text);
        }
    }
    if dismissed {
        shared.notice = None;
    }
}

/// Confirmations fade after a few seconds; errors stay until dismissed.
pub fn fade_notice(ctx: &egui::Context, shared: &mut Shared) {
    if let Some(notice) = shared.notice.as_ref().filter(|n| !n.error) {
        let left = NOTICE_FADES_AFTER.saturating_sub(notice.shown_at.elapsed());
        if left.is_zero() {
            shared.notice = None;
        } else {
            ctx.request_repaint_after(left.min(Duration::from_millis(100)));
        }
    }
}

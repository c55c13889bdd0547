//! The deliveries list: a virtual table over the store. Only the visible rows (plus a margin)
//! are held; the rest are fetched by position when scrolled to.

use eframe::egui::{self, RichText};
use egui_extras::{Column, TableBuilder};
use hookscope::domain::fmt::human_bytes;
use hookscope::domain::fmt::{full_time, short_time};
use hookscope::store::ListRow;

use super::{HookscopeApp, widgets};

const ROW_HEIGHT: f32 = 22.0;

/// Draws the list.
pub fn list_ui(app: &mut HookscopeApp, ui: &mut egui::Ui) {
    let now = hookscope::domain::clock::now_ms();
    let total = app.list.total;
    let mut scroll_to = app.list.scroll_to.take();
    if app.scroll_to_selected {
        app.scroll_to_selected = false;
        match app.selected.map(|id| (id, app.list.position_of(id))) {
            Some((_, Some(position))) => scroll_to = Some(position),
            // Not among the rows held: ask the store where it is.
            Some((id, None)) => app.send(hookscope::engine::Command::Locate {
                id,
                filter: app.state.filter.clone(),
            }),
            None => {}
        }
    }
    let mut first_visible = usize::MAX;
    let mut last_visible = 0usize;
    let mut clicked = None;
    // Labels in rows must not take the click: the whole row selects.
    ui.style_mut().interaction.selectable_labels = false;
    // Rows take clicks but not keyboard focus: the list has its own keys (arrows, Home/End,
    // PageUp/PageDown, Enter), and egui keeps every focusable widget's id until arrow-key focus
    // moves; with the list following new rows, each delivery's cells would stay there forever
    // (26 MiB after 90,000 rows, found with heaptrack during the soak).
    let mut table = TableBuilder::new(ui)
        .striped(true)
        .sense(egui::Sense::CLICK)
        .stick_to_bottom(!app.paused && scroll_to.is_none())
        // Jumps (keyboard, links) land at once, so following the newest rows cannot undo them.
        .animate_scrolling(false)
        .cell_layout(egui::Layout::left_to_right(egui::Align::Center))
        .column(Column::exact(124.0))
        .column(Column::exact(56.0))
        .column(
            Column::initial(190.0)
                .at_least(80.0)
                .clip(true)
                .resizable(true),
        )
        .column(
            Column::initial(150.0)
                .at_least(60.0)
                .clip(true)
                .resizable(true),
        )
        .column(
            Column::initial(150.0)
                .at_least(60.0)
                .clip(true)
                .resizable(true),
        )
        .column(
            Column::initial(120.0)
                .at_least(50.0)
                .clip(true)
                .resizable(true),
        )
        .column(Column::exact(300.0))
        .column(Column::exact(70.0))
        .column(Column::remainder().at_least(40.0));
    if let Some(position) = scroll_to {
        table = table.scroll_to_row(position, Some(egui::Align::Center));
    }
    table
        .header(20.0, |mut header| {
            for title in [
                "Time",
                "Method",
                "Path",
                "Event type",
                "Event id",
                "Job",
                "Checks",
                "Size",
                "Status",
            ] {
                header.col(|ui| {
                    ui.strong(title);
                });
            }
        })
        .body(|body| {
            body.rows(ROW_HEIGHT, total, |mut row| {
                let position = row.index();
                first_visible = first_visible.min(position);
                last_visible = last_visible.max(position);
                let Some(item) = app.list.row_at(position).cloned() else {
                    row.col(|ui| {
                        ui.weak("…");
                    });
                    return;
                };
                row.set_selected(app.selected == Some(item.id) || app.multi.contains(&item.id));
                row.col(|ui| {
                    ui.monospace(short_time(item.received_at_ms, now, app.zone()))
                        .on_hover_text(full_time(item.received_at_ms, app.zone()));
                });
                row.col(|ui| {
                    ui.monospace(&item.method);
                });
                row.col(|ui| {
                    ui.label(&item.path);
                });
                row.col(|ui| match &item.handshake {
                    // A handshake has no event: say whose challenge it was.
                    Some(h) => {
                        ui.weak(format!("{} {}", h.provider.label(), h.provider.what()));
                    }
                    None => {
                        ui.label(item.event_type.as_deref().unwrap_or(""));
                    }
                });
                row.col(|ui| {
                    ui.monospace(item.event_id.as_deref().unwrap_or(""));
                });
                row.col(|ui| {
                    ui.monospace(item.job_id.as_deref().unwrap_or(""));
                });
                row.col(|ui| {
                    match &item.handshake {
                        Some(handshake) => widgets::handshake_badges(ui, handshake, &item.checks),
                        None => widgets::check_badges(ui, &item.checks),
                    }
                    if let Some(rules) = item.unrouted {
                        widgets::badge(
                            ui,
                            "unrouted",
                            widgets::WARN,
                            &hookscope::app::report::unrouted_sentence(rules),
                        );
                    }
                });
                row.col(|ui| {
                    ui.label(human_bytes(item.body_size));
                });
                row.col(|ui| {
                    let status = item.response_status;
                    let text = RichText::new(status.to_string()).monospace();
                    if (200..300).contains(&status) {
                        ui.label(text);
                    } else {
                        ui.colored_label(widgets::WARN, text);
                    }
                });
                let response = row.response();
                if response.clicked() {
                    clicked = Some(item.id);
                }
                response.context_menu(|ui| row_menu_ui(app, ui, &item));
            });
        });
    if first_visible <= last_visible {
        app.list.visible = first_visible..last_visible + 1;
    } else {
        app.list.visible = 0..0;
    }
    if let Some(id) = clicked {
        let modifiers = ui.input(|i| i.modifiers);
        if modifiers.command {
            // Ctrl+click adds or removes one delivery from the selection to export.
            if let Some(current) = app.selected.filter(|_| app.multi.is_empty()) {
                app.multi.insert(current);
            }
            if !app.multi.remove(&id) {
                app.multi.insert(id);
            }
        } else if modifiers.shift {
            // Shift+click extends from the selected delivery over the rows held.
            if let (Some(from), Some(to)) = (
                app.selected.and_then(|s| app.list.position_of(s)),
                app.list.position_of(id),
            ) {
                for position in from.min(to)..=from.max(to) {
                    if let Some(row) = app.list.row_at(position) {
                        app.multi.insert(row.id);
                    }
                }
            }
        } else {
            app.multi.clear();
        }
        app.select(id);
    }
}

/// What a row's context menu copies once the delivery is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copy {
    /// The delivery JSON.
    Json,
    /// A curl command.
    Curl,
}

/// The right-click menu of a row: copy, resend, export, delete, and filters from its values.
fn row_menu_ui(app: &mut HookscopeApp, ui: &mut egui::Ui, item: &ListRow) {
    let id = item.id;
    for (label, what) in [("Copy as JSON", Copy::Json), ("Copy as curl", Copy::Curl)] {
        if ui.button(label).clicked() {
            app.pending_copy = Some((id, what));
            app.select(id);
            app.run_pending_copy();
            ui.close();
        }
    }
    if ui.button("Resend…").clicked() {
        app.select(id);
        app.state.detail_tab = super::detail::Tab::Resend;
        ui.close();
    }
    if ui.button("Export…").clicked() {
        app.select(id);
        app.export.open = true;
        ui.close();
    }
    ui.separator();
    if let Some(job) = &item.job_id
        && ui.button(format!("Filter by job {job}")).clicked()
    {
        app.state.filter = format!("job:{job}");
        ui.close();
    }
    if let Some(event) = &item.event_id
        && ui.button(format!("Filter by event {event}")).clicked()
    {
        app.state.filter = format!("event:{event}");
        ui.close();
    }
    ui.separator();
    if ui.button("Delete…").clicked() {
        app.confirm_delete = Some(vec![id]);
        ui.close();
    }
}

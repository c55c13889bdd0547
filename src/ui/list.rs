//! The deliveries list: a virtual table over the store. Only the visible rows (plus a margin)
//! are held; the rest are fetched by position when scrolled to.

use eframe::egui::{self, RichText};
use egui_extras::{Column, TableBuilder};
use hookscope::domain::fmt::human_bytes;
use hookscope::domain::fmt::{Zone, full_time, short_time};
use hookscope::store::ListRow;

use super::shared::{Msg, Shared, Window};
use super::{View, widgets};
use hookscope::engine::{Command, Event};

const ROW_HEIGHT: f32 = 22.0;

/// Rows fetched beyond each side of the visible ones.
const PREFETCH_PAD: usize = 300;

/// The rows the list holds, around what is visible.
#[derive(Debug, Default)]
pub struct ListCache {
    /// The generation of the newest query sent.
    pub generation: u64,
    /// Whether a query is waiting for its answer.
    pub in_flight: bool,
    /// The filter the cached rows were fetched with.
    pub filter: String,
    /// Rows matching the filter, in all.
    pub total: usize,
    /// The position of `rows[0]`.
    pub offset: usize,
    pub rows: Vec<ListRow>,
    /// The store changed since the rows were fetched.
    pub stale: bool,
    /// Whether any answer has arrived yet.
    pub loaded: bool,
    /// The filter's error, if it has one.
    pub error: Option<String>,
    /// The visible positions in the last frame.
    pub visible: std::ops::Range<usize>,
    /// A position to bring into view on the next frame.
    pub scroll_to: Option<usize>,
    /// The list follows its newest rows and the total just changed: this frame's visible rows
    /// are a scroll position about to move to the end.
    pub settling: bool,
}

impl ListCache {
    pub fn row_at(&self, position: usize) -> Option<&ListRow> {
        position
            .checked_sub(self.offset)
            .and_then(|i| self.rows.get(i))
    }

    pub fn position_of(&self, id: i64) -> Option<usize> {
        self.rows
            .iter()
            .position(|r| r.id == id)
            .map(|i| i + self.offset)
    }

    pub fn covers(&self, range: &std::ops::Range<usize>) -> bool {
        let end = range.end.min(self.total);
        range.start >= self.offset && end <= self.offset + self.rows.len()
    }

    /// Whether the visible rows come near an edge of the cached ones (and there is more beyond
    /// it), so the next rows are fetched before they scroll into view.
    fn near_edge(&self, range: &std::ops::Range<usize>) -> bool {
        let margin = PREFETCH_PAD / 2;
        let cached_end = self.offset + self.rows.len();
        (range.start < self.offset + margin && self.offset > 0)
            || (range.end + margin > cached_end && cached_end < self.total)
    }
}

/// The deliveries list: the rows it holds, and what it waits for.
#[derive(Default)]
pub struct List {
    pub cache: ListCache,
    /// The newest delivery id when the list was last marked out of date.
    seen_latest: i64,
    /// A row's context-menu copy waiting for its delivery to load.
    pending_copy: Option<(i64, Copy)>,
    /// Deliveries waiting for the user to confirm their deletion.
    pub confirm_delete: Option<Vec<i64>>,
}

/// The keys the list answers to, read once per frame.
struct Keys {
    up: bool,
    down: bool,
    home: bool,
    end: bool,
    page_up: bool,
    page_down: bool,
    enter: bool,
    delete: bool,
    copy: bool,
}

impl List {
    /// A list that has fetched nothing yet, with the store's newest id at start.
    pub fn new(latest: i64) -> Self {
        Self {
            seen_latest: latest,
            ..Self::default()
        }
    }

    /// How many rows match the filter, as last answered.
    pub fn total(&self) -> usize {
        self.cache.total
    }

    /// Whether the list has history to show (or is about to know).
    pub fn has_history(&self, shared: &Shared) -> bool {
        self.cache.total > 0 || !shared.filter.is_empty() || !self.cache.loaded
    }

    /// The store's newest id moved: fetch again, unless the list is paused.
    pub fn store_grew(&mut self, latest: i64, shared: &Shared) -> bool {
        if latest != self.seen_latest && shared.paused_at.is_none() {
            self.seen_latest = latest;
            self.cache.stale = true;
            return true;
        }
        false
    }

    /// The engine's answers about the list: a page of rows, a failed query, a row located.
    pub fn on_event(&mut self, event: Event, shared: &mut Shared) {
        match event {
            Event::Page {
                generation,
                offset,
                total,
                rows,
            } if generation == self.cache.generation => {
                let list = &mut self.cache;
                // A list showing its newest rows keeps showing them when the total changes
                // (a new filter, new deliveries), but the table scrolls there only at the
                // end of the next frame: until then its visible rows are the old scroll
                // position in the new list, and must not be fetched.
                list.settling = shared.paused_at.is_none()
                    && list.loaded
                    && total != list.total
                    && list.visible.end >= list.total;
                list.in_flight = false;
                list.offset = offset;
                list.total = total;
                list.rows = rows;
                list.loaded = true;
                list.error = None;
            }
            Event::QueryFailed {
                generation,
                message,
            } if generation == self.cache.generation => {
                self.cache.in_flight = false;
                self.cache.error = Some(message);
            }
            Event::Located { id, position } if Some(id) == shared.selection.id => match position {
                Some(position) => self.cache.scroll_to = Some(position),
                None => shared.notice(
                    format!("delivery #{id} is not in the list under this filter"),
                    false,
                ),
            },
            _ => {}
        }
    }

    /// Asks the engine for the rows the list needs, at most one query at a time.
    pub fn request_rows(&mut self, shared: &mut Shared) {
        const PAD: usize = PREFETCH_PAD;
        let list = &mut self.cache;
        let filter_changed = list.filter != shared.filter;
        if list.in_flight && !filter_changed {
            return;
        }
        if std::mem::take(&mut list.settling) && !filter_changed && !list.stale {
            return;
        }
        let visible = list.visible.clone();
        let need = !list.loaded
            || filter_changed
            || list.stale
            || !list.covers(&visible)
            || list.near_edge(&visible);
        if !need {
            return;
        }
        // Before the first answer, after a new filter, or while following the newest rows: ask
        // for the last page. Otherwise refetch around what is visible (new rows only append).
        let following = visible.end >= list.total;
        let offset = if !list.loaded || filter_changed || following {
            usize::MAX
        } else {
            visible.start.saturating_sub(PAD)
        };
        list.generation += 1;
        list.in_flight = true;
        list.stale = false;
        list.filter = shared.filter.clone();
        let command = Command::Query {
            generation: list.generation,
            filter: shared.filter.clone(),
            offset,
            limit: visible.len().max(60) + 2 * PAD,
        };
        shared.send(command);
    }

    /// The list's keys (arrows, Home/End, PageUp/PageDown, Enter, Delete, Ctrl+C), when nothing
    /// is being typed.
    pub fn keyboard(&mut self, ctx: &egui::Context, shared: &mut Shared) {
        let keys = ctx.input(|i| Keys {
            up: i.key_pressed(egui::Key::ArrowUp),
            down: i.key_pressed(egui::Key::ArrowDown),
            home: i.key_pressed(egui::Key::Home),
            end: i.key_pressed(egui::Key::End),
            page_up: i.key_pressed(egui::Key::PageUp),
            page_down: i.key_pressed(egui::Key::PageDown),
            enter: i.key_pressed(egui::Key::Enter),
            delete: i.key_pressed(egui::Key::Delete),
            copy: i.events.iter().any(|e| matches!(e, egui::Event::Copy)),
        });
        let typing = ctx.memory(|m| m.focused().is_some());
        if typing || shared.view != View::Deliveries {
            return;
        }
        if keys.copy
            && let Some(stored) = &shared.selection.loaded
        {
            let attempts = shared.selection.attempts_of(stored.id);
            let json = hookscope::app::report::delivery_json(stored, attempts);
            ctx.copy_text(json.to_string());
            shared.notice(format!("copied delivery #{} as JSON", stored.id), false);
        }
        if keys.delete {
            self.ask_delete(shared);
        }
        if keys.enter
            && let Some(id) = shared.selection.id
            && shared.selection.loaded.is_none()
        {
            shared.send(Command::Load { id });
        }
        let Some(position) = self.key_target(&keys, shared) else {
            return;
        };
        match self.cache.row_at(position).map(|r| r.id) {
            Some(id) => shared.select(id),
            // Not loaded yet (a jump to the other end): scroll there; the rows follow.
            None => self.cache.scroll_to = Some(position),
        }
        shared.selection.scroll_to = true;
    }

    /// The position a navigation key moves the selection to.
    fn key_target(&self, keys: &Keys, shared: &Shared) -> Option<usize> {
        let total = self.cache.total;
        let page = self.cache.visible.len().max(1);
        let current = shared
            .selection
            .id
            .and_then(|id| self.cache.position_of(id));
        let last = total.checked_sub(1);
        if keys.home {
            (total > 0).then_some(0)
        } else if keys.end {
            last
        } else if keys.page_up {
            current.map(|p| p.saturating_sub(page)).or(last)
        } else if keys.page_down {
            current
                .map(|p| (p + page).min(total.saturating_sub(1)))
                .or(last)
        } else if keys.up {
            current.map_or(last, |p| p.checked_sub(1))
        } else if keys.down {
            current.map_or(last, |p| Some(p + 1).filter(|p| *p < total))
        } else {
            None
        }
    }

    /// Copies the delivery a context menu asked for, once it is loaded.
    pub fn run_pending_copy(&mut self, shared: &mut Shared) {
        let Some((id, what)) = self.pending_copy else {
            return;
        };
        let Some(stored) = shared.selection.loaded.clone().filter(|d| d.id == id) else {
            return;
        };
        self.pending_copy = None;
        match what {
            Copy::Json => {
                let attempts = shared.selection.attempts_of(stored.id);
                let json = hookscope::app::report::delivery_json(&stored, attempts);
                shared.copy(json.to_string(), format!("copied delivery #{id} as JSON"));
            }
            Copy::Curl => shared.send(Command::CopyAsCurl(stored)),
        }
    }

    /// Copies delivery `id` once it is loaded (at once when it is).
    pub fn copy_when_loaded(&mut self, id: i64, what: Copy, shared: &mut Shared) {
        self.pending_copy = Some((id, what));
        shared.select(id);
        self.run_pending_copy(shared);
    }

    /// Asks to delete the selected deliveries (the multi-selection, else the selected one).
    pub fn ask_delete(&mut self, shared: &Shared) {
        let ids = shared.selection.ids();
        if !ids.is_empty() {
            self.confirm_delete = Some(ids);
        }
    }

    /// The confirmation of a deletion, while one is asked.
    pub fn confirm_delete_window(&mut self, ctx: &egui::Context, shared: &mut Shared) {
        let Some(ids) = self.confirm_delete.clone() else {
            return;
        };
        let what = if ids.len() == 1 {
            format!("delivery #{}", ids[0])
        } else {
            format!("{} deliveries", ids.len())
        };
        let mut decided = None;
        egui::Window::new("Delete from the store")
            .collapsible(false)
            .resizable(false)
            .anchor(egui::Align2::CENTER_CENTER, egui::vec2(0.0, 0.0))
            .show(ctx, |ui| {
                ui.label(format!(
                    "Delete {what} from the store? This cannot be undone."
                ));
                ui.horizontal(|ui| {
                    if ui
                        .button(egui::RichText::new("Yes, delete").color(widgets::FAIL))
                        .clicked()
                        || ui.input(|i| i.key_pressed(egui::Key::Enter))
                    {
                        decided = Some(true);
                    }
                    if ui.button("Cancel").clicked() {
                        decided = Some(false);
                    }
                });
            });
        match decided {
            Some(true) => {
                self.confirm_delete = None;
                shared.send(Command::Delete(ids));
                shared.selection.clear();
            }
            Some(false) => self.confirm_delete = None,
            None => {}
        }
    }

    /// The row to bring into view this frame: one asked for, or the selected one's (whose
    /// position the store is asked for when the list does not hold it).
    fn scroll_target(&mut self, shared: &mut Shared) -> Option<usize> {
        let mut scroll_to = self.cache.scroll_to.take();
        if std::mem::take(&mut shared.selection.scroll_to)
            && let Some(id) = shared.selection.id
        {
            match self.cache.position_of(id) {
                Some(position) => scroll_to = Some(position),
                None => shared.send(Command::Locate {
                    id,
                    filter: shared.filter.clone(),
                }),
            }
        }
        scroll_to
    }

    /// Draws the list.
    pub fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let now = hookscope::domain::clock::now_ms();
        let total = self.cache.total;
        let scroll_to = self.scroll_target(shared);
        // The first and one past the last row drawn (none yet).
        let (mut first, mut end) = (usize::MAX, 0usize);
        let mut clicked = None;
        // Labels in rows must not take the click: the whole row selects.
        ui.style_mut().interaction.selectable_labels = false;
        let mut table = table(ui, shared.paused_at.is_none() && scroll_to.is_none());
        if let Some(position) = scroll_to {
            table = table.scroll_to_row(position, Some(egui::Align::Center));
        }
        table
            .header(20.0, |mut header| {
                for title in COLUMNS {
                    header.col(|ui| {
                        ui.strong(title);
                    });
                }
            })
            .body(|body| {
                body.rows(ROW_HEIGHT, total, |mut row| {
                    let position = row.index();
                    first = first.min(position);
                    end = end.max(position + 1);
                    let Some(item) = self.cache.row_at(position).cloned() else {
                        row.col(|ui| {
                            ui.weak("…");
                        });
                        return;
                    };
                    let selection = &shared.selection;
                    row.set_selected(
                        selection.id == Some(item.id) || selection.multi.contains(&item.id),
                    );
                    row_cells(&mut row, &item, now, shared.zone());
                    let response = row.response();
                    if response.clicked() {
                        clicked = Some(item.id);
                    }
                    response.context_menu(|ui| self.row_menu_ui(ui, shared, &item));
                });
            });
        self.cache.visible = if first < end { first..end } else { 0..0 };
        if let Some(id) = clicked {
            let modifiers = ui.input(|i| i.modifiers);
            self.clicked(id, modifiers, shared);
        }
    }

    /// A click on a row: Ctrl adds or removes it from the rows picked, Shift extends them from
    /// the selected row, a plain click picks it alone; each selects it.
    fn clicked(&mut self, id: i64, modifiers: egui::Modifiers, shared: &mut Shared) {
        let selection = &mut shared.selection;
        if modifiers.command {
            if let Some(current) = selection.id.filter(|_| selection.multi.is_empty()) {
                selection.multi.insert(current);
            }
            if !selection.multi.remove(&id) {
                selection.multi.insert(id);
            }
        } else if modifiers.shift {
            // Over the rows held.
            if let (Some(from), Some(to)) = (
                selection.id.and_then(|s| self.cache.position_of(s)),
                self.cache.position_of(id),
            ) {
                for position in from.min(to)..=from.max(to) {
                    if let Some(row) = self.cache.row_at(position) {
                        selection.multi.insert(row.id);
                    }
                }
            }
        } else {
            selection.multi.clear();
        }
        shared.select(id);
    }

    /// The right-click menu of a row: copy, resend, export, delete, and filters from its values.
    fn row_menu_ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared, item: &ListRow) {
        let id = item.id;
        for (label, what) in [("Copy as JSON", Copy::Json), ("Copy as curl", Copy::Curl)] {
            if ui.button(label).clicked() {
                self.copy_when_loaded(id, what, shared);
                ui.close();
            }
        }
        if ui.button("Resend…").clicked() {
            shared.select(id);
            shared.tell(Msg::DetailTab(super::detail::Tab::Resend));
            ui.close();
        }
        if ui.button("Export…").clicked() {
            shared.select(id);
            shared.tell(Msg::Open(Window::Export));
            ui.close();
        }
        ui.separator();
        if let Some(job) = &item.job_id
            && ui.button(format!("Filter by job {job}")).clicked()
        {
            shared.filter = format!("job:{job}");
            ui.close();
        }
        if let Some(event) = &item.event_id
            && ui.button(format!("Filter by event {event}")).clicked()
        {
            shared.filter = format!("event:{event}");
            ui.close();
        }
        ui.separator();
        if ui.button("Delete…").clicked() {
            self.confirm_delete = Some(vec![id]);
            ui.close();
        }
    }
}

/// The list's column titles.
const COLUMNS: [&str; 9] = [
    "Time",
    "Method",
    "Path",
    "Event type",
    "Event id",
    "Job",
    "Checks",
    "Size",
    "Status",
];

/// The table's columns; `follow` keeps the newest rows in view.
fn table(ui: &mut egui::Ui, follow: bool) -> TableBuilder<'_> {
    let text = |width: f32, least: f32| {
        Column::initial(width)
            .at_least(least)
            .clip(true)
            .resizable(true)
    };
    // Rows take clicks but not keyboard focus: the list has its own keys (arrows, Home/End,
    // PageUp/PageDown, Enter), and egui keeps every focusable widget's id until arrow-key focus
    // moves; with the list following new rows, each delivery's cells would stay there forever
    // (26 MiB after 90,000 rows, found with heaptrack during the soak).
    TableBuilder::new(ui)
        .striped(true)
        .sense(egui::Sense::CLICK)
        .stick_to_bottom(follow)
        // Jumps (keyboard, links) land at once, so following the newest rows cannot undo them.
        .animate_scrolling(false)
        .cell_layout(egui::Layout::left_to_right(egui::Align::Center))
        .column(Column::exact(124.0))
        .column(Column::exact(56.0))
        .column(text(190.0, 80.0))
        .column(text(150.0, 60.0))
        .column(text(150.0, 60.0))
        .column(text(120.0, 50.0))
        .column(Column::exact(300.0))
        .column(Column::exact(70.0))
        .column(Column::remainder().at_least(40.0))
}

/// One delivery's cells.
fn row_cells(row: &mut egui_extras::TableRow<'_, '_>, item: &ListRow, now: i64, zone: &Zone) {
    row.col(|ui| {
        ui.monospace(short_time(item.received_at_ms, now, zone))
            .on_hover_text(full_time(item.received_at_ms, zone));
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
}

/// What a row's context menu copies once the delivery is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copy {
    /// The delivery JSON.
    Json,
    /// A curl command.
    Curl,
}

//! What the window's panels share: the engine, the selection, the time zone, the view and its
//! filter, the config as saved, and the status line's notice; and the messages a panel leaves
//! for another (open a window, show a job), which the app delivers once the panels that
//! leave them are drawn and before the windows are.
//!
//! A panel owns its own state and changes another panel only through [`Shared`] or a [`Msg`].

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use eframe::egui;
use hookscope::config::{ConfigFile, Settings};
use hookscope::domain::attempt::Attempt;
use hookscope::domain::fmt::Zone;
use hookscope::engine::{Command, EngineHandle, ReceiverState};
use hookscope::store::StoredDelivery;

use super::View;

/// How long a confirmation stays in the status line (errors stay until dismissed).
pub const NOTICE_FADES_AFTER: Duration = Duration::from_secs(6);

/// A message in the status line.
pub struct Notice {
    pub text: String,
    pub error: bool,
    pub shown_at: Instant,
}

/// The delivery chosen, the rows picked with it, and what is loaded of it.
#[derive(Default)]
pub struct Selection {
    /// The delivery the detail pane shows.
    pub id: Option<i64>,
    /// Rows Ctrl- or Shift-clicked, for export, replay and comparison.
    pub multi: BTreeSet<i64>,
    /// Bring the selected row into view on the next frame.
    pub scroll_to: bool,
    /// The selected delivery, once loaded.
    pub loaded: Option<Box<StoredDelivery>>,
    /// The attempts made from the last few deliveries looked at.
    attempts: Vec<(i64, Vec<Attempt>)>,
}

impl Selection {
    /// The attempts made from delivery `id`, as last loaded (none when not loaded).
    pub fn attempts_of(&self, id: i64) -> &[Attempt] {
        self.known_attempts(id).unwrap_or(&[])
    }

    /// The attempts of delivery `id`, or `None` when they were never loaded.
    pub fn known_attempts(&self, id: i64) -> Option<&[Attempt]> {
        self.attempts
            .iter()
            .find(|(d, _)| *d == id)
            .map(|(_, a)| a.as_slice())
    }

    /// Every attempt held, of whichever delivery (what the window tests read).
    #[cfg(test)]
    pub fn all_attempts(&self) -> impl Iterator<Item = &Attempt> {
        self.attempts.iter().flat_map(|(_, a)| a.iter())
    }

    /// Keeps the attempts of a delivery, and those of the last 16 looked at.
    pub fn attempts_loaded(&mut self, id: i64, attempts: Vec<Attempt>) {
        self.attempts.retain(|(d, _)| *d != id);
        self.attempts.push((id, attempts));
        if self.attempts.len() > 16 {
            self.attempts.remove(0);
        }
    }

    /// The loaded delivery, when it is the one selected.
    pub fn delivery(&self) -> Option<&StoredDelivery> {
        self.loaded.as_deref().filter(|d| Some(d.id) == self.id)
    }

    /// The rows picked: the multi-selection, else the selected one.
    pub fn ids(&self) -> Vec<i64> {
        if self.multi.is_empty() {
            self.id.into_iter().collect()
        } else {
            self.multi.iter().copied().collect()
        }
    }

    /// Forgets the selection (after a deletion, or Esc).
    pub fn clear(&mut self) {
        self.id = None;
        self.loaded = None;
        self.multi.clear();
    }
}

/// The config as last saved, as the engine resolved it (endpoints with their schemes).
pub struct Saved {
    pub config: ConfigFile,
    pub settings: Arc<Settings>,
}

/// A window a panel asks to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    Export,
    Probe,
    Endpoints,
}

/// What one panel asks of another; the app delivers each before the windows are drawn, so what
/// it opens shows in the same frame.
#[derive(Debug)]
pub enum Msg {
    /// Open a window.
    Open(Window),
    /// Ask to delete these deliveries (a confirmation first).
    ConfirmDelete(Vec<i64>),
    /// Show this job's timeline in the jobs view.
    ShowJob(String),
    /// Open the detail pane on this tab.
    DetailTab(super::detail::Tab),
    /// Open the replay window on these rows, this job, or the filter.
    Replay(super::replay::Choice),
    /// The jobs view is out of date.
    JobsStale,
    /// Open a file dialog to import a HAR.
    ImportHar,
}

/// What the panels share.
pub struct Shared {
    pub engine: EngineHandle,
    /// egui's context, for work that happens outside a frame's drawing (a copy after a load).
    pub ctx: egui::Context,
    local_zone: Zone,
    utc_zone: Zone,
    /// Times in UTC rather than local time.
    pub utc: bool,
    /// Deliveries, jobs or the simulator.
    pub view: View,
    /// The filter text of the deliveries or jobs view.
    pub filter: String,
    pub selection: Selection,
    /// The receiver's state, as the engine last said.
    pub receiver: ReceiverState,
    /// The deliveries list is frozen since this delivery id (`None`: live).
    pub paused_at: Option<i64>,
    pub saved: Saved,
    /// The event type chosen for *Send an example*, by endpoint path.
    pub examples: std::collections::HashMap<String, String>,
    pub notice: Option<Notice>,
    messages: Vec<Msg>,
}

impl Shared {
    /// What panels share, over a running engine.
    pub fn new(
        ctx: &egui::Context,
        engine: EngineHandle,
        view: View,
        filter: String,
        utc: bool,
    ) -> Self {
        let saved = Saved {
            config: engine.config.clone(),
            settings: Arc::clone(&engine.settings),
        };
        Self {
            engine,
            ctx: ctx.clone(),
            local_zone: hookscope::domain::clock::local_zone(),
            utc_zone: Zone::utc(),
            utc,
            view,
            filter,
            selection: Selection::default(),
            receiver: ReceiverState::Stopped,
            paused_at: None,
            saved,
            examples: Default::default(),
            notice: None,
            messages: Vec::new(),
        }
    }

    /// The zone times are shown in: UTC when the switch is on, else local time.
    pub fn zone(&self) -> &Zone {
        if self.utc {
            &self.utc_zone
        } else {
            &self.local_zone
        }
    }

    /// The local time zone (read once at start, `TZ` honoured).
    pub fn local_zone(&self) -> &Zone {
        &self.local_zone
    }

    /// Says something in the status line; an error stays until dismissed.
    pub fn notice(&mut self, text: impl Into<String>, error: bool) {
        self.notice = Some(Notice {
            text: text.into(),
            error,
            shown_at: Instant::now(),
        });
    }

    /// Sends a command to the engine; a full queue is said in the status line.
    pub fn send(&mut self, command: Command) {
        if !self.engine.send(command) {
            self.notice("hookscope is busy; try again in a moment", true);
        }
    }

    /// Selects a delivery and loads it for the detail pane.
    pub fn select(&mut self, id: i64) {
        if self.selection.id != Some(id) {
            self.selection.id = Some(id);
            self.send(Command::Load { id });
        }
    }

    /// Selects a delivery and brings its row into view.
    pub fn select_in_view(&mut self, id: i64) {
        self.select(id);
        self.selection.scroll_to = true;
    }

    /// Shows a delivery in the list, selected (from a summary or a timeline).
    pub fn show_delivery(&mut self, id: i64) {
        self.view = View::Deliveries;
        self.select_in_view(id);
    }

    /// Leaves a message for another panel.
    pub fn tell(&mut self, msg: Msg) {
        self.messages.push(msg);
    }

    /// The messages left since the last call.
    pub fn take_messages(&mut self) -> Vec<Msg> {
        std::mem::take(&mut self.messages)
    }

    /// Copies text to the system clipboard and says so.
    pub fn copy(&mut self, text: String, said: impl Into<String>) {
        self.ctx.copy_text(text);
        self.notice(said, false);
    }
}

//! The endpoints and secrets panel: path prefixes, their scheme, secrets (masked unless
//! revealed), tolerance and how hookscope answers. Saving writes the config file (mode 0600)
//! and applies it to the running receiver at once.

use std::collections::HashSet;

use eframe::egui::{self, RichText};
use hookscope::config::{ConfigFile, EndpointConfig, Settings};
use hookscope::domain::scheme::generate_secret;
use hookscope::domain::scheme::{Secret, presets};
use hookscope::engine::Command;

use super::shared::Shared;
use super::widgets;

/// Per rule: whether the delivery meets its condition, or why that cannot be decided.
type RuleAnswers = Vec<Result<bool, String>>;

/// The working copy the panel edits, apart from the saved config (which is in [`Shared`]).
pub struct Editor {
    /// Whether the window is open.
    pub open: bool,
    draft: ConfigFile,
    revealed: HashSet<(usize, usize)>,
    /// The answer-headers text of each endpoint, as typed.
    header_text: std::collections::HashMap<usize, String>,
    error: Option<String>,
    /// The last *Test* of an endpoint's rules: (endpoint index, delivery, one answer a rule).
    tested: Option<(usize, i64, RuleAnswers)>,
    /// The endpoint whose rules were sent for a test, awaiting the answer.
    testing: Option<usize>,
    /// This laptop's relay key (its public half), once one is made.
    pub relay_key: Option<String>,
    /// Whether the relay token is shown.
    relay_token_shown: bool,
    /// The receiver's switches, applied at once and not saved.
    pub switches: super::send::Switches,
}

/// The event type chosen for an endpoint, kept among its contract's `types`.
pub fn choice<'a>(
    chosen: &'a mut std::collections::HashMap<String, String>,
    path: &str,
    types: &[String],
) -> &'a mut String {
    let chosen = chosen.entry(path.to_string()).or_default();
    if !types.contains(chosen) {
        *chosen = types.first().cloned().unwrap_or_default();
    }
    chosen
}

/// What one frame of the window asked for, done once it is drawn.
#[derive(Default)]
struct Asked {
    save: bool,
    command: Option<Command>,
    relay: Option<RelayAsk>,
}

impl Editor {
    /// An editor over the config as loaded.
    pub fn new(config: ConfigFile, relay_key: Option<String>) -> Self {
        Self {
            open: false,
            draft: config,
            revealed: HashSet::new(),
            header_text: Default::default(),
            error: None,
            tested: None,
            testing: None,
            relay_key,
            relay_token_shown: false,
            switches: Default::default(),
        }
    }

    /// The engine's answer to a *Test* of an endpoint's rules.
    pub fn rules_tested(&mut self, id: i64, results: Vec<Result<bool, String>>) {
        if let Some(index) = self.testing.take() {
            self.tested = Some((index, id, results));
        }
    }

    /// Records a successful save (the engine's answer, with the config resolved).
    pub fn saved(
        &mut self,
        config: ConfigFile,
        settings: std::sync::Arc<Settings>,
        shared: &mut Shared,
    ) {
        // Keep edits made since the save was sent only if they differ from what was saved.
        if self.draft == shared.saved.config {
            self.draft = config.clone();
            self.header_text.clear();
        }
        shared.saved = super::shared::Saved { config, settings };
        self.error = None;
    }

    /// The engine refused to save the draft: why, shown in the editor.
    pub fn refused(&mut self, why: String) {
        self.error = Some(why);
    }

    /// Why the draft was refused, as the editor shows it (what the window tests read).
    #[cfg(test)]
    pub fn refusal(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Draws the panel's window when it is open.
    pub fn window(&mut self, ctx: &egui::Context, shared: &mut Shared) {
        if !self.open {
            return;
        }
        let mut open = true;
        let mut asked = Asked::default();
        egui::Window::new("Endpoints & secrets")
            .open(&mut open)
            .default_width(760.0)
            .default_height(600.0)
            .resizable(true)
            .show(ctx, |ui| {
                ui.label("Deliveries go to the endpoint with the longest matching path prefix; \"/\" catches the rest. With no scheme, hookscope detects one from the headers.");
                ui.weak(format!("Saved to {} (readable by you only).", shared.engine.config_path.display()));
                ui.add_space(6.0);
                // The endpoints, retention and relay scroll; Save and the switches stay in view
                // below them, however many endpoints there are and however small the screen.
                egui::ScrollArea::vertical()
                    .max_height((ctx.content_rect().height() - 300.0).max(160.0))
                    .auto_shrink([false, true])
                    .show(ui, |ui| {
                        self.endpoints_ui(ui, shared, &mut asked);
                        ui.add_space(4.0);
                        retention_ui(ui, &mut self.draft.retention);
                        ui.add_space(4.0);
                        asked.relay = relay_ui(ui, &mut self.draft.relay, self.relay_key.as_deref(), &mut self.relay_token_shown);
                    });
                ui.add_space(4.0);
                asked.save |= self.save_row_ui(ui, shared);
                if let Some(error) = &self.error {
                    ui.colored_label(widgets::FAIL, error);
                }
                ui.separator();
                ui.weak("Applied at once, not saved:");
                self.switches.ui(ui, shared);
            });
        self.open = open;
        if asked
            .relay
            .is_some_and(|relay| relay_asked_for(shared, ctx, relay))
        {
            asked.save = true;
        }
        if let Some(command) = asked.command {
            shared.send(command);
        }
        if asked.save {
            shared.send(Command::SaveConfig(Box::new(self.draft.clone())));
        }
    }

    /// Each endpoint of the draft, with its rules, its contract and *Remove endpoint*.
    fn endpoints_ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared, asked: &mut Asked) {
        let editor = self;
        let scheme_names: Vec<String> = presets()
            .into_iter()
            .map(|s| s.name)
            .chain(editor.draft.schemes.iter().map(|s| s.name.clone()))
            .collect();
        let mut remove = None;
        let mut test = None;
        let mut stale = false;
        let base = shared.saved.config.base_dir.clone();
        let selected = shared.selection.id.map(|id| {
            let arrived = shared.selection.delivery().map(|d| d.endpoint.clone());
            (id, arrived)
        });
        ui.vertical(|ui| {
            for (index, endpoint) in editor.draft.endpoints.iter_mut().enumerate() {
                egui::Frame::group(ui.style()).show(ui, |ui| {
                    endpoint_ui(
                        ui,
                        index,
                        endpoint,
                        &scheme_names,
                        &mut editor.revealed,
                        &mut editor.header_text,
                    );
                    let tested = editor
                        .tested
                        .as_ref()
                        .filter(|(i, _, _)| *i == index)
                        .map(|(_, id, results)| (*id, results.clone()));
                    let before = endpoint.forward.clone();
                    let shown = tested.as_ref().map(|(id, r)| (*id, r.as_slice()));
                    if let Some(conditions) = forward_ui(ui, endpoint, selected.clone(), shown) {
                        test = Some((index, conditions));
                    }
                    // A rule edited, moved or removed: its last answers no longer apply.
                    if endpoint.forward != before && tested.is_some() {
                        stale = true;
                    }
                    let saved = shared
                        .saved
                        .settings
                        .endpoints
                        .iter()
                        .find(|e| e.path == endpoint.path)
                        .and_then(|e| e.contract.clone());
                    let types = saved.as_ref().map(|c| c.event_types()).unwrap_or_default();
                    let chosen = choice(&mut shared.examples, &endpoint.path, &types);
                    if let Some(event_type) =
                        contract_ui(ui, endpoint, saved.as_deref(), chosen, base.as_deref())
                    {
                        asked.command = Some(Command::SendExample {
                            endpoint: endpoint.path.clone(),
                            event_type,
                        });
                    }
                    if ui.button("Remove endpoint").clicked() {
                        remove = Some(index);
                    }
                });
                ui.add_space(4.0);
            }
        });
        if let Some(index) = remove {
            editor.draft.endpoints.remove(index);
            editor.header_text.clear();
            editor.revealed.clear();
            editor.tested = None;
        }
        if stale {
            editor.tested = None;
        }
        if let (Some((index, conditions)), Some(id)) = (test, shared.selection.id) {
            editor.testing = Some(index);
            editor.tested = None;
            asked.command = Some(Command::TestRules { id, conditions });
        }
    }

    /// *Add endpoint*, *Save* and *Discard changes*; returns whether *Save* was pressed.
    fn save_row_ui(&mut self, ui: &mut egui::Ui, shared: &Shared) -> bool {
        let editor = self;
        let mut save = false;
        ui.horizontal(|ui| {
            if ui.button("Add endpoint").clicked() {
                let path = if editor.draft.endpoints.iter().any(|e| e.path == "/") {
                    "/hooks/new"
                } else {
                    "/"
                };
                editor.draft.endpoints.push(EndpointConfig {
                    path: path.into(),
                    scheme: None,
                    secrets: Vec::new(),
                    ..EndpointConfig::new("/")
                });
            }
            ui.separator();
            let dirty = editor.draft != shared.saved.config;
            // The engine resolves the draft (reading its contract files) and saves it, or
            // answers why not: the editor shows it.
            if ui
                .add_enabled(dirty, egui::Button::new(RichText::new("Save").strong()))
                .clicked()
            {
                editor.error = None;
                save = true;
            }
            if ui
                .add_enabled(dirty, egui::Button::new("Discard changes"))
                .clicked()
            {
                editor.draft = shared.saved.config.clone();
                editor.header_text.clear();
                editor.error = None;
            }
            if dirty {
                ui.colored_label(widgets::WARN, "unsaved changes");
            }
        });
        save
    }
}

fn endpoint_ui(
    ui: &mut egui::Ui,
    index: usize,
    endpoint: &mut EndpointConfig,
    scheme_names: &[String],
    revealed: &mut HashSet<(usize, usize)>,
    header_text: &mut std::collections::HashMap<usize, String>,
) {
    egui::Grid::new(("endpoint", index))
        .num_columns(2)
        .spacing([10.0, 6.0])
        .show(ui, |ui| {
            path_and_scheme_rows(ui, index, endpoint, scheme_names);
            secrets_row(ui, index, endpoint, revealed);
            signing_rows(ui, endpoint);
            handshake_rows(ui, index, endpoint);
            answer_rows(ui, index, endpoint, header_text);
        });
}

/// The path prefix and the scheme.
fn path_and_scheme_rows(
    ui: &mut egui::Ui,
    index: usize,
    endpoint: &mut EndpointConfig,
    scheme_names: &[String],
) {
    let label = ui.label("Path prefix");
    ui.add(egui::TextEdit::singleline(&mut endpoint.path).desired_width(260.0))
        .labelled_by(label.id);
    ui.end_row();

    ui.label("Scheme");
    let shown = endpoint
        .scheme
        .clone()
        .unwrap_or_else(|| "detect from headers".into());
    egui::ComboBox::from_id_salt(("scheme", index))
        .selected_text(shown)
        .show_ui(ui, |ui| {
            ui.selectable_value(&mut endpoint.scheme, None, "detect from headers");
            for name in scheme_names {
                ui.selectable_value(&mut endpoint.scheme, Some(name.clone()), name);
            }
        });
    ui.end_row();
}

/// The secrets, masked unless revealed: add, generate, remove.
fn secrets_row(
    ui: &mut egui::Ui,
    index: usize,
    endpoint: &mut EndpointConfig,
    revealed: &mut HashSet<(usize, usize)>,
) {
    ui.label("Secrets");
    ui.vertical(|ui| {
        let mut remove = None;
        for (i, secret) in endpoint.secrets.iter_mut().enumerate() {
            ui.horizontal(|ui| {
                let shown = revealed.contains(&(index, i));
                let label = ui.weak(format!("#{}", i + 1));
                let mut text = secret.expose().to_string();
                let edit = egui::TextEdit::singleline(&mut text)
                    .password(!shown)
                    .desired_width(330.0)
                    .hint_text("the sender's signing secret");
                if ui.add(edit).labelled_by(label.id).changed() {
                    *secret = Secret::new(text);
                }
                if ui.button(if shown { "Hide" } else { "Reveal" }).clicked() {
                    if shown {
                        revealed.remove(&(index, i));
                    } else {
                        revealed.insert((index, i));
                    }
                }
                if ui
                    .small_button("Remove")
                    .on_hover_text("Remove this secret")
                    .clicked()
                {
                    remove = Some(i);
                }
            });
        }
        if let Some(i) = remove {
            endpoint.secrets.remove(i);
            revealed.retain(|(e, _)| *e != index);
        }
        ui.horizontal(|ui| {
            if ui.button("Add secret").clicked() {
                endpoint.secrets.push(Secret::new(""));
                revealed.insert((index, endpoint.secrets.len() - 1));
            }
            if ui
                .button("Generate test secret")
                .on_hover_text("A random whsec_ secret, for signing your own test deliveries")
                .clicked()
            {
                endpoint.secrets.push(generate_secret());
            }
            if endpoint.secrets.len() > 1 {
                ui.weak("several secrets = a rotation: each is tried in turn");
            }
        });
    });
    ui.end_row();
}

/// The timestamp tolerance and the public URL (which Twilio signs).
fn signing_rows(ui: &mut egui::Ui, endpoint: &mut EndpointConfig) {
    ui.label("Tolerance");
    ui.horizontal(|ui| {
        let mut custom = endpoint.tolerance_secs.is_some();
        if ui.checkbox(&mut custom, "custom").changed() {
            endpoint.tolerance_secs = custom.then_some(300);
        }
        match &mut endpoint.tolerance_secs {
            Some(secs) => {
                ui.add(egui::DragValue::new(secs).range(0..=86_400).suffix(" s"));
            }
            None => {
                ui.weak("the scheme's default");
            }
        }
    });
    ui.end_row();

    let label = ui.label("Public URL");
    let mut public_url = endpoint.public_url.clone().unwrap_or_default();
    let response = ui
        .add(
            egui::TextEdit::singleline(&mut public_url)
                .desired_width(420.0)
                .hint_text("the URL the sender posts to (a tunnel's); Twilio signs it"),
        )
        .labelled_by(label.id);
    if response.changed() {
        let trimmed = public_url.trim();
        endpoint.public_url = (!trimmed.is_empty()).then(|| trimmed.to_string());
    }
    ui.end_row();
}

/// Which providers' handshakes are answered, and Meta's verify token.
fn handshake_rows(ui: &mut egui::Ui, index: usize, endpoint: &mut EndpointConfig) {
    ui.label("Handshake");
    ui.horizontal(|ui| {
        use hookscope::domain::handshake::Provider;
        let current = endpoint.handshake.clone().unwrap_or_else(|| "auto".into());
        let shown = match current.as_str() {
            "auto" => "every provider's".to_string(),
            "off" => "none (off)".to_string(),
            name => Provider::from_name(name)
                .map(|p| format!("{} only", p.label()))
                .unwrap_or_else(|| name.to_string()),
        };
        egui::ComboBox::from_id_salt(("handshake", index))
            .selected_text(shown)
            .show_ui(ui, |ui| {
                let mut choice = current.clone();
                ui.selectable_value(&mut choice, "auto".to_string(), "every provider's");
                ui.selectable_value(&mut choice, "off".to_string(), "none (off)");
                for provider in Provider::ALL {
                    ui.selectable_value(
                        &mut choice,
                        provider.name().to_string(),
                        format!("{} only", provider.label()),
                    );
                }
                if choice != current {
                    endpoint.handshake = (choice != "auto").then_some(choice);
                }
            });
        ui.weak("answers the challenge a provider sends before it delivers");
    });
    ui.end_row();

    let label = ui.label("Verify token");
    let mut token = endpoint
        .verify_token
        .as_ref()
        .map(|t| t.expose().to_string())
        .unwrap_or_default();
    let response = ui
        .add(
            egui::TextEdit::singleline(&mut token)
                .password(true)
                .desired_width(260.0)
                .hint_text("Meta's Verify token (hub.verify_token)"),
        )
        .labelled_by(label.id);
    if response.changed() {
        let trimmed = token.trim();
        endpoint.verify_token = (!trimmed.is_empty()).then(|| Secret::new(trimmed));
    }
    ui.end_row();
}

/// Payload advice, and how hookscope answers: status, delay, body, headers.
fn answer_rows(
    ui: &mut egui::Ui,
    index: usize,
    endpoint: &mut EndpointConfig,
    header_text: &mut std::collections::HashMap<usize, String>,
) {
    ui.label("Payload advice");
    ui.horizontal(|ui| {
        let mut on = endpoint.advice.unwrap_or(true);
        if ui
            .checkbox(&mut on, "size and personal-data advice")
            .changed()
        {
            endpoint.advice = (!on).then_some(false);
        }
    });
    ui.end_row();

    ui.label("Answer with");
    ui.horizontal(|ui| {
        let mut status = endpoint.respond_status.unwrap_or(200);
        if ui
            .add(egui::DragValue::new(&mut status).range(100..=599))
            .changed()
        {
            endpoint.respond_status = (status != 200).then_some(status);
        }
        ui.label("after");
        let mut delay = endpoint.respond_delay_ms.unwrap_or(0);
        if ui
            .add(
                egui::DragValue::new(&mut delay)
                    .range(0..=120_000)
                    .suffix(" ms"),
            )
            .changed()
        {
            endpoint.respond_delay_ms = (delay != 0).then_some(delay);
        }
    });
    ui.end_row();

    let label = ui.label("Answer body");
    let mut body = endpoint.respond_body.clone().unwrap_or_default();
    let response = ui
        .add(
            egui::TextEdit::multiline(&mut body)
                .desired_rows(1)
                .desired_width(420.0)
                .hint_text("default: {\"received\":true,\"delivery_id\":N}")
                .code_editor(),
        )
        .labelled_by(label.id);
    if response.changed() {
        endpoint.respond_body = (!body.is_empty()).then_some(body);
    }
    ui.end_row();

    let label = ui.label("Answer headers");
    // The text being typed is kept as typed; the headers are what parses of it.
    let lines = header_text.entry(index).or_insert_with(|| {
        endpoint
            .respond_headers
            .iter()
            .map(|(name, value)| format!("{name}: {value}\n"))
            .collect()
    });
    let response = ui
        .add(
            egui::TextEdit::multiline(lines)
                .desired_rows(1)
                .desired_width(420.0)
                .hint_text("Name: value, one per line")
                .code_editor(),
        )
        .labelled_by(label.id);
    if response.changed() {
        endpoint.respond_headers = lines
            .lines()
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_string(), value.trim().to_string()))
            .filter(|(name, _)| !name.is_empty())
            .collect();
    }
    ui.end_row();
}

/// The event-type picker beside *Send an example* (here and in the empty state), labelled by
/// `label`.
pub(super) fn event_type_picker(
    ui: &mut egui::Ui,
    salt: impl egui::AsIdSalt,
    label: egui::Id,
    chosen: &mut String,
    types: &[String],
) {
    egui::ComboBox::from_id_salt(salt)
        .selected_text(chosen.as_str())
        .show_ui(ui, |ui| {
            for t in types {
                ui.selectable_value(chosen, t.clone(), t);
            }
        })
        .response
        .labelled_by(label);
}

/// An endpoint's contract: the file (or folder of JSON Schemas) its deliveries are checked
/// against, and, once saved, *Send an example* of one of its event types to the receiver.
/// Returns the event type to send when the button was pressed.
fn contract_ui(
    ui: &mut egui::Ui,
    endpoint: &mut EndpointConfig,
    saved: Option<&hookscope::domain::contract::Contract>,
    chosen: &mut String,
    base: Option<&std::path::Path>,
) -> Option<String> {
    let mut send = None;
    ui.horizontal(|ui| {
        let label = ui.strong("Contract");
        let mut text = endpoint
            .contract
            .clone()
            .or_else(|| endpoint.contract_dir.clone())
            .unwrap_or_default();
        let edit = ui
            .add(
                egui::TextEdit::singleline(&mut text)
                    .desired_width(300.0)
                    .hint_text("an OpenAPI/AsyncAPI file, or a folder of JSON Schemas"),
            )
            .labelled_by(label.id);
        if edit.changed() {
            let text = text.trim().to_string();
            // A folder is a contract_dir; anything else a contract file.
            // Relative names start in the config file's folder, as the config reads them.
            let at = hookscope::config::in_folder(base, &text);
            let is_dir = at.is_dir() || text.ends_with('/');
            endpoint.contract = (!text.is_empty() && !is_dir).then(|| text.clone());
            endpoint.contract_dir = (!text.is_empty() && is_dir).then_some(text);
        }
        if let Some(contract) = saved {
            let types = contract.event_types();
            let label = ui.label("example of");
            event_type_picker(ui, ("example_type", endpoint.path.as_str()), label.id, chosen, &types);
            if ui
                .button("Send an example")
                .on_hover_text("The contract's example of this event type (or one made from its schema), signed with the endpoint's scheme and secret, posted to the receiver")
                .clicked()
            {
                send = Some(chosen.clone());
            }
        }
    });
    send
}

/// One forwarding rule: where, when, mirror, its test's answer; returns "up", "down" or
/// "remove" when asked.
fn forward_rule_ui(
    ui: &mut egui::Ui,
    n: usize,
    count: usize,
    rule: &mut hookscope::config::ForwardConfig,
    tested: Option<(i64, &[Result<bool, String>])>,
) -> Option<&'static str> {
    let mut action = None;
    ui.horizontal(|ui| {
        ui.weak(format!("{}.", n + 1));
        let label = ui.label("to");
        ui.add(
            egui::TextEdit::singleline(&mut rule.to)
                .desired_width(200.0)
                .hint_text("http://localhost:3000/billing"),
        )
        .labelled_by(label.id);
        let label = ui.label("when");
        let mut when = rule.when.clone().unwrap_or_default();
        if ui
            .add(
                egui::TextEdit::singleline(&mut when)
                    .desired_width(300.0)
                    .hint_text("every delivery (e.g. type:invoice.* OR type:charge.*)"),
            )
            .labelled_by(label.id)
            .changed()
        {
            rule.when = (!when.trim().is_empty()).then_some(when);
        }
        let mut mirror = rule.answer.as_deref() == Some("mirror");
        if ui
            .checkbox(&mut mirror, "mirror")
            .on_hover_text(
                "The sender gets this target's answer instead of the endpoint's (one rule at most)",
            )
            .changed()
        {
            rule.answer = mirror.then(|| "mirror".to_string());
        }
        if ui
            .add_enabled(n > 0, egui::Button::new("Up").small())
            .clicked()
        {
            action = Some("up");
        }
        if ui
            .add_enabled(n + 1 < count, egui::Button::new("Down").small())
            .clicked()
        {
            action = Some("down");
        }
        if ui
            .small_button("Remove")
            .on_hover_text("Remove this rule")
            .clicked()
        {
            action = Some("remove");
        }
        if let Some((id, results)) = tested
            && let Some(result) = results.get(n)
        {
            match result {
                Ok(true) => ui.colored_label(widgets::PASS, format!("#{id} meets it")),
                Ok(false) => ui.colored_label(widgets::SKIPPED, format!("#{id} does not")),
                Err(why) => ui.colored_label(widgets::FAIL, why),
            };
        }
    });
    action
}

/// An endpoint's forwarding rules: each a target, a condition in the list's filter language
/// and whether its answer is mirrored; add, remove, reorder, and *Test* them against the
/// selected delivery. Returns the conditions to test when *Test* was pressed.
fn forward_ui(
    ui: &mut egui::Ui,
    endpoint: &mut EndpointConfig,
    selected: Option<(i64, Option<String>)>,
    tested: Option<(i64, &[Result<bool, String>])>,
) -> Option<Vec<String>> {
    let mut test = None;
    ui.horizontal(|ui| {
        ui.strong("Forward");
        ui.weak(match endpoint.forward.len() {
            0 => "no rules: deliveries stay here".to_string(),
            n => format!("a delivery goes to every rule it meets ({n})"),
        });
    });
    let mut action: Option<(usize, &str)> = None;
    let count = endpoint.forward.len();
    for (n, rule) in endpoint.forward.iter_mut().enumerate() {
        if let Some(asked) = forward_rule_ui(ui, n, count, rule, tested) {
            action = Some((n, asked));
        }
    }
    match action {
        Some((n, "up")) => endpoint.forward.swap(n, n - 1),
        Some((n, "down")) => endpoint.forward.swap(n, n + 1),
        Some((n, _)) => {
            endpoint.forward.remove(n);
        }
        None => {}
    }
    ui.horizontal(|ui| {
        if ui.button("Add rule").clicked() {
            endpoint.forward.push(hookscope::config::ForwardConfig {
                to: "http://localhost:3000/webhooks".into(),
                ..Default::default()
            });
        }
        let hover = match &selected {
            Some((id, _)) => format!("Which rules delivery #{id} meets, as it is stored (the rules as typed, saved or not)"),
            None => "Select a delivery in the list first".to_string(),
        };
        let clicked = ui
            .add_enabled(selected.is_some() && !endpoint.forward.is_empty(), egui::Button::new("Test with the selected delivery"))
            .on_hover_text(hover)
            .clicked();
        // A delivery another endpoint took is never seen by these rules: say so beside the test.
        if let Some((id, Some(arrived))) = &selected
            && arrived.trim_end_matches('/') != endpoint.path.trim_end_matches('/')
        {
            ui.weak(format!("#{id} arrived at {arrived}: these rules never see it"));
        }
        if clicked {
            test = Some(
                endpoint
                    .forward
                    .iter()
                    .map(|r| r.when.clone().unwrap_or_default())
                    .collect(),
            );
        }
    });
    test
}

fn retention_ui(ui: &mut egui::Ui, retention: &mut hookscope::config::RetentionSection) {
    ui.horizontal(|ui| {
        ui.strong("History");
        let mut by_age = retention.max_days.is_some();
        if ui
            .checkbox(&mut by_age, "delete deliveries older than")
            .changed()
        {
            retention.max_days = by_age.then_some(30);
        }
        if let Some(days) = &mut retention.max_days {
            ui.add(egui::DragValue::new(days).range(1..=3650).suffix(" days"));
        }
        ui.separator();
        let mut by_count = retention.max_deliveries.is_some();
        if ui.checkbox(&mut by_count, "keep at most").changed() {
            retention.max_deliveries = by_count.then_some(1_000_000);
        }
        if let Some(count) = &mut retention.max_deliveries {
            ui.add(
                egui::DragValue::new(count)
                    .range(100..=100_000_000)
                    .suffix(" deliveries"),
            );
        }
        if retention.max_days.is_none() && retention.max_deliveries.is_none() {
            ui.weak("everything is kept");
        }
    });
}

/// Does what the *Relay* section asked; `true` when the config is to be saved (and the relay
/// connected).
fn relay_asked_for(shared: &mut Shared, ctx: &egui::Context, asked: RelayAsk) -> bool {
    match asked {
        RelayAsk::MakeKey => shared.send(Command::MakeRelayKey),
        RelayAsk::CopyKey(key) => {
            ctx.copy_text(key.clone());
            shared.notice(format!("copied this laptop's relay key {key}"), false);
        }
        RelayAsk::Connect => return true,
    }
    false
}

/// What the *Relay* section asks of the window.
enum RelayAsk {
    /// Make this laptop's relay key.
    MakeKey,
    /// Copy the key.
    CopyKey(String),
    /// Save the config and connect.
    Connect,
}

/// The *Relay* section: the channel's subscribe URL, its token (masked), the public URL to give
/// providers, and this laptop's key to add to the channel (docs/relay.md).
fn relay_ui(
    ui: &mut egui::Ui,
    relay: &mut hookscope::config::RelaySection,
    key: Option<&str>,
    token_shown: &mut bool,
) -> Option<RelayAsk> {
    let mut asked = None;
    egui::Frame::group(ui.style()).show(ui, |ui| {
        ui.strong("Relay");
        ui.weak("A public URL that keeps every delivery while this laptop sleeps, sealed so the relay cannot read it: run `hookscope relay serve` on a public host (docs/relay.md).");
        egui::Grid::new("relay").num_columns(2).spacing([8.0, 4.0]).show(ui, |ui| {
            ui.label("Subscribe URL");
            optional_text(ui, &mut relay.url, "https://relay.example.com/sub/CHANNEL");
            ui.end_row();
            ui.label("Token");
            ui.horizontal(|ui| {
                let mut token = relay.token.clone().unwrap_or_default();
                let edit = egui::TextEdit::singleline(&mut token)
                    .password(!*token_shown)
                    .hint_text("hsr_… (printed by relay channel add)")
                    .desired_width(320.0);
                if ui.add(edit).changed() {
                    relay.token = (!token.trim().is_empty()).then(|| token.trim().to_string());
                }
                ui.checkbox(token_shown, "show");
                if let Some(env) = &relay.token_env {
                    ui.weak(format!("or from ${env}"));
                }
            });
            ui.end_row();
            ui.label("Public URL");
            optional_text(ui, &mut relay.public_url, "https://relay.example.com/in/CHANNEL (shown to copy)");
            ui.end_row();
            ui.label("This laptop's key");
            ui.horizontal(|ui| match key {
                Some(key) => {
                    ui.monospace(key);
                    if ui.button("Copy").clicked() {
                        asked = Some(RelayAsk::CopyKey(key.to_string()));
                    }
                }
                None => {
                    if ui.button("Make this laptop's key").clicked() {
                        asked = Some(RelayAsk::MakeKey);
                    }
                }
            });
            ui.end_row();
        });
        ui.weak("Add the key to the channel on the relay's host: hookscope relay channel add NAME --recipient KEY");
        if ui
            .add_enabled(relay.url.is_some(), egui::Button::new("Save and connect"))
            .clicked()
        {
            asked = Some(RelayAsk::Connect);
        }
    });
    asked
}

/// A text field for an optional value: empty is `None`.
fn optional_text(ui: &mut egui::Ui, value: &mut Option<String>, hint: &str) {
    let mut text = value.clone().unwrap_or_default();
    let edit = egui::TextEdit::singleline(&mut text)
        .hint_text(hint)
        .desired_width(420.0);
    if ui.add(edit).changed() {
        *value = (!text.trim().is_empty()).then(|| text.trim().to_string());
    }
}

//! The UI's state: the conversation items, the editor, popups, flags and the
//! footer figures, updated from the session's events.

use std::collections::VecDeque;
use std::path::Path;
use std::time::{Duration, Instant};

use makai_rpc::SessionEvent;

use makai_agent::AgentEvent;
use makai_ai::{ThinkingLevel, Usage};

use super::input::complete::{Completion, FileIndex};
use super::input::editor::Editor;
use super::keymap::KeyMap;
use super::render::RenderCache;
use super::selectors::Selector;
use super::transcript::{Level, Transcript};
use crate::app::stats::total_usage;
use crate::app::{AppSession, ContextUsage, OutEvent};
use crate::modes::print::Prompt;

/// How long a status message stays.
const STATUS_TIME: Duration = Duration::from_secs(4);

/// A short message above the editor.
#[derive(Clone, Debug)]
pub struct Status {
    /// The text.
    pub text: String,
    /// Its colour.
    pub level: Level,
    /// When it disappears.
    pub until: Instant,
}

/// What the footer shows, refreshed when the session changes (reading it
/// from the agent on every frame would copy the transcript each time).
#[derive(Clone, Debug, Default)]
pub struct FooterInfo {
    /// Provider of the model.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// True when the model reasons.
    pub reasoning: bool,
    /// Thinking level.
    pub thinking: ThinkingLevel,
    /// Usage summed over the session.
    pub usage: Usage,
    /// Context-window use.
    pub context: Option<ContextUsage>,
    /// The working directory, with `~` for the home folder.
    pub cwd: String,
    /// The session's name.
    pub session_name: Option<String>,
    /// The session tree's budget (caps, spent).
    pub budget: makai_agent::LedgerReport,
}

/// Everything the UI shows and remembers between frames.
#[derive(Default)]
pub struct UiState {
    /// The conversation.
    pub transcript: Transcript,
    /// The images sent to the terminal (`None`: the conversation shows
    /// images as notes; [`super::images`]).
    pub image_output: Option<super::images::ImageOutput>,
    /// The prompt editor.
    pub editor: Editor,
    /// An open completion popup.
    pub completion: Option<Completion>,
    /// Rows a completion popup shows at most: pi's `autocompleteMaxVisible`
    /// (3 to 20); 0 (unset): makai's 14.
    pub completion_rows: usize,
    /// Files for `@` completion.
    pub file_index: FileIndex,
    /// An open selector.
    pub selector: Option<Selector>,
    /// Thinking blocks shown in full (else one dimmed line each); starts
    /// off with pi's `hideThinkingBlock` setting.
    pub show_thinking: bool,
    /// No greeting at the top of the conversation (pi's `"quietStartup": true`).
    pub quiet_startup: bool,
    /// The UI runs in regular mode ([`super::regular`]): the terminal
    /// scrolls and searches the conversation.
    pub regular: bool,
    /// Tool results shown in full (else cut to a few lines).
    pub expand_tools: bool,
    /// Rows scrolled up from the bottom of the conversation (0 follows it).
    pub scroll: usize,
    /// How far a mouse-wheel event scrolls (`fullscreenWheelScrollLines`).
    pub wheel: super::wheel::Wheel,
    /// The conversation's scrollbar (`fullscreenScrollbar`).
    pub scrollbar: super::scrollbar::Scrollbar,
    /// Text of the conversation selected with the mouse
    /// (`fullscreenCopyOnSelect`).
    pub selection: super::selection::Selection,
    /// pi's `showCacheMissNotices`.
    pub cache_notices: super::cache_notices::CacheNotices,
    /// Columns left blank on each side of the editor's text besides its
    /// own one (pi's `editorPaddingX`, 0 to 3).
    pub editor_padding: u16,
    /// Blank columns on each side of the conversation's items (pi's
    /// `outputPad`: 0 or 1, 1 when unset).
    pub output_pad: usize,
    /// The terminal's own cursor is shown in the editor (pi's
    /// `showHardwareCursor`, else `PI_HARDWARE_CURSOR=1`); otherwise the
    /// cursor is drawn as a reverse-video cell, as pi does by default.
    pub hardware_cursor: bool,
    /// The open transcript search (keys go to its query while it is open).
    pub search: Option<super::search::Search>,
    /// A run is going.
    pub running: bool,
    /// A prompt was sent and its run has not started yet.
    pub starting: bool,
    /// A compaction runs.
    pub compacting: bool,
    /// A summary the model is writing, as the status line says it (the
    /// branch a `/tree` move leaves, a bug report's); with `compacting`: a
    /// summary call Esc cancels.
    pub summarizing: Option<&'static str>,
    /// An abort was requested and the run has not ended yet.
    pub aborting: bool,
    /// Spinner frame.
    pub spinner: usize,
    /// A short message above the editor.
    pub status: Option<Status>,
    /// Queued steering messages.
    pub steering: Vec<String>,
    /// Queued follow-up messages.
    pub follow_up: Vec<String>,
    /// When Ctrl+C was last pressed.
    pub last_ctrl_c: Option<Instant>,
    /// When Esc was last pressed in an empty, idle editor (twice opens the
    /// `doubleEscapeAction`).
    pub last_escape: Option<Instant>,
    /// `/tree` shows when each label was set (pi's `app.tree.toggleLabelTimestamp`).
    pub tree_label_times: bool,
    /// The filter of the `/tree` a label prompt was opened from.
    pub tree_label_filter: Option<super::selectors::TreeFilter>,
    /// What `/resume` shows ([`super::resume`]).
    pub resume: super::resume::ResumeState,
    /// Leave the UI.
    pub quit: bool,
    /// Leave this session for another, run in another directory: the
    /// session file, the directory, and what the notice calls it
    /// ("Imported", "Resumed"; see [`super::run`]).
    pub reopen: Option<(std::path::PathBuf, std::path::PathBuf, &'static str)>,
    /// Something changed since the last frame.
    pub dirty: bool,
    /// The footer figures.
    pub footer: FooterInfo,
    /// Prompts from the command line still to send, one run each.
    pub pending_prompts: VecDeque<Prompt>,
    /// The session's warnings shown since the conversation was last rebuilt
    /// from the session: a rebuild shows them again (see
    /// [`UiState::show_warnings`]).
    pub warnings_shown: Vec<String>,
    /// Rendered lines of the conversation, per item.
    pub cache: RenderCache,
    /// Approval questions waiting for an answer (the first one is open).
    pub questions: VecDeque<super::approval::Question>,
    /// A denied question whose reason is being typed in the editor.
    pub awaiting_reason: Option<super::approval::Question>,
    /// The keys of the actions (defaults and `keybindings.json`).
    pub keymap: KeyMap,
    /// A jump to a character was asked for (true: forward); the next
    /// character typed is its target.
    pub pending_jump: Option<bool>,
    /// Something only the UI loop can do with the terminal, asked for by a key.
    pub terminal_request: Option<TerminalRequest>,
    /// A `/login` waiting for the browser or a pasted code.
    pub login: Option<super::login::PendingLogin>,
    /// Why the last run ended (none yet: `None`).
    pub last_end: Option<makai_agent::EndReason>,
    /// A `/llama` load or download in progress.
    pub llama: super::llama::LlamaJobs,
    /// Images pasted into the prompt, each shown in the editor as
    /// `[image N]` (N counts from 1); sent with the prompt while their marker
    /// is still there.
    pub images: Vec<makai_ai::ImageContent>,
}

/// What a key asks of the terminal itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TerminalRequest {
    /// Suspend makai (Ctrl+Z).
    Suspend,
    /// Edit the prompt in an external editor (Ctrl+G).
    ExternalEditor,
    /// Go on in the other terminal mode (`/settings`' TUI mode).
    SwitchMode(super::terminal::TuiMode),
}

/// pi's `outputPad`: 0 when set to 0, else 1.
pub fn output_pad(settings: &makai_coding::settings::Settings) -> usize {
    match settings
        .extra
        .get("outputPad")
        .and_then(serde_json::Value::as_u64)
    {
        Some(0) => 0,
        _ => 1,
    }
}

/// pi's `showHardwareCursor` setting, else `PI_HARDWARE_CURSOR=1`.
pub fn hardware_cursor(
    settings: &makai_coding::settings::Settings,
    var: impl Fn(&str) -> Option<String>,
) -> bool {
    settings
        .extra
        .get("showHardwareCursor")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or_else(|| var("PI_HARDWARE_CURSOR").as_deref() == Some("1"))
}

impl UiState {
    /// Puts the settings of how the UI reads and draws in force: at start,
    /// and again after `/reload` read the settings files again (the
    /// conversation is drawn again with them; a selection and the scrollbar's
    /// state are kept).
    pub fn apply_settings(&mut self, settings: &makai_coding::settings::Settings, cwd: &Path) {
        let extra = &settings.extra;
        self.completion_rows = extra
            .get("autocompleteMaxVisible")
            .and_then(serde_json::Value::as_u64)
            .map_or(0, |n| n.clamp(3, 20) as usize);
        self.wheel = super::wheel::Wheel::new(settings);
        self.scrollbar.mode =
            super::scrollbar::Mode::from_setting(extra.get("fullscreenScrollbar"));
        self.selection.copy_on_select =
            extra.get("fullscreenCopyOnSelect") != Some(&serde_json::Value::Bool(false));
        self.cache_notices.configure(settings);
        self.editor_padding = extra
            .get("editorPaddingX")
            .and_then(serde_json::Value::as_u64)
            .map_or(0, |n| n.min(3) as u16);
        self.hardware_cursor = hardware_cursor(settings, |name| std::env::var(name).ok());
        self.output_pad = output_pad(settings);
        super::links::configure(extra.get("terminal"), cwd);
        super::markdown::set_code_block_indent(settings);
        super::markdown::set_mermaid_mode(settings);
        // Rows drawn with the old indent or links are drawn again.
        self.cache.forget_rows();
        self.dirty = true;
    }

    /// A state showing the session's transcript, thinking visible unless the
    /// settings hide it.
    pub fn new(app: &AppSession) -> Self {
        let settings = app.settings();
        let settings = &*settings;
        let mut st = UiState {
            show_thinking: !settings.hide_thinking_block,
            // pi's `"header"` keeps the greeting: makai shows no resource
            // listing or model scope line at start-up for it to hide.
            quiet_startup: settings.extra.get("quietStartup")
                == Some(&serde_json::Value::Bool(true)),
            dirty: true,
            ..Default::default()
        };
        st.apply_settings(settings, app.cwd());
        let choice =
            super::images::ImageChoice::from_settings(settings.extra.get("terminal"), |name| {
                std::env::var(name).ok()
            });
        let mut image_note = None;
        match choice {
            super::images::ImageChoice::Drawn {
                protocol,
                width_cells,
                tmux,
            } => {
                if tmux {
                    super::images::let_tmux_pass_images();
                }
                st.transcript.draw_images(super::images::ImageMaker::new(
                    protocol,
                    width_cells,
                    super::images::cell_pixels(),
                ));
                st.image_output = Some(super::images::ImageOutput {
                    protocol,
                    uploads: Default::default(),
                    tmux,
                });
            }
            super::images::ImageChoice::Text { why } => image_note = why,
        }
        st.reload(app);
        st.load_keymap();
        if let Some(note) = image_note {
            st.notice(Level::Warning, note);
        }
        // Said on stderr too, but the full-screen UI hides that.
        match app.sandbox() {
            Err(e) => st.notice(Level::Error, format!("Shell commands are refused: {e}")),
            Ok(sb) if !sb.weaker().is_empty() => {
                st.notice(Level::Warning, format!("Sandbox: {}", sb.describe()))
            }
            Ok(_) => {}
        }
        st.show_warnings(app);
        st
    }

    /// Shows the warnings the session kept for a UI as notices. A rebuild of
    /// the conversation (a session switch) drops notices, and a switch warns
    /// about the session it loads before the UI hears that it is done: those
    /// warnings are shown again after the rebuild ([`UiState::rebuilt`]).
    pub fn show_warnings(&mut self, app: &AppSession) {
        for w in app.take_warnings() {
            self.notice(Level::Warning, w.clone());
            self.warnings_shown.push(w);
        }
    }

    /// After the conversation was rebuilt from the session: shows again the
    /// warnings shown since the last rebuild, then any new ones.
    pub fn rebuilt(&mut self, app: &AppSession) {
        for w in std::mem::take(&mut self.warnings_shown) {
            self.notice(Level::Warning, w);
        }
        self.show_warnings(app);
    }

    /// Reads the keys of the actions again: the defaults, then
    /// `keybindings.json` in pi's agent folder and in makai's home. What a
    /// file gets wrong is shown as a warning.
    pub fn load_keymap(&mut self) {
        let folders: Vec<std::path::PathBuf> = [
            makai_coding::resources::pi_agent_dir(),
            makai_coding::makai_home(),
        ]
        .into_iter()
        .flatten()
        .collect();
        let refs: Vec<&std::path::Path> = folders.iter().map(|p| p.as_path()).collect();
        let (keymap, warnings) = KeyMap::load(&refs);
        self.keymap = keymap;
        for w in warnings {
            self.notice(Level::Warning, format!("Keybindings: {w}"));
        }
    }

    /// What the terminal's program status report says now
    /// ([`super::program_status`]).
    pub fn program_status(&self) -> super::program_status::Status {
        use super::program_status::Status;
        if let Some(q) = self.questions.front() {
            return Status::Blocked("permission", q.request.title());
        }
        if let Some(login) = &self.login {
            return Status::Blocked("auth", format!("Sign in to {}", login.provider));
        }
        let name = || self.footer.session_name.clone();
        if self.busy() || self.compacting {
            return Status::Working(name());
        }
        match &self.last_end {
            None | Some(makai_agent::EndReason::Aborted) => Status::Idle,
            Some(makai_agent::EndReason::Error { message }) => Status::Error(message.clone()),
            Some(_) => Status::Done(name()),
        }
    }

    /// True while a run is going or about to start.
    pub fn busy(&self) -> bool {
        self.running || self.starting
    }

    /// Shows a status message for a few seconds.
    pub fn set_status(&mut self, level: Level, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            level,
            until: Instant::now() + STATUS_TIME,
        });
        self.dirty = true;
    }

    /// Adds a notice to the conversation and follows the bottom.
    pub fn notice(&mut self, level: Level, text: impl Into<String>) {
        self.transcript.notice(level, text);
        self.scroll = 0;
        self.dirty = true;
    }

    /// Rebuilds the conversation and the footer from the session (after a
    /// session switch, fork or tree move) and fills the history with its prompts.
    pub fn reload(&mut self, app: &AppSession) {
        let (transcript, editor) = (&mut self.transcript, &mut self.editor);
        app.with_messages(|messages| {
            transcript.rebuild(messages);
            for m in messages {
                if let Some(u) = m.as_user() {
                    let text = makai_agent::parts_text(&u.content);
                    editor.push_history(&text);
                }
            }
        });
        // A selection of the conversation before would cover other text.
        self.selection.clear();
        self.scroll = 0;
        self.steering.clear();
        self.follow_up.clear();
        self.refresh(app);
    }

    /// Re-reads the footer figures.
    pub fn refresh(&mut self, app: &AppSession) {
        let model = app.model();
        let home = dirs::home_dir();
        let cwd = app.cwd().display().to_string();
        let cwd = match home.map(|h| h.display().to_string()) {
            Some(h) if !h.is_empty() && cwd.starts_with(&h) => format!("~{}", &cwd[h.len()..]),
            _ => cwd,
        };
        self.footer = FooterInfo {
            provider: model.provider.clone(),
            model: model.id.clone(),
            reasoning: model.reasoning,
            thinking: app.thinking_level(),
            usage: app.with_messages(total_usage),
            context: app.context_usage(),
            cwd,
            session_name: app.session_name(),
            budget: app.budget(),
        };
        self.dirty = true;
    }

    /// Applies one event of the session's stream.
    pub fn apply(&mut self, app: &AppSession, event: &OutEvent) {
        self.dirty = true;
        match event {
            OutEvent::Agent(ev) => self.apply_agent(app, ev),
            OutEvent::Session(v) => self.apply_session(v),
        }
    }

    fn apply_agent(&mut self, app: &AppSession, ev: &AgentEvent) {
        self.transcript.apply(ev);
        if let Some(notice) = self.cache_notices.on_event(ev) {
            self.notice(Level::Info, notice);
        }
        match ev {
            AgentEvent::AgentStart => {
                self.running = true;
                self.starting = false;
                // An Esc that stopped something before (a compaction, a
                // branch summary) does not stop this run.
                self.aborting = false;
            }
            AgentEvent::AgentEnd { end_reason, .. } => {
                self.last_end = Some(end_reason.clone());
                self.running = false;
                self.aborting = false;
                self.refresh(app);
            }
            AgentEvent::MessageEnd { message } if message.is_assistant() => self.refresh(app),
            AgentEvent::QueueUpdate {
                steering,
                follow_up,
            } => {
                self.steering = steering.clone();
                self.follow_up = follow_up.clone();
            }
            AgentEvent::CompactionStart { .. } => self.compacting = true,
            AgentEvent::CompactionEnd { aborted, .. } => {
                self.compacting = false;
                self.aborting = false;
                if *aborted {
                    self.notice(Level::Warning, "Compaction cancelled.");
                }
                self.refresh(app);
            }
            _ => {}
        }
    }

    fn apply_session(&mut self, event: &SessionEvent) {
        match event {
            SessionEvent::SessionInfoChanged { name } => self.footer.session_name = name.clone(),
            SessionEvent::EntryAppended { entry } => {
                if let makai_coding::session::SessionEntry::Usage(u) = &**entry
                    && u.kind == crate::app::cache_warming::CACHE_WARM_KIND
                {
                    self.cache_notices
                        .on_warmed(&mut self.transcript, u.usage.cost.total);
                    self.scroll = 0;
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::hardware_cursor;
    use crate::tui::test_vars::vars;
    use makai_coding::settings::Settings;

    #[test]
    fn the_hardware_cursor_is_pi_s_setting_else_its_variable_else_drawn() {
        let with = |value: bool| {
            let mut settings = Settings::default();
            settings
                .extra
                .insert("showHardwareCursor".into(), serde_json::Value::Bool(value));
            settings
        };
        let none = Settings::default();
        assert!(!hardware_cursor(&none, vars(&[])));
        assert!(hardware_cursor(&none, vars(&[("PI_HARDWARE_CURSOR", "1")])));
        assert!(!hardware_cursor(
            &none,
            vars(&[("PI_HARDWARE_CURSOR", "yes")])
        ));
        assert!(hardware_cursor(&with(true), vars(&[])));
        assert!(!hardware_cursor(
            &with(false),
            vars(&[("PI_HARDWARE_CURSOR", "1")])
        ));
    }
}

//! The actions keys are bound to: pi's ids, default keys and descriptions.

/// Something a key can do on the main screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    /// While searching the transcript: select the next match.
    SearchNext,
    /// While searching the transcript: select the previous match.
    SearchPrevious,
    /// While searching the transcript: close the search.
    SearchClose,
    /// Search the conversation as drawn.
    Search,
    /// Scroll to the user message before the one at the top.
    PromptPrevious,
    /// Scroll to the user message after the one at the top.
    PromptNext,
    /// Browse to the older prompt whatever the cursor position.
    HistoryPrevious,
    /// Browse to the newer prompt whatever the cursor position.
    HistoryNext,
    /// Up a line; at the top, older prompts.
    CursorUp,
    /// Down a line; at the bottom, newer prompts.
    CursorDown,
    /// One character left.
    CursorLeft,
    /// One character right.
    CursorRight,
    /// One word left.
    CursorWordLeft,
    /// One word right.
    CursorWordRight,
    /// To the line start.
    CursorLineStart,
    /// To the line end.
    CursorLineEnd,
    /// Jump forward to the next character typed.
    JumpForward,
    /// Jump backward to the next character typed.
    JumpBackward,
    /// The transcript up one page.
    ScrollPageUp,
    /// The transcript down one page.
    ScrollPageDown,
    /// The transcript up half a page.
    ScrollHalfPageUp,
    /// The transcript down half a page.
    ScrollHalfPageDown,
    /// The transcript up one line.
    ScrollLineUp,
    /// The transcript down one line.
    ScrollLineDown,
    /// The start of the transcript.
    ScrollTop,
    /// The end of the transcript, following new output.
    ScrollBottom,
    /// Delete the character before the cursor.
    DeleteCharBackward,
    /// Delete the character under the cursor.
    DeleteCharForward,
    /// Delete the word before the cursor.
    DeleteWordBackward,
    /// Delete the word after the cursor.
    DeleteWordForward,
    /// Delete to the line start.
    DeleteToLineStart,
    /// Delete to the line end.
    DeleteToLineEnd,
    /// Put back the text deleted last.
    Yank,
    /// Right after a yank: put back the text deleted before that instead.
    YankPop,
    /// Undo the last edit.
    Undo,
    /// A new line in the prompt.
    NewLine,
    /// Send the prompt (while a run goes: queue it as steering).
    Submit,
    /// Completion.
    Tab,
    /// Abort the run; close popups.
    Interrupt,
    /// Clear the editor; twice: leave.
    Clear,
    /// Leave when the editor is empty.
    Exit,
    /// Suspend makai to the background (`fg` brings it back).
    Suspend,
    /// Edit the prompt in `$VISUAL` / `$EDITOR`.
    ExternalEditor,
    /// `/new`.
    SessionNew,
    /// `/tree`.
    SessionTree,
    /// `/fork`.
    SessionFork,
    /// `/resume`.
    SessionResume,
    /// Open the model selector.
    ModelSelect,
    /// The next model.
    ModelCycleForward,
    /// The previous model.
    ModelCycleBackward,
    /// The next thinking level.
    ThinkingCycle,
    /// Show or hide thinking blocks.
    ThinkingToggle,
    /// Expand or collapse tool output.
    ToolsExpand,
    /// Copy the last assistant message.
    MessageCopy,
    /// Queue the prompt as a follow-up while a run goes.
    MessageFollowUp,
    /// Move queued messages back into the editor.
    MessageDequeue,
    /// Paste an image (or text) from the clipboard.
    PasteImage,
    /// In `/tree`: the default view.
    TreeFilterDefault,
    /// In `/tree`: hide tool results (toggles back to the default).
    TreeFilterNoTools,
    /// In `/tree`: only user messages (toggles back).
    TreeFilterUserOnly,
    /// In `/tree`: only labeled entries (toggles back).
    TreeFilterLabeledOnly,
    /// In `/tree`: every entry (toggles back).
    TreeFilterAll,
    /// In `/tree`: the next filter.
    TreeFilterCycleForward,
    /// In `/tree`: the previous filter.
    TreeFilterCycleBackward,
    /// In a list: the row above.
    SelectUp,
    /// In a list: the row below.
    SelectDown,
    /// In a list: a page up.
    SelectPageUp,
    /// In a list: a page down.
    SelectPageDown,
    /// In a list: choose the highlighted row.
    SelectConfirm,
    /// In a list: close it.
    SelectCancel,
    /// In `/model`: make the highlighted model the default (saved).
    ModelsSave,
    /// In `/thinking`: make the highlighted level the default (saved).
    ThinkingSave,
    /// In `/scoped-models`: every model (that the filter shows) in.
    ModelsEnableAll,
    /// In `/scoped-models`: every model (that the filter shows) out.
    ModelsClearAll,
    /// In `/scoped-models`: the highlighted model's provider in or out.
    ModelsToggleProvider,
    /// In `/scoped-models`: the highlighted model earlier in the cycle.
    ModelsReorderUp,
    /// In `/scoped-models`: the highlighted model later in the cycle.
    ModelsReorderDown,
    /// In `/tree`: set or clear the highlighted entry's label.
    TreeEditLabel,
    /// In `/tree`: show when labels were set.
    TreeToggleLabelTimestamp,
    /// Copy the text selected with the mouse (`tui.input.copy`); the key's
    /// next action when nothing is selected.
    InputCopy,
    /// In `/tree`: fold the branch segment, or up to the previous one.
    TreeFoldOrUp,
    /// In `/tree`: unfold the branch segment, or down to the next one.
    TreeUnfoldOrDown,
    /// In `/resume`: show where each session is stored.
    SessionTogglePath,
    /// In `/resume`: threaded or newest first.
    SessionToggleSort,
    /// In `/resume`: only named sessions (toggles back).
    SessionToggleNamedFilter,
    /// In `/resume`: rename the highlighted session.
    SessionRename,
    /// In `/resume`: delete the highlighted session (after a yes).
    SessionDelete,
    /// In `/resume`: delete the highlighted session when nothing is typed.
    SessionDeleteNoninvasive,
}

/// Every action: its id in `keybindings.json`, its default keys and what it
/// does, in the order keys are matched (the first action bound to a key gets
/// it; some give it on to the next, as Ctrl+D does in a non-empty editor).
pub(super) const ACTIONS: &[(Action, &str, &[&str], &str)] = &[
    // Before the editor's actions on the same keys: these give the key on
    // unless a search is open.
    (
        Action::SearchNext,
        "tui.altScreen.searchNext",
        &["enter", "ctrl+g"],
        "Select the next search match while searching",
    ),
    (
        Action::SearchPrevious,
        "tui.altScreen.searchPrevious",
        &["shift+enter", "ctrl+shift+g"],
        "Select the previous search match while searching",
    ),
    (
        Action::SearchClose,
        "tui.altScreen.searchClose",
        &["escape"],
        "Close the transcript search",
    ),
    (
        Action::Search,
        "tui.altScreen.search",
        &["ctrl+shift+f"],
        "Search the conversation",
    ),
    (
        Action::PromptPrevious,
        "tui.altScreen.previousPrompt",
        &["ctrl+shift+up"],
        "Jump to the previous user message",
    ),
    (
        Action::PromptNext,
        "tui.altScreen.nextPrompt",
        &["ctrl+shift+down"],
        "Jump to the next user message",
    ),
    (
        Action::HistoryPrevious,
        "tui.editor.historyPrevious",
        &[],
        "Previous prompt from history",
    ),
    (
        Action::HistoryNext,
        "tui.editor.historyNext",
        &[],
        "Next prompt from history",
    ),
    (
        Action::MessageDequeue,
        "app.message.dequeue",
        &["alt+up"],
        "Move queued messages back into the editor",
    ),
    (
        Action::CursorUp,
        "tui.editor.cursorUp",
        &["up"],
        "Up a line; in an empty editor or at the top: older prompts",
    ),
    (
        Action::CursorDown,
        "tui.editor.cursorDown",
        &["down"],
        "Down a line; at the bottom: newer prompts",
    ),
    (
        Action::CursorWordLeft,
        "tui.editor.cursorWordLeft",
        &["alt+left", "ctrl+left", "alt+b"],
        "Word left",
    ),
    (
        Action::CursorWordRight,
        "tui.editor.cursorWordRight",
        &["alt+right", "ctrl+right", "alt+f"],
        "Word right",
    ),
    (
        Action::CursorLeft,
        "tui.editor.cursorLeft",
        &["left", "ctrl+b"],
        "Character left",
    ),
    (
        Action::CursorRight,
        "tui.editor.cursorRight",
        &["right", "ctrl+f"],
        "Character right",
    ),
    (
        Action::CursorLineStart,
        "tui.editor.cursorLineStart",
        &["home", "ctrl+a"],
        "Line start",
    ),
    (
        Action::CursorLineEnd,
        "tui.editor.cursorLineEnd",
        &["end", "ctrl+e"],
        "Line end",
    ),
    (
        Action::JumpForward,
        "tui.editor.jumpForward",
        &["ctrl+]"],
        "Jump forward to the character typed next",
    ),
    (
        Action::JumpBackward,
        "tui.editor.jumpBackward",
        &["ctrl+alt+]"],
        "Jump backward to the character typed next",
    ),
    (
        Action::ScrollTop,
        "tui.altScreen.top",
        &["ctrl+home"],
        "Scroll to the start of the conversation",
    ),
    (
        Action::ScrollBottom,
        "tui.altScreen.bottom",
        &["ctrl+end"],
        "Scroll to the end and follow new output",
    ),
    (
        Action::ScrollPageUp,
        "tui.altScreen.pageUp",
        &["pageUp"],
        "Scroll the conversation up a page",
    ),
    (
        Action::ScrollPageDown,
        "tui.altScreen.pageDown",
        &["pageDown"],
        "Scroll the conversation down a page",
    ),
    (
        Action::ScrollHalfPageUp,
        "tui.altScreen.halfPageUp",
        &[],
        "Scroll the conversation up half a page",
    ),
    (
        Action::ScrollHalfPageDown,
        "tui.altScreen.halfPageDown",
        &[],
        "Scroll the conversation down half a page",
    ),
    (
        Action::ScrollLineUp,
        "tui.altScreen.lineUp",
        &[],
        "Scroll the conversation up a line",
    ),
    (
        Action::ScrollLineDown,
        "tui.altScreen.lineDown",
        &[],
        "Scroll the conversation down a line",
    ),
    (
        Action::Exit,
        "app.exit",
        &["ctrl+d"],
        "Exit when the editor is empty",
    ),
    (
        Action::DeleteCharBackward,
        "tui.editor.deleteCharBackward",
        &["backspace"],
        "Delete the character before the cursor",
    ),
    (
        Action::DeleteCharForward,
        "tui.editor.deleteCharForward",
        &["delete", "ctrl+d"],
        "Delete the character under the cursor",
    ),
    (
        Action::DeleteWordBackward,
        "tui.editor.deleteWordBackward",
        &["ctrl+w", "alt+backspace", "ctrl+backspace"],
        "Delete the word before the cursor",
    ),
    (
        Action::DeleteWordForward,
        "tui.editor.deleteWordForward",
        &["alt+d", "alt+delete"],
        "Delete the word after the cursor",
    ),
    (
        Action::DeleteToLineStart,
        "tui.editor.deleteToLineStart",
        &["ctrl+u"],
        "Delete to the line start",
    ),
    (
        Action::DeleteToLineEnd,
        "tui.editor.deleteToLineEnd",
        &["ctrl+k"],
        "Delete to the line end",
    ),
    (
        Action::Yank,
        "tui.editor.yank",
        &["ctrl+y"],
        "Put back the text deleted last",
    ),
    (
        Action::YankPop,
        "tui.editor.yankPop",
        &["alt+y"],
        "After Ctrl+Y: cycle through earlier deleted text",
    ),
    (
        Action::Undo,
        "tui.editor.undo",
        &["ctrl+-"],
        "Undo the last edit",
    ),
    (
        Action::MessageFollowUp,
        "app.message.followUp",
        &["alt+enter"],
        "While a run goes: queue a follow-up message",
    ),
    (
        Action::NewLine,
        "tui.input.newLine",
        &["shift+enter", "ctrl+j", "ctrl+enter"],
        "New line",
    ),
    (
        Action::Submit,
        "tui.input.submit",
        &["enter"],
        "Send; while a run goes: queue a steering message",
    ),
    (Action::Tab, "tui.input.tab", &["tab"], "Complete"),
    (
        Action::InputCopy,
        "tui.input.copy",
        &["ctrl+c"],
        "Copy the text selected with the mouse (then the key's other actions)",
    ),
    (
        Action::Interrupt,
        "app.interrupt",
        &["escape"],
        "Abort the run (queued messages return to the editor); close popups",
    ),
    (
        Action::Clear,
        "app.clear",
        &["ctrl+c"],
        "Clear the editor; twice within a second: exit",
    ),
    (
        Action::Suspend,
        "app.suspend",
        &["ctrl+z"],
        "Suspend to the background (fg resumes)",
    ),
    (
        Action::ExternalEditor,
        "app.editor.external",
        &["ctrl+g"],
        "Edit the prompt in $VISUAL / $EDITOR (else nano)",
    ),
    (
        Action::SessionNew,
        "app.session.new",
        &[],
        "New session (/new)",
    ),
    (
        Action::SessionTree,
        "app.session.tree",
        &[],
        "Session tree (/tree)",
    ),
    (
        Action::SessionFork,
        "app.session.fork",
        &[],
        "Fork the session (/fork)",
    ),
    (
        Action::SessionResume,
        "app.session.resume",
        &[],
        "Open another session (/resume)",
    ),
    (
        Action::ModelSelect,
        "app.model.select",
        &["ctrl+l"],
        "Choose the model",
    ),
    (
        Action::ModelCycleForward,
        "app.model.cycleForward",
        &["ctrl+p"],
        "Next model (see /scoped-models)",
    ),
    (
        Action::ModelCycleBackward,
        "app.model.cycleBackward",
        &["shift+ctrl+p"],
        "Previous model",
    ),
    (
        Action::ThinkingCycle,
        "app.thinking.cycle",
        &["shift+tab"],
        "Next thinking level",
    ),
    (
        Action::ThinkingToggle,
        "app.thinking.toggle",
        &["ctrl+t"],
        "Show or hide thinking",
    ),
    (
        Action::ToolsExpand,
        "app.tools.expand",
        &["ctrl+o"],
        "Expand or collapse tool output",
    ),
    (
        Action::PasteImage,
        "app.clipboard.pasteImage",
        &["ctrl+v"],
        "Paste an image (or text) from the clipboard",
    ),
    (
        Action::MessageCopy,
        "app.message.copy",
        &["ctrl+x"],
        "Copy the last assistant message (in /tree: the selected one)",
    ),
    // `/tree`'s filters: only while the tree is open.
    (
        Action::TreeFilterDefault,
        "app.tree.filter.default",
        &["ctrl+d"],
        "In /tree: the default view",
    ),
    (
        Action::TreeFilterNoTools,
        "app.tree.filter.noTools",
        &["ctrl+t"],
        "In /tree: hide tool results",
    ),
    (
        Action::TreeFilterUserOnly,
        "app.tree.filter.userOnly",
        &["ctrl+u"],
        "In /tree: only user messages",
    ),
    (
        Action::TreeFilterLabeledOnly,
        "app.tree.filter.labeledOnly",
        &["ctrl+l"],
        "In /tree: only labeled entries",
    ),
    (
        Action::TreeFilterAll,
        "app.tree.filter.all",
        &["ctrl+a"],
        "In /tree: every entry",
    ),
    (
        Action::TreeFilterCycleForward,
        "app.tree.filter.cycleForward",
        &["ctrl+o"],
        "In /tree: the next filter",
    ),
    (
        Action::TreeFilterCycleBackward,
        "app.tree.filter.cycleBackward",
        &["shift+ctrl+o"],
        "In /tree: the previous filter",
    ),
    (
        Action::SelectUp,
        "tui.select.up",
        &["up"],
        "In a list: the row above",
    ),
    (
        Action::SelectDown,
        "tui.select.down",
        &["down"],
        "In a list: the row below",
    ),
    (
        Action::SelectPageUp,
        "tui.select.pageUp",
        &["pageUp"],
        "In a list: a page up",
    ),
    (
        Action::SelectPageDown,
        "tui.select.pageDown",
        &["pageDown"],
        "In a list: a page down",
    ),
    (
        Action::SelectConfirm,
        "tui.select.confirm",
        &["enter"],
        "In a list: choose",
    ),
    (
        Action::SelectCancel,
        "tui.select.cancel",
        &["escape", "ctrl+c"],
        "In a list: close it",
    ),
    (
        Action::ModelsSave,
        "app.models.save",
        &["ctrl+s"],
        "In /model: save the model as the default",
    ),
    (
        Action::ThinkingSave,
        "app.thinking.save",
        &["ctrl+s"],
        "In /thinking: save the level as the default",
    ),
    (
        Action::ModelsEnableAll,
        "app.models.enableAll",
        &["ctrl+a"],
        "In /scoped-models: every model in",
    ),
    (
        Action::ModelsClearAll,
        "app.models.clearAll",
        &["ctrl+x"],
        "In /scoped-models: every model out",
    ),
    (
        Action::ModelsToggleProvider,
        "app.models.toggleProvider",
        &["ctrl+p"],
        "In /scoped-models: the provider's models in or out",
    ),
    (
        Action::ModelsReorderUp,
        "app.models.reorderUp",
        &["alt+up"],
        "In /scoped-models: earlier in the cycle",
    ),
    (
        Action::ModelsReorderDown,
        "app.models.reorderDown",
        &["alt+down"],
        "In /scoped-models: later in the cycle",
    ),
    (
        Action::TreeEditLabel,
        "app.tree.editLabel",
        &["shift+l"],
        "In /tree: edit the entry's label",
    ),
    (
        Action::TreeToggleLabelTimestamp,
        "app.tree.toggleLabelTimestamp",
        &["shift+t"],
        "In /tree: show when labels were set",
    ),
    (
        Action::TreeFoldOrUp,
        "app.tree.foldOrUp",
        &["ctrl+left", "alt+left"],
        "In /tree: fold the branch segment, or go to the previous one",
    ),
    (
        Action::TreeUnfoldOrDown,
        "app.tree.unfoldOrDown",
        &["ctrl+right", "alt+right"],
        "In /tree: unfold the branch segment, or go to the next one",
    ),
    (
        Action::SessionTogglePath,
        "app.session.togglePath",
        &["ctrl+p"],
        "In /resume: show where sessions are stored",
    ),
    (
        Action::SessionToggleSort,
        "app.session.toggleSort",
        &["ctrl+s"],
        "In /resume: threaded or newest first",
    ),
    (
        Action::SessionToggleNamedFilter,
        "app.session.toggleNamedFilter",
        &["ctrl+n"],
        "In /resume: only named sessions",
    ),
    (
        Action::SessionRename,
        "app.session.rename",
        &["ctrl+r"],
        "In /resume: rename the session",
    ),
    (
        Action::SessionDelete,
        "app.session.delete",
        &["ctrl+d"],
        "In /resume: delete the session",
    ),
    (
        Action::SessionDeleteNoninvasive,
        "app.session.deleteNoninvasive",
        &["ctrl+backspace"],
        "In /resume: delete the session when nothing is typed",
    ),
];

/// Action ids pi documents that makai has no use for (other screens, or
/// features makai does not have); a file naming them is not an error.
pub(super) const KNOWN_ELSEWHERE: &[&str] = &["tui.editor.pageUp", "tui.editor.pageDown"];

impl Action {
    /// The action's id in `keybindings.json` (`app.session.new`).
    pub fn id(self) -> &'static str {
        ACTIONS
            .iter()
            .find(|(a, ..)| *a == self)
            .map_or("", |(_, id, ..)| id)
    }

    /// The action with this id.
    pub fn from_id(id: &str) -> Option<Action> {
        ACTIONS.iter().find(|(_, i, ..)| *i == id).map(|(a, ..)| *a)
    }
}

//! The actions keys are bound to (their ids, default keys and descriptions
//! are in [`super::defaults`]).

use super::defaults::ACTIONS;

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

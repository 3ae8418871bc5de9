//! The UI loop: waits on terminal input, the session's events, results of
//! background work, warnings and its own next deadline at once, and redraws
//! at most ~30 times a second. Nothing here waits for the agent: slow calls
//! run on their own tasks and report back as [`UiMsg`]s.
//!
//! There is no fixed tick. Each wake-up costs the process tens of
//! microseconds of CPU (the kernel's, to put it to sleep and wake it), so the
//! loop sleeps until the next thing that is due: a frame held back by the
//! frame limit, the spinner's next frame, a status message's end; with
//! nothing due (idle, no spinner) it sleeps until something happens. What is
//! due soon is done at a wake-up that comes anyway: while the agent works, a
//! frame waits up to [`FRAME_LATE`] for one, and the spinner turns up to
//! [`SPIN_EARLY`] early at one. While an answer streams, its reads (every
//! 16 ms) wake the loop often enough that no timer of its own fires.

use std::future::Future;
use std::time::{Duration, Instant};

use crossterm::event::{Event, EventStream};
use tokio::sync::mpsc;

use super::app_state::{TerminalRequest, UiState};
use super::input;
use super::selectors::Selector;
use super::terminal::Tui;
use super::transcript::Level;
use crate::app::AppSession;
use crate::modes::print::Prompt;

/// The time between two frames, at most ~30 a second.
const FRAME: Duration = Duration::from_millis(33);
/// While the agent works, how much longer than [`FRAME`] a frame may wait
/// for a wake-up that comes anyway before the loop wakes for it (a stream
/// read every 16 ms then draws every third read: ~21 frames a second, with
/// no timer of the loop's own). Keys typed while the agent is idle draw
/// after [`FRAME`] at the latest.
const FRAME_LATE: Duration = Duration::from_millis(16);
/// How long one spinner frame shows.
const SPIN: Duration = Duration::from_millis(80);
/// How much earlier the spinner may turn at a wake-up that came anyway (a
/// stream's read interval: while an answer streams, a read always comes
/// first).
const SPIN_EARLY: Duration = Duration::from_millis(16);

/// The spinner frame at `now` for a loop started at `started`, turned up to
/// [`SPIN_EARLY`] early, and when the next one is due at the latest.
fn spinner_at(started: Instant, now: Instant) -> (usize, Instant) {
    let spin = SPIN.as_millis();
    let frame = ((now + SPIN_EARLY).duration_since(started).as_millis() / spin) as usize;
    let next = started + SPIN * (frame as u32 + 1);
    (frame, next)
}

/// When the loop has something to do next without being woken: a frame held
/// back, the spinner's next frame, a status message's end. `None`: nothing.
fn next_deadline(st: &UiState, started: Instant, last_draw: Option<Instant>) -> Option<Instant> {
    let frame = frame_deadline(st, last_draw);
    let spinner = (st.busy() || st.compacting).then(|| spinner_at(started, Instant::now()).1);
    let status = st.status.as_ref().map(|s| s.until);
    [frame, spinner, status].into_iter().flatten().min()
}

/// When a frame held back by the frame limit is drawn at the latest (none
/// when nothing changed).
fn frame_deadline(st: &UiState, last_draw: Option<Instant>) -> Option<Instant> {
    let wait = if st.busy() || st.compacting {
        FRAME + FRAME_LATE
    } else {
        FRAME
    };
    st.dirty
        .then(|| last_draw.map_or_else(Instant::now, |t| t + wait))
}

/// Sleeps until `deadline`; with none, forever.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// The terminal's input events, read on a task of their own.
///
/// crossterm's `EventStream` looks for input under a global lock that its
/// reader thread holds while it waits; each poll of the stream tries that
/// lock, spinning (`sched_yield`, about ten times) before it gives up. In the
/// UI's `select!` the stream was polled whenever the loop woke, at every
/// agent event: ten system calls per streamed token. Here it is polled only
/// when input arrives.
struct TerminalInput {
    events: mpsc::UnboundedReceiver<std::io::Result<Event>>,
    reader: tokio::task::JoinHandle<()>,
}

impl TerminalInput {
    fn start() -> Self {
        let (tx, events) = mpsc::unbounded_channel();
        // A terminal that took the unambiguous key reports never sends a
        // lone ESC for Alt+key: nothing waits there.
        let wait = (!super::terminal::keyboard_enhanced())
            .then(|| super::lone_escape::wait(|name| std::env::var(name).ok()));
        let reader = tokio::spawn(async move {
            super::lone_escape::forward(EventStream::new(), wait, |event| tx.send(event).is_ok())
                .await;
        });
        TerminalInput { events, reader }
    }

    /// The next input event; `None` once the terminal's input has ended.
    async fn next(&mut self) -> Option<std::io::Result<Event>> {
        self.events.recv().await
    }

    /// Stops reading (the reader's stream is dropped when this returns), so
    /// that someone else can read the keyboard.
    async fn stop(&mut self) {
        self.reader.abort();
        let _ = (&mut self.reader).await;
    }
}

impl Drop for TerminalInput {
    /// The reader stops with the UI, not only when the next key finds the
    /// channel closed.
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// The exit code of a UI whose terminal hung up (a SIGHUP's).
pub const EXIT_HANGUP: i32 = 129;

/// Ends the UI whose terminal went away ([`super::hangup`]): a run going is
/// stopped (what it said is saved, as at any stop), and the exit code is a
/// SIGHUP's.
async fn hang_up(
    app: &AppSession,
    progress: &mut super::progress::TerminalProgress,
    reports: &mut super::program_status::ProgramStatus,
    st: UiState,
) -> (i32, UiState) {
    progress.finish();
    reports.finish();
    eprintln!("makai: the terminal closed; the session is saved");
    if app.is_streaming() {
        let _ = tokio::time::timeout(Duration::from_secs(3), app.abort()).await;
    }
    (EXIT_HANGUP, st)
}

/// A result of background work, for the UI loop.
#[derive(Debug)]
pub enum UiMsg {
    /// Add a notice to the conversation.
    Notice(Level, String),
    /// Show a status message.
    Status(Level, String),
    /// Open a selector.
    Selector(Selector),
    /// The session changed: rebuild the conversation; optionally put text in
    /// the editor and add a notice.
    Reload {
        /// Text for the editor.
        editor: Option<String>,
        /// A notice after the rebuilt conversation.
        notice: Option<String>,
    },
    /// Re-read the footer figures.
    Refresh,
    /// A summary call ([`UiState::summarizing`]) ended (made, failed or
    /// cancelled).
    SummaryEnded,
    /// A prompt could not be sent.
    PromptFailed(String),
    /// An approval question for the user.
    Approval(Box<super::approval::Question>),
    /// The sign-in URL of the waiting login.
    LoginUrl(String),
    /// The waiting login ended: a notice saying how.
    LoginEnded(Level, String),
    /// What Ctrl+V read from the clipboard.
    Pasted(Result<super::clipboard::Pasted, String>),
    /// The `/resume` picker, of every directory's sessions or this one's.
    Sessions {
        /// Every directory's.
        all: bool,
        /// The picker.
        selector: Selector,
        /// The sessions listed, by their row's value.
        sessions: std::collections::HashMap<String, makai_coding::session::SessionInfo>,
    },
}

/// Where background tasks send their results.
pub type UiTx = mpsc::UnboundedSender<UiMsg>;

/// What key and command handlers work with.
pub struct Ctx<'a> {
    /// The session.
    pub app: &'a AppSession,
    /// The UI state.
    pub st: &'a mut UiState,
    /// For background work.
    pub tx: &'a UiTx,
}

impl Ctx<'_> {
    /// Runs `work` on its own task and hands its messages to the UI loop.
    pub fn spawn<F>(&self, work: F)
    where
        F: Future<Output = Vec<UiMsg>> + Send + 'static,
    {
        let tx = self.tx.clone();
        tokio::spawn(async move {
            for msg in work.await {
                if tx.send(msg).is_err() {
                    break;
                }
            }
        });
    }

    /// Sends a prompt: starts a run (the key check and the request happen on a task).
    pub fn send_prompt(&mut self, prompt: Prompt) {
        self.st.starting = true;
        self.st.scroll = 0;
        self.st.dirty = true;
        let app = self.app.clone();
        self.spawn(async move {
            // Scaled aside: the screen goes on while a large image is fitted.
            let sent = match app.fit_images_aside(prompt.images).await {
                Ok(images) => app.prompt(prompt.text, images).await,
                Err(e) => Err(e),
            };
            match sent {
                Ok(_run) => Vec::new(),
                Err(e) => vec![UiMsg::PromptFailed(e.to_string())],
            }
        });
    }
}

fn handle_msg(ctx: &mut Ctx<'_>, msg: UiMsg) {
    let st = &mut *ctx.st;
    st.dirty = true;
    match msg {
        UiMsg::Notice(level, text) => st.notice(level, text),
        UiMsg::Status(level, text) => st.set_status(level, text),
        UiMsg::Selector(s) => {
            st.completion = None;
            st.selector = Some(s);
        }
        UiMsg::Sessions {
            all,
            selector,
            sessions,
        } => {
            st.completion = None;
            st.selector = Some(selector);
            super::resume::listed(ctx, all, sessions);
        }
        UiMsg::Reload { editor, notice } => {
            st.reload(ctx.app);
            st.cache = Default::default();
            st.rebuilt(ctx.app);
            if let Some(text) = editor {
                st.editor.set_text(&text);
            }
            if let Some(n) = notice {
                st.notice(Level::Info, n);
            }
        }
        UiMsg::Refresh => st.refresh(ctx.app),
        UiMsg::SummaryEnded => {
            st.compacting = false;
            st.summarizing = None;
            st.aborting = false;
        }
        UiMsg::PromptFailed(e) => {
            st.starting = false;
            st.notice(Level::Error, e);
        }
        UiMsg::Approval(q) => super::approval::push(ctx, *q),
        UiMsg::LoginUrl(url) => {
            if let Some(login) = &mut st.login {
                login.url = Some(url);
            }
        }
        UiMsg::Pasted(pasted) => super::input::on_clipboard(ctx, pasted),
        UiMsg::LoginEnded(level, text) => {
            st.login = None;
            st.status = None;
            st.notice(level, text);
        }
    }
}

/// Sends the next command-line prompt when the agent is idle.
fn next_initial_prompt(ctx: &mut Ctx<'_>) {
    if !ctx.st.busy()
        && !ctx.app.is_streaming()
        && let Some(p) = ctx.st.pending_prompts.pop_front()
    {
        ctx.send_prompt(p);
    }
}

/// Lends the terminal out as a key asked: to the shell (suspend) or to an
/// external editor whose text replaces the prompt's.
async fn hand_over(tui: &mut Tui, ctx: &mut Ctx<'_>, request: TerminalRequest) {
    match request {
        TerminalRequest::Suspend => {
            if let Err(e) = tui.suspend().await {
                ctx.st.notice(Level::Error, format!("Cannot suspend: {e}"));
            }
        }
        TerminalRequest::ExternalEditor => {
            // The external editor gets the pastes, not their markers.
            let text = ctx.st.editor.expanded_text();
            let configured = ctx.app.settings().external_editor.clone();
            match tui.edit_externally(&text, configured.as_deref()).await {
                Ok(edited) => ctx.st.editor.set_text(&edited),
                Err(e) => ctx.st.notice(Level::Error, format!("External editor: {e}")),
            }
        }
        TerminalRequest::SwitchMode(mode) => {
            if let Some(output) = ctx.st.image_output.as_mut() {
                tui.delete_images(output);
            }
            let regular = mode == super::terminal::TuiMode::Regular;
            match tui.switch(mode) {
                Ok(()) => {
                    ctx.st.regular = regular;
                    ctx.st.selection.clear();
                    ctx.st.search = None;
                }
                Err(e) => {
                    ctx.st.regular = !regular;
                    ctx.st.notice(
                        Level::Error,
                        format!("Cannot switch the terminal mode: {e}"),
                    );
                }
            }
        }
    }
    ctx.st.completion = None;
    ctx.st.dirty = true;
}

/// Whether the terminal takes program status reports: decided (and the
/// terminal asked) once per process.
static PROGRAM_STATUS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// Runs the UI until the user quits (or asks for another session, see
/// [`UiState::reopen`]); returns the exit code and what the UI showed last.
/// `notices` open the conversation.
pub async fn run(
    tui: &mut Tui,
    app: &AppSession,
    initial: Vec<Prompt>,
    notices: Vec<(Level, String)>,
    pick_session: bool,
) -> (i32, UiState) {
    let mut events = app.subscribe();
    let (tx, mut rx) = mpsc::unbounded_channel::<UiMsg>();
    app.approvals()
        .set_prompter(std::sync::Arc::new(super::approval::TuiPrompter {
            tx: tx.clone(),
        }));
    let reporting = *PROGRAM_STATUS.get_or_init(|| {
        match super::program_status::decide(|name| std::env::var(name).ok()) {
            super::program_status::Decision::Always => true,
            super::program_status::Decision::Never => false,
            // Before the keyboard's reader starts: the answer is read here.
            super::program_status::Decision::Ask => super::program_status::query_terminal(),
        }
    });
    let mut term = TerminalInput::start();
    let mut st = UiState::new(app);
    if tui.mode() == super::terminal::TuiMode::Regular {
        st.regular = true;
    }
    for (level, notice) in notices {
        st.notice(level, notice);
    }
    st.pending_prompts = initial.into();
    let started = Instant::now();
    let mut last_draw: Option<Instant> = None;
    let mut ctx = Ctx {
        app,
        st: &mut st,
        tx: &tx,
    };
    next_initial_prompt(&mut ctx);
    if pick_session {
        ctx.st.resume.at_start = true;
        super::resume::open_resume(&mut ctx, super::resume::ResumeScope::Start);
    }
    let mut progress = super::progress::TerminalProgress::new(&app.settings());
    let mut reports = super::program_status::ProgramStatus::new(reporting);
    // Put back when the UI ends, however it ends.
    let mut title = super::terminal_title::TerminalTitle::start();
    let mut hung_up = std::pin::pin!(super::hangup::hung_up());
    loop {
        let now = Instant::now();
        progress.update(ctx.st.busy() || ctx.st.compacting);
        if reporting {
            reports.update(ctx.st.program_status());
        }
        title.update(ctx.st.footer.session_name.as_deref(), ctx.app.cwd());
        if ctx.st.busy() || ctx.st.compacting {
            let (frame, _) = spinner_at(started, now);
            if frame != ctx.st.spinner {
                ctx.st.spinner = frame;
                ctx.st.dirty = true;
            }
        }
        if ctx.st.status.as_ref().is_some_and(|s| s.until <= now) {
            ctx.st.status = None;
            ctx.st.dirty = true;
        }
        if ctx.st.dirty && last_draw.is_none_or(|t| now.duration_since(t) >= FRAME) {
            let state = &mut *ctx.st;
            let sent = match state.image_output.as_mut() {
                Some(output) => tui.send_images(output, state.transcript.images()),
                None => Ok(()),
            };
            if let Err(e) = sent.and_then(|()| tui.draw(ctx.st)) {
                progress.finish();
                reports.finish();
                tui.restore();
                eprintln!("makai: cannot draw the terminal UI: {e}");
                return (crate::error::EXIT_FAILED, st);
            }
            ctx.st.dirty = false;
            last_draw = Some(now);
        }
        let deadline = next_deadline(ctx.st, started, last_draw);
        tokio::select! {
            ev = term.next() => match ev {
                Some(Ok(Event::Key(key))) => input::on_key(&mut ctx, key),
                Some(Ok(Event::Paste(text))) => input::on_paste(&mut ctx, &text),
                Some(Ok(Event::Mouse(m))) => input::on_mouse(&mut ctx, m),
                Some(Ok(Event::Resize(..))) => ctx.st.dirty = true,
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    ctx.st.notice(Level::Error, format!("terminal input failed: {e}"));
                }
                None => ctx.st.quit = true,
            },
            Some(ev) = events.recv() => {
                ctx.st.apply(app, &ev);
                // Take everything already waiting before drawing.
                while let Ok(ev) = events.try_recv() {
                    ctx.st.apply(app, &ev);
                }
                next_initial_prompt(&mut ctx);
            }
            Some(msg) = rx.recv() => {
                handle_msg(&mut ctx, msg);
                next_initial_prompt(&mut ctx);
            }
            // What the session could only say on stderr (a session file
            // that cannot be written, a sub-agent's spending a session
            // switch cannot count), which this screen hides.
            () = app.warned() => ctx.st.show_warnings(app),
            () = &mut hung_up => {
                // No one to draw for or read from: end as a SIGHUP would.
                return hang_up(app, &mut progress, &mut reports, st).await;
            }
            () = sleep_until(deadline) => {}
        }
        if let Some(request) = ctx.st.terminal_request.take() {
            // The terminal's reader must stop while someone else reads the
            // keyboard (the editor, the shell); a new one starts after.
            term.stop().await;
            hand_over(tui, &mut ctx, request).await;
            term = TerminalInput::start();
        }
        if ctx.st.quit {
            break;
        }
    }
    // The keyboard's reader is gone before the terminal is handed on (to a
    // session reopened in its directory: its trust question, then its UI's
    // reader). Only aborted, its stream was dropped whenever a worker got to
    // it, under load after the next reader had started; a dropped stream
    // wakes crossterm's shared poll, and a wake-up reported together with
    // input makes crossterm miss that input (its poll is edge-triggered): an
    // Enter typed just then stayed unread until the next key.
    term.stop().await;
    progress.finish();
    reports.finish();
    // Regular mode's scrollback keeps its images when the UI ends.
    if let Some(output) = st.image_output.as_mut()
        && tui.mode() == super::terminal::TuiMode::Fullscreen
    {
        tui.delete_images(output);
    }
    if app.is_streaming() {
        // Quitting: a run that does not stop within 3 s ends with the process.
        let _ = tokio::time::timeout(Duration::from_secs(3), app.abort()).await;
    }
    (crate::error::EXIT_OK, st)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An idle UI with nothing to show sleeps until something happens: no
    /// tick wakes it (each wake-up costs the process CPU).
    #[test]
    fn an_idle_ui_has_no_deadline() {
        let st = UiState::default();
        let started = Instant::now();
        assert_eq!(next_deadline(&st, started, Some(started)), None);
    }

    #[test]
    fn a_held_back_frame_a_status_and_the_spinner_each_set_the_deadline() {
        let started = Instant::now();
        let drawn = started + Duration::from_millis(5);
        let mut st = UiState {
            dirty: true,
            ..Default::default()
        };
        assert_eq!(
            next_deadline(&st, started, Some(drawn)),
            Some(drawn + FRAME)
        );
        st.set_status(Level::Info, "saved");
        st.dirty = false;
        let until = st.status.as_ref().map(|s| s.until);
        assert_eq!(next_deadline(&st, started, Some(drawn)), until);
        st.status = None;
        st.running = true;
        let spinner = next_deadline(&st, started, Some(drawn));
        st.dirty = true;
        assert_eq!(
            frame_deadline(&st, Some(drawn)),
            Some(drawn + FRAME + FRAME_LATE),
            "while the agent works a frame waits a little longer for a wake-up"
        );
        st.dirty = false;
        let next_turn = spinner_at(started, Instant::now()).1;
        assert!(
            spinner.is_some_and(|at| at > Instant::now() && at <= next_turn),
            "{spinner:?}"
        );
    }

    /// The spinner turns up to `SPIN_EARLY` before its time, and its next
    /// turn is due one `SPIN` after the one shown, never in the past.
    #[test]
    fn the_spinner_turns_a_little_early_and_its_next_turn_is_ahead() {
        let started = Instant::now();
        let at = |ms: u64| started + Duration::from_millis(ms);
        assert_eq!(spinner_at(started, at(0)), (0, at(80)));
        assert_eq!(spinner_at(started, at(63)), (0, at(80)));
        assert_eq!(spinner_at(started, at(64)), (1, at(160)));
        assert_eq!(spinner_at(started, at(80)), (1, at(160)));
        for ms in 0..1000 {
            let (_, next) = spinner_at(started, at(ms));
            assert!(next > at(ms), "at {ms} ms the next turn is {next:?}");
        }
    }
}

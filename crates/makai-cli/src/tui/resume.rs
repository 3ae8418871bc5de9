//! `/resume`: pi's session picker. It lists the saved sessions of the
//! session folder (or of this directory in the session store), newest
//! first; Tab lists every directory's. As in pi (its `app.session.*`
//! actions, rebindable in `keybindings.json`): Ctrl+R renames the
//! highlighted session, Ctrl+D (Ctrl+Backspace with nothing typed) deletes
//! it after a yes, Ctrl+N shows only named sessions, Ctrl+P shows where each
//! is stored, Ctrl+S switches between pi's threaded order (a fork under the
//! session it came from, each tree where its latest activity puts it; the
//! default) and the newest first. The current session cannot be deleted.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use makai_coding::session::SessionInfo;
use makai_coding::{JsonlStore, SessionStore};

use super::event_loop::{Ctx, UiMsg};
use super::keymap::Action;
use super::resume_order::{newest_first, threaded};
use super::selectors::{SelectItem, Selector, SelectorKind, resume_class};
use super::transcript::Level;
use super::wrap::truncate;

/// Characters of a title a row shows.
const TITLE_CHARS: usize = 100;

/// The picker's own keys, on its bottom border.
const HINT: &str = "tab all · ^r rename · ^d delete · ^n named · ^p path · ^s sort";

/// Which sessions `/resume` lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResumeScope {
    /// This directory's; every directory's when it has none.
    Start,
    /// This directory's.
    Here,
    /// Every directory's.
    All,
}

/// What the picker shows, kept while it is open and between openings.
#[derive(Debug, Default)]
pub struct ResumeState {
    /// Every directory's sessions are listed (Tab switches).
    pub all: bool,
    /// Rows show where each session is stored.
    pub show_path: bool,
    /// Only named sessions show.
    pub named_only: bool,
    /// Newest first, rather than threaded.
    pub recent: bool,
    /// The picker opened with the UI (`--resume`): cancelling it ends the
    /// run, as in pi; choosing a session or leaving it another way clears it.
    pub at_start: bool,
    /// The sessions listed, by their row's value.
    sessions: HashMap<String, SessionInfo>,
}

impl ResumeState {
    /// The scope the picker shows now.
    fn scope(&self) -> ResumeScope {
        if self.all {
            ResumeScope::All
        } else {
            ResumeScope::Here
        }
    }
}

/// A listing to make, off the UI's task.
struct Listing {
    store: Arc<dyn SessionStore>,
    every: Option<Arc<dyn SessionStore>>,
    scope: ResumeScope,
    cwd: String,
    current: String,
    show_path: bool,
    named_only: bool,
    recent: bool,
    /// What the title says after an action (the status line is under the
    /// picker).
    note: Option<String>,
}

fn ago(t: SystemTime) -> String {
    let secs = SystemTime::now()
        .duration_since(t)
        .map_or(0, |d| d.as_secs());
    match secs {
        0..60 => "just now".into(),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86_400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86_400),
    }
}

/// The store `/resume` lists (`None`: this run saves no session).
fn store_for(ctx: &Ctx<'_>, all: bool) -> Option<Arc<dyn SessionStore>> {
    let folder = ctx
        .app
        .session_file()
        .and_then(|p| p.parent().map(PathBuf::from));
    match (folder, ctx.app.store()) {
        (_, Some(store)) if all => Some(store.clone()),
        (Some(dir), _) => Some(Arc::new(JsonlStore::flat(dir))),
        (None, Some(store)) => Some(store.clone()),
        (None, None) => None,
    }
}

/// The listing of `scope` as the picker shows it now.
fn listing(ctx: &Ctx<'_>, scope: ResumeScope) -> Option<Listing> {
    let store = store_for(ctx, scope == ResumeScope::All)?;
    Some(Listing {
        store,
        every: ctx.app.store().cloned(),
        scope,
        cwd: ctx.app.cwd().display().to_string(),
        current: ctx.app.session_id(),
        show_path: ctx.st.resume.show_path,
        named_only: ctx.st.resume.named_only,
        recent: ctx.st.resume.recent,
        note: None,
    })
}

/// Opens the picker on `scope`'s sessions (see the module docs). A session
/// of another directory opens there (see
/// [`super::config_commands::open_session_file`]).
pub fn open_resume(ctx: &mut Ctx<'_>, scope: ResumeScope) {
    let Some(listing) = listing(ctx, scope) else {
        ctx.st.notice(
            Level::Warning,
            "Sessions are not saved in this run (--no-session), so there is nothing to resume.",
        );
        return;
    };
    ctx.spawn(list(listing));
}

/// What a row says of `s` besides its title.
fn detail(s: &SessionInfo, all: bool, here: &str, show_path: bool) -> String {
    let short_id: String = s.id.chars().take(8).collect();
    let damaged = s
        .damaged_at
        .map(|l| format!(" · damaged at line {l}"))
        .unwrap_or_default();
    let place = if show_path {
        match &s.path {
            Some(path) => format!(" · {}", path.display()),
            None => format!(" · {}", s.cwd),
        }
    } else if all && s.cwd != here {
        format!(" · {}", s.cwd)
    } else {
        String::new()
    };
    format!(
        "{} messages · {} · {short_id}{damaged}{place}",
        s.message_count,
        ago(s.modified)
    )
}

fn title(all: bool, recent: bool, named_only: bool, note: Option<&str>) -> String {
    let mut title = if all {
        "Resume session · all directories (tab: this one)".to_string()
    } else {
        "Resume session · this directory (tab: all)".to_string()
    };
    title.push_str(if recent {
        " · newest first"
    } else {
        " · threaded"
    });
    if named_only {
        title.push_str(" · named only");
    }
    if let Some(note) = note {
        title.push_str(" · ");
        title.push_str(note);
    }
    title
}

/// The row value opening `s`: its file, or its id in a database.
fn row_value(s: &SessionInfo) -> String {
    match &s.path {
        Some(path) => path.display().to_string(),
        None => s.id.clone(),
    }
}

/// Lists the sessions and builds the picker (with none saved here, the
/// current one aside, at the first opening: every directory's).
async fn list(l: Listing) -> Vec<UiMsg> {
    let Listing {
        store,
        every,
        scope,
        cwd,
        current,
        show_path,
        named_only,
        recent,
        note,
    } = l;
    let this_id = current.clone();
    let here = cwd.clone();
    let listed = tokio::task::spawn_blocking(move || {
        if scope == ResumeScope::All {
            return store.list_all().map(|l| (l, true));
        }
        let list = store.list(&cwd)?;
        let none_here = list.iter().all(|s| s.message_count == 0 && s.id != this_id);
        match every {
            Some(every) if none_here && scope == ResumeScope::Start => {
                every.list_all().map(|l| (l, true))
            }
            _ => Ok((list, false)),
        }
    })
    .await;
    let (list, all) = match listed {
        Ok(Ok(listed)) => listed,
        Ok(Err(e)) => return vec![cannot_list(e)],
        Err(e) => return vec![cannot_list(e)],
    };
    let sessions: Vec<SessionInfo> = list
        .into_iter()
        .filter(|s| s.message_count > 0 || s.id == current)
        .collect();
    let order = if recent {
        newest_first(&sessions)
    } else {
        threaded(&sessions)
    };
    if sessions.is_empty() && all {
        return vec![UiMsg::Notice(Level::Info, "No saved sessions yet.".into())];
    }
    let items: Vec<SelectItem> = order
        .iter()
        .map(|&(i, depth)| {
            let s = &sessions[i];
            let indent = if depth == 0 {
                String::new()
            } else {
                format!("{}└ ", "  ".repeat(depth - 1))
            };
            let label = truncate(
                &format!(
                    "{indent}{}",
                    s.title.split_whitespace().collect::<Vec<_>>().join(" ")
                ),
                TITLE_CHARS,
            );
            SelectItem::new(label, detail(s, all, &here, show_path), row_value(s))
                .current(s.id == current)
                .class(if s.name.is_some() {
                    resume_class::NAMED
                } else {
                    0
                })
        })
        .collect();
    let mut selector = Selector::new(
        title(all, recent, named_only, note.as_deref()),
        SelectorKind::Resume,
        items,
    );
    selector.selected = 0;
    selector.hint = Some(HINT.to_string());
    if named_only {
        selector.only_class = resume_class::NAMED;
    }
    vec![UiMsg::Sessions {
        all,
        selector,
        sessions: sessions.into_iter().map(|s| (row_value(&s), s)).collect(),
    }]
}

fn cannot_list(e: impl std::fmt::Display) -> UiMsg {
    UiMsg::Notice(Level::Error, format!("Cannot list sessions: {e}"))
}

/// The picker's listing arrived: keep its sessions.
pub fn listed(ctx: &mut Ctx<'_>, all: bool, sessions: HashMap<String, SessionInfo>) {
    ctx.st.resume.all = all;
    ctx.st.resume.sessions = sessions;
}

/// The session of the highlighted row.
fn highlighted(ctx: &Ctx<'_>) -> Option<(String, SessionInfo)> {
    let sel = ctx.st.selector.as_ref()?;
    let &i = sel.visible().get(sel.selected)?;
    let value = sel.items.get(i)?.value.clone();
    let info = ctx.st.resume.sessions.get(&value)?.clone();
    Some((value, info))
}

/// A key of the open picker: true when it was one of the picker's own
/// actions (Tab, and the `app.session.*` ones).
pub fn key(ctx: &mut Ctx<'_>, key: crossterm::event::KeyEvent) -> bool {
    if key.code == crossterm::event::KeyCode::Tab {
        let scope = if ctx.st.resume.all {
            ResumeScope::Here
        } else {
            ResumeScope::All
        };
        ctx.st.selector = None;
        open_resume(ctx, scope);
        return true;
    }
    let typed = ctx
        .st
        .selector
        .as_ref()
        .is_some_and(|s| !s.filter.is_empty());
    for action in ctx.st.keymap.actions(&key) {
        match action {
            Action::SessionTogglePath => {
                toggle_path(ctx);
                return true;
            }
            Action::SessionToggleNamedFilter => {
                toggle_named(ctx);
                return true;
            }
            Action::SessionToggleSort => {
                ctx.st.resume.recent = !ctx.st.resume.recent;
                let scope = ctx.st.resume.scope();
                open_resume(ctx, scope);
                return true;
            }
            Action::SessionRename => {
                ask_name(ctx);
                return true;
            }
            Action::SessionDelete => {
                ask_delete(ctx);
                return true;
            }
            Action::SessionDeleteNoninvasive if !typed => {
                ask_delete(ctx);
                return true;
            }
            _ => {}
        }
    }
    false
}

fn toggle_path(ctx: &mut Ctx<'_>) {
    let state = &mut ctx.st.resume;
    state.show_path = !state.show_path;
    let here = ctx.app.cwd().display().to_string();
    if let Some(sel) = ctx.st.selector.as_mut() {
        for item in &mut sel.items {
            if let Some(s) = state.sessions.get(&item.value) {
                item.detail = detail(s, state.all, &here, state.show_path);
            }
        }
    }
}

fn toggle_named(ctx: &mut Ctx<'_>) {
    let state = &mut ctx.st.resume;
    state.named_only = !state.named_only;
    if let Some(sel) = ctx.st.selector.as_mut() {
        sel.only_class = if state.named_only {
            resume_class::NAMED
        } else {
            0
        };
        sel.title = title(state.all, state.recent, state.named_only, None);
        sel.selected = 0;
    }
}

/// Asks the highlighted session's new name.
fn ask_name(ctx: &mut Ctx<'_>) {
    let Some((value, info)) = highlighted(ctx) else {
        return;
    };
    let note = SelectItem::new(
        format!("Renaming “{}”", truncate(&info.title, TITLE_CHARS)),
        "an empty name clears it",
        "",
    );
    ctx.st.selector = Some(Selector::prompt(
        "Rename session",
        SelectorKind::ResumeRename(value),
        "name",
        info.name.as_deref().unwrap_or(""),
        vec![note],
    ));
}

/// Asks whether to delete the highlighted session (never the current one).
fn ask_delete(ctx: &mut Ctx<'_>) {
    let Some((value, info)) = highlighted(ctx) else {
        return;
    };
    if info.id == ctx.app.session_id() {
        let state = &ctx.st.resume;
        let note = title(
            state.all,
            state.recent,
            state.named_only,
            Some("the current session cannot be deleted"),
        );
        if let Some(sel) = ctx.st.selector.as_mut() {
            sel.title = note;
        }
        return;
    }
    let what = match &info.path {
        Some(path) => format!("its file {} is removed", path.display()),
        None => "it is removed from the database".to_string(),
    };
    let mut confirm = Selector::new(
        format!("Delete “{}”?", truncate(&info.title, TITLE_CHARS)),
        SelectorKind::ResumeDelete,
        vec![
            SelectItem::new("Delete", what, format!("delete\t{value}")),
            SelectItem::new("Keep it", "", "keep"),
        ],
    );
    // Keeping is what Enter does unless the user moves.
    confirm.selected = 1;
    ctx.st.selector = Some(confirm);
}

/// The answer to [`ask_delete`]: deletes, then lists the sessions again.
pub fn delete_chosen(ctx: &mut Ctx<'_>, value: &str) {
    let scope = ctx.st.resume.scope();
    let target = value
        .strip_prefix("delete\t")
        .and_then(|v| ctx.st.resume.sessions.get(v).cloned());
    let (Some(info), Some(mut l)) = (target, listing(ctx, scope)) else {
        open_resume(ctx, scope);
        return;
    };
    let store = l.store.clone();
    ctx.spawn(async move {
        let (cwd, id) = (info.cwd.clone(), info.id.clone());
        let done = tokio::task::spawn_blocking(move || store.delete(&cwd, &id)).await;
        let failed = match done {
            Ok(Ok(())) => {
                l.note = Some(format!(
                    "deleted “{}”",
                    truncate(&info.title, TITLE_CHARS / 2)
                ));
                None
            }
            Ok(Err(e)) => Some(e.to_string()),
            Err(e) => Some(e.to_string()),
        };
        let mut out = list(l).await;
        if let Some(e) = failed {
            out.push(UiMsg::Notice(
                Level::Error,
                format!("Cannot delete the session: {e}"),
            ));
        }
        out
    });
}

/// The answer to [`ask_name`]: names the session (the current one as
/// `/name` does), then lists the sessions again.
pub fn rename_chosen(ctx: &mut Ctx<'_>, value: &str, name: &str) {
    let scope = ctx.st.resume.scope();
    let name = name.trim().to_string();
    let target = ctx.st.resume.sessions.get(value).cloned();
    let (Some(info), Some(l)) = (target, listing(ctx, scope)) else {
        open_resume(ctx, scope);
        return;
    };
    if info.id == ctx.app.session_id() {
        if let Err(e) = ctx.app.set_session_name(&name) {
            ctx.st
                .notice(Level::Error, format!("Cannot rename the session: {e}"));
        }
        ctx.spawn(list(l));
        return;
    }
    let store = l.store.clone();
    ctx.spawn(async move {
        let renamed = tokio::task::spawn_blocking(move || {
            store
                .open(&info.cwd, &info.id)
                .and_then(|mut session| session.set_name(&name))
        })
        .await;
        let mut out = list(l).await;
        match renamed {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => out.push(UiMsg::Notice(
                Level::Error,
                format!("Cannot rename the session: {e}"),
            )),
            Err(e) => out.push(UiMsg::Notice(
                Level::Error,
                format!("Cannot rename the session: {e}"),
            )),
        }
        out
    });
}

/// The rename or delete question was cancelled: back to the picker.
pub fn back_to_picker(ctx: &mut Ctx<'_>) {
    let scope = ctx.st.resume.scope();
    open_resume(ctx, scope);
}

#[cfg(test)]
#[path = "resume_tests.rs"]
mod tests;

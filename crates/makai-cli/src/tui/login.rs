//! `/login PROVIDER` for the providers with a sign-in (Claude Pro/Max,
//! ChatGPT, GitHub Copilot): the same flow as `makai auth login`, inside the
//! UI. The sign-in URL is shown (Ctrl+X copies it); the login finishes when
//! the browser comes back to makai, or when the user pastes the code (or the
//! final URL) into the editor and presses Enter. Esc cancels it.

use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::event_loop::{Ctx, UiMsg};
use super::transcript::Level;
use crate::auth::{LoginUi, login};

/// A login waiting for the user.
#[derive(Debug)]
pub struct PendingLogin {
    /// The provider signed in to.
    pub provider: String,
    /// Where a pasted code goes.
    pasted: mpsc::Sender<String>,
    /// The sign-in URL, once shown.
    pub url: Option<String>,
    /// The login's task.
    task: AbortHandle,
}

/// Starts the login of `provider`; its messages become notices.
pub fn start(ctx: &mut Ctx<'_>, provider: &str) {
    if let Some(pending) = &ctx.st.login {
        let text = format!(
            "A login to {} is waiting: finish it or press Esc first",
            pending.provider
        );
        ctx.st.notice(Level::Warning, text);
        return;
    }
    let Some(home) = makai_coding::makai_home() else {
        ctx.st.notice(
            Level::Error,
            "no home folder for auth.json; set MAKAI_HOME to a folder",
        );
        return;
    };
    let path = makai_auth::AuthStore::file_in(&home);
    let (pasted_tx, pasted_rx) = mpsc::channel(1);
    let say_tx = ctx.tx.clone();
    let url_tx = ctx.tx.clone();
    let ui = LoginUi {
        // A message the closed UI cannot show is not needed any more.
        say: Box::new(move |text| {
            let _ = say_tx.send(UiMsg::Notice(Level::Info, text));
        }),
        sign_in_url: Box::new(move |url| {
            let _ = url_tx.send(UiMsg::LoginUrl(url.to_string()));
        }),
        pasted: pasted_rx,
        open_browser: true,
    };
    let done_tx = ctx.tx.clone();
    let name = provider.to_string();
    let task = tokio::spawn(async move {
        let msg = match login(&name, &path, ui).await {
            Ok(text) => UiMsg::LoginEnded(Level::Info, text),
            Err(e) => UiMsg::LoginEnded(Level::Error, format!("Login to {name} failed: {e}")),
        };
        // As above: a UI that has ended needs no result.
        let _ = done_tx.send(msg);
    });
    ctx.st.login = Some(PendingLogin {
        provider: provider.to_string(),
        pasted: pasted_tx,
        url: None,
        task: task.abort_handle(),
    });
    ctx.st.set_status(
        Level::Info,
        "Logging in: paste the code and press Enter if the browser cannot come back · Ctrl+X copies the URL · Esc cancels",
    );
}

/// Enter while a login waits: the editor's text is the pasted code. True
/// when it was taken.
pub fn take_pasted(ctx: &mut Ctx<'_>, text: &str) -> bool {
    let Some(pending) = &ctx.st.login else {
        return false;
    };
    if pending.pasted.try_send(text.trim().to_string()).is_err() {
        ctx.st
            .set_status(Level::Warning, "The login already has a code; wait for it");
        return true;
    }
    ctx.st.editor.clear();
    ctx.st.set_status(Level::Info, "Checking the code...");
    true
}

/// Esc while a login waits: cancels it. True when there was one.
pub fn cancel(ctx: &mut Ctx<'_>) -> bool {
    let Some(pending) = ctx.st.login.take() else {
        return false;
    };
    pending.task.abort();
    ctx.st.notice(
        Level::Warning,
        format!("Login to {} cancelled.", pending.provider),
    );
    true
}

/// Ctrl+X while a login waits: copies the sign-in URL. True when there was one.
pub fn copy_url(ctx: &mut Ctx<'_>) -> bool {
    let Some(url) = ctx.st.login.as_ref().and_then(|l| l.url.clone()) else {
        return false;
    };
    super::config_commands::copy_text(ctx, &url, "the sign-in URL");
    true
}

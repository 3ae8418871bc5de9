//! Session switching and the entry tree: `new_session`, `switch_session`,
//! `fork`, `get_fork_messages`, `get_entries`, `get_tree`.

use std::path::{Path, PathBuf};

use makai_coding::Session;
use makai_coding::session::{SessionEntry, SessionHeader};
use makai_rpc::TreeNode;

use super::AppSession;
use crate::error::CliError;
use makai_agent::parts_text as user_text;

fn session_error(e: impl std::fmt::Display) -> CliError {
    CliError::failed(e.to_string())
}

impl AppSession {
    /// Stops any run and makes `session` the current one, loading its transcript,
    /// model and thinking level.
    async fn replace_session(&self, session: Session, restore_model: bool) {
        self.abort().await;
        let ctx = session.context();
        // Requests (prompt caching, session affinity) and tool calls name
        // the session they belong to.
        let id = session.id().to_string();
        self.agent()
            .update_config(|config| config.options.session_id = Some(id));
        *self.session().lock() = session;
        self.inner.restore_ledger();
        self.agent().clear_all_queues();
        self.load_session_messages();
        if restore_model
            && let Some(m) = &ctx.model
            && let Some(model) = self
                .registry()
                .models()
                .iter()
                .find(|x| x.provider == m.provider && x.id == m.model_id)
        {
            self.agent().set_model(model.clone());
        }
        if restore_model && let Some(level) = ctx.thinking() {
            self.agent().set_thinking_level(level);
        }
    }

    /// Takes on what a client set on `previous` for its runs: the queue
    /// modes, the steering delivery, automatic compaction and retry, and the
    /// limits in force. A session opened in another directory is built
    /// afresh and keeps them, as pi keeps them in its settings across a
    /// session switch.
    ///
    /// Errors: a limit of `previous` this session refuses (out of range).
    pub fn carry_settings_from(&self, previous: &AppSession) -> Result<(), CliError> {
        self.set_steering_mode(previous.agent().steering_mode());
        self.set_follow_up_mode(previous.agent().follow_up_mode());
        self.set_steering_delivery(previous.agent().steering_behavior());
        self.set_auto_compaction(previous.auto_compaction());
        self.set_auto_retry(previous.auto_retry());
        self.set_limits(previous.limits()).map(|_| ())
    }

    /// The folder of the current session's file (`None` when the session is
    /// in memory or in a database).
    fn session_dir(&self) -> Option<PathBuf> {
        self.session_file()
            .and_then(|p| p.parent().map(Path::to_path_buf))
    }

    /// Starts a new, empty session (in the same folder, or the same store).
    /// `parent` is recorded in its header.
    pub async fn new_session(&self, parent: Option<&str>) -> Result<(), CliError> {
        let cwd = self.cwd().display().to_string();
        let mut header = SessionHeader::new(makai_coding::session::new_session_id(), cwd.clone());
        header.parent_session = parent.map(str::to_string);
        let session = match (self.session_dir(), self.shared().store.as_ref()) {
            (Some(dir), _) => match parent {
                None => Session::create(&dir, cwd),
                Some(_) => {
                    let path = dir.join(makai_coding::session::session_file_name(&header));
                    std::fs::create_dir_all(&dir).map_err(session_error)?;
                    let line = serde_json::to_string(&header).map_err(session_error)?;
                    std::fs::write(&path, format!("{line}\n")).map_err(session_error)?;
                    Session::open(&path).map_err(session_error)?
                }
            },
            (None, Some(store)) => store.create_with(header),
            (None, None) => Session::in_memory(cwd),
        };
        self.replace_session(session, false).await;
        Ok(())
    }

    /// Opens another session and makes it current: a session file, or (with a
    /// store) a session id or unique id prefix.
    pub async fn switch_session(&self, query: &str) -> Result<(), CliError> {
        let p = Path::new(query);
        let session = if p.is_file() {
            Session::open(p).map_err(session_error)?
        } else if let Some(store) = self.shared().store.clone() {
            let cwd = self.cwd().display().to_string();
            store.open(&cwd, query).map_err(session_error)?
        } else {
            return Err(CliError::failed(format!("Session file not found: {query}")));
        };
        self.replace_session(session, true).await;
        Ok(())
    }

    /// Copies the current branch of the session file at `path` into a new
    /// session of this directory, stored next to the current one (like
    /// `/new`; `parentSession` names the file), and makes it current: pi's
    /// "Fork" for an imported session whose directory is gone.
    pub async fn fork_file(&self, path: &str) -> Result<(), CliError> {
        let source = Session::open(path).map_err(session_error)?;
        let Some(leaf) = source.leaf_id().map(str::to_string) else {
            return Err(CliError::failed(format!(
                "session {} has no entries to fork",
                source.id()
            )));
        };
        let header = SessionHeader::new(
            makai_coding::session::new_session_id(),
            self.cwd().display().to_string(),
        );
        let forked = match (self.session_dir(), self.shared().store.clone()) {
            (Some(dir), _) => source.fork_into(
                &leaf,
                header,
                &makai_coding::session::JsonlStore::flat(dir),
            ),
            (None, Some(store)) => source.fork_into(&leaf, header, store.as_ref()),
            (None, None) => {
                return Err(CliError::failed(
                    "sessions are not saved in this run (--no-session): there is nowhere to fork into",
                ));
            }
        }
        .map_err(session_error)?;
        self.replace_session(forked, true).await;
        Ok(())
    }

    /// The user messages of the session, for choosing a fork point.
    pub fn fork_messages(&self) -> Vec<(String, String)> {
        let s = self.session().lock();
        s.entries()
            .iter()
            .filter_map(|e| match e {
                SessionEntry::Message(m) => {
                    let text = user_text(&m.message.as_user()?.content);
                    (!text.is_empty()).then(|| (m.id.clone(), text))
                }
                _ => None,
            })
            .collect()
    }

    /// Forks before the user message `entry_id`: a new session holding the path
    /// up to that message's parent. Returns the message's text (to edit and resend).
    pub async fn fork(&self, entry_id: &str) -> Result<String, CliError> {
        let (text, parent, persisted) = {
            let s = self.session().lock();
            let entry = s
                .get(entry_id)
                .ok_or_else(|| CliError::failed("Invalid entry ID for forking"))?;
            let SessionEntry::Message(m) = entry else {
                return Err(CliError::failed("Invalid entry ID for forking"));
            };
            let Some(u) = m.message.as_user() else {
                return Err(CliError::failed("Invalid entry ID for forking"));
            };
            (user_text(&u.content), m.parent_id.clone(), s.location())
        };
        match (parent, persisted) {
            (None, parent_file) => self.new_session(parent_file.as_deref()).await?,
            (Some(parent), Some(_)) => {
                let forked = self
                    .session()
                    .lock()
                    .fork_here(&parent)
                    .map_err(session_error)?;
                self.replace_session(forked, true).await;
            }
            (Some(parent), None) => {
                self.abort().await;
                self.session()
                    .lock()
                    .branch_from(&parent)
                    .map_err(session_error)?;
                self.load_session_messages();
            }
        }
        Ok(text)
    }

    /// Copies the current branch into a new session file and makes it current
    /// (pi's `clone`). In memory, the session stays as it is.
    pub async fn clone_branch(&self) -> Result<(), CliError> {
        let forked = {
            let s = self.session().lock();
            match (s.leaf_id(), s.location()) {
                (Some(leaf), Some(_)) => Some(s.fork_here(leaf).map_err(session_error)?),
                _ => None,
            }
        };
        if let Some(f) = forked {
            self.replace_session(f, true).await;
        }
        Ok(())
    }

    /// Moves the leaf to `entry_id` in the same file (tree navigation).
    pub async fn navigate_to(&self, entry_id: &str) -> Result<(), CliError> {
        self.abort().await;
        self.session()
            .lock()
            .branch_from(entry_id)
            .map_err(session_error)?;
        self.load_session_messages();
        Ok(())
    }

    /// What moving the leaf to `target` (`None`: before the first entry)
    /// would leave behind (pi's branch summarization summarizes it).
    pub fn branch_left(&self, target: Option<&str>) -> makai_coding::session::BranchLeft {
        self.session().lock().tree().branch_left(target)
    }

    /// Moves the leaf to `target` (`None`: before the first entry) after
    /// summarizing the branch it leaves (pi's branch summarization; the
    /// summary, with the files read and changed, becomes a
    /// `branch_summary` entry there and the new leaf). `instructions` tell
    /// the summary what to focus on. [`AppSession::abort`] cancels the
    /// summary call; nothing moves then, nor when it fails.
    pub async fn navigate_with_summary(
        &self,
        target: Option<&str>,
        instructions: Option<&str>,
    ) -> Result<(), CliError> {
        self.abort().await;
        let left = self.branch_left(target);
        if left.messages.is_empty() {
            return self.move_leaf(target).await;
        }
        let cancel = makai_agent::CancellationToken::new();
        super::lock(&self.inner.state).compaction_cancel = Some(cancel.clone());
        let summary = self
            .inner
            .agent
            .summarize_branch(&left.messages, &left.carried_files, instructions, cancel)
            .await;
        super::lock(&self.inner.state).compaction_cancel = None;
        let summary = summary.map_err(|e| match e {
            makai_agent::AgentError::Compaction(makai_agent::CompactionError::Aborted) => {
                CliError::failed("the branch summary was cancelled")
            }
            makai_agent::AgentError::Compaction(makai_agent::CompactionError::Failed(why)) => {
                CliError::failed(format!("the branch was not summarized: {why}"))
            }
            other => CliError::failed(format!("the branch was not summarized: {other}")),
        })?;
        let details = serde_json::json!({
            "readFiles": summary.read_files,
            "modifiedFiles": summary.modified_files,
        });
        self.session()
            .lock()
            .branch_with_summary(target, summary.summary, Some(details), Some(summary.usage))
            .map_err(session_error)?;
        self.load_session_messages();
        Ok(())
    }

    /// Moves the leaf to `target` (`None`: before the first entry).
    pub async fn move_leaf(&self, target: Option<&str>) -> Result<(), CliError> {
        match target {
            Some(id) => self.navigate_to(id).await,
            None => {
                self.abort().await;
                self.session().lock().reset_leaf();
                self.load_session_messages();
                Ok(())
            }
        }
    }

    /// Entries in append order, optionally only those after `since`; and the leaf id.
    pub fn entries(
        &self,
        since: Option<&str>,
    ) -> Result<(Vec<SessionEntry>, Option<String>), CliError> {
        let s = self.session().lock();
        let all = s.entries();
        let start = match since {
            None => 0,
            Some(id) => {
                all.iter().position(|e| e.id() == id).ok_or_else(|| {
                    CliError::failed(format!("Entry not found: {}", quote(id, 200)))
                })? + 1
            }
        };
        Ok((all[start..].to_vec(), s.leaf_id().map(str::to_string)))
    }

    /// The entry tree (roots first; orphans are roots too) and the leaf id.
    pub fn tree(&self) -> (Vec<TreeNode>, Option<String>) {
        let s = self.session().lock();
        let view = s.view();
        // Iterative post-order: a long session is a deep chain.
        let mut built: Vec<Option<TreeNode>> = vec![None; view.nodes.len()];
        let mut stack: Vec<(usize, bool)> = view.roots.iter().rev().map(|&r| (r, false)).collect();
        let mut visited = vec![false; view.nodes.len()];
        while let Some((i, expanded)) = stack.pop() {
            let n = &view.nodes[i];
            if expanded {
                built[i] = Some(TreeNode {
                    entry: n.entry.clone(),
                    children: n.children.iter().filter_map(|&c| built[c].take()).collect(),
                    label: n.label.map(str::to_string),
                });
            } else if !std::mem::replace(&mut visited[i], true) {
                stack.push((i, true));
                stack.extend(n.children.iter().rev().map(|&c| (c, false)));
            }
        }
        let roots = view.roots.iter().filter_map(|&r| built[r].take()).collect();
        (roots, s.leaf_id().map(str::to_string))
    }
}

/// `text` for an error message: whole when short, else its head and length.
fn quote(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
    }
}

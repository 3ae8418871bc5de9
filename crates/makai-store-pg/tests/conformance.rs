//! Store conformance: one suite, run on both stores (the JSONL files and a
//! real PostgreSQL). Append and reopen, branches, compaction entries,
//! concurrent writers, torn writes / killed connections, and the
//! export / import round trip of every fixture session, byte for byte,
//! across the two stores.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use makai_ai::{
    AssistantContent, AssistantMessage, Message, TextContent, UserContent, UserMessage,
};
use makai_coding::session::{
    CompactionRecord, JsonlStore, Session, SessionEntry, SessionStore, StoredSession, check_entries,
};
use makai_store_pg::PgStore;
use makai_store_pg::testing::database_or_skip;

const CWD: &str = "/home/user/project";

/// A store under test and how to damage it.
trait Fixture {
    fn name(&self) -> &'static str;
    fn store(&self) -> Arc<dyn SessionStore>;
    /// A second, independent handle on the same store (another process).
    fn other(&self) -> Arc<dyn SessionStore>;
    /// Leaves the remains of an append that died half-way in `session`.
    fn tear(&self, session: &Session);
}

struct Files {
    dir: tempfile::TempDir,
}

impl Fixture for Files {
    fn name(&self) -> &'static str {
        "jsonl"
    }
    fn store(&self) -> Arc<dyn SessionStore> {
        Arc::new(JsonlStore::new(self.dir.path()))
    }
    fn other(&self) -> Arc<dyn SessionStore> {
        self.store()
    }
    fn tear(&self, session: &Session) {
        // A process killed inside `write`: a line without its newline.
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(session.path().unwrap())
            .unwrap();
        f.write_all(br#"{"type":"message","id":"torn0001","parentId":"#)
            .unwrap();
    }
}

struct Postgres {
    url: String,
    store: Arc<PgStore>,
}

impl Fixture for Postgres {
    fn name(&self) -> &'static str {
        "postgres"
    }
    fn store(&self) -> Arc<dyn SessionStore> {
        self.store.clone()
    }
    fn other(&self) -> Arc<dyn SessionStore> {
        Arc::new(PgStore::connect(&self.url).unwrap())
    }
    fn tear(&self, session: &Session) {
        // A writer whose connection is killed in the middle of its append
        // transaction: its rows were inserted, never committed.
        let url = self.url.clone();
        let id = session.id().to_string();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let (writer, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                    .await
                    .unwrap();
                let driver = tokio::spawn(conn);
                let (killer, conn2) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                    .await
                    .unwrap();
                tokio::spawn(conn2);
                let pid: i32 = writer
                    .query_one("SELECT pg_backend_pid()", &[])
                    .await
                    .unwrap()
                    .get(0);
                writer
                    .batch_execute(&format!(
                        "BEGIN; \
                         SELECT last_seq FROM makai_sessions WHERE id = '{id}' FOR UPDATE; \
                         INSERT INTO makai_entries (session_id, seq, entry_id, parent_id, kind, line) \
                         SELECT '{id}', last_seq + 1, 'torn0001', NULL, 'message', '{{}}' \
                         FROM makai_sessions WHERE id = '{id}'; \
                         UPDATE makai_sessions SET last_seq = last_seq + 1 WHERE id = '{id}';"
                    ))
                    .await
                    .unwrap();
                killer
                    .query_one("SELECT pg_terminate_backend($1)", &[&pid])
                    .await
                    .unwrap();
                let ended = driver.await.unwrap();
                assert!(ended.is_err(), "the killed connection ended cleanly: {ended:?}");
            });
        })
        .join()
        .unwrap();
    }
}

fn fixtures() -> Vec<Box<dyn Fixture>> {
    let mut out: Vec<Box<dyn Fixture>> = vec![Box::new(Files {
        dir: tempfile::tempdir().unwrap(),
    })];
    if let Some(url) = database_or_skip("store conformance on PostgreSQL") {
        let store = Arc::new(PgStore::connect(&url).unwrap());
        out.push(Box::new(Postgres { url, store }));
    }
    out
}

fn assistant(text: &str) -> AssistantMessage {
    AssistantMessage {
        content: vec![AssistantContent::Text(TextContent {
            text: text.into(),
            text_signature: None,
        })],
        ..Default::default()
    }
}

fn texts(s: &Session) -> Vec<String> {
    s.path_to_leaf()
        .iter()
        .map(|m| match m {
            Message::User(u) => u
                .content
                .iter()
                .filter_map(|c| match c {
                    UserContent::Text(t) => Some(t.text.clone()),
                    _ => None,
                })
                .collect(),
            Message::Assistant(a) => a.text(),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn appended_entries_survive_reopening_and_are_listed() {
    for fx in fixtures() {
        let store = fx.store();
        let mut s = store.create(CWD);
        s.append_model_change("openai", "gpt-5").unwrap();
        s.append_message(UserMessage::text("first question"))
            .unwrap();
        s.append_message(assistant("first answer")).unwrap();
        s.set_name("Named session").unwrap();
        let again = store.open(CWD, s.id()).unwrap();
        assert_eq!(again.entries(), s.entries(), "{}", fx.name());
        assert_eq!(again.header(), s.header(), "{}", fx.name());
        assert_eq!(again.leaf_id(), s.leaf_id(), "{}", fx.name());
        // By a unique prefix too.
        let prefix = &s.id()[..s.id().len() - 4];
        assert_eq!(
            store.open(CWD, prefix).unwrap().id(),
            s.id(),
            "{}",
            fx.name()
        );
        let list = store.list(CWD).unwrap();
        assert_eq!(list.len(), 1, "{}: {list:?}", fx.name());
        assert_eq!(list[0].id, s.id());
        assert_eq!(list[0].title, "Named session");
        assert_eq!(list[0].first_message, "first question");
        assert_eq!(list[0].message_count, 2);
        assert_eq!(list[0].entry_count, 4);
        assert!(
            store.list("/elsewhere").unwrap().is_empty(),
            "{}",
            fx.name()
        );
        assert_eq!(store.list_all().unwrap().len(), 1, "{}", fx.name());
        let latest = store.resume_latest(CWD).unwrap().unwrap();
        assert_eq!(latest.id(), s.id(), "{}", fx.name());
        // Unknown ids say so.
        let e = store.open(CWD, "no-such-session").unwrap_err();
        assert!(
            e.to_string().contains("no-such-session"),
            "{}: {e}",
            fx.name()
        );
        // Deleting removes it.
        store.delete(CWD, s.id()).unwrap();
        assert!(store.open(CWD, s.id()).is_err(), "{}", fx.name());
        assert!(store.list(CWD).unwrap().is_empty(), "{}", fx.name());
    }
}

#[test]
fn branches_keep_their_shape_after_reopening() {
    for fx in fixtures() {
        let store = fx.store();
        let mut s = store.create(CWD);
        let a = s.append_message(UserMessage::text("a")).unwrap();
        let b = s.append_message(assistant("b")).unwrap();
        s.append_message(UserMessage::text("c")).unwrap();
        s.branch_from(&a).unwrap();
        let d = s.append_message(assistant("d")).unwrap();
        let summary = s
            .branch_with_summary(Some(&b), "left the d branch", None, None)
            .unwrap();
        let again = store.open(CWD, s.id()).unwrap();
        assert_eq!(again.leaf_id(), Some(summary.as_str()), "{}", fx.name());
        let children: Vec<&str> = again.children(&a).iter().map(|e| e.id()).collect();
        assert_eq!(children, vec![b.as_str(), d.as_str()], "{}", fx.name());
        assert_eq!(texts(&again), texts(&s), "{}", fx.name());
        // Forks go to the same store.
        let fork = again.fork_here(&d).unwrap();
        let forked = store.open(CWD, fork.id()).unwrap();
        assert_eq!(texts(&forked), vec!["a", "d"], "{}", fx.name());
        assert!(forked.header().parent_session.is_some(), "{}", fx.name());
    }
}

#[test]
fn compaction_entries_rebuild_the_same_context() {
    for fx in fixtures() {
        let store = fx.store();
        let mut s = store.create(CWD);
        s.append_message(UserMessage::text("old question")).unwrap();
        s.append_message(assistant("old answer")).unwrap();
        let kept = s
            .append_message(UserMessage::text("kept question"))
            .unwrap();
        s.append_message(assistant("kept answer")).unwrap();
        s.append_compaction(CompactionRecord {
            summary: "the user asked an old question".into(),
            first_kept_entry_id: Some(kept),
            tokens_before: 5000,
            ..Default::default()
        })
        .unwrap();
        s.append_message(UserMessage::text("new question")).unwrap();
        // A retain-none compaction too.
        s.append_compaction(CompactionRecord {
            summary: "everything so far".into(),
            first_kept_entry_id: None,
            tokens_before: 6000,
            ..Default::default()
        })
        .unwrap();
        s.append_message(UserMessage::text("after retain-none"))
            .unwrap();
        let again = store.open(CWD, s.id()).unwrap();
        assert_eq!(
            again.context().messages,
            s.context().messages,
            "{}",
            fx.name()
        );
        let kinds: Vec<&str> = again.entries().iter().map(SessionEntry::kind).collect();
        assert_eq!(kinds.iter().filter(|k| **k == "compaction").count(), 2);
    }
}

#[test]
fn concurrent_writers_never_interleave_lose_or_repeat_entries() {
    const WRITERS: usize = 4;
    const EACH: usize = 25;
    for fx in fixtures() {
        let store = fx.store();
        let mut s = store.create(CWD);
        s.append_message(UserMessage::text("start")).unwrap();
        let id = s.id().to_string();
        let barrier = Arc::new(Barrier::new(WRITERS));
        let handles: Vec<_> = (0..WRITERS)
            .map(|w| {
                // Each writer is its own store handle: another process.
                let store = fx.other();
                let id = id.clone();
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    let mut mine = store.open(CWD, &id).unwrap();
                    barrier.wait();
                    for i in 0..EACH {
                        // A turn is two entries in one append: they stay together.
                        mine.append_all(vec![
                            makai_coding::session::NewEntry::Message(
                                UserMessage::text(format!("w{w} q{i}")).into(),
                            ),
                            makai_coding::session::NewEntry::Message(
                                assistant(&format!("w{w} a{i}")).into(),
                            ),
                        ])
                        .unwrap();
                    }
                    mine.entries().len()
                })
            })
            .collect();
        for h in handles {
            let seen = h.join().unwrap();
            assert!(seen > 2 * EACH, "{}", fx.name());
        }
        let all = store.open(CWD, &id).unwrap();
        let entries = all.entries();
        assert_eq!(entries.len(), 1 + 2 * WRITERS * EACH, "{}", fx.name());
        let positions: Vec<usize> = (1..=entries.len()).collect();
        let check = check_entries(entries, &positions);
        assert!(check.repeated.is_empty(), "{}: {check:?}", fx.name());
        assert!(check.broken.is_empty(), "{}: {check:?}", fx.name());
        // Every question is directly followed by its own answer.
        for pair in entries[1..].chunks(2) {
            let q = pair[0].message().unwrap().text();
            let a = pair[1].message().unwrap().text();
            assert_eq!(
                q.replace('q', "a"),
                a,
                "{}: a turn was interleaved",
                fx.name()
            );
            assert_eq!(pair[1].parent_id(), Some(pair[0].id()), "{}", fx.name());
        }
    }
}

#[test]
fn a_torn_write_or_killed_connection_leaves_the_committed_entries() {
    for fx in fixtures() {
        let store = fx.store();
        let mut s = store.create(CWD);
        s.append_message(UserMessage::text("one")).unwrap();
        s.append_message(assistant("two")).unwrap();
        let before = s.entries().to_vec();
        fx.tear(&s);
        let mut again = store.open(CWD, s.id()).unwrap();
        assert_eq!(again.entries(), before.as_slice(), "{}", fx.name());
        // The session goes on.
        again.append_message(UserMessage::text("three")).unwrap();
        let last = store.open(CWD, s.id()).unwrap();
        assert_eq!(texts(&last), vec!["one", "two", "three"], "{}", fx.name());
        assert!(last.get("torn0001").is_none(), "{}", fx.name());
    }
}

fn fixture_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{files:?}");
    files
}

#[test]
fn every_fixture_session_round_trips_byte_for_byte_through_every_store() {
    let stores = fixtures();
    for file in fixture_files() {
        let bytes = std::fs::read(&file).unwrap();
        let original = StoredSession::from_jsonl(&file, &bytes).unwrap();
        let direct = Session::open(&file).unwrap();
        // Through each store: import, export, same bytes; open, same session.
        for fx in &stores {
            let store = fx.store();
            store.import(&original).unwrap();
            let exported = store.export(CWD, &original.header.id).unwrap();
            assert_eq!(
                exported.to_jsonl().as_bytes(),
                bytes.as_slice(),
                "{} through {}",
                file.display(),
                fx.name()
            );
            let opened = store.open(CWD, &original.header.id).unwrap();
            assert_eq!(opened.entries(), direct.entries(), "{}", fx.name());
            assert_eq!(opened.context().messages, direct.context().messages);
            // A second import of the same session is refused.
            let e = store.import(&original).unwrap_err();
            assert!(e.to_string().contains("already has session"), "{e}");
        }
        // And across: files to PostgreSQL and back.
        if let [files, db] = stores.as_slice() {
            let via = files.store().export(CWD, &original.header.id).unwrap();
            db.store().delete(CWD, &original.header.id).unwrap();
            db.store().import(&via).unwrap();
            let back = db.store().export(CWD, &original.header.id).unwrap();
            assert_eq!(back.to_jsonl().as_bytes(), bytes.as_slice());
        }
    }
}

/// A sub-agent's session written after its parent's last entry is not the
/// session `-c` continues, in either store.
#[test]
fn the_latest_session_to_continue_is_never_a_sub_agent_s() {
    use makai_coding::session::SharedSession;
    use makai_coding::subagent::{ChildSessions, LinkedSessions};
    for fx in fixtures() {
        let store = fx.store();
        let mut parent = store.create(CWD);
        parent
            .append_message(UserMessage::text("delegate this"))
            .unwrap();
        let parent_id = parent.id().to_string();
        let shared = SharedSession::new(parent);
        let mut child = LinkedSessions(shared.clone()).create("worker", "call_1");
        std::thread::sleep(std::time::Duration::from_millis(20));
        child
            .append_message(UserMessage::text("the child's work"))
            .unwrap();
        let latest = store.resume_latest(CWD).unwrap().unwrap();
        assert_eq!(latest.id(), parent_id, "{}", fx.name());
        assert_eq!(
            store.list(CWD).unwrap().len(),
            2,
            "{}: the child is still listed",
            fx.name()
        );
    }
}

/// Regression: a resumed session counted an unanswered sub-agent's spending
/// only when the link named a file, so on PostgreSQL a child that was still
/// running when the process ended cost nothing against the budget.
#[test]
fn resumed_spending_counts_an_unanswered_sub_agent_in_either_store() {
    use makai_coding::session::{SharedSession, session_spending};
    use makai_coding::subagent::{ChildSessions, LinkedSessions};
    let spent = |output: u64| {
        let mut a = assistant("work");
        a.usage.output = output;
        a.usage.input = output * 2;
        a
    };
    for fx in fixtures() {
        let store = fx.store();
        let mut parent = store.create(CWD);
        parent
            .append_message(UserMessage::text("delegate this"))
            .unwrap();
        parent.append_message(spent(10)).unwrap();
        let parent_id = parent.id().to_string();
        let shared = SharedSession::new(parent);
        // The child ran two requests; its `task` call never got its result.
        let mut child = LinkedSessions(shared.clone()).create("worker", "call_1");
        child
            .append_message(UserMessage::text("the child's work"))
            .unwrap();
        child.append_message(spent(7)).unwrap();
        child.append_message(spent(5)).unwrap();
        drop(shared);

        let resumed = store.open(CWD, &parent_id).unwrap();
        let total = session_spending(&resumed);
        assert_eq!(total.output, 22, "{}: {total:?}", fx.name());
        assert_eq!(total.input, 44, "{}: {total:?}", fx.name());
        // From another handle on the store (another instance) too.
        let elsewhere = fx.other().open(CWD, &parent_id).unwrap();
        assert_eq!(session_spending(&elsewhere).output, 22, "{}", fx.name());
    }
}

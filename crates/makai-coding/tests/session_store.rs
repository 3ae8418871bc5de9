//! The session store: layout, listing, resume, open by id, delete.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, SystemTime};

use makai_ai::{AssistantMessage, UserMessage};
use makai_coding::session::{JsonlStore, SESSION_DIR_ENV, SessionError, encode_cwd};

fn set_mtime(path: &Path, secs_ago: u64) {
    let f = std::fs::File::options().append(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
        .unwrap();
}

#[test]
fn sessions_go_under_the_encoded_working_directory() {
    let root = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(root.path());
    let mut s = store.create("/home/user/project");
    s.append_message(UserMessage::text("hi")).unwrap();
    let path = s.path().unwrap();
    assert_eq!(
        path.parent().unwrap(),
        root.path().join("--home-user-project--")
    );
    assert_eq!(encode_cwd("/home/user/project"), "--home-user-project--");
    let name = path.file_name().unwrap().to_str().unwrap();
    // <2024-12-03T14-00-00-000Z>_<uuid>.jsonl
    assert_eq!(name.len(), 24 + 1 + 36 + 6, "{name}");
    assert_eq!(&name[24..25], "_");
}

#[test]
fn list_shows_title_first_message_time_and_counts_newest_first() {
    let root = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(root.path());
    let cwd = "/w/proj";

    let mut a = store.create(cwd);
    a.append_message(UserMessage::text("Please fix\nthe flaky test"))
        .unwrap();
    a.append_message(AssistantMessage::default()).unwrap();
    a.append_model_change("openai", "gpt-4o").unwrap();
    let mut b = store.create(cwd);
    b.append_message(UserMessage::text("Write docs")).unwrap();
    b.set_name("Docs sprint").unwrap();
    let mut other = store.create("/elsewhere");
    other
        .append_message(UserMessage::text("not listed"))
        .unwrap();
    set_mtime(a.path().unwrap(), 100);
    set_mtime(b.path().unwrap(), 10);

    let list = store.list(cwd).unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].id, b.id());
    assert_eq!(list[0].title, "Docs sprint");
    assert_eq!(list[0].name.as_deref(), Some("Docs sprint"));
    assert_eq!(list[0].first_message, "Write docs");
    assert_eq!(list[1].title, "Please fix the flaky test");
    assert_eq!(list[1].message_count, 2);
    assert_eq!(list[1].entry_count, 3);
    assert_eq!(list[1].cwd, cwd);
    assert!(list[0].modified > list[1].modified);

    assert_eq!(store.list_all().unwrap().len(), 3);
    assert!(store.list("/nobody").unwrap().is_empty());
}

#[test]
fn resume_latest_opens_the_most_recent_session_of_the_directory() {
    let root = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(root.path());
    assert!(store.resume_latest("/w").unwrap().is_none());
    let fresh = store.continue_or_create("/w").unwrap();
    assert!(fresh.entries().is_empty());

    let mut old = store.create("/w");
    old.append_message(UserMessage::text("old")).unwrap();
    let mut new = store.create("/w");
    new.append_message(UserMessage::text("new")).unwrap();
    set_mtime(old.path().unwrap(), 50);
    set_mtime(new.path().unwrap(), 5);
    let resumed = store.resume_latest("/w").unwrap().unwrap();
    assert_eq!(resumed.id(), new.id());
    assert_eq!(resumed.entries(), new.entries());

    // A newer non-session .jsonl file is not picked.
    let junk = store.dir_for("/w").join("notes.jsonl");
    std::fs::write(&junk, "{\"hello\":1}\n").unwrap();
    assert_eq!(store.latest("/w").unwrap().unwrap(), new.path().unwrap());
}

#[test]
fn open_by_id_prefix_full_id_or_path() {
    let root = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(root.path());
    let mut a = store.create("/w");
    a.append_message(UserMessage::text("a")).unwrap();
    let mut b = store.create("/w");
    b.append_message(UserMessage::text("b")).unwrap();
    let mut far = store.create("/other");
    far.append_message(UserMessage::text("far")).unwrap();

    // Full id and path.
    assert_eq!(store.open("/w", a.id()).unwrap().id(), a.id());
    let by_path = store
        .open("/w", b.path().unwrap().to_str().unwrap())
        .unwrap();
    assert_eq!(by_path.id(), b.id());
    // A prefix unique to one session (v7 ids of sessions made together share
    // their time prefix, so the unique part is at the end).
    let unique = &a.id()[..a.id().len() - 1];
    assert_eq!(store.find("/w", unique).unwrap(), a.path().unwrap());
    // Another directory's session is found too.
    assert_eq!(store.open("/w", far.id()).unwrap().id(), far.id());
    // A prefix shared by several is ambiguous and names them.
    let err = store.find("/w", &a.id()[..4]).unwrap_err();
    match err {
        SessionError::Ambiguous { matches, .. } => assert!(matches.len() >= 2),
        other => panic!("expected Ambiguous, got {other}"),
    }
    let err = store.find("/w", "ffffffff-none").unwrap_err();
    assert!(matches!(err, SessionError::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("ffffffff-none"));
}

#[test]
fn delete_removes_session_files_only() {
    let root = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(root.path());
    let mut s = store.create("/w");
    s.append_message(UserMessage::text("bye")).unwrap();
    let path = s.path().unwrap().to_path_buf();
    drop(s);

    let other = root.path().join("important.txt");
    std::fs::write(&other, "keep").unwrap();
    assert!(matches!(
        store.delete(&other),
        Err(SessionError::RefusedDelete { .. })
    ));
    let fake = root.path().join("fake.jsonl");
    std::fs::write(&fake, "{\"type\":\"message\"}\n").unwrap();
    assert!(store.delete(&fake).is_err());
    assert!(fake.exists() && other.exists());

    store.delete(&path).unwrap();
    assert!(!path.exists());
    assert!(store.list("/w").unwrap().is_empty());
}

#[test]
fn store_location_precedence_flag_env_setting_home() {
    let flag = Path::new("/flag");
    let setting = Path::new("/setting");
    let home = Path::new("/home/u/.makai");
    let r =
        |f, e: Option<&str>, s| JsonlStore::resolve(f, e.map(Into::into), s, Some(home)).unwrap();
    assert_eq!(
        r(Some(flag), Some("/env"), Some(setting)),
        JsonlStore::flat("/flag")
    );
    assert_eq!(
        r(None, Some("/env"), Some(setting)),
        JsonlStore::flat("/env")
    );
    assert_eq!(
        r(None, Some(""), Some(setting)),
        JsonlStore::flat("/setting")
    );
    assert_eq!(
        r(None, None, None),
        JsonlStore::new("/home/u/.makai/sessions")
    );
    assert!(matches!(
        JsonlStore::resolve(None, None, None, None),
        Err(SessionError::NoHome)
    ));
    // A flat store keeps every working directory's sessions together.
    let flat = JsonlStore::flat("/x");
    assert_eq!(flat.dir_for("/a"), flat.dir_for("/b"));
    assert_eq!(SESSION_DIR_ENV, "MAKAI_SESSION_DIR");
}

#[test]
fn env_variables_select_the_store_in_a_child_process() {
    // Environment variables are process-wide; check them in a fresh process.
    if let Ok(expect) = std::env::var("MAKAI_TEST_EXPECT_STORE") {
        let store = JsonlStore::from_env(None).unwrap();
        assert_eq!(store.dir_for("/a/b"), Path::new(&expect));
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let run = |envs: &[(&str, &str)], expect: &str| {
        let mut c = std::process::Command::new(&exe);
        c.args([
            "session_store::env_variables_select_the_store_in_a_child_process",
            "--exact",
            "--test-threads=1",
        ])
        .env_remove("MAKAI_HOME")
        .env_remove(SESSION_DIR_ENV)
        .env("MAKAI_TEST_EXPECT_STORE", expect);
        for (k, v) in envs {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("1 passed"), "{stdout}");
    };
    run(&[("MAKAI_HOME", "/tmp/mh")], "/tmp/mh/sessions/--a-b--");
    run(
        &[("MAKAI_HOME", "/tmp/mh"), (SESSION_DIR_ENV, "/tmp/sd")],
        "/tmp/sd",
    );
}

/// A run killed while a sub-agent wrote leaves the child's file as the
/// newest of the directory; `-c` still continues the parent. A fork (its
/// header names the parent too, but nothing links to it) is continued.
#[test]
fn continue_skips_a_sub_agent_s_session_but_not_a_fork() {
    use makai_coding::session::SharedSession;
    use makai_coding::subagent::{ChildSessions, LinkedSessions};
    let root = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(root.path());
    let mut parent = store.create("/w");
    parent.append_message(UserMessage::text("do it")).unwrap();
    let parent_path = parent.path().unwrap().to_path_buf();
    let shared = SharedSession::new(parent);
    let mut child = LinkedSessions(shared.clone()).create("worker", "call_1");
    child
        .append_message(UserMessage::text("the child's task"))
        .unwrap();
    set_mtime(&parent_path, 30);
    set_mtime(child.path().unwrap(), 1);
    assert_eq!(store.latest("/w").unwrap().unwrap(), parent_path);
    assert_eq!(
        store.resume_latest("/w").unwrap().unwrap().id(),
        shared.lock().id()
    );

    let leaf = shared.lock().leaf_id().unwrap().to_string();
    let fork = shared.lock().fork_here(&leaf).unwrap();
    set_mtime(fork.path().unwrap(), 0);
    assert_eq!(store.latest("/w").unwrap().unwrap(), fork.path().unwrap());
}

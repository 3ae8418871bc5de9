//! Project trust: what needs it, the order of decisions, the saved decisions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use makai_coding::system_files::SystemFiles;
use makai_coding::trust::{
    DefaultProjectTrust, ProjectTrust, Resolution, TrustSource, TrustStore, protected_resources,
    resolve,
};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn decided(r: Resolution) -> ProjectTrust {
    match r {
        Resolution::Decided(t) => t,
        Resolution::Ask(found) => panic!("asked about {found:?}"),
    }
}

#[test]
fn only_what_makai_would_load_needs_trust() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("repo");
    std::fs::create_dir_all(cwd.join(".git")).unwrap();
    std::fs::create_dir_all(cwd.join(".pi")).unwrap();
    std::fs::create_dir_all(cwd.join(".makai")).unwrap();
    assert!(protected_resources(&cwd, &[]).is_empty(), "bare folders");
    // pi's extensions are not makai's to load.
    std::fs::create_dir_all(cwd.join(".pi/extensions")).unwrap();
    assert!(protected_resources(&cwd, &[]).is_empty());
    // Its themes are (they load only in a trusted project, as in pi).
    std::fs::create_dir_all(cwd.join(".pi/themes")).unwrap();
    assert_eq!(protected_resources(&cwd, &[]), vec![cwd.join(".pi/themes")]);
    std::fs::remove_dir(cwd.join(".pi/themes")).unwrap();

    // pi 1.5.2's project settings or MCP servers alone need a decision.
    write(&cwd.join(".pi/settings.json"), "{}");
    assert_eq!(
        protected_resources(&cwd, &[]),
        vec![cwd.join(".pi/settings.json")]
    );
    std::fs::remove_file(cwd.join(".pi/settings.json")).unwrap();
    write(&cwd.join(".pi/mcp.json"), "{}");
    assert_eq!(
        protected_resources(&cwd, &[]),
        vec![cwd.join(".pi/mcp.json")]
    );

    write(&cwd.join(".pi/SYSTEM.md"), "x");
    write(&cwd.join(".makai/mcp.json"), "{}");
    write(&cwd.join(".makai/agents/a.toml"), "x");
    write(&cwd.join(".agents/skills/s/SKILL.md"), "x");
    // Above the repository root: skill discovery never goes there.
    write(&tmp.path().join(".agents/skills/t/SKILL.md"), "x");
    let found = protected_resources(&cwd, &[]);
    assert_eq!(
        found,
        vec![
            cwd.join(".makai/mcp.json"),
            cwd.join(".makai/agents"),
            cwd.join(".pi/mcp.json"),
            cwd.join(".pi/SYSTEM.md"),
            cwd.join(".agents/skills"),
        ]
    );
}

#[test]
fn the_users_own_folders_never_need_trust() {
    // makai run in the home folder: ~/.makai is the makai home, not a project's.
    let home = tempfile::tempdir().unwrap();
    write(&home.path().join(".makai/settings.json"), "{}");
    write(&home.path().join(".makai/skills/s/SKILL.md"), "x");
    write(&home.path().join(".agents/skills/t/SKILL.md"), "x");
    let users: Vec<PathBuf> = vec![home.path().join(".makai"), home.path().join(".agents")];
    let users: Vec<&Path> = users.iter().map(PathBuf::as_path).collect();
    assert!(protected_resources(home.path(), &users).is_empty());
    assert_eq!(protected_resources(home.path(), &[]).len(), 3);
}

#[test]
fn a_flag_beats_a_saved_decision_which_beats_the_setting() {
    use DefaultProjectTrust::{Always, Ask, Never};
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let protected = vec![cwd.path().join(".pi/skills")];
    let mut store = TrustStore::load(home.path()).unwrap();
    // Resolved where nobody can be asked.
    let quietly = |store: &TrustStore, flag, default, protected: &[PathBuf]| {
        decided(resolve(cwd.path(), flag, store, default, protected, false))
    };

    let r = resolve(cwd.path(), None, &store, Ask, &protected, true);
    assert_eq!(r, Resolution::Ask(protected.clone()));
    let t = quietly(&store, None, Ask, &protected);
    assert_eq!((t.trusted, t.source), (false, TrustSource::Setting(Ask)));
    assert!(quietly(&store, None, Always, &protected).trusted);

    store.save(cwd.path(), Some(false)).unwrap();
    let t = quietly(&store, None, Always, &protected);
    assert!(!t.trusted);
    assert!(matches!(t.source, TrustSource::Saved(_)));
    // A saved "no" holds even where nothing needs trust (pi #10947).
    assert!(!quietly(&store, None, Always, &[]).trusted);

    let t = quietly(&store, Some(true), Never, &protected);
    assert_eq!((t.trusted, t.source), (true, TrustSource::Flag));
}

#[test]
fn saved_decisions_survive_a_reload_and_the_closest_one_applies() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let sub = root.path().join("a/b");
    std::fs::create_dir_all(&sub).unwrap();
    let mut store = TrustStore::load(home.path()).unwrap();
    store.save(root.path(), Some(true)).unwrap();
    store.save(&root.path().join("a"), Some(false)).unwrap();

    let store = TrustStore::load(home.path()).unwrap();
    let (dir, trusted) = store.decision_for(&sub).unwrap();
    assert_eq!(dir, root.path().join("a").canonicalize().unwrap());
    assert!(!trusted);
    assert!(store.decision_for(root.path()).unwrap().1);

    let mut store = store;
    store.save(&root.path().join("a"), None).unwrap();
    let store = TrustStore::load(home.path()).unwrap();
    assert!(
        store.decision_for(&sub).unwrap().1,
        "forgotten: the root's applies"
    );
}

#[test]
fn a_damaged_trust_file_is_an_error_naming_it() {
    let home = tempfile::tempdir().unwrap();
    write(&home.path().join("trust.json"), "[1, 2");
    let e = TrustStore::load(home.path()).unwrap_err().to_string();
    assert!(e.contains("trust.json"), "{e}");
    write(&home.path().join("trust.json"), r#"{"/x": "maybe"}"#);
    let e = TrustStore::load(home.path()).unwrap_err().to_string();
    assert!(e.contains("invalid"), "{e}");
}

#[test]
fn a_trusted_projects_system_files_come_first_and_are_never_combined() {
    let cwd = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    write(&home.path().join("SYSTEM.md"), "user system");
    write(&home.path().join("APPEND_SYSTEM.md"), "user append");
    write(&cwd.path().join(".pi/SYSTEM.md"), "pi project system");
    write(&cwd.path().join(".makai/SYSTEM.md"), "makai project system");

    let f = SystemFiles::discover(cwd.path(), true, &[home.path()]);
    assert_eq!(f.system.unwrap().text, "makai project system");
    assert_eq!(f.append.unwrap().text, "user append");
    let f = SystemFiles::discover(cwd.path(), false, &[home.path()]);
    assert_eq!(f.system.unwrap().text, "user system");
}

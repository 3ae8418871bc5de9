//! Settings: loading `mcpServers` from the user and project files, and the
//! logic of `makai mcp list/add/remove` on real files with real servers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::*;
use makai_mcp::{
    ConfigScope, McpServerConfig, ServerTransport, add_server, list_report, load_mcp_config,
    remove_server, settings_file_for,
};
use serde_json::{Value, json};

fn write_json(path: &Path, v: Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn add_and_remove_keep_everything_else() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let file = settings_file_for(ConfigScope::User, cwd.path(), Some(home.path())).unwrap();
    write_json(
        &file,
        json!({"defaultModel": "m1", "compaction": {"enabled": false}, "mcpServers": {"old": {"command": "x"}}, "theme": "dark"}),
    );
    let cfg = McpServerConfig::stdio("npx", ["-y", "pkg"])
        .with_env("K", "v")
        .with_timeout(Duration::from_secs(30));
    let msg = add_server(&file, "new", &cfg, false).unwrap();
    assert!(
        msg.starts_with("Added MCP server 'new' (npx -y pkg) in "),
        "{msg}"
    );
    let v = read_json(&file);
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["defaultModel", "compaction", "mcpServers", "theme"],
        "order kept"
    );
    assert_eq!(v["compaction"], json!({"enabled": false}));
    assert_eq!(v["mcpServers"]["old"], json!({"command": "x"}));
    assert_eq!(
        v["mcpServers"]["new"],
        json!({"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}, "timeout": 30})
    );

    let err = add_server(
        &file,
        "new",
        &McpServerConfig::http("http://127.0.0.1:1/mcp"),
        false,
    )
    .unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    let msg = add_server(
        &file,
        "new",
        &McpServerConfig::http("http://127.0.0.1:1/mcp"),
        true,
    )
    .unwrap();
    assert!(msg.starts_with("Replaced"), "{msg}");
    assert_eq!(
        read_json(&file)["mcpServers"]["new"],
        json!({"url": "http://127.0.0.1:1/mcp"})
    );
    let err = add_server(&file, "bad name", &cfg, false).unwrap_err();
    assert!(
        err.to_string().contains("use only letters, digits"),
        "{err}"
    );

    let err = remove_server(&file, "nope").unwrap_err();
    assert!(err.to_string().contains("it has: old, new"), "{err}");
    remove_server(&file, "old").unwrap();
    remove_server(&file, "new").unwrap();
    let v = read_json(&file);
    assert!(
        v.get("mcpServers").is_none(),
        "an empty section is removed: {v}"
    );
    assert_eq!(v["theme"], "dark");

    // A project file that does not exist yet is created.
    let pfile = settings_file_for(ConfigScope::Project, cwd.path(), None).unwrap();
    add_server(&pfile, "p", &cfg, false).unwrap();
    assert!(read_json(&pfile)["mcpServers"]["p"].is_object());
    // A file that is not JSON is reported, not overwritten.
    std::fs::write(&file, "{ not json").unwrap();
    let err = add_server(&file, "x", &cfg, false).unwrap_err();
    assert!(err.to_string().contains("is invalid"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ not json");
}

#[test]
fn project_servers_need_trust_and_override_user_ones() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let user = home.path().join("settings.json");
    let project = cwd.path().join(".makai/settings.json");
    write_json(
        &user,
        json!({"mcpServers": {"a": {"command": "ua"}, "b": {"command": "ub"}, "bad": {"url": 3}}}),
    );
    write_json(
        &project,
        json!({"mcpServers": {"a": {"command": "pa", "cwd": "sub"}, "b": {"enabled": false}, "c": {"url": "https://x.invalid/mcp"}}}),
    );
    let loaded = load_mcp_config(cwd.path(), Some(home.path())).unwrap();
    let names: Vec<&str> = loaded.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a", "b"], "untrusted project servers are ignored");
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("trustProjectSettings") && w.contains("a, b, c")),
        "{:?}",
        loaded.warnings
    );
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("MCP server 'bad'") && w.contains("must be a string")),
        "{:?}",
        loaded.warnings
    );
    assert_eq!(loaded.sources.len(), 2);

    write_json(
        &user,
        json!({"trustProjectSettings": true, "mcpServers": {"a": {"command": "ua"}, "b": {"command": "ub"}}}),
    );
    let loaded = load_mcp_config(cwd.path(), Some(home.path())).unwrap();
    let a = loaded.get("a").unwrap();
    assert_eq!(a.scope, ConfigScope::Project);
    match &a.config.transport {
        ServerTransport::Stdio {
            command, cwd: dir, ..
        } => {
            assert_eq!(command, "pa");
            assert_eq!(
                dir.as_deref(),
                Some(cwd.path().join("sub").as_path()),
                "relative cwd resolves in the project"
            );
        }
        other => panic!("{other:?}"),
    }
    let b = loaded.get("b").unwrap();
    assert_eq!(b.scope, ConfigScope::User);
    assert!(
        !b.config.enabled,
        "the project switched the user's server off"
    );
    assert_eq!(loaded.get("c").unwrap().scope, ConfigScope::Project);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);

    write_json(&project, json!({"mcpServers": []}));
    let err = load_mcp_config(cwd.path(), Some(home.path())).unwrap_err();
    assert!(err.to_string().contains("must be an object"), "{err}");
}

#[tokio::test]
async fn list_report_shows_states_tools_and_reasons() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let report = list_report(cwd.path(), Some(home.path()), Duration::from_secs(5)).await;
    assert!(
        report.starts_with("No MCP servers are configured. Add one with `makai mcp add"),
        "{report}"
    );

    let file = home.path().join("settings.json");
    add_server(&file, "t", &testserver(&[]), false).unwrap();
    add_server(
        &file,
        "broken",
        &testserver(&["--exit-at-start", "4"]),
        false,
    )
    .unwrap();
    add_server(&file, "off", &testserver(&[]).with_enabled(false), false).unwrap();
    write_json(
        &cwd.path().join(".makai/settings.json"),
        json!({"mcpServers": {"proj": {"command": "x"}}}),
    );
    let report = list_report(cwd.path(), Some(home.path()), Duration::from_secs(30)).await;
    assert!(report.contains("t [user] ready\n"), "{report}");
    assert!(
        report.contains("  server: makai-mcp-testserver 1.0.0\n"),
        "{report}"
    );
    assert!(
        report.contains("  - mcp__t__echo (read-only): Returns its text.\n"),
        "{report}"
    );
    assert!(
        report.contains("  - mcp__t__fail: Always returns an error result.\n"),
        "{report}"
    );
    assert!(
        report.contains("broken [user] failed: the MCP handshake failed"),
        "{report}"
    );
    assert!(
        report.contains("refusing to start (exit code 4)"),
        "{report}"
    );
    assert!(report.contains("off [user] disabled\n"), "{report}");
    assert!(
        report.contains("warning: ignored the MCP servers of project file"),
        "{report}"
    );
    assert!(!report.contains("mcp__broken__"), "{report}");
}

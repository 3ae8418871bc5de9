//! pi 1.5.2's `mcp.json` files: which are read, in what order, how a later
//! entry overrides an earlier one, and the `!command` and `~/` values of a
//! server that really starts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::*;
use makai_mcp::{ConfigScope, McpManager, McpSources, ServerTransport, load_mcp_sources};
use serde_json::{Value, json};

fn write_json(path: &Path, v: Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

fn command_of(loaded: &makai_mcp::LoadedMcpConfig, name: &str) -> String {
    match &loaded.get(name).unwrap().config.transport {
        ServerTransport::Stdio { command, .. } => command.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn pi_and_makai_mcp_json_files_are_read_and_later_files_win() {
    let pi = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    write_json(
        &pi.path().join("mcp.json"),
        json!({"mcpServers": {
            "from-pi": {"command": "pi-only", "description": "kept from pi", "exposure": "direct"},
            "shared": {"command": "pi-shared"},
            "off-here": {"command": "runs-elsewhere"}
        }}),
    );
    write_json(
        &home.path().join("mcp.json"),
        json!({"mcpServers": {"shared": {"command": "home-mcp-json"}}}),
    );
    write_json(
        &home.path().join("settings.json"),
        json!({"trustProjectSettings": true, "mcpServers": {"settings-only": {"url": "https://x.invalid/mcp"}}}),
    );
    write_json(
        &cwd.path().join(".pi/mcp.json"),
        json!({"mcpServers": {
            "off-here": {"enabled": false, "exposure": "hidden"},
            "project": {"command": "from-dot-pi", "cwd": "tools"}
        }}),
    );
    write_json(
        &cwd.path().join(".makai/mcp.json"),
        json!({"mcpServers": {"project": {"command": "from-dot-makai"}}}),
    );

    let sources = McpSources::standard(cwd.path(), Some(home.path()), Some(pi.path()), true);
    assert_eq!(
        sources.user,
        [
            pi.path().join("mcp.json"),
            home.path().join("mcp.json"),
            home.path().join("settings.json")
        ]
    );
    let loaded = load_mcp_sources(&sources, cwd.path()).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let names: Vec<&str> = loaded.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["from-pi", "shared", "off-here", "settings-only", "project"]
    );
    assert_eq!(command_of(&loaded, "from-pi"), "pi-only");
    assert_eq!(
        command_of(&loaded, "shared"),
        "home-mcp-json",
        "makai's home wins over pi's agent folder"
    );
    assert_eq!(
        loaded.get("shared").unwrap().source,
        home.path().join("mcp.json")
    );
    let off = loaded.get("off-here").unwrap();
    assert!(!off.config.enabled, "the project turned the server off");
    assert_eq!(
        command_of(&loaded, "off-here"),
        "runs-elsewhere",
        "an override keeps the rest"
    );
    assert_eq!(off.scope, ConfigScope::User, "still defined by pi's file");
    assert_eq!(off.source, pi.path().join("mcp.json"));
    let project = loaded.get("project").unwrap();
    assert_eq!(command_of(&loaded, "project"), "from-dot-makai");
    assert_eq!(project.source, cwd.path().join(".makai/mcp.json"));
    assert_eq!(loaded.sources.len(), 5);

    // Without trustProjectSettings the project's servers are named and left out.
    write_json(
        &home.path().join("settings.json"),
        json!({"mcpServers": {}}),
    );
    let loaded = load_mcp_sources(&sources, cwd.path()).unwrap();
    let names: Vec<&str> = loaded.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["from-pi", "shared", "off-here"]);
    assert!(loaded.get("off-here").unwrap().config.enabled);
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains(".pi/mcp.json") && w.contains("off-here, project")),
        "{:?}",
        loaded.warnings
    );

    // An untrusted project's files are not read at all.
    let untrusted = McpSources::standard(cwd.path(), Some(home.path()), Some(pi.path()), false);
    assert!(untrusted.project.is_empty());
    write_json(&cwd.path().join(".pi/mcp.json"), json!({"mcpServers": []}));
    assert!(load_mcp_sources(&untrusted, cwd.path()).is_ok());
    let err = load_mcp_sources(&sources, cwd.path()).unwrap_err();
    assert!(
        err.to_string().contains(".pi/mcp.json") && err.to_string().contains("must be an object"),
        "{err}"
    );
}

#[test]
fn server_names_follow_pis_rules_and_dash_and_underscore_name_one_server() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    write_json(
        &home.path().join("mcp.json"),
        json!({"mcpServers": {
            "dev-radius": {"command": "first"},
            "dev_radius": {"command": "second"},
            "bad name": {"command": "x"},
            "ok_1": {"command": "kept"}
        }}),
    );
    write_json(
        &home.path().join("settings.json"),
        json!({"mcpServers": {"dev_radius": {"command": "later-file"}}}),
    );
    let sources = McpSources::standard(cwd.path(), Some(home.path()), None, false);
    let loaded = load_mcp_sources(&sources, cwd.path()).unwrap();
    let names: Vec<&str> = loaded.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["dev_radius", "ok_1"], "{:?}", loaded.warnings);
    // The later file's spelling overrides the earlier server.
    assert_eq!(command_of(&loaded, "dev_radius"), "later-file");
    let said = loaded.warnings.join("\n");
    assert!(
        said.contains("'dev_radius' is the same server as 'dev-radius'"),
        "{said}"
    );
    assert!(said.contains("\"bad name\" contains ' '"), "{said}");
}

#[test]
fn a_home_that_is_pis_agent_folder_is_read_once() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let sources = McpSources::standard(cwd.path(), Some(home.path()), Some(home.path()), false);
    assert_eq!(
        sources.user,
        [
            home.path().join("mcp.json"),
            home.path().join("settings.json")
        ]
    );
}

#[tokio::test]
async fn command_values_and_home_paths_reach_a_real_server() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("work")).unwrap();
    // The test server's binary, reached through `~/`.
    let bin: PathBuf = home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(TESTSERVER, bin.join("testserver")).unwrap();
    write_json(
        &home.path().join("mcp.json"),
        json!({"mcpServers": {"t": {
            "command": "~/bin/testserver",
            "cwd": "~/work",
            "env": {"FROM_COMMAND": "!printf 'tok-%s' 42", "PLAIN": "${LOOKED_UP}"}
        }}}),
    );
    let sources = McpSources::standard(cwd.path(), Some(home.path()), None, false);
    let loaded = load_mcp_sources(&sources, cwd.path()).unwrap();
    let mut options = fast_options(cwd.path());
    let home_dir = home.path().to_string_lossy().to_string();
    options.parent_env = Arc::new(move |k: &str| match k {
        "HOME" => Some(home_dir.clone()),
        "PATH" => std::env::var("PATH").ok(),
        "LOOKED_UP" => Some("plain-value".to_string()),
        _ => None,
    });
    let m = McpManager::start(
        loaded
            .servers
            .iter()
            .map(|e| (e.name.clone(), e.config.clone())),
        options,
    );
    if let Err(state) = m.wait_ready("t", std::time::Duration::from_secs(30)).await {
        panic!("server t did not become ready: {state}");
    }
    let out = call(&tool(&m, "mcp__t__env"), json!({})).await.unwrap();
    let env: serde_json::Map<String, Value> = serde_json::from_str(&out.text_content()).unwrap();
    assert_eq!(env.get("FROM_COMMAND"), Some(&json!("tok-42")));
    assert_eq!(env.get("PLAIN"), Some(&json!("plain-value")));
    m.shutdown().await;
}

#[tokio::test]
async fn a_failing_command_value_fails_the_server_with_its_reason() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    write_json(
        &home.path().join("mcp.json"),
        json!({"mcpServers": {"t": {
            "command": TESTSERVER,
            "env": {"TOKEN": "!echo no credentials >&2; exit 3"}
        }}}),
    );
    let sources = McpSources::standard(cwd.path(), Some(home.path()), None, false);
    let loaded = load_mcp_sources(&sources, cwd.path()).unwrap();
    let m = McpManager::start(
        loaded
            .servers
            .iter()
            .map(|e| (e.name.clone(), e.config.clone())),
        fast_options(cwd.path()),
    );
    let state = m
        .wait_ready("t", std::time::Duration::from_secs(30))
        .await
        .expect_err("the server cannot start");
    let state = state.to_string();
    assert!(
        state.contains("env TOKEN: its command failed") && state.contains("no credentials"),
        "{state}"
    );
    m.shutdown().await;
}

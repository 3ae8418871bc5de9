//! `/reload` reads the settings again, as pi's does ("run `/reload` after
//! manually changing settings"): the files a start in this directory would
//! read, with the same project trust. What a session reads when it uses a
//! setting (the `!` command's prefix, the external editor, cache warming,
//! the workspace overview, titles) follows at once; what the agent was
//! configured with at start (compaction, retries, the steering and
//! follow-up queues, thinking budgets, the stream's read interval and idle
//! timeout) is configured again for the next run; skills and prompt
//! templates are found again with the settings' lists; the built-in tools
//! newly added to `defaultTools` are enabled (pi's rule: a tool removed
//! from it stays; `task`, `codemode` and `tool_search` wait for the next
//! start, as does every tool when the command line chose them). A setting the
//! session was built with (the model, the sandbox, the store, the tools'
//! environment...) takes effect at the next start, and the notice says so.
//! A command-line flag still wins over the setting it overrides.

use std::path::PathBuf;
use std::sync::Arc;

use makai_agent::{AgentLoopConfig, SteeringBehavior};
use makai_ai::ThinkingBudgets;
use makai_coding::settings::Settings;
use serde_json::Value;

use super::{AppSession, Shared, lock};

/// What reading the settings again needs, and the command-line flags that
/// beat the settings they override.
#[derive(Clone, Debug, Default)]
pub struct SettingsSource {
    /// makai's home folder (the user settings).
    pub home: Option<PathBuf>,
    /// `--steering`: beats `steeringDelivery`.
    pub steering_flag: Option<SteeringBehavior>,
    /// How the command line chose the tools.
    pub tools: super::tool_setup::ToolsAtStart,
    /// Where the session's built-in tools run (`None`: `--no-tools`).
    pub tool_env: Option<makai_coding::tools::ToolEnv>,
}

/// What [`AppSession::reload_settings`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SettingsReloaded {
    /// The settings that changed (their keys as the files spell them,
    /// sorted), in force now unless listed in `at_next_start`.
    pub changed: Vec<String>,
    /// Those of `changed` that the session was built with: they take effect
    /// when makai starts again.
    pub at_next_start: Vec<String>,
    /// The tools newly added to `defaultTools`, enabled now (pi's rule:
    /// tools removed from the setting stay).
    pub enabled_tools: Vec<String>,
    /// What the user should hear: a settings file that cannot be read keeps
    /// the settings in force, and says why.
    pub warnings: Vec<String>,
}

/// The settings a session is built with: a change takes effect at the next
/// start. (Settings makai does not read are in neither list.)
const AT_START: &[&str] = &[
    "allowedPaths",
    "approvals",
    "codemode",
    "defaultAgent",
    "defaultModel",
    "defaultProjectTrust",
    "defaultProvider",
    "defaultThinkingLevel",
    "enabledModels",
    "extensions",
    "images",
    "limits",
    "modelThinkingLevels",
    "sandbox",
    "sessionDir",
    "shellPath",
    "store",
    "subagents",
    "terminal",
    "trustProjectSettings",
    "tuiMode",
];

/// The thinking budgets the settings give (the defaults where they are silent).
pub(super) fn thinking_budgets(settings: &Settings) -> ThinkingBudgets {
    let mut budgets = ThinkingBudgets::default();
    if let Some(b) = &settings.thinking_budgets {
        budgets.minimal = b.minimal.unwrap_or(budgets.minimal);
        budgets.low = b.low.unwrap_or(budgets.low);
        budgets.medium = b.medium.unwrap_or(budgets.medium);
        budgets.high = b.high.unwrap_or(budgets.high);
    }
    budgets
}

/// Configures what the settings decide of each run: thinking budgets, the
/// steering delivery (unless `--steering` chose it), and how the stream is
/// read. The start and `/reload` both apply them here.
pub(super) fn apply_to_config(
    config: &mut AgentLoopConfig,
    settings: &Settings,
    source: &SettingsSource,
) {
    config.options.thinking_budgets = thinking_budgets(settings);
    config.steering = source.steering_flag.unwrap_or(settings.steering_delivery);
    config.options.read_interval = settings.stream_read_interval();
    config.options.idle_timeout = settings.http_idle_timeout();
    config.options.merge_deltas = settings.stream_merge_deltas.unwrap_or(true);
}

/// The keys whose values differ between `old` and `new`, sorted.
fn changed_keys(old: &Settings, new: &Settings) -> Vec<String> {
    let as_map = |s: &Settings| match serde_json::to_value(s) {
        Ok(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let (old, new) = (as_map(old), as_map(new));
    let mut keys: Vec<String> = old
        .keys()
        .chain(new.keys())
        .filter(|k| old.get(*k) != new.get(*k))
        .cloned()
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

impl Shared {
    /// The settings in force.
    pub(super) fn settings(&self) -> Arc<Settings> {
        self.settings
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl AppSession {
    /// Reads the settings files again (`/reload`) and puts them in force
    /// (see the module docs); a run going on keeps what it started with.
    /// A file that cannot be read changes nothing.
    pub fn reload_settings(&self) -> SettingsReloaded {
        let shared = &self.inner;
        let loaded = match super::trust::settings_for(
            &shared.cwd,
            shared.settings_source.home.as_deref(),
            shared.trust.trusted,
        ) {
            Ok(loaded) => loaded,
            Err(e) => {
                return SettingsReloaded {
                    warnings: vec![format!("settings not reloaded, those in force stay: {e}")],
                    ..Default::default()
                };
            }
        };
        let new = Arc::new(loaded.settings);
        let old = std::mem::replace(
            &mut *shared.settings.write().unwrap_or_else(|e| e.into_inner()),
            new.clone(),
        );
        // A toggle of this session (`/settings`, RPC's `set_auto_compaction`
        // and `set_auto_retry`) stays unless the file changed the setting.
        {
            let mut st = lock(&shared.state);
            if old.compaction.enabled != new.compaction.enabled {
                st.auto_compaction = new.compaction.enabled;
            }
            if old.retry.enabled != new.retry.enabled {
                st.auto_retry = new.retry.enabled;
            }
        }
        self.configure_agent();
        shared
            .agent
            .update_config(|cfg| apply_to_config(cfg, &new, &shared.settings_source));
        // The queues' modes, which RPC's `set_steering_mode` and
        // `set_follow_up_mode` change for the session, the same way.
        if old.steering_mode != new.steering_mode {
            shared.agent.set_steering_mode(new.steering_mode);
        }
        if old.follow_up_mode != new.follow_up_mode {
            shared.agent.set_follow_up_mode(new.follow_up_mode);
        }
        {
            let mut options = lock(&shared.resource_options);
            options.skill_entries = super::setup::setting_list(&new, "skills");
            options.template_entries = super::setup::setting_list(&new, "prompts");
        }
        let (enabled_tools, mut warnings) = self.enable_added_tools(&old, &new);
        warnings.extend(
            loaded
                .warnings
                .into_iter()
                .map(|w| format!("settings: {w}")),
        );
        let changed = changed_keys(&old, &new);
        let at_next_start = changed
            .iter()
            .filter(|k| AT_START.contains(&k.as_str()))
            .cloned()
            .collect();
        SettingsReloaded {
            changed,
            at_next_start,
            enabled_tools,
            warnings,
        }
    }

    /// Enables the built-in tools `new`'s `defaultTools` adds to `old`'s;
    /// returns their names and what waits for the next start.
    fn enable_added_tools(&self, old: &Settings, new: &Settings) -> (Vec<String>, Vec<String>) {
        let shared = &self.inner;
        let source = &shared.settings_source;
        let Some(env) = &source.tool_env else {
            return (Vec::new(), Vec::new());
        };
        let spec_tools = lock(&shared.instruction_sources).spec.tools.clone();
        let mut added = source.tools.newly_added(
            &spec_tools,
            old.default_tools.as_deref(),
            new.default_tools.as_deref(),
        );
        let mut base = lock(&shared.base_tools);
        added.retain(|n| base.get(n).is_none());
        let (tools, waiting) = super::tool_setup::build_added(env, &added);
        if tools.is_empty() {
            return (Vec::new(), waiting);
        }
        let names = tools.iter().map(|t| t.name().to_string()).collect();
        *base = makai_agent::ToolSet::new(base.iter().cloned().chain(tools));
        (names, waiting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_keys_name_what_differs_as_the_files_spell_it() {
        let old = Settings::default();
        let mut new = Settings {
            shell_command_prefix: Some("set -e".into()),
            ..Settings::default()
        };
        new.compaction.keep_recent_tokens += 1;
        new.extra.insert("autoTitle".into(), Value::Bool(false));
        assert_eq!(
            changed_keys(&old, &new),
            vec!["autoTitle", "compaction", "shellCommandPrefix"]
        );
        assert!(changed_keys(&new, &new).is_empty());
    }
}

//! The built-in catalog as the build script wrote it (`build.rs`): one
//! [`Entry`] per model of `builtin.json`, turned into [`Model`]s without
//! parsing the whole JSON at start-up.

use std::borrow::Cow;

use crate::model::{CostTier, Modality, Model, ModelCost, PromptCacheLifetimes, ThinkingLevelMap};

/// One built-in model: its fields as literals (`thinkingLevelMap` as its
/// pairs, `promptCache` as its tiers), `compat` and `headers` as their JSON.
pub(super) struct Entry {
    pub(super) id: &'static str,
    pub(super) name: &'static str,
    pub(super) api: &'static str,
    pub(super) provider: &'static str,
    pub(super) base_url: &'static str,
    pub(super) reasoning: bool,
    /// Input is text and images (else text alone).
    pub(super) image: bool,
    /// Input, output, cache read and cache write prices.
    pub(super) prices: [f64; 4],
    /// Prices above input sizes.
    pub(super) tiers: &'static [CostTier],
    pub(super) context_window: u64,
    pub(super) max_tokens: u64,
    pub(super) compat: Option<&'static str>,
    pub(super) headers: Option<&'static str>,
    pub(super) thinking_level_map: Option<ThinkingLevelMap>,
    pub(super) prompt_cache: Option<PromptCacheLifetimes>,
}

/// The entries, in `builtin.json`'s order.
pub(super) const ENTRIES: &[Entry] = include!(concat!(env!("OUT_DIR"), "/builtin_catalog.rs"));

impl Entry {
    /// The model, or why it cannot be made (tested not to happen).
    pub(super) fn model(&self) -> Result<Model, String> {
        let p = self;
        let [input, output, cache_read, cache_write] = p.prices;
        Ok(Model {
            id: p.id.to_string(),
            name: p.name.to_string(),
            api: p.api.parse()?,
            provider: p.provider.to_string(),
            base_url: p.base_url.to_string(),
            reasoning: p.reasoning,
            input: if p.image {
                vec![Modality::Text, Modality::Image]
            } else {
                vec![Modality::Text]
            },
            cost: ModelCost {
                input,
                output,
                cache_read,
                cache_write,
                tiers: p.tiers.to_vec(),
            },
            context_window: p.context_window,
            max_tokens: p.max_tokens,
            headers: match p.headers {
                Some(json) => serde_json::from_str(json).map_err(|e| e.to_string())?,
                None => Default::default(),
            },
            compat: match p.compat {
                Some(json) => Some(serde_json::from_str(json).map_err(|e| e.to_string())?),
                None => None,
            },
            thinking_level_map: p.thinking_level_map.clone(),
            prompt_cache: p.prompt_cache,
        })
    }
}

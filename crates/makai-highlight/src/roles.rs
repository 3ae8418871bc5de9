//! Which of pi's `syntax*` theme colours a grammar's scope gets.
//!
//! TextMate scopes name what a piece of code is (`entity.name.function`,
//! `string.quoted.double`, `keyword.operator.arithmetic`); the first rule
//! of [`RULES`] whose scope is a prefix of the innermost scope that any rule
//! matches decides. The rules are in the order they are tried: the more
//! particular first (a string's quotes are string, not punctuation).

use std::sync::OnceLock;

use makai_theme::Role;
use syntect::parsing::{Scope, ScopeStack};

/// Scope prefixes and their colours, tried in order.
pub const RULES: &[(&str, Role)] = &[
    ("comment", Role::SyntaxComment),
    ("punctuation.definition.comment", Role::SyntaxComment),
    ("string", Role::SyntaxString),
    ("punctuation.definition.string", Role::SyntaxString),
    ("constant.character", Role::SyntaxString),
    ("markup.raw", Role::SyntaxString),
    ("constant.numeric", Role::SyntaxNumber),
    ("constant.language", Role::SyntaxNumber),
    ("keyword.operator.word", Role::SyntaxKeyword),
    ("keyword.operator", Role::SyntaxOperator),
    ("punctuation.accessor", Role::SyntaxOperator),
    ("keyword", Role::SyntaxKeyword),
    ("storage.modifier", Role::SyntaxKeyword),
    ("storage.type.primitive", Role::SyntaxType),
    ("storage.type.numeric", Role::SyntaxType),
    ("storage.type", Role::SyntaxKeyword),
    ("entity.name.function", Role::SyntaxFunction),
    ("support.function", Role::SyntaxFunction),
    ("variable.function", Role::SyntaxFunction),
    ("support.macro", Role::SyntaxFunction),
    ("entity.name.macro", Role::SyntaxFunction),
    ("meta.function-call.identifier", Role::SyntaxFunction),
    ("entity.name.type", Role::SyntaxType),
    ("entity.name.class", Role::SyntaxType),
    ("entity.name.struct", Role::SyntaxType),
    ("entity.name.enum", Role::SyntaxType),
    ("entity.name.trait", Role::SyntaxType),
    ("entity.name.interface", Role::SyntaxType),
    ("entity.other.inherited-class", Role::SyntaxType),
    ("support.type", Role::SyntaxType),
    ("support.class", Role::SyntaxType),
    ("entity.name.tag", Role::SyntaxKeyword),
    ("entity.other.attribute-name", Role::SyntaxVariable),
    ("variable", Role::SyntaxVariable),
    ("support.variable", Role::SyntaxVariable),
    ("constant.other", Role::SyntaxVariable),
    ("punctuation", Role::SyntaxPunctuation),
];

fn rules() -> &'static [(Scope, Role)] {
    static BUILT: OnceLock<Vec<(Scope, Role)>> = OnceLock::new();
    BUILT.get_or_init(|| {
        RULES
            .iter()
            .filter_map(|(name, role)| Scope::new(name).ok().map(|s| (s, *role)))
            .collect()
    })
}

/// The colour of text inside `stack`: the innermost scope a rule matches
/// decides; `None` when no rule matches any.
pub fn role_of(stack: &ScopeStack) -> Option<Role> {
    let rules = rules();
    stack.as_slice().iter().rev().find_map(|scope| {
        rules
            .iter()
            .find(|(prefix, _)| prefix.is_prefix_of(*scope))
            .map(|(_, role)| *role)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_is_a_valid_scope() {
        assert_eq!(rules().len(), RULES.len());
    }

    #[test]
    fn the_innermost_matching_scope_decides() {
        let mut stack = ScopeStack::new();
        for s in ["source.rust", "string.quoted.double.rust"] {
            stack.push(Scope::new(s).unwrap_or_default());
        }
        assert_eq!(role_of(&stack), Some(Role::SyntaxString));
        stack.push(Scope::new("punctuation.definition.string.end.rust").unwrap_or_default());
        assert_eq!(role_of(&stack), Some(Role::SyntaxString));
        stack.push(Scope::new("meta.nothing.known").unwrap_or_default());
        assert_eq!(
            role_of(&stack),
            Some(Role::SyntaxString),
            "outward past unknown scopes"
        );
        let mut plain = ScopeStack::new();
        plain.push(Scope::new("source.rust").unwrap_or_default());
        assert_eq!(role_of(&plain), None);
    }
}

//! pi's theme files read as pi reads them: colour forms, variables,
//! fallbacks, strictness, and the choice the `theme` setting makes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use makai_theme::{Appearance, Color, Role, Theme, ThemeError, ThemeSet, terminal_appearance};
use serde_json::{Value, json};

/// A complete theme (the built-in dark one's colours) named `name`, with
/// `change` applied to its JSON.
fn theme_json(name: &str, change: impl FnOnce(&mut Value)) -> String {
    let mut v: Value = serde_json::from_str(include_str!("../themes/dark.json")).unwrap();
    v["name"] = json!(name);
    v.as_object_mut().unwrap().remove("appearance");
    change(&mut v);
    v.to_string()
}

fn invalid(text: &str) -> String {
    match Theme::parse(text) {
        Err(ThemeError::Invalid(why)) => why,
        other => panic!("expected an invalid theme, got {other:?}"),
    }
}

#[test]
fn every_colour_form_resolves_and_variables_chain() {
    let text = theme_json("forms", |v| {
        v["vars"] = json!({"primary": "brand", "brand": "#0af", "grey": 244});
        let c = &mut v["colors"];
        c["accent"] = json!("primary");
        c["border"] = json!("#00aaff");
        c["muted"] = json!("grey");
        c["dim"] = json!(39);
        c["text"] = json!("");
        // CSS's red, written in OKLCH.
        c["error"] = json!("oklch(62.8% 0.2577 29.23)");
        c["success"] = json!("okhsl(0 0% 100%)");
        c["warning"] = json!("OKLCH(0 0 0)");
    });
    let t = Theme::parse(&text).unwrap();
    assert_eq!(t.color(Role::Accent), Color::Rgb(0, 170, 255));
    assert_eq!(t.color(Role::Border), Color::Rgb(0, 170, 255));
    assert_eq!(t.color(Role::Muted), Color::Indexed(244));
    assert_eq!(t.color(Role::Dim), Color::Indexed(39));
    assert_eq!(t.color(Role::Text), Color::Default);
    let Color::Rgb(r, g, b) = t.color(Role::Error) else {
        panic!("{:?}", t.color(Role::Error))
    };
    assert!(r >= 253 && g <= 2 && b <= 2, "{r} {g} {b}");
    assert_eq!(t.color(Role::Success), Color::Rgb(255, 255, 255));
    assert_eq!(t.color(Role::Warning), Color::Rgb(0, 0, 0));
}

#[test]
fn an_oklch_colour_outside_srgb_keeps_its_hue_with_less_chroma() {
    let text = theme_json("vivid", |v| {
        v["colors"]["accent"] = json!("oklch(70% 0.4 145)")
    });
    let Color::Rgb(r, g, b) = Theme::parse(&text).unwrap().color(Role::Accent) else {
        panic!()
    };
    // A green, inside the gamut (no channel clipped to black).
    assert!(g > r && g > b, "{r} {g} {b}");
    assert!(g < 255 || r > 0 || b > 0, "{r} {g} {b}");
}

#[test]
fn optional_colours_take_their_fallbacks() {
    let t = Theme::parse(&theme_json("plain", |v| {
        v["colors"]["selectedBg"] = json!(100);
        v["colors"]["thinkingXhigh"] = json!(101);
        v["colors"].as_object_mut().unwrap().remove("thinkingMax");
        v["colors"]["text"] = json!(102);
    }))
    .unwrap();
    assert_eq!(t.color(Role::SearchMatchBg), Color::Indexed(100));
    assert_eq!(t.color(Role::ThinkingMax), Color::Indexed(101));
    assert_eq!(t.color(Role::SearchMatchText), Color::Indexed(102));
    assert_eq!(t.color(Role::ScrollbarTrack), t.color(Role::Muted));
    let own = Theme::parse(&theme_json("own", |v| {
        v["colors"]["searchMatchBg"] = json!(7)
    }))
    .unwrap();
    assert_eq!(own.color(Role::SearchMatchBg), Color::Indexed(7));
}

#[test]
fn the_appearance_is_read_or_judged_from_the_colours() {
    let light = theme_json("paper", |v| v["colors"]["userMessageBg"] = json!("#f0f0f0"));
    assert_eq!(
        Theme::parse(&light).unwrap().appearance(),
        Appearance::Light
    );
    let dark = theme_json("ink", |v| v["colors"]["userMessageBg"] = json!("#202020"));
    assert_eq!(Theme::parse(&dark).unwrap().appearance(), Appearance::Dark);
    let said = theme_json("said", |v| {
        v["colors"]["userMessageBg"] = json!("#202020");
        v["appearance"] = json!("light");
    });
    assert_eq!(Theme::parse(&said).unwrap().appearance(), Appearance::Light);
}

#[test]
fn a_theme_is_as_strict_as_pi_s() {
    let why = invalid(&theme_json("x", |v| v["author"] = json!("me")));
    assert!(why.contains("author"), "{why}");
    let why = invalid(&theme_json("x", |v| v["colors"]["sparkle"] = json!(1)));
    assert!(why.contains("'sparkle' is not a colour"), "{why}");
    let why = invalid(&theme_json("x", |v| v["export"] = json!({"footerBg": 1})));
    assert!(why.contains("export.footerBg"), "{why}");
    let why = invalid(&theme_json("x", |v| {
        let c = v["colors"].as_object_mut().unwrap();
        c.remove("mdHr");
        c.remove("bashMode");
    }));
    assert!(why.contains("colours missing: mdHr, bashMode"), "{why}");
    let why = invalid(&theme_json("x", |v| {
        v["colors"]["accent"] = json!("nowhere")
    }));
    assert!(
        why.contains("accent: 'nowhere' is neither a colour nor a variable"),
        "{why}"
    );
    let why = invalid(&theme_json("x", |v| {
        v["vars"] = json!({"a": "b", "b": "a"});
        v["colors"]["accent"] = json!("a");
    }));
    assert!(why.contains("refer to themselves: a -> b -> a"), "{why}");
    let why = invalid(&theme_json("x", |v| {
        v["vars"] = json!({"unused": "missing"})
    }));
    assert!(why.contains("vars.unused"), "{why}");
    let why = invalid(&theme_json("x", |v| v["colors"]["dim"] = json!(256)));
    assert!(why.contains("256 is not a 256-colour index"), "{why}");
    let why = invalid(&theme_json("x", |v| v["colors"]["dim"] = json!("#12345")));
    assert!(why.contains("#rgb or #rrggbb"), "{why}");
    let why = invalid(&theme_json("x", |v| {
        v["colors"]["dim"] = json!("okhsl(10 200% 50%)")
    }));
    assert!(why.contains("okhsl(H S L)"), "{why}");
    assert!(invalid(&theme_json("light/dark", |_| {})).contains("'/'"));
    assert!(invalid(&theme_json("system", |_| {})).contains("'system'"));
    assert!(invalid("not json").contains("expected"));
}

#[test]
fn the_setting_chooses_by_name_pair_or_the_terminal() {
    let mut set = ThemeSet::built_in();
    assert!(set.problems().is_empty(), "{:?}", set.problems());
    assert_eq!(set.names().collect::<Vec<_>>(), ["dark", "light"]);
    assert_eq!(set.choose(None, Appearance::Dark).unwrap().name(), "dark");
    assert_eq!(
        set.choose(Some("system"), Appearance::Light)
            .unwrap()
            .name(),
        "light"
    );
    assert_eq!(
        set.choose(Some("dark"), Appearance::Light).unwrap().name(),
        "dark"
    );

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mine.json"), theme_json("mine", |_| {})).unwrap();
    std::fs::write(dir.path().join("broken.json"), "{\"name\": \"broken\"}").unwrap();
    std::fs::write(dir.path().join("again.json"), theme_json("dark", |_| {})).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a theme").unwrap();
    set.add(dir.path());
    set.add(&dir.path().join("does-not-exist"));
    assert_eq!(set.names().collect::<Vec<_>>(), ["dark", "light", "mine"]);
    let problems = set.problems().join("\n");
    assert!(
        problems.contains("broken.json") && problems.contains("missing field `colors`"),
        "{problems}"
    );
    assert!(
        problems.contains("theme 'dark' of") && problems.contains("loaded already (built in)"),
        "{problems}"
    );
    assert_eq!(set.problems().len(), 2, "{problems}");
    let mine = set.choose(Some("mine"), Appearance::Dark).unwrap();
    assert_eq!(mine.source(), Some(dir.path().join("mine.json").as_path()));
    assert_eq!(
        set.choose(Some("mine/light"), Appearance::Light)
            .unwrap()
            .name(),
        "mine"
    );
    assert_eq!(
        set.choose(Some("mine/light"), Appearance::Dark)
            .unwrap()
            .name(),
        "light"
    );
    let err = set
        .choose(Some("neon"), Appearance::Dark)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "no theme is named 'neon' (the themes: dark, light, mine)"
    );
}

#[test]
fn the_terminal_s_appearance_comes_from_colorfgbg() {
    assert_eq!(terminal_appearance(Some("0;15")), Appearance::Light);
    assert_eq!(terminal_appearance(Some("0;default;7")), Appearance::Light);
    assert_eq!(terminal_appearance(Some("15;0")), Appearance::Dark);
    assert_eq!(terminal_appearance(Some("garbage")), Appearance::Dark);
    assert_eq!(terminal_appearance(None), Appearance::Dark);
}

//! Highlighting through the public API: languages found, roles given, runs
//! that cover every line, growing text, and the limits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use makai_highlight::{Language, MAX_LINE_BYTES, Role, Run, highlight, pieces};

/// The role of the first piece of line `line` that is exactly `text`.
fn role_of(pieces: &[Vec<(&str, Option<Role>)>], line: usize, text: &str) -> Option<Role> {
    pieces[line]
        .iter()
        .find(|(t, _)| t.trim() == text)
        .unwrap_or_else(|| panic!("no piece {text:?} in line {line}: {:?}", pieces[line]))
        .1
}

/// Every line's runs cover it from its start to its end, without gaps.
fn assert_covering(text: &str, runs: &[Vec<Run>]) {
    let lines: Vec<&str> = text.split('\n').collect();
    assert_eq!(lines.len(), runs.len(), "one entry per line");
    for (line, runs) in lines.iter().zip(runs) {
        let end = line.strip_suffix('\r').unwrap_or(line).len();
        let mut at = 0;
        for r in runs {
            assert_eq!(r.range.start, at, "{line:?}: {runs:?}");
            assert!(r.range.end > r.range.start);
            at = r.range.end;
        }
        assert_eq!(at, end, "{line:?}: {runs:?}");
    }
}

#[test]
fn rust_code_gets_pi_s_syntax_roles() {
    let rust = Language::from_fence("rust").unwrap();
    let code =
        "fn main() {\n    let n: String = x.len() + 42; // the answer\n    println!(\"{n}\");\n}";
    let p = pieces(&rust, code);
    assert_eq!(role_of(&p, 0, "fn"), Some(Role::SyntaxKeyword));
    assert_eq!(role_of(&p, 0, "main"), Some(Role::SyntaxFunction));
    assert_eq!(role_of(&p, 1, "let"), Some(Role::SyntaxKeyword));
    assert_eq!(role_of(&p, 1, "String"), Some(Role::SyntaxType));
    assert_eq!(role_of(&p, 1, "len"), Some(Role::SyntaxFunction));
    assert_eq!(role_of(&p, 1, "+"), Some(Role::SyntaxOperator));
    assert_eq!(role_of(&p, 1, "42"), Some(Role::SyntaxNumber));
    assert_eq!(role_of(&p, 1, "// the answer"), Some(Role::SyntaxComment));
    // A macro call, and a format string's placeholder inside the string.
    assert_eq!(role_of(&p, 2, "println!"), Some(Role::SyntaxFunction));
    assert_eq!(role_of(&p, 2, "\""), Some(Role::SyntaxString));
    assert_eq!(role_of(&p, 2, "{n}"), Some(Role::SyntaxVariable));
    assert_covering(code, &highlight(&rust, code));
}

#[test]
fn python_and_shell_strings_comments_and_keywords() {
    let py = Language::from_fence("python").unwrap();
    let p = pieces(&py, "def f(x):\n    return 'y'  # done");
    assert_eq!(role_of(&p, 0, "def"), Some(Role::SyntaxKeyword));
    assert_eq!(role_of(&p, 0, "f"), Some(Role::SyntaxFunction));
    assert_eq!(role_of(&p, 1, "return"), Some(Role::SyntaxKeyword));
    assert_eq!(role_of(&p, 1, "# done"), Some(Role::SyntaxComment));
    let sh = Language::from_fence("sh").unwrap();
    let p = pieces(&sh, "echo \"hi\" # greet");
    assert_eq!(role_of(&p, 0, "# greet"), Some(Role::SyntaxComment));
}

#[test]
fn languages_from_fences_and_file_names() {
    for (fence, name) in [
        ("rust", "Rust"),
        ("rs", "Rust"),
        ("ts", "TypeScript"),
        ("TypeScript", "TypeScript"),
        ("py", "Python"),
        ("console", "Bourne Again Shell (bash)"),
        ("json5", "JSON"),
        ("dart", "Dart"),
        ("nix", "Nix"),
        ("{.rust}", "Rust"),
        ("rust,ignore", "Rust"),
        ("go title=main.go", "Go"),
    ] {
        assert_eq!(
            Language::from_fence(fence).map(|l| l.name()),
            Some(name),
            "{fence}"
        );
    }
    for none in ["", "text", "txt", "no-such-language"] {
        assert!(Language::from_fence(none).is_none(), "{none}");
    }
    // pi 1.5.1 highlights Dart, Nix, Groovy and Gradle files too.
    for (path, name) in [
        ("src/lib.rs", "Rust"),
        ("/home/u/app/main.dart", "Dart"),
        ("flake.nix", "Nix"),
        ("Jenkinsfile.groovy", "Groovy"),
        ("build.gradle", "Groovy"),
        ("Cargo.toml", "TOML"),
        ("web/App.tsx", "TypeScriptReact"),
        ("Dockerfile", "Dockerfile"),
        ("Makefile", "Makefile"),
    ] {
        assert_eq!(
            Language::from_path(path).map(|l| l.name()),
            Some(name),
            "{path}"
        );
    }
    assert!(Language::from_path("notes.txt").is_none());
    assert!(Language::from_path("data.unknownext").is_none());
}

#[test]
fn a_growing_text_highlights_as_the_whole_text_does() {
    let rust = Language::from_fence("rust").unwrap();
    let code = "/* a block\n   comment */\nstruct S { v: Vec<u8> }\nimpl S {\n    fn go(&self) -> &str { \"s\\n\" }\n}\n";
    // Grown a few bytes at a time, as a streamed answer.
    for end in (0..=code.len())
        .filter(|e| code.is_char_boundary(*e))
        .step_by(3)
    {
        assert_covering(&code[..end], &highlight(&rust, &code[..end]));
    }
    let grown = highlight(&rust, code);
    // Another text in between drops what was kept; the whole text again.
    let ts = Language::from_fence("ts").unwrap();
    highlight(&ts, "let x = 1;");
    let whole = highlight(&rust, code);
    assert_eq!(grown, whole);
    assert_eq!(
        pieces(&rust, code)[1][0],
        ("   comment */", Some(Role::SyntaxComment)),
        "the comment's second line knows it is in a comment"
    );
}

#[test]
fn a_very_long_line_and_the_rest_stay_plain() {
    let json = Language::from_fence("json").unwrap();
    let long = format!("{{\"a\": \"{}\"}}", "x".repeat(MAX_LINE_BYTES));
    let text = format!("{{\"b\": 1}}\n{long}\n{{\"c\": 2}}");
    let runs = highlight(&json, &text);
    assert_covering(&text, &runs);
    assert!(runs[0].iter().any(|r| r.role.is_some()), "{:?}", runs[0]);
    assert_eq!(
        runs[1],
        [Run {
            range: 0..long.len(),
            role: None
        }]
    );
    assert_eq!(runs[2].len(), 1);
    assert_eq!(runs[2][0].role, None);
}

#[test]
fn crlf_line_endings_are_not_part_of_a_line() {
    let py = Language::from_fence("py").unwrap();
    let text = "x = 1\r\ny = 'z'\r\n";
    let runs = highlight(&py, text);
    assert_covering(text, &runs);
    assert_eq!(runs.last(), Some(&Vec::new()));
}

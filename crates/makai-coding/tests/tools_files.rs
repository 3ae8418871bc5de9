//! `read`, `write` and `edit` against real files.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;

use base64::Engine;
use makai_ai::UserContent;
use makai_coding::tools::{CallCtx, ToolEnv, ToolError, ToolOutput, run_builtin};
use serde_json::{Value, json};

async fn call(env: &ToolEnv, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
    run_builtin(tool, env, args, &CallCtx::default()).await
}

fn setup() -> (tempfile::TempDir, ToolEnv) {
    let dir = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(dir.path());
    (dir, env)
}

#[tokio::test]
async fn ten_megabyte_file_is_capped_with_a_continue_notice() {
    let (dir, env) = setup();
    let mut big = String::with_capacity(10 * 1024 * 1024 + 100);
    let mut n = 0;
    while big.len() < 10 * 1024 * 1024 {
        n += 1;
        big.push_str(&format!("line {n:07} {}\n", "x".repeat(80)));
    }
    std::fs::write(dir.path().join("big.txt"), &big).unwrap();
    let out = call(&env, "read", json!({"path": "big.txt"}))
        .await
        .unwrap();
    let text = out.text_content();
    assert!(
        text.len() <= 50 * 1024 + 200,
        "output is {} bytes",
        text.len()
    );
    // 2,000 lines of ~94 bytes exceed 50 KB, so the byte cap applies first.
    let shown = text.lines().filter(|l| l.contains("line ")).count();
    let notice = format!(
        "[Showing lines 1-{shown} of {n} (50.0KB limit). Use offset={} to continue.]",
        shown + 1
    );
    assert!(
        text.ends_with(&notice),
        "tail: {}",
        &text[text.len() - 200..]
    );
    assert!(text.starts_with("   1\tline 0000001"), "{}", &text[..40]);
    assert_eq!(out.details["totalLines"], json!(n));

    // Reading on from the offset continues where the notice said.
    let next = call(
        &env,
        "read",
        json!({"path": "big.txt", "offset": shown + 1, "limit": 3}),
    )
    .await
    .unwrap()
    .text_content();
    assert!(next.contains(&format!("line {:07}", shown + 1)), "{next}");
    assert!(
        next.contains(&format!("Use offset={} to continue.", shown + 4)),
        "{next}"
    );
}

/// A line longer than read can show is counted, not kept: the notice gives
/// its length, and the lines after it are read as usual.
#[tokio::test]
async fn a_line_longer_than_the_output_limit_is_measured_and_skipped() {
    let (dir, env) = setup();
    let long = "x".repeat(3 * 1024 * 1024);
    std::fs::write(
        dir.path().join("min.js"),
        format!("{long}\nsecond\nthird {long}\nfourth\n"),
    )
    .unwrap();
    let first = call(&env, "read", json!({"path": "min.js"})).await.unwrap();
    assert_eq!(
        first.text_content(),
        "[Line 1 is 3.0MB, which exceeds the 50.0KB limit. Use bash: sed -n '1p' min.js | head -c 51200]"
    );
    assert_eq!(first.details["totalLines"], 4);
    assert_eq!(first.details["truncation"]["firstLineExceedsLimit"], true);
    let plain = ToolEnv::new(dir.path()).with_line_numbers(false);
    let rest = call(&plain, "read", json!({"path": "min.js", "offset": 2}))
        .await
        .unwrap();
    assert_eq!(
        rest.text_content(),
        "second\n\n[Showing lines 2-2 of 4 (50.0KB limit). Use offset=3 to continue.]"
    );
    let last = call(&plain, "read", json!({"path": "min.js", "offset": 4}))
        .await
        .unwrap();
    assert_eq!(last.text_content(), "fourth");
}

#[tokio::test]
async fn line_cap_applies_to_many_short_lines() {
    let (dir, env) = setup();
    let body: String = (1..=5000).map(|i| format!("{i}\n")).collect();
    std::fs::write(dir.path().join("short.txt"), body).unwrap();
    let text = call(&env, "read", json!({"path": "short.txt"}))
        .await
        .unwrap()
        .text_content();
    assert!(
        text.ends_with("[Showing lines 1-2000 of 5000. Use offset=2001 to continue.]"),
        "{}",
        &text[text.len() - 100..]
    );
    let plain = ToolEnv::new(dir.path()).with_line_numbers(false);
    let text = call(&plain, "read", json!({"path": "short.txt", "offset": 4999}))
        .await
        .unwrap()
        .text_content();
    assert_eq!(text, "4999\n5000");
    let err = call(&env, "read", json!({"path": "short.txt", "offset": 6000}))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("beyond the end") && err.to_string().contains("5000 lines"),
        "{err}"
    );
}

#[tokio::test]
async fn binary_file_is_refused_and_missing_file_named() {
    let (dir, env) = setup();
    let mut bytes = b"ELF header".to_vec();
    bytes.extend_from_slice(&[0, 1, 2, 3, 0, 0]);
    std::fs::write(dir.path().join("prog.bin"), &bytes).unwrap();
    let err = call(&env, "read", json!({"path": "prog.bin"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("prog.bin") && err.contains("binary"), "{err}");
    // A named pipe would block a reader forever: it is refused up front.
    let made = std::process::Command::new("mkfifo")
        .arg(dir.path().join("pipe"))
        .status()
        .unwrap();
    assert!(made.success());
    let err = call(&env, "read", json!({"path": "pipe"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a regular file"), "{err}");
    let err = call(&env, "read", json!({"path": "nope/missing.rs"}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::NotFound { .. }));
    assert!(err.to_string().contains("nope/missing.rs"), "{err}");
}

#[tokio::test]
async fn image_is_returned_as_image_content() {
    let (dir, env) = setup();
    // A real 1x1 PNG.
    let png: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, 0x49, 0x48, 0x44, 0x52, 0,
        0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1F, 0x15, 0xC4, 0x89, 0, 0, 0, 0x0D, 0x49, 0x44,
        0x41, 0x54, 0x78, 0x9C, 0x62, 0, 1, 0, 0, 5, 0, 1, 0x0D, 0x0A, 0x2D, 0xB4, 0, 0, 0, 0,
        0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ];
    // The extension lies on purpose: the content decides.
    std::fs::write(dir.path().join("pic.dat"), png).unwrap();
    let out = call(&env, "read", json!({"path": "pic.dat"}))
        .await
        .unwrap();
    let img = out
        .content
        .iter()
        .find_map(|c| match c {
            UserContent::Image(i) => Some(i.clone()),
            _ => None,
        })
        .expect("an image part");
    assert_eq!(img.mime_type, "image/png");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(img.data)
        .unwrap();
    assert_eq!(decoded, png);
}

/// pi's `images.autoResize`: a large image is sent at most 2000 pixels a
/// side, with a note of its size; with fitting off it is sent as it is.
#[tokio::test]
async fn a_large_image_is_read_fitted_with_a_note_of_its_original_size() {
    let (dir, env) = setup();
    let big = image::RgbImage::from_pixel(3000, 1000, image::Rgb([1, 2, 3]));
    let mut png = std::io::Cursor::new(Vec::new());
    big.write_to(&mut png, image::ImageFormat::Png).unwrap();
    let png = png.into_inner();
    std::fs::write(dir.path().join("wide.png"), &png).unwrap();
    let image_of = |out: &makai_coding::tools::ToolOutput| {
        out.content
            .iter()
            .find_map(|c| match c {
                UserContent::Image(i) => Some(i.clone()),
                _ => None,
            })
            .expect("an image part")
    };
    let out = call(&env, "read", json!({"path": "wide.png"}))
        .await
        .unwrap();
    let sent = base64::engine::general_purpose::STANDARD
        .decode(image_of(&out).data)
        .unwrap();
    let sent = image::load_from_memory(&sent).unwrap();
    assert_eq!((sent.width(), sent.height()), (2000, 667));
    let text = out.text_content();
    assert!(
        text.contains("[Image: original 3000x1000, displayed at 2000x667. Multiply coordinates by 1.50 to map to original image.]"),
        "{text}"
    );
    assert_eq!(out.details["bytes"], json!(png.len()));
    assert!(out.details["sentBytes"].as_u64().unwrap() > 0);

    let mut unfitted = env.clone();
    unfitted.fit_images = false;
    let out = call(&unfitted, "read", json!({"path": "wide.png"}))
        .await
        .unwrap();
    let sent = base64::engine::general_purpose::STANDARD
        .decode(image_of(&out).data)
        .unwrap();
    assert_eq!(sent, png);
    assert!(!out.text_content().contains("[Image:"));
}

#[tokio::test]
async fn write_creates_parents_reports_bytes_and_keeps_mode() {
    let (dir, env) = setup();
    let out = call(
        &env,
        "write",
        json!({"path": "a/b/c.txt", "content": "hello"}),
    )
    .await
    .unwrap();
    assert!(
        out.text_content().contains("5 bytes"),
        "{}",
        out.text_content()
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
        "hello"
    );

    let script = dir.path().join("run.sh");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    call(
        &env,
        "write",
        json!({"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}),
    )
    .await
    .unwrap();
    let mode = std::fs::metadata(&script).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o755);
    // No temporary files are left behind.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with(".makai-write-")),
        "{names:?}"
    );
}

#[tokio::test]
async fn write_through_an_inside_symlink_keeps_the_link() {
    let (dir, env) = setup();
    std::fs::write(dir.path().join("real.txt"), "old").unwrap();
    std::os::unix::fs::symlink(dir.path().join("real.txt"), dir.path().join("alias.txt")).unwrap();
    call(
        &env,
        "write",
        json!({"path": "alias.txt", "content": "new"}),
    )
    .await
    .unwrap();
    assert!(
        std::fs::symlink_metadata(dir.path().join("alias.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("real.txt")).unwrap(),
        "new"
    );
}

#[tokio::test]
async fn edit_with_zero_and_two_matches_reports_counts_and_lines() {
    let (dir, env) = setup();
    let path = dir.path().join("main.rs");
    let src = "fn main() {\n    let a = 1;\n    let a = 1;\n}\n";
    std::fs::write(&path, src).unwrap();

    let err = call(
        &env,
        "edit",
        json!({"path": "main.rs", "edits": [{"oldText": "let b = 2;", "newText": "x"}]}),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        err.contains(
            "Could not find the text to replace in main.rs (0 matches; the text must match exactly"
        ),
        "{err}"
    );
    let err = call(
        &env,
        "edit",
        json!({"path": "main.rs", "oldText": "let a = 1;", "newText": "let a = 2;"}),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("Found 2 matches") && err.contains("lines 2, 3"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        src,
        "failed edits change nothing"
    );
    let err = call(
        &env,
        "edit",
        json!({"path": "gone.rs", "oldText": "a", "newText": "b"}),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, ToolError::NotFound { .. }) && err.to_string().contains("gone.rs"),
        "{err}"
    );

    let out = call(
        &env,
        "edit",
        json!({"path": "main.rs", "edits": [{"oldText": "let a = 1;", "newText": "let a = 2;", "replaceAll": true}]}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "fn main() {\n    let a = 2;\n    let a = 2;\n}\n"
    );
    let diff = out.details["diff"].as_str().unwrap();
    assert!(
        diff.contains("-    let a = 1;") && diff.contains("+    let a = 2;"),
        "{diff}"
    );
    assert!(
        out.text_content().contains("@@"),
        "the diff is in the text too"
    );
    assert_eq!(out.details["firstChangedLine"], json!(2));
}

#[tokio::test]
async fn edit_applies_several_edits_against_the_original() {
    let (dir, env) = setup();
    std::fs::write(dir.path().join("f.txt"), "alpha\nbeta\ngamma\n").unwrap();
    call(
        &env,
        "edit",
        json!({"path": "f.txt", "edits": [
            {"oldText": "gamma", "newText": "GAMMA"},
            {"oldText": "alpha", "newText": "ALPHA"}
        ]}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        "ALPHA\nbeta\nGAMMA\n"
    );
    // `edits` as a JSON string (some models do that) works too.
    call(
        &env,
        "edit",
        json!({"path": "f.txt", "edits": "[{\"oldText\": \"beta\", \"newText\": \"BETA\"}]"}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        "ALPHA\nBETA\nGAMMA\n"
    );
}

/// pi's #8544: an edit of a file mixing CRLF and LF (or holding a lone CR)
/// rewrote the line endings of every line to the first line's.
#[tokio::test]
async fn edit_keeps_the_line_endings_of_lines_it_does_not_touch() {
    let (dir, env) = setup();
    let path = dir.path().join("mixed.txt");
    let original = b"[header]\r\nname = a\nlegacy\rvalue\r\nmode = fast\nend\n".to_vec();
    std::fs::write(&path, &original).unwrap();
    let out = call(
        &env,
        "edit",
        json!({"path": "mixed.txt", "edits": [{"oldText": "mode = fast", "newText": "mode = safe\nretries = 3"}]}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"[header]\r\nname = a\nlegacy\rvalue\r\nmode = safe\nretries = 3\nend\n".to_vec()
    );
    // The diff shows the edited lines only.
    let diff = out.details["diff"].as_str().unwrap().to_string();
    assert_eq!(
        diff.lines()
            .filter(|l| l.starts_with('-') && !l.starts_with("---"))
            .count(),
        1,
        "{diff}"
    );
    assert_eq!(
        diff.lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
            .count(),
        2,
        "{diff}"
    );
    // An edit of a CRLF line writes its new lines with CRLF.
    call(
        &env,
        "edit",
        json!({"path": "mixed.txt", "edits": [{"oldText": "[header]", "newText": "# settings\n[header]"}]}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"# settings\r\n[header]\r\nname = a\nlegacy\rvalue\r\nmode = safe\nretries = 3\nend\n"
            .to_vec()
    );
}

#[tokio::test]
async fn edit_preserves_crlf_and_bom() {
    let (dir, env) = setup();
    let path = dir.path().join("win.txt");
    std::fs::write(&path, b"\xEF\xBB\xBFfirst\r\nsecond\r\nthird\r\n").unwrap();
    // The model writes LF; matching works on the LF-normalized text.
    call(
        &env,
        "edit",
        json!({"path": "win.txt", "edits": [{"oldText": "second\nthird", "newText": "2nd\nline two and a half\n3rd"}]}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"\xEF\xBB\xBFfirst\r\n2nd\r\nline two and a half\r\n3rd\r\n".to_vec()
    );
    // read hides the BOM and the CR.
    let plain = ToolEnv::new(dir.path()).with_line_numbers(false);
    let text = call(&plain, "read", json!({"path": "win.txt", "limit": 1}))
        .await
        .unwrap()
        .text_content();
    assert!(text.starts_with("first\n\n["), "{text:?}");
}

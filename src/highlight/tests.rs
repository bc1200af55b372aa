use proptest::prelude::*;

use super::*;

fn lang(name: &str) -> Language {
    Language::from_name(name).unwrap_or_else(|| panic!("{name} is known"))
}

/// The classes given to each word of a line of HTML, as `class:text` pairs.
fn spans(html: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find("<span class=\"") {
        let after = &rest[at + 13..];
        let quote = after.find('"').expect("a closed class attribute");
        let end = after.find("</span>").expect("a closed span");
        found.push(format!("{}:{}", &after[..quote], &after[quote + 2..end]));
        rest = &after[end..];
    }
    found
}

#[test]
fn languages_come_from_fences_and_file_names() {
    for (name, expected) in [
        ("rust", Language::Lite(hl_lite::Lang::Rust)),
        ("RS", Language::Lite(hl_lite::Lang::Rust)),
        ("py", Language::Lite(hl_lite::Lang::Python)),
        ("ts", Language::Lite(hl_lite::Lang::TypeScript)),
        ("jsx", Language::Lite(hl_lite::Lang::JavaScript)),
        ("json", Language::Lite(hl_lite::Lang::Json)),
        ("toml", Language::Lite(hl_lite::Lang::Toml)),
        ("yml", Language::Lite(hl_lite::Lang::Yaml)),
        ("sh", Language::Lite(hl_lite::Lang::Bash)),
        ("html", Language::Lite(hl_lite::Lang::Html)),
        ("css", Language::Lite(hl_lite::Lang::Css)),
        ("md", Language::Lite(hl_lite::Lang::Markdown)),
        ("golang", Language::Go),
        ("c", Language::C),
        ("c++", Language::Cpp),
        ("sql", Language::Sql),
        ("patch", Language::Diff),
    ] {
        assert_eq!(Language::from_name(name), Some(expected), "{name}");
    }
    assert_eq!(Language::from_name("brainfuck"), None);
    assert_eq!(Language::from_name(""), None);
    assert_eq!(Language::from_path("src/main.rs"), Some(lang("rust")));
    assert_eq!(Language::from_path("/w/tools/run.PY"), Some(lang("python")));
    assert_eq!(Language::from_path("include/list.hpp"), Some(Language::Cpp));
    assert_eq!(Language::from_path("db/schema.sql"), Some(Language::Sql));
    assert_eq!(Language::from_path("ops/Dockerfile"), Some(Language::Lite(hl_lite::Lang::Dockerfile)));
    assert_eq!(Language::from_path("LICENSE"), None);
    assert_eq!(Language::from_path("notes.txt"), None);
}

#[test]
fn a_rust_sample_gets_keyword_string_and_comment_spans() {
    let html = highlight(lang("rust"), "fn main() {\n    let s = \"hi\"; // greet\n}\n");
    let found = spans(&html);
    for expected in
        ["hl-keyword:fn", "hl-function:main", "hl-keyword:let", "hl-string:&quot;hi&quot;", "hl-comment:// greet"]
    {
        assert!(found.iter().any(|span| span == expected), "{expected} in {found:?}");
    }
    assert_eq!(html.lines().count(), 3, "one line of HTML per line of code: {html}");
}

#[test]
fn a_python_sample_gets_keyword_string_number_and_comment_spans() {
    let html = highlight(lang("python"), "def area(r):\n    # circle\n    return 3.14 * r * r  # 'pi'\nprint('x')\n");
    let found = spans(&html);
    for expected in ["hl-keyword:def", "hl-function:area", "hl-comment:# circle", "hl-keyword:return", "hl-number:3.14"]
    {
        assert!(found.iter().any(|span| span == expected), "{expected} in {found:?}");
    }
    assert!(found.iter().any(|span| span.starts_with("hl-string:")), "{found:?}");
}

#[test]
fn the_added_languages_get_their_keywords() {
    let go = spans(&highlight(Language::Go, "package main\nfunc main() { s := `raw\nline` }\n"));
    assert!(go.contains(&"hl-keyword:func".to_owned()) && go.contains(&"hl-string:`raw".to_owned()), "{go:?}");
    let c = spans(&highlight(Language::C, "#include <stdio.h>\nint main(void) { return 0; /* done */ }\n"));
    for expected in ["hl-keyword:#include", "hl-string:&lt;stdio.h&gt;", "hl-type:int", "hl-comment:/* done */"] {
        assert!(c.contains(&expected.to_owned()), "{expected} in {c:?}");
    }
    let cpp = spans(&highlight(Language::Cpp, "class A { public: A() = default; };\n"));
    assert!(cpp.contains(&"hl-keyword:class".to_owned()) && cpp.contains(&"hl-keyword:public".to_owned()));
    let sql = spans(&highlight(Language::Sql, "SELECT id FROM users WHERE name = 'x' -- who\n"));
    for expected in ["hl-keyword:SELECT", "hl-keyword:FROM", "hl-string:&#39;x&#39;", "hl-comment:-- who"] {
        assert!(sql.contains(&expected.to_owned()), "{expected} in {sql:?}");
    }
    let diff = spans(&highlight(Language::Diff, "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n same\n"));
    assert_eq!(
        diff,
        ["hl-meta:--- a/x", "hl-meta:+++ b/x", "hl-meta:@@ -1 +1 @@", "hl-deleted:-old", "hl-inserted:+new"]
    );
}

const MARKUP: &str = "<img src=x onerror=alert(1)></code><script>alert(2)</script>";

#[test]
fn highlighting_escapes_every_piece_of_the_code() {
    for name in [
        "rust", "python", "js", "ts", "json", "toml", "yaml", "sh", "go", "c", "cpp", "html", "css", "md", "sql",
        "diff",
    ] {
        for code in [MARKUP.to_owned(), format!("\"{MARKUP}\" // {MARKUP}\n'{MARKUP}' # {MARKUP}\n<{MARKUP}>")] {
            let html = highlight(lang(name), &code);
            assert!(!html.contains("<img") && !html.contains("<script") && !html.contains("</code>"), "{name}: {html}");
            let text: String = html
                .replace("</span>", "")
                .split("<span class=\"")
                .enumerate()
                .map(|(i, piece)| {
                    if i == 0 {
                        piece.to_owned()
                    } else {
                        piece[piece.find("\">").expect("a span head") + 2..].to_owned()
                    }
                })
                .collect();
            assert_eq!(unescape_html(&text), code, "{name}: the text is all there, once");
        }
    }
}

#[test]
fn markdown_code_blocks_are_highlighted_and_stay_escaped() {
    let html =
        crate::markdown::render(&format!("Text\n\n```rust\nlet x = \"{MARKUP}\";\n```\n\n```\nplain {MARKUP}\n```\n"));
    let mut caches = CodeCaches::default();
    let highlighted = highlight_markdown(&html, &mut caches);
    assert!(has_code_block(&html));
    assert!(highlighted.contains("<span class=\"hl-keyword\">let</span>"), "{highlighted}");
    assert!(!highlighted.contains("<img") && !highlighted.contains("<script"), "{highlighted}");
    assert_eq!(highlighted.matches("</code></pre>").count(), 2);
    assert!(highlighted.contains("plain &lt;img"), "a block without a language stays as it was: {highlighted}");
    assert_eq!(highlight_markdown("<p>no code</p>", &mut caches), "<p>no code</p>");
}

#[test]
fn the_open_last_line_of_a_streaming_block_stays_plain() {
    let mut caches = CodeCaches::default();
    let html = crate::markdown::render("```rust\nfn main() {}\nlet x");
    let highlighted = highlight_markdown(&html, &mut caches);
    assert!(highlighted.contains("<span class=\"hl-keyword\">fn</span>"), "{highlighted}");
    assert!(highlighted.contains("\nlet x</code>"), "the open line is plain: {highlighted}");
}

#[test]
fn a_growing_block_highlights_only_its_new_lines() {
    let mut cache = CodeCache::default();
    let rust = lang("rust");
    assert_eq!(cache.sync(rust, "fn a() {}\nfn b"), 0);
    assert_eq!(cache.lines().len(), 1);
    assert_eq!(cache.sync(rust, "fn a() {}\nfn b() {}\n/* open\nstill"), 1);
    assert_eq!(cache.lines().len(), 3);
    assert_eq!(cache.restart, "fn a() {}\nfn b() {}\n".len(), "a line inside a comment is not a fresh start");
    assert_eq!(cache.sync(rust, "fn x() {}\n"), 0, "a text that does not continue the old one starts over");
    assert_eq!(cache.lines().len(), 1);
}

const SAMPLES: &[(&str, &str)] = &[
    (
        "rust",
        "/// Docs\n#[derive(Debug)]\nstruct A<'a> { s: &'a str }\nfn main() {\n    let r = r#\"raw\n\"still\"#;\n    /* block\n       comment */ let n = 0x1f_u8;\n    println!(\"{n} \\\" q\");\n}\n",
    ),
    ("python", "@app.route('/')\ndef f(x):\n    \"\"\"Doc\n    string\"\"\"\n    return f'{x!r}' + 1e-3  # done\n"),
    ("js", "const t = `a ${b\n} c`;\n// note\nfunction g(x) { return /re+/g.test(x); }\n"),
    ("ts", "interface P { name: string }\nconst p: P = { name: 'x' };\n/* multi\nline */ export default p;\n"),
    ("json", "{\n  \"a\": [1, 2.5, true],\n  \"b\": null\n}\n"),
    ("toml", "[package]\nname = \"x\"\ntext = \"\"\"\nmulti\n\"\"\"\n# c\n"),
    ("yaml", "key: value\nlist:\n  - a\nblock: |\n  text\n  more\n# c\n"),
    ("sh", "cat <<EOF\nbody $x\nEOF\necho \"$HOME\" # c\n"),
    ("go", "package main\n\nimport \"fmt\"\n\nfunc main() {\n\ts := `raw\nstring`\n\tfmt.Println(s, 1.5e+3)\n}\n"),
    ("c", "#include <stdio.h>\n/* a\n * b */\nint main(void) {\n    printf(\"%d\\n\", 'c');\n}\n"),
    ("cpp", "template <typename T>\nclass V { public: T* p = nullptr; };\n// end\n"),
    ("html", "<!doctype html>\n<script>\nlet x = 1;\n</script>\n<p class=\"a\">t</p>\n"),
    ("css", "a:hover {\n  color: #fff; /* c\n  d */\n  margin: 0 auto;\n}\n"),
    ("md", "# Title\n\n```rust\nfn x() {}\n```\n\n- item *em*\n"),
    ("sql", "SELECT a, 'multi\nline' FROM t -- c\n/* x\ny */ WHERE b = 1;\n"),
    ("diff", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-old\n+new\n ctx\n"),
];

proptest! {
    /// However the code arrives, each finished line comes out as highlighting the whole code draws it.
    #[test]
    fn incremental_highlighting_equals_highlighting_at_once(
        sample in 0..SAMPLES.len(),
        cuts in proptest::collection::vec(0usize..200, 0..8),
    ) {
        let (name, code) = SAMPLES[sample];
        let language = lang(name);
        let mut whole = CodeCache::default();
        whole.sync(language, code);
        let mut cuts: Vec<usize> = cuts.into_iter().map(|cut| cut % (code.len() + 1)).collect();
        cuts.sort_unstable();
        let mut cache = CodeCache::default();
        for cut in cuts.into_iter().filter(|&cut| code.is_char_boundary(cut)) {
            cache.sync(language, &code[..cut]);
        }
        cache.sync(language, code);
        prop_assert_eq!(cache.lines(), whole.lines(), "{}", name);
    }
}

#[test]
fn diff_lines_are_highlighted_per_side() {
    let lines = [
        (DiffSide::Neither, "@@ -1,2 +1,2 @@"),
        (DiffSide::Both, "fn a() {"),
        (DiffSide::Old, "    let x = 1;"),
        (DiffSide::New, "    let x = \"<img src=x onerror=alert(1)>\";"),
        (DiffSide::Both, "}"),
    ];
    let html = highlight_diff("src/a.rs", &lines).expect("rust is known");
    assert_eq!(html.len(), lines.len());
    assert_eq!(html[0], "@@ -1,2 +1,2 @@");
    assert!(html[2].contains("<span class=\"hl-keyword\">let</span>") && html[3].contains("hl-string"), "{html:?}");
    assert!(!html[3].contains("<img"), "{html:?}");
    assert_eq!(highlight_diff("notes.txt", &lines), None);
}

use proptest::prelude::*;

use super::*;

fn streamed(pieces: &[&str]) -> MarkdownStream {
    let mut stream = MarkdownStream::default();
    for piece in pieces {
        stream.push(piece);
    }
    stream
}

fn whole_html(stream: &MarkdownStream) -> String {
    let mut html = stream.finished().concat();
    html.push_str(stream.tail());
    html
}

#[test]
fn a_block_is_final_once_the_next_block_starts_on_a_complete_line() {
    let stream = streamed(&["First paragraph.\n\nSecond"]);
    assert!(stream.finished().is_empty(), "the second block's line is still being written");

    let stream = streamed(&["First paragraph.\n\nSecond\n"]);
    assert_eq!(stream.finished(), ["<p>First paragraph.</p>"]);
    assert_eq!(stream.tail(), "<p>Second</p>");
}

#[test]
fn a_line_still_being_written_closes_nothing() {
    // `#` alone is an empty heading, `#x` continues the paragraph.
    let mut stream = streamed(&["para\n#"]);
    assert!(stream.finished().is_empty());
    stream.push("x\n");
    assert!(stream.finished().is_empty());
    assert_eq!(stream.tail(), "<p>para\n#x</p>");
}

#[test]
fn open_fences_lists_and_tables_stay_in_the_tail() {
    let stream = streamed(&["```rust\nfn main() {}\n\nlet x = 1;\n"]);
    assert!(stream.finished().is_empty());

    let stream = streamed(&["- a\n\n- b\n\n  more of b\n"]);
    assert!(stream.finished().is_empty());

    let stream = streamed(&["| a | b |\n|---|---|\n| 1 | 2 |\n"]);
    assert!(stream.finished().is_empty());
    assert!(stream.tail().starts_with("<div class=\"table\"><table><thead>"));
}

#[test]
fn a_setext_underline_turns_the_open_paragraph_into_a_heading() {
    let mut stream = streamed(&["Title\n"]);
    stream.push("=====\n\nbody\n");
    assert_eq!(whole_html(&stream), "<h1>Title</h1><p>body</p>");
    assert_eq!(stream.finished(), ["<h1>Title</h1>"]);
}

#[test]
fn a_long_answer_streamed_in_small_deltas_keeps_a_short_tail() {
    let block = "Some **bold** text and a [link](https://example.com).\n\n- one\n- two\n\n";
    let answer = block.repeat(400);
    let mut stream = MarkdownStream::default();
    let mut longest_tail_source = 0;
    for chunk in answer.as_bytes().chunks(10) {
        stream.push(std::str::from_utf8(chunk).expect("the answer is ASCII"));
        longest_tail_source = longest_tail_source.max(stream.source().len() - stream.settled);
    }
    assert!(longest_tail_source < 2 * block.len(), "re-parsed {longest_tail_source} bytes at once");
    assert_eq!(whole_html(&stream), render(&answer));
}

#[test]
fn sync_appends_when_the_text_grows_and_starts_over_otherwise() {
    let mut stream = MarkdownStream::new("one\n\ntwo\n\nthr");
    assert!(stream.sync("one\n\ntwo\n\nthree\n"));
    assert_eq!(whole_html(&stream), "<p>one</p><p>two</p><p>three</p>");
    assert!(!stream.sync("other\n"));
    assert_eq!(whole_html(&stream), "<p>other</p>");
}

#[test]
fn raw_html_from_the_model_is_shown_as_text() {
    let html = render("Hi <script>alert(1)</script> there\n\n<div onclick=\"x()\">block</div>\n");
    assert!(!html.contains("<script"), "{html}");
    assert!(!html.contains("<div onclick"), "{html}");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
    assert!(html.contains("&lt;div onclick=&quot;x()&quot;&gt;block&lt;/div&gt;"), "{html}");
}

#[test]
fn escaping_covers_quotes_and_ampersands() {
    let mut out = String::new();
    escape_html(&mut out, "a & b < c > d \" e ' f");
    assert_eq!(out, "a &amp; b &lt; c &gt; d &quot; e &#39; f");
}

#[test]
fn links_open_in_a_new_tab_without_an_opener() {
    let html = render("[docs](https://example.com/a?b=1&c=\"2\" \"The title\")");
    assert_eq!(
        html,
        "<p><a href=\"https://example.com/a?b=1&amp;c=&quot;2&quot;\" title=\"The title\" target=\"_blank\" \
         rel=\"noopener noreferrer\">docs</a></p>"
    );
}

#[test]
fn unsafe_schemes_are_not_linked() {
    for target in ["javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,x", "vbscript:x", "java%0ascript:x"] {
        let html = render(&format!("[click]({target})"));
        assert!(!html.contains("href"), "{target}: {html}");
        assert!(html.contains("click"), "{target}: {html}");
    }
    let html = render("![alt](javascript:alert(1))");
    assert!(!html.contains("href"), "{html}");
}

#[test]
fn url_safety() {
    for safe in
        ["https://x.org", "http://x.org/a:b", "mailto:a@b.c", "/relative/path", "#section", "page.html", "a/b:c"]
    {
        assert!(is_safe_url(safe), "{safe}");
    }
    for unsafe_url in [
        "javascript:x",
        " javascript:x",
        "\u{1}javascript:x",
        "java\tscript:x",
        "jav\nascript:x",
        "data:x",
        "file:///etc/passwd",
        "VBScript:x",
    ] {
        assert!(!is_safe_url(unsafe_url), "{unsafe_url:?}");
    }
}

#[test]
fn gfm_extensions() {
    let html = render(
        "| Name | Size |\n|:-----|-----:|\n| a | 1 |\n\n~~gone~~\n\n- [x] done\n- [ ] todo\n\n```rust\nlet x = 1 < 2;\n```\n",
    );
    assert!(
        html.contains("<table><thead><tr><th class=\"align-left\">Name</th><th class=\"align-right\">Size</th>"),
        "{html}"
    );
    assert!(html.contains("<tbody><tr><td class=\"align-left\">a</td>"), "{html}");
    assert!(html.contains("<del>gone</del>"), "{html}");
    assert!(html.contains("<li><input type=\"checkbox\" disabled checked> done</li>"), "{html}");
    assert!(html.contains("<li><input type=\"checkbox\" disabled> todo</li>"), "{html}");
    assert!(html.contains("<span class=\"code__lang\">rust</span>"), "{html}");
    assert!(html.contains("data-copy"), "{html}");
    assert!(html.contains("<code class=\"language-rust\">let x = 1 &lt; 2;\n</code>"), "{html}");
}

#[test]
fn code_bars_are_said_again_in_the_language_the_page_is_in_now() {
    use leptos::prelude::{Owner, provide_context};

    use crate::highlight::{CodeCaches, highlight_markdown};
    use crate::i18n::Lang;

    let markdown = "Text `Copy`.\n\n```\nplain <b>\n```\n\n```rust\nlet copy = \"Copy\";\n```\n";
    let in_language = |lang: Lang, say: &dyn Fn() -> String| {
        let owner = Owner::new();
        owner.with(|| {
            provide_context(lang);
            say()
        })
    };
    let english = render(markdown);
    let chinese = in_language(Lang::ZhCn, &|| render(markdown));
    assert!(chinese.contains(">复制</button>") && chinese.contains(">文本</span>"), "{chinese}");
    assert_eq!(relabel_code_bars(&english), english, "in the language it was drawn in, the same");
    assert_eq!(in_language(Lang::ZhCn, &|| relabel_code_bars(&english)), chinese);
    assert_eq!(relabel_code_bars(&chinese), english, "and back");
    // Highlighted, as a block is drawn once the highlighter is there.
    let coloured = |html: &str| highlight_markdown(html, &mut CodeCaches::default());
    assert_eq!(in_language(Lang::ZhCn, &|| relabel_code_bars(&coloured(&english))), coloured(&chinese));
    assert!(has_code_bar(&english) && !has_code_bar(&render("Just `Copy` text.")));
}

#[test]
fn headings_and_ordered_lists() {
    assert_eq!(render("## Two\n"), "<h2>Two</h2>");
    assert_eq!(render("3. c\n4. d\n"), "<ol start=\"3\"><li>c</li><li>d</li></ol>");
}

/// Pieces that answers are made of, including ones whose meaning depends on the lines around them.
fn piece() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "Plain text",
        " with *emphasis*",
        " and `code`",
        "**strong**",
        "\n",
        "\n\n",
        "# Heading\n",
        "#",
        "x",
        "---\n",
        "===\n",
        "- item\n",
        "  continued\n",
        "1. first\n",
        "2. second\n",
        "> quoted\n",
        "```rust\n",
        "```\n",
        "~~~\n",
        "    indented code\n",
        "| a | b |\n",
        "|---|:-:|\n",
        "| 1 | 2 |\n",
        "- [ ] task\n",
        "~~struck~~",
        "[link](https://example.com)",
        "<b>raw</b>",
        "<div>\n",
        "</div>\n",
        "<!-- note\n",
        "-->\n",
        " ",
        "\t",
        "é",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn streaming_in_any_split_renders_like_the_whole(
        pieces in prop::collection::vec(piece(), 0..40),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let document: String = pieces.concat();
        let mut points: Vec<usize> = cuts
            .iter()
            .map(|cut| cut.index(document.len() + 1))
            .filter(|&point| document.is_char_boundary(point))
            .collect();
        points.sort_unstable();
        let mut stream = MarkdownStream::default();
        let mut from = 0;
        for point in points.into_iter().chain([document.len()]) {
            stream.push(&document[from..point]);
            from = point;
        }
        prop_assert_eq!(whole_html(&stream), render(&document));
        prop_assert_eq!(stream, MarkdownStream::new(&document));
    }
}

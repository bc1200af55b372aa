//! Markdown events to HTML in which nothing from the model is trusted: text and raw HTML are escaped, and only
//! links with a safe scheme keep their target.

use crate::i18n::{Key, t};
use pulldown_cmark::{Alignment, CodeBlockKind, Event, Parser, Tag, TagEnd};

/// Renders a standalone piece of markdown to HTML.
pub fn render(markdown: &str) -> String {
    let mut writer =
        HtmlWriter { out: String::with_capacity(markdown.len() + markdown.len() / 2), ..Default::default() };
    for event in Parser::new_ext(markdown, super::options()) {
        writer.event(event);
    }
    writer.out
}

/// Escapes text for use in HTML content and in quoted attribute values.
pub fn escape_html(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some(at) = rest.find(['&', '<', '>', '"', '\'']) {
        out.push_str(&rest[..at]);
        out.push_str(match rest.as_bytes()[at] {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            _ => "&#39;",
        });
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
}

/// Whether a link target may be followed: `http`, `https` and `mailto`, or a URL without a scheme.
///
/// Browsers ignore tabs and newlines inside a URL and leading spaces and control characters, so
/// `java\tscript:` and ` javascript:` are caught as what they are.
pub fn is_safe_url(url: &str) -> bool {
    let cleaned: String =
        url.trim_start_matches(|c: char| c <= ' ').chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).collect();
    let scheme_end = cleaned.find([':', '/', '?', '#']);
    match scheme_end {
        Some(at) if cleaned.as_bytes()[at] == b':' => {
            let scheme = cleaned[..at].to_ascii_lowercase();
            matches!(scheme.as_str(), "http" | "https" | "mailto")
        }
        Some(_) | None => true,
    }
}

// A code block's bar around its texts, as `render` writes it and `relabel_code_bars` finds it. Text from the
// markdown is escaped, so these never occur inside it.
const LANG_OPEN: &str = "<span class=\"code__lang\">";
const COPY_OPEN: &str = "</span><button type=\"button\" class=\"code__copy\" data-copy aria-label=\"";
const BAR_CLOSE: &str = "</button></div><pre><code";

/// Whether rendered markdown has a code block (whose bar has words of the page's language).
pub fn has_code_bar(html: &str) -> bool {
    html.contains(COPY_OPEN)
}

/// Rendered markdown (highlighted or not) with its code blocks' bars in the page's language: the Copy button and a
/// block without a language say it as the page now does. Called where the block is drawn, a view follows the
/// language switch without parsing the markdown again.
pub fn relabel_code_bars(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(open) = rest.find(LANG_OPEN) {
        let after = &rest[open + LANG_OPEN.len()..];
        let (Some(copy), Some(close)) = (after.find(COPY_OPEN), after.find(BAR_CLOSE)) else { break };
        out.push_str(&rest[..open + LANG_OPEN.len()]);
        // `render` names no language on a plain block's `<code>`.
        if after[close + BAR_CLOSE.len()..].starts_with('>') {
            escape_html(&mut out, t(Key::CodePlainText));
        } else {
            out.push_str(&after[..copy]);
        }
        out.push_str(COPY_OPEN);
        escape_html(&mut out, t(Key::CopyCode));
        out.push_str("\">");
        escape_html(&mut out, t(Key::Copy));
        out.push_str(BAR_CLOSE);
        rest = &after[close + BAR_CLOSE.len()..];
    }
    out.push_str(rest);
    out
}

#[derive(Default)]
struct HtmlWriter {
    out: String,
    table_alignments: Vec<Alignment>,
    table_cell: usize,
    in_table_head: bool,
    /// For each open link or image: whether it was opened as an `<a>` (a safe target) or a `<span>`.
    links: Vec<bool>,
}

impl HtmlWriter {
    fn text(&mut self, text: &str) {
        escape_html(&mut self.out, text);
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => {
                self.out.push_str("<code>");
                self.text(&code);
                self.out.push_str("</code>");
            }
            // Raw HTML from the model is shown as the text it is.
            Event::Html(html) | Event::InlineHtml(html) => self.text(&html),
            // Math is not enabled; should it appear, it stays readable.
            Event::InlineMath(math) | Event::DisplayMath(math) => self.text(&math),
            Event::FootnoteReference(label) => {
                self.out.push('[');
                self.text(&label);
                self.out.push(']');
            }
            Event::SoftBreak => self.out.push('\n'),
            Event::HardBreak => self.out.push_str("<br>"),
            Event::Rule => self.out.push_str("<hr>"),
            Event::TaskListMarker(checked) => self.out.push_str(if checked {
                "<input type=\"checkbox\" disabled checked> "
            } else {
                "<input type=\"checkbox\" disabled> "
            }),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.out.push_str("<p>"),
            Tag::Heading { level, .. } => {
                self.out.push('<');
                self.out.push_str(&level.to_string());
                self.out.push('>');
            }
            Tag::BlockQuote(_) => self.out.push_str("<blockquote>"),
            Tag::CodeBlock(kind) => {
                let language = match &kind {
                    CodeBlockKind::Fenced(info) => info.split([' ', '\t', ',', '{']).next().unwrap_or(""),
                    CodeBlockKind::Indented => "",
                };
                self.out.push_str("<div class=\"code\"><div class=\"code__bar\">");
                self.out.push_str(LANG_OPEN);
                self.text(if language.is_empty() { t(Key::CodePlainText) } else { language });
                // The page's language when drawn; `relabel_code_bars` says them again after a switch.
                self.out.push_str(COPY_OPEN);
                self.text(t(Key::CopyCode));
                self.out.push_str("\">");
                self.text(t(Key::Copy));
                self.out.push_str(BAR_CLOSE);
                if !language.is_empty() {
                    self.out.push_str(" class=\"language-");
                    self.text(language);
                    self.out.push('"');
                }
                self.out.push('>');
            }
            // Raw HTML blocks are shown as text, kept in their lines.
            Tag::HtmlBlock => self.out.push_str("<pre class=\"md-html\">"),
            Tag::List(Some(1)) => self.out.push_str("<ol>"),
            Tag::List(Some(start)) => {
                self.out.push_str("<ol start=\"");
                self.out.push_str(&start.to_string());
                self.out.push_str("\">");
            }
            Tag::List(None) => self.out.push_str("<ul>"),
            Tag::Item => self.out.push_str("<li>"),
            Tag::FootnoteDefinition(_) | Tag::DefinitionList | Tag::MetadataBlock(_) => self.out.push_str("<div>"),
            Tag::DefinitionListTitle | Tag::DefinitionListDefinition => self.out.push_str("<p>"),
            Tag::Table(alignments) => {
                self.table_alignments = alignments;
                self.out.push_str("<div class=\"table\"><table>");
            }
            Tag::TableHead => {
                self.in_table_head = true;
                self.table_cell = 0;
                self.out.push_str("<thead><tr>");
            }
            Tag::TableRow => {
                self.table_cell = 0;
                self.out.push_str("<tr>");
            }
            Tag::TableCell => {
                self.out.push_str(if self.in_table_head { "<th" } else { "<td" });
                // Classes, not `style`: the page's CSP allows no inline styles.
                match self.table_alignments.get(self.table_cell) {
                    Some(Alignment::Left) => self.out.push_str(" class=\"align-left\""),
                    Some(Alignment::Center) => self.out.push_str(" class=\"align-center\""),
                    Some(Alignment::Right) => self.out.push_str(" class=\"align-right\""),
                    Some(Alignment::None) | None => {}
                }
                self.out.push('>');
            }
            Tag::Emphasis => self.out.push_str("<em>"),
            Tag::Strong => self.out.push_str("<strong>"),
            Tag::Strikethrough => self.out.push_str("<del>"),
            Tag::Superscript => self.out.push_str("<sup>"),
            Tag::Subscript => self.out.push_str("<sub>"),
            // Images become links: remote images would break the CSP and tell a third party who reads the answer.
            Tag::Link { dest_url, title, .. } | Tag::Image { dest_url, title, .. } => {
                let safe = is_safe_url(&dest_url);
                if safe {
                    self.out.push_str("<a href=\"");
                    self.text(&dest_url);
                    self.out.push('"');
                    if !title.is_empty() {
                        self.out.push_str(" title=\"");
                        self.text(&title);
                        self.out.push('"');
                    }
                    self.out.push_str(" target=\"_blank\" rel=\"noopener noreferrer\">");
                } else {
                    self.out.push_str("<span class=\"md-unsafe-link\" title=\"Link not followed: unsafe address\">");
                }
                self.links.push(safe);
            }
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::DefinitionListTitle | TagEnd::DefinitionListDefinition => {
                self.out.push_str("</p>")
            }
            TagEnd::Heading(level) => {
                self.out.push_str("</");
                self.out.push_str(&level.to_string());
                self.out.push('>');
            }
            TagEnd::BlockQuote(_) => self.out.push_str("</blockquote>"),
            TagEnd::CodeBlock => self.out.push_str("</code></pre></div>"),
            TagEnd::HtmlBlock => self.out.push_str("</pre>"),
            TagEnd::List(true) => self.out.push_str("</ol>"),
            TagEnd::List(false) => self.out.push_str("</ul>"),
            TagEnd::Item => self.out.push_str("</li>"),
            TagEnd::FootnoteDefinition | TagEnd::DefinitionList | TagEnd::MetadataBlock(_) => {
                self.out.push_str("</div>")
            }
            TagEnd::Table => self.out.push_str("</tbody></table></div>"),
            TagEnd::TableHead => {
                self.in_table_head = false;
                self.out.push_str("</tr></thead><tbody>");
            }
            TagEnd::TableRow => self.out.push_str("</tr>"),
            TagEnd::TableCell => {
                self.out.push_str(if self.in_table_head { "</th>" } else { "</td>" });
                self.table_cell += 1;
            }
            TagEnd::Emphasis => self.out.push_str("</em>"),
            TagEnd::Strong => self.out.push_str("</strong>"),
            TagEnd::Strikethrough => self.out.push_str("</del>"),
            TagEnd::Superscript => self.out.push_str("</sup>"),
            TagEnd::Subscript => self.out.push_str("</sub>"),
            TagEnd::Link | TagEnd::Image => {
                self.out.push_str(if self.links.pop().unwrap_or(false) { "</a>" } else { "</span>" })
            }
        }
    }
}

//! Catalog markdown to HTML that is safe to put in a page.
//!
//! Two layers, so neither has to be perfect alone: the markdown renderer never passes raw HTML
//! through (HTML in the text is turned into text, so `<script>` shows as `<script>`), and
//! the result is then sanitized by ammonia's allow-list. Images are rendered as links: the page
//! makes no request to anywhere but the hub, and catalog authors' image URLs point elsewhere.

use std::collections::HashSet;

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};

/// Markdown as sanitized HTML.
pub fn to_safe_html(markdown: &str) -> String {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    let mut in_image = false;
    let events = Parser::new_ext(markdown, options).map(|event| match event {
        // Raw HTML, block or inline, becomes text: shown, never interpreted.
        Event::Html(html) | Event::InlineHtml(html) => Event::Text(html),
        Event::Start(Tag::Image {
            dest_url, title, ..
        }) => {
            in_image = true;
            Event::Start(Tag::Link {
                link_type: pulldown_cmark::LinkType::Inline,
                dest_url,
                title,
                id: CowStr::Borrowed(""),
            })
        }
        Event::End(TagEnd::Image) if in_image => {
            in_image = false;
            Event::End(TagEnd::Link)
        }
        other => other,
    });
    let mut html = String::with_capacity(markdown.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, events);
    sanitize(&html)
}

fn sanitize(html: &str) -> String {
    let tags: HashSet<&str> = [
        "a",
        "p",
        "br",
        "hr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "ul",
        "ol",
        "li",
        "blockquote",
        "pre",
        "code",
        "em",
        "strong",
        "del",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
    ]
    .into_iter()
    .collect();
    ammonia::Builder::default()
        .tags(tags)
        .url_schemes(["http", "https", "mailto"].into_iter().collect())
        .link_rel(Some("noopener noreferrer nofollow"))
        .clean(html)
        .to_string()
}

/// The first paragraph of markdown as plain text, at most `max` characters: what a list card
/// shows when the catalog has no one-line description.
pub fn summary(markdown: &str, max: usize) -> String {
    let mut text = String::new();
    for event in Parser::new(markdown) {
        match event {
            Event::Text(t) | Event::Code(t) => text.push_str(&t),
            Event::SoftBreak | Event::HardBreak => text.push(' '),
            Event::End(TagEnd::Paragraph) if !text.trim().is_empty() => break,
            Event::End(TagEnd::Heading(_)) => text.clear(),
            _ => {}
        }
    }
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() <= max {
        return text;
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_renders_and_html_in_it_is_shown_as_text() {
        let cases = [
            (
                "# Title\n\nSome *text*.",
                "<h1>Title</h1>\n<p>Some <em>text</em>.</p>\n",
            ),
            (
                "<script>alert(1)</script>",
                "&lt;script&gt;alert(1)&lt;/script&gt;",
            ),
            (
                "inline <img src=x onerror=alert(1)> html",
                "<p>inline &lt;img src=x onerror=alert(1)&gt; html</p>\n",
            ),
            (
                "[x](javascript:alert(1))",
                "<p><a rel=\"noopener noreferrer nofollow\">x</a></p>\n",
            ),
            (
                "![logo](https://example.com/logo.png)",
                "<p><a href=\"https://example.com/logo.png\" rel=\"noopener noreferrer nofollow\">logo</a></p>\n",
            ),
            (
                "`<b>` and\n\n    <i>code</i>",
                "<p><code>&lt;b&gt;</code> and</p>\n<pre><code>&lt;i&gt;code&lt;/i&gt;</code></pre>\n",
            ),
        ];
        for (markdown, html) in cases {
            let out = to_safe_html(markdown);
            assert!(
                out.contains(html),
                "{markdown:?} rendered as {out:?}, expected to contain {html:?}"
            );
        }
    }

    #[test]
    fn no_rendering_ever_carries_a_live_element() {
        for attack in [
            "<script>x</script>",
            "<svg onload=alert(1)>",
            "<iframe src=//evil>",
            "[a](data:text/html,<script>x</script>)",
            "<a href=\"javascript:x\">y</a>",
            "<style>body{}</style>",
            "<object data=x>",
        ] {
            let out = to_safe_html(attack);
            // Escaped text may spell anything (its `<` is `&lt;`): only real tags are checked.
            let tags = out
                .split('<')
                .skip(1)
                .map(|t| t.split('>').next().unwrap_or(t));
            for tag in tags {
                let name = tag
                    .trim_start_matches('/')
                    .split([' ', '>'])
                    .next()
                    .unwrap_or("");
                assert!(
                    !["script", "svg", "iframe", "style", "object"].contains(&name),
                    "{attack:?} -> {out:?} has a <{name}> element"
                );
                assert!(
                    !tag.contains("javascript:") && !tag.contains("data:"),
                    "{attack:?} -> {out:?} has a tag with a script or data URL: <{tag}>"
                );
            }
        }
    }

    #[test]
    fn summaries_take_the_first_paragraph_and_cut_it() {
        assert_eq!(
            summary("# Etcd\n\nA key\nvalue store.\n\nMore.", 80),
            "A key value store."
        );
        assert_eq!(summary("abcdef", 4), "abc…");
        assert_eq!(summary("", 10), "");
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_text_never_yields_a_script_tag(text in ".{0,200}") {
            let out = to_safe_html(&text);
            proptest::prop_assert!(!out.to_ascii_lowercase().contains("<script"));
        }
    }
}

//! A channel's upgrade graph as an SVG picture, drawn on the server.
//!
//! Versions sit left to right, oldest first. `replaces` edges are solid and drawn below the
//! row, `skips` dashed and `olm.skipRange` dotted, both above it in their own colours; the head
//! has a thick green border and a "head" label; a legend names the three. Only presentation
//! attributes are used (no `style` attribute or element), so the picture passes a strict
//! Content-Security-Policy, and every catalog string is XML-escaped.

use std::fmt::Write as _;

use crate::{detail::ChannelDetail, html::escape};

const BOX_WIDTH: i32 = 132;
const BOX_HEIGHT: i32 = 44;
const GAP: i32 = 36;
const MARGIN: i32 = 16;

struct Kind {
    name: &'static str,
    colour: &'static str,
    dash: &'static str,
    above: bool,
}

const KINDS: [Kind; 3] = [
    Kind {
        name: "replaces",
        colour: "#3b5b92",
        dash: "",
        above: false,
    },
    Kind {
        name: "skips",
        colour: "#b5651d",
        dash: "7 4",
        above: true,
    },
    Kind {
        name: "skipRange",
        colour: "#7a3e9d",
        dash: "2 3",
        above: true,
    },
];

fn kind(name: &str) -> &'static Kind {
    KINDS.iter().find(|k| k.name == name).unwrap_or(&KINDS[0])
}

/// Cuts a label to what fits in a box.
fn fit(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

/// The SVG document for one channel.
pub fn channel_svg(package: &str, channel: &ChannelDetail) -> String {
    // Entries come newest first; draw oldest first.
    let nodes: Vec<_> = channel.entries.iter().rev().collect();
    let n = nodes.len().max(1) as i32;
    let position = |name: &str| nodes.iter().position(|e| e.name == name);
    let longest = channel
        .edges
        .iter()
        .filter_map(|e| Some(position(&e.from)?.abs_diff(position(&e.to)?) as i32))
        .max()
        .unwrap_or(1);
    let lift = 18 + 14 * longest.min(8);
    let row_y = MARGIN + 22 + lift;
    let width = MARGIN * 2 + n * BOX_WIDTH + (n - 1) * GAP;
    let legend_y = row_y + BOX_HEIGHT + lift + 16;
    let height = legend_y + 26;
    let x_of = |i: usize| MARGIN + i as i32 * (BOX_WIDTH + GAP);

    let mut svg = String::new();
    let _ = write!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="upgrade graph of {} channel {}" font-family="sans-serif" font-size="12">"##,
        escape(package),
        escape(&channel.name)
    );
    let _ = write!(
        svg,
        r##"<title>{} / {}</title><defs>"##,
        escape(package),
        escape(&channel.name)
    );
    for k in &KINDS {
        let _ = write!(
            svg,
            r##"<marker id="arrow-{}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{}"/></marker>"##,
            k.name, k.colour
        );
    }
    svg.push_str("</defs>");
    let _ = write!(
        svg,
        r##"<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>"##
    );

    for edge in &channel.edges {
        let (Some(from), Some(to)) = (position(&edge.from), position(&edge.to)) else {
            continue;
        };
        let k = kind(edge.kind);
        let distance = from.abs_diff(to) as i32;
        let x1 = x_of(from) + BOX_WIDTH / 2;
        let x2 = x_of(to) + BOX_WIDTH / 2;
        let (y, bend) = if k.above {
            (row_y, -(18 + 14 * distance.min(8)))
        } else if distance == 1 {
            (row_y + BOX_HEIGHT / 2, 0)
        } else {
            (row_y + BOX_HEIGHT, 18 + 14 * distance.min(8))
        };
        let path = if bend == 0 {
            // Neighbours: a straight arrow between the boxes.
            let (sx, ex) = if x2 > x1 {
                (x_of(from) + BOX_WIDTH, x_of(to))
            } else {
                (x_of(from), x_of(to) + BOX_WIDTH)
            };
            format!("M{sx},{y} L{ex},{y}")
        } else {
            format!("M{x1},{y} C{x1},{} {x2},{} {x2},{y}", y + bend, y + bend)
        };
        let dash = if k.dash.is_empty() {
            String::new()
        } else {
            format!(r##" stroke-dasharray="{}""##, k.dash)
        };
        let _ = write!(
            svg,
            r##"<path class="edge {name}" d="{path}" fill="none" stroke="{colour}" stroke-width="1.6"{dash} marker-end="url(#arrow-{name})"><title>{} {name} {}</title></path>"##,
            escape(&edge.to),
            escape(&edge.from),
            name = k.name,
            colour = k.colour,
        );
    }

    for (i, entry) in nodes.iter().enumerate() {
        let x = x_of(i);
        let is_head = channel.head.as_deref() == Some(entry.name.as_str());
        let (stroke, width_px, fill) = if is_head {
            ("#1f7a3a", 3, "#e3f4e8")
        } else {
            ("#5b6573", 1, "#f6f7f9")
        };
        let version = entry.version.as_deref().unwrap_or("(no bundle)");
        let _ = write!(
            svg,
            r##"<g class="node{}"><rect x="{x}" y="{row_y}" width="{BOX_WIDTH}" height="{BOX_HEIGHT}" rx="6" fill="{fill}" stroke="{stroke}" stroke-width="{width_px}"/><text x="{}" y="{}" text-anchor="middle" font-weight="bold">{}</text><text x="{}" y="{}" text-anchor="middle" fill="#5b6573" font-size="10">{}</text><title>{}</title></g>"##,
            if is_head { " head" } else { "" },
            x + BOX_WIDTH / 2,
            row_y + 19,
            escape(&fit(version, 18)),
            x + BOX_WIDTH / 2,
            row_y + 35,
            escape(&fit(&entry.name, 22)),
            escape(&entry.name),
        );
        if is_head {
            let _ = write!(
                svg,
                r##"<text x="{}" y="{}" text-anchor="middle" fill="#1f7a3a" font-weight="bold">head</text>"##,
                x + BOX_WIDTH / 2,
                row_y + BOX_HEIGHT + 14
            );
        }
    }

    let mut x = MARGIN;
    for k in &KINDS {
        let dash = if k.dash.is_empty() {
            String::new()
        } else {
            format!(r##" stroke-dasharray="{}""##, k.dash)
        };
        let _ = write!(
            svg,
            r##"<line x1="{x}" y1="{legend_y}" x2="{}" y2="{legend_y}" stroke="{}" stroke-width="1.6"{dash}/><text x="{}" y="{}">{}</text>"##,
            x + 28,
            k.colour,
            x + 34,
            legend_y + 4,
            k.name
        );
        x += 120;
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{detail::PackageDetail, synthetic};

    fn stable(versions: usize) -> ChannelDetail {
        let content = synthetic::content("c", synthetic::catalog(1, versions));
        let detail = PackageDetail::of(&content, &content.catalog.packages["synthetic-0"]);
        detail.channel("stable").unwrap().clone()
    }

    #[test]
    fn heads_skips_and_skip_ranges_are_drawn_apart() {
        let svg = channel_svg("synthetic-0", &stable(4));
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert_eq!(svg.matches("<g class=\"node").count(), 4);
        assert_eq!(svg.matches("<g class=\"node head\"").count(), 1);
        assert_eq!(svg.matches("class=\"edge replaces\"").count(), 3);
        assert_eq!(svg.matches("class=\"edge skips\"").count(), 1);
        assert_eq!(svg.matches("class=\"edge skipRange\"").count(), 2);
        assert!(svg.contains("stroke-dasharray=\"7 4\""));
        assert!(svg.contains("stroke-dasharray=\"2 3\""));
        // A strict CSP allows no style attribute or element.
        assert!(!svg.contains("style"));
    }

    #[test]
    fn catalog_text_is_escaped() {
        let mut channel = stable(1);
        channel.entries[0].name = "<script>alert(1)</script>".into();
        channel.head = Some(channel.entries[0].name.clone());
        let svg = channel_svg("p\"><script>", &channel);
        assert!(!svg.contains("<script"), "{svg}");
        assert!(svg.contains("&lt;script&gt;"));
    }
}

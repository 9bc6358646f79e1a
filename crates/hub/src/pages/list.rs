//! The list: a search box, filters (provider type, keyword, catalog, whether to show what is
//! delisted) and one card per package.

use std::fmt::Write as _;

use crate::{
    html::{Section, Viewer, escape, icon, layout, provider_badge, query, segment},
    index::{HubIndex, PROVIDER_TYPES, PackageSummary, Query},
};

/// Cards per page: the page stays light with thousands of packages.
pub const PAGE_SIZE: usize = 48;

/// The whole list page.
pub fn list_page(index: &HubIndex, search: &Query, page: usize, viewer: &Viewer) -> String {
    let mut body = String::new();
    body.push_str("<h1>Operators</h1>");
    body.push_str(
        "<form class=\"search\" id=\"search\" method=\"get\" action=\"/\" role=\"search\">",
    );
    let _ = write!(
        body,
        "<input type=\"search\" name=\"q\" id=\"q\" value=\"{}\" placeholder=\"Search by name, provider, keyword…\" aria-label=\"Search\" autocomplete=\"off\">",
        escape(&search.q)
    );
    body.push_str("<select name=\"providerType\" aria-label=\"Provider type\"><option value=\"\">any provider type</option>");
    for t in PROVIDER_TYPES {
        let selected = if search.provider_type.as_deref() == Some(t) {
            " selected"
        } else {
            ""
        };
        let _ = write!(body, "<option value=\"{t}\"{selected}>{t}</option>");
    }
    body.push_str("</select><select name=\"keyword\" aria-label=\"Keyword\"><option value=\"\">any keyword</option>");
    for (keyword, count) in index.keywords(40) {
        let selected = if search
            .keyword
            .as_deref()
            .is_some_and(|k| k.eq_ignore_ascii_case(&keyword))
        {
            " selected"
        } else {
            ""
        };
        let _ = write!(
            body,
            "<option value=\"{k}\"{selected}>{k} ({count})</option>",
            k = escape(&keyword)
        );
    }
    body.push_str("</select>");
    if index.catalogs().len() > 1 || search.catalog.is_some() {
        body.push_str("<select name=\"catalog\" aria-label=\"Catalog\"><option value=\"\">every catalog</option>");
        for catalog in index.catalogs() {
            let selected = if search.catalog.as_deref() == Some(catalog.name.as_str()) {
                " selected"
            } else {
                ""
            };
            let _ = write!(
                body,
                "<option value=\"{n}\"{selected}>{shown}</option>",
                n = escape(&catalog.name),
                shown = escape(catalog.display_name.as_deref().unwrap_or(&catalog.name))
            );
        }
        body.push_str("</select>");
    }
    let _ = write!(
        body,
        "<label class=\"inline\"><input type=\"checkbox\" name=\"delisted\" value=\"include\" id=\"show-delisted\"{}> delisted too</label>",
        if search.delisted { " checked" } else { "" }
    );
    body.push_str("<button type=\"submit\">Search</button></form>");
    body.push_str("<div id=\"results\" aria-live=\"polite\">");
    body.push_str(&results(index, search, page));
    body.push_str("</div>");
    layout("Operators", Section::Packages, viewer, &body)
}

/// The cards for one page of results, with the count and paging links: what the search box
/// swaps in as you type.
pub fn results(index: &HubIndex, search: &Query, page: usize) -> String {
    let hits = index.search(search);
    let pages = hits.len().div_ceil(PAGE_SIZE).max(1);
    let page = page.clamp(1, pages);
    let mut out = String::new();
    let _ = write!(
        out,
        "<p class=\"count\" id=\"count\">{} package{}</p>",
        hits.len(),
        if hits.len() == 1 { "" } else { "s" }
    );
    if hits.is_empty() {
        out.push_str("<p class=\"empty\">Nothing matches. Try fewer words or other filters.</p>");
        return out;
    }
    out.push_str("<ul class=\"cards\">");
    for summary in hits.iter().skip((page - 1) * PAGE_SIZE).take(PAGE_SIZE) {
        card(&mut out, summary);
    }
    out.push_str("</ul>");
    if pages > 1 {
        out.push_str("<nav class=\"pages\" aria-label=\"Pages\">");
        let link = |n: usize| {
            let page = n.to_string();
            format!(
                "/?{}",
                query(&[
                    ("q", &search.q),
                    (
                        "providerType",
                        search.provider_type.as_deref().unwrap_or("")
                    ),
                    ("keyword", search.keyword.as_deref().unwrap_or("")),
                    ("catalog", search.catalog.as_deref().unwrap_or("")),
                    ("delisted", if search.delisted { "include" } else { "" }),
                    ("page", &page),
                ])
            )
        };
        if page > 1 {
            let _ = write!(
                out,
                "<a rel=\"prev\" href=\"{}\">previous</a>",
                escape(&link(page - 1))
            );
        }
        let _ = write!(out, "<span>page {page} of {pages}</span>");
        if page < pages {
            let _ = write!(
                out,
                "<a rel=\"next\" href=\"{}\">next</a>",
                escape(&link(page + 1))
            );
        }
        out.push_str("</nav>");
    }
    out
}

fn card(out: &mut String, p: &PackageSummary) {
    let _ = write!(
        out,
        "<li class=\"card\" data-package=\"{name}\"><a class=\"card-link\" href=\"/packages/{cat}/{pkg}\">{icon}<span class=\"card-title\">{title}</span></a>",
        name = escape(&p.name),
        cat = segment(&p.catalog),
        pkg = segment(&p.name),
        icon = icon(&p.catalog, &p.name, &p.display_name, p.has_icon, "icon"),
        title = escape(&p.display_name),
    );
    let _ = write!(
        out,
        "<p class=\"provider\">{}{}</p>",
        p.provider
            .name
            .as_deref()
            .map(|n| format!("<span class=\"provider-name\">{}</span> ", escape(n)))
            .unwrap_or_default(),
        provider_badge(&p.provider.provider_type)
    );
    if !p.short_description.is_empty() {
        let _ = write!(
            out,
            "<p class=\"summary\">{}</p>",
            escape(&p.short_description)
        );
    }
    if !p.keywords.is_empty() {
        out.push_str("<p class=\"keywords\">");
        for keyword in &p.keywords {
            let _ = write!(
                out,
                "<a class=\"keyword\" href=\"/?{}\">{}</a>",
                escape(&query(&[("keyword", keyword)])),
                escape(keyword)
            );
        }
        out.push_str("</p>");
    }
    if p.delisted {
        let _ = write!(
            out,
            "<p class=\"message warning\">Delisted by catalog {}</p>",
            escape(&p.catalog)
        );
    }
    let _ = write!(
        out,
        "<p class=\"meta\">{}{}</p></li>",
        p.latest_version
            .as_deref()
            .map(|v| format!("<span>v{}</span> ", escape(v)))
            .unwrap_or_default(),
        format_args!("<span class=\"catalog\">{}</span>", escape(&p.catalog)),
    );
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::synthetic;

    fn index(n: usize) -> HubIndex {
        HubIndex::new(vec![Arc::new(synthetic::content(
            "synthetic",
            synthetic::catalog(n, 2),
        ))])
    }

    #[test]
    fn the_list_shows_cards_with_icon_provider_badge_description_and_keywords() {
        let page = list_page(&index(3), &Query::default(), 1, &Viewer::default());
        assert_eq!(page.matches("<li class=\"card\"").count(), 3);
        assert!(page.contains("<img class=\"icon\" src=\"/icons/synthetic/synthetic-0\""));
        assert!(page.contains("<span class=\"badge type-certified\">certified</span>"));
        assert!(page.contains("Runs database and backup for you."));
        assert!(page.contains("<a class=\"keyword\" href=\"/?keyword=database\">database</a>"));
        assert!(page.contains("3 packages"));
        assert!(!page.contains("Delisted by"));
    }

    #[test]
    fn a_package_delisted_whole_is_listed_only_when_asked_for_and_says_so() {
        let mut content = synthetic::content("vendor", synthetic::catalog(2, 2));
        content.delisting = windlass_catalog::listing::Delisting::from_entries([(
            "synthetic-1",
            [].as_slice(),
            "EOL",
        )])
        .0;
        let index = HubIndex::new(vec![Arc::new(content)]);
        let plain = list_page(&index, &Query::default(), 1, &Viewer::default());
        assert!(plain.contains("1 package<"));
        assert!(!plain.contains("data-package=\"synthetic-1\""));
        assert!(plain.contains("id=\"show-delisted\">"));
        let asked = Query::parse("delisted=include");
        let all = list_page(&index, &asked, 1, &Viewer::default());
        assert!(all.contains("2 packages"));
        assert!(all.contains("id=\"show-delisted\" checked>"));
        assert!(all.contains("<p class=\"message warning\">Delisted by catalog vendor</p>"));
    }

    #[test]
    fn results_are_paged() {
        let index = index(PAGE_SIZE + 5);
        let first = results(&index, &Query::default(), 1);
        assert_eq!(first.matches("<li class=\"card\"").count(), PAGE_SIZE);
        assert!(first.contains("page 1 of 2"));
        assert!(first.contains("href=\"/?page=2\""));
        let second = results(&index, &Query::default(), 2);
        assert_eq!(second.matches("<li class=\"card\"").count(), 5);
        assert!(second.contains("rel=\"prev\""));
        let beyond = results(&index, &Query::default(), 99);
        assert_eq!(beyond, second, "a page past the end shows the last");
    }

    #[test]
    fn searches_are_kept_in_the_form_escaped() {
        let search = Query::parse("q=%22%3E%3Cscript%3E");
        let page = list_page(&index(1), &search, 1, &Viewer::default());
        assert!(page.contains("value=\"&quot;&gt;&lt;script&gt;\""));
        assert!(page.contains("0 packages"));
    }
}

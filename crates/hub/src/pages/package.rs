//! A package's page: what it is (sanitized markdown), who provides it, the install form, its
//! versions per channel with the upgrade graph, the APIs it owns and needs, its samples, what
//! its catalog delists of it, and for people who may edit that Catalog, Delist and Relist;
//! where the person may read installs of it, those and the custom resources they manage
//! (after a delist, what to reclaim).

use std::fmt::Write as _;

use super::{delisting, instances};
use crate::{
    detail::PackageDetail,
    html::{Section, Viewer, escape, icon, layout, provider_badge, query, segment},
    instances::Instances,
    markdown,
};

/// What the install form starts with.
#[derive(Clone, Debug, Default)]
pub struct InstallDefaults {
    /// The namespace the person last looked at.
    pub namespace: String,
}

/// What the page shows beyond the package itself.
#[derive(Clone, Debug, Default)]
pub struct Around {
    /// The other catalogs that offer a package of this name.
    pub also_offered_by: Vec<String>,
    /// The person may patch the package's Catalog (as the API server answered when asked),
    /// so the page offers Delist and Relist.
    pub may_delist: bool,
    /// The package's installs the person may read and their custom resources; `None` when
    /// not looked for.
    pub instances: Option<Instances>,
}

pub fn package_page(
    detail: &PackageDetail,
    defaults: &InstallDefaults,
    around: &Around,
    viewer: &Viewer,
) -> String {
    let meta = &detail.metadata;
    let mut body = String::new();
    let _ = write!(
        body,
        "<article class=\"package\" data-package=\"{}\"><header class=\"package-head\">{}<div><h1 id=\"title\">{}</h1><p class=\"provider\">{}{} <span class=\"catalog\">from catalog {}</span></p>",
        escape(&detail.name),
        icon(
            &detail.catalog,
            &detail.name,
            &detail.display_name,
            detail.has_icon,
            "icon big"
        ),
        escape(&detail.display_name),
        match (&meta.provider.name, &meta.provider.url) {
            (Some(name), Some(url))
                if url.starts_with("https://") || url.starts_with("http://") =>
                format!(
                    "<a class=\"provider-name\" href=\"{}\" rel=\"noopener noreferrer nofollow\">{}</a> ",
                    escape(url),
                    escape(name)
                ),
            (Some(name), _) => format!("<span class=\"provider-name\">{}</span> ", escape(name)),
            (None, _) => String::new(),
        },
        provider_badge(&meta.provider.provider_type),
        escape(&detail.catalog),
    );
    if let Some(short) = &meta.short_description {
        let _ = write!(body, "<p class=\"summary\">{}</p>", escape(short));
    }
    if !meta.keywords.is_empty() {
        body.push_str("<p class=\"keywords\">");
        for keyword in &meta.keywords {
            let _ = write!(
                body,
                "<a class=\"keyword\" href=\"/?{}\">{}</a>",
                escape(&query(&[("keyword", keyword)])),
                escape(keyword)
            );
        }
        body.push_str("</p>");
    }
    if !around.also_offered_by.is_empty() {
        body.push_str("<p class=\"also\" id=\"also-offered\">Also offered by catalog ");
        for (i, other) in around.also_offered_by.iter().enumerate() {
            let _ = write!(
                body,
                "{}<a href=\"/packages/{}/{}\">{}</a>",
                if i == 0 { "" } else { ", " },
                segment(other),
                segment(&detail.name),
                escape(other)
            );
        }
        body.push_str("</p>");
    }
    body.push_str("</div></header>");
    delisting::notice(&mut body, detail);
    instances::reclaim(&mut body, around.instances.as_ref());
    for deprecation in &detail.deprecations {
        let _ = write!(
            body,
            "<p class=\"message warning\">Deprecated: {}</p>",
            escape(deprecation)
        );
    }

    body.push_str("<div class=\"columns\"><section class=\"about\"><h2>About</h2><div class=\"description\" id=\"description\">");
    match &meta.description {
        Some(text) => body.push_str(&markdown::to_safe_html(text)),
        None => body.push_str("<p class=\"empty\">The catalog has no description.</p>"),
    }
    body.push_str("</div>");
    facts(&mut body, detail);
    body.push_str("</section>");
    install_form(&mut body, detail, defaults, viewer);
    body.push_str("</div>");
    if around.may_delist {
        delisting::forms(&mut body, detail, viewer);
    }
    instances::section(&mut body, around.instances.as_ref());

    versions(&mut body, detail);
    apis(&mut body, detail);
    samples(&mut body, detail);
    body.push_str("</article>");
    layout(&detail.display_name, Section::Packages, viewer, &body)
}

fn facts(body: &mut String, detail: &PackageDetail) {
    let meta = &detail.metadata;
    body.push_str("<dl class=\"facts\">");
    let mut fact = |name: &str, value: &str| {
        if !value.is_empty() {
            let _ = write!(body, "<dt>{name}</dt><dd>{}</dd>", escape(value));
        }
    };
    fact("Package", &detail.name);
    fact(
        "Latest version",
        detail.latest_version.as_deref().unwrap_or(""),
    );
    fact(
        "Default channel",
        detail.default_channel.as_deref().unwrap_or(""),
    );
    fact("Capabilities", meta.capabilities.as_deref().unwrap_or(""));
    fact("Maturity", meta.maturity.as_deref().unwrap_or(""));
    fact("Categories", &meta.categories.join(", "));
    fact(
        "Minimum Kubernetes",
        meta.min_kube_version.as_deref().unwrap_or(""),
    );
    let modes: Vec<&str> = meta
        .install_modes
        .iter()
        .filter(|m| m.supported)
        .map(|m| m.type_.as_str())
        .collect();
    fact("Install modes", &modes.join(", "));
    let required: Vec<String> = detail
        .required_packages
        .iter()
        .map(|r| format!("{} {}", r.package, r.version_range))
        .collect();
    fact("Requires packages", &required.join(", "));
    body.push_str("</dl>");
    let links: Vec<_> = meta
        .links
        .iter()
        .filter(|l| l.url.starts_with("https://") || l.url.starts_with("http://"))
        .collect();
    if !links.is_empty() {
        body.push_str("<ul class=\"links\">");
        for link in links {
            let _ = write!(
                body,
                "<li><a href=\"{}\" rel=\"noopener noreferrer nofollow\">{}</a></li>",
                escape(&link.url),
                escape(&link.name)
            );
        }
        body.push_str("</ul>");
    }
}

fn install_form(
    body: &mut String,
    detail: &PackageDetail,
    defaults: &InstallDefaults,
    viewer: &Viewer,
) {
    body.push_str("<section class=\"install\"><h2>Install</h2>");
    if let Some(delisted) = detail.delisted.as_ref().filter(|d| d.whole) {
        let _ = write!(
            body,
            "<p class=\"empty\" id=\"install-delisted\">Catalog {} delists this package: new Subscriptions cannot install it.</p></section>",
            escape(&delisted.catalog)
        );
        return;
    }
    let _ = write!(
        body,
        "<form id=\"install\" method=\"post\" action=\"/actions/install\" data-action=\"install\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"catalog\" value=\"{}\"><input type=\"hidden\" name=\"package\" value=\"{}\">",
        escape(&viewer.csrf_token),
        escape(&detail.catalog),
        escape(&detail.name)
    );
    let _ = write!(
        body,
        "<label>Namespace<input name=\"namespace\" id=\"install-namespace\" required value=\"{}\" pattern=\"[a-z0-9]([-a-z0-9]*[a-z0-9])?\"></label>",
        escape(&defaults.namespace)
    );
    body.push_str("<label>Channel<select name=\"channel\" id=\"install-channel\">");
    for channel in &detail.channels {
        let selected = if detail.default_channel.as_deref() == Some(channel.name.as_str()) {
            " selected"
        } else {
            ""
        };
        let _ = write!(
            body,
            "<option value=\"{n}\"{selected}>{n}{}</option>",
            channel
                .head
                .as_deref()
                .and_then(|h| channel.entries.iter().find(|e| e.name == h))
                .and_then(|e| e.version.as_deref())
                .map(|v| format!(" (head {})", escape(v)))
                .unwrap_or_default(),
            n = escape(&channel.name)
        );
    }
    body.push_str("</select></label>");
    let supports = |mode: &str| {
        detail.metadata.install_modes.is_empty()
            || detail
                .metadata
                .install_modes
                .iter()
                .any(|m| m.type_ == mode && m.supported)
    };
    body.push_str("<label>Watches<select name=\"watch\" id=\"install-watch\">");
    if supports("OwnNamespace") {
        body.push_str("<option value=\"own\" selected>this namespace only</option>");
    }
    if supports("AllNamespaces") {
        body.push_str(
            "<option value=\"all\">every namespace (where an InstallPolicy allows it)</option>",
        );
    }
    body.push_str("</select></label>");
    body.push_str("<label>Version range<input name=\"versionRange\" id=\"install-range\" placeholder=\"any, or e.g. >=1.0.0 <2.0.0\"></label>");
    body.push_str("<fieldset><legend>Approval</legend><label class=\"inline\"><input type=\"radio\" name=\"approval\" value=\"Automatic\" checked> Automatic</label><label class=\"inline\"><input type=\"radio\" name=\"approval\" value=\"Manual\" id=\"install-manual\"> Manual: each version waits for a person</label></fieldset>");
    body.push_str("<button type=\"submit\" id=\"install-submit\">Install</button>");
    body.push_str("<p class=\"message\" id=\"install-result\" role=\"status\" aria-live=\"polite\"></p></form></section>");
}

fn versions(body: &mut String, detail: &PackageDetail) {
    body.push_str("<section class=\"versions\"><h2>Versions</h2>");
    for channel in &detail.channels {
        let _ = write!(
            body,
            "<section class=\"channel\" data-channel=\"{n}\"><h3>Channel {n}{}</h3>",
            if detail.default_channel.as_deref() == Some(channel.name.as_str()) {
                " <span class=\"badge\">default</span>"
            } else {
                ""
            },
            n = escape(&channel.name)
        );
        for problem in &channel.problems {
            let _ = write!(body, "<p class=\"message warning\">{}</p>", escape(problem));
        }
        let _ = write!(
            body,
            "<div class=\"graph\"><img class=\"graph-image\" src=\"/graphs/{}/{}/{}.svg\" alt=\"Upgrade graph of channel {}: which version may follow which\"></div>",
            segment(&detail.catalog),
            segment(&detail.name),
            segment(&channel.name),
            escape(&channel.name)
        );
        body.push_str("<table class=\"entries\"><thead><tr><th>Version</th><th>Bundle</th><th>Replaces</th><th>Skips</th><th>Skip range</th></tr></thead><tbody>");
        for entry in &channel.entries {
            let head = channel.head.as_deref() == Some(entry.name.as_str());
            let _ = write!(
                body,
                "<tr{}><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                if head { " class=\"head\"" } else { "" },
                escape(entry.version.as_deref().unwrap_or("?")),
                if head {
                    " <span class=\"badge head\">head</span>"
                } else {
                    ""
                },
                escape(&entry.name),
                escape(entry.replaces.as_deref().unwrap_or("")),
                escape(&entry.skips.join(", ")),
                escape(entry.skip_range.as_deref().unwrap_or("")),
            );
        }
        body.push_str("</tbody></table></section>");
    }
    body.push_str("</section>");
}

fn apis(body: &mut String, detail: &PackageDetail) {
    let meta = &detail.metadata;
    for (title, list, id) in [
        ("APIs it provides", &meta.owned_apis, "owned-apis"),
        ("APIs it needs", &meta.required_apis, "required-apis"),
    ] {
        if list.is_empty() {
            continue;
        }
        let _ = write!(
            body,
            "<section class=\"apis\" id=\"{id}\"><h2>{title}</h2><table><thead><tr><th>Kind</th><th>API</th><th>Name</th><th>Description</th></tr></thead><tbody>"
        );
        for api in list {
            let _ = write!(
                body,
                "<tr><td>{}</td><td>{}/{}</td><td>{}</td><td>{}</td></tr>",
                escape(api.display_name.as_deref().unwrap_or(&api.kind)),
                escape(&api.group),
                escape(&api.version),
                escape(&api.name),
                escape(api.description.as_deref().unwrap_or("")),
            );
        }
        body.push_str("</tbody></table></section>");
    }
}

fn samples(body: &mut String, detail: &PackageDetail) {
    let meta = &detail.metadata;
    for problem in &meta.problems {
        let _ = write!(body, "<p class=\"message warning\">{}</p>", escape(problem));
    }
    if meta.examples.is_empty() {
        return;
    }
    body.push_str("<section class=\"samples\" id=\"samples\"><h2>Samples</h2>");
    for example in &meta.examples {
        let kind = example["kind"].as_str().unwrap_or("object");
        let text = serde_json::to_string_pretty(example).unwrap_or_default();
        let _ = write!(
            body,
            "<details open><summary>{}</summary><pre><code>{}</code></pre></details>",
            escape(kind),
            escape(&text)
        );
    }
    body.push_str("</section>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic;

    fn detail(tweak: impl Fn(&mut serde_json::Value)) -> PackageDetail {
        let mut catalog = synthetic::catalog(1, 3);
        for bundle in catalog
            .packages
            .get_mut("synthetic-0")
            .unwrap()
            .bundles
            .values_mut()
        {
            for property in &mut bundle.properties {
                if let windlass_catalog::Property::Other { value, .. } = property {
                    let mut v = value.to_value();
                    tweak(&mut v);
                    *value = windlass_catalog::model::RawJson::from_value(&v);
                }
            }
        }
        let content = synthetic::content("synthetic", catalog);
        PackageDetail::of(&content, &content.catalog.packages["synthetic-0"])
    }

    #[test]
    fn the_page_shows_versions_graphs_apis_samples_and_the_install_form() {
        let page = package_page(
            &detail(|_| {}),
            &InstallDefaults {
                namespace: "team-a".into(),
            },
            &Around::default(),
            &Viewer::default(),
        );
        assert!(page.contains("<h1 id=\"title\">Synthetic Operator 0</h1>"));
        assert!(page.contains("src=\"/graphs/synthetic/synthetic-0/stable.svg\""));
        assert_eq!(page.matches("<tr class=\"head\">").count(), 1);
        assert!(
            page.contains("<strong>database</strong>"),
            "markdown rendered"
        );
        assert!(page.contains("id=\"owned-apis\""));
        assert!(page.contains("<summary>Widget0</summary>"));
        assert!(
            page.contains("name=\"namespace\" id=\"install-namespace\" required value=\"team-a\"")
        );
        assert!(page.contains("<option value=\"stable\" selected>stable (head 1.2.0)</option>"));
        assert!(page.contains("value=\"Manual\""));
        assert!(page.contains("<option value=\"own\" selected>this namespace only</option>"));
    }

    #[test]
    fn a_script_in_the_description_is_shown_as_text() {
        let page = package_page(
            &detail(|v| {
                v["description"] = "Hello <script>document.title='owned'</script> world".into();
                v["displayName"] = "<img src=x onerror=alert(1)>".into();
                v["links"] = serde_json::json!([{"name": "bad", "url": "javascript:alert(1)"}]);
            }),
            &InstallDefaults::default(),
            &Around::default(),
            &Viewer::default(),
        );
        assert!(page.contains("&lt;script&gt;document.title="));
        assert!(!page.contains("<script>document"));
        assert!(!page.contains("<img src=x"));
        assert!(!page.contains("javascript:"));
        assert_eq!(
            page.matches("<script").count(),
            1,
            "only the hub's own script"
        );
    }

    fn delisted(versions: &[&str], reason: &str) -> PackageDetail {
        let mut content = synthetic::content("vendor", synthetic::catalog(1, 3));
        let versions: Vec<String> = versions.iter().map(|v| v.to_string()).collect();
        content.delisting = windlass_catalog::listing::Delisting::from_entries([(
            "synthetic-0",
            versions.as_slice(),
            reason,
        )])
        .0;
        PackageDetail::of(&content, &content.catalog.packages["synthetic-0"])
    }

    fn viewer() -> Viewer {
        Viewer {
            user: Some("jane".into()),
            csrf_token: "tok".into(),
        }
    }

    #[test]
    fn delisting_is_shown_to_everyone_and_the_forms_only_to_who_may_edit_the_catalog() {
        let detail = delisted(&["1.2.0"], "CVE-1 <b>");
        let reader = package_page(
            &detail,
            &InstallDefaults::default(),
            &Around::default(),
            &viewer(),
        );
        assert!(reader.contains(
            "Delisted: version 1.2.0 of package synthetic-0 is delisted by catalog vendor (CVE-1 &lt;b&gt;)."
        ));
        assert!(
            !reader.contains("id=\"delisting\""),
            "no forms for a reader"
        );
        assert!(
            reader.contains("id=\"install-submit\""),
            "the rest stays installable"
        );

        let admin = package_page(
            &detail,
            &InstallDefaults::default(),
            &Around {
                also_offered_by: vec!["mirror".into()],
                may_delist: true,
                instances: None,
            },
            &viewer(),
        );
        assert!(admin.contains(
            "Also offered by catalog <a href=\"/packages/mirror/synthetic-0\">mirror</a>"
        ));
        assert!(admin.contains("<form id=\"delist\" method=\"post\" action=\"/actions/delist\""));
        assert!(admin.contains("<input type=\"hidden\" name=\"csrf\" value=\"tok\"><input type=\"hidden\" name=\"catalog\" value=\"vendor\"><input type=\"hidden\" name=\"package\" value=\"synthetic-0\">"));
        assert!(admin.contains(">Delist from catalog vendor</button>"));
        // Only listed versions can be delisted; the delisted one has its Relist.
        assert!(admin.contains("<option value=\"1.1.0\">version 1.1.0</option>"));
        assert!(!admin.contains("<option value=\"1.2.0\">"));
        assert!(admin.contains("<input type=\"hidden\" name=\"version\" value=\"1.2.0\"><button type=\"submit\" class=\"relist\" data-version=\"1.2.0\">Relist 1.2.0 in catalog vendor</button>"));
    }

    #[test]
    fn a_package_delisted_whole_offers_no_install_and_one_relist() {
        let detail = delisted(&[], "");
        let page = package_page(
            &detail,
            &InstallDefaults::default(),
            &Around {
                also_offered_by: vec![],
                may_delist: true,
                instances: None,
            },
            &viewer(),
        );
        assert!(page.contains("Delisted: package synthetic-0 is delisted by catalog vendor."));
        assert!(!page.contains("id=\"install-submit\""));
        assert!(page.contains("id=\"install-delisted\""));
        assert!(!page.contains("id=\"delist\""));
        assert_eq!(
            page.matches("class=\"relist\" data-version=\"\"").count(),
            1
        );
        assert!(page.contains("Relist the package in catalog vendor"));
        assert!(!page.contains("id=\"also-offered\""));
    }

    #[test]
    fn an_installed_package_shows_its_installs_and_after_a_delist_what_to_reclaim() {
        use crate::instances::{Gathered, Install, Instances, Reach};
        let mut content = synthetic::content("vendor", synthetic::catalog(1, 2));
        content.delisting = windlass_catalog::listing::Delisting::from_entries([(
            "synthetic-0",
            [].as_slice(),
            "",
        )])
        .0;
        let package = &content.catalog.packages["synthetic-0"];
        let subscription = serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": "team-a", "name": "db"},
            "spec": {"package": "synthetic-0", "targetNamespaces": ["team-a"]},
            "status": {"installedCSV": "synthetic-0.v1.1.0"},
        }))
        .unwrap();
        let gathered = Gathered {
            subscriptions: Reach::everywhere(),
            installs: vec![Install {
                subscription,
                blueprint: None,
            }],
            ..Gathered::default()
        };
        let instances = Instances::build(
            &content,
            package,
            &gathered,
            "2026-01-01T00:00:00Z".parse().unwrap(),
        );
        let page = package_page(
            &PackageDetail::of(&content, package),
            &InstallDefaults::default(),
            &Around {
                instances: Some(instances),
                ..Around::default()
            },
            &viewer(),
        );
        let at = |needle: &str| {
            page.find(needle)
                .unwrap_or_else(|| panic!("{needle}: {page}"))
        };
        assert!(at("id=\"delisted\"") < at("id=\"reclaim\""));
        assert!(at("id=\"reclaim\"") < at("id=\"instances\""));
        assert!(at("id=\"instances\"") < at("<h2>Versions</h2>"));
        assert!(page.contains("Subscription <strong>team-a/db</strong> (version 1.1.0)"));
        assert!(page.contains(
            "<td>team-a/db</td><td>1.1.0 <span class=\"badge delisted\">delisted</span></td>"
        ));
    }
}

//! What a package's page says about delisting: which catalog delists what and why, for
//! everyone; and, for people who may edit the Catalog, the Delist and Relist forms. The forms
//! post as the person, so the API server has the last word.

use std::fmt::Write as _;

use crate::{
    detail::PackageDetail,
    html::{Viewer, escape},
};

/// The notice under the package's title: what its catalog delists, and what that means.
pub fn notice(body: &mut String, detail: &PackageDetail) {
    let Some(delisted) = &detail.delisted else {
        return;
    };
    body.push_str("<div class=\"delisted-notice\" id=\"delisted\">");
    for message in &delisted.messages {
        let _ = write!(
            body,
            "<p class=\"message warning\">Delisted: {}.</p>",
            escape(message)
        );
    }
    body.push_str("<p class=\"detail\">New Subscriptions cannot install what is delisted; installed operators keep running without upgrades to it.</p></div>");
}

/// The Delist and Relist forms, each naming the Catalog it edits.
pub fn forms(body: &mut String, detail: &PackageDetail, viewer: &Viewer) {
    let catalog = escape(&detail.catalog);
    let hidden = |body: &mut String| {
        let _ = write!(
            body,
            "<input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"catalog\" value=\"{catalog}\"><input type=\"hidden\" name=\"package\" value=\"{}\">",
            escape(&viewer.csrf_token),
            escape(&detail.name)
        );
    };
    let _ = write!(
        body,
        "<section class=\"delisting\" id=\"delisting\" data-catalog=\"{catalog}\"><h2>Delisting</h2><p class=\"detail\">Edits <code>spec.delisted</code> of Catalog <strong>{catalog}</strong>, as you.</p>"
    );
    let whole = detail.delisted.as_ref().is_some_and(|d| d.whole);
    if !whole {
        body.push_str("<form id=\"delist\" method=\"post\" action=\"/actions/delist\" data-action=\"delist\" data-result=\"delisting-result\">");
        hidden(body);
        body.push_str("<label>What<select name=\"version\" id=\"delist-version\"><option value=\"\" selected>the whole package</option>");
        for version in detail.versions.iter().filter(|v| !v.delisted) {
            let _ = write!(
                body,
                "<option value=\"{v}\">version {v}</option>",
                v = escape(&version.version)
            );
        }
        let _ = write!(
            body,
            "</select></label><label>Reason<input name=\"reason\" id=\"delist-reason\" maxlength=\"1024\" placeholder=\"for the people whose installs it stops\"></label><button type=\"submit\" class=\"delist\" id=\"delist-submit\">Delist from catalog {catalog}</button></form>"
        );
    }
    let relists: Vec<(&str, String)> = match &detail.delisted {
        None => Vec::new(),
        Some(d) if d.whole => vec![("", format!("Relist the package in catalog {}", d.catalog))],
        Some(d) => d
            .versions
            .iter()
            .map(|v| (v.as_str(), format!("Relist {v} in catalog {}", d.catalog)))
            .collect(),
    };
    for (version, label) in relists {
        body.push_str("<form class=\"relist\" method=\"post\" action=\"/actions/relist\" data-action=\"relist\" data-result=\"delisting-result\">");
        hidden(body);
        let _ = write!(
            body,
            "<input type=\"hidden\" name=\"version\" value=\"{v}\"><button type=\"submit\" class=\"relist\" data-version=\"{v}\">{}</button></form>",
            escape(&label),
            v = escape(version)
        );
    }
    body.push_str("<p class=\"message\" id=\"delisting-result\" role=\"status\" aria-live=\"polite\"></p></section>");
}

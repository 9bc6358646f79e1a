//! The read API's bodies, in the spirit of catalogd's:
//!
//! - `GET /api/v1/catalogs`: the catalogs, with their digests and package counts;
//! - `GET /api/v1/catalogs/<name>/all`: the catalog as file-based-catalog JSON lines, the
//!   blobs `windlass catalog render` writes, one compact object per line;
//! - `GET /api/v1/packages?q=&providerType=&keyword=&catalog=`: package summaries;
//! - `GET /api/v1/packages/<name>[?catalog=]`: one package in full ([`PackageDetail`]), with
//!   `installed` ([`Instances`]): its installs the person may read and their custom resources.

use std::io::Write;

use serde::Serialize;
use serde_json::json;

use crate::{
    detail::PackageDetail,
    index::{CatalogContent, HubIndex, PackageSummary, Query},
    instances::Instances,
};

/// The catalog as JSON lines.
pub fn catalog_lines(content: &CatalogContent, out: &mut impl Write) -> std::io::Result<()> {
    for blob in windlass_catalog::fbc::blobs(&content.catalog) {
        serde_json::to_writer(&mut *out, &blob).map_err(std::io::Error::other)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// `GET /api/v1/catalogs`.
pub fn catalogs(index: &HubIndex) -> serde_json::Value {
    json!({
        "catalogs": index.catalogs().iter().map(|c| json!({
            "name": c.name,
            "displayName": c.display_name,
            "priority": c.priority,
            "digest": c.digest,
            "packages": c.catalog.packages.len(),
            "bundles": c.catalog.packages.values().map(|p| p.bundles.len()).sum::<usize>(),
        })).collect::<Vec<_>>(),
    })
}

#[derive(Serialize)]
pub struct PackageList<'a> {
    pub count: usize,
    pub packages: Vec<&'a PackageSummary>,
}

/// `GET /api/v1/packages?...`.
pub fn packages<'a>(index: &'a HubIndex, query: &Query) -> PackageList<'a> {
    let packages = index.search(query);
    PackageList {
        count: packages.len(),
        packages,
    }
}

/// `GET /api/v1/packages/<name>`: `None` when no catalog (or not the one named) offers it.
pub fn package(index: &HubIndex, name: &str, catalog: Option<&str>) -> Option<PackageDetail> {
    index
        .package(name, catalog)
        .map(|(content, package)| PackageDetail::of(content, package))
}

/// `GET /api/v1/packages/<name>` once the installs were looked for: the detail and, beside
/// its fields, `installed`.
#[derive(Serialize)]
pub struct PackageBody<'a> {
    #[serde(flatten)]
    pub detail: &'a PackageDetail,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub installed: Option<&'a Instances>,
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::synthetic;

    #[test]
    fn the_lines_are_the_rendered_catalog() {
        let content = synthetic::content("s", synthetic::catalog(2, 2));
        let mut out = Vec::new();
        catalog_lines(&content, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines, windlass_catalog::fbc::render(&content.catalog));
        assert_eq!(lines.len(), 2 * (1 + 1 + 2));
    }

    #[test]
    fn the_package_endpoints_answer_with_summaries_and_details() {
        let index = HubIndex::new(vec![Arc::new(synthetic::content(
            "s",
            synthetic::catalog(3, 2),
        ))]);
        let list = serde_json::to_value(packages(&index, &Query::parse("q=synthetic-2"))).unwrap();
        assert_eq!(list["count"], 1);
        assert_eq!(list["packages"][0]["name"], "synthetic-2");
        assert_eq!(list["packages"][0]["provider"]["type"], "platform");
        assert!(list["packages"][0].get("haystack").is_none());
        let detail = package(&index, "synthetic-2", None).unwrap();
        assert_eq!(detail.versions.len(), 2);
        assert!(package(&index, "synthetic-2", Some("other")).is_none());
        assert!(package(&index, "nope", None).is_none());
        assert_eq!(catalogs(&index)["catalogs"][0]["bundles"], 6);
    }
}

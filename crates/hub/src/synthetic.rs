//! Generated catalogs for tests and the benchmark: packages with the metadata a real catalog's
//! bundles carry (`olm.csv.metadata`: display name, markdown description, keywords, provider and
//! type, owned CRDs, samples), an icon, and a channel whose upgrade graph has `replaces`, `skips`
//! and `olm.skipRange` edges.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::json;
use windlass_catalog::{
    Bundle, Catalog, Channel, ChannelEntry, Package, Property,
    model::{Gvk, RawJson},
};

use crate::metadata::CSV_METADATA_PROPERTY;

const WORDS: [&str; 12] = [
    "database",
    "monitoring",
    "storage",
    "networking",
    "security",
    "streaming",
    "cache",
    "backup",
    "logging",
    "search",
    "messaging",
    "ai",
];
const PROVIDERS: [(&str, &str); 4] = [
    ("Acme Corp", "certified"),
    ("Example Community", "community"),
    ("Platform Team", "platform"),
    ("Someone", "custom"),
];

/// A one-pixel PNG, as catalogs embed icons.
pub const PNG_PIXEL: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// `packages` packages named `synthetic-<n>`, each with `versions` bundles `1.0.0`, `1.1.0`,
/// ... on channel `stable`: each replaces the one before, every third skips the one before
/// that, and the newest carries a skipRange over everything older.
pub fn catalog(packages: usize, versions: usize) -> Catalog {
    let mut catalog = Catalog::default();
    let icon = json!({
        "base64data": base64::engine::general_purpose::STANDARD.encode(PNG_PIXEL),
        "mediatype": "image/png",
    });
    for n in 0..packages {
        let name = format!("synthetic-{n}");
        let (provider, provider_type) = PROVIDERS[n % PROVIDERS.len()];
        let keywords = [WORDS[n % WORDS.len()], WORDS[(n / 3 + 7) % WORDS.len()]];
        let mut package = Package {
            name: name.clone(),
            default_channel: Some("stable".into()),
            description: Some(format!(
                "# Synthetic {n}\n\nAn operator for {}.",
                keywords[0]
            )),
            icon: Some(RawJson::from_value(&icon)),
            ..Default::default()
        };
        let mut entries = Vec::new();
        for v in 0..versions {
            let version = semver::Version::new(1, v as u64, 0);
            let csv = format!("{name}.v{version}");
            let kind = format!("Widget{n}");
            let metadata = json!({
                "displayName": format!("Synthetic Operator {n}"),
                "description": format!(
                    "# Synthetic {n}\n\nManages **{}** for {} clusters.\n\n- one\n- two\n",
                    keywords[0], keywords[1]
                ),
                "keywords": keywords,
                "provider": {"name": provider},
                "annotations": {
                    "description": format!("Runs {} and {} for you.", keywords[0], keywords[1]),
                    "provider-type": provider_type,
                    "alm-examples": json!([{"apiVersion": "synthetic.windlass.dev/v1", "kind": kind, "metadata": {"name": "example"}}]).to_string(),
                },
                "installModes": [{"type": "OwnNamespace", "supported": true}, {"type": "AllNamespaces", "supported": true}],
                "crdDescriptions": {"owned": [{"name": format!("widget{n}s.synthetic.windlass.dev"), "version": "v1", "kind": kind, "displayName": "Widget"}]},
            });
            let bundle = Bundle {
                name: csv.clone(),
                package: name.as_str().into(),
                version: version.clone(),
                image: Some(format!("registry.example.com/synthetic/{name}:{version}")),
                properties: vec![
                    Property::Package {
                        package_name: name.as_str().into(),
                        version: version.to_string().into(),
                    },
                    Property::Gvk(Gvk {
                        group: "synthetic.windlass.dev".into(),
                        version: "v1".into(),
                        kind: kind.as_str().into(),
                    }),
                    Property::Other {
                        type_: CSV_METADATA_PROPERTY.into(),
                        value: RawJson::from_value(&metadata),
                    },
                ],
                related_images: Vec::new(),
            };
            let mut entry = ChannelEntry {
                name: csv.as_str().into(),
                ..Default::default()
            };
            if v > 0 {
                entry.replaces = Some(format!("{name}.v1.{}.0", v - 1).as_str().into());
            }
            if v >= 2 && v % 3 == 2 {
                entry.skips = vec![format!("{name}.v1.{}.0", v - 2).as_str().into()];
            }
            if v + 1 == versions && v > 0 {
                entry.skip_range = Some(format!(">=1.0.0 <{version}").as_str().into());
            }
            entries.push(entry);
            package.bundles.insert(csv, bundle);
        }
        package.channels.insert(
            "stable".into(),
            Channel {
                name: "stable".into(),
                package: name.as_str().into(),
                entries,
            },
        );
        catalog.packages.insert(name, package);
    }
    catalog
}

/// The catalog as the hub serves it, with no CSVs read (the metadata comes from the
/// properties, as for a file-based catalog image).
pub fn content(name: &str, catalog: Catalog) -> crate::index::CatalogContent {
    crate::index::CatalogContent {
        name: name.into(),
        display_name: None,
        priority: 0,
        digest: "sha256:synthetic".into(),
        catalog: std::sync::Arc::new(catalog),
        csv_metadata: BTreeMap::new(),
        loaded_at: std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000),
        delisting: Default::default(),
    }
}

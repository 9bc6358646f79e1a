//! Rendering a catalog as `opm render` does: per package one `olm.package`, its `olm.channel`s,
//! its `olm.bundle`s and, when present, one `olm.deprecations`. The package's provider is a
//! property of its `olm.package` blob (see [`crate::provider`]).

use std::borrow::Borrow;
use std::io::Write;

use serde_json::{Map, Value, json};

use crate::model::Catalog;

/// The blobs, packages in name order, channels and bundles in name order within each.
pub fn render(catalog: &Catalog) -> Vec<Value> {
    blobs(catalog).collect()
}

/// [`render`] one blob at a time, so writing a large catalog never holds all of it as values.
pub fn blobs(catalog: &Catalog) -> impl Iterator<Item = Value> + '_ {
    catalog.packages.values().flat_map(package_blobs)
}

fn package_blobs(package: &crate::model::Package) -> impl Iterator<Item = Value> + '_ {
    let head = {
        let mut p = Map::new();
        p.insert("schema".into(), json!("olm.package"));
        p.insert("name".into(), json!(package.name));
        if let Some(default) = &package.default_channel {
            p.insert("defaultChannel".into(), json!(default));
        }
        if let Some(icon) = &package.icon {
            p.insert("icon".into(), icon.to_value());
        }
        if let Some(description) = &package.description {
            p.insert("description".into(), json!(description));
        }
        if let Some(provider) = package.provider.as_ref().filter(|p| !p.is_empty()) {
            p.insert("properties".into(), json!([provider.to_property()]));
        }
        Value::Object(p)
    };
    let channels = package.channels.values().map(move |channel| {
        json!({
            "schema": "olm.channel",
            "name": channel.name,
            "package": package.name,
            "entries": channel.entries,
        })
    });
    let bundles = package.bundles.values().map(move |bundle| {
        let mut b = Map::new();
        b.insert("schema".into(), json!("olm.bundle"));
        b.insert("name".into(), json!(bundle.name));
        b.insert("package".into(), json!(package.name));
        b.insert(
            "image".into(),
            json!(bundle.image.clone().unwrap_or_default()),
        );
        b.insert("properties".into(), json!(bundle.properties));
        if !bundle.related_images.is_empty() {
            b.insert("relatedImages".into(), json!(bundle.related_images));
        }
        Value::Object(b)
    });
    let deprecations = (!package.deprecations.is_empty()).then(|| {
        json!({
            "schema": "olm.deprecations",
            "package": package.name,
            "entries": package.deprecations,
        })
    });
    std::iter::once(head)
        .chain(channels)
        .chain(bundles)
        .chain(deprecations)
}

/// Indented JSON objects one after another, the stream `opm render -o json` writes.
pub fn write_json(
    blobs: impl IntoIterator<Item = impl Borrow<Value>>,
    out: &mut impl Write,
) -> std::io::Result<()> {
    for blob in blobs {
        let blob = blob.borrow();
        let mut serializer = serde_json::Serializer::with_formatter(
            &mut *out,
            serde_json::ser::PrettyFormatter::with_indent(b"    "),
        );
        serde::Serialize::serialize(blob, &mut serializer).map_err(std::io::Error::other)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// A `---`-separated YAML stream, the one `opm render -o yaml` writes.
pub fn write_yaml(
    blobs: impl IntoIterator<Item = impl Borrow<Value>>,
    out: &mut impl Write,
) -> std::io::Result<()> {
    for blob in blobs {
        let text = serde_saphyr::to_string(blob.borrow()).map_err(std::io::Error::other)?;
        out.write_all(b"---\n")?;
        out.write_all(text.as_bytes())?;
        if !text.ends_with('\n') {
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

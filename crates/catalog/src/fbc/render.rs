//! Rendering a catalog as `opm render` does: per package one `olm.package`, its `olm.channel`s,
//! its `olm.bundle`s and, when present, one `olm.deprecations`.

use std::io::Write;

use serde_json::{Map, Value, json};

use crate::model::Catalog;

/// The blobs, packages in name order, channels and bundles in name order within each.
pub fn render(catalog: &Catalog) -> Vec<Value> {
    let mut out = Vec::new();
    for package in catalog.packages.values() {
        let mut p = Map::new();
        p.insert("schema".into(), json!("olm.package"));
        p.insert("name".into(), json!(package.name));
        if let Some(default) = &package.default_channel {
            p.insert("defaultChannel".into(), json!(default));
        }
        if let Some(icon) = &package.icon {
            p.insert("icon".into(), icon.clone());
        }
        if let Some(description) = &package.description {
            p.insert("description".into(), json!(description));
        }
        out.push(Value::Object(p));
        for channel in package.channels.values() {
            out.push(json!({
                "schema": "olm.channel",
                "name": channel.name,
                "package": package.name,
                "entries": channel.entries,
            }));
        }
        for bundle in package.bundles.values() {
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
            out.push(Value::Object(b));
        }
        if !package.deprecations.is_empty() {
            out.push(json!({
                "schema": "olm.deprecations",
                "package": package.name,
                "entries": package.deprecations,
            }));
        }
    }
    out
}

/// Indented JSON objects one after another, the stream `opm render -o json` writes.
pub fn write_json(blobs: &[Value], out: &mut impl Write) -> std::io::Result<()> {
    for blob in blobs {
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
pub fn write_yaml(blobs: &[Value], out: &mut impl Write) -> std::io::Result<()> {
    for blob in blobs {
        let text = serde_saphyr::to_string(blob).map_err(std::io::Error::other)?;
        out.write_all(b"---\n")?;
        out.write_all(text.as_bytes())?;
        if !text.ends_with('\n') {
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

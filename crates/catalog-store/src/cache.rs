//! Bundle content by digest, bounded by bytes: when what is kept passes the budget, the least
//! recently used content goes first. Content still in use elsewhere (an install holding its
//! `Arc`) stays alive there; the cache only stops holding it, and reads it again when asked.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

use crate::BundleContent;

/// What the cache keeps by default: a few dozen typical bundles, a handful of the largest.
pub const DEFAULT_BUDGET_BYTES: usize = 64 * 1024 * 1024;

struct Entry {
    content: Arc<BundleContent>,
    bytes: usize,
    /// The catalogs this content was read for. A digest names bytes, not who offers them: a
    /// cached bundle counts for a catalog only when that catalog served it.
    served_by: BTreeSet<String>,
    /// When it was last put or read; the key of `ContentCache::by_use`.
    used: u64,
}

/// The cache proper; [`crate::CatalogStore`] holds it behind a lock.
pub(crate) struct ContentCache {
    budget: usize,
    total: usize,
    clock: u64,
    entries: HashMap<String, Entry>,
    /// Digests by last use, oldest first.
    by_use: BTreeMap<u64, String>,
}

impl ContentCache {
    pub fn new(budget: usize) -> ContentCache {
        ContentCache {
            budget,
            total: 0,
            clock: 0,
            entries: HashMap::new(),
            by_use: BTreeMap::new(),
        }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// The content under `digest`, marked as just used, with the catalogs it was read for.
    pub fn get(&mut self, digest: &str) -> Option<(Arc<BundleContent>, &BTreeSet<String>)> {
        let now = self.tick();
        let entry = self.entries.get_mut(digest)?;
        self.by_use.remove(&entry.used);
        entry.used = now;
        self.by_use.insert(now, digest.to_string());
        Some((entry.content.clone(), &entry.served_by))
    }

    /// Keeps `content` under its digest (read for `catalog`, when one is named), then drops
    /// the least recently used content until the total fits the budget. Content larger than
    /// the whole budget is not kept at all.
    pub fn put(&mut self, content: Arc<BundleContent>, catalog: Option<&str>) {
        let bytes = content_bytes(&content);
        let digest = content.digest.clone();
        let mut served_by = BTreeSet::new();
        if let Some(old) = self.entries.remove(&digest) {
            self.by_use.remove(&old.used);
            self.total -= old.bytes;
            served_by = old.served_by;
        }
        if bytes > self.budget {
            return;
        }
        served_by.extend(catalog.map(str::to_string));
        let used = self.tick();
        self.by_use.insert(used, digest.clone());
        self.entries.insert(
            digest,
            Entry {
                content,
                bytes,
                served_by,
                used,
            },
        );
        self.total += bytes;
        while self.total > self.budget {
            let Some((_, oldest)) = self.by_use.pop_first() else {
                break;
            };
            if let Some(gone) = self.entries.remove(&oldest) {
                self.total -= gone.bytes;
            }
        }
    }

    /// Bytes held now (by the estimate of [`content_bytes`]).
    pub fn total_bytes(&self) -> usize {
        self.total
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

/// An estimate of the memory one bundle's content takes: its parsed manifests (each object
/// counted as the JSON tree it is held as), with the CSV counted twice since the bundle also
/// keeps it as a typed model.
pub fn content_bytes(content: &BundleContent) -> usize {
    let bundle = &content.bundle;
    let manifests: usize = bundle
        .manifests
        .iter()
        .map(|m| m.file.len() + value_bytes(&m.object))
        .sum();
    let csv = bundle
        .manifests
        .iter()
        .find(|m| m.file == bundle.csv_file)
        .map_or(0, |m| value_bytes(&m.object));
    let properties: usize = bundle.properties.iter().map(value_bytes).sum();
    std::mem::size_of::<BundleContent>() + manifests + csv + properties
}

/// Heap and inline bytes of a JSON tree: each node's own size plus what strings, arrays and
/// maps hold.
fn value_bytes(value: &Value) -> usize {
    const NODE: usize = std::mem::size_of::<Value>();
    // A map entry's key (a `String`) and the map's bookkeeping per entry.
    const ENTRY: usize = std::mem::size_of::<String>() + 16;
    NODE + match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
        Value::String(s) => s.len(),
        Value::Array(items) => items.iter().map(value_bytes).sum(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| ENTRY + k.len() + value_bytes(v))
            .sum(),
    }
}

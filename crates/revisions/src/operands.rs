//! Operand snapshots: the custom resources of an operator as they were before an upgrade, kept
//! with the revision that upgraded (gzip-JSON split into Secret-sized chunks, each sealed), so
//! a rollback can put their specs back where the newer version rewrote them.
//!
//! What is restored is decided here, from the snapshot and the objects as they are now: a spec
//! that differs is written back; an object created after the snapshot is kept; one deleted
//! since is left deleted (recreating it could bring back something a person removed on
//! purpose). Pure: nothing here talks to the cluster.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use flate2::{Compression, read::GzDecoder, write::GzEncoder};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::seal::{self, SealError, SealKey, Subject};

/// Room for labels and annotations under the API server's 1 MiB Secret limit.
pub const CHUNK_BYTES: usize = 900_000;
/// How many chunks a snapshot may take unless an admin allows more: about 7 MiB compressed,
/// which holds tens of thousands of typical custom resources.
pub const DEFAULT_MAX_CHUNKS: usize = 8;
/// Decoding stops here, whatever the chunks say.
pub const MAX_DECODED_BYTES: u64 = 512 * 1024 * 1024;
/// What a chunk's seal names as its owner kind (a revision's seal names `Blueprint`, a plan's
/// `BlueprintPlan`, so none can pass for another).
pub const SEAL_KIND: &str = "BlueprintOperands";

/// One kind of custom resource the snapshot read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperandKind {
    /// The CRD, for example `caches.acme.windlass.dev`.
    pub crd: String,
    pub group: String,
    /// The version the objects were read (and are restored) at.
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
}

impl OperandKind {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// One custom resource as the snapshot keeps it: who it is and its spec.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Operand {
    /// Index into [`Snapshot::kinds`].
    pub kind: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    pub uid: String,
    /// `None`: the object had no spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<Value>,
}

impl Operand {
    pub fn key(&self) -> String {
        match &self.namespace {
            Some(namespace) => format!("{namespace}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// The operands of one install before revision `revision` applied.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// The revision that ran when it was taken: the one a rollback goes back to.
    pub base_revision: i64,
    /// The revision about to apply (whose Secrets hold it).
    pub revision: i64,
    /// RFC 3339.
    pub taken_at: String,
    /// The namespaces read (empty: all of them, for an install that watches all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    pub kinds: Vec<OperandKind>,
    pub objects: Vec<Operand>,
}

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("encoding as JSON: {0}")]
    Serialize(serde_json::Error),
    #[error("compressing: {0}")]
    Compress(std::io::Error),
    #[error(
        "the snapshot of {objects} custom resources is {bytes} bytes compressed, more than \
         {chunks} Secrets of {chunk} bytes hold"
    )]
    TooLarge {
        objects: usize,
        bytes: usize,
        chunks: usize,
        chunk: usize,
    },
    #[error("chunk {index} of {count} is missing")]
    MissingChunk { index: usize, count: usize },
    #[error("data is not valid gzip (corrupt or truncated): {0}")]
    Decompress(std::io::Error),
    #[error("decompressed snapshot is larger than {limit} bytes; refused")]
    DecompressedTooLarge { limit: u64 },
    #[error("decompressed data is not a snapshot: {0}")]
    Deserialize(serde_json::Error),
}

/// gzip of the JSON of `snapshot`, cut into chunks of at most `chunk` bytes; refused when it
/// would take more than `max_chunks`.
pub fn encode(
    snapshot: &Snapshot,
    chunk: usize,
    max_chunks: usize,
) -> Result<Vec<Vec<u8>>, SnapshotError> {
    let json = serde_json::to_vec(snapshot).map_err(SnapshotError::Serialize)?;
    let mut encoder = GzEncoder::new(Vec::with_capacity(json.len() / 4), Compression::default());
    encoder.write_all(&json).map_err(SnapshotError::Compress)?;
    let bytes = encoder.finish().map_err(SnapshotError::Compress)?;
    let chunk = chunk.max(1);
    if bytes.len().div_ceil(chunk) > max_chunks {
        return Err(SnapshotError::TooLarge {
            objects: snapshot.objects.len(),
            bytes: bytes.len(),
            chunks: max_chunks,
            chunk,
        });
    }
    Ok(bytes.chunks(chunk).map(<[u8]>::to_vec).collect())
}

/// The inverse of [`encode`], from every chunk in order (`None` where one is missing).
pub fn decode(chunks: &[Option<&[u8]>]) -> Result<Snapshot, SnapshotError> {
    let mut bytes = Vec::new();
    for (index, chunk) in chunks.iter().enumerate() {
        let chunk = chunk.ok_or(SnapshotError::MissingChunk {
            index,
            count: chunks.len(),
        })?;
        bytes.extend_from_slice(chunk);
    }
    let mut json = Vec::new();
    GzDecoder::new(bytes.as_slice())
        .take(MAX_DECODED_BYTES + 1)
        .read_to_end(&mut json)
        .map_err(SnapshotError::Decompress)?;
    if json.len() as u64 > MAX_DECODED_BYTES {
        return Err(SnapshotError::DecompressedTooLarge {
            limit: MAX_DECODED_BYTES,
        });
    }
    serde_json::from_slice(&json).map_err(SnapshotError::Deserialize)
}

/// The seal of chunk `index` of `count` for `subject` (kind [`SEAL_KIND`]): a chunk cannot be
/// moved to another place, snapshot or owner, and the count cannot be cut short.
pub fn seal_chunk(
    key: &SealKey,
    subject: &Subject,
    index: usize,
    count: usize,
    data: &[u8],
) -> String {
    let (index, count) = (index.to_string(), count.to_string());
    seal::seal(key, subject, &[index.as_bytes(), count.as_bytes(), data])
}

pub fn verify_chunk(
    key: &SealKey,
    subject: &Subject,
    index: usize,
    count: usize,
    data: &[u8],
    found: Option<&str>,
) -> Result<(), SealError> {
    let (index, count) = (index.to_string(), count.to_string());
    seal::verify(
        key,
        subject,
        &[index.as_bytes(), count.as_bytes(), data],
        found,
    )
}

/// A custom resource as it is now.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveOperand {
    /// Index into [`Snapshot::kinds`].
    pub kind: usize,
    pub namespace: Option<String>,
    pub name: String,
    pub uid: String,
    pub spec: Option<Value>,
}

/// One object whose spec goes back to the snapshot's.
#[derive(Clone, Debug, PartialEq)]
pub struct Restore {
    pub kind: usize,
    pub namespace: Option<String>,
    pub name: String,
    /// Guards the write: the object the snapshot read, not one recreated under its name.
    pub uid: String,
    pub spec: Option<Value>,
    /// The merge patch from the live spec to the snapshot's.
    pub patch: Value,
    /// The JSON pointers (under `spec`) where the live object differs.
    pub changed: Vec<String>,
}

/// What a rollback does with the operands, and what it leaves.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RestorePlan {
    pub restore: Vec<Restore>,
    /// As the snapshot has them already.
    pub unchanged: Vec<(usize, String)>,
    /// Created after the snapshot (or recreated under a snapshotted name): kept as they are.
    pub created_after: Vec<(usize, String)>,
    /// In the snapshot, gone now: not recreated.
    pub deleted_since: Vec<(usize, String)>,
}

/// Compares the snapshot with the live objects of its kinds.
pub fn plan_restore(snapshot: &Snapshot, live: &[LiveOperand]) -> RestorePlan {
    let key = |kind: usize, namespace: &Option<String>, name: &str| {
        (
            kind,
            namespace.clone().unwrap_or_default(),
            name.to_string(),
        )
    };
    let by_key: BTreeMap<_, &LiveOperand> = live
        .iter()
        .map(|o| (key(o.kind, &o.namespace, &o.name), o))
        .collect();
    let mut plan = RestorePlan::default();
    let mut seen = std::collections::BTreeSet::new();
    for old in &snapshot.objects {
        let k = key(old.kind, &old.namespace, &old.name);
        let shown = (old.kind, old.key());
        match by_key.get(&k) {
            None => plan.deleted_since.push(shown),
            Some(now) if now.uid != old.uid => {
                seen.insert(k);
                plan.created_after.push(shown);
            }
            Some(now) => {
                seen.insert(k);
                let changed = changed_pointers(old.spec.as_ref(), now.spec.as_ref());
                if changed.is_empty() {
                    plan.unchanged.push(shown);
                } else {
                    plan.restore.push(Restore {
                        kind: old.kind,
                        namespace: old.namespace.clone(),
                        name: old.name.clone(),
                        uid: old.uid.clone(),
                        spec: old.spec.clone(),
                        patch: merge_patch(now.spec.as_ref(), old.spec.as_ref()),
                        changed,
                    });
                }
            }
        }
    }
    for now in live {
        let k = key(now.kind, &now.namespace, &now.name);
        if !seen.contains(&k) {
            let name = match &now.namespace {
                Some(namespace) => format!("{namespace}/{}", now.name),
                None => now.name.clone(),
            };
            plan.created_after.push((now.kind, name));
        }
    }
    plan
}

/// The JSON pointers under `spec` (`/spec/...`) where `old` and `new` differ, as deep as both
/// are objects; arrays and scalars compare whole.
pub fn changed_pointers(old: Option<&Value>, new: Option<&Value>) -> Vec<String> {
    let mut out = Vec::new();
    diff("/spec", old, new, &mut out);
    out
}

fn diff(path: &str, old: Option<&Value>, new: Option<&Value>, out: &mut Vec<String>) {
    match (old, new) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let escaped = k.replace('~', "~0").replace('/', "~1");
                diff(&format!("{path}/{escaped}"), a.get(k), b.get(k), out);
            }
        }
        (a, b) if a == b => {}
        _ => out.push(path.to_string()),
    }
}

/// The JSON merge patch (RFC 7386) that turns `from` into `to`: members `to` lacks are
/// removed (null), objects are patched member by member, anything else is replaced whole.
pub fn merge_patch(from: Option<&Value>, to: Option<&Value>) -> Value {
    match (from, to) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut patch = serde_json::Map::new();
            for (k, old) in a {
                match b.get(k) {
                    None => {
                        patch.insert(k.clone(), Value::Null);
                    }
                    Some(new) if new != old => {
                        patch.insert(k.clone(), merge_patch(Some(old), Some(new)));
                    }
                    Some(_) => {}
                }
            }
            for (k, new) in b {
                if !a.contains_key(k) {
                    patch.insert(k.clone(), new.clone());
                }
            }
            Value::Object(patch)
        }
        (_, Some(to)) => to.clone(),
        (_, None) => Value::Null,
    }
}

impl RestorePlan {
    /// One line for a condition or an Event: counts by kind, and the first objects of each.
    pub fn summary(&self, snapshot: &Snapshot, restored_word: &str) -> String {
        let kind_name = |kind: usize| {
            snapshot
                .kinds
                .get(kind)
                .map_or_else(|| "object".to_string(), |k| k.kind.clone())
        };
        let names = |items: &[(usize, String)]| -> String {
            const SHOWN: usize = 5;
            let mut shown: Vec<String> = items
                .iter()
                .take(SHOWN)
                .map(|(kind, name)| format!("{} {name}", kind_name(*kind)))
                .collect();
            if items.len() > SHOWN {
                shown.push(format!("{} more", items.len() - SHOWN));
            }
            shown.join(", ")
        };
        let restored: Vec<(usize, String)> = self
            .restore
            .iter()
            .map(|r| {
                let name = match &r.namespace {
                    Some(namespace) => format!("{namespace}/{}", r.name),
                    None => r.name.clone(),
                };
                (r.kind, format!("{name} ({})", r.changed.join(", ")))
            })
            .collect();
        let mut parts = vec![format!(
            "{restored_word} the spec of {} custom resource(s) to the snapshot of revision {}{}",
            restored.len(),
            snapshot.revision,
            if restored.is_empty() {
                String::new()
            } else {
                format!(": {}", names(&restored))
            }
        )];
        parts.push(format!(
            "{} already as in the snapshot",
            self.unchanged.len()
        ));
        if !self.created_after.is_empty() {
            parts.push(format!(
                "kept {} created after the snapshot: {}",
                self.created_after.len(),
                names(&self.created_after)
            ));
        }
        if !self.deleted_since.is_empty() {
            parts.push(format!(
                "left {} deleted since (not recreated): {}",
                self.deleted_since.len(),
                names(&self.deleted_since)
            ));
        }
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kind() -> OperandKind {
        OperandKind {
            crd: "caches.acme.windlass.dev".into(),
            group: "acme.windlass.dev".into(),
            version: "v1".into(),
            kind: "Cache".into(),
            plural: "caches".into(),
            namespaced: true,
        }
    }

    fn operand(name: &str, uid: &str, spec: Value) -> Operand {
        Operand {
            kind: 0,
            namespace: Some("team-a".into()),
            name: name.into(),
            uid: uid.into(),
            spec: Some(spec),
        }
    }

    fn live(name: &str, uid: &str, spec: Value) -> LiveOperand {
        LiveOperand {
            kind: 0,
            namespace: Some("team-a".into()),
            name: name.into(),
            uid: uid.into(),
            spec: Some(spec),
        }
    }

    fn snapshot(objects: Vec<Operand>) -> Snapshot {
        Snapshot {
            base_revision: 1,
            revision: 2,
            taken_at: "2026-12-06T10:00:00Z".into(),
            namespaces: vec!["team-a".into()],
            kinds: vec![kind()],
            objects,
        }
    }

    #[test]
    fn a_rewritten_spec_goes_back_new_objects_stay_and_deleted_ones_are_not_recreated() {
        let taken = snapshot(vec![
            operand(
                "rewritten",
                "u1",
                json!({"memory": "512Mi", "evictionPolicy": "lru"}),
            ),
            operand("untouched", "u2", json!({"memory": "1Gi"})),
            operand("deleted", "u3", json!({"memory": "2Gi"})),
            operand("recreated", "u4", json!({"memory": "2Gi"})),
        ]);
        let now = [
            live(
                "rewritten",
                "u1",
                json!({"limits": {"memory": "512Mi"}, "eviction": {"policy": "lru"}}),
            ),
            live("untouched", "u2", json!({"memory": "1Gi"})),
            live("recreated", "u9", json!({"memory": "2Gi"})),
            live("new", "u5", json!({"limits": {"memory": "4Gi"}})),
        ];
        let plan = plan_restore(&taken, &now);
        assert_eq!(plan.restore.len(), 1);
        let restore = &plan.restore[0];
        assert_eq!(
            (restore.name.as_str(), restore.uid.as_str()),
            ("rewritten", "u1")
        );
        assert_eq!(
            restore.spec,
            Some(json!({"memory": "512Mi", "evictionPolicy": "lru"}))
        );
        assert_eq!(
            restore.changed,
            [
                "/spec/eviction",
                "/spec/evictionPolicy",
                "/spec/limits",
                "/spec/memory"
            ]
        );
        assert_eq!(plan.unchanged, [(0, "team-a/untouched".to_string())]);
        assert_eq!(
            plan.created_after,
            [
                (0, "team-a/recreated".to_string()),
                (0, "team-a/new".to_string())
            ]
        );
        assert_eq!(plan.deleted_since, [(0, "team-a/deleted".to_string())]);
        let summary = plan.summary(&taken, "restored");
        assert!(summary.starts_with("restored the spec of 1 custom resource(s) to the snapshot of revision 2: Cache team-a/rewritten (/spec/eviction"), "{summary}");
        assert!(
            summary.contains(
                "kept 2 created after the snapshot: Cache team-a/recreated, Cache team-a/new"
            ),
            "{summary}"
        );
        assert!(
            summary.contains("left 1 deleted since (not recreated): Cache team-a/deleted"),
            "{summary}"
        );
    }

    #[test]
    fn nested_changes_are_named_down_to_the_differing_field() {
        let changed = changed_pointers(
            Some(&json!({"a": {"b": 1, "c": [1, 2]}, "d/e": 1})),
            Some(&json!({"a": {"b": 2, "c": [1, 2]}, "d/e": 2})),
        );
        assert_eq!(changed, ["/spec/a/b", "/spec/d~1e"]);
        assert_eq!(changed_pointers(None, Some(&json!({}))), ["/spec"]);
        assert!(changed_pointers(None, None).is_empty());
    }

    #[test]
    fn a_merge_patch_turns_the_live_spec_into_the_snapshot() {
        let live = json!({"limits": {"memory": "512Mi"}, "eviction": {"policy": "lru"}, "replicas": 2, "tags": ["a"]});
        let old =
            json!({"memory": "512Mi", "evictionPolicy": "lru", "replicas": 2, "tags": ["a", "b"]});
        let patch = merge_patch(Some(&live), Some(&old));
        assert_eq!(
            patch,
            json!({"limits": null, "eviction": null, "memory": "512Mi", "evictionPolicy": "lru", "tags": ["a", "b"]})
        );
        let nested = merge_patch(
            Some(&json!({"a": {"b": 1, "c": 2}})),
            Some(&json!({"a": {"b": 1, "d": 3}})),
        );
        assert_eq!(nested, json!({"a": {"c": null, "d": 3}}));
        assert_eq!(merge_patch(Some(&json!({"a": 1})), None), Value::Null);
        assert_eq!(merge_patch(None, Some(&json!({"a": 1}))), json!({"a": 1}));
    }

    #[test]
    fn snapshots_round_trip_through_chunks_and_refuse_what_does_not_fit() {
        let objects: Vec<Operand> = (0..2000)
            .map(|i| operand(&format!("cache-{i}"), &format!("uid-{i:08}-{}", i * 7919), json!({"memory": format!("{}Mi", i), "note": format!("{:x}", (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))})))
            .collect();
        let taken = snapshot(objects);
        let chunks = encode(&taken, 4096, 100).unwrap();
        assert!(chunks.len() > 1, "split: {}", chunks.len());
        let parts: Vec<Option<&[u8]>> = chunks.iter().map(|c| Some(c.as_slice())).collect();
        assert_eq!(decode(&parts).unwrap(), taken);

        let mut missing = parts.clone();
        missing[1] = None;
        assert!(matches!(
            decode(&missing),
            Err(SnapshotError::MissingChunk { index: 1, .. })
        ));
        let cut = &parts[..parts.len() - 1];
        assert!(matches!(decode(cut), Err(SnapshotError::Decompress(_))));

        let refused = encode(&taken, 4096, 1).unwrap_err();
        assert!(matches!(
            refused,
            SnapshotError::TooLarge {
                objects: 2000,
                chunks: 1,
                ..
            }
        ));
        assert!(
            refused.to_string().contains("2000 custom resources"),
            "{refused}"
        );
    }

    #[test]
    fn a_chunk_seal_binds_its_place_its_count_and_its_bytes() {
        let key = SealKey::from_bytes(&[3; crate::seal::KEY_BYTES]).unwrap();
        let subject = Subject {
            kind: SEAL_KIND.into(),
            object: "team-a/cache".into(),
            uid: "u".into(),
            revision: Some(2),
        };
        let sealed = seal_chunk(&key, &subject, 0, 2, b"abc");
        assert_eq!(
            verify_chunk(&key, &subject, 0, 2, b"abc", Some(&sealed)),
            Ok(())
        );
        for (index, count, data) in [(1, 2, &b"abc"[..]), (0, 1, b"abc"), (0, 2, b"abd")] {
            assert_eq!(
                verify_chunk(&key, &subject, index, count, data, Some(&sealed)),
                Err(SealError::Mismatch)
            );
        }
        let mut other = subject.clone();
        other.revision = Some(3);
        assert_eq!(
            verify_chunk(&key, &other, 0, 2, b"abc", Some(&sealed)),
            Err(SealError::Mismatch)
        );
    }
}

//! Operand snapshots on the local control plane (`make bench-e2e`): the time to snapshot 1,000
//! custom resources (list, encode, seal, write the chunk Secrets) and to restore all 1,000 after
//! a rewrite (list, compare, one guarded merge patch each), with the anchors measured in the
//! same run: `kubectl get -o json` of the same objects (the read a snapshot cannot avoid) and
//! the same 1,000 merge patches sent by a bare client loop (the writes a restore cannot avoid).
//! The manager need not run: the bench calls the Blueprint controller's own functions.

use std::{collections::BTreeMap, path::Path, time::Instant};

use futures::{StreamExt, stream};
use k8s_openapi::{ByteString, api::core::v1::Secret};
use kube::{
    Api, ResourceExt,
    api::{DynamicObject, Patch, PatchParams, PostParams},
    core::{ApiResource, GroupVersionKind},
};
use serde_json::json;
use windlass_blueprint_controller::operands::{put_back, read_operands};
use windlass_kit::Applier;
use windlass_revisions::{
    SealKey, Subject,
    operands::{self, CHUNK_BYTES, DEFAULT_MAX_CHUNKS, OperandKind, Snapshot},
};
use windlass_testkit::{TestNamespace, kubectl, run_ok};

const OBJECTS: usize = 1000;
const ROUNDS: usize = 3;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

#[tokio::main]
async fn main() {
    let client = windlass_testkit::client().await;
    // 2.0's CRD: it serves v1 as well, and a cluster that ran 2.0 already stores v2.
    let crd_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../bundles/acme-cache/2.0.0/caches.acme.windlass.dev.crd.yaml");
    let crd: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&crd_path).unwrap()).unwrap();
    windlass_testkit::apply_crd(&client, &crd).await;
    let ns = TestNamespace::create(&client, "bench-operands").await;
    let gvk = GroupVersionKind::gvk("acme.windlass.dev", "v1", "Cache");
    let resource = ApiResource::from_gvk(&gvk);
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns.name, &resource);
    stream::iter(0..OBJECTS)
        .for_each_concurrent(16, |i| {
            let api = api.clone();
            async move {
                let object: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": "acme.windlass.dev/v1",
                    "kind": "Cache",
                    "metadata": {"name": format!("cache-{i:04}")},
                    "spec": {"memory": format!("{}Mi", 64 + i), "evictionPolicy": "lru", "replicas": 1 + i % 9},
                }))
                .unwrap();
                api.create(&PostParams::default(), &object).await.unwrap();
            }
        })
        .await;
    let kind = OperandKind {
        crd: "caches.acme.windlass.dev".into(),
        group: "acme.windlass.dev".into(),
        version: "v1".into(),
        kind: "Cache".into(),
        plural: "caches".into(),
        namespaced: true,
    };
    let applier = Applier::new(client.clone());
    let key = SealKey::from_bytes(&[7; windlass_revisions::seal::KEY_BYTES]).unwrap();
    let secrets = Api::<Secret>::namespaced(client.clone(), &ns.name);
    let namespaces = vec![ns.name.clone()];
    let rewrite = |spec_of: fn(usize) -> serde_json::Value| {
        let api = api.clone();
        async move {
            let started = Instant::now();
            stream::iter(0..OBJECTS)
                .for_each_concurrent(1, |i| {
                    let api = api.clone();
                    async move {
                        api.patch(
                            &format!("cache-{i:04}"),
                            &PatchParams::default(),
                            &Patch::Merge(json!({"spec": spec_of(i)})),
                        )
                        .await
                        .unwrap();
                    }
                })
                .await;
            started.elapsed().as_secs_f64()
        }
    };
    let (mut snapshot_times, mut get_times, mut restore_times, mut patch_times) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut stored_bytes = 0;
    let mut chunk_count = 0;
    for round in 0..ROUNDS {
        let started = Instant::now();
        run_ok(kubectl().args([
            "get",
            "caches.acme.windlass.dev",
            "-n",
            &ns.name,
            "-o",
            "json",
        ]));
        get_times.push(started.elapsed().as_secs_f64());

        let started = Instant::now();
        let objects = read_operands(&client, std::slice::from_ref(&kind), &namespaces)
            .await
            .unwrap();
        assert_eq!(objects.len(), OBJECTS);
        let snapshot = Snapshot {
            base_revision: 1,
            revision: 2 + round as i64,
            taken_at: "2026-12-06T00:00:00Z".into(),
            namespaces: namespaces.clone(),
            kinds: vec![kind.clone()],
            objects,
        };
        let chunks = operands::encode(&snapshot, CHUNK_BYTES, DEFAULT_MAX_CHUNKS).unwrap();
        let subject = Subject {
            kind: operands::SEAL_KIND.into(),
            object: format!("{}/bench", ns.name),
            uid: "bench".into(),
            revision: Some(snapshot.revision),
        };
        for (index, data) in chunks.iter().enumerate() {
            let seal = operands::seal_chunk(&key, &subject, index, chunks.len(), data);
            let name = format!("bench.r{}.operands.{index}", snapshot.revision);
            let secret = Secret {
                metadata: kube::api::ObjectMeta {
                    name: Some(name.clone()),
                    annotations: Some(BTreeMap::from([("windlass.dev/seal".to_string(), seal)])),
                    ..Default::default()
                },
                data: Some(BTreeMap::from([(
                    "operands.json.gz.part".to_string(),
                    ByteString(data.clone()),
                )])),
                ..Default::default()
            };
            secrets
                .patch(
                    &name,
                    &PatchParams::apply("windlass-bench").force(),
                    &Patch::Apply(&secret),
                )
                .await
                .unwrap();
        }
        snapshot_times.push(started.elapsed().as_secs_f64());
        stored_bytes = chunks.iter().map(Vec::len).sum::<usize>();
        chunk_count = chunks.len();

        // The new version rewrites every object (not timed) ...
        rewrite(|i| json!({"memory": null, "limits": {"memory": format!("{}Mi", 64 + i)}})).await;
        // ... and windlass puts them back.
        let started = Instant::now();
        let restored = put_back(&applier, &snapshot, false).await.unwrap();
        restore_times.push(started.elapsed().as_secs_f64());
        assert_eq!(
            restored.plan.restore.len(),
            OBJECTS,
            "every object restored"
        );
        assert!(restored.refused.is_empty(), "{:?}", restored.refused);
        let sample = api.get("cache-0042").await.unwrap();
        assert_eq!(sample.data["spec"]["memory"], "106Mi");
        assert!(sample.data["spec"].get("limits").is_none());

        // The anchor: the same kind of write, 1,000 merge patches from a bare loop, restoring
        // the rewrite the same way.
        rewrite(|i| json!({"memory": null, "limits": {"memory": format!("{}Mi", 64 + i)}})).await;
        patch_times
            .push(rewrite(|i| json!({"limits": null, "memory": format!("{}Mi", 64 + i)})).await);
        let _ = api.get("cache-0000").await.unwrap().name_any();
    }
    let (snapshot, get) = (median(snapshot_times), median(get_times));
    let (restore, patch) = (median(restore_times), median(patch_times));
    println!("operands bench ({OBJECTS} custom resources, {ROUNDS}-round medians)");
    println!(
        "  snapshot (list, encode, seal, store): {snapshot:.3} s in {chunk_count} Secret(s), {stored_bytes} bytes; anchor kubectl get -o json {get:.3} s; ratio {:.2}x",
        snapshot / get
    );
    println!(
        "  restore (list, compare, 1,000 guarded merge patches): {restore:.3} s; anchor 1,000 bare merge patches {patch:.3} s; ratio {:.2}x",
        restore / patch
    );
}

//! Manual approval: the revision's content is stored and its plan previewed (dry-run applies
//! of everything it would write, a sealed plan Secret, the digest in the status) before
//! anything of it is applied; a settled wait makes no dry runs; approving the plan's digest
//! applies it for real.

use k8s_openapi::api::core::v1::Secret;
use windlass_api::names::{annotations, labels, plan_secret, seal};
use windlass_preview::Plan;
use windlass_revisions::{Subject, codec, seal as seals};

use crate::support::*;

/// Given a new Blueprint under Manual approval, when it is reconciled, then the revision
/// Secret is stored, every object the revision would write (the CRD, the bundle's ConfigMap,
/// the CSV and what the CSV makes) is read and dry-run applied and nothing else is applied,
/// the sealed plan Secret is written, and the status waits in RequiresApproval with the plan's
/// digest; a second reconcile reuses the stored plan without a dry run or a write; once
/// `spec.approvedPlan` names the digest, the revision is applied and records the approval.
#[tokio::test]
async fn a_manual_install_is_previewed_by_dry_runs_and_applied_once_its_plan_is_approved() {
    let harness = Harness::manual_install();
    harness.reconcile().await.expect("recording the revision");
    harness.api.take_requests();

    harness.reconcile().await.expect("previewing the revision");
    let requests = harness.api.take_requests();
    let writes = writes_of(&requests);
    let real: Vec<_> = writes.iter().filter(|r| !r.dry_run()).copied().collect();
    assert_eq!(
        routes(real.iter().copied()),
        [
            ("PATCH", SECRET_PATH),
            ("PATCH", PLAN_SECRET_PATH),
            ("PATCH", STATUS_PATH),
        ],
        "the revision, its plan, the status: nothing of the revision is applied"
    );
    let dry: Vec<&str> = writes
        .iter()
        .filter(|r| r.dry_run())
        .map(|r| r.path.as_str())
        .collect();
    for path in [CRD_PATH, CONFIG_MAP_PATH, CSV_PATH] {
        assert!(dry.contains(&path), "{path} is dry-run: {dry:#?}");
    }
    for kind in [
        "serviceaccounts",
        "roles",
        "rolebindings",
        "clusterroles",
        "deployments",
    ] {
        assert!(
            dry.iter().any(|p| p.contains(&format!("/{kind}/"))),
            "what the CSV makes ({kind}) is dry-run too: {dry:#?}"
        );
    }
    for request in writes.iter().filter(|r| r.dry_run()) {
        assert!(request.is_apply(), "{request}");
        assert_eq!(
            request.field_manager(),
            Some(windlass_api::FIELD_MANAGER),
            "{request}"
        );
        let read_first = requests
            .iter()
            .take_while(|r| !std::ptr::eq(*r, *request))
            .any(|r| r.method == "GET" && r.path == request.path);
        assert!(read_first, "{} is read before its dry run", request.path);
    }

    let blueprint = harness.blueprint();
    let status = blueprint.status.clone().expect("a status");
    assert_eq!(
        status.phase,
        Some(windlass_api::blueprint::BlueprintPhase::RequiresApproval)
    );
    let preview = status.preview.clone().expect("the plan is shown");
    assert_eq!(preview.revision, 1);
    assert_eq!(preview.secret, plan_secret::name(NAME, 1));
    assert!(preview.digest.starts_with("sha256:") && preview.digest.len() == 71);
    assert!(
        preview.summary.starts_with("install 1.0.0"),
        "{}",
        preview.summary
    );

    // The plan Secret: sealed for this Blueprint's revision 1, holding the plan shown.
    let secret: Secret = serde_json::from_value(real[1].body.clone()).expect("a Secret");
    assert_eq!(secret.type_.as_deref(), Some(plan_secret::TYPE));
    let meta = &secret.metadata;
    assert_eq!(meta.labels.as_ref().unwrap()[labels::PLAN_REVISION], "1");
    assert!(
        !meta.labels.as_ref().unwrap().contains_key(labels::REVISION),
        "never listed as a revision"
    );
    let digest = &meta.annotations.as_ref().unwrap()[annotations::PLAN_DIGEST];
    assert_eq!(*digest, preview.digest);
    let data = &secret.data.as_ref().unwrap()[plan_secret::DATA_KEY].0;
    let subject = Subject {
        kind: plan_secret::SEAL_KIND.into(),
        object: format!("{NAMESPACE}/{NAME}"),
        uid: blueprint.metadata.uid.clone().unwrap(),
        revision: Some(1),
    };
    seals::verify(
        &seal_key(),
        &subject,
        &[data.as_slice(), digest.as_bytes()],
        meta.annotations
            .as_ref()
            .unwrap()
            .get(seal::ANNOTATION)
            .map(String::as_str),
    )
    .expect("the plan Secret carries a valid seal");
    let plan: Plan = codec::decode(data).expect("the plan decodes");
    assert_eq!(plan.digest, preview.digest);
    assert_eq!(plan.binding.digest(), plan.digest);
    assert_eq!(
        preview.checksum,
        format!("sha256:{}", windlass_preview::sha256_hex(data))
    );
    assert!(
        plan.objects
            .iter()
            .any(|o| o.object.kind == "Deployment" && o.from_csv)
    );

    // Waiting settles: the stored plan is shown again, no dry run, no write.
    harness.reconcile().await.expect("looking again");
    let again = harness.api.take_requests();
    assert!(again.iter().all(|r| !r.dry_run()), "{:#?}", routes(&again));
    assert!(
        writes_of(&again).is_empty(),
        "{:#?}",
        writes_of(&again)
            .iter()
            .map(|r| &r.body)
            .collect::<Vec<_>>()
    );

    harness.edit_blueprint(|spec| spec.approved_plan = Some(preview.digest.clone()));
    harness
        .reconcile()
        .await
        .expect("applying the approved plan");
    let applied = harness.api.take_requests();
    let real: Vec<&str> = writes_of(&applied)
        .into_iter()
        .filter(|r| !r.dry_run())
        .map(|r| r.path.as_str())
        .collect();
    assert_eq!(real, [CRD_PATH, CONFIG_MAP_PATH, CSV_PATH, STATUS_PATH]);
    let record = harness.blueprint().status.unwrap().history[0].clone();
    assert_eq!(
        record.approved_plan.as_deref(),
        Some(preview.digest.as_str())
    );
    assert_eq!(record.plan.as_deref(), Some(preview.digest.as_str()));
    harness.api.assert_nothing_unexpected();
}

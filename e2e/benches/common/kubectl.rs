//! What the kubectl baselines apply: the objects the CSV controller would create for a bundle,
//! without ownerReferences, cluster-scoped names suffixed so rounds do not collide.

use serde_json::{Value, json};
use windlass_api::OperatorConfig;
use windlass_csv_controller::desired::{self, InstallContext};

/// The install-strategy objects of `bundle` for an operator watching `namespace`.
pub fn install_objects(bundle: &windlass_bundle::Bundle, namespace: &str) -> Vec<Value> {
    let targets = vec![namespace.to_string()];
    let config = OperatorConfig::default();
    let ctx = InstallContext {
        csv_name: bundle.csv.name(),
        namespace,
        owner: json!(null),
        definition: &bundle.csv,
        target_namespaces: &targets,
        config: &config,
        image_rewrites: &[],
        // What windlass creates when a policy grants the bundle's cluster-wide RBAC.
        grants: &[windlass_api::policy::ClusterScopedGrant::ClusterPermissions],
    };
    desired::build(&ctx)
        .into_iter()
        .map(|mut o| {
            if let Some(metadata) = o.object["metadata"].as_object_mut() {
                metadata.remove("ownerReferences");
            }
            if !o.owned {
                o.object["metadata"]["name"] = json!(format!("{}-kubectl", o.name()));
            }
            o.object
        })
        .collect()
}

//! Where a pod template names images: each container's and init container's `image`, and the
//! `RELATED_IMAGE_*` environment values through which operators learn the images of what
//! they deploy (OLM's convention for disconnected installs).

use serde_json::Value;

use crate::rules::Rewrite;

/// The prefix of environment variables that carry an operand's image.
pub const RELATED_IMAGE_ENV_PREFIX: &str = "RELATED_IMAGE_";

const CONTAINER_LISTS: [&str; 2] = ["initContainers", "containers"];

/// One place an image is named in a pod spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageSite {
    pub image: String,
    /// `container manager` or `container manager names in RELATED_IMAGE_DB`.
    pub place: String,
}

/// Every image `pod_spec` (a pod template's `spec`) names, in order: init containers, then
/// containers, each container's own image before its `RELATED_IMAGE_*` values.
pub fn pod_images(pod_spec: &Value) -> Vec<ImageSite> {
    let mut out = Vec::new();
    for list in CONTAINER_LISTS {
        let kind = if list == "initContainers" {
            "init container"
        } else {
            "container"
        };
        for container in pod_spec[list].as_array().into_iter().flatten() {
            let name = container["name"].as_str().unwrap_or("?");
            if let Some(image) = container["image"].as_str().filter(|i| !i.is_empty()) {
                out.push(ImageSite {
                    image: image.to_string(),
                    place: format!("{kind} {name} runs"),
                });
            }
            for env in container["env"].as_array().into_iter().flatten() {
                let (Some(var), Some(value)) = (env["name"].as_str(), env["value"].as_str()) else {
                    continue;
                };
                if var.starts_with(RELATED_IMAGE_ENV_PREFIX) && !value.is_empty() {
                    out.push(ImageSite {
                        image: value.to_string(),
                        place: format!("{kind} {name} names in {var}"),
                    });
                }
            }
        }
    }
    out
}

/// Replaces every image of `pod_spec` that `rewrites` names (exactly as written) by its
/// mirror, in the places [`pod_images`] lists. Returns how many were replaced.
pub fn rewrite_pod(pod_spec: &mut Value, rewrites: &[Rewrite]) -> usize {
    let mirror_of = |image: &str| {
        rewrites
            .iter()
            .find(|r| r.image == image)
            .map(|r| r.mirror.clone())
    };
    let mut replaced = 0;
    for list in CONTAINER_LISTS {
        let Some(containers) = pod_spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for container in containers {
            if let Some(mirror) = container["image"].as_str().and_then(mirror_of) {
                container["image"] = Value::String(mirror);
                replaced += 1;
            }
            let Some(env) = container.get_mut("env").and_then(Value::as_array_mut) else {
                continue;
            };
            for var in env {
                let related = var["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with(RELATED_IMAGE_ENV_PREFIX));
                if !related {
                    continue;
                }
                if let Some(mirror) = var["value"].as_str().and_then(mirror_of) {
                    var["value"] = Value::String(mirror);
                    replaced += 1;
                }
            }
        }
    }
    replaced
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod() -> Value {
        json!({
            "initContainers": [{"name": "setup", "image": "quay.io/acme/setup:1"}],
            "containers": [{
                "name": "manager",
                "image": "quay.io/acme/op:1",
                "env": [
                    {"name": "RELATED_IMAGE_DB", "value": "quay.io/acme/db:1"},
                    {"name": "OTHER", "value": "quay.io/acme/db:1"},
                    {"name": "RELATED_IMAGE_FROM_FIELD", "valueFrom": {"fieldRef": {"fieldPath": "x"}}},
                ],
            }],
        })
    }

    #[test]
    fn images_are_found_where_pods_name_them() {
        let sites: Vec<(String, String)> = pod_images(&pod())
            .into_iter()
            .map(|s| (s.image, s.place))
            .collect();
        assert_eq!(
            sites,
            [
                (
                    "quay.io/acme/setup:1".into(),
                    "init container setup runs".into()
                ),
                ("quay.io/acme/op:1".into(), "container manager runs".into()),
                (
                    "quay.io/acme/db:1".into(),
                    "container manager names in RELATED_IMAGE_DB".into()
                ),
            ]
        );
    }

    #[test]
    fn rewriting_touches_only_the_images_named() {
        let mut pod = pod();
        let rewrites = [
            Rewrite {
                image: "quay.io/acme/op:1".into(),
                mirror: "m.site/acme/op:1".into(),
                mirror_set: "site".into(),
            },
            Rewrite {
                image: "quay.io/acme/db:1".into(),
                mirror: "m.site/acme/db:1".into(),
                mirror_set: "site".into(),
            },
        ];
        assert_eq!(rewrite_pod(&mut pod, &rewrites), 2);
        assert_eq!(pod["containers"][0]["image"], "m.site/acme/op:1");
        assert_eq!(pod["containers"][0]["env"][0]["value"], "m.site/acme/db:1");
        // Not a RELATED_IMAGE_ variable: left alone.
        assert_eq!(pod["containers"][0]["env"][1]["value"], "quay.io/acme/db:1");
        assert_eq!(pod["initContainers"][0]["image"], "quay.io/acme/setup:1");
        assert_eq!(rewrite_pod(&mut json!({}), &rewrites), 0);
    }
}

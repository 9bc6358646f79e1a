//! What `windlass upgrade recommend` prints: the updates the update service offers from the
//! running release, newest first, each with whether it is recommended here and the risks
//! that apply. `-o wide` shows the risks' whole messages and how each is matched; `-o json|yaml`
//! the same list as data.

use serde::Serialize;
use windlass_api::{
    ClusterVersion, ConditionStatus,
    clusterversion::{UpdateRisk, UpdateState},
    condition::find,
    names::conditions::cluster_version as types,
};

use super::output::Format;

/// What the update service offers, as read from the ClusterVersion's status.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Recommendations {
    pub upstream: Option<String>,
    pub channel: Option<String>,
    /// The release the updates start from (the newest Completed one).
    pub from: String,
    /// Why updates could not be retrieved, when they could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retrieval_failed: Option<Failure>,
    /// Newest first.
    pub updates: Vec<Offer>,
}

#[derive(Debug, Serialize)]
pub struct Failure {
    pub reason: String,
    pub message: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Offer {
    pub version: String,
    pub image: String,
    /// Offered only under conditions (risks) rather than plainly.
    pub conditional: bool,
    /// `True`, `False` or `Unknown` (not evaluated yet, or the evaluation failed).
    pub recommended: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub risks: Vec<Risk>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Risk {
    pub name: String,
    /// `True`, `False` or `Unknown`.
    pub applies: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub url: String,
    /// How the update service tells whether it applies: `Always`, or `PromQL: <query>`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub matched_by: Vec<String>,
}

pub fn recommendations(version: &ClusterVersion) -> Recommendations {
    let status = version.status.clone().unwrap_or_default();
    let from = status
        .history
        .iter()
        .find(|h| h.state == UpdateState::Completed)
        .map(|h| h.version.clone())
        .unwrap_or_default();
    let retrieval_failed = find(&status.conditions, types::RETRIEVED_UPDATES)
        .filter(|c| c.status != ConditionStatus::True)
        .map(|c| Failure {
            reason: c.reason.clone(),
            message: c.message.clone(),
        });
    let mut updates: Vec<Offer> = status
        .available_updates
        .iter()
        .map(|r| Offer {
            version: r.version.clone(),
            image: r.image.clone(),
            conditional: false,
            recommended: "True".into(),
            reason: None,
            message: "no known issue applies to this cluster".into(),
            risks: Vec::new(),
        })
        .collect();
    for update in &status.conditional_updates {
        let recommended = update
            .conditions
            .iter()
            .find(|c| c.type_ == types::RECOMMENDED);
        updates.push(Offer {
            version: update.release.version.clone(),
            image: update.release.image.clone(),
            conditional: true,
            recommended: recommended.map_or("Unknown".into(), |c| format!("{:?}", c.status)),
            reason: recommended.map(|c| c.reason.clone()),
            message: recommended.map(|c| c.message.clone()).unwrap_or_default(),
            risks: update.risks.iter().map(risk).collect(),
        });
    }
    updates.sort_by(|a, b| {
        match (
            semver::Version::parse(&b.version),
            semver::Version::parse(&a.version),
        ) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            _ => b.version.cmp(&a.version),
        }
    });
    Recommendations {
        upstream: version.spec.upstream.clone(),
        channel: version.spec.channel.clone(),
        from,
        retrieval_failed,
        updates,
    }
}

fn risk(risk: &UpdateRisk) -> Risk {
    Risk {
        name: risk.name.clone(),
        applies: risk
            .conditions
            .iter()
            .find(|c| c.type_ == types::APPLIES)
            .map_or("Unknown".into(), |c| format!("{:?}", c.status)),
        message: risk.message.clone(),
        url: risk.url.clone(),
        matched_by: risk
            .matching_rules
            .iter()
            .map(|rule| match &rule.promql {
                Some(q) => format!("{}: {}", rule.type_, q.promql),
                None => rule.type_.clone(),
            })
            .collect(),
    }
}

/// The recommendations as `format` asks: data for json and yaml, else the text in
/// `oc adm upgrade recommend`'s order (service and channel, then each update).
pub fn show(version: &ClusterVersion, format: Format) -> anyhow::Result<String> {
    let found = recommendations(version);
    if let Some(text) = format.data(|| Ok(serde_json::to_value(&found)?))? {
        return Ok(text);
    }
    Ok(render(&found, format.wide()))
}

/// The first line of a message, or all of it indented under its entry (`wide`).
fn message(text: &str, wide: bool) -> String {
    if wide {
        text.lines().collect::<Vec<_>>().join("\n        ")
    } else {
        text.lines().next().unwrap_or_default().to_string()
    }
}

fn render(found: &Recommendations, wide: bool) -> String {
    let mut out = String::new();
    match (&found.upstream, &found.channel) {
        (Some(upstream), Some(channel)) => {
            out.push_str(&format!(
                "Upstream update service: {upstream}\nChannel: {channel}\n"
            ));
        }
        _ => {
            out.push_str(
                "No update service: set spec.upstream and a channel (`windlass upgrade channel NAME`).\n",
            );
            return out;
        }
    }
    if let Some(failed) = &found.retrieval_failed {
        out.push_str(&format!(
            "Updates could not be retrieved ({}): {}\n",
            failed.reason, failed.message
        ));
    }
    if found.updates.is_empty() {
        out.push_str(&format!(
            "\nNo updates from {} in this channel.\n",
            found.from
        ));
        return out;
    }
    out.push_str(&format!("\nUpdates from {}:\n", found.from));
    for offer in &found.updates {
        let mut why = match (offer.recommended.as_str(), &offer.reason) {
            ("True", None) => format!("Recommended: {}", offer.message),
            ("True", Some(reason)) => format!("Recommended ({reason})"),
            (_, Some(reason)) => {
                format!(
                    "Not recommended ({reason}): {}",
                    message(&offer.message, wide)
                )
            }
            (_, None) => "Not evaluated yet".to_string(),
        };
        for risk in &offer.risks {
            why.push_str(&format!(
                "\n      risk {} (applies: {}): {}",
                risk.name,
                risk.applies,
                message(&risk.message, wide)
            ));
            if !risk.url.is_empty() {
                why.push_str(&format!(" {}", risk.url));
            }
            if wide {
                for rule in &risk.matched_by {
                    why.push_str(&format!("\n        matched by {rule}"));
                }
            }
        }
        out.push_str(&format!(
            "  {:<10} {}\n      {why}\n",
            offer.version, offer.image
        ));
    }
    out.push_str("\n`windlass upgrade --to VERSION` asks for one (`--accept-risks NAME` for a conditional update's risks).\n");
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn version() -> ClusterVersion {
        serde_json::from_value(json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "ClusterVersion",
            "metadata": {"name": "version"},
            "spec": {"upstream": "http://graph.example/api", "channel": "stable-4.2"},
            "status": {
                "history": [{"state": "Completed", "version": "4.1.0", "image": "r@sha256:a",
                             "verified": true, "startedTime": "2026-02-01T10:00:00Z"}],
                "availableUpdates": [{"version": "4.1.1", "image": "r@sha256:b"}],
                "conditionalUpdates": [{
                    "release": {"version": "4.2.0", "image": "r@sha256:c"},
                    "risks": [{"name": "SlowIngress",
                        "message": "Ingress is slow after the update\nwhen routes number thousands",
                        "url": "https://example.invalid/slow",
                        "matchingRules": [{"type": "PromQL", "promql": {"promql": "count(route) > 1000"}}],
                        "conditions": [{"type": "Applies", "status": "True", "reason": "Match", "message": ""}]}],
                    "conditions": [{"type": "Recommended", "status": "False", "reason": "SlowIngress", "message": "Ingress is slow"}],
                }],
            },
        }))
        .unwrap()
    }

    #[test]
    fn recommend_lists_updates_newest_first_with_the_risks_that_apply() {
        let shown = show(&version(), Format::Table).unwrap();
        let newer = shown.find("4.2.0").unwrap();
        let older = shown.find("4.1.1").unwrap();
        assert!(newer < older, "{shown}");
        for part in [
            "Upstream update service: http://graph.example/api\nChannel: stable-4.2\n",
            "Updates from 4.1.0:\n",
            "  4.2.0      r@sha256:c\n      Not recommended (SlowIngress): Ingress is slow\n",
            "      risk SlowIngress (applies: True): Ingress is slow after the update https://example.invalid/slow\n",
            "  4.1.1      r@sha256:b\n      Recommended: no known issue applies to this cluster\n",
        ] {
            assert!(shown.contains(part), "missing {part:?} in:\n{shown}");
        }
        assert!(
            !shown.contains("thousands") && !shown.contains("matched by"),
            "{shown}"
        );
    }

    #[test]
    fn wide_shows_whole_risk_messages_and_how_they_are_matched() {
        let wide = show(&version(), Format::Wide).unwrap();
        assert!(
            wide.contains(
                "after the update\n        when routes number thousands https://example.invalid/slow\n        matched by PromQL: count(route) > 1000\n"
            ),
            "{wide}"
        );
    }

    #[test]
    fn json_is_the_same_list_as_data() {
        let json: Value = serde_json::from_str(&show(&version(), Format::Json).unwrap()).unwrap();
        assert_eq!(json["from"], "4.1.0");
        assert_eq!(json["updates"][0]["version"], "4.2.0");
        assert_eq!(json["updates"][0]["recommended"], "False");
        assert_eq!(json["updates"][0]["risks"][0]["applies"], "True");
        assert_eq!(
            json["updates"][0]["risks"][0]["matchedBy"][0],
            "PromQL: count(route) > 1000"
        );
        assert_eq!(json["updates"][1]["conditional"], false);
    }

    #[test]
    fn without_an_update_service_it_says_how_to_set_one() {
        let mut version = version();
        version.spec.upstream = None;
        assert!(
            show(&version, Format::Table)
                .unwrap()
                .starts_with("No update service")
        );
        let retrieved_failed: ClusterVersion = serde_json::from_value(json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "ClusterVersion",
            "metadata": {"name": "version"},
            "spec": {"upstream": "http://graph.example/api", "channel": "stable-4.2"},
            "status": {"conditions": [{"type": "RetrievedUpdates", "status": "False",
                "reason": "RemoteFailed", "message": "connection refused",
                "lastTransitionTime": "2026-02-01T10:00:00Z"}]},
        }))
        .unwrap();
        let shown = show(&retrieved_failed, Format::Table).unwrap();
        assert!(
            shown.contains("Updates could not be retrieved (RemoteFailed): connection refused\n"),
            "{shown}"
        );
        assert!(shown.contains("\nNo updates from "), "{shown}");
    }
}

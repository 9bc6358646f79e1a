//! Kubernetes Events: what a person sees in `kubectl describe`.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    Client,
    runtime::events::{Event, EventType, Recorder, Reporter},
};
use tracing::warn;

/// The API server refuses an Event note over 1 kB.
const MAX_NOTE: usize = 1000;
/// ... and an action over 128 characters.
const MAX_ACTION: usize = 128;

/// Something worth telling a person about an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub warning: bool,
    /// CamelCase, like a condition reason.
    pub reason: String,
    /// What the Event is about (`Reconcile`, `Revision3.CRDs`). Recorders fold Events with the
    /// same reason and action into one series, so distinct facts get distinct actions and only
    /// a true repeat is counted.
    pub action: String,
    pub message: String,
}

impl Notice {
    /// A normal Event of the `Reconcile` action.
    pub fn normal(reason: impl Into<String>, message: impl Into<String>) -> Notice {
        Notice {
            warning: false,
            reason: reason.into(),
            action: "Reconcile".into(),
            message: message.into(),
        }
    }

    /// A warning Event of the `Reconcile` action.
    pub fn warning(reason: impl Into<String>, message: impl Into<String>) -> Notice {
        Notice {
            warning: true,
            ..Notice::normal(reason, message)
        }
    }

    /// The same notice under another action.
    pub fn action(mut self, action: impl Into<String>) -> Notice {
        self.action = action.into();
        self
    }
}

/// The Event that tells a repair of someone else's edit: the object, each field with what was
/// found and what was restored, and the field managers that had changed them.
pub fn repair_notice(drift: &windlass_preview::Drift) -> Notice {
    fn shown(value: Option<&serde_json::Value>) -> String {
        const LONGEST: usize = 80;
        let Some(value) = value else {
            return "(absent)".into();
        };
        let text = value.to_string();
        if text.chars().count() <= LONGEST {
            return text;
        }
        let cut: String = text.chars().take(LONGEST).collect();
        format!("{cut}...")
    }
    let fields: Vec<String> = drift
        .fields
        .iter()
        .map(|f| {
            format!(
                "{}: found {}, restored {}",
                f.path,
                shown(f.new.as_ref()),
                shown(f.old.as_ref())
            )
        })
        .collect();
    let by = if drift.editors.is_empty() {
        String::new()
    } else {
        format!(" (changed by {})", drift.editors.join(", "))
    };
    Notice::warning(
        windlass_api::names::reasons::drift::REPAIRED,
        format!("put back {}{by}: {}", drift.object, fields.join("; ")),
    )
    .action(format!("Repair {}", drift.object))
}

/// Publishes Events under one controller's name.
#[derive(Clone)]
pub struct Events {
    recorder: Recorder,
}

impl Events {
    pub fn new(client: Client, controller: &str) -> Events {
        Events {
            recorder: Recorder::new(
                client,
                Reporter {
                    controller: controller.into(),
                    instance: None,
                },
            ),
        }
    }

    /// Publishes `notice` on `object`. A failure is logged, never returned: an Event that
    /// cannot be written must not fail the reconcile that earned it.
    pub async fn publish(&self, object: &ObjectReference, notice: &Notice) {
        let event = Event {
            type_: if notice.warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: notice.reason.clone(),
            note: Some(truncate(&notice.message, MAX_NOTE)),
            action: truncate(&notice.action, MAX_ACTION),
            secondary: None,
        };
        if let Err(error) = self.recorder.publish(&event, object).await {
            warn!(%error, reason = %notice.reason, "publishing an event failed");
        }
    }
}

/// `text` cut to at most `max` bytes, on a character boundary.
pub fn truncate(text: &str, max: usize) -> String {
    let mut cut = text.len().min(max);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text[..cut].to_string()
}

#[cfg(test)]
mod repair_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_repair_names_object_fields_values_and_who_changed_them() {
        let drift = windlass_preview::Drift {
            object: windlass_preview::ObjectRef {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: Some("team-a".into()),
                name: "acme-db-operator".into(),
            },
            fields: vec![windlass_preview::FieldChange {
                path: "spec.replicas".into(),
                old: Some(json!(1)),
                new: Some(json!(4)),
            }],
            editors: vec!["kubectl-scale".into()],
        };
        let notice = repair_notice(&drift);
        assert!(notice.warning);
        assert_eq!(notice.reason, "DriftRepaired");
        assert_eq!(
            notice.message,
            "put back Deployment team-a/acme-db-operator (changed by kubectl-scale): \
             spec.replicas: found 4, restored 1"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_cut_on_a_character_boundary() {
        assert_eq!(truncate("ééé", 3), "é");
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate(&"x".repeat(2000), MAX_NOTE).len(), 1000);
    }

    #[test]
    fn notices_read_as_built() {
        let notice = Notice::warning("Failed", "it broke").action("Revision2");
        assert!(notice.warning);
        assert_eq!(notice.action, "Revision2");
        assert_eq!(Notice::normal("Ok", "fine").action, "Reconcile");
    }
}

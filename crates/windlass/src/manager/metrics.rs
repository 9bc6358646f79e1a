//! Prometheus metrics: reconcile counts, durations and errors per controller.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use prometheus_client::{
    encoding::{EncodeLabelSet, text::encode},
    metrics::{counter::Counter, family::Family, histogram::Histogram},
    registry,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabel {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabel {
    controller: String,
    error: String,
}

/// The manager's metrics registry, shared by the HTTP endpoint and every controller.
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Mutex<registry::Registry>>,
    reconciles: Family<ControllerLabel, Counter>,
    errors: Family<ErrorLabel, Counter>,
    durations: Family<ControllerLabel, Histogram>,
}

impl Registry {
    pub fn new() -> Registry {
        let mut registry = registry::Registry::with_prefix("windlass");
        let reconciles = Family::<ControllerLabel, Counter>::default();
        let errors = Family::<ErrorLabel, Counter>::default();
        let durations = Family::<ControllerLabel, Histogram>::new_with_constructor(|| {
            Histogram::new([0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0])
        });
        registry.register(
            "reconciles",
            "Reconciles run, per controller",
            reconciles.clone(),
        );
        registry.register(
            "reconcile_errors",
            "Reconciles that failed, per controller and error kind",
            errors.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Time spent in one reconcile",
            durations.clone(),
        );
        Registry {
            inner: Arc::new(Mutex::new(registry)),
            reconciles,
            errors,
            durations,
        }
    }

    /// The metrics sink for one controller.
    pub fn controller(&self, name: &str) -> Arc<dyn windlass_kit::Metrics> {
        Arc::new(ControllerMetrics {
            registry: self.clone(),
            controller: name.to_string(),
        })
    }

    /// The text exposition format Prometheus scrapes.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let registry = self
            .inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &registry);
        out
    }
}

struct ControllerMetrics {
    registry: Registry,
    controller: String,
}

impl windlass_kit::Metrics for ControllerMetrics {
    fn reconciled(&self, duration: Duration, failed_stage: Option<&'static str>) {
        let label = ControllerLabel {
            controller: self.controller.clone(),
        };
        self.registry.reconciles.get_or_create(&label).inc();
        self.registry
            .durations
            .get_or_create(&label)
            .observe(duration.as_secs_f64());
        if let Some(error) = failed_stage {
            self.registry
                .errors
                .get_or_create(&ErrorLabel {
                    controller: self.controller.clone(),
                    error: error.into(),
                })
                .inc();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconciles_and_errors_are_counted_per_controller() {
        let registry = Registry::new();
        let csv = registry.controller("clusterserviceversion");
        csv.reconciled(Duration::from_millis(20), None);
        csv.reconciled(Duration::from_millis(30), Some("apply"));
        let text = registry.render();
        assert!(
            text.contains("windlass_reconciles_total{controller=\"clusterserviceversion\"} 2"),
            "{text}"
        );
        assert!(text.contains("windlass_reconcile_errors_total{controller=\"clusterserviceversion\",error=\"apply\"} 1"), "{text}");
        assert!(
            text.contains(
                "windlass_reconcile_duration_seconds_count{controller=\"clusterserviceversion\"} 2"
            ),
            "{text}"
        );
    }
}

//! What every controller reports to the manager's metrics, without knowing the metrics library.

use std::time::Duration;

/// How the manager observes reconciles (count, duration, errors by stable label).
pub trait ReconcileMetrics: Send + Sync {
    fn reconciled(&self, duration: Duration, error: Option<&'static str>);
}

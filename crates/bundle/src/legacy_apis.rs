//! Objects of Kubernetes APIs that no longer exist (rbac v1beta1, policy v1beta1, ...), moved to their current versions.

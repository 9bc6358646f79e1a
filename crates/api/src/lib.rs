//! The `windlass.dev/v1alpha1` API types.

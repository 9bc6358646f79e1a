//! Test support: the local control plane, a namespace per test, the registry, helm.

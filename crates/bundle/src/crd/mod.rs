//! CustomResourceDefinitions: reading `apiextensions.k8s.io/v1` and the legacy `v1beta1`, and
//! converting the latter to structural v1 with a record of every change.

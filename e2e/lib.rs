//! End-to-end tests live in `tests/`; they need the local control plane (`make cluster`).

//! End-to-end tests live in `tests/e2e/` (one test binary, a module per area); they need the
//! local control plane (`make cluster`, or `make e2e`, which starts it).

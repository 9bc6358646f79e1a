//! Version ranges in the blang/semver and Masterminds syntaxes bundles use.

//! Channel validation: heads, cycles, stranded entries, dangling edges.

//! Arbitrary bytes through the tar(+gzip) unpacker: it must refuse or return a tree that
//! respects the caps and holds only safe relative paths.
#![no_main]

use libfuzzer_sys::fuzz_target;
use windlass_bundle::Limits;

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_total_bytes: 1 << 20,
        max_files: 64,
    };
    if let Ok(tree) = windlass_bundle::unpack::unpack(data, limits) {
        assert!(tree.files.len() <= limits.max_files);
        assert!(tree.total_bytes() <= limits.max_total_bytes);
        for path in tree.files.keys() {
            assert!(!path.starts_with('/'), "{path}");
            assert!(
                !path
                    .split('/')
                    .any(|p| p == ".." || p == "." || p.is_empty()),
                "{path}"
            );
        }
    }
});

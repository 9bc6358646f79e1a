//! Fuzz the version-range parser: it must never panic, and whatever it accepts must behave as
//! a set: the text it keeps parses again to the same range, and matching never panics.
//!
//! `cargo fuzz run range` (nightly), or on stable:
//! `cargo build --release` here with the sancov flags in `README.md`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use semver::Version;
use windlass_catalog::range::VersionRange;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(range) = VersionRange::parse(text) else {
        return;
    };
    let again = VersionRange::parse(range.as_str()).expect("a kept range parses again");
    assert_eq!(again, range);
    for probe in [
        "0.0.0",
        "1.2.3",
        "1.2.3-rc.1",
        "2.0.0",
        "18446744073709551615.0.0",
    ] {
        let v = Version::parse(probe).expect("probe versions are valid");
        assert_eq!(range.matches(&v), again.matches(&v));
    }
});

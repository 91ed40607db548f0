//! Fuzz the run-configuration parser (TOML + validation): never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let path = std::path::Path::new("fuzz/config.toml");
        let _ = fedmix::algorithms::two_phase::RunConfig::from_sources(Some((path, text)), &[]);
    }
});

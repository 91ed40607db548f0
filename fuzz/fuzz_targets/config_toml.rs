//! Fuzz the run-configuration parser (TOML + validation): never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let path = std::path::Path::new("fuzz/config.toml");
        for kind in fedmix::params::AlgorithmKind::ALL {
            let _ =
                fedmix::algorithms::AlgorithmParams::from_sources(kind, Some((path, text)), &[]);
        }
    }
});

//! Fuzz the dataset manifest parser: any bytes → a manifest or a typed error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = fedmix::io::parse_manifest(text, std::path::Path::new("fuzz/manifest.json"));
    }
});

//! Fuzz the `.npy` reader: any bytes → an array or a typed error, never a panic or an
//! allocation the file cannot back (shape products are checked against the payload first).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let src = std::path::Path::new("fuzz/x.npy");
    let _ = fedmix::io::decode_f64(src, data, &[None, None]);
    let _ = fedmix::io::decode_f64(src, data, &[None]);
});

#![no_main]
// The path resolver against the fs guest's C library: see
// warden_properties::paths.
libfuzzer_sys::fuzz_target!(|data: &[u8]| warden_properties::paths::check(data));

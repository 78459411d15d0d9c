#![no_main]
// The trust diff of two policies: see warden_properties::trust.
libfuzzer_sys::fuzz_target!(|data: &[u8]| warden_properties::trust::check(data));

#![no_main]
// The secret scrubber, differentially: see warden_properties::scrub.
libfuzzer_sys::fuzz_target!(|data: &[u8]| warden_properties::scrub::check(data));

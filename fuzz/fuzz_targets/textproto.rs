#![no_main]
// Inline calls and the text protocol: see warden_properties::textproto.
libfuzzer_sys::fuzz_target!(|data: &[u8]| warden_properties::textproto::check(data));

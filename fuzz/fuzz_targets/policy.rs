#![no_main]
// `warden.toml` to grants: see warden_properties::policy.
libfuzzer_sys::fuzz_target!(|data: &[u8]| warden_properties::policy::check(data));

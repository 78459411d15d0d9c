#![no_main]
// The SSE reader and tool-call delta assembly: see warden_properties::sse.
libfuzzer_sys::fuzz_target!(|data: &[u8]| warden_properties::sse::check(data));

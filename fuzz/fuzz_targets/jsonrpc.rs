#![no_main]
// The JSON-RPC framing of `warden mcp`: see warden_properties::jsonrpc.
libfuzzer_sys::fuzz_target!(|data: &[u8]| warden_properties::jsonrpc::check(data));

//! The WIT bindings of the host extras this component imports, and its
//! exported `tool` interface, made by the SDK from [`crate::TOOLS`].

wit_bindgen::generate!({
    path: "../../wit",
    world: "warden:tool/host-extras",
    with: {
        "wasi:filesystem/types@0.2.12": wasip2::filesystem::types,
        "wasi:io/error@0.2.12": wasip2::io::error,
        "wasi:io/poll@0.2.12": wasip2::io::poll,
        "wasi:io/streams@0.2.12": wasip2::io::streams,
        "wasi:clocks/wall-clock@0.2.12": wasip2::clocks::wall_clock,
    },
});

warden_tool::export!(tools = crate::TOOLS);

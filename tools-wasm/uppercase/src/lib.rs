//! The smallest complete warden tool component. Copy this crate to start your
//! own (or run `warden tools new NAME --lang rust`).
//!
//! A tool is an argument struct and a function. The struct's doc comment is
//! the description the model reads; each field's doc comment describes that
//! argument. The JSON Schema the host validates every call against is derived
//! from the same struct that parses the arguments, so the two always agree.

use warden_tool::{Error, JsonSchema, Tool};

/// Return the given text converted to upper case.
#[derive(serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)] // `additionalProperties: false` in the schema
struct Uppercase {
    /// The text to uppercase.
    text: String,
}

impl Tool for Uppercase {
    const NAME: &str = "uppercase"; // snake_case name the model calls
    const ALIASES: &[&str] = &["upper"]; // other names it may use by mistake
    const NO_FILES: bool = true; // it touches no files (see warden_tool::effect)
    fn run(self) -> Result<String, Error> {
        Ok(self.text.to_uppercase()) // what the model reads
    }
}

warden_tool::export!(Uppercase);

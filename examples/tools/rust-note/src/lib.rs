//! An example warden tool in Rust that writes a file, and says so: its
//! `path` field declares the call's effect (a write, whose whole new
//! content is the `text` argument). warden then shows the user the diff
//! before the call runs, and `warden undo` can put the file back.

use warden_tool::{Error, JsonSchema, Tool, effect};

/// Save a note: write its text to a file (replacing the file, or creating
/// it with its folders).
#[derive(serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SaveNote {
    /// The file to write, relative to the workspace.
    #[schemars(
        length(min = 1),
        extend("x-warden-effect" = effect::write().whole("text").follow())
    )]
    path: String,
    /// The note.
    text: String,
}

impl Tool for SaveNote {
    const NAME: &str = "save_note";
    const MUTATES: bool = true;
    fn run(self) -> Result<String, Error> {
        if let Some(parent) = std::path::Path::new(&self.path).parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&self.path, &self.text)
            .map_err(|e| Error::failed(format!("cannot write {}: {e}", self.path)))?;
        Ok(format!("saved {} bytes to {}", self.text.len(), self.path))
    }
}

warden_tool::export!(SaveNote);

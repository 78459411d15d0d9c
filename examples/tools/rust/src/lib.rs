//! An example warden tool in Rust: counts the words of a text.

use warden_tool::{Error, JsonSchema, Tool};

/// Count the words of a text (split on whitespace); with unique, count distinct words.
#[derive(serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WordCount {
    /// The text to count.
    text: String,
    /// Count each distinct word once.
    #[serde(default)]
    unique: bool,
}

impl Tool for WordCount {
    const NAME: &str = "word_count";
    fn run(self) -> Result<String, Error> {
        let words: Vec<&str> = self.text.split_whitespace().collect();
        if words.is_empty() {
            return Err(Error::invalid_args(
                "the text has no words; give some text to count",
            ));
        }
        let n = if self.unique {
            words.iter().collect::<std::collections::BTreeSet<_>>().len()
        } else {
            words.len()
        };
        Ok(format!("{n} words"))
    }
}

warden_tool::export!(WordCount);

//! What a tool declares of its desktop actions, in its parameters schema:
//! the keyword `x-warden-desktop` on the property that names the app to
//! start (`{"action": "open_app", "files": "F", "urls": "U"}`), the page
//! to open (`{"action": "browse"}`) or the app to end (`{"action":
//! "close_app"}`). The keyword is taken out of the schema the model sees.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The schema keyword.
pub const KEYWORD: &str = "x-warden-desktop";

/// One declared desktop action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Declared {
    /// The argument holding the app, the URL, or the id.
    pub argument: String,
    /// What the call does with it.
    pub does: Does,
}

/// What a call does in the desktop session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum Does {
    /// Starts the app the argument names, with the files (paths) and URLs
    /// of the arguments named here.
    OpenApp {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        files: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        urls: Option<String>,
    },
    /// Opens the URL the argument holds in the user's browser.
    Browse {},
    /// Ends the app of this session whose id the argument holds.
    CloseApp {},
}

/// Takes the declarations out of the properties of `schema`; the error
/// names one that is wrong.
pub(crate) fn take(schema: &mut Value) -> Result<Vec<Declared>, String> {
    let Some(Value::Object(props)) = schema.get_mut("properties") else {
        return Ok(Vec::new());
    };
    let names: Vec<String> = props.keys().cloned().collect();
    let mut out = Vec::new();
    for (name, prop) in props.iter_mut() {
        let Some(declared) = prop.as_object_mut().and_then(|p| p.remove(KEYWORD)) else {
            continue;
        };
        let does: Does = serde_json::from_value(declared)
            .map_err(|e| format!("`{name}`: its {KEYWORD} is not a desktop action: {e}"))?;
        if let Does::OpenApp { files, urls } = &does
            && let Some(missing) = [files, urls]
                .into_iter()
                .flatten()
                .find(|n| !names.contains(n))
        {
            return Err(format!(
                "`{name}`: its {KEYWORD} names argument `{missing}`, which its parameters do \
                 not have"
            ));
        }
        out.push(Declared {
            argument: name.clone(),
            does,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn declarations_leave_the_schema_and_name_real_arguments() {
        let mut schema = json!({"type": "object", "properties": {
            "app": {"type": "string", KEYWORD: {"action": "open_app", "files": "files"}},
            "files": {"type": "array", "items": {"type": "string"}},
        }});
        let declared = take(&mut schema).unwrap();
        assert_eq!(
            declared,
            [Declared {
                argument: "app".into(),
                does: Does::OpenApp {
                    files: Some("files".into()),
                    urls: None
                }
            }]
        );
        assert_eq!(schema["properties"]["app"], json!({"type": "string"}));
        for (bad, says) in [
            (
                json!({"action": "open_app", "urls": "u"}),
                "names argument `u`",
            ),
            (json!({"action": "launch"}), "unknown variant `launch`"),
            (
                json!({"action": "browse", "files": "app"}),
                "unknown field `files`",
            ),
            (json!("browse"), "is not a desktop action"),
        ] {
            let mut schema = json!({"properties": {"app": {KEYWORD: bad}}});
            let e = take(&mut schema).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }
}

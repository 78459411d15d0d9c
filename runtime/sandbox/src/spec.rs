//! Tool specs from `describe`: checked once at load, then used to validate
//! every call's arguments before the guest runs.

use std::sync::OnceLock;

use serde::Serialize;
use serde_json::Value;

use warden_policy::is_tool_name;

use crate::bindings::{Effect, GuestSpec};
use crate::outcome::{ErrorKind, ToolError};

/// A tool as the model and the user see it.
#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    /// Name the model calls (snake_case).
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the argument object.
    pub parameters: Value,
    /// Other accepted names.
    pub aliases: Vec<String>,
    /// Whether a call can change state.
    pub mutates: bool,
    /// What a call does to the paths its arguments name; `None`: not
    /// declared (a contract 0.1.0 component, or a tool that does not say).
    pub effects: Option<Vec<Effect>>,
    /// What a call does in the desktop session (`x-warden-desktop` in its
    /// parameters, taken out of the schema the model sees).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub desktop: Vec<crate::desktop::Declared>,
}

/// A spec with its compiled argument validator.
pub(crate) struct CheckedSpec {
    pub(crate) spec: ToolSpec,
    /// Compiled when the spec is checked, or, for a description recorded
    /// when it was checked before, at the first call.
    validator: OnceLock<Result<jsonschema::Validator, String>>,
}

impl std::fmt::Debug for CheckedSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.spec.fmt(f)
    }
}

/// Checks the specs a component described; the error says which tool and why.
pub(crate) fn check_specs(specs: Vec<GuestSpec>) -> Result<Vec<CheckedSpec>, String> {
    let checked = check_specs_later(specs)?;
    for c in &checked {
        c.validator()?;
    }
    Ok(checked)
}

/// [`check_specs`] for a description that passed it when it was recorded:
/// each schema is compiled at the tool's first call, so that listing tools
/// compiles none.
pub(crate) fn check_specs_later(specs: Vec<GuestSpec>) -> Result<Vec<CheckedSpec>, String> {
    if specs.is_empty() {
        return Err("describe() returned no tools".into());
    }
    let mut out: Vec<CheckedSpec> = Vec::with_capacity(specs.len());
    for s in specs {
        if !is_tool_name(&s.name) {
            return Err(format!(
                "tool name `{}` is not snake_case (`[a-z][a-z0-9_]*`, at most 64 chars)",
                s.name
            ));
        }
        for a in &s.aliases {
            if !is_tool_name(a) {
                return Err(format!("tool `{}`: alias `{a}` is not snake_case", s.name));
            }
        }
        if let Some(prev) = out
            .iter()
            .find(|o| o.spec.name == s.name || o.spec.aliases.contains(&s.name))
        {
            return Err(format!(
                "two tools are named `{}` (the second clashes with `{}`)",
                s.name, prev.spec.name
            ));
        }
        let mut parameters: Value = serde_json::from_str(&s.parameters)
            .map_err(|e| format!("tool `{}`: parameters is not valid JSON: {e}", s.name))?;
        let desktop = crate::desktop::take_declared(&mut parameters)
            .map_err(|e| format!("tool `{}`: {e}", s.name))?;
        crate::schema::check(&parameters, s.parameters.len())
            .and_then(|()| object_schema(&parameters))
            .and_then(|()| crate::effects::check(s.effects.as_deref().unwrap_or(&[]), &parameters))
            .map_err(|e| format!("tool `{}`: {e}", s.name))?;
        out.push(CheckedSpec {
            spec: ToolSpec {
                name: s.name,
                description: s.description,
                parameters,
                aliases: s.aliases,
                mutates: s.mutates,
                effects: s.effects,
                desktop,
            },
            validator: OnceLock::new(),
        });
    }
    Ok(out)
}

/// That `parameters` is a schema of an object, as a tool's arguments are.
fn object_schema(parameters: &Value) -> Result<(), String> {
    if !parameters.is_object() {
        return Err("parameters must be a JSON Schema object like {\"type\":\"object\"}".into());
    }
    if let Some(t) = parameters.get("type").filter(|t| *t != "object") {
        return Err(format!(
            "parameters must describe an object (\"type\": \"object\"), not {t}"
        ));
    }
    Ok(())
}

/// `parameters` compiled. Patterns run with a backtracking bound: a
/// pattern cannot make one check take unbounded time either.
fn compile(parameters: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .with_pattern_options(jsonschema::PatternOptions::fancy_regex().backtrack_limit(100_000))
        .build(parameters)
        .map_err(|e| format!("parameters is not a valid JSON Schema: {e}"))
}

/// The argument schema of a tool that does not come from a component (an
/// MCP server's), checked and compiled as a component's is: calls are
/// validated against it before they are sent, with the same messages.
pub struct ArgsCheck(CheckedSpec);

impl std::fmt::Debug for ArgsCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ArgsCheck").field(&self.0.spec.name).finish()
    }
}

impl ArgsCheck {
    /// Checks `parameters` (`bytes` long) of tool `name`: bounded, a
    /// schema of an object, one that compiles. The error says what is
    /// wrong.
    pub fn new(name: &str, parameters: &Value, bytes: usize) -> Result<ArgsCheck, String> {
        crate::schema::check(parameters, bytes)?;
        object_schema(parameters)?;
        let validator = compile(parameters)?;
        Ok(ArgsCheck(CheckedSpec {
            spec: ToolSpec {
                name: name.to_string(),
                description: String::new(),
                parameters: parameters.clone(),
                aliases: Vec::new(),
                mutates: false,
                effects: None,
                desktop: Vec::new(),
            },
            validator: OnceLock::from(Ok(validator)),
        }))
    }

    /// Validates a call's arguments; the error tells the model how to call.
    pub fn check(&self, args: &Value) -> Result<(), ToolError> {
        if !args.is_object() {
            return Err(ToolError::new(
                ErrorKind::InvalidArgs,
                format!(
                    "arguments for `{}` must be a JSON object, not {}. Expected: {}",
                    self.0.spec.name,
                    warden_policy::json_kind(args),
                    self.0.usage()
                ),
            ));
        }
        self.0.check_args(args)
    }
}

impl CheckedSpec {
    /// The compiled schema; the error says why it does not compile.
    fn validator(&self) -> Result<&jsonschema::Validator, String> {
        self.validator
            .get_or_init(|| {
                compile(&self.spec.parameters)
                    .map_err(|e| format!("tool `{}`: {e}", self.spec.name))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Parses call arguments: one JSON object (an empty string counts as
    /// `{}`, as models often send for a tool without arguments). The error
    /// tells the model how to call correctly.
    pub(crate) fn parse_args(&self, args: &str) -> Result<Value, ToolError> {
        let name = &self.spec.name;
        let trimmed = args.trim();
        let value: Value = if trimmed.is_empty() {
            Value::Object(Default::default())
        } else {
            serde_json::from_str(trimmed).map_err(|e| {
                ToolError::new(
                    ErrorKind::InvalidArgs,
                    format!(
                        "arguments for `{name}` are not valid JSON ({e}). Send one JSON object: {}",
                        self.usage()
                    ),
                )
            })?
        };
        if !value.is_object() {
            return Err(ToolError::new(
                ErrorKind::InvalidArgs,
                format!(
                    "arguments for `{name}` must be a JSON object, not {}. Expected: {}",
                    warden_policy::json_kind(&value),
                    self.usage()
                ),
            ));
        }
        Ok(value)
    }

    /// Validates parsed arguments against the schema; the error tells the
    /// model how to call correctly.
    pub(crate) fn check_args(&self, value: &Value) -> Result<(), ToolError> {
        let validator = self
            .validator()
            .map_err(|e| ToolError::new(ErrorKind::Crashed, e))?;
        // The fast check first; the errors are worked out only when needed.
        if validator.is_valid(value) {
            return Ok(());
        }
        let name = &self.spec.name;
        let problems: Vec<String> = validator
            .iter_errors(value)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("at `{at}`: {e}")
                }
            })
            .collect();
        Err(ToolError::new(
            ErrorKind::InvalidArgs,
            format!(
                "arguments for `{name}` do not match its schema: {}. Expected: {}",
                problems.join("; "),
                self.usage()
            ),
        ))
    }

    /// A one-line description of the arguments, e.g.
    /// `{path: string (required), offset?: integer}`.
    pub(crate) fn usage(&self) -> String {
        let props = self
            .spec
            .parameters
            .get("properties")
            .and_then(Value::as_object);
        let required: Vec<&str> = self
            .spec
            .parameters
            .get("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(props) = props else {
            return "a JSON object".into();
        };
        let fields: Vec<String> = props
            .iter()
            .map(|(k, v)| {
                let ty = v.get("type").map_or_else(
                    || "any".to_string(),
                    |t| match t {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    },
                );
                let opt = if required.contains(&k.as_str()) {
                    ""
                } else {
                    "?"
                };
                format!("{k}{opt}: {ty}")
            })
            .collect();
        format!("{{{}}}", fields.join(", "))
    }
}

#[cfg(test)]
mod tests;

//! Write a [warden](https://github.com/) tool component in Rust.
//!
//! A tool is an argument struct and a function. The struct derives
//! `serde::Deserialize` (the parser) and [`JsonSchema`] (the schema the
//! model sees and the host validates against), so the two cannot disagree.
//! Its doc comment is the tool's description; each field's doc comment is
//! that argument's description.
//!
//! ```ignore
//! use warden_tool::{Error, JsonSchema, Tool};
//!
//! /// Return the given text converted to upper case.
//! #[derive(serde::Deserialize, JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct Uppercase {
//!     /// The text to uppercase.
//!     text: String,
//! }
//!
//! impl Tool for Uppercase {
//!     const NAME: &str = "uppercase";
//!     fn run(self) -> Result<String, Error> {
//!         Ok(self.text.to_uppercase())
//!     }
//! }
//!
//! warden_tool::export!(Uppercase);
//! ```
//!
//! Build with `cargo build --release --target wasm32-wasip2` in a crate of
//! type `cdylib`; the result is a WASI 0.2 component implementing the
//! `warden:tool/component` world of the embedded `wit/tool.wit`.

use std::fmt;

pub mod desktop;
pub mod effect;

pub use schemars::{self, JsonSchema};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The WIT bindings of the `warden:tool/component` world (`wit/tool.wit`,
/// shipped with this crate). [`export!`] uses them; tools rarely need to.
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "warden:tool/component",
        pub_export_macro: true,
        default_bindings_module: "warden_tool::bindings",
    });
}

use bindings::exports::warden::tool::tool as wit;

/// Why a call failed: the WIT `error` variant. Every message is shown to the
/// model as it is, so say what was wrong and how to call correctly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Arguments that passed the schema but are still wrong (an offset past
    /// the end of a file, two options that exclude each other).
    InvalidArgs(String),
    /// A file or other object named in the call does not exist.
    NotFound(String),
    /// The sandbox refused (no grant, a read-only grant).
    Denied(String),
    /// Anything else that went wrong.
    Failed(String),
}

impl Error {
    /// [`Error::InvalidArgs`].
    pub fn invalid_args(msg: impl Into<String>) -> Error {
        Error::InvalidArgs(msg.into())
    }
    /// [`Error::NotFound`].
    pub fn not_found(msg: impl Into<String>) -> Error {
        Error::NotFound(msg.into())
    }
    /// [`Error::Denied`].
    pub fn denied(msg: impl Into<String>) -> Error {
        Error::Denied(msg.into())
    }
    /// [`Error::Failed`].
    pub fn failed(msg: impl Into<String>) -> Error {
        Error::Failed(msg.into())
    }
    /// The message, whatever the kind.
    pub fn message(&self) -> &str {
        match self {
            Error::InvalidArgs(m) | Error::NotFound(m) | Error::Denied(m) | Error::Failed(m) => m,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Error {}

/// An io error becomes not-found, denied or failed by its kind, with the
/// error's text as the message. Tools that know the path should say it
/// (`Error::not_found(format!("no such file: {path}"))`).
impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        use std::io::ErrorKind as K;
        match e.kind() {
            K::NotFound => Error::NotFound(e.to_string()),
            K::PermissionDenied | K::ReadOnlyFilesystem => Error::Denied(e.to_string()),
            _ => Error::Failed(e.to_string()),
        }
    }
}

impl From<Error> for wit::Error {
    fn from(e: Error) -> wit::Error {
        match e {
            Error::InvalidArgs(m) => wit::Error::InvalidArgs(m),
            Error::NotFound(m) => wit::Error::NotFound(m),
            Error::Denied(m) => wit::Error::Denied(m),
            Error::Failed(m) => wit::Error::Failed(m),
        }
    }
}

/// One tool: its argument struct implements this trait. The struct's doc
/// comment is the description the model reads.
pub trait Tool: DeserializeOwned + JsonSchema {
    /// The name the model calls, in snake_case (`[a-z][a-z0-9_]*`).
    const NAME: &'static str;
    /// Other names the model may use for it (snake_case too).
    const ALIASES: &'static [&'static str] = &[];
    /// True when a call can change state (write, delete, send).
    const MUTATES: bool = false;
    /// True when a call touches no files at all. Otherwise, a tool whose
    /// fields declare no [`effect`] has its effects "unknown" to the user.
    const NO_FILES: bool = false;
    /// Runs the tool; the result is the text the model reads.
    fn run(self) -> Result<String, Error>;
}

/// A tool with its types erased, as [`export!`] lists them.
#[derive(Clone, Copy)]
pub struct Entry {
    /// The name the model calls.
    pub name: &'static str,
    /// Other names the model may use.
    pub aliases: &'static [&'static str],
    /// True when a call can change state.
    pub mutates: bool,
    /// True when a call touches no files.
    pub no_files: bool,
    describe: fn() -> Described,
    run: fn(&str) -> Result<String, Error>,
}

/// A tool's description, argument schema and effects, derived from its
/// struct.
#[derive(Debug, Clone)]
pub struct Described {
    /// The struct's doc comment.
    pub description: String,
    /// The JSON Schema (draft 2020-12) of the argument object, as text.
    pub schema: String,
    /// What a call does to the files its fields name ([`effect`]), in
    /// field order.
    pub effects: Vec<wit::Effect>,
}

impl Entry {
    /// The entry of tool `T`.
    pub const fn of<T: Tool>() -> Entry {
        Entry {
            name: T::NAME,
            aliases: T::ALIASES,
            mutates: T::MUTATES,
            no_files: T::NO_FILES,
            describe: describe::<T>,
            run: run::<T>,
        }
    }

    /// The description and schema, derived from the struct.
    pub fn describe(&self) -> Described {
        (self.describe)()
    }

    /// Parses `args` and runs the tool.
    pub fn call(&self, args: &str) -> Result<String, Error> {
        (self.run)(args)
    }

    /// The WIT spec the host reads.
    pub fn spec(&self) -> wit::Spec {
        let Described {
            description,
            schema,
            effects,
        } = self.describe();
        // Declared, or declared as none: otherwise not known.
        let effects = (!effects.is_empty() || self.no_files).then_some(effects);
        wit::Spec {
            name: self.name.into(),
            description,
            parameters: schema,
            aliases: self.aliases.iter().map(|a| a.to_string()).collect(),
            mutates: self.mutates,
            effects,
        }
    }
}

/// Parses the arguments of `T` and runs it. The host has validated them
/// against the schema already, so a failure here means the schema and the
/// parser disagree (a custom `Deserialize`); it is reported as invalid
/// arguments all the same.
fn run<T: Tool>(args: &str) -> Result<String, Error> {
    let args: T = serde_json::from_str(args)
        .map_err(|e| Error::InvalidArgs(format!("invalid arguments for {}: {e}", T::NAME)))?;
    args.run()
}

/// The description, argument schema and effects of `T`. A wrong effect
/// declaration is the tool's bug: it panics, naming it (a unit test that
/// calls [`Entry::describe`] finds it before the host does).
fn describe<T: Tool>() -> Described {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            // No `$schema` (the host knows the dialect) and no `$defs`: a
            // model reads a self-contained schema best.
            s.meta_schema = None;
            s.inline_subschemas = true;
        })
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    let mut description = String::new();
    if let Some(map) = schema.as_object_mut() {
        map.remove("title");
        if let Some(Value::String(d)) = map.remove("description") {
            description = d;
        }
    }
    let effects = effect::take(&mut schema)
        .and_then(|effects| check_effects(&schema, effects))
        .unwrap_or_else(|e| panic!("tool {}: wrong effect declaration: {e}", T::NAME));
    tidy(&mut schema);
    Described {
        description,
        schema: serde_json::to_string_pretty(&schema).expect("a JSON value serializes"),
        effects,
    }
}

/// `effects`, if every argument they name is a property of `schema`.
fn check_effects(schema: &Value, effects: Vec<wit::Effect>) -> Result<Vec<wit::Effect>, String> {
    let props = schema.get("properties").and_then(Value::as_object);
    let has = |name: &str| props.is_some_and(|p| p.contains_key(name));
    for e in &effects {
        let named: Vec<&str> = match &e.access {
            wit::Access::Write(wit::Content::Whole(arg)) => vec![arg],
            wit::Access::Write(wit::Content::Replace(r)) => [&r.old, &r.new]
                .into_iter()
                .chain(&r.all)
                .map(String::as_str)
                .collect(),
            wit::Access::Delete(flag) | wit::Access::CopyTo(flag) | wit::Access::MoveTo(flag) => {
                flag.iter().map(String::as_str).collect()
            }
            _ => Vec::new(),
        };
        if let Some(missing) = named.into_iter().find(|n| !has(n)) {
            return Err(format!(
                "`{}` names argument `{missing}`, which the struct does not have",
                e.argument
            ));
        }
    }
    Ok(effects)
}

/// Removes what a model does not need and some validators do not know:
/// `format` annotations of numbers (`uint`, `int64`) and `default`s;
/// and `null` as a value of an `Option` field: an optional argument is left
/// out, not sent as null (stricter than the parser, never looser).
fn tidy(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".into(), only);
                }
            }
            if let Some(Value::Array(any)) = map.get_mut("anyOf") {
                any.retain(|s| s.get("type").is_none_or(|t| t != "null"));
                if any.len() == 1
                    && let Some(Value::Object(only)) = any.pop()
                {
                    map.remove("anyOf");
                    for (k, v) in only {
                        map.entry(k).or_insert(v);
                    }
                }
            }
            let numeric = matches!(map.get("type"), Some(Value::String(t)) if t == "integer" || t == "number");
            if numeric {
                map.remove("format");
            }
            // Defaults cost prompt tokens on every request; say them in the
            // field's doc comment ("(default 2)") where they matter.
            map.remove("default");
            for (key, value) in map.iter_mut() {
                // Property names are data, not keywords.
                if key == "properties" {
                    if let Value::Object(props) = value {
                        props.values_mut().for_each(tidy);
                    }
                } else {
                    tidy(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// Runs tool `name` (or one of its aliases) of `tools` on `args`.
pub fn dispatch(tools: &[Entry], name: &str, args: &str) -> Result<String, Error> {
    let tool = tools
        .iter()
        .find(|t| t.name == name || t.aliases.contains(&name))
        .ok_or_else(|| {
            let names: Vec<&str> = tools.iter().map(|t| t.name).collect();
            Error::NotFound(format!(
                "unknown tool {name:?}; this component offers: {}",
                names.join(", ")
            ))
        })?;
    tool.call(args)
}

/// The `describe` export of a component offering `tools`.
#[doc(hidden)]
pub fn describe_all(tools: &[Entry]) -> Vec<wit::Spec> {
    tools.iter().map(Entry::spec).collect()
}

/// The `call` export of a component offering `tools`.
#[doc(hidden)]
pub fn call_export(tools: &[Entry], name: &str, args: &str) -> Result<String, wit::Error> {
    dispatch(tools, name, args).map_err(Into::into)
}

/// Exports the tools of a component, in the order `describe` lists them:
/// `warden_tool::export!(Uppercase, Reverse);` with argument structs that
/// implement [`Tool`], or `warden_tool::export!(tools = LIST);` with a
/// `&[Entry]`.
#[macro_export]
macro_rules! export {
    (tools = $list:expr) => {
        struct __WardenComponent;
        impl $crate::bindings::exports::warden::tool::tool::Guest for __WardenComponent {
            fn describe() -> ::std::vec::Vec<$crate::bindings::exports::warden::tool::tool::Spec> {
                $crate::describe_all($list)
            }
            fn call(
                name: ::std::string::String,
                args: ::std::string::String,
            ) -> ::std::result::Result<
                ::std::string::String,
                $crate::bindings::exports::warden::tool::tool::Error,
            > {
                $crate::call_export($list, &name, &args)
            }
        }
        $crate::bindings::export!(__WardenComponent with_types_in $crate::bindings);
    };
    ($($tool:ty),+ $(,)?) => {
        $crate::export!(tools = &[$($crate::Entry::of::<$tool>()),+]);
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reverse the words of a sentence.
    ///
    /// Words are split on whitespace.
    #[derive(serde::Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Reverse {
        /// The sentence.
        #[schemars(length(min = 1))]
        text: String,
        /// How many times (default 1).
        #[serde(default)]
        #[schemars(range(min = 1, max = 10))]
        times: Option<u32>,
        /// Keep the case.
        #[serde(default)]
        keep_case: bool,
    }

    impl Tool for Reverse {
        const NAME: &str = "reverse";
        const ALIASES: &[&str] = &["rev"];
        fn run(self) -> Result<String, Error> {
            if self.text == "boom" {
                return Err(Error::failed("it went boom"));
            }
            Ok(self
                .text
                .split_whitespace()
                .rev()
                .collect::<Vec<_>>()
                .join(" "))
        }
    }

    const TOOLS: &[Entry] = &[Entry::of::<Reverse>()];

    #[test]
    fn description_and_schema_come_from_the_struct() {
        let d = TOOLS[0].describe();
        assert_eq!(
            d.description,
            "Reverse the words of a sentence.\n\nWords are split on whitespace."
        );
        let schema: Value = serde_json::from_str(&d.schema).unwrap();
        assert_eq!(
            schema,
            serde_json::json!({
                "type": "object",
                "properties": {
                    "text": {"description": "The sentence.", "type": "string", "minLength": 1},
                    "times": {
                        "description": "How many times (default 1).",
                        "type": "integer", "minimum": 1, "maximum": 10
                    },
                    "keep_case": {"description": "Keep the case.", "type": "boolean"}
                },
                "additionalProperties": false,
                "required": ["text"]
            })
        );
        // Declared order is kept: the model reads the arguments in order.
        let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["text", "times", "keep_case"]);
    }

    #[test]
    fn dispatch_parses_runs_and_types_errors() {
        assert_eq!(
            dispatch(TOOLS, "rev", r#"{"text":"a b c"}"#).unwrap(),
            "c b a"
        );
        let err = dispatch(TOOLS, "reverse", r#"{"text":"a","bogus":1}"#).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgs(m) if m.starts_with("invalid arguments for reverse: unknown field `bogus`")),
            "{err:?}"
        );
        assert_eq!(
            dispatch(TOOLS, "reverse", r#"{"text":"boom"}"#),
            Err(Error::Failed("it went boom".into()))
        );
        assert_eq!(
            dispatch(TOOLS, "nope", "{}"),
            Err(Error::NotFound(
                "unknown tool \"nope\"; this component offers: reverse".into()
            ))
        );
        let wit_err: wit::Error = Error::denied("no").into();
        assert!(matches!(wit_err, wit::Error::Denied(m) if m == "no"));
    }

    #[test]
    fn io_errors_map_by_kind() {
        use std::io::{Error as Io, ErrorKind as K};
        assert!(matches!(
            Error::from(Io::from(K::NotFound)),
            Error::NotFound(_)
        ));
        assert!(matches!(
            Error::from(Io::from(K::PermissionDenied)),
            Error::Denied(_)
        ));
        assert!(matches!(Error::from(Io::other("x")), Error::Failed(m) if m == "x"));
    }

    /// Copy a file.
    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct CopyNote {
        /// From.
        #[schemars(extend("x-warden-effect" = effect::copy_from()))]
        from: String,
        /// To.
        #[schemars(extend("x-warden-effect" = effect::copy_to().flag("overwrite").follow()))]
        to: String,
        /// Replace what is there.
        #[serde(default)]
        overwrite: bool,
    }

    impl Tool for CopyNote {
        const NAME: &str = "copy_note";
        fn run(self) -> Result<String, Error> {
            Ok(String::new())
        }
    }

    #[test]
    fn effects_come_from_the_fields_and_leave_the_schema() {
        let d = Entry::of::<CopyNote>().describe();
        assert!(!d.schema.contains(effect::KEYWORD), "{}", d.schema);
        let effects: Vec<(String, String, bool)> = d
            .effects
            .iter()
            .map(|e| (e.argument.clone(), format!("{:?}", e.access), e.follow))
            .collect();
        assert_eq!(
            effects,
            [
                ("from".into(), "Access::CopyFrom".into(), false),
                (
                    "to".into(),
                    "Access::CopyTo(Some(\"overwrite\"))".into(),
                    true
                ),
            ]
        );
        // Declared: some; no declaration and not NO_FILES: unknown.
        assert!(Entry::of::<CopyNote>().spec().effects.is_some());
        assert!(TOOLS[0].spec().effects.is_none());
    }

    /// Write a file.
    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Misnamed {
        /// Path.
        #[schemars(extend("x-warden-effect" = effect::write().whole("contents")))]
        path: String,
        /// Content.
        content: String,
    }

    impl Tool for Misnamed {
        const NAME: &str = "misnamed";
        fn run(self) -> Result<String, Error> {
            Ok(String::new())
        }
    }

    #[test]
    #[should_panic(expected = "`path` names argument `contents`, which the struct does not have")]
    fn a_wrong_declaration_is_named() {
        Entry::of::<Misnamed>().describe();
    }
}

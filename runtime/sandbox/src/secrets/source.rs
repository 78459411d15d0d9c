//! Where a secret's value comes from: an entry of the user's secrets file,
//! which holds the value or names the user's environment variable to read
//! it from. A workspace only names the entry; the user's files decide which
//! value it is, and never the model's API key.

use warden_policy::{Capability, Grants, USER_CONFIG, UserConfig};
use warden_scrub::MIN_LEN;
use warden_state::StateDir;

use super::SECRETS_FILE;

/// The user's files, read once per tool.
pub(super) struct Sources<'a> {
    config: Option<&'a StateDir>,
    file: Option<Result<toml::Table, String>>,
    /// The variables the model's API key may be in.
    key_vars: Vec<String>,
    env: &'a dyn Fn(&str) -> Option<String>,
}

impl<'a> Sources<'a> {
    /// `env` reads the process environment (a parameter so tests need not
    /// change it).
    pub(super) fn new(
        config: Option<&'a StateDir>,
        env: &'a dyn Fn(&str) -> Option<String>,
    ) -> Sources<'a> {
        let user: UserConfig = config
            .and_then(|d| d.read(USER_CONFIG).ok().flatten())
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|t| toml::from_str(&t).ok())
            .unwrap_or_default();
        let mut key_vars = vec![warden_policy::DEFAULT_KEY_ENV.to_string()];
        if user.api_key_env() != warden_policy::DEFAULT_KEY_ENV {
            key_vars.push(user.api_key_env().to_string());
        }
        Sources {
            config,
            file: None,
            key_vars,
            env,
        }
    }

    /// The value of secret `name` from `source` (`file KEY`) for a tool
    /// with `grants`. `Ok(Err(why))`: no usable value, the requests go
    /// without it and say why; `Err`: the tool must not be bound at all.
    pub(super) fn value(
        &mut self,
        name: &str,
        source: &str,
        grants: &Grants,
    ) -> Result<Result<String, String>, String> {
        let Some(("file", key)) = source.split_once(' ') else {
            return Err(format!(
                "secret `{name}` has an unknown source `{source}`: name an entry of your \
                 {SECRETS_FILE} with `file = \"key\"`"
            ));
        };
        let table = match self.file.get_or_insert_with(|| read_file(self.config)) {
            Err(why) => return Ok(Err(why.clone())),
            Ok(table) => table,
        };
        let value = match table.get(key) {
            Some(toml::Value::String(v)) => v.clone(),
            Some(toml::Value::Table(t))
                if t.len() == 1 && t.get("env").is_some_and(|v| v.is_str()) =>
            {
                let var = t["env"].as_str().unwrap_or_default();
                if self.key_vars.iter().any(|k| k == var) {
                    return Ok(Err(format!(
                        "`{key}` in the user's {SECRETS_FILE} reads ${var}, the model's API key, \
                         which is never a tool's secret; the user names another variable"
                    )));
                }
                let passed = grants
                    .caps
                    .iter()
                    .any(|c| matches!(c, Capability::Env { name, value: None } if name == var));
                if passed {
                    return Err(format!(
                        "secret `{name}` reads ${var}, which the tool is also granted as `env`: \
                         it would read the value itself; remove `{var}` from its `env`"
                    ));
                }
                match (self.env)(var) {
                    Some(v) => v,
                    None => {
                        return Ok(Err(format!(
                            "it comes from ${var} (`{key}` in the user's {SECRETS_FILE}), which \
                             is not set; the user sets it before starting warden"
                        )));
                    }
                }
            }
            _ => {
                return Ok(Err(format!(
                    "it comes from `{key}` in the user's {SECRETS_FILE}, which has no such \
                     entry; the user adds `{key} = \"...\"` (the value) or \
                     `{key} = {{ env = \"VAR\" }}` (read from the environment) to it"
                )));
            }
        };
        if value.len() < MIN_LEN || value.chars().any(|c| c.is_control()) {
            return Ok(Err(format!(
                "its value must be one line of at least {MIN_LEN} bytes"
            )));
        }
        // The model's key copied into the file is still the model's key.
        if self
            .key_vars
            .iter()
            .any(|k| (self.env)(k).is_some_and(|v| v.trim() == value.trim()))
        {
            return Ok(Err(format!(
                "`{key}` in the user's {SECRETS_FILE} holds the model's API key, which is \
                 never a tool's secret"
            )));
        }
        Ok(Ok(value))
    }
}

fn read_file(config: Option<&StateDir>) -> Result<toml::Table, String> {
    let Some(dir) = config else {
        return Err(format!(
            "there is no per-user config folder to read {SECRETS_FILE} from"
        ));
    };
    let shown = dir.path().join(SECRETS_FILE);
    let bytes = dir
        .read(SECRETS_FILE)
        .map_err(|e| format!("cannot read {}: {e}", shown.display()))?
        .ok_or_else(|| {
            format!(
                "{} does not exist: create it with `key = \"value\"` lines",
                shown.display()
            )
        })?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8", shown.display()))?;
    text.parse::<toml::Table>()
        .map_err(|e| format!("{} is not valid TOML: {}", shown.display(), e.message()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(secrets: &str, config: &str) -> (tempfile::TempDir, StateDir) {
        let t = tempfile::tempdir().unwrap();
        let d = StateDir::open(t.path(), "warden").unwrap();
        std::fs::write(d.path().join(SECRETS_FILE), secrets).unwrap();
        std::fs::write(d.path().join(USER_CONFIG), config).unwrap();
        (t, d)
    }

    fn env(name: &str) -> Option<String> {
        match name {
            "OPENAI_API_KEY" => Some("sk-model-0123456789".into()),
            "MY_LLM_KEY" => Some("llm-key-0123456789".into()),
            "BRAVE_KEY" => Some("brave-0123456789".into()),
            _ => None,
        }
    }

    fn value(
        secrets: &str,
        config: &str,
        grants: &Grants,
    ) -> Result<Result<String, String>, String> {
        let (_t, d) = dir(secrets, config);
        Sources::new(Some(&d), &env).value("s", "file k", grants)
    }

    #[test]
    fn an_entry_holds_the_value_or_names_the_users_variable() {
        let g = Grants::default();
        assert_eq!(
            value("k = \"v4lue-0123\"\n", "", &g),
            Ok(Ok("v4lue-0123".into()))
        );
        assert_eq!(
            value("k = { env = \"BRAVE_KEY\" }\n", "", &g),
            Ok(Ok("brave-0123456789".into()))
        );
        let why = value("k = { env = \"UNSET_VAR\" }\n", "", &g)
            .unwrap()
            .unwrap_err();
        assert!(
            why.contains("$UNSET_VAR (`k` in the user's secrets.toml), which is not set"),
            "{why}"
        );
        let why = value("other = \"v4lue-0123\"\n", "", &g)
            .unwrap()
            .unwrap_err();
        assert!(why.contains("`k = { env = \"VAR\" }`"), "{why}");
    }

    #[test]
    fn the_model_key_is_never_a_secret() {
        let g = Grants::default();
        for (secrets, config) in [
            ("k = { env = \"OPENAI_API_KEY\" }\n", ""),
            (
                "k = { env = \"MY_LLM_KEY\" }\n",
                "[model]\napi_key_env = \"MY_LLM_KEY\"\n",
            ),
        ] {
            let why = value(secrets, config, &g).unwrap().unwrap_err();
            assert!(
                why.contains("the model's API key, which is never a tool's secret"),
                "{why}"
            );
        }
        // Copied into the file by value.
        let why = value("k = \"sk-model-0123456789\"\n", "", &g)
            .unwrap()
            .unwrap_err();
        assert!(why.contains("holds the model's API key"), "{why}");
        let why = value(
            "k = \"llm-key-0123456789\"\n",
            "[model]\napi_key_env = \"MY_LLM_KEY\"\n",
            &g,
        )
        .unwrap()
        .unwrap_err();
        assert!(why.contains("holds the model's API key"), "{why}");
    }

    #[test]
    fn a_tool_granted_the_variable_itself_is_not_bound() {
        let g = Grants {
            caps: vec![Capability::Env {
                name: "BRAVE_KEY".into(),
                value: None,
            }],
            ..Grants::default()
        };
        let e = value("k = { env = \"BRAVE_KEY\" }\n", "", &g).unwrap_err();
        assert!(
            e.contains(
                "reads $BRAVE_KEY, which the tool is also granted as `env`: it would read \
                        the value itself; remove `BRAVE_KEY` from its `env`"
            ),
            "{e}"
        );
        // A value the policy sets is not the user's: no clash.
        let g = Grants {
            caps: vec![Capability::Env {
                name: "BRAVE_KEY".into(),
                value: Some("x".into()),
            }],
            ..Grants::default()
        };
        assert!(
            value("k = { env = \"BRAVE_KEY\" }\n", "", &g)
                .unwrap()
                .is_ok()
        );
    }
}

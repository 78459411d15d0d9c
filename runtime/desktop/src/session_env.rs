//! The desktop session warden runs in: whether there is a display, and
//! the environment an app started there gets.

/// Variables of the desktop session an app needs (the display, the
/// session bus, the user's folders and language), passed from warden's
/// environment; nothing else of it (never an API key or a secret).
const SESSION_VARS: &[&str] = &[
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "DBUS_SESSION_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
    "XDG_SESSION_TYPE",
    "XDG_SESSION_DESKTOP",
    "XDG_CURRENT_DESKTOP",
    "DESKTOP_SESSION",
    "XDG_DATA_HOME",
    "XDG_DATA_DIRS",
    "XDG_CONFIG_HOME",
    "XDG_CONFIG_DIRS",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "PATH",
    "LANG",
    "LANGUAGE",
    "TZ",
];

/// The display apps appear on, in words (`X11 display :0`, `Wayland
/// display wayland-0`), or a message saying there is none and what that
/// means.
pub fn display() -> Result<String, String> {
    if cfg!(target_os = "macos") {
        return Ok("the macOS desktop".into());
    }
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (var("WAYLAND_DISPLAY"), var("DISPLAY")) {
        (Some(w), _) => Ok(format!("Wayland display {w}")),
        (None, Some(x)) => Ok(format!("X11 display {x}")),
        (None, None) => Err(NO_DISPLAY.to_string()),
    }
}

/// Said when there is no graphical session.
pub const NO_DISPLAY: &str = "there is no graphical session here: neither DISPLAY nor \
     WAYLAND_DISPLAY is set (warden runs outside a desktop, e.g. over ssh or in CI), so no app \
     or browser window can be opened; work with the files directly, or ask the user to run \
     warden in their desktop session";

/// The environment of an app started in the session: [`SESSION_VARS`]
/// and `LC_*` from warden's own.
pub fn session_env() -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(k, _)| SESSION_VARS.contains(&k.as_str()) || k.starts_with("LC_"))
        .collect()
}

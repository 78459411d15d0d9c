//! `warden completions SHELL` and `warden man`: made from the clap
//! definitions the parser uses, so they never list a flag warden lacks.

use std::path::Path;

use anyhow::Context;
use clap::CommandFactory;

use crate::args::Cli;

/// The binary's name, as shells complete it and pages are titled.
const NAME: &str = "warden";

/// Prints the completion script of `shell`.
pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<u8> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, NAME, &mut script);
    stdout_text!("{}", String::from_utf8_lossy(&script));
    Ok(0)
}

/// Prints warden.1, or writes it with a page per command into `dir`.
pub fn man(dir: Option<&Path>) -> anyhow::Result<u8> {
    let cmd = Cli::command();
    let Some(dir) = dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut page)?;
        stdout_text!("{}", String::from_utf8_lossy(&page));
        return Ok(0);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    clap_mangen::generate_to(cmd, dir)
        .with_context(|| format!("cannot write the manual pages into {}", dir.display()))?;
    stdout_line!(
        "wrote {} (read it with `man -l {}`)",
        dir.display(),
        dir.join("warden.1").display()
    );
    Ok(0)
}

//! Landlock for a run: the system directories read-only, what programs
//! need of `/etc` and no more, the devices every run uses, the run's own
//! `/proc`, and the grants as granted. No mounts once applied.

use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use ::landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, LandlockStatus, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::process::Grant;

/// The Landlock ABI whose rights are asked for; older kernels enforce
/// what they know (at least ABI 1: files), newer ones are not needed.
pub(super) const LANDLOCK_ABI: ABI = ABI::V6;

/// System directories every run may read and execute from.
pub const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// What programs need from `/etc` (the loader cache, user and host names,
/// certificates, time zone, alternatives), and nothing else of it:
/// certificates by their certificate paths, never a private key
/// (`/etc/ssl/private`, `/etc/pki/tls/private`; `/usr/lib/ssl/private`
/// is a link to the former, and Landlock checks where a link leads).
pub(super) const ETC: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/pki/tls/certs",
    "/etc/pki/tls/cert.pem",
    "/etc/pki/tls/openssl.cnf",
    "/etc/pki/ca-trust/extracted",
    "/etc/pki/ca-trust/source",
    "/etc/alternatives",
    "/etc/mime.types",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/gitconfig",
    "/etc/inputrc",
];

/// Devices every run may read and write.
pub(super) const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Restricts the process (and everything it starts) with Landlock;
/// `proc`: the run's own procfs is mounted on `/proc`, readable;
/// `network`: the host network is granted (else no TCP connect or bind,
/// where the kernel's ABI checks them). Returns the ABI the kernel
/// enforces.
pub(super) fn landlock(
    grants: &[Grant],
    programs: &[OwnedFd],
    proc: bool,
    network: bool,
) -> Result<i32, String> {
    let abi = LANDLOCK_ABI;
    let unavailable = |e: &dyn std::fmt::Display| format!("unavailable Landlock: {e}");
    let mut rules = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(|e| unavailable(&e))?
        .scope(Scope::from_all(abi))
        .map_err(|e| unavailable(&e))?;
    if !network {
        rules = rules
            .handle_access(AccessNet::from_all(abi))
            .map_err(|e| unavailable(&e))?;
    }
    let mut rules = rules.create().map_err(|e| unavailable(&e))?;
    let read = AccessFs::from_read(abi);
    let file_read = read & AccessFs::from_file(abi);
    let device =
        (AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate) & AccessFs::from_file(abi);
    let mut system: Vec<(&Path, bool)> = SYSTEM_DIRS
        .iter()
        .chain(ETC)
        .map(|p| (Path::new(*p), false))
        .collect();
    let python_etc = python_etc();
    system.extend(python_etc.iter().map(|p| (p.as_path(), false)));
    system.extend(DEVICES.iter().map(|p| (Path::new(*p), true)));
    if proc {
        system.push((Path::new("/proc"), false));
    }
    for (path, device_rw) in system {
        // What this system lacks is simply not there.
        let Ok(fd) = PathFd::new(path) else { continue };
        let access = match (device_rw, path.is_dir()) {
            (true, _) => device,
            (false, true) => read,
            (false, false) => file_read,
        };
        rules = rules
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| unavailable(&e))?;
    }
    for fd in programs {
        rules = rules
            .add_rule(PathBeneath::new(fd, file_read))
            .map_err(|e| unavailable(&e))?;
    }
    for g in grants {
        let access = if g.write {
            AccessFs::from_all(abi)
        } else {
            read
        };
        rules = rules
            .add_rule(PathBeneath::new(&g.fd, access))
            .map_err(|e| unavailable(&e))?;
    }
    let status = rules.restrict_self().map_err(|e| unavailable(&e))?;
    match (status.ruleset, status.landlock) {
        (RulesetStatus::NotEnforced, LandlockStatus::NotEnabled) => {
            Err("unavailable Landlock is built into this kernel but not enabled (add `landlock` to the `lsm=` boot parameter)".to_string())
        }
        (RulesetStatus::NotEnforced, _) => Err(
            "unavailable Landlock is not supported by this kernel (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK)"
                .to_string(),
        ),
        (_, LandlockStatus::Available { effective_abi, kernel_abi }) => {
            Ok(kernel_abi.unwrap_or(effective_abi as i32))
        }
        // Enforced, by an ABI the crate cannot name: the lowest.
        (_, _) => Ok(1),
    }
}

/// `/etc/python3*`, where Debian keeps `sitecustomize.py`.
pub(super) fn python_etc() -> Vec<std::path::PathBuf> {
    let Ok(dir) = std::fs::read_dir("/etc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| e.file_name().as_bytes().starts_with(b"python"))
        .map(|e| e.path())
        .collect()
}

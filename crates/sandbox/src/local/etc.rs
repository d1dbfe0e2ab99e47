//! The sandbox's `/etc`: a few files we write (users, hosts, name service) and an allow-list of the host's
//! files programs need. Nothing else of the host's `/etc` is visible: no `shadow`, no `ssl/private`, no
//! `pip.conf` or `npmrc` with index credentials.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::SandboxError;

/// The user commands run as inside (mapped to the server's own user outside): not root, so tools that
/// refuse root (`initdb`) or warn about it (`pip`) behave, and `/workspace` is its home.
pub(super) const SANDBOX_UID: u32 = 1000;
pub(super) const SANDBOX_GID: u32 = 1000;
pub(super) const SANDBOX_HOSTNAME: &str = "sandbox";

/// The directory under the provider's root holding the files we write. It starts with `.`, which no raw id
/// does, so no sandbox can be named after it.
const GENERATED_DIR: &str = ".etc";

/// Host files programs need to run, shown read-only when they exist: the dynamic loader's cache, the
/// alternatives links, CA certificates and OpenSSL's configuration, time zone, protocol and service names,
/// the distribution's identity, and the Python and Java configuration Debian keeps in `/etc`. Each is a
/// mount of its own (about 0.1 ms per command), so the list stays at what programs fail without.
const HOST_FILES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/alternatives",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/localtime",
    "/etc/protocols",
    "/etc/services",
    "/etc/os-release",
    "/etc/python3",
];

/// Prefixes of host directories in `/etc` shown as well, one per installed version (`python3.11`,
/// `java-17-openjdk`).
const HOST_DIR_PREFIXES: &[&str] = &["python3.", "java-"];

/// Only with the network switched on: how to resolve names.
const NETWORK_FILES: &[&str] = &["/etc/resolv.conf", "/etc/gai.conf", "/etc/host.conf"];

/// A file mounted into the sandbox: where it is on the host, where commands see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct EtcMount {
    pub host: PathBuf,
    pub sandbox: String,
}

/// Writes the generated files under `root` and lists every `/etc` mount for a sandbox.
pub(super) fn prepare_etc(root: &Path, network: bool) -> Result<Vec<EtcMount>, SandboxError> {
    let directory = root.join(GENERATED_DIR);
    fs::create_dir_all(&directory).map_err(|error| io_failure(&directory, &error))?;
    let generated = [
        ("passwd", passwd()),
        ("group", group()),
        ("hosts", hosts()),
        ("nsswitch.conf", NSSWITCH.to_owned()),
    ];
    let mut mounts = Vec::new();
    for (name, content) in generated {
        let path = directory.join(name);
        write_atomically(&path, content.as_bytes())?;
        mounts.push(EtcMount {
            host: path,
            sandbox: format!("/etc/{name}"),
        });
    }
    let host_files = HOST_FILES
        .iter()
        .chain(if network { NETWORK_FILES } else { &[] })
        .map(|path| PathBuf::from(*path))
        .chain(versioned_host_dirs());
    for host in host_files {
        // `metadata` follows symlinks (`/etc/os-release` is one), as the bind mount will.
        if fs::metadata(&host).is_ok()
            && let Some(sandbox) = host.to_str().map(str::to_owned)
        {
            mounts.push(EtcMount { host, sandbox });
        }
    }
    Ok(mounts)
}

fn versioned_host_dirs() -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir("/etc") else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|name| HOST_DIR_PREFIXES.iter().any(|prefix| name.starts_with(prefix)))
        })
        .map(|entry| entry.path())
        .collect();
    dirs.sort();
    dirs
}

fn passwd() -> String {
    format!(
        "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n\
         sandbox:x:{SANDBOX_UID}:{SANDBOX_GID}:TrueForge sandbox:/workspace:/bin/bash\n\
         nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    )
}

fn group() -> String {
    format!("root:x:0:\nsandbox:x:{SANDBOX_GID}:\nnogroup:x:65534:\n")
}

fn hosts() -> String {
    format!("127.0.0.1\tlocalhost\n127.0.1.1\t{SANDBOX_HOSTNAME}\n::1\tlocalhost ip6-localhost ip6-loopback\n")
}

/// Files and DNS only: the host's configuration may name NSS modules (systemd, LDAP) the sandbox cannot reach.
const NSSWITCH: &str = "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\n\
                        protocols: files\nservices: files\n";

/// Replaces `path` whole, so a sandbox starting meanwhile (another server on the same root) never mounts
/// a half-written file.
fn write_atomically(path: &Path, content: &[u8]) -> Result<(), SandboxError> {
    let name = path.file_name().and_then(|name| name.to_str()).unwrap_or("file");
    let temporary = path.with_file_name(format!(".{name}.{}", ulid::Ulid::new()));
    let written = fs::File::create(&temporary)
        .and_then(|mut file| file.write_all(content))
        .and_then(|()| fs::rename(&temporary, path));
    written.map_err(|error| {
        let _ = fs::remove_file(&temporary);
        io_failure(path, &error)
    })
}

fn io_failure(path: &Path, error: &std::io::Error) -> SandboxError {
    SandboxError::Unavailable(format!("cannot write {}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_users_and_lists_only_allowed_host_files() {
        let root = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let mounts = prepare_etc(root.path(), false).unwrap_or_else(|error| panic!("{error}"));
        let passwd = mounts
            .iter()
            .find(|mount| mount.sandbox == "/etc/passwd")
            .map(|mount| fs::read_to_string(&mount.host).unwrap_or_default());
        assert!(passwd.is_some_and(|passwd| passwd.contains("sandbox:x:1000:1000:")));
        for forbidden in ["/etc/shadow", "/etc/ssl/private", "/etc/resolv.conf", "/etc/pip.conf"] {
            assert!(
                mounts.iter().all(|mount| mount.sandbox != forbidden),
                "{forbidden} is mounted"
            );
        }
        let with_network = prepare_etc(root.path(), true).unwrap_or_default();
        let resolv_exists = Path::new("/etc/resolv.conf").exists();
        assert_eq!(
            with_network.iter().any(|mount| mount.sandbox == "/etc/resolv.conf"),
            resolv_exists
        );
    }
}

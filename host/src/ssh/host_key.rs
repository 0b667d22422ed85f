//! The server's SSH host key: ed25519, made at first start and kept in the data directory
//! (`ssh_host_ed25519_key`, OpenSSH format, mode 0600), so clients' `known_hosts` entries stay
//! valid across restarts and across processes sharing the directory.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use anyhow::Context;
use russh::keys::PrivateKey;
use russh::keys::ssh_key::LineEnding;
use russh::keys::ssh_key::private::Ed25519Keypair;

pub use crate::keys::SSH_HOST_KEY_FILE as FILE_NAME;

/// The host key in `data_dir`, created when there is none. A process that loses the race to
/// create it reads the winner's.
pub fn load_or_create(data_dir: &Path) -> anyhow::Result<PrivateKey> {
    let path = data_dir.join(FILE_NAME);
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
    {
        Ok(mut file) => {
            let key = PrivateKey::from(Ed25519Keypair::from_seed(&rand::random()));
            let text = key.to_openssh(LineEnding::LF)?;
            file.write_all(text.as_bytes())
                .and_then(|()| file.sync_all())
                .with_context(|| format!("writing {}", path.display()))?;
            tracing::info!(path = %path.display(), "created the SSH host key");
            Ok(key)
        }
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => load(&path),
        Err(error) => Err(error).with_context(|| format!("creating {}", path.display())),
    }
}

fn load(path: &Path) -> anyhow::Result<PrivateKey> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    // A key readable by others is no longer secret; keep it the owner's alone, as sshd would
    // insist.
    let mode = std::fs::metadata(path)?.permissions().mode();
    if mode & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    PrivateKey::from_openssh(text.trim())
        .with_context(|| format!("{} is not an OpenSSH private key", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_made_once_and_kept_private() {
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_create(dir.path()).unwrap();
        let path = dir.path().join(FILE_NAME);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = load_or_create(dir.path()).unwrap();
        assert_eq!(first.public_key(), again.public_key());
        assert_eq!(first.algorithm(), russh::keys::Algorithm::Ed25519);
    }
}

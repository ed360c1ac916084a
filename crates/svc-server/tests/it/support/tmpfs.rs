//! A small tmpfs of a test's own (full disks, read-only data directories: issue 32). Mounting
//! needs root (or CAP_SYS_ADMIN); where it is impossible `mount` returns `None` and says why, and
//! the test says it skips.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Tmpfs {
    pub path: PathBuf,
}

impl Tmpfs {
    /// A tmpfs of `size` bytes on a new folder, or `None` (with the reason on stderr).
    pub fn mount(size: u64) -> Option<Tmpfs> {
        let path = std::env::temp_dir().join(format!("svc-tmpfs-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&path).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700"), "tmpfs"])
            .arg(&path)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs { path }),
            Ok(o) => {
                eprintln!(
                    "cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                let _ = std::fs::remove_dir(&path);
                None
            }
            Err(e) => {
                eprintln!("cannot run mount: {e}");
                let _ = std::fs::remove_dir(&path);
                None
            }
        }
    }

    /// Mounts it again read-only (or read-write).
    pub fn remount(&self, read_only: bool) {
        let o = Command::new("mount")
            .args(["-o", if read_only { "remount,ro" } else { "remount,rw" }])
            .arg(&self.path)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }

    /// Fills it: a file written until the disk is full; returns its path.
    pub fn fill(&self) -> PathBuf {
        use std::io::Write;
        let filler = self.path.join("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        let block = vec![0x5au8; 64 * 1024];
        loop {
            if f.write_all(&block).is_err() {
                break;
            }
        }
        // The last partial blocks too.
        let small = [0x5au8; 512];
        while f.write_all(&small).is_ok() {}
        let _ = f.sync_all();
        filler
    }

    pub fn join(&self, p: impl AsRef<Path>) -> PathBuf {
        self.path.join(p)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).output();
        let _ = std::fs::remove_dir(&self.path);
    }
}

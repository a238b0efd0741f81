//! The per-size mTHP `enabled` settings (`/sys/kernel/mm/transparent_hugepage/hugepages-<N>kB/enabled`):
//! read them for the meta file, and set one size for a recording with every size put back on
//! drop — also after an error or Ctrl-C, which the recorder turns into an error.
//!
//! The kernel prints the active choice in brackets: `always inherit madvise [never]`.

use std::fs;
use std::path::{Path, PathBuf};

use super::restore::{Restore, Restoring};

/// Where the knobs are.
pub const THP: &str = "/sys/kernel/mm/transparent_hugepage";

/// One size's setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// Folio size in KiB.
    pub kb: u64,
    /// Its `enabled` file.
    pub path: PathBuf,
    /// The bracketed choice (`always`, `inherit`, `madvise`, `never`).
    pub value: String,
}

/// The bracketed word of an `enabled` file.
pub fn active(text: &str) -> Option<&str> {
    let open = text.find('[')?;
    let close = text[open..].find(']')? + open;
    Some(&text[open + 1..close])
}

/// The choice an `enabled` file holds: the bracketed word, or the bare word a plain file
/// (the tests' stand-in for sysfs) holds after a write.
fn current(text: &str) -> &str {
    active(text).unwrap_or(text.trim())
}

/// Every writable size's setting under `root` (ascending size).
pub fn read_all(root: &Path) -> Vec<Setting> {
    let Ok(dir) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut v: Vec<Setting> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let kb = name
                .strip_prefix("hugepages-")?
                .strip_suffix("kB")?
                .parse()
                .ok()?;
            let path = e.path().join("enabled");
            let value = current(&fs::read_to_string(&path).ok()?).to_string();
            Some(Setting { kb, path, value })
        })
        .collect();
    v.sort_by_key(|s| s.kb);
    v
}

/// The folio size anonymous faults get: the one size set to `always` (or `inherit` when the
/// top-level THP setting is `always`), `4K` when none is, all of them joined when several are.
pub fn fault_size(root: &Path, settings: &[Setting]) -> String {
    let top = fs::read_to_string(root.join("enabled"))
        .ok()
        .and_then(|t| active(&t).map(str::to_string));
    let on: Vec<String> = settings
        .iter()
        .filter(|s| {
            s.value == "always" || (s.value == "inherit" && top.as_deref() == Some("always"))
        })
        .map(|s| format!("{}K", s.kb))
        .collect();
    if on.is_empty() {
        "4K".to_string()
    } else {
        on.join(",")
    }
}

/// `16K:always 32K:never …` for the meta file.
pub fn describe(settings: &[Setting]) -> String {
    settings
        .iter()
        .map(|s| format!("{}K:{}", s.kb, s.value))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Parse `--mthp` (`16K`, `64k`, `4K` = no large folios) into KiB.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s
        .trim()
        .trim_end_matches(['K', 'k', 'B', 'b'])
        .trim_end_matches(['K', 'k']);
    t.parse::<u64>()
        .ok()
        .filter(|kb| kb.is_power_of_two() && *kb >= 4)
        .ok_or_else(|| format!("--mthp {s}: expected a folio size such as 4K, 16K or 64K"))
}

/// Settings changed for a recording; put back when dropped ([`Restoring`]).
#[derive(Debug)]
pub struct Changed {
    saved: Vec<Setting>,
}

impl Changed {
    /// Every size to `never`, then `kb` to `always` (4 KiB: none).
    pub fn set(root: &Path, kb: u64) -> Result<Restoring<Changed>, String> {
        let saved = read_all(root);
        if saved.is_empty() {
            return Err(format!(
                "--mthp: no {}/hugepages-*kB/enabled on this kernel (mTHP needs Linux 6.8 or later)",
                root.display()
            ));
        }
        if kb != 4 && !saved.iter().any(|s| s.kb == kb) {
            let have: Vec<String> = saved.iter().map(|s| format!("{}K", s.kb)).collect();
            return Err(format!(
                "--mthp {kb}K: this kernel has no such size (it has {})",
                have.join(", ")
            ));
        }
        let mut c = Changed { saved };
        for s in &c.saved {
            let v = if s.kb == kb { "always" } else { "never" };
            if let Err(e) = fs::write(&s.path, v) {
                let err = format!("--mthp: writing {v} to {}: {e}", s.path.display());
                c.restore();
                return Err(err);
            }
        }
        Ok(Restoring::new(c))
    }
}

impl Restore for Changed {
    const FAILED: &'static str = "mTHP RESTORE FAILED";

    /// Put every saved value back and check it stuck; the sizes that did not.
    fn restore(&mut self) -> Vec<String> {
        let mut bad = Vec::new();
        for s in &self.saved {
            let _ = fs::write(&s.path, &s.value);
        }
        for s in &self.saved {
            let now = fs::read_to_string(&s.path)
                .ok()
                .map(|t| current(&t).to_string());
            if now.as_deref() != Some(s.value.as_str()) {
                bad.push(format!(
                    "{} is {} (was {})",
                    s.path.display(),
                    now.unwrap_or_else(|| "unreadable".into()),
                    s.value
                ));
            }
        }
        bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bracketed_choice() {
        assert_eq!(active("always inherit madvise [never]\n"), Some("never"));
        assert_eq!(active("[always] madvise never"), Some("always"));
        assert_eq!(active("always"), None);
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("16K"), Ok(16));
        assert_eq!(parse_size("64kB"), Ok(64));
        assert_eq!(parse_size("4K"), Ok(4));
        assert!(parse_size("12K").is_err());
        assert!(parse_size("x").is_err());
    }

    /// A fake sysfs tree in a temp dir: set 16K, check, drop, check every value is back.
    #[test]
    fn set_and_restore_on_drop() {
        let d = tempfile::tempdir().unwrap();
        let mk = |kb: u64, v: &str| {
            let p = d.path().join(format!("hugepages-{kb}kB"));
            fs::create_dir_all(&p).unwrap();
            fs::write(p.join("enabled"), v).unwrap();
        };
        mk(16, "always inherit madvise [never]");
        mk(32, "always inherit [madvise] never");
        mk(2048, "always [inherit] madvise never");
        fs::write(d.path().join("enabled"), "always [madvise] never").unwrap();
        {
            let _c = Changed::set(d.path(), 16).unwrap();
            // sysfs shows the bracketed form; the fake file holds what was written
            let s = fs::read_to_string(d.path().join("hugepages-16kB/enabled")).unwrap();
            assert_eq!(s, "always");
            let s = fs::read_to_string(d.path().join("hugepages-32kB/enabled")).unwrap();
            assert_eq!(s, "never");
        }
        let back = |kb: u64| {
            fs::read_to_string(d.path().join(format!("hugepages-{kb}kB/enabled"))).unwrap()
        };
        assert_eq!(back(16), "never");
        assert_eq!(back(32), "madvise");
        assert_eq!(back(2048), "inherit");
        assert!(Changed::set(d.path(), 128).is_err());
        let mut c = Changed::set(d.path(), 32).unwrap();
        assert_eq!(c.restore_now(), Vec::<String>::new());
    }

    #[test]
    fn fault_size_reads_always_and_inherit() {
        let s = |kb, v: &str| Setting {
            kb,
            path: PathBuf::new(),
            value: v.into(),
        };
        let d = tempfile::tempdir().unwrap();
        assert_eq!(
            fault_size(d.path(), &[s(16, "never"), s(32, "never")]),
            "4K"
        );
        assert_eq!(
            fault_size(d.path(), &[s(16, "always"), s(32, "never")]),
            "16K"
        );
        fs::write(d.path().join("enabled"), "[always] madvise never").unwrap();
        assert_eq!(
            fault_size(d.path(), &[s(16, "inherit"), s(32, "always")]),
            "16K,32K"
        );
    }
}

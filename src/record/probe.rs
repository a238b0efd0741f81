//! What the machine offers before anything is recorded: root, perf, the tracepoints, and which
//! spinlock slowpath the kernel runs (it decides which waits `lock:contention_begin` sees:
//! docs/MODELS.md §4, the observation rule).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The effective user id from `/proc/self/status` (`Uid: real effective saved fs`).
pub fn euid() -> Option<u32> {
    let s = fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// `perf version`'s line, or why perf cannot run.
pub fn perf_version(perf: &str) -> Result<String, String> {
    match Command::new(perf).arg("version").stdin(Stdio::null()).output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        Ok(o) => Err(format!(
            "`{perf} version` failed ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!(
            "cannot run `{perf}`: {e}; install perf (Debian: linux-perf, Fedora: perf, Ubuntu: linux-tools-$(uname -r))"
        )),
    }
}

/// The tracefs mounts perf looks in.
const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Tracepoints of `events` (`sys:name`) this kernel does not have. `None` when tracefs is
/// not mounted anywhere perf looks, so nothing can be said (perf mounts it itself and will
/// tell).
pub fn missing_tracepoints(events: &[&str]) -> Option<Vec<String>> {
    let root = TRACEFS
        .iter()
        .map(Path::new)
        .find(|p| p.join("events").is_dir())?;
    Some(
        events
            .iter()
            .filter(|e| {
                let (sys, name) = e.split_once(':').unwrap_or((e, ""));
                !root.join("events").join(sys).join(name).is_dir()
            })
            .map(|e| e.to_string())
            .collect(),
    )
}

/// What a missing tracepoint needs.
pub fn enable_hint(event: &str) -> &'static str {
    match event.split(':').next() {
        Some("lock") => {
            "lock:contention_begin/end are in every kernel since 5.19 (CONFIG_TRACEPOINTS)"
        }
        Some("syscalls") => "syscall tracepoints need CONFIG_FTRACE_SYSCALLS=y",
        Some("pagemap") | Some("kmem") => "mm tracepoints need CONFIG_TRACEPOINTS=y",
        _ => "check `perf list tracepoint`",
    }
}

/// Which spinlock slowpath ran, and how that was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slowpath {
    /// The function (`__pv_queued_spin_lock_slowpath`, `native_queued_spin_lock_slowpath`) or
    /// `unknown`.
    pub symbol: String,
    /// `call chains`, `kallsyms + hypervisor flag`, `cache`.
    pub source: String,
}

/// The boot this is (the cache key: the slowpath is fixed at boot by pv-ops patching).
fn boot_id() -> Option<String> {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
}

fn cache_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(
        base.join("lockcast")
            .join(format!("slowpath-{}", boot_id()?)),
    )
}

/// The slowpath found earlier in this boot, if any.
pub fn cached() -> Option<Slowpath> {
    let s = fs::read_to_string(cache_file()?).ok()?;
    let symbol = s.trim().to_string();
    (!symbol.is_empty()).then(|| Slowpath {
        symbol,
        source: "call chains (earlier in this boot)".into(),
    })
}

/// Remember a slowpath seen in call chains for the rest of this boot.
pub fn remember(symbol: &str) {
    if let Some(p) = cache_file() {
        if let Some(d) = p.parent() {
            let _ = fs::create_dir_all(d);
        }
        let _ = fs::write(p, format!("{symbol}\n"));
    }
}

/// The slowpath named in a call chain frame, if the frame is one.
pub fn slowpath_in(symbol: &str) -> Option<&'static str> {
    if symbol.starts_with("__pv_queued_spin_lock_slowpath") {
        Some("__pv_queued_spin_lock_slowpath")
    } else if symbol.starts_with("native_queued_spin_lock_slowpath") {
        Some("native_queued_spin_lock_slowpath")
    } else if symbol.starts_with("queued_spin_lock_slowpath") {
        Some("queued_spin_lock_slowpath")
    } else {
        None
    }
}

/// Without contention in the probe: a guest kernel with the paravirt slowpath built in runs
/// it (pv-ops patch it in when the hypervisor offers PV unhalt, as KVM does), a kernel that
/// is not a guest runs the native one. A guess, and named as one.
pub fn guess() -> Slowpath {
    let kallsyms = fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    let has_pv = kallsyms
        .lines()
        .any(|l| l.split_whitespace().nth(2) == Some("__pv_queued_spin_lock_slowpath"));
    let guest = fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    let symbol = if has_pv && guest {
        "__pv_queued_spin_lock_slowpath"
    } else {
        "native_queued_spin_lock_slowpath"
    };
    Slowpath {
        symbol: symbol.into(),
        source: format!(
            "guessed: no contended spinlock in the probe; /proc/kallsyms {} __pv_queued_spin_lock_slowpath, cpu flags {} hypervisor",
            if has_pv { "has" } else { "lacks" },
            if guest { "have" } else { "lack" }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slowpath_frames() {
        assert_eq!(
            slowpath_in("__pv_queued_spin_lock_slowpath+0x1a5"),
            Some("__pv_queued_spin_lock_slowpath")
        );
        assert_eq!(
            slowpath_in("native_queued_spin_lock_slowpath"),
            Some("native_queued_spin_lock_slowpath")
        );
        assert_eq!(slowpath_in("_raw_spin_lock_irqsave"), None);
    }

    #[test]
    fn euid_reads_proc() {
        // this process has one; whatever it is, it parses
        assert!(euid().is_some());
    }

    #[test]
    fn hints_name_the_config() {
        assert!(enable_hint("syscalls:sys_enter_madvise").contains("FTRACE_SYSCALLS"));
    }
}

//! perf mounts tracefs (at `/sys/kernel/tracing`) when it resolves a tracepoint name and finds
//! none mounted, and leaves it mounted: seen on these VMs after `lockcast record`, a tracefs
//! with source `none` that was not there before. `record` puts back what it changes, so it
//! notes whether any tracefs was mounted before perf ran and, if none was, unmounts the ones
//! perf left, on success, error and Ctrl-C alike (as mTHP is: [`super::restore`]).

use std::process::Command;

use super::restore::{Restore, Restoring};

/// Whether a tracefs was mounted before the recording.
pub struct Mount {
    was: bool,
}

impl Mount {
    /// Note the mounts as they are now; put back when dropped ([`Restoring`]).
    pub fn note() -> Restoring<Mount> {
        Restoring::new(Mount {
            was: !points(&mounts()).is_empty(),
        })
    }
}

impl Restore for Mount {
    const FAILED: &'static str = "could not unmount the tracefs perf mounted";

    /// Unmount the tracefs perf mounted (nothing when one was mounted before); what could not
    /// be unmounted, and why (busy: a tracer started meanwhile uses it).
    fn restore(&mut self) -> Vec<String> {
        if self.was {
            return Vec::new();
        }
        let mut bad = Vec::new();
        // the last mounted first, as nested mounts need
        for p in points(&mounts()).iter().rev() {
            match Command::new("umount").arg(p).output() {
                Ok(o) if o.status.success() => {}
                Ok(o) => bad.push(format!(
                    "umount {p}: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                )),
                Err(e) => bad.push(format!("umount {p}: {e}")),
            }
        }
        bad
    }
}

/// `/proc/self/mounts`, empty when it cannot be read.
fn mounts() -> String {
    std::fs::read_to_string("/proc/self/mounts").unwrap_or_default()
}

/// The mount points of the tracefs mounts in `mounts` (`/proc/self/mounts`: source, point,
/// type, options, two numbers; a blank in a path is written `\040`).
fn points(mounts: &str) -> Vec<String> {
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, point, ty) = (f.next()?, f.next()?, f.next()?);
            (ty == "tracefs").then(|| point.replace("\\040", " "))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::points;

    #[test]
    fn tracefs_points_are_read_from_the_mount_table() {
        let m = "sysfs /sys sysfs rw,nosuid 0 0\n\
                 none /sys/kernel/tracing tracefs rw,relatime 0 0\n\
                 debugfs /sys/kernel/debug debugfs rw 0 0\n\
                 tracefs /mnt/my\\040trace tracefs rw 0 0\n\
                 broken line\n";
        assert_eq!(points(m), ["/sys/kernel/tracing", "/mnt/my trace"]);
        assert!(points("proc /proc proc rw 0 0\n").is_empty());
    }
}

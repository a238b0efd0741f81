//! An input file cut short while lockcast has it mapped.
//!
//! Plain text traces and perf.data files are mapped, not read (`lockcast::ingest::mapped`,
//! [`crate::perf_data`]). Reading a page of a file mapping that lies past the file's end raises
//! SIGBUS (mmap(2)), and another process can shorten a file while lockcast reads it: a
//! `perf script > trace.txt` rerun into the file being parsed truncates it first. SIGBUS's
//! default action kills the process with no word of which file (the shell prints "Bus error"),
//! and leaves its temporary output files behind.
//!
//! So each mapping of an input is watched while it lives ([`watch`]). A SIGBUS at an address
//! inside a watched mapping removes the temporary output files registered with
//! [`remove_on_truncation`], prints which file got shorter, and exits with [`EXIT_CODE`] (the
//! exit code of lockcast's I/O errors). A SIGBUS anywhere else meets the action installed
//! before this one (Rust's own, or the default), which then kills the process as it would have.
//!
//! The handler can only do what is safe in a signal handler: it reads fixed tables of atomics
//! (no lock, no allocation), and calls `unlink`, `write` and `_exit`, which POSIX lists as
//! async-signal-safe. The messages and paths are made when a mapping or a file is registered.
//! At most [`SLOTS`] mappings and as many files are registered at once; past that, registering
//! does nothing and that mapping has the default action.

use std::ffi::CString;
use std::path::Path;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Once, OnceLock};

/// How a truncated input ends the process: lockcast's exit code for I/O errors.
pub const EXIT_CODE: i32 = 4;

/// Mappings (and, apart, files) registered at once.
pub const SLOTS: usize = 32;

const FREE: u8 = 0;
const BUSY: u8 = 1;
const LIVE: u8 = 2;

/// One registration: an address range and the bytes the handler uses (a message to print, or
/// a NUL-terminated path to remove), owned by the slot from [`claim`] to [`Registration`]'s
/// drop.
#[derive(Debug)]
struct Slot {
    state: AtomicU8,
    start: AtomicUsize,
    end: AtomicUsize,
    bytes: AtomicPtr<u8>,
    len: AtomicUsize,
}

impl Slot {
    const fn new() -> Self {
        Slot {
            state: AtomicU8::new(FREE),
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            bytes: AtomicPtr::new(std::ptr::null_mut()),
            len: AtomicUsize::new(0),
        }
    }
}

/// Watched mappings: the range and the message printed when it faults.
static MAPPINGS: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];

/// Temporary output files, removed before the process exits on a truncated input.
static FILES: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];

/// The SIGBUS action before [`on_sigbus`], put back for a fault outside every watched mapping.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

static INSTALL: Once = Once::new();

/// A registration, undone on drop.
#[derive(Debug)]
#[must_use = "the registration ends when this is dropped"]
pub struct Registration {
    slot: Option<(&'static [Slot; SLOTS], usize)>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let Some((table, i)) = self.slot else {
            return;
        };
        let s = &table[i];
        s.state.store(BUSY, Ordering::Release);
        let p = s.bytes.swap(std::ptr::null_mut(), Ordering::AcqRel);
        let n = s.len.load(Ordering::Relaxed);
        if !p.is_null() {
            // SAFETY: `p` and `n` are the pointer and length of the boxed slice `claim` leaked
            // into this slot, taken out of it once (the swap above).
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n)) });
        }
        s.state.store(FREE, Ordering::Release);
    }
}

/// Watch `len` bytes mapped at `start` from the file `name` (as the user named it) until the
/// returned registration is dropped: a SIGBUS inside them ends the process with a message
/// naming the file.
pub fn watch(start: *const u8, len: usize, name: &str) -> Registration {
    install();
    let text = format!(
        "lockcast: {name}: the file got shorter while it was read (another process truncated or \
         rewrote it); stopped, no output file was finished\n"
    );
    let start = start as usize;
    claim(
        &MAPPINGS,
        start,
        start.saturating_add(len),
        text.into_bytes(),
    )
}

/// Remove `path` (a temporary output file) if a watched input is found truncated while the
/// returned registration lives.
pub fn remove_on_truncation(path: &Path) -> Registration {
    use std::os::unix::ffi::OsStrExt;
    match CString::new(path.as_os_str().as_bytes()) {
        Ok(c) => claim(&FILES, 0, 0, c.into_bytes_with_nul()),
        Err(_) => Registration { slot: None },
    }
}

/// Whether a SIGBUS at `addr` would be reported as a truncated input: it lies in a watched
/// mapping.
pub fn is_watched(addr: *const u8) -> bool {
    let addr = addr as usize;
    MAPPINGS.iter().any(|s| {
        s.state.load(Ordering::Acquire) == LIVE
            && (s.start.load(Ordering::Relaxed)..s.end.load(Ordering::Relaxed)).contains(&addr)
    })
}

fn claim(table: &'static [Slot; SLOTS], start: usize, end: usize, bytes: Vec<u8>) -> Registration {
    for (i, s) in table.iter().enumerate() {
        if s.state
            .compare_exchange(FREE, BUSY, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            let b = Box::into_raw(bytes.into_boxed_slice());
            s.start.store(start, Ordering::Relaxed);
            s.end.store(end, Ordering::Relaxed);
            s.len.store(b.len(), Ordering::Relaxed);
            s.bytes.store(b.cast::<u8>(), Ordering::Relaxed);
            s.state.store(LIVE, Ordering::Release);
            return Registration {
                slot: Some((table, i)),
            };
        }
    }
    Registration { slot: None }
}

/// Put [`on_sigbus`] in place, once per process.
fn install() {
    INSTALL.call_once(|| {
        // SAFETY: sigaction with a zeroed action filled in field by field, the handler an
        // `extern "C"` function of the SA_SIGINFO signature; the old action is written into
        // a local and kept.
        unsafe {
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = on_sigbus as *const () as usize;
            new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut new.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, &new, &mut old) == 0 {
                let _ = PREVIOUS.set(old);
            }
        }
    });
}

/// The SIGBUS handler (see the module's note).
extern "C" fn on_sigbus(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler; si_addr is the
    // faulting address for SIGBUS.
    let addr = match info.is_null() {
        true => 0,
        false => (unsafe { (*info).si_addr() }) as usize,
    };
    for s in &MAPPINGS {
        if s.state.load(Ordering::Acquire) != LIVE {
            continue;
        }
        let (a, b) = (
            s.start.load(Ordering::Relaxed),
            s.end.load(Ordering::Relaxed),
        );
        if !(a..b).contains(&addr) {
            continue;
        }
        for f in &FILES {
            if f.state.load(Ordering::Acquire) == LIVE {
                let p = f.bytes.load(Ordering::Relaxed);
                if !p.is_null() {
                    // SAFETY: a NUL-terminated path owned by its slot while it is LIVE
                    unsafe { libc::unlink(p as *const libc::c_char) };
                }
            }
        }
        let (p, n) = (
            s.bytes.load(Ordering::Relaxed),
            s.len.load(Ordering::Relaxed),
        );
        // SAFETY: the message owned by the slot while it is LIVE; write and _exit are
        // async-signal-safe
        unsafe {
            if !p.is_null() {
                let _ = libc::write(2, p as *const libc::c_void, n);
            }
            libc::_exit(EXIT_CODE);
        }
    }
    // Not a watched mapping: the action before this one, which the fault meets when the
    // faulting access runs again on return.
    // SAFETY: sigaction with the action sigaction itself gave back, or the default.
    unsafe {
        match PREVIOUS.get() {
            Some(old) => libc::sigaction(libc::SIGBUS, old, std::ptr::null_mut()),
            None => {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut())
            }
        };
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    /// The environment variable that makes the test below the child it runs.
    const CHILD: &str = "LOCKCAST_TRUNCATION_CHILD";

    /// In the child: map a 256 KiB file, shorten it to one page, read past that.
    fn child(dir: &Path, watched: bool) -> ! {
        let input = dir.join("input.txt");
        let mut f = std::fs::File::create(&input).unwrap();
        f.write_all(&vec![b'x'; 256 << 10]).unwrap();
        let f = std::fs::File::open(&input).unwrap();
        // SAFETY: the file is this test's own; its truncation below is the point
        let map = unsafe { memmap2::MmapOptions::new().map(&f) }.unwrap();
        let other = dir.join("other");
        std::fs::write(&other, b"y").unwrap();
        // SAFETY: as above
        let other_map =
            unsafe { memmap2::MmapOptions::new().map(&std::fs::File::open(&other).unwrap()) }
                .unwrap();
        let _w = match watched {
            true => watch(map.as_ptr(), map.len(), "trace.txt"),
            // the handler is in place, but for another mapping
            false => watch(other_map.as_ptr(), other_map.len(), "other"),
        };
        let _t = remove_on_truncation(&dir.join("out.tmp"));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&input)
            .unwrap()
            .set_len(4096)
            .unwrap();
        let b = std::hint::black_box(&map[128 << 10]);
        println!("read {b} past the end");
        std::process::exit(0)
    }

    fn run_child(name: &str, watched: bool) -> (std::process::Output, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("out.tmp"), b"half a table").unwrap();
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads", "1"])
            .env(CHILD, format!("{}:{watched}", dir.path().display()))
            .output()
            .unwrap();
        (out, dir)
    }

    fn as_child() {
        if let Some(v) = std::env::var_os(CHILD) {
            let v = v.to_string_lossy().into_owned();
            let (dir, watched) = v.rsplit_once(':').unwrap();
            child(Path::new(dir), watched == "true");
        }
    }

    /// A read past the end of a watched mapping whose file was shortened ends the process with
    /// the I/O exit code and a message naming the file, and removes the registered temporary
    /// output.
    #[test]
    fn a_truncated_watched_input_exits_naming_the_file() {
        as_child();
        let (out, dir) = run_child(
            "truncation::tests::a_truncated_watched_input_exits_naming_the_file",
            true,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(EXIT_CODE), "{:?} {err}", out.status);
        assert!(
            err.contains("lockcast: trace.txt: the file got shorter while it was read"),
            "{err}"
        );
        assert!(!dir.path().join("out.tmp").exists());
        assert!(!String::from_utf8_lossy(&out.stdout).contains("past the end"));
    }

    /// The same read in a mapping nobody watches gets the signal's own action: killed by
    /// SIGBUS, the temporary file left alone.
    #[test]
    fn a_fault_outside_every_watched_mapping_keeps_the_signal() {
        as_child();
        let (out, dir) = run_child(
            "truncation::tests::a_fault_outside_every_watched_mapping_keeps_the_signal",
            false,
        );
        assert_eq!(out.status.signal(), Some(libc::SIGBUS), "{:?}", out.status);
        assert!(dir.path().join("out.tmp").exists());
    }

    /// Registrations end with their guards: the slots are free again, so more than [`SLOTS`]
    /// registrations one after another all take one.
    #[test]
    fn registrations_free_their_slots() {
        let live = |t: &[Slot; SLOTS]| {
            t.iter()
                .filter(|s| s.state.load(Ordering::Acquire) == LIVE)
                .count()
        };
        let x = [0u8; 16];
        for _ in 0..3 * SLOTS {
            let r = watch(x.as_ptr(), x.len(), "x");
            assert!(r.slot.is_some());
        }
        let kept: Vec<Registration> = (0..SLOTS + 2)
            .map(|_| remove_on_truncation(Path::new("/nonexistent/lockcast-test")))
            .collect();
        assert_eq!(kept.iter().filter(|r| r.slot.is_some()).count(), SLOTS);
        assert_eq!(live(&FILES), SLOTS);
        drop(kept);
        assert_eq!(live(&FILES), 0);
    }
}

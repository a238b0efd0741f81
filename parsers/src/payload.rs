//! Typed payloads of the tracepoints lockcast reads (FORMATS.md §2.3, MODELS.md §2), one struct
//! per tracepoint, its fields those of the kernel's `TP_printk`; and the plain-text snapshot
//! files the work what-ifs read beside a capture (`/proc/vmstat`, `key=value` lines).
//!
//! Payload text is kept raw in [`crate::event::Event`] and parsed here on demand. Pointers are
//! kept as printed (`%p` is hashed without `0x` in ftrace, real with `0x` in perf script and
//! trace-cmd): they are identities, comparable within one file, not numbers. Fields are taken
//! by name, never by position: kernels add fields (`order=` on recent `mm_collapse_huge_page*`)
//! and drop them (`writable=` in 6.18), and a field not named here is ignored. A field every
//! kernel with the tracepoint prints is required (missing is an error naming it); a field only
//! some kernels print is an `Option`. Any other event's `key=value` pairs come from
//! [`key_values`].
//!
//! As kernel 6.18 prints them through `perf script` (tracefs prints the same text with `%p`
//! values hashed instead of `0x…`):
//!
//! ```text
//! lock:contention_begin: 0xffff888102abc698 (flags=SPIN)
//! pagemap:mm_lru_insertion: folio=0xffffea0004f3a300 pfn=0x13ce8c lru=0 flags=Ma bd
//! huge_memory:mm_khugepaged_scan_pmd: mm=0xffff8884b5ddabc0, scan_pfn=0x3a689a, referenced=512, none_or_zero=0, status=succeeded, unmapped=0
//! huge_memory:mm_collapse_huge_page: mm=0xffff8884b5ddabc0, isolated=1, status=succeeded
//! huge_memory:mm_collapse_huge_page_isolate: scan_pfn=0x3a689a, none_or_zero=0, referenced=512, status=succeeded
//! mmap_lock:mmap_lock_acquire_returned: mm=0xffff8884b5ddabc0 memcg_id=7856 write=true success=true
//! syscalls:sys_enter_madvise: start: 0x7f56a5a00000, len_in: 0x08000000, behavior: 0x00000008
//! ```

use crate::error::LineError;

/// `lock:contention_begin`: `"%p (flags=%s)"`, flags `|`-joined from SPIN READ WRITE RT PERCPU
/// MUTEX (empty for a semaphore).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentionBegin<'a> {
    /// Lock address as printed.
    pub lock: &'a str,
    /// Flag names as printed (`SPIN`, `SPIN|READ`, ``).
    pub flags: &'a str,
}

/// `lock:contention_end`: `"%p (ret=%d)"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentionEnd<'a> {
    /// Lock address as printed.
    pub lock: &'a str,
    /// Return value (0, or -4 = -EINTR for interrupted sleeping locks).
    pub ret: i32,
}

/// `pagemap:mm_lru_insertion`: `"folio=%p pfn=0x%lx lru=%d flags=%s%s%s%s%s%s"` (v5.16+;
/// `page=` and decimal pfn before).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LruInsertion<'a> {
    /// Folio (or page) pointer as printed.
    pub folio: &'a str,
    /// Page frame number.
    pub pfn: u64,
    /// LRU list: 0 inactive_anon, 1 active_anon, 2 inactive_file, 3 active_file, 4 unevictable.
    pub lru: i32,
    /// The 6-character flag field, padded back to 6 when trailing spaces were trimmed:
    /// `M` mlocked, `a`/`f` anon/file, `s` swapbacked, `b` reclaim, `d` dirty, `B` unevictable.
    pub flags: std::borrow::Cow<'a, str>,
}

/// `pagemap:mm_lru_activate`: `"folio=%p pfn=0x%lx"` (v5.16+; `page=` and decimal pfn before).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LruActivate<'a> {
    /// Folio (or page) pointer as printed.
    pub folio: &'a str,
    /// Page frame number.
    pub pfn: u64,
}

/// `kmem:mm_page_alloc`: `"page=%p pfn=0x%lx order=%d migratetype=%d gfp_flags=%s"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageAlloc<'a> {
    /// Page pointer as printed.
    pub page: &'a str,
    /// Page frame number (0 on failed allocations).
    pub pfn: u64,
    /// Allocation order (folio = 2^order pages).
    pub order: u32,
    /// Migrate type.
    pub migratetype: i32,
    /// GFP flags as printed.
    pub gfp_flags: &'a str,
}

/// `kmem:mm_page_free` / `mm_page_free_batched`: `"page=%p pfn=0x%lx order=%d"` (the batched
/// variant prints a literal order 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageFree<'a> {
    /// Page pointer as printed.
    pub page: &'a str,
    /// Page frame number.
    pub pfn: u64,
    /// Order.
    pub order: u32,
}

/// `huge_memory:mm_khugepaged_scan_pmd`, one PMD range scanned by khugepaged
/// (`hpage_collapse_scan_pmd()`, fired after the collapse when there was one):
/// `"mm=%p, scan_pfn=0x%lx, writable=%d, referenced=%d, none_or_zero=%d, status=%s,
/// unmapped=%d"`; 6.18 no longer prints `writable=` (the capture in `fixtures/lazyfree`).
///
/// `unmapped` is required: `include/trace/events/huge_memory.h` has printed `unmapped=%d`
/// since about v4.5 (FORMATS.md §2.3), before and after `writable=` went, and every real line
/// here has it (the LKML line of 2020, all 6.18 captures): a scan line without it is damaged,
/// not from an old kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KhugepagedScanPmd {
    /// `mm_struct` pointer as printed.
    pub mm: String,
    /// pfn of the last page looked at (`0xffffffffffffffff` when no page was found).
    pub scan_pfn: u64,
    /// A writable pte was seen; absent on kernels that no longer print it (6.18).
    pub writable: Option<i32>,
    /// Referenced (young) ptes counted (a 0/1 bool on old kernels).
    pub referenced: i32,
    /// `pte_none` or zero-page ptes counted.
    pub none_or_zero: i32,
    /// `enum scan_result` name: `succeeded`, `lack_referenced_page`, `page_lazyfree` (patched).
    pub status: String,
    /// Swap ptes counted.
    pub unmapped: i32,
}

/// `huge_memory:mm_collapse_huge_page`, the end of `collapse_huge_page()`:
/// `"mm=%p, isolated=%d, status=%s"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollapseHugePage {
    /// `mm_struct` pointer as printed.
    pub mm: String,
    /// 1 when the small folios were isolated (the kernel prints a bool as 0/1).
    pub isolated: i32,
    /// `enum scan_result` name.
    pub status: String,
}

/// `huge_memory:mm_collapse_huge_page_isolate`, the end of `__collapse_huge_page_isolate()`:
/// `"scan_pfn=0x%lx, none_or_zero=%d, referenced=%d, writable=%d, status=%s"`; 6.18 no longer
/// prints `writable=`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollapseHugePageIsolate {
    /// pfn of the last page looked at.
    pub scan_pfn: u64,
    /// Empty or zero-page ptes: the range has `512 - none_or_zero` pages to isolate.
    pub none_or_zero: i32,
    /// Referenced (young) ptes counted.
    pub referenced: i32,
    /// A writable pte was seen; absent on kernels that no longer print it (6.18).
    pub writable: Option<i32>,
    /// `enum scan_result` name.
    pub status: String,
}

/// `huge_memory:mm_collapse_huge_page_swapin`, the end of `__collapse_huge_page_swapin()`:
/// `"mm=%p, swapped_in=%d, referenced=%d, ret=%d"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollapseHugePageSwapin {
    /// `mm_struct` pointer as printed.
    pub mm: String,
    /// Pages swapped in.
    pub swapped_in: i32,
    /// Referenced ptes.
    pub referenced: i32,
    /// Return value.
    pub ret: i32,
}

/// One event of the `huge_memory:mm_collapse_huge_page*` family (`include/trace/events/
/// huge_memory.h` has exactly these three), as [`collapse_event`] reads it by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CollapseEvent {
    /// `mm_collapse_huge_page`.
    Collapse(CollapseHugePage),
    /// `mm_collapse_huge_page_isolate`.
    Isolate(CollapseHugePageIsolate),
    /// `mm_collapse_huge_page_swapin`.
    Swapin(CollapseHugePageSwapin),
}

/// `vmscan:mm_vmscan_*` events (kswapd wake/sleep, direct/memcg/node reclaim begin/end,
/// `lru_isolate`, `lru_shrink_inactive`/`_active`, `write_folio`, `throttled`, ...): the fields
/// most of them share, typed; every other `key=value` pair kept in `other`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Vmscan {
    /// NUMA node.
    pub nid: Option<i32>,
    /// Allocation order.
    pub order: Option<i32>,
    /// GFP flags as printed.
    pub gfp_flags: Option<String>,
    /// `lru_isolate`: highest zone index.
    pub classzone: Option<i32>,
    /// Pages asked for (`lru_isolate`).
    pub nr_requested: Option<u64>,
    /// Pages scanned.
    pub nr_scanned: Option<u64>,
    /// Pages skipped (`lru_isolate`).
    pub nr_skipped: Option<u64>,
    /// Pages taken off the LRU.
    pub nr_taken: Option<u64>,
    /// Pages reclaimed.
    pub nr_reclaimed: Option<u64>,
    /// Reclaim priority.
    pub priority: Option<i32>,
    /// LRU list: a name (`inactive_file`) on current kernels, a number on old ones.
    pub lru: Option<String>,
    /// Reclaim flags as printed (`RECLAIM_WB_ANON|RECLAIM_WB_ASYNC`).
    pub flags: Option<String>,
    /// Every other pair, in printed order.
    pub other: Vec<(String, String)>,
}

/// `mmap_lock:mmap_lock_acquire_returned` `"mm=%p memcg_id=%llu write=%s success=%s"` (also
/// `_start_locking` and `_released`, `"mm=%p memcg_id=%llu write=%s"`; older kernels print
/// `memcg_path=%s` instead of the id): in the context of the task that takes the lock, so it
/// ties a task to its mm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MmapLock {
    /// The mm, as printed.
    pub mm: String,
    /// Write (exclusive) acquisition.
    pub write: bool,
    /// `success=` (true when absent: `_start_locking` and `_released` have none).
    pub success: bool,
}

/// `syscalls:sys_enter_madvise`: the syscall tracer's `"start: 0x%08lx, len_in: 0x%08lx,
/// behavior: 0x%08lx"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Madvise {
    /// Start address.
    pub start: u64,
    /// Length in bytes as passed (the kernel rounds it up to pages).
    pub len: u64,
    /// Advice: 4 `MADV_DONTNEED`, 8 `MADV_FREE`, 14 `MADV_HUGEPAGE`, 25 `MADV_COLLAPSE`.
    pub behavior: u32,
}

/// `MADV_FREE` advice value (include/uapi/asm-generic/mman-common.h).
pub const MADV_FREE: u32 = 8;
/// `MADV_HUGEPAGE` advice value (include/uapi/asm-generic/mman-common.h).
pub const MADV_HUGEPAGE: u32 = 14;

/// Split `key=value` pairs separated by spaces or `, ` (khugepaged events use commas).
///
/// A value runs to the next ` key=` (so values with spaces, like `next_comm=CPU 0/KVM`, stay
/// whole); text before the first key is returned under the empty key.
pub fn key_values(payload: &str) -> Vec<(&str, &str)> {
    let bytes = payload.as_bytes();
    // one pair per `=` at most (and the text before the first key); most payloads have fewer
    // than eight, so one allocation
    let mut out = Vec::with_capacity(8);
    // the key being read: (start, end) byte offsets of its name
    let mut open: Option<(usize, usize)> = None;
    // A key is a run of [A-Za-z0-9_] that starts a token (at 0 or after ' ' or ',') and ends
    // at an `=`: found from each `=` backwards, so the bytes between keys are skipped by
    // memchr instead of looked at one by one.
    for ke in memchr::memchr_iter(b'=', bytes) {
        let mut ks = ke;
        while ks > 0 && (bytes[ks - 1].is_ascii_alphanumeric() || bytes[ks - 1] == b'_') {
            ks -= 1;
        }
        if ks == ke || !(ks == 0 || bytes[ks - 1] == b' ' || bytes[ks - 1] == b',') {
            continue;
        }
        match open {
            // a value runs to the next key
            Some((ps, pe)) => out.push((&payload[ps..pe], value(&payload[pe + 1..ks]))),
            None => {
                let pre = payload[..ks].trim();
                if !pre.is_empty() {
                    out.push(("", pre));
                }
            }
        }
        open = Some((ks, ke));
    }
    match open {
        Some((ks, ke)) => out.push((&payload[ks..ke], value(&payload[ke + 1..]))),
        None if !payload.trim().is_empty() => out.push(("", payload.trim())),
        None => {}
    }
    out
}

/// A value without the separator before the next key.
fn value(v: &str) -> &str {
    v.trim_end_matches(' ').trim_end_matches(',')
}

/// A payload's `key=value` pairs, looked up by the names of the tracepoint's `TP_printk`.
struct Fields<'a> {
    kv: Vec<(&'a str, &'a str)>,
    /// The whole payload, quoted when a required field is missing.
    payload: &'a str,
}

impl<'a> Fields<'a> {
    fn new(payload: &'a str) -> Self {
        Self::of(payload, payload)
    }

    /// The pairs of `part`, a piece of `payload` (errors quote the whole payload).
    fn of(part: &'a str, payload: &'a str) -> Self {
        Fields {
            kv: key_values(part),
            payload,
        }
    }

    fn get(&self, key: &str) -> Option<&'a str> {
        self.kv.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    /// A field every kernel with this tracepoint prints.
    fn str(&self, key: &'static str) -> Result<&'a str, LineError> {
        self.get(key).ok_or_else(|| self.missing(key_what(key)))
    }

    fn string(&self, key: &'static str) -> Result<String, LineError> {
        self.str(key).map(str::to_string)
    }

    /// The first of `keys` printed: kernels renamed the field (`page=` became `folio=`).
    fn str_of(&self, keys: &[&str], what: &'static str) -> Result<&'a str, LineError> {
        keys.iter()
            .find_map(|k| self.get(k))
            .ok_or_else(|| self.missing(what))
    }

    fn int<T: std::str::FromStr>(&self, key: &'static str) -> Result<T, LineError> {
        int(self.str(key)?, int_what(key))
    }

    /// An integer field only some kernels print.
    fn opt_int<T: std::str::FromStr>(&self, key: &str) -> Result<Option<T>, LineError> {
        self.get(key)
            .map(|v| int(v, "an integer field"))
            .transpose()
    }

    fn pfn(&self, key: &'static str) -> Result<u64, LineError> {
        pfn(self.str(key)?)
    }

    fn missing(&self, what: &'static str) -> LineError {
        LineError::expected(what, self.payload)
    }
}

/// What a missing required field is called in the error.
fn key_what(key: &'static str) -> &'static str {
    match key {
        "pfn" => "a pfn= field",
        "order" => "an order= field",
        "lru" => "an lru= field",
        "flags" => "a flags= field",
        "migratetype" => "a migratetype= field",
        "gfp_flags" => "a gfp_flags= field",
        "page" => "a page= field",
        "mm" => "an mm= field",
        "scan_pfn" => "a scan_pfn= field",
        "status" => "a status= field",
        "referenced" => "a referenced= field",
        "none_or_zero" => "a none_or_zero= field",
        "unmapped" => "an unmapped= field",
        "isolated" => "an isolated= field",
        "swapped_in" => "a swapped_in= field",
        "ret" => "a ret= field",
        "write" => "a write= field",
        _ => "a key=value field",
    }
}

/// What a required integer field that is not an integer is called in the error.
fn int_what(key: &'static str) -> &'static str {
    match key {
        "ret" => "an integer ret",
        "lru" => "an integer lru",
        "order" => "an integer order",
        "migratetype" => "an integer migratetype",
        "referenced" => "an integer referenced",
        "none_or_zero" => "an integer none_or_zero",
        "unmapped" => "an integer unmapped",
        "isolated" => "an integer isolated",
        "swapped_in" => "an integer swapped_in",
        _ => "an integer field",
    }
}

/// pfn: `0x1a2b` (v5.14+) or decimal (older kernels).
fn pfn(v: &str) -> Result<u64, LineError> {
    hex_or_dec(v, "a hexadecimal pfn", "a pfn")
}

/// `0x1a2b` or decimal; `hex` / `dec` name what was expected in the error.
fn hex_or_dec(v: &str, hex: &'static str, dec: &'static str) -> Result<u64, LineError> {
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).map_err(|_| LineError::expected(hex, v)),
        None => v.parse().map_err(|_| LineError::expected(dec, v)),
    }
}

fn int<T: std::str::FromStr>(v: &str, what: &'static str) -> Result<T, LineError> {
    v.parse().map_err(|_| LineError::expected(what, v))
}

/// `%s` of a bool as the tracepoints print it (`true`/`false`; 0/1 from `%d`).
fn boolean(v: &str) -> Result<bool, LineError> {
    match v {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(LineError::expected("true or false", v)),
    }
}

/// `<ptr> (flags=SPIN)` / `<ptr> (ret=0)`: the pointer and the value in parentheses.
fn ptr_paren<'a>(payload: &'a str, key: &str) -> Result<(&'a str, &'a str), LineError> {
    let p = payload.trim();
    let (lock, rest) = p
        .split_once(' ')
        .ok_or_else(|| LineError::expected("\"<lock address> (<key>=...)\"", p))?;
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .and_then(|r| r.strip_prefix(key))
        .and_then(|r| r.strip_prefix('='))
        .ok_or_else(|| LineError::expected("\"(<key>=...)\" after the lock address", rest))?;
    Ok((lock, inner))
}

/// Parse a `lock:contention_begin` payload.
pub fn contention_begin(payload: &str) -> Result<ContentionBegin<'_>, LineError> {
    let (lock, flags) = ptr_paren(payload, "flags")?;
    Ok(ContentionBegin { lock, flags })
}

/// Parse a `lock:contention_end` payload.
pub fn contention_end(payload: &str) -> Result<ContentionEnd<'_>, LineError> {
    let (lock, ret) = ptr_paren(payload, "ret")?;
    Ok(ContentionEnd {
        lock,
        ret: int(ret, "an integer ret")?,
    })
}

/// Parse a `pagemap:mm_lru_insertion` payload.
pub fn lru_insertion(payload: &str) -> Result<LruInsertion<'_>, LineError> {
    // flags= is a fixed 6-char field of letters or spaces: take it positionally, not by token.
    let (head, flags) = match payload.find("flags=") {
        Some(i) => (&payload[..i], &payload[i + 6..]),
        None => return Err(LineError::expected("a flags= field", payload)),
    };
    let f = Fields::of(head, payload);
    let folio = f.str_of(&["folio", "page"], "a folio= field")?;
    // the usual field is exactly 6 single-byte characters: borrowed as is
    let flags = if flags.len() == 6 && flags.is_ascii() {
        std::borrow::Cow::Borrowed(flags)
    } else {
        let mut padded: String = flags.chars().take(6).collect();
        while padded.chars().count() < 6 {
            padded.push(' ');
        }
        std::borrow::Cow::Owned(padded)
    };
    Ok(LruInsertion {
        folio,
        pfn: f.pfn("pfn")?,
        lru: f.int("lru")?,
        flags,
    })
}

/// Parse a `pagemap:mm_lru_activate` payload.
pub fn lru_activate(payload: &str) -> Result<LruActivate<'_>, LineError> {
    let f = Fields::new(payload);
    Ok(LruActivate {
        folio: f.str_of(&["folio", "page"], "a folio= field")?,
        pfn: f.pfn("pfn")?,
    })
}

/// Parse a `kmem:mm_page_alloc` payload.
pub fn page_alloc(payload: &str) -> Result<PageAlloc<'_>, LineError> {
    let f = Fields::new(payload);
    Ok(PageAlloc {
        page: f.str("page")?,
        pfn: f.pfn("pfn")?,
        order: f.int("order")?,
        migratetype: f.int("migratetype")?,
        gfp_flags: f.str("gfp_flags")?,
    })
}

/// Parse a `kmem:mm_page_free` / `mm_page_free_batched` payload.
pub fn page_free(payload: &str) -> Result<PageFree<'_>, LineError> {
    let f = Fields::new(payload);
    Ok(PageFree {
        page: f.str("page")?,
        pfn: f.pfn("pfn")?,
        order: f.int("order")?,
    })
}

/// Parse a `huge_memory:mm_khugepaged_scan_pmd` payload.
pub fn khugepaged_scan_pmd(payload: &str) -> Result<KhugepagedScanPmd, LineError> {
    let f = Fields::new(payload);
    Ok(KhugepagedScanPmd {
        mm: f.string("mm")?,
        scan_pfn: f.pfn("scan_pfn")?,
        writable: f.opt_int("writable")?,
        referenced: f.int("referenced")?,
        none_or_zero: f.int("none_or_zero")?,
        status: f.string("status")?,
        unmapped: f.int("unmapped")?,
    })
}

/// Parse a `huge_memory:mm_collapse_huge_page` payload.
pub fn collapse_huge_page(payload: &str) -> Result<CollapseHugePage, LineError> {
    let f = Fields::new(payload);
    Ok(CollapseHugePage {
        mm: f.string("mm")?,
        isolated: f.int("isolated")?,
        status: f.string("status")?,
    })
}

/// Parse a `huge_memory:mm_collapse_huge_page_isolate` payload.
pub fn collapse_huge_page_isolate(payload: &str) -> Result<CollapseHugePageIsolate, LineError> {
    let f = Fields::new(payload);
    Ok(CollapseHugePageIsolate {
        scan_pfn: f.pfn("scan_pfn")?,
        none_or_zero: f.int("none_or_zero")?,
        referenced: f.int("referenced")?,
        writable: f.opt_int("writable")?,
        status: f.string("status")?,
    })
}

/// Parse a `huge_memory:mm_collapse_huge_page_swapin` payload.
pub fn collapse_huge_page_swapin(payload: &str) -> Result<CollapseHugePageSwapin, LineError> {
    let f = Fields::new(payload);
    Ok(CollapseHugePageSwapin {
        mm: f.string("mm")?,
        swapped_in: f.int("swapped_in")?,
        referenced: f.int("referenced")?,
        ret: f.int("ret")?,
    })
}

/// Parse the payload of the `huge_memory:mm_collapse_huge_page*` event named `event` (name
/// without the system); a name outside the family is an error.
pub fn collapse_event(event: &str, payload: &str) -> Result<CollapseEvent, LineError> {
    match event {
        "mm_collapse_huge_page" => collapse_huge_page(payload).map(CollapseEvent::Collapse),
        "mm_collapse_huge_page_isolate" => {
            collapse_huge_page_isolate(payload).map(CollapseEvent::Isolate)
        }
        "mm_collapse_huge_page_swapin" => {
            collapse_huge_page_swapin(payload).map(CollapseEvent::Swapin)
        }
        _ => Err(LineError::expected(
            "mm_collapse_huge_page, mm_collapse_huge_page_isolate or mm_collapse_huge_page_swapin",
            event,
        )),
    }
}

/// Parse a `vmscan:mm_vmscan_*` payload. Integer fields that are not integers are errors.
pub fn vmscan(payload: &str) -> Result<Vmscan, LineError> {
    let mut v = Vmscan::default();
    for (k, val) in key_values(payload) {
        match k {
            "nid" => v.nid = Some(int(val, "an integer nid")?),
            "order" => v.order = Some(int(val, "an integer order")?),
            "gfp_flags" => v.gfp_flags = Some(val.to_string()),
            "classzone" | "classzone_idx" => v.classzone = Some(int(val, "an integer classzone")?),
            "nr_requested" => v.nr_requested = Some(int(val, "an integer nr_requested")?),
            "nr_scanned" => v.nr_scanned = Some(int(val, "an integer nr_scanned")?),
            "nr_skipped" => v.nr_skipped = Some(int(val, "an integer nr_skipped")?),
            "nr_taken" => v.nr_taken = Some(int(val, "an integer nr_taken")?),
            "nr_reclaimed" => v.nr_reclaimed = Some(int(val, "an integer nr_reclaimed")?),
            "priority" => v.priority = Some(int(val, "an integer priority")?),
            "lru" => v.lru = Some(val.to_string()),
            "flags" => v.flags = Some(val.to_string()),
            _ => v.other.push((k.to_string(), val.to_string())),
        }
    }
    Ok(v)
}

/// Parse an `mmap_lock:*` payload.
pub fn mmap_lock(payload: &str) -> Result<MmapLock, LineError> {
    let f = Fields::new(payload);
    Ok(MmapLock {
        mm: f.string("mm")?,
        write: boolean(f.str("write")?)?,
        success: f.get("success").map_or(Ok(true), boolean)?,
    })
}

/// Parse a `syscalls:sys_enter_madvise` payload (`name: value` pairs, comma-separated: the
/// syscall tracer's format, not `key=value`).
pub fn madvise(payload: &str) -> Result<Madvise, LineError> {
    let mut start = None;
    let mut len = None;
    let mut behavior = None;
    for part in payload.split(',') {
        let (k, v) = part
            .trim()
            .split_once(": ")
            .ok_or_else(|| LineError::expected("\"name: value\"", part))?;
        let v = v.trim();
        let num = |what| hex_or_dec(v, what, what);
        match k {
            "start" => start = Some(num("a start address")?),
            "len_in" => len = Some(num("a length")?),
            "behavior" => behavior = Some(num("an advice number")? as u32),
            _ => {}
        }
    }
    match (start, len, behavior) {
        (Some(start), Some(len), Some(behavior)) => Ok(Madvise {
            start,
            len,
            behavior,
        }),
        _ => Err(LineError::expected(
            "start:, len_in: and behavior: fields",
            payload,
        )),
    }
}

/// One `name value` line of `/proc/vmstat`.
pub fn vmstat_line(line: &str) -> Result<(&str, u64), LineError> {
    let mut it = line.split_ascii_whitespace();
    match (it.next(), it.next(), it.next()) {
        (Some(k), Some(v), None) => Ok((k, int(v, "a counter value")?)),
        _ => Err(LineError::expected("\"name value\"", line)),
    }
}

/// The `key=value` pairs of one line of a capture's meta or workload output
/// (`task=hot1 pid=8169 start=0x7f… len=134217728`); a value runs to the next ` key=`.
pub fn kv_line(line: &str) -> Vec<(&str, &str)> {
    key_values(line)
        .into_iter()
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn payload_contention_begin_perf_and_ftrace_pointers() {
        let b = contention_begin("0xffff888102abc698 (flags=SPIN)").unwrap();
        assert_eq!(b.lock, "0xffff888102abc698");
        assert_eq!(b.flags, "SPIN");
        let b = contention_begin("00000000283d31fc (flags=SPIN|READ)").unwrap();
        assert_eq!((b.lock, b.flags), ("00000000283d31fc", "SPIN|READ"));
        assert_eq!(contention_begin("0xc0 (flags=)").unwrap().flags, "");
        assert!(contention_begin("0xc0").is_err());
    }

    #[test]
    fn payload_contention_end_negative_ret() {
        let e = contention_end("0xffff888102abc698 (ret=-4)").unwrap();
        assert_eq!(e.ret, -4);
    }

    #[test]
    fn payload_lru_insertion_flags_with_trailing_spaces() {
        // perf script 6.1 on 6.18, trailing space kept
        let i = lru_insertion("folio=0xffffea0004f3a300 pfn=0x13ce8c lru=0 flags=Ma bd ").unwrap();
        assert_eq!(i.pfn, 0x13ce8c);
        assert_eq!(i.lru, 0);
        assert_eq!(i.flags, "Ma bd ");
        // trimmed by a mail client: padded back
        let i = lru_insertion("folio=00000000aa pfn=0x10 lru=1 flags= f").unwrap();
        assert_eq!(i.flags, " f    ");
        // pre-5.14 decimal pfn, page=
        let i = lru_insertion("page=0xffffea0001 pfn=1534487 lru=2 flags= f    ").unwrap();
        assert_eq!((i.folio, i.pfn), ("0xffffea0001", 1534487));
    }

    #[test]
    fn payload_page_alloc_and_free() {
        let a = page_alloc("page=0x164e20 pfn=0x164e20 order=2 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_ZERO|__GFP_COMP").unwrap();
        assert_eq!((a.pfn, a.order, a.migratetype), (0x164e20, 2, 1));
        assert_eq!(a.gfp_flags, "GFP_HIGHUSER_MOVABLE|__GFP_ZERO|__GFP_COMP");
        let f = page_free("page=00000000a529997b pfn=0x139e11 order=0").unwrap();
        assert_eq!((f.pfn, f.order), (0x139e11, 0));
        assert!(page_alloc("page=0x1 pfn=zz order=0 migratetype=0 gfp_flags=none").is_err());
        // a missing field is named in the error, with the payload quoted
        let e = page_free("page=00000000a529997b order=0").unwrap_err();
        assert_eq!(
            e.to_string(),
            "expected a pfn= field, got \"page=00000000a529997b order=0\""
        );
    }

    #[test]
    fn payload_key_values_commas_and_spaces_in_values() {
        let kv = key_values("mm=00000000283d31fc, scan_pfn=0x2ae4bd, writable=0, referenced=512, none_or_zero=0, status=no_writable_page, unmapped=0");
        assert_eq!(kv[0], ("mm", "00000000283d31fc"));
        assert_eq!(kv[5], ("status", "no_writable_page"));
        assert_eq!(kv.len(), 7);
        let kv = key_values(
            "prev_comm=CPU 0/KVM prev_pid=42 prev_state=R+ ==> next_comm=swapper/0 next_pid=0",
        );
        assert_eq!(kv[0], ("prev_comm", "CPU 0/KVM"));
        assert_eq!(kv[2], ("prev_state", "R+ ==>"));
        assert_eq!(kv[3], ("next_comm", "swapper/0"));
    }

    /// `key_values` as it was written first (token starts in one pass, pairs in a second),
    /// the reference for the one-pass version.
    fn key_values_two_pass(payload: &str) -> Vec<(&str, &str)> {
        let bytes = payload.as_bytes();
        let mut starts = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if i == 0 || bytes[i - 1] == b' ' || bytes[i - 1] == b',' {
                let mut j = i;
                while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
                    j += 1;
                }
                if j > i && j < bytes.len() && bytes[j] == b'=' {
                    starts.push((i, j));
                    i = j + 1;
                    continue;
                }
            }
            i += 1;
        }
        let mut out = Vec::new();
        match starts.first() {
            Some(&(first, _)) if !payload[..first].trim().is_empty() => {
                out.push(("", payload[..first].trim()))
            }
            None if !payload.trim().is_empty() => out.push(("", payload.trim())),
            _ => {}
        }
        for (n, &(ks, ke)) in starts.iter().enumerate() {
            let vend = starts.get(n + 1).map_or(payload.len(), |&(s, _)| s);
            let v = payload[ke + 1..vend]
                .trim_end_matches(' ')
                .trim_end_matches(',');
            out.push((&payload[ks..ke], v));
        }
        out
    }

    #[test]
    fn key_values_splits_as_the_two_pass_reference() {
        // every string of up to 6 pieces from an alphabet of the separators and key shapes
        let parts = ["a", "k_1", "=", " ", ",", ", ", "0x1f", "=>", "é", "\t"];
        let checked = crate::test_strings::each_string(&parts, 6, |s| {
            assert_eq!(key_values(s), key_values_two_pass(s), "{s:?}");
        });
        assert!(checked > 1_000_000, "{checked}");
    }

    #[test]
    fn payload_khugepaged_scan_pmd_lkml_and_6_18_lines() {
        // shared/corpus/ftrace/lkml-mm_khugepaged_scan_pmd-line.txt
        let k = khugepaged_scan_pmd("mm=00000000283d31fc, scan_pfn=0x2ae4bd, writable=0, referenced=512, none_or_zero=0, status=no_writable_page, unmapped=0").unwrap();
        assert_eq!(k.mm, "00000000283d31fc");
        assert_eq!(k.scan_pfn, 0x2ae4bd);
        assert_eq!(
            (k.writable, k.referenced, k.none_or_zero),
            (Some(0), 512, 0)
        );
        assert_eq!(k.status, "no_writable_page");
        assert_eq!(k.unmapped, 0);
        // fixtures/lazyfree/khugepaged-r1/events.txt.gz (kernel 6.18, perf 6.1): no writable=
        let s = khugepaged_scan_pmd("mm=0xffff8884b5ddabc0, scan_pfn=0x3a689a, referenced=512, none_or_zero=0, status=succeeded, unmapped=0").unwrap();
        assert_eq!(
            (s.mm.as_str(), s.scan_pfn, s.writable, s.status.as_str()),
            ("0xffff8884b5ddabc0", 0x3a689a, None, "succeeded")
        );
        assert!(khugepaged_scan_pmd(
            "mm=0x1, scan_pfn=0x2, writable=x, referenced=0, none_or_zero=0, status=a, unmapped=0"
        )
        .is_err());
        // every kernel prints unmapped=: a line without it is damaged
        let e = khugepaged_scan_pmd(
            "mm=0x1, scan_pfn=0x2, referenced=0, none_or_zero=0, status=succeeded",
        )
        .unwrap_err();
        assert!(e.to_string().contains("an unmapped= field"), "{e}");
        assert!(khugepaged_scan_pmd("mm=0x1, status=succeeded").is_err());
    }

    #[test]
    fn payload_collapse_family_by_name() {
        // fixtures/lazyfree/khugepaged-r1/events.txt.gz (kernel 6.18, perf 6.1)
        let c = collapse_huge_page("mm=0xffff8884b5ddabc0, isolated=1, status=succeeded").unwrap();
        assert_eq!((c.isolated, c.status.as_str()), (1, "succeeded"));
        let i = collapse_huge_page_isolate(
            "scan_pfn=0x3a689a, none_or_zero=0, referenced=512, status=succeeded",
        )
        .unwrap();
        assert_eq!(
            (i.scan_pfn, i.none_or_zero, i.writable),
            (0x3a689a, 0, None)
        );
        // before 6.18: writable=
        let x = collapse_event(
            "mm_collapse_huge_page_isolate",
            "scan_pfn=0x1f2, none_or_zero=3, referenced=0, writable=1, status=succeeded",
        );
        match x {
            Ok(CollapseEvent::Isolate(i)) => assert_eq!((i.scan_pfn, i.writable), (0x1f2, Some(1))),
            other => panic!("{other:?}"),
        }
        let x = collapse_event(
            "mm_collapse_huge_page_swapin",
            "mm=00000000a1, swapped_in=7, referenced=2, ret=1",
        );
        match x {
            Ok(CollapseEvent::Swapin(s)) => assert_eq!((s.swapped_in, s.ret), (7, 1)),
            other => panic!("{other:?}"),
        }
        // recent mm patches add order=: ignored
        assert!(collapse_huge_page("mm=0x1, isolated=1, status=succeeded, order=9").is_ok());
        assert!(collapse_huge_page("mm=0x1, status=succeeded").is_err());
        assert!(collapse_event("mm_collapse_huge_page_foo", "mm=0x1").is_err());
    }

    #[test]
    fn payload_vmscan_and_lru_activate() {
        let v = vmscan("classzone=2 order=0 nr_requested=32 nr_scanned=32 nr_skipped=0 nr_taken=32 lru=inactive_file").unwrap();
        assert_eq!(
            (v.classzone, v.nr_taken, v.lru.as_deref()),
            (Some(2), Some(32), Some("inactive_file"))
        );
        let v =
            vmscan("nid=0 usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK")
                .unwrap();
        assert_eq!(v.nid, Some(0));
        assert_eq!(
            v.other[2],
            (
                "reason".to_string(),
                "VMSCAN_THROTTLE_WRITEBACK".to_string()
            )
        );
        assert!(vmscan("nid=x").is_err());
        let a = lru_activate("folio=00000000deadbeef pfn=0x1234").unwrap();
        assert_eq!((a.folio, a.pfn), ("00000000deadbeef", 0x1234));
    }

    // lines copied from fixtures/lazyfree/khugepaged-r1/events.txt.gz (kernel 6.18, perf 6.1)
    #[test]
    fn payload_mmap_lock_madvise_and_snapshots() {
        let m = mmap_lock("mm=0xffff8884b5ddabc0 memcg_id=7856 write=true success=true").unwrap();
        assert!(m.write && m.success);
        let m = mmap_lock("mm=0xffff8884b5ddabc0 memcg_id=7856 write=false").unwrap();
        assert!(!m.write && m.success);
        let a = madvise("start: 0x7f56a5a00000, len_in: 0x08000000, behavior: 0x00000008").unwrap();
        assert_eq!(
            (a.start, a.len, a.behavior),
            (0x7f56a5a00000, 128 << 20, MADV_FREE)
        );
        assert!(madvise("start: 0x7f56a5a00000, len_in: 0x08000000").is_err());
        assert_eq!(
            vmstat_line("thp_split_pmd 512").unwrap(),
            ("thp_split_pmd", 512)
        );
        assert!(vmstat_line("thp_split_pmd x").is_err());
        assert_eq!(
            kv_line("task=hot1 pid=8169"),
            vec![("task", "hot1"), ("pid", "8169")]
        );
    }
}

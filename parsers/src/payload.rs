//! Typed payloads of the tracepoints the models use (FORMATS.md §2.3, MODELS.md §2).
//!
//! Payload text is kept raw in [`crate::event::Event`] and parsed here on demand. Pointers are
//! kept as printed (`%p` is hashed without `0x` in ftrace, real with `0x` in perf script and
//! trace-cmd): they are identities, comparable within one file, not numbers.
//! Any other event's `key=value` pairs come from [`key_values`].

use crate::error::LineError;

/// `lock:contention_begin`: `"%p (flags=%s)"`, flags `|`-joined from SPIN READ WRITE RT PERCPU
/// MUTEX (empty for a semaphore).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentionBegin {
    /// Lock address as printed.
    pub lock: String,
    /// Flag names as printed (`SPIN`, `SPIN|READ`, ``).
    pub flags: String,
}

/// `lock:contention_end`: `"%p (ret=%d)"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentionEnd {
    /// Lock address as printed.
    pub lock: String,
    /// Return value (0, or -4 = -EINTR for interrupted sleeping locks).
    pub ret: i32,
}

/// `pagemap:mm_lru_insertion`: `"folio=%p pfn=0x%lx lru=%d flags=%s%s%s%s%s%s"` (v5.16+;
/// `page=` and decimal pfn before).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LruInsertion {
    /// Folio (or page) pointer as printed.
    pub folio: String,
    /// Page frame number.
    pub pfn: u64,
    /// LRU list: 0 inactive_anon, 1 active_anon, 2 inactive_file, 3 active_file, 4 unevictable.
    pub lru: i32,
    /// The 6-character flag field, padded back to 6 when trailing spaces were trimmed:
    /// `M` mlocked, `a`/`f` anon/file, `s` swapbacked, `b` reclaim, `d` dirty, `B` unevictable.
    pub flags: String,
}

/// `kmem:mm_page_alloc`: `"page=%p pfn=0x%lx order=%d migratetype=%d gfp_flags=%s"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageAlloc {
    /// Page pointer as printed.
    pub page: String,
    /// Page frame number (0 on failed allocations).
    pub pfn: u64,
    /// Allocation order (folio = 2^order pages).
    pub order: u32,
    /// Migrate type.
    pub migratetype: i32,
    /// GFP flags as printed.
    pub gfp_flags: String,
}

/// `kmem:mm_page_free` / `mm_page_free_batched`: `"page=%p pfn=0x%lx order=%d"` (the batched
/// variant prints a literal order 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageFree {
    /// Page pointer as printed.
    pub page: String,
    /// Page frame number.
    pub pfn: u64,
    /// Order.
    pub order: u32,
}

/// Split `key=value` pairs separated by spaces or `, ` (khugepaged events use commas).
///
/// A value runs to the next ` key=` (so values with spaces, like `next_comm=CPU 0/KVM`, stay
/// whole); text before the first key is returned under the empty key.
pub fn key_values(payload: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    // Byte offsets where a `key=` token begins.
    let bytes = payload.as_bytes();
    let mut starts = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let at_token = i == 0 || bytes[i - 1] == b' ' || bytes[i - 1] == b',';
        if at_token {
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
    if let Some(&(first, _)) = starts.first() {
        let pre = payload[..first].trim();
        if !pre.is_empty() {
            out.push(("", pre));
        }
    } else if !payload.trim().is_empty() {
        out.push(("", payload.trim()));
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

fn get<'a>(
    kv: &[(&'a str, &'a str)],
    key: &'static str,
    payload: &str,
) -> Result<&'a str, LineError> {
    kv.iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| *v)
        .ok_or_else(|| LineError::Expected {
            what: key_what(key),
            got: crate::error::cut(payload, 60),
        })
}

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
        _ => "a key=value field",
    }
}

/// pfn: `0x1a2b` (v5.14+) or decimal (older kernels).
fn pfn(v: &str) -> Result<u64, LineError> {
    match v.strip_prefix("0x") {
        Some(h) => {
            u64::from_str_radix(h, 16).map_err(|_| LineError::expected("a hexadecimal pfn", v))
        }
        None => v.parse().map_err(|_| LineError::expected("a pfn", v)),
    }
}

fn int<T: std::str::FromStr>(v: &str, what: &'static str) -> Result<T, LineError> {
    v.parse().map_err(|_| LineError::expected(what, v))
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

/// Parse a `contention_begin` payload.
pub fn contention_begin(payload: &str) -> Result<ContentionBegin, LineError> {
    let (lock, flags) = ptr_paren(payload, "flags")?;
    Ok(ContentionBegin {
        lock: lock.to_string(),
        flags: flags.to_string(),
    })
}

/// Parse a `contention_end` payload.
pub fn contention_end(payload: &str) -> Result<ContentionEnd, LineError> {
    let (lock, ret) = ptr_paren(payload, "ret")?;
    Ok(ContentionEnd {
        lock: lock.to_string(),
        ret: int(ret, "an integer ret")?,
    })
}

/// Parse an `mm_lru_insertion` payload.
pub fn lru_insertion(payload: &str) -> Result<LruInsertion, LineError> {
    // flags= is a fixed 6-char field of letters or spaces: take it positionally, not by token.
    let (head, flags) = match payload.find("flags=") {
        Some(i) => (&payload[..i], &payload[i + 6..]),
        None => return Err(LineError::expected("a flags= field", payload)),
    };
    let kv = key_values(head);
    let folio = kv
        .iter()
        .find(|(k, _)| *k == "folio" || *k == "page")
        .map(|(_, v)| *v)
        .ok_or_else(|| LineError::expected("a folio= field", payload))?;
    let mut f: String = flags.chars().take(6).collect();
    while f.chars().count() < 6 {
        f.push(' ');
    }
    Ok(LruInsertion {
        folio: folio.to_string(),
        pfn: pfn(get(&kv, "pfn", payload)?)?,
        lru: int(get(&kv, "lru", payload)?, "an integer lru")?,
        flags: f,
    })
}

/// Parse an `mm_page_alloc` payload.
pub fn page_alloc(payload: &str) -> Result<PageAlloc, LineError> {
    let kv = key_values(payload);
    Ok(PageAlloc {
        page: get(&kv, "page", payload)?.to_string(),
        pfn: pfn(get(&kv, "pfn", payload)?)?,
        order: int(get(&kv, "order", payload)?, "an integer order")?,
        migratetype: int(get(&kv, "migratetype", payload)?, "an integer migratetype")?,
        gfp_flags: get(&kv, "gfp_flags", payload)?.to_string(),
    })
}

/// Parse an `mm_page_free` / `mm_page_free_batched` payload.
pub fn page_free(payload: &str) -> Result<PageFree, LineError> {
    let kv = key_values(payload);
    Ok(PageFree {
        page: get(&kv, "page", payload)?.to_string(),
        pfn: pfn(get(&kv, "pfn", payload)?)?,
        order: int(get(&kv, "order", payload)?, "an integer order")?,
    })
}

/// `pagemap:mm_lru_activate`: `"folio=%p pfn=0x%lx"` (v5.16+; `page=` and decimal pfn before).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LruActivate {
    /// Folio (or page) pointer as printed.
    pub folio: String,
    /// Page frame number.
    pub pfn: u64,
}

/// Parse an `mm_lru_activate` payload.
pub fn lru_activate(payload: &str) -> Result<LruActivate, LineError> {
    let kv = key_values(payload);
    let folio = kv
        .iter()
        .find(|(k, _)| *k == "folio" || *k == "page")
        .map(|(_, v)| *v)
        .ok_or_else(|| LineError::expected("a folio= field", payload))?;
    Ok(LruActivate {
        folio: folio.to_string(),
        pfn: pfn(get(&kv, "pfn", payload)?)?,
    })
}

/// `huge_memory:mm_khugepaged_scan_pmd`: `"mm=%p, scan_pfn=0x%lx, writable=%d,
/// referenced=%d, none_or_zero=%d, status=%s, unmapped=%d"` (`unmapped` since v4.5; 6.18
/// prints no `writable=`, as the real capture in `fixtures/lazyfree` shows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KhugepagedScanPmd {
    /// `mm_struct` pointer as printed.
    pub mm: String,
    /// First pfn of the scanned PMD range (0 when no page was found).
    pub scan_pfn: u64,
    /// A writable pte was seen; absent on kernels that no longer print it.
    pub writable: Option<i32>,
    /// Referenced ptes.
    pub referenced: i32,
    /// `pte_none` or zero-page ptes.
    pub none_or_zero: i32,
    /// Scan result (`succeeded`, `no_writable_page`, ...).
    pub status: String,
    /// Swapped-out ptes; absent before v4.5.
    pub unmapped: Option<i32>,
}

/// Parse an `mm_khugepaged_scan_pmd` payload.
pub fn khugepaged_scan_pmd(payload: &str) -> Result<KhugepagedScanPmd, LineError> {
    let kv = key_values(payload);
    Ok(KhugepagedScanPmd {
        mm: get(&kv, "mm", payload)?.to_string(),
        scan_pfn: pfn(get(&kv, "scan_pfn", payload)?)?,
        writable: opt_int(&kv, "writable")?,
        referenced: int(get(&kv, "referenced", payload)?, "an integer referenced")?,
        none_or_zero: int(
            get(&kv, "none_or_zero", payload)?,
            "an integer none_or_zero",
        )?,
        status: get(&kv, "status", payload)?.to_string(),
        unmapped: opt_int(&kv, "unmapped")?,
    })
}

/// The `huge_memory:mm_collapse_huge_page*` family in one shape; each event fills its fields:
/// `mm_collapse_huge_page` `"mm=%p, isolated=%d, status=%s"`,
/// `_isolate` `"scan_pfn=0x%lx, none_or_zero=%d, referenced=%d, writable=%d, status=%s"`,
/// `_swapin` `"mm=%p, swapped_in=%d, referenced=%d, ret=%d"`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CollapseHugePage {
    /// `mm_struct` pointer as printed.
    pub mm: Option<String>,
    /// `_isolate`: first pfn.
    pub scan_pfn: Option<u64>,
    /// Pages isolated (`mm_collapse_huge_page`).
    pub isolated: Option<i32>,
    /// Pages swapped in (`_swapin`).
    pub swapped_in: Option<i32>,
    /// `pte_none` or zero-page ptes (`_isolate`).
    pub none_or_zero: Option<i32>,
    /// Referenced ptes.
    pub referenced: Option<i32>,
    /// A writable pte was seen (`_isolate`).
    pub writable: Option<i32>,
    /// Return value (`_swapin`).
    pub ret: Option<i32>,
    /// Result name.
    pub status: Option<String>,
}

/// Parse any `mm_collapse_huge_page*` payload (fields absent from the text are `None`).
pub fn collapse_huge_page(payload: &str) -> Result<CollapseHugePage, LineError> {
    let kv = key_values(payload);
    let s = |k: &str| {
        kv.iter()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| v.to_string())
    };
    let scan_pfn = match kv.iter().find(|(k, _)| *k == "scan_pfn") {
        Some((_, v)) => Some(pfn(v)?),
        None => None,
    };
    Ok(CollapseHugePage {
        mm: s("mm"),
        scan_pfn,
        isolated: opt_int(&kv, "isolated")?,
        swapped_in: opt_int(&kv, "swapped_in")?,
        none_or_zero: opt_int(&kv, "none_or_zero")?,
        referenced: opt_int(&kv, "referenced")?,
        writable: opt_int(&kv, "writable")?,
        ret: opt_int(&kv, "ret")?,
        status: s("status"),
    })
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

/// Parse a `mm_vmscan_*` payload. Integer fields that are not integers are errors.
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

fn opt_int<T: std::str::FromStr>(
    kv: &[(&str, &str)],
    key: &'static str,
) -> Result<Option<T>, LineError> {
    match kv.iter().find(|(k, _)| *k == key) {
        Some((_, v)) => Ok(Some(int(v, "an integer field")?)),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_contention_begin_perf_and_ftrace_pointers() {
        let b = contention_begin("0xffff888102abc698 (flags=SPIN)").unwrap();
        assert_eq!(b.lock, "0xffff888102abc698");
        assert_eq!(b.flags, "SPIN");
        let b = contention_begin("00000000283d31fc (flags=SPIN|READ)").unwrap();
        assert_eq!(
            (b.lock.as_str(), b.flags.as_str()),
            ("00000000283d31fc", "SPIN|READ")
        );
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
        assert_eq!((i.folio.as_str(), i.pfn), ("0xffffea0001", 1534487));
    }

    #[test]
    fn payload_page_alloc_and_free() {
        let a = page_alloc("page=0x164e20 pfn=0x164e20 order=2 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_ZERO|__GFP_COMP").unwrap();
        assert_eq!((a.pfn, a.order, a.migratetype), (0x164e20, 2, 1));
        assert_eq!(a.gfp_flags, "GFP_HIGHUSER_MOVABLE|__GFP_ZERO|__GFP_COMP");
        let f = page_free("page=00000000a529997b pfn=0x139e11 order=0").unwrap();
        assert_eq!((f.pfn, f.order), (0x139e11, 0));
        assert!(page_alloc("page=0x1 pfn=zz order=0 migratetype=0 gfp_flags=none").is_err());
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

    #[test]
    fn payload_khugepaged_scan_pmd_lkml_line() {
        // shared/corpus/ftrace/lkml-mm_khugepaged_scan_pmd-line.txt
        let k = khugepaged_scan_pmd("mm=00000000283d31fc, scan_pfn=0x2ae4bd, writable=0, referenced=512, none_or_zero=0, status=no_writable_page, unmapped=0").unwrap();
        assert_eq!(k.mm, "00000000283d31fc");
        assert_eq!(k.scan_pfn, 0x2ae4bd);
        assert_eq!(
            (k.writable, k.referenced, k.none_or_zero),
            (Some(0), 512, 0)
        );
        assert_eq!(k.status, "no_writable_page");
        assert_eq!(k.unmapped, Some(0));
        assert!(khugepaged_scan_pmd(
            "mm=0x1, scan_pfn=0x2, writable=x, referenced=0, none_or_zero=0, status=a"
        )
        .is_err());
    }

    #[test]
    fn payload_collapse_family_and_vmscan() {
        let c = collapse_huge_page("mm=00000000a1, isolated=1, status=succeeded").unwrap();
        assert_eq!(
            (c.isolated, c.status.as_deref()),
            (Some(1), Some("succeeded"))
        );
        assert_eq!(c.scan_pfn, None);
        let c = collapse_huge_page(
            "scan_pfn=0x1f2, none_or_zero=3, referenced=0, writable=1, status=succeeded",
        )
        .unwrap();
        assert_eq!((c.scan_pfn, c.writable, c.mm), (Some(0x1f2), Some(1), None));
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
        assert_eq!((a.folio.as_str(), a.pfn), ("00000000deadbeef", 0x1234));
    }
}

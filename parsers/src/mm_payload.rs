//! Payloads of the khugepaged, `mmap_lock` and `madvise` events, and the plain-text snapshot
//! files (`/proc/vmstat`, `key=value` lines) that the work what-ifs read (issue 7).
//!
//! Formats, as printed by kernel 6.18 through `perf script` (tracefs prints the same text with
//! `%p` values hashed instead of `0x…`):
//!
//! ```text
//! huge_memory:mm_khugepaged_scan_pmd: mm=0xffff8884b5ddabc0, scan_pfn=0x3a689a, referenced=512, none_or_zero=0, status=succeeded, unmapped=0
//! huge_memory:mm_collapse_huge_page: mm=0xffff8884b5ddabc0, isolated=1, status=succeeded
//! huge_memory:mm_collapse_huge_page_isolate: scan_pfn=0x3a689a, none_or_zero=0, referenced=512, status=succeeded
//! mmap_lock:mmap_lock_acquire_returned: mm=0xffff8884b5ddabc0 memcg_id=7856 write=true success=true
//! syscalls:sys_enter_madvise: start: 0x7f56a5a00000, len_in: 0x08000000, behavior: 0x00000008
//! ```
//!
//! Older kernels print `writable=` in the scan events and `memcg_path=` in `mmap_lock`; the
//! readers take the fields they need by name and ignore the rest.

use crate::error::LineError;
use crate::payload::key_values;

/// `huge_memory:mm_khugepaged_scan_pmd`: one PMD range scanned by khugepaged
/// (`hpage_collapse_scan_pmd()`); fired after the collapse, when there was one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanPmd {
    /// The mm, as printed (`0x…` in perf script, hashed in ftrace).
    pub mm: String,
    /// pfn of the last page looked at.
    pub scan_pfn: u64,
    /// Young/referenced PTEs counted.
    pub referenced: u32,
    /// Empty or zero-page PTEs counted.
    pub none_or_zero: u32,
    /// `enum scan_result` name: `succeeded`, `lack_referenced_page`, `page_lazyfree` (patched).
    pub status: String,
    /// Swap PTEs counted.
    pub unmapped: u32,
}

/// `huge_memory:mm_collapse_huge_page`: the end of `collapse_huge_page()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollapseHugePage {
    /// The mm, as printed.
    pub mm: String,
    /// 1 when the small folios were isolated (the kernel prints a bool as 0/1).
    pub isolated: u32,
    /// `enum scan_result` name.
    pub status: String,
}

/// `huge_memory:mm_collapse_huge_page_isolate`: the end of `__collapse_huge_page_isolate()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollapseIsolate {
    /// pfn of the last page looked at.
    pub scan_pfn: u64,
    /// Empty or zero-page PTEs: the range has `512 - none_or_zero` pages to isolate.
    pub none_or_zero: u32,
    /// Young/referenced PTEs counted.
    pub referenced: u32,
    /// `enum scan_result` name.
    pub status: String,
}

/// `mmap_lock:mmap_lock_acquire_returned` (also `_start_locking`, `_released`): in the
/// context of the task that takes the lock, so it ties a task to its mm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MmapLock {
    /// The mm, as printed.
    pub mm: String,
    /// Write (exclusive) acquisition.
    pub write: bool,
    /// `success=` (true when absent: `_start_locking` and `_released` have none).
    pub success: bool,
}

/// `syscalls:sys_enter_madvise` (`start: 0x…, len_in: 0x…, behavior: 0x…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Madvise {
    /// Start address.
    pub start: u64,
    /// Length in bytes as passed (the kernel rounds it up to pages).
    pub len: u64,
    /// Advice: 4 `MADV_DONTNEED`, 8 `MADV_FREE`, 14 `MADV_HUGEPAGE`, 25 `MADV_COLLAPSE`.
    pub behavior: u32,
}

/// `MADV_FREE` advice value.
pub const MADV_FREE: u32 = 8;
/// `MADV_HUGEPAGE` advice value.
pub const MADV_HUGEPAGE: u32 = 14;

fn field<'a>(kv: &[(&'a str, &'a str)], key: &str, payload: &str) -> Result<&'a str, LineError> {
    kv.iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| *v)
        .ok_or_else(|| LineError::expected("a key=value field of the event", payload))
}

fn num<T: std::str::FromStr>(v: &str, what: &'static str) -> Result<T, LineError> {
    v.parse().map_err(|_| LineError::expected(what, v))
}

/// `0x1a2b` or decimal.
fn hex_or_dec(v: &str, what: &'static str) -> Result<u64, LineError> {
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).map_err(|_| LineError::expected(what, v)),
        None => v.parse().map_err(|_| LineError::expected(what, v)),
    }
}

fn boolean(v: &str) -> Result<bool, LineError> {
    match v {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(LineError::expected("true or false", v)),
    }
}

/// Parse a `mm_khugepaged_scan_pmd` payload.
pub fn scan_pmd(payload: &str) -> Result<ScanPmd, LineError> {
    let kv = key_values(payload);
    Ok(ScanPmd {
        mm: field(&kv, "mm", payload)?.to_string(),
        scan_pfn: hex_or_dec(field(&kv, "scan_pfn", payload)?, "a pfn")?,
        referenced: num(field(&kv, "referenced", payload)?, "a count")?,
        none_or_zero: num(field(&kv, "none_or_zero", payload)?, "a count")?,
        status: field(&kv, "status", payload)?.to_string(),
        unmapped: num(field(&kv, "unmapped", payload)?, "a count")?,
    })
}

/// Parse a `mm_collapse_huge_page` payload.
pub fn collapse_huge_page(payload: &str) -> Result<CollapseHugePage, LineError> {
    let kv = key_values(payload);
    Ok(CollapseHugePage {
        mm: field(&kv, "mm", payload)?.to_string(),
        isolated: num(field(&kv, "isolated", payload)?, "0 or 1")?,
        status: field(&kv, "status", payload)?.to_string(),
    })
}

/// Parse a `mm_collapse_huge_page_isolate` payload.
pub fn collapse_isolate(payload: &str) -> Result<CollapseIsolate, LineError> {
    let kv = key_values(payload);
    Ok(CollapseIsolate {
        scan_pfn: hex_or_dec(field(&kv, "scan_pfn", payload)?, "a pfn")?,
        none_or_zero: num(field(&kv, "none_or_zero", payload)?, "a count")?,
        referenced: num(field(&kv, "referenced", payload)?, "a count")?,
        status: field(&kv, "status", payload)?.to_string(),
    })
}

/// Parse an `mmap_lock:*` payload.
pub fn mmap_lock(payload: &str) -> Result<MmapLock, LineError> {
    let kv = key_values(payload);
    Ok(MmapLock {
        mm: field(&kv, "mm", payload)?.to_string(),
        write: boolean(field(&kv, "write", payload)?)?,
        success: match kv.iter().find(|(k, _)| *k == "success") {
            Some((_, v)) => boolean(v)?,
            None => true,
        },
    })
}

/// Parse a `syscalls:sys_enter_madvise` payload (`name: value` pairs, comma-separated).
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
        match k {
            "start" => start = Some(hex_or_dec(v, "a start address")?),
            "len_in" => len = Some(hex_or_dec(v, "a length")?),
            "behavior" => behavior = Some(hex_or_dec(v, "an advice number")? as u32),
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
        (Some(k), Some(v), None) => Ok((k, num(v, "a counter value")?)),
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
mod tests {
    use super::*;

    // lines copied from fixtures/lazyfree/khugepaged-r1/events.txt.gz (kernel 6.18, perf 6.1)
    #[test]
    fn khugepaged_payloads() {
        let s = scan_pmd("mm=0xffff8884b5ddabc0, scan_pfn=0x3a689a, referenced=512, none_or_zero=0, status=succeeded, unmapped=0").unwrap();
        assert_eq!(s.mm, "0xffff8884b5ddabc0");
        assert_eq!(
            (s.scan_pfn, s.referenced, s.none_or_zero),
            (0x3a689a, 512, 0)
        );
        assert_eq!(s.status, "succeeded");
        let c = collapse_huge_page("mm=0xffff8884b5ddabc0, isolated=1, status=succeeded").unwrap();
        assert_eq!((c.isolated, c.status.as_str()), (1, "succeeded"));
        let i =
            collapse_isolate("scan_pfn=0x3a689a, none_or_zero=0, referenced=512, status=succeeded")
                .unwrap();
        assert_eq!((i.scan_pfn, i.none_or_zero), (0x3a689a, 0));
        let m = mmap_lock("mm=0xffff8884b5ddabc0 memcg_id=7856 write=true success=true").unwrap();
        assert!(m.write && m.success);
        let a = madvise("start: 0x7f56a5a00000, len_in: 0x08000000, behavior: 0x00000008").unwrap();
        assert_eq!(
            (a.start, a.len, a.behavior),
            (0x7f56a5a00000, 128 << 20, MADV_FREE)
        );
        assert!(madvise("start: 0x7f56a5a00000, len_in: 0x08000000").is_err());
        assert!(scan_pmd("mm=0x1, status=succeeded").is_err());
        assert_eq!(
            vmstat_line("thp_split_pmd 512").unwrap(),
            ("thp_split_pmd", 512)
        );
        assert!(vmstat_line("thp_split_pmd x").is_err());
    }
}

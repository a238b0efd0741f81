//! Numbers of the perf.data format the reader's own walks over the data section use (the
//! framing check, [`super::compact`], [`super::bulk`]): record types
//! (include/uapi/linux/perf_event.h, tools/perf/util/event.h) and `sample_type` bits.

pub(super) const PERF_RECORD_MMAP: u32 = 1;
pub(super) const PERF_RECORD_LOST: u32 = 2;
/// `{ u32 pid, tid; char comm[]; struct sample_id; }`
pub(super) const PERF_RECORD_COMM: u32 = 3;
/// `{ u32 pid, ppid; u32 tid, ptid; u64 time; struct sample_id; }`
pub(super) const PERF_RECORD_FORK: u32 = 7;
pub(super) const PERF_RECORD_SAMPLE: u32 = 9;
pub(super) const PERF_RECORD_MMAP2: u32 = 10;
pub(super) const PERF_RECORD_LOST_SAMPLES: u32 = 13;
/// The first of perf's own record types (`PERF_RECORD_USER_TYPE_START`); the kernel's are below.
pub(super) const PERF_RECORD_USER_TYPE_START: u32 = 64;
/// Pipe mode: an event's attribute and ids.
pub(super) const PERF_RECORD_HEADER_ATTR: u32 = 64;
/// Pipe mode: the tracing data, its bytes following the record outside its size.
pub(super) const PERF_RECORD_HEADER_TRACING_DATA: u32 = 66;
pub(super) const PERF_RECORD_HEADER_BUILD_ID: u32 = 67;
pub(super) const PERF_RECORD_FINISHED_ROUND: u32 = 68;
/// Its AUX data follows the record, `size` (its first u64) bytes outside the record's size.
pub(super) const PERF_RECORD_AUXTRACE: u32 = 71;
/// A feature section sent as a record in pipe mode: u64 feature id, then the section.
pub(super) const PERF_RECORD_HEADER_FEATURE: u32 = 80;
/// Records in zstd frames (`perf record -z`); `COMPRESSED2` since 2025.
pub(super) const PERF_RECORD_COMPRESSED: u32 = 81;
/// The last of perf's own record types (64 up to here).
pub(super) const PERF_RECORD_FINISHED_INIT: u32 = 82;
pub(super) const PERF_RECORD_COMPRESSED2: u32 = 83;
/// `misc` of an MMAP2 record that carries a build-id instead of the inode fields.
pub(super) const PERF_RECORD_MISC_MMAP_BUILD_ID: u16 = 1 << 14;
/// `misc`'s CPU mode bits, and its two kernel modes.
pub(super) const PERF_RECORD_MISC_CPUMODE_MASK: u16 = 7;
pub(super) const PERF_RECORD_MISC_KERNEL: u16 = 1;
pub(super) const PERF_RECORD_MISC_GUEST_KERNEL: u16 = 4;

/// perf's call-chain context markers (`enum perf_callchain_context`), as u64: every ip from
/// `PERF_CONTEXT_MAX` up is a marker, and the frames after one are in its context.
pub(super) const PERF_CONTEXT_MAX: u64 = (-4095i64) as u64;
pub(super) const PERF_CONTEXT_KERNEL: u64 = (-128i64) as u64;
pub(super) const PERF_CONTEXT_USER: u64 = (-512i64) as u64;
pub(super) const PERF_CONTEXT_GUEST_KERNEL: u64 = (-2176i64) as u64;

/// `perf_event_attr.sample_type` bits, in the order a sample lays their fields out.
pub(super) mod sample {
    pub const IP: u64 = 1 << 0;
    pub const TID: u64 = 1 << 1;
    pub const TIME: u64 = 1 << 2;
    pub const ADDR: u64 = 1 << 3;
    pub const READ: u64 = 1 << 4;
    pub const CALLCHAIN: u64 = 1 << 5;
    pub const ID: u64 = 1 << 6;
    pub const CPU: u64 = 1 << 7;
    pub const PERIOD: u64 = 1 << 8;
    pub const STREAM_ID: u64 = 1 << 9;
    pub const RAW: u64 = 1 << 10;
    pub const IDENTIFIER: u64 = 1 << 16;

    /// Where a sample body of layout `t` holds its event's id: first with `IDENTIFIER`, else
    /// at `ID`'s place after the u64 fields before it; `None` without either.
    pub fn id_at(t: u64) -> Option<usize> {
        if t & IDENTIFIER != 0 {
            Some(0)
        } else if t & ID != 0 {
            Some(
                8 * [IP, TID, TIME, ADDR]
                    .iter()
                    .filter(|&&b| t & b != 0)
                    .count(),
            )
        } else {
            None
        }
    }
}

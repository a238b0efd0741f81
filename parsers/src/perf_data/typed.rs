//! Named integer fields of tracepoint samples, decoded straight from the sample's
//! `PERF_SAMPLE_RAW` bytes by the offset, size and signedness the event's own format
//! description gives (the tracing-data section, [`super::tracing`]: the description its
//! `print fmt` renders from). For a reader that wants numbers (the what-if replay's pfns,
//! orders, lock addresses) rather than the text `perf script` prints: no print fmt is
//! evaluated and no payload string is built.
//!
//! An event asked for whose format lacks a field, or has it as something other than a
//! 1/2/4/8-byte integer, is an error at its first sample; a sample whose raw payload ends
//! before a field does is an error naming the byte range it needed.

use super::print_fmt::Record;
use super::tracing::{Field, FieldKind};
use super::Attr;

/// Per attr of the file: the fields asked of its samples, in the order asked.
pub(super) struct Plan {
    per_attr: Vec<Option<AttrPlan>>,
}

enum AttrPlan {
    Fields(Vec<Field>),
    /// The format cannot give what was asked (said at the event's first sample).
    Unusable(String),
}

/// What the caller asked: (event name, `system:name` or bare `name`; its field names).
pub(super) type Want = Vec<(String, Vec<String>)>;

fn matches(want: &str, attr: &Attr) -> bool {
    match want.split_once(':') {
        Some((sys, name)) => attr.system.as_deref() == Some(sys) && attr.name == name,
        None => attr.name == want,
    }
}

impl Plan {
    /// Resolve `want` against the file's attrs. Attrs without a format (tracing data lost)
    /// get no plan: their samples keep the text path, which says what is missing.
    pub(super) fn resolve(want: &Want, attrs: &[Attr]) -> Plan {
        let per_attr = attrs
            .iter()
            .map(|a| {
                let (_, names) = want.iter().find(|(w, _)| matches(w, a))?;
                let (fmt, _) = &**a.format.as_ref()?;
                let mut fields = Vec::with_capacity(names.len());
                for n in names {
                    let Some(f) = fmt.field(n) else {
                        let have: Vec<&str> = fmt.fields.iter().map(|f| f.name.as_str()).collect();
                        return Some(AttrPlan::Unusable(format!(
                            "expected a field `{n}` in the format of tracepoint {}:{}, it has: {}",
                            fmt.system,
                            fmt.name,
                            have.join(", ")
                        )));
                    };
                    if f.kind != FieldKind::Number || !matches!(f.size, 1 | 2 | 4 | 8) {
                        return Some(AttrPlan::Unusable(format!(
                            "expected field `{n}` of tracepoint {}:{} to be a 1, 2, 4 or 8-byte integer, its format says `{}` of {} bytes",
                            fmt.system, fmt.name, f.ctype, f.size
                        )));
                    }
                    fields.push(f.clone());
                }
                Some(AttrPlan::Fields(fields))
            })
            .collect();
        Plan { per_attr }
    }

    /// Whether samples of attr `i` are decoded here.
    pub(super) fn covers(&self, i: usize) -> bool {
        matches!(self.per_attr.get(i), Some(Some(_)))
    }

    /// Decode the fields asked of attr `i` from `data` into `out` (cleared first): each
    /// sign-extended when its format says signed, else zero-extended. `Err` says what is wrong
    /// (the caller names the sample and file).
    pub(super) fn decode(
        &self,
        i: usize,
        data: &[u8],
        big_endian: bool,
        out: &mut Vec<i64>,
    ) -> Result<(), String> {
        out.clear();
        let fields = match self.per_attr.get(i) {
            Some(Some(AttrPlan::Fields(f))) => f,
            Some(Some(AttrPlan::Unusable(why))) => return Err(why.clone()),
            _ => return Ok(()),
        };
        // numbers are read by each field's offset and size: the record's format is not consulted
        let rec = Record {
            data,
            format: &EMPTY,
            big_endian,
        };
        for f in fields {
            match rec.number(f) {
                Some(v) => out.push(v),
                None => {
                    return Err(format!(
                        "expected field `{}` at raw payload bytes {}..{}, the payload is {} bytes",
                        f.name,
                        f.offset,
                        f.offset + f.size,
                        data.len()
                    ))
                }
            }
        }
        Ok(())
    }
}

static EMPTY: super::tracing::EventFormat = super::tracing::EventFormat {
    system: String::new(),
    name: String::new(),
    id: 0,
    fields: Vec::new(),
    print_fmt: String::new(),
};

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::event::Event;
    use crate::payload;
    use crate::perf_data::tests::gunzip;
    use crate::perf_data::{Options, Reader};

    const WANT: [(&str, &[&str]); 6] = [
        ("kmem:mm_page_alloc", &["pfn", "order"]),
        ("pagemap:mm_lru_insertion", &["pfn"]),
        ("kmem:mm_page_free", &["pfn", "order"]),
        ("contention_begin", &["lock_addr"]),
        ("contention_end", &["lock_addr", "ret"]),
        ("syscalls:sys_enter_madvise", &["behavior"]),
    ];

    /// Every event of the file read twice: rendered to text, and typed.
    fn both(path: &str) -> Vec<(Event, Event, Option<Vec<i64>>)> {
        let bytes = gunzip(path);
        let mut text = Reader::with_options(
            Box::new(Cursor::new(bytes.clone())),
            Options::offline(false),
        );
        let mut typed = Reader::with_options(Box::new(Cursor::new(bytes)), Options::offline(false));
        typed.typed_fields(&WANT);
        let mut out = Vec::new();
        while let Some(t) = text.next_event().unwrap() {
            let y = typed.next_event().unwrap().expect("as many typed events");
            out.push((t, y, typed.fields().map(<[i64]>::to_vec)));
        }
        assert!(typed.next_event().unwrap().is_none());
        out
    }

    #[test]
    fn typed_fields_are_the_numbers_the_print_fmt_renders() {
        let mut n = [0usize; 6];
        for path in [
            "fixtures/perfdata/micro-16K-replay/perf.data.gz",
            "fixtures/perfdata/fbatch-churn-4K/perf.data.gz",
        ] {
            for (t, y, v) in both(path) {
                assert_eq!(
                    (t.line, t.ts_ns, t.cpu, t.tid),
                    (y.line, y.ts_ns, y.cpu, y.tid)
                );
                assert_eq!(t.name, y.name);
                let Some(v) = v else {
                    assert_eq!(t.payload, y.payload, "{path}:{}", t.line);
                    continue;
                };
                assert!(y.payload.is_empty());
                let p = &t.payload;
                match t.name.as_str() {
                    "mm_page_alloc" => {
                        let a = payload::page_alloc(p).unwrap();
                        let pfn = if v[0] as u64 == u64::MAX {
                            0
                        } else {
                            v[0] as u64
                        };
                        assert_eq!((a.pfn, a.order), (pfn, v[1] as u32), "{p}");
                        n[0] += 1;
                    }
                    "mm_lru_insertion" => {
                        assert_eq!(payload::lru_insertion(p).unwrap().pfn, v[0] as u64, "{p}");
                        n[1] += 1;
                    }
                    "mm_page_free" => {
                        let f = payload::page_free(p).unwrap();
                        assert_eq!((f.pfn, f.order), (v[0] as u64, v[1] as u32), "{p}");
                        n[2] += 1;
                    }
                    "contention_begin" => {
                        let b = payload::contention_begin(p).unwrap();
                        assert_eq!(b.lock, format!("0x{:x}", v[0] as u64), "{p}");
                        n[3] += 1;
                    }
                    "contention_end" => {
                        let e = payload::contention_end(p).unwrap();
                        assert_eq!(e.lock, format!("0x{:x}", v[0] as u64), "{p}");
                        // `int ret` is signed in the format: sign-extended
                        assert_eq!(i64::from(e.ret), v[1], "{p}");
                        n[4] += 1;
                    }
                    "sys_enter_madvise" => {
                        assert_eq!(payload::madvise(p).unwrap().behavior, v[0] as u32, "{p}");
                        n[5] += 1;
                    }
                    other => panic!("{other} was not asked for"),
                }
            }
        }
        assert!(n.iter().all(|&c| c > 0), "each asked event seen: {n:?}");
    }

    #[test]
    fn a_field_the_format_lacks_is_an_error_naming_it() {
        let bytes = gunzip("fixtures/perfdata/micro-16K-replay/perf.data.gz");
        let mut r = Reader::with_options(Box::new(Cursor::new(bytes)), Options::offline(false));
        r.typed_fields(&[("contention_begin", &["lock_addr", "owner"])]);
        let err = loop {
            match r.next_event() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("no error"),
                Err(e) => break e.to_string(),
            }
        };
        assert!(err.contains("field `owner`"), "{err}");
        assert!(err.contains("lock:contention_begin"), "{err}");
        assert!(err.contains("lock_addr, flags"), "{err}");
    }

    #[test]
    fn a_payload_shorter_than_a_field_is_an_error_not_a_zero() {
        let bytes = gunzip("fixtures/perfdata/micro-16K-replay/perf.data.gz");
        let mut r = Reader::with_options(Box::new(Cursor::new(bytes)), Options::offline(false));
        r.next_event().unwrap();
        let attrs = &r.state.as_ref().unwrap().ctx.attrs;
        let want: Want = vec![("mm_page_alloc".into(), vec!["pfn".into(), "order".into()])];
        let plan = Plan::resolve(&want, attrs);
        let i = attrs
            .iter()
            .position(|a| a.name == "mm_page_alloc")
            .unwrap();
        let mut out = Vec::new();
        // the fixture's format: pfn at 8..16, order at 16..20
        let mut raw = vec![0u8; 40];
        raw[8] = 0x2a;
        raw[16] = 3;
        plan.decode(i, &raw, false, &mut out).unwrap();
        assert_eq!(out, [0x2a, 3]);
        let err = plan.decode(i, &raw[..18], false, &mut out).unwrap_err();
        assert!(
            err.contains("`order` at raw payload bytes 16..20, the payload is 18 bytes"),
            "{err}"
        );
    }
}

//! The tracing-data feature section of a perf.data file (`HEADER_TRACING_DATA`,
//! tools/perf/Documentation/perf.data-file-format.txt, written by
//! tools/perf/util/trace-event-info.c) and the tracefs format descriptions it holds.
//!
//! Layout: the magic `"\x17\x08\x44tracing"`, a NUL-terminated version (`"0.6"`), one byte
//! big-endian flag, one byte `sizeof(long)`, a u32 page size, `header_page` and `header_event`
//! (each a NUL-terminated name, a u64 size and that many bytes), the ftrace formats (u32 count,
//! each a u64 size and text), the event formats (u32 system count; per system a NUL-terminated
//! name and a u32 count, each a u64 size and the text of `events/SYS/NAME/format`), kallsyms
//! (u32 size), printk formats (u32 size) and, from version 0.6, the saved command lines (u64
//! size). Numbers are in the byte order the flag names.
//!
//! A format file (`/sys/kernel/tracing/events/SYS/NAME/format`):
//!
//! (tabs shown as four spaces)
//! ```text
//! name: contention_begin
//! ID: 408
//! format:
//!     field:unsigned short common_type;    offset:0;    size:2;    signed:0;
//!     field:void * lock_addr;    offset:8;    size:8;    signed:0;
//!
//! print fmt: "%p (flags=%s)", REC->lock_addr, __print_flags(REC->flags, "|", { (1U << 0), "SPIN" })
//! ```

use std::collections::HashMap;

/// How a field's bytes are laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldKind {
    /// A number of `size` bytes (1, 2, 4 or 8).
    Number,
    /// A fixed array of `len` elements (`char comm[16]`); char arrays print as strings.
    Array {
        /// Elements.
        len: usize,
    },
    /// `__data_loc` dynamic array: a u32 `offset | len << 16` pointing into the record.
    DataLoc,
    /// `__rel_loc` dynamic array: like `DataLoc`, the offset relative to the field's end.
    RelLoc,
}

/// One field of a tracepoint format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Field name (`lock_addr`).
    pub name: String,
    /// C type as declared (`void *`, `unsigned int`, `char[16]` keeps `char`).
    pub ctype: String,
    /// Byte offset in the raw record.
    pub offset: usize,
    /// Byte size.
    pub size: usize,
    /// Signed integer.
    pub signed: bool,
    /// Layout.
    pub kind: FieldKind,
}

impl Field {
    /// Is this a `char` array or dynamic string (printed as a string by `%s`)?
    pub fn is_string(&self) -> bool {
        self.ctype.starts_with("char") || self.ctype.starts_with("const char")
    }
}

/// One tracepoint's format description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    /// Event system (`lock`).
    pub system: String,
    /// Event name (`contention_begin`).
    pub name: String,
    /// Tracepoint id (`attr.config` of the perf event).
    pub id: u64,
    /// Every field, common ones included.
    pub fields: Vec<Field>,
    /// The `print fmt:` text: a C string literal and its arguments.
    pub print_fmt: String,
}

impl EventFormat {
    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// What the tracing-data section holds that lockcast uses.
#[derive(Debug, Clone, Default)]
pub struct TracingData {
    /// `sizeof(long)` on the recording machine.
    pub long_size: u8,
    /// The section's numbers are big-endian.
    pub big_endian: bool,
    /// Event formats by tracepoint id.
    pub formats: HashMap<u64, EventFormat>,
    /// Format files that did not parse: (offset from the start of the section, system).
    pub unparsed: Vec<(usize, String)>,
}

/// Why the tracing-data section could not be read: what was expected at which byte of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracingError {
    /// Offset from the start of the section.
    pub offset: usize,
    /// What was expected there.
    pub what: String,
}

struct Cur<'a> {
    b: &'a [u8],
    pos: usize,
    big: bool,
}

impl<'a> Cur<'a> {
    fn err(&self, what: &str) -> TracingError {
        TracingError {
            offset: self.pos,
            what: what.to_string(),
        }
    }
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], TracingError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| self.err(what))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> Result<u8, TracingError> {
        Ok(self.take(1, what)?[0])
    }
    fn u32(&mut self, what: &str) -> Result<u32, TracingError> {
        let s = self.take(4, what)?;
        let a = [s[0], s[1], s[2], s[3]];
        Ok(if self.big {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        })
    }
    fn u64(&mut self, what: &str) -> Result<u64, TracingError> {
        let s = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(if self.big {
            u64::from_be_bytes(a)
        } else {
            u64::from_le_bytes(a)
        })
    }
    fn cstr(&mut self, what: &str) -> Result<&'a [u8], TracingError> {
        let rest = &self.b[self.pos.min(self.b.len())..];
        let n = memchr::memchr(0, rest).ok_or_else(|| self.err(what))?;
        let s = &rest[..n];
        self.pos += n + 1;
        Ok(s)
    }
    fn sized_u64(&mut self, what: &str) -> Result<&'a [u8], TracingError> {
        let n = self.u64(what)?;
        let n = usize::try_from(n).map_err(|_| self.err(what))?;
        self.take(n, what)
    }
    fn sized_u32(&mut self, what: &str) -> Result<&'a [u8], TracingError> {
        let n = self.u32(what)? as usize;
        self.take(n, what)
    }
}

/// The magic that starts the section.
const MAGIC: &[u8] = b"\x17\x08\x44tracing";

/// Parse the tracing-data section. Format files that do not parse are listed in
/// [`TracingData::unparsed`] (the reader refuses a file whose events need one of them).
pub fn parse(b: &[u8]) -> Result<TracingData, TracingError> {
    let mut c = Cur {
        b,
        pos: 0,
        big: false,
    };
    if c.take(MAGIC.len(), "the tracing-data magic \\x17\\x08Dtracing")? != MAGIC {
        c.pos = 0;
        return Err(c.err("the tracing-data magic \\x17\\x08Dtracing"));
    }
    let version = c.cstr("a NUL-terminated version string")?.to_vec();
    c.big = c.u8("the endianness byte")? != 0;
    let long_size = c.u8("the long-size byte")?;
    let _page_size = c.u32("the page size")?;
    for name in ["header_page", "header_event"] {
        let got = c.cstr("a header name")?;
        if got != name.as_bytes() {
            return Err(c.err(&format!("the {name} block")));
        }
        c.sized_u64("a header block")?;
    }
    let n_ftrace = c.u32("the ftrace format count")?;
    for _ in 0..n_ftrace {
        c.sized_u64("an ftrace format")?;
    }
    let mut formats = HashMap::new();
    let mut unparsed = Vec::new();
    let n_sys = c.u32("the event system count")?;
    for _ in 0..n_sys {
        let sys = String::from_utf8_lossy(c.cstr("a NUL-terminated system name")?).into_owned();
        let n = c.u32("the system's event count")?;
        for _ in 0..n {
            let at = c.pos;
            let text = c.sized_u64("an event format")?;
            match parse_format(&sys, &String::from_utf8_lossy(text), long_size) {
                Some(f) => {
                    formats.insert(f.id, f);
                }
                None => unparsed.push((at, sys.clone())),
            }
        }
    }
    // kallsyms, printk formats and (0.6) saved cmdlines follow; lockcast needs none of them
    // (perf names kernel frames from kallsyms files, not from this copy, which is empty here).
    c.sized_u32("the kallsyms block")?;
    c.sized_u32("the printk block")?;
    if version.as_slice() >= b"0.6".as_slice() {
        c.sized_u64("the saved command lines")?;
    }
    Ok(TracingData {
        long_size,
        big_endian: c.big,
        formats,
        unparsed,
    })
}

/// Parse one format file's text; `None` when it has no name, id or fields.
pub fn parse_format(system: &str, text: &str, long_size: u8) -> Option<EventFormat> {
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    let mut print_fmt = String::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(v) = t.strip_prefix("name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = t.strip_prefix("ID:") {
            id = v.trim().parse::<u64>().ok();
        } else if let Some(v) = t.strip_prefix("print fmt:") {
            print_fmt = v.trim().to_string();
        } else if t.starts_with("field:") {
            fields.push(parse_field(t, long_size)?);
        }
    }
    Some(EventFormat {
        system: system.to_string(),
        name: name?,
        id: id?,
        fields,
        print_fmt,
    })
}

/// `field:unsigned char comm[16];    offset:8;    size:16;    signed:0;`
fn parse_field(line: &str, long_size: u8) -> Option<Field> {
    let mut decl = "";
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in line.split(';') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("field:") {
            decl = v.trim();
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = v.trim().parse::<usize>().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.trim().parse::<usize>().ok();
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let (offset, size) = (offset?, size?);
    let (kind, decl) = if let Some(d) = decl.strip_prefix("__data_loc ") {
        (FieldKind::DataLoc, d)
    } else if let Some(d) = decl.strip_prefix("__rel_loc ") {
        (FieldKind::RelLoc, d)
    } else {
        (FieldKind::Number, decl)
    };
    // `type name` or `type name[N]`; data_loc declarations read `char[] name`
    let (ty, mut name) = match decl.rfind([' ', '*']) {
        Some(i) => (decl[..=i].trim(), decl[i + 1..].trim()),
        None => ("", decl),
    };
    let mut ty = ty.to_string();
    let mut kind = kind;
    if let Some(b) = name.find('[') {
        let len = name[b + 1..].trim_end_matches(']').trim();
        if kind == FieldKind::Number {
            let elems = len.parse::<usize>().unwrap_or(0);
            kind = FieldKind::Array { len: elems };
        }
        name = &name[..b];
    }
    if let Some(b) = ty.find('[') {
        ty.truncate(b);
    }
    let _ = long_size;
    Some(Field {
        name: name.to_string(),
        ctype: ty.trim().to_string(),
        offset,
        size,
        signed,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_file_fields_and_print_fmt() {
        let text = "name: sched_switch\nID: 316\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
                    \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
                    \tfield:__data_loc char[] name;\toffset:24;\tsize:4;\tsigned:0;\n\
                    \tfield:void * lock_addr;\toffset:32;\tsize:8;\tsigned:0;\n\n\
                    print fmt: \"%s\", REC->prev_comm\n";
        let f = parse_format("sched", text, 8).unwrap();
        assert_eq!((f.id, f.name.as_str()), (316, "sched_switch"));
        let comm = f.field("prev_comm").unwrap();
        assert_eq!(comm.kind, FieldKind::Array { len: 16 });
        assert!(comm.is_string());
        assert_eq!(f.field("name").unwrap().kind, FieldKind::DataLoc);
        let l = f.field("lock_addr").unwrap();
        assert_eq!((l.ctype.as_str(), l.offset, l.size), ("void *", 32, 8));
        assert_eq!(f.print_fmt, "\"%s\", REC->prev_comm");
    }

    #[test]
    fn cut_section_names_the_offset() {
        let e = parse(b"\x17\x08\x44tracing0.6\0\0\x08").unwrap_err();
        assert_eq!(e.offset, 16);
        assert_eq!(e.what, "the page size");
    }
}

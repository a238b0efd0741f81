//! The `print fmt:` of a tracepoint format description, evaluated over a raw record the way
//! libtraceevent does it for `perf script`, so the payload text is the one perf prints.
//!
//! A print fmt is a C string literal followed by C expressions over the record's fields
//! (`REC->name`). Supported: integer arithmetic, comparisons, logic, bit operations, `?:`,
//! casts (truncating to the type's size), string literals, `__print_flags`, `__print_symbolic`,
//! `__get_str`, `__get_dynamic_array_len`, and the printf conversions `%d %i %u %x %X %o %c %s %p`
//! with flags, width, precision and `h hh l ll z` lengths. As in libtraceevent, an identifier
//! that is not a field (`vmemmap_base`) is 0 and pointer arithmetic is not scaled, so
//! `(struct page *)vmemmap_base + pfn` prints the pfn; `%p` prints `0x…` (`(nil)` for 0) and its
//! extensions (`%pS`) print the address in hex (the tracing data of these files has no kallsyms).
//! Anything else (another helper function, `*`/`&` on pointers, array indexing) makes
//! [`PrintFmt::parse`] fail; the caller then prints the fields raw, as perf does for an event
//! whose format it cannot parse (`[FAILED TO PARSE] field=value …`).

use std::borrow::Cow;

use super::tracing::{EventFormat, Field, FieldKind};

/// A parsed print fmt, ready to render records of its event.
#[derive(Debug, Clone)]
pub struct PrintFmt {
    pieces: Vec<Piece>,
    args: Vec<Expr>,
}

#[derive(Debug, Clone)]
enum Piece {
    Lit(String),
    Conv(Spec),
}

#[derive(Debug, Clone, Default)]
struct Spec {
    left: bool,
    zero: bool,
    plus: bool,
    space: bool,
    alt: bool,
    width: Option<usize>,
    width_arg: bool,
    prec: Option<usize>,
    /// Bytes of the integer argument: 1, 2, 4 or 8.
    len: u8,
    conv: char,
}

#[derive(Debug, Clone)]
enum Expr {
    Num(i64),
    Str(String),
    Field(String),
    Unary(char, Box<Expr>),
    Bin(Op, Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    Cast {
        size: u8,
        signed: bool,
        inner: Box<Expr>,
    },
    Flags {
        val: Box<Expr>,
        delim: String,
        flags: Vec<(i64, Option<String>)>,
    },
    Symbolic {
        val: Box<Expr>,
        syms: Vec<(i64, Option<String>)>,
    },
    GetStr(String),
    DynLen(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Or,
    And,
    BitOr,
    Xor,
    BitAnd,
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    Shl,
    Shr,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl Op {
    fn prec(self) -> u8 {
        match self {
            Op::Or => 1,
            Op::And => 2,
            Op::BitOr => 3,
            Op::Xor => 4,
            Op::BitAnd => 5,
            Op::Eq | Op::Ne => 6,
            Op::Lt | Op::Gt | Op::Le | Op::Ge => 7,
            Op::Shl | Op::Shr => 8,
            Op::Add | Op::Sub => 9,
            Op::Mul | Op::Div | Op::Rem => 10,
        }
    }
    fn of(t: &Tok) -> Option<Op> {
        let Tok::Punct(p) = t else { return None };
        Some(match *p {
            "||" => Op::Or,
            "&&" => Op::And,
            "|" => Op::BitOr,
            "^" => Op::Xor,
            "&" => Op::BitAnd,
            "==" => Op::Eq,
            "!=" => Op::Ne,
            "<" => Op::Lt,
            ">" => Op::Gt,
            "<=" => Op::Le,
            ">=" => Op::Ge,
            "<<" => Op::Shl,
            ">>" => Op::Shr,
            "+" => Op::Add,
            "-" => Op::Sub,
            "*" => Op::Mul,
            "/" => Op::Div,
            "%" => Op::Rem,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(i64),
    Str(String),
    Ident(String),
    Punct(&'static str),
}

const PUNCT: [&str; 29] = [
    "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "{", "}", ",", "?", ":", "+",
    "-", "*", "/", "%", "&", "|", "^", "~", "!", "<", ">", ".",
];

fn tokenize(s: &str) -> Option<Vec<Tok>> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'"' {
            let mut v = Vec::new();
            i += 1;
            loop {
                let &c = b.get(i)?;
                i += 1;
                match c {
                    b'"' => break,
                    b'\\' => {
                        let &e = b.get(i)?;
                        i += 1;
                        v.push(match e {
                            b'n' => b'\n',
                            b't' => b'\t',
                            b'0' => 0,
                            other => other,
                        });
                    }
                    _ => v.push(c),
                }
            }
            let s = String::from_utf8_lossy(&v).into_owned();
            // adjacent literals concatenate
            if let Some(Tok::Str(prev)) = out.last_mut() {
                prev.push_str(&s);
            } else {
                out.push(Tok::Str(s));
            }
        } else if c == b'\'' {
            let &ch = b.get(i + 1)?;
            if b.get(i + 2) != Some(&b'\'') {
                return None;
            }
            out.push(Tok::Num(i64::from(ch)));
            i += 3;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            out.push(Tok::Num(parse_num(&s[start..i])?));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(s[start..i].to_string()));
        } else {
            let p = PUNCT.iter().find(|p| s[i..].starts_with(**p))?;
            out.push(Tok::Punct(p));
            i += p.len();
        }
    }
    Some(out)
}

/// A C integer literal with optional `u`/`l` suffixes (as `strtoull` reads it).
fn parse_num(t: &str) -> Option<i64> {
    let t = t.trim_end_matches(['u', 'U', 'l', 'L']);
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()?
    } else {
        t.parse::<u64>().ok()?
    };
    Some(v as i64)
}

struct P<'a> {
    t: &'a [Tok],
    i: usize,
    long_size: u8,
}

impl P<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.t.get(self.i)
    }
    fn next(&mut self) -> Option<Tok> {
        let t = self.t.get(self.i).cloned();
        self.i += 1;
        t
    }
    fn eat(&mut self, p: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Punct(q)) if *q == p) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, p: &str) -> Option<()> {
        self.eat(p).then_some(())
    }

    fn expr(&mut self) -> Option<Expr> {
        let c = self.binary(1)?;
        if self.eat("?") {
            let a = self.expr()?;
            self.expect(":")?;
            let b = self.expr()?;
            return Some(Expr::Cond(Box::new(c), Box::new(a), Box::new(b)));
        }
        Some(c)
    }

    fn binary(&mut self, min: u8) -> Option<Expr> {
        let mut lhs = self.unary()?;
        while let Some(op) = self.peek().and_then(Op::of) {
            if op.prec() < min {
                break;
            }
            self.i += 1;
            let rhs = self.binary(op.prec() + 1)?;
            lhs = Expr::Bin(op, Box::new(lhs), Box::new(rhs));
        }
        Some(lhs)
    }

    /// The size and signedness of a cast's type, when `(` at the cursor opens one.
    fn cast_type(&self) -> Option<(usize, Option<(u8, bool)>)> {
        let mut j = self.i + 1;
        let mut words = Vec::new();
        let mut ptr = false;
        loop {
            match self.t.get(j)? {
                Tok::Ident(w) => words.push(w.as_str()),
                Tok::Punct("*") => ptr = true,
                Tok::Punct(")") => break,
                _ => return None,
            }
            j += 1;
        }
        let first = *words.first()?;
        let typeish = ptr
            || words.len() > 1
            || [
                "struct", "enum", "union", "unsigned", "signed", "int", "long", "short", "char",
                "void", "bool", "_Bool", "const", "volatile",
            ]
            .contains(&first)
            || first.ends_with("_t")
            || int_type(first).is_some();
        if !typeish {
            return None;
        }
        let size = if ptr {
            Some((self.long_size, false))
        } else {
            c_type(&words, self.long_size)
        };
        Some((j + 1, size))
    }

    fn unary(&mut self) -> Option<Expr> {
        match self.peek()? {
            Tok::Punct(p @ ("!" | "~" | "-" | "+")) => {
                let c = p.chars().next()?;
                self.i += 1;
                let e = self.unary()?;
                Some(if c == '+' {
                    e
                } else {
                    Expr::Unary(c, Box::new(e))
                })
            }
            Tok::Punct("(") => {
                if let Some((after, size)) = self.cast_type() {
                    self.i = after;
                    let inner = self.unary()?;
                    return Some(match size {
                        Some((size, signed)) => Expr::Cast {
                            size,
                            signed,
                            inner: Box::new(inner),
                        },
                        None => inner,
                    });
                }
                self.i += 1;
                let e = self.expr()?;
                self.expect(")")?;
                Some(e)
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Option<Expr> {
        match self.next()? {
            Tok::Num(n) => Some(Expr::Num(n)),
            Tok::Str(s) => Some(Expr::Str(s)),
            Tok::Ident(id) if id == "REC" => {
                self.expect("->")?;
                match self.next()? {
                    Tok::Ident(f) => Some(Expr::Field(f)),
                    _ => None,
                }
            }
            Tok::Ident(id) if self.eat("(") => self.call(&id),
            // an identifier that is no field reads as strtoull reads it: 0
            Tok::Ident(_) => Some(Expr::Num(0)),
            Tok::Punct(_) => None,
        }
    }

    fn field_arg(&mut self) -> Option<String> {
        // `__get_str(name)` or `__get_str(REC->name)` depending on the kernel
        let name = match self.next()? {
            Tok::Ident(id) if id == "REC" => {
                self.expect("->")?;
                match self.next()? {
                    Tok::Ident(f) => f,
                    _ => return None,
                }
            }
            Tok::Ident(f) => f,
            _ => return None,
        };
        self.expect(")")?;
        Some(name)
    }

    fn table(&mut self) -> Option<Vec<(i64, Option<String>)>> {
        let mut out = Vec::new();
        while self.eat(",") {
            self.expect("{")?;
            let v = eval_const(&self.expr()?)?;
            self.expect(",")?;
            let s = match self.expr()? {
                Expr::Str(s) => Some(s),
                _ => None,
            };
            self.expect("}")?;
            out.push((v, s));
        }
        self.expect(")")?;
        Some(out)
    }

    fn call(&mut self, name: &str) -> Option<Expr> {
        match name {
            "__print_flags" => {
                let val = self.expr()?;
                self.expect(",")?;
                let delim = match self.next()? {
                    Tok::Str(s) => s,
                    _ => return None,
                };
                let flags = self.table()?;
                Some(Expr::Flags {
                    val: Box::new(val),
                    delim,
                    flags,
                })
            }
            "__print_symbolic" => {
                let val = self.expr()?;
                let syms = self.table()?;
                Some(Expr::Symbolic {
                    val: Box::new(val),
                    syms,
                })
            }
            "__get_str" => Some(Expr::GetStr(self.field_arg()?)),
            "__get_dynamic_array_len" => Some(Expr::DynLen(self.field_arg()?)),
            _ => None,
        }
    }
}

/// Size in bytes and signedness of the kernel's fixed-width integer type names.
fn int_type(w: &str) -> Option<(u8, bool)> {
    let w = w.trim_start_matches('_');
    Some(match w {
        "u8" => (1, false),
        "s8" => (1, true),
        "u16" => (2, false),
        "s16" => (2, true),
        "u32" => (4, false),
        "s32" => (4, true),
        "u64" => (8, false),
        "s64" => (8, true),
        _ => return None,
    })
}

/// Size and signedness of a C type named by `words`; `None` for a typedef lockcast does not
/// know (`gfp_t`): such a cast changes nothing.
fn c_type(words: &[&str], long_size: u8) -> Option<(u8, bool)> {
    let words: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| *w != "const" && *w != "volatile")
        .collect();
    if words.len() == 1 {
        if let Some(t) = int_type(words[0]) {
            return Some(t);
        }
        match words[0] {
            "size_t" | "uintptr_t" => return Some((long_size, false)),
            "ssize_t" | "intptr_t" | "ptrdiff_t" => return Some((long_size, true)),
            "bool" | "_Bool" => return Some((1, false)),
            _ => {}
        }
    }
    let unsigned = words.contains(&"unsigned");
    let longs = words.iter().filter(|w| **w == "long").count();
    let size = if words.contains(&"char") {
        1
    } else if words.contains(&"short") {
        2
    } else if longs >= 2 {
        8
    } else if longs == 1 {
        long_size
    } else if words.contains(&"int") || unsigned || words.contains(&"signed") {
        4
    } else {
        return None;
    };
    Some((size, !unsigned))
}

fn truncate(v: i64, size: u8, signed: bool) -> i64 {
    match (size, signed) {
        (1, true) => v as i8 as i64,
        (1, false) => v as u8 as i64,
        (2, true) => v as i16 as i64,
        (2, false) => v as u16 as i64,
        (4, true) => v as i32 as i64,
        (4, false) => v as u32 as i64,
        _ => v,
    }
}

fn bin(op: Op, a: i64, b: i64) -> i64 {
    match op {
        Op::Or => i64::from(a != 0 || b != 0),
        Op::And => i64::from(a != 0 && b != 0),
        Op::BitOr => a | b,
        Op::Xor => a ^ b,
        Op::BitAnd => a & b,
        Op::Eq => i64::from(a == b),
        Op::Ne => i64::from(a != b),
        Op::Lt => i64::from(a < b),
        Op::Gt => i64::from(a > b),
        Op::Le => i64::from(a <= b),
        Op::Ge => i64::from(a >= b),
        Op::Shl => a.wrapping_shl((b & 63) as u32),
        Op::Shr => a.wrapping_shr((b & 63) as u32),
        Op::Add => a.wrapping_add(b),
        Op::Sub => a.wrapping_sub(b),
        Op::Mul => a.wrapping_mul(b),
        Op::Div => a.checked_div(b).unwrap_or(0),
        Op::Rem => a.checked_rem(b).unwrap_or(0),
    }
}

fn unary(c: char, v: i64) -> i64 {
    match c {
        '!' => i64::from(v == 0),
        '~' => !v,
        '-' => v.wrapping_neg(),
        _ => v,
    }
}

/// A constant expression (flag and symbol values).
fn eval_const(e: &Expr) -> Option<i64> {
    Some(match e {
        Expr::Num(n) => *n,
        Expr::Unary(c, x) => unary(*c, eval_const(x)?),
        Expr::Bin(op, a, b) => bin(*op, eval_const(a)?, eval_const(b)?),
        Expr::Cond(c, a, b) => {
            if eval_const(c)? != 0 {
                eval_const(a)?
            } else {
                eval_const(b)?
            }
        }
        Expr::Cast {
            size,
            signed,
            inner,
        } => truncate(eval_const(inner)?, *size, *signed),
        _ => return None,
    })
}

/// A value while evaluating: a number or a string (borrowed from the print fmt or the record
/// where it can be: most payloads print a literal or a field's text unchanged).
#[derive(Debug, Clone, PartialEq)]
enum Value<'a> {
    Num(i64),
    Str(Cow<'a, str>),
}

/// One raw record and how to read its fields.
pub struct Record<'a> {
    /// The raw tracepoint bytes (`PERF_SAMPLE_RAW`).
    pub data: &'a [u8],
    /// The event's format.
    pub format: &'a EventFormat,
    /// Byte order of the record.
    pub big_endian: bool,
}

impl Record<'_> {
    fn bytes(&self, off: usize, len: usize) -> Option<&[u8]> {
        self.data.get(off..off.checked_add(len)?)
    }

    /// A number field, sign-extended when the format says signed.
    pub fn number(&self, f: &Field) -> Option<i64> {
        let b = self.bytes(f.offset, f.size)?;
        let mut a = [0u8; 8];
        let n = b.len().min(8);
        let v = if self.big_endian {
            a[8 - n..].copy_from_slice(&b[..n]);
            u64::from_be_bytes(a)
        } else {
            a[..n].copy_from_slice(&b[..n]);
            u64::from_le_bytes(a)
        };
        let v = v as i64;
        Some(match n {
            1 | 2 | 4 => truncate(v, n as u8, f.signed),
            _ => v,
        })
    }

    /// (offset, length) of a dynamic array's bytes.
    fn dyn_loc(&self, f: &Field) -> Option<(usize, usize)> {
        let b = self.bytes(f.offset, 4)?;
        let a = [b[0], b[1], b[2], b[3]];
        let v = if self.big_endian {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        };
        let (mut off, len) = ((v & 0xffff) as usize, (v >> 16) as usize);
        if f.kind == FieldKind::RelLoc {
            off += f.offset + f.size;
        }
        Some((off, len))
    }

    /// A string field: a char array or a dynamic string, up to its NUL.
    pub fn string(&self, f: &Field) -> Option<String> {
        self.str_of(f).map(Cow::into_owned)
    }

    fn str_of(&self, f: &Field) -> Option<Cow<'_, str>> {
        let b = match f.kind {
            FieldKind::DataLoc | FieldKind::RelLoc => {
                let (off, len) = self.dyn_loc(f)?;
                self.bytes(off, len)?
            }
            _ => self.bytes(f.offset, f.size)?,
        };
        let end = memchr::memchr(0, b).unwrap_or(b.len());
        Some(String::from_utf8_lossy(&b[..end]))
    }

    fn field(&self, name: &str) -> Option<&Field> {
        self.format.field(name)
    }

    fn eval<'e>(&'e self, e: &'e Expr) -> Option<Value<'e>> {
        Some(match e {
            Expr::Num(n) => Value::Num(*n),
            Expr::Str(s) => Value::Str(Cow::Borrowed(s)),
            Expr::Field(name) => {
                let f = self.field(name)?;
                match f.kind {
                    FieldKind::Number => Value::Num(self.number(f)?),
                    _ if f.is_string() => Value::Str(self.str_of(f)?),
                    _ => return None,
                }
            }
            Expr::GetStr(name) => Value::Str(self.str_of(self.field(name)?)?),
            Expr::DynLen(name) => Value::Num(self.dyn_loc(self.field(name)?)?.1 as i64),
            Expr::Unary(c, x) => Value::Num(unary(*c, self.num(x)?)),
            Expr::Bin(op, a, b) => Value::Num(bin(*op, self.num(a)?, self.num(b)?)),
            Expr::Cond(c, a, b) => {
                if self.num(c)? != 0 {
                    self.eval(a)?
                } else {
                    self.eval(b)?
                }
            }
            Expr::Cast {
                size,
                signed,
                inner,
            } => match self.eval(inner)? {
                Value::Num(n) => Value::Num(truncate(n, *size, *signed)),
                s => s,
            },
            Expr::Flags { val, delim, flags } => {
                let mut v = self.num(val)?;
                let mut out = String::new();
                let mut printed = false;
                for (fv, s) in flags {
                    let Some(s) = s else { continue };
                    if v == 0 && *fv == 0 {
                        out.push_str(s);
                        break;
                    }
                    if *fv != 0 && (v & fv) == *fv {
                        if printed {
                            out.push_str(delim);
                        }
                        out.push_str(s);
                        printed = true;
                        v &= !fv;
                    }
                }
                if v != 0 {
                    if printed {
                        out.push_str(delim);
                    }
                    out.push_str(&format!("0x{:x}", v as u64));
                }
                Value::Str(Cow::Owned(out))
            }
            Expr::Symbolic { val, syms } => {
                let v = self.num(val)?;
                match syms.iter().find(|(sv, _)| *sv == v) {
                    Some((_, Some(s))) => Value::Str(Cow::Borrowed(s)),
                    Some((_, None)) => Value::Str(Cow::Borrowed("")),
                    None => Value::Str(Cow::Owned(format!("0x{:x}", v as u64))),
                }
            }
        })
    }

    fn num(&self, e: &Expr) -> Option<i64> {
        match self.eval(e)? {
            Value::Num(n) => Some(n),
            Value::Str(_) => None,
        }
    }
}

impl PrintFmt {
    /// Parse `fmt` (the text after `print fmt:`); `None` when it uses something this evaluator
    /// does not support.
    pub fn parse(fmt: &str, long_size: u8) -> Option<Self> {
        let toks = tokenize(fmt)?;
        let Some(Tok::Str(s)) = toks.first() else {
            return None;
        };
        let pieces = parse_pieces(s)?;
        let mut p = P {
            t: &toks,
            i: 1,
            long_size: if long_size == 4 { 4 } else { 8 },
        };
        let mut args = Vec::new();
        while p.eat(",") {
            args.push(p.expr()?);
        }
        if p.i != toks.len() {
            return None;
        }
        let wanted = pieces
            .iter()
            .map(|x| match x {
                Piece::Conv(s) if s.conv != '%' => 1 + usize::from(s.width_arg),
                _ => 0,
            })
            .sum::<usize>();
        if wanted != args.len() {
            return None;
        }
        Some(PrintFmt { pieces, args })
    }

    /// Render one record as perf script prints its payload, appended to `out` (a string the
    /// caller reuses: no allocation per record once it is long enough); `false`, `out` as it
    /// was, when a field is missing or an argument has the wrong kind (the caller falls back to
    /// the raw fields: [`render_payload`]).
    pub fn render_to(&self, rec: &Record<'_>, out: &mut String) -> bool {
        let start = out.len();
        let done = self.write(rec, out).is_some();
        if !done {
            out.truncate(start);
        }
        done
    }

    fn write(&self, rec: &Record<'_>, out: &mut String) -> Option<()> {
        let mut args = self.args.iter();
        for piece in &self.pieces {
            match piece {
                Piece::Lit(s) => out.push_str(s),
                Piece::Conv(spec) if spec.conv == '%' => out.push('%'),
                Piece::Conv(spec) => {
                    let mut spec = spec.clone();
                    if spec.width_arg {
                        let w = rec.num(args.next()?)?;
                        if w < 0 {
                            spec.left = true;
                        }
                        spec.width = Some(clamp_pad(w.unsigned_abs()));
                    }
                    let v = rec.eval(args.next()?)?;
                    if !format_plain(out, &spec, &v) {
                        out.push_str(&format_one(&spec, &v)?);
                    }
                }
            }
        }
        Some(())
    }
}

/// Split a printf format into literal text and conversions.
fn parse_pieces(s: &str) -> Option<Vec<Piece>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut lit = String::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            let ch = s[i..].chars().next()?;
            lit.push(ch);
            i += ch.len_utf8();
            continue;
        }
        i += 1;
        let mut spec = Spec {
            len: 4,
            ..Spec::default()
        };
        while let Some(&c) = b.get(i) {
            match c {
                b'-' => spec.left = true,
                b'0' => spec.zero = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'#' => spec.alt = true,
                _ => break,
            }
            i += 1;
        }
        if b.get(i) == Some(&b'*') {
            spec.width_arg = true;
            i += 1;
        } else {
            let st = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i > st {
                spec.width = Some(digits_pad(&s[st..i]));
            }
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            let st = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            spec.prec = Some(if i > st { digits_pad(&s[st..i]) } else { 0 });
        }
        loop {
            match b.get(i) {
                Some(b'h') => {
                    spec.len = if spec.len == 2 { 1 } else { 2 };
                }
                Some(b'l' | b'z' | b'j' | b'L' | b't') => spec.len = 8,
                _ => break,
            }
            i += 1;
        }
        let c = *b.get(i)? as char;
        i += 1;
        if !"diuxXocsp%".contains(c) {
            return None;
        }
        if c == 'p' {
            // pointer extensions (%pS, %pf, %pI4, ...): printed as the address
            if let Some(&e) = b.get(i) {
                if b"fFsSxKMmIiUhBbR".contains(&e) {
                    i += 1;
                    if matches!(e, b'I' | b'i') && matches!(b.get(i), Some(b'4' | b'6')) {
                        i += 1;
                    }
                }
            }
        }
        spec.conv = c;
        if !lit.is_empty() {
            out.push(Piece::Lit(std::mem::take(&mut lit)));
        }
        out.push(Piece::Conv(spec));
    }
    if !lit.is_empty() {
        out.push(Piece::Lit(lit));
    }
    Some(out)
}

/// Widest field width or precision rendered. The kernel writes one event's text into a
/// `trace_seq` of a page or two and cuts it there, so no real trace line was ever padded wider;
/// and the width comes from untrusted bytes (the print fmt, or a record's value for `%*`), so
/// unclamped it would size an allocation (a fuzzed file asked for gigabytes of spaces).
const MAX_PAD: usize = 4096;

fn clamp_pad(n: u64) -> usize {
    n.min(MAX_PAD as u64) as usize
}

/// A run of ASCII digits as a width or precision; more digits than a u64 holds is the widest.
fn digits_pad(digits: &str) -> usize {
    digits.parse().map_or(MAX_PAD, clamp_pad)
}

fn pad(spec: &Spec, body: String, numeric_prefix_len: usize) -> String {
    let Some(w) = spec.width else { return body };
    let n = body.chars().count();
    if n >= w {
        return body;
    }
    let fill = w - n;
    if spec.left {
        format!("{body}{}", " ".repeat(fill))
    } else if spec.zero && spec.prec.is_none() && spec.conv != 's' && spec.conv != 'c' {
        let (pre, rest) = body.split_at(numeric_prefix_len.min(body.len()));
        format!("{pre}{}{rest}", "0".repeat(fill))
    } else {
        format!("{}{body}", " ".repeat(fill))
    }
}

/// The conversions of most print fmts (`%s`, `%d`, `%u`, `%x`, `%p` without flags, width or
/// precision) written straight into `out`, as [`format_one`] would print them; `false` (and
/// nothing written) for anything else.
fn format_plain(out: &mut String, spec: &Spec, v: &Value) -> bool {
    use std::fmt::Write;
    if spec.width.is_some()
        || spec.prec.is_some()
        || spec.left
        || spec.zero
        || spec.plus
        || spec.space
        || spec.alt
    {
        return false;
    }
    match (spec.conv, v) {
        ('s', Value::Str(s)) => out.push_str(s),
        ('p', Value::Num(0)) => out.push_str("(nil)"),
        ('p', Value::Num(n)) => {
            let _ = write!(out, "0x{:x}", *n as u64);
        }
        ('d' | 'i', Value::Num(n)) => {
            let _ = write!(out, "{}", truncate(*n, spec.len, true));
        }
        ('u', Value::Num(n)) => {
            let _ = write!(out, "{}", truncate(*n, spec.len, false) as u64);
        }
        ('x', Value::Num(n)) => {
            let _ = write!(out, "{:x}", truncate(*n, spec.len, false) as u64);
        }
        _ => return false,
    }
    true
}

fn format_one(spec: &Spec, v: &Value) -> Option<String> {
    match (spec.conv, v) {
        ('s', Value::Str(s)) => {
            let s = match spec.prec {
                Some(p) => s.chars().take(p).collect(),
                None => s.to_string(),
            };
            Some(pad(spec, s, 0))
        }
        ('s', Value::Num(n)) => Some(pad(spec, n.to_string(), 0)),
        (_, Value::Str(_)) => None,
        ('c', Value::Num(n)) => Some(pad(spec, char::from(*n as u8).to_string(), 0)),
        ('p', Value::Num(n)) => {
            let s = if *n == 0 {
                "(nil)".to_string()
            } else {
                format!("0x{:x}", *n as u64)
            };
            Some(pad(spec, s, 0))
        }
        (c, Value::Num(n)) => {
            let signed = matches!(c, 'd' | 'i');
            let v = truncate(*n, spec.len, signed);
            let (neg, mag) = if signed {
                (v < 0, v.unsigned_abs())
            } else {
                (false, v as u64)
            };
            let mut digits = match c {
                'x' => format!("{mag:x}"),
                'X' => format!("{mag:X}"),
                'o' => format!("{mag:o}"),
                _ => mag.to_string(),
            };
            if let Some(p) = spec.prec {
                if digits.len() < p {
                    digits = format!("{}{digits}", "0".repeat(p - digits.len()));
                }
            }
            let prefix = if neg {
                "-"
            } else if signed && spec.plus {
                "+"
            } else if signed && spec.space {
                " "
            } else if spec.alt && mag != 0 && c == 'x' {
                "0x"
            } else if spec.alt && mag != 0 && c == 'X' {
                "0X"
            } else if spec.alt && c == 'o' {
                "0"
            } else {
                ""
            };
            Some(pad(spec, format!("{prefix}{digits}"), prefix.len()))
        }
    }
}

/// A sample's payload as `perf script` prints it, trailing blanks cut, appended to `out`: its
/// print fmt `pf` rendered, or, where that is missing or gives up, the fields printed raw
/// ([`render_raw`]; `false` then). What every reader of tracepoint samples gives as the
/// payload text.
pub fn render_payload(pf: Option<&PrintFmt>, rec: &Record<'_>, out: &mut String) -> bool {
    let start = out.len();
    let done = pf.is_some_and(|p| p.render_to(rec, out));
    if !done {
        out.push_str(&render_raw(rec));
    }
    let end = start + out[start..].trim_end().len();
    out.truncate(end);
    done
}

/// The fields of a record printed raw, as libtraceevent prints an event it cannot format
/// (`[FAILED TO PARSE] name=value ...`; common fields left out).
pub fn render_raw(rec: &Record<'_>) -> String {
    let mut out = String::from("[FAILED TO PARSE]");
    for f in rec
        .format
        .fields
        .iter()
        .filter(|f| !f.name.starts_with("common_"))
    {
        out.push(' ');
        out.push_str(&f.name);
        out.push('=');
        match f.kind {
            FieldKind::Number => match rec.number(f) {
                Some(v) if f.signed => out.push_str(&v.to_string()),
                Some(v) => out.push_str(&format!("0x{:x}", v as u64)),
                None => out.push('?'),
            },
            _ if f.is_string() => out.push_str(&rec.string(f).unwrap_or_default()),
            _ => out.push_str("ARRAY"),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tracing::parse_format;
    use super::*;

    fn render(format: &str, data: &[u8]) -> String {
        let f = parse_format("t", format, 8).unwrap();
        let p = PrintFmt::parse(&f.print_fmt, 8).expect("print fmt parses");
        let rec = Record {
            data,
            format: &f,
            big_endian: false,
        };
        let mut out = String::new();
        assert!(p.render_to(&rec, &mut out), "renders");
        out
    }

    fn le(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    const BEGIN: &str = "name: contention_begin\nID: 408\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:void * lock_addr;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:unsigned int flags;\toffset:16;\tsize:4;\tsigned:0;\n\n\
        print fmt: \"%p (flags=%s)\", REC->lock_addr, __print_flags(REC->flags, \"|\", { (1U << 0), \"SPIN\" }, { (1U << 1), \"READ\" }, { (1U << 2), \"WRITE\" }, { (1U << 3), \"RT\" }, { (1U << 4), \"PERCPU\" }, { (1U << 5), \"MUTEX\" } )\n";

    #[test]
    fn print_flags_as_libtraceevent() {
        let rec = |flags: u32| {
            le(&[
                &[0; 8],
                &0xffff_8881_02ab_c698u64.to_le_bytes(),
                &flags.to_le_bytes(),
            ])
        };
        assert_eq!(render(BEGIN, &rec(1)), "0xffff888102abc698 (flags=SPIN)");
        assert_eq!(
            render(BEGIN, &rec(3)),
            "0xffff888102abc698 (flags=SPIN|READ)"
        );
        // no flag set (a semaphore): nothing printed; unknown bits in hex after the names
        assert_eq!(render(BEGIN, &rec(0)), "0xffff888102abc698 (flags=)");
        assert_eq!(
            render(BEGIN, &rec(0x41)),
            "0xffff888102abc698 (flags=SPIN|0x40)"
        );
    }

    #[test]
    fn ternaries_casts_and_unknown_identifiers() {
        let fmt = "name: mm_page_free\nID: 655\nformat:\n\tfield:unsigned long pfn;\toffset:8;\tsize:8;\tsigned:0;\n\
            \tfield:unsigned int order;\toffset:16;\tsize:4;\tsigned:0;\n\tfield:int ret;\toffset:20;\tsize:4;\tsigned:1;\n\n\
            print fmt: \"page=%p pfn=0x%lx order=%d ret=%d a=%s x=0x%08lx\", (((struct page *)vmemmap_base) + (REC->pfn)), REC->pfn, REC->order, REC->ret, REC->order & 0x0001u ? \"M\" : \" \", ((unsigned long)(REC->pfn))\n";
        let data = le(&[
            &[0; 8],
            &0x17067eu64.to_le_bytes(),
            &3u32.to_le_bytes(),
            &(-4i32).to_le_bytes(),
        ]);
        assert_eq!(
            render(fmt, &data),
            "page=0x17067e pfn=0x17067e order=3 ret=-4 a=M x=0x0017067e"
        );
    }

    #[test]
    fn symbolic_and_strings() {
        let fmt = "name: x\nID: 1\nformat:\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
            \tfield:int lru;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:__data_loc char[] name;\toffset:28;\tsize:4;\tsigned:0;\n\n\
            print fmt: \"comm=%s lru=%s name=%s n=%-4d|\", REC->comm, __print_symbolic(REC->lru, {0, \"inactive_anon\"}, {2, \"inactive_file\"}), __get_str(name), REC->lru\n";
        let mut data = vec![0u8; 40];
        data[8..12].copy_from_slice(b"dd\0\0");
        data[24..28].copy_from_slice(&2i32.to_le_bytes());
        data[28..32].copy_from_slice(&(32u32 | (3 << 16)).to_le_bytes());
        data[32..35].copy_from_slice(b"ab\0");
        assert_eq!(
            render(fmt, &data),
            "comm=dd lru=inactive_file name=ab n=2   |"
        );
        data[24..28].copy_from_slice(&7i32.to_le_bytes());
        assert!(render(fmt, &data).contains("lru=0x7 "));
    }

    #[test]
    fn widths_and_precisions_from_untrusted_bytes_are_clamped() {
        let fmt = |pf: &str| {
            format!(
                "name: x\nID: 1\nformat:\n\tfield:int w;\toffset:8;\tsize:4;\tsigned:1;\n\
                 \tfield:int v;\toffset:12;\tsize:4;\tsigned:1;\n\nprint fmt: {pf}\n"
            )
        };
        let data = |w: i32, v: i32| le(&[&[0; 8], &w.to_le_bytes(), &v.to_le_bytes()]);
        // a sane width is kept exactly
        assert_eq!(
            render(&fmt("\"%*d|\", REC->w, REC->v"), &data(5, 42)),
            "   42|"
        );
        assert_eq!(
            render(&fmt("\"%*d|\", REC->w, REC->v"), &data(-5, 42)),
            "42   |"
        );
        // a record asking for 2^31 - 1 columns, a print fmt asking for 10^30: MAX_PAD wide
        let wide = render(&fmt("\"%*d\", REC->w, REC->v"), &data(i32::MAX, 7));
        assert_eq!(wide.len(), MAX_PAD);
        assert!(wide.ends_with(" 7"));
        let huge = "1000000000000000000000000000000";
        assert_eq!(
            render(&fmt(&format!("\"%{huge}d\", REC->v")), &data(0, 7)).len(),
            MAX_PAD
        );
        let zeros = render(&fmt(&format!("\"%.{huge}d\", REC->v")), &data(0, 7));
        assert_eq!((zeros.len(), &zeros[MAX_PAD - 2..]), (MAX_PAD, "07"));
        // an empty precision is zero, as in printf
        assert_eq!(
            render(&fmt("\"%.d|%.s|\", REC->v, REC->v"), &data(0, 7)),
            "7|7|"
        );
    }

    #[test]
    fn unsupported_helpers_fail_to_parse() {
        assert!(PrintFmt::parse("\"%s\", __print_hex(REC->buf, 4)", 8).is_none());
        assert!(PrintFmt::parse("\"%d %d\", REC->a", 8).is_none());
    }
}

//! Kernel symbols for call-chain frames, found the way `perf script` finds them offline: the
//! build-id cache that `perf record` fills (`$PERF_BUILDID_DIR` or `~/.debug`, then
//! `[kernel.kallsyms]/<build-id>/kallsyms`), else `/proc/kallsyms` when the running kernel's
//! build-id (`/sys/kernel/notes`) is the recording's. A kallsyms whose build-id does not match
//! is never used: frames stay `[unknown]`.

use std::path::PathBuf;

/// A kallsyms table (`/proc/kallsyms` text): function and data symbols sorted by address.
#[derive(Debug, Clone, Default)]
pub struct Kallsyms {
    /// (start, end, name), sorted by start, no two with the same start.
    syms: Vec<(u64, u64, String)>,
    /// Where `_text` and `_stext` are: perf's reference symbols for the kernel map
    /// (the `[kernel.kallsyms]_text` MMAP record's pgoff), so a table can be checked
    /// against a recording even without a build-id.
    refs: Vec<(String, u64)>,
}

impl Kallsyms {
    /// Parse `addr type name [module]` lines. As perf does (util/symbol.c): only text, weak,
    /// data and bss symbols (`T W D B`, either case); of several symbols at one address the last
    /// listed is kept (perf keeps the one with a non-zero length); a symbol ends where the next
    /// one starts, the last one a page after its start's page.
    pub fn parse(text: &str) -> Self {
        let mut v: Vec<(u64, String)> = Vec::new();
        let mut refs = Vec::new();
        for line in text.lines() {
            let mut it = line.split_ascii_whitespace();
            let (Some(a), Some(t), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            if !matches!(t, "T" | "t" | "W" | "w" | "D" | "d" | "B" | "b") {
                continue;
            }
            let Ok(addr) = u64::from_str_radix(a, 16) else {
                continue;
            };
            if addr == 0 {
                continue;
            }
            if name == "_text" || name == "_stext" {
                refs.push((name.to_string(), addr));
            }
            v.push((addr, name.to_string()));
        }
        v.sort_by_key(|s| s.0); // stable: file order kept at equal addresses
        let mut syms: Vec<(u64, u64, String)> = Vec::with_capacity(v.len());
        for (addr, name) in v {
            match syms.last_mut() {
                Some(last) if last.0 == addr => last.2 = name,
                _ => syms.push((addr, 0, name)),
            }
        }
        for i in 0..syms.len() {
            syms[i].1 = match syms.get(i + 1) {
                Some(n) => n.0,
                None => (syms[i].0 & !4095) + 8192,
            };
        }
        Kallsyms { syms, refs }
    }

    /// The address of `_text` or `_stext` (perf's reference symbols), when listed.
    pub fn reference(&self, name: &str) -> Option<u64> {
        self.refs.iter().find(|r| r.0 == name).map(|r| r.1)
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// True when no symbol was read.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The symbol holding `addr` and the offset into it.
    pub fn lookup(&self, addr: u64) -> Option<(&str, u64)> {
        self.index_of(addr).map(|i| self.at(i, addr))
    }

    /// The index of the symbol holding `addr`.
    fn index_of(&self, addr: u64) -> Option<usize> {
        let i = self.syms.partition_point(|s| s.0 <= addr).checked_sub(1)?;
        (addr < self.syms[i].1).then_some(i)
    }

    /// Symbol `i`'s name and `addr`'s offset into it.
    fn at(&self, i: usize, addr: u64) -> (&str, u64) {
        let (start, _, name) = &self.syms[i];
        (name.as_str(), addr - start)
    }
}

/// The symbols of the addresses looked up last, for a reader that names every frame of every
/// call chain: a recording's chains hold a few hundred distinct kernel addresses met millions
/// of times, and a search of the whole table (over 10^5 symbols) per frame was a sixth of
/// reading a `-g` recording's lock events.
#[derive(Debug, Default)]
pub struct Recent {
    /// By a hash of the address: (address, symbol index + 1), 0 for an empty slot.
    slots: Vec<(u64, u32)>,
}

impl Recent {
    /// Slots, a power of two.
    const SLOTS: usize = 4096;

    /// [`Kallsyms::lookup`], remembering the symbol an address was found in.
    pub fn lookup<'k>(&mut self, k: &'k Kallsyms, addr: u64) -> Option<(&'k str, u64)> {
        if self.slots.is_empty() {
            self.slots = vec![(0, 0); Self::SLOTS];
        }
        // Fibonacci hashing: the top bits of the product spread nearby addresses
        let h = (addr.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - Self::SLOTS.trailing_zeros()))
            as usize;
        let (a, i) = self.slots[h];
        if a == addr && i != 0 {
            return Some(k.at(i as usize - 1, addr));
        }
        let i = k.index_of(addr)?;
        if let Ok(n) = u32::try_from(i + 1) {
            self.slots[h] = (addr, n);
        }
        Some(k.at(i, addr))
    }
}

/// The build-id cache directory perf uses: `$PERF_BUILDID_DIR`, else `$HOME/.debug`.
pub fn buildid_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("PERF_BUILDID_DIR") {
        return Some(PathBuf::from(d));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".debug"))
}

/// The running kernel's build-id, from the ELF notes in `/sys/kernel/notes`.
pub fn running_kernel_build_id() -> Option<String> {
    let b = std::fs::read("/sys/kernel/notes").ok()?;
    notes_build_id(&b)
}

/// The GNU build-id note (type 3, name `GNU`) of a notes blob, as lowercase hex.
pub fn notes_build_id(b: &[u8]) -> Option<String> {
    let u32_at = |i: usize| -> Option<u32> {
        let s = b.get(i..i + 4)?;
        Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    };
    let align = |n: usize| (n + 3) & !3;
    let mut i = 0;
    while i + 12 <= b.len() {
        let namesz = u32_at(i)? as usize;
        let descsz = u32_at(i + 4)? as usize;
        let ty = u32_at(i + 8)?;
        let name = b.get(i + 12..i + 12 + namesz)?;
        let desc_at = i + 12 + align(namesz);
        let desc = b.get(desc_at..desc_at + descsz)?;
        if ty == 3 && name.starts_with(b"GNU") {
            return Some(hex(desc));
        }
        i = desc_at + align(descsz);
    }
    None
}

/// Lowercase hex of bytes.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Where the kernel's symbols came from, for the reader's note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// The build-id cache file at this path.
    Cache(PathBuf),
    /// `/proc/kallsyms`: the running kernel has the recording's build-id.
    Running,
    /// None usable; the reason.
    None(String),
}

/// Find the kallsyms for a recording whose kernel has `build_id` (hex; `None` when the file
/// records none).
pub fn find(build_id: Option<&str>) -> (Option<Kallsyms>, Found) {
    let Some(bid) = build_id else {
        return (
            None,
            Found::None(
                "the file records no kernel build-id, so no kallsyms can be checked against it"
                    .into(),
            ),
        );
    };
    if let Some(dir) = buildid_dir() {
        let p = dir.join("[kernel.kallsyms]").join(bid).join("kallsyms");
        if let Ok(text) = std::fs::read_to_string(&p) {
            return (Some(Kallsyms::parse(&text)), Found::Cache(p));
        }
    }
    match running_kernel_build_id() {
        Some(run) if run == bid => match std::fs::read_to_string("/proc/kallsyms") {
            Ok(text) => {
                let k = Kallsyms::parse(&text);
                if k.is_empty() {
                    (None, Found::None("/proc/kallsyms shows no addresses (kptr_restrict)".into()))
                } else {
                    (Some(k), Found::Running)
                }
            }
            Err(e) => (None, Found::None(format!("/proc/kallsyms: {e}"))),
        },
        Some(run) => (
            None,
            Found::None(format!(
                "no build-id cache entry for {bid}, and the running kernel's build-id is {run}: its /proc/kallsyms is not used"
            )),
        ),
        None => (
            None,
            Found::None(format!("no build-id cache entry for {bid}, and the running kernel's build-id is unknown")),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_follows_perf_rules() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _stext\nffffffff81000000 T _text\nffffffff81000100 t foo\n\
             ffffffff81000180 r rodata_skipped\nffffffff81000200 T bar [kvm]\n",
        );
        assert_eq!(k.lookup(0xffffffff81000010), Some(("_text", 0x10)));
        assert_eq!(k.lookup(0xffffffff81000190), Some(("foo", 0x90)));
        assert_eq!(k.lookup(0xffffffff81000210), Some(("bar", 0x10)));
        assert_eq!(k.lookup(0xffffffff80000000), None);
    }

    #[test]
    fn recent_lookups_are_the_tables() {
        // more addresses than slots, each met twice, some in no symbol
        let text: String = (0..3000u64)
            .map(|i| format!("{:x} t f{i}\n", 0xffffffff81000000u64 + 0x40 * i))
            .collect();
        let k = Kallsyms::parse(&text);
        let mut recent = Recent::default();
        for round in 0..2 {
            for j in 0..9000u64 {
                let addr = 0xffffffff80fff000u64 + 0x17 * j + round;
                assert_eq!(recent.lookup(&k, addr), k.lookup(addr), "{addr:x}");
            }
        }
    }

    #[test]
    fn build_id_from_notes() {
        let mut n = Vec::new();
        n.extend_from_slice(&4u32.to_le_bytes());
        n.extend_from_slice(&4u32.to_le_bytes());
        n.extend_from_slice(&3u32.to_le_bytes());
        n.extend_from_slice(b"GNU\0");
        n.extend_from_slice(&[0xa3, 0xe4, 0xcd, 0x60]);
        assert_eq!(notes_build_id(&n).as_deref(), Some("a3e4cd60"));
    }
}

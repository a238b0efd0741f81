//! The reader against perf itself: each fixture's perf.data (fixtures/capture-perfdata.sh) read
//! here must give the events `perf script --ns` printed for the same file, field by field.

use std::io::{Cursor, Read};

use super::*;
use crate::perf_script;

/// A gzipped fixture, decompressed (`path` from the repository root).
pub(super) fn gunzip(path: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path);
    let f = std::fs::File::open(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(f)
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn read_all(bytes: Vec<u8>, opts: Options) -> (Result<Vec<Event>, Error>, Diagnostics) {
    let mut r = Reader::with_options(Box::new(Cursor::new(bytes)), opts);
    let mut out = Vec::new();
    loop {
        match r.next_event() {
            Ok(Some(e)) => out.push(e),
            Ok(None) => return (Ok(out), r.diagnostics().clone()),
            Err(e) => return (Err(e), r.diagnostics().clone()),
        }
    }
}

fn text_events(path: &str) -> Vec<Event> {
    let text = gunzip(path);
    let mut r = perf_script::Reader::new(&text[..], &ReaderOptions::default());
    let mut out = Vec::new();
    while let Some(e) = r.next_event().unwrap() {
        out.push(e);
    }
    out
}

fn fixture_kallsyms() -> kallsyms::Kallsyms {
    let text = gunzip("fixtures/perfdata/micro-16K-g/kallsyms.gz");
    kallsyms::Kallsyms::parse(&String::from_utf8(text).unwrap())
}

/// Compare what both readers saw. Columns that differ by construction: `line` (a binary file
/// has none: the sample number), `source`, `pid` and `period` (perf script's default output
/// prints neither for tracepoints, the file holds both), and the symbol of user-space frames
/// (perf script names them from the ELF file on disk; the reader keeps `[unknown]`).
fn assert_same(bin: &[Event], text: &[Event]) {
    assert_eq!(bin.len(), text.len(), "event count");
    for (i, (b, t)) in bin.iter().zip(text).enumerate() {
        let ctx = || format!("event {} (text line {}): {b:?}\nvs {t:?}", i + 1, t.line);
        assert_eq!(b.ts_ns, t.ts_ns, "{}", ctx());
        assert_eq!((b.ts_res_ns, t.ts_res_ns), (1, 1));
        assert_eq!(b.cpu, t.cpu, "{}", ctx());
        assert_eq!(b.comm, t.comm, "{}", ctx());
        assert_eq!(b.tid, t.tid, "{}", ctx());
        assert_eq!(b.system, t.system, "{}", ctx());
        assert_eq!(b.name, t.name, "{}", ctx());
        assert_eq!(b.payload, t.payload, "{}", ctx());
        assert_eq!(b.callchain.len(), t.callchain.len(), "{}", ctx());
        for (fb, ft) in b.callchain.iter().zip(&t.callchain) {
            assert_eq!((fb.addr, &fb.dso), (ft.addr, &ft.dso), "{}", ctx());
            if fb.dso.as_deref() == Some("[kernel.kallsyms]") {
                assert_eq!(
                    (&fb.symbol, fb.offset),
                    (&ft.symbol, ft.offset),
                    "{}",
                    ctx()
                );
            } else {
                assert_eq!(fb.symbol, "[unknown]");
            }
        }
        assert_eq!(b.pid.map(|_| ()), Some(()), "the file has the pid");
        assert_eq!(b.period, Some(1), "a tracepoint's period is 1");
        assert_eq!(b.source, Source::PerfData);
    }
}

#[test]
fn replay_recording_gives_the_events_perf_script_printed() {
    let bin = gunzip("fixtures/perfdata/micro-16K-replay/perf.data.gz");
    let (got, d) = read_all(bin, Options::default());
    let got = got.unwrap();
    let text = text_events("fixtures/perfdata/micro-16K-replay/script-ns.txt.gz");
    assert_same(&got, &text);
    // 66447 sample records, counted in the text with `zcat script-ns.txt.gz | wc -l`
    assert_eq!(got.len(), 66447);
    assert_eq!(d.skipped, 0);
    // only the header context: no lost events, nothing printed raw
    assert_eq!(d.notes.len(), 1, "{:?}", d.notes);
    assert!(d.notes[0].starts_with("recorded by perf "), "{:?}", d.notes);
    // the print fmt's flag helpers read as perf prints them: counts from
    // `zcat script-ns.txt.gz | grep -o 'gfp_flags=.*' | sort | uniq -c` and the like
    let count = |suffix: &str| got.iter().filter(|e| e.payload.ends_with(suffix)).count();
    assert_eq!(count("(flags=SPIN)"), 2268);
    assert_eq!(count("(flags=READ)"), 2);
    assert_eq!(count(" flags=Ma bd"), 20513); // trailing blank of the 6-wide field trimmed, as in the text
    assert_eq!(count("gfp_flags=GFP_TRANSHUGE_LIGHT"), 20481);
    assert_eq!(
        count("gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_WRITE|__GFP_COMP"),
        1
    );
    assert_eq!(
        count("gfp_flags=GFP_KERNEL_ACCOUNT|__GFP_ZERO|__GFP_COMP"),
        171
    );
}

#[test]
fn g_recording_names_kernel_frames_from_the_recordings_kallsyms() {
    let bin = gunzip("fixtures/perfdata/micro-16K-g/perf.data.gz");
    let opts = Options {
        kallsyms: Some(fixture_kallsyms()),
        ..Options::default()
    };
    let (got, _) = read_all(bin, opts);
    let got = got.unwrap();
    let text = text_events("fixtures/perfdata/micro-16K-g/script-ns.txt.gz");
    assert_same(&got, &text);
    assert_eq!(got.len(), 37239);
    assert!(got.iter().all(|e| !e.callchain.is_empty()));
}

fn replay_bytes() -> Vec<u8> {
    gunzip("fixtures/perfdata/micro-16K-replay/perf.data.gz")
}

fn strict() -> Options {
    Options::default()
}

fn lenient() -> Options {
    let mut o = Options::default();
    o.common.lenient = true;
    o
}

fn binary_err(r: Result<Vec<Event>, Error>) -> (u64, String) {
    match r {
        Err(Error::Binary { offset, what, .. }) => (offset, what),
        other => panic!(
            "expected a perf.data error, got {:?}",
            other.map(|v| v.len())
        ),
    }
}

#[test]
fn bad_magic_and_short_files_are_errors_naming_the_offset() {
    let mut b = replay_bytes();
    b[..8].copy_from_slice(b"PERFILE3");
    let (off, what) = binary_err(read_all(b, strict()).0);
    assert_eq!(off, 0);
    assert!(
        what.contains("expected the perf.data magic PERFILE2, got \"PERFILE3\""),
        "{what}"
    );
    let (off, what) = binary_err(read_all(b"PERFILE2".to_vec(), lenient()).0);
    assert_eq!(off, 8);
    assert!(
        what.contains("got the end of the file after 8 byte(s)"),
        "{what}"
    );
    let mut b = replay_bytes();
    b[..8].copy_from_slice(b"2ELIFREP");
    assert!(binary_err(read_all(b, strict()).0).1.contains("big-endian"));
}

#[test]
fn header_pointing_past_the_end_is_an_error() {
    let mut b = replay_bytes();
    let len = b.len() as u64;
    // attr section offset beyond the file
    b[24..32].copy_from_slice(&(len + 100).to_le_bytes());
    let (off, what) = binary_err(read_all(b, lenient()).0);
    assert_eq!(off, 24);
    assert!(what.contains("attr section"), "{what}");
}

#[test]
fn cut_short_is_an_error_strict_and_reads_the_whole_records_lenient() {
    let whole = replay_bytes();
    let (all, _) = read_all(whole.clone(), strict());
    let all = all.unwrap();
    let data_off = u64_at(&whole, 40).unwrap() as usize;
    let data_size = u64_at(&whole, 48).unwrap() as usize;
    // cut in the middle of the data section, inside a record
    let cut = data_off + data_size / 2 + 3;
    let b = whole[..cut].to_vec();
    let (off, what) = binary_err(read_all(b.clone(), strict()).0);
    assert!(
        off as usize <= cut && off as usize > cut - 200,
        "{off} vs cut at {cut}"
    );
    assert!(what.contains("file cut short"), "{what}");
    assert!(
        what.contains(&format!("the file ends at byte {cut}")),
        "{what}"
    );
    // lenient: the tracing data went with the feature sections; give the reader the intact
    // file's (in real use: the running kernel's tracefs, as perf does)
    let mut full = PerfFileReader::parse_file(Cursor::new(whole.clone()))
        .unwrap()
        .perf_file;
    let td = tracing::parse(full.feature_section_data(Feature::TRACING_DATA).unwrap()).unwrap();
    let _ = &mut full;
    let mut o = lenient();
    o.tracing_fallback = Some(td);
    let (got, d) = read_all(b, o);
    let got = got.unwrap();
    assert_eq!(d.skipped, 1, "the partial record is counted");
    assert!(
        d.first[0].to_string().contains("file cut short"),
        "{}",
        d.first[0]
    );
    assert!(
        d.notes.iter().any(|n| n.contains("no tracing data")),
        "{:?}",
        d.notes
    );
    // every sample before the cut, equal to the intact file's first ones
    assert!(
        got.len() > all.len() / 3 && got.len() < all.len(),
        "{} of {}",
        got.len(),
        all.len()
    );
    // each event read from the cut file is one of the intact file's, with the same payload
    // (the last round before the cut may come out in another order: compare as sets)
    let key = |e: &Event| (e.ts_ns, e.cpu, e.tid, e.name.clone(), e.payload.clone());
    let intact: std::collections::HashMap<_, _> =
        all.iter().map(|e| (key(e), e.comm.clone())).collect();
    let missing = got.iter().filter(|e| !intact.contains_key(&key(e))).count();
    assert_eq!(missing, 0, "events of the cut file not in the intact one");
    // perf writes each CPU's ring buffer when it fills, so records of the run's first
    // milliseconds (the exec's COMM, the FORKs) can sit after the cut: such a thread is then
    // named `:TID`, as perf names a thread it has no COMM for; a name given is the right one
    for e in &got {
        let want = &intact[&key(e)];
        assert!(
            e.comm == *want || e.comm == format!(":{}", e.tid),
            "{} vs {want}",
            e.comm
        );
    }
}

#[test]
fn a_record_with_a_size_below_its_header_is_an_error() {
    let mut b = replay_bytes();
    let data_off = u64_at(&b, 40).unwrap() as usize;
    b[data_off + 6..data_off + 8].copy_from_slice(&4u16.to_le_bytes());
    let (off, what) = binary_err(read_all(b, strict()).0);
    assert_eq!(off as usize, data_off);
    assert!(what.contains("got size 4"), "{what}");
}

/// `key=value` (meta) or `key: value` (perf report --stats) lines of a fixture text file.
fn fixture_value(path: &str, key: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    text.lines()
        .find_map(|l| l.trim().strip_prefix(key))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| panic!("{path}: no {key}"))
}

#[test]
fn header_context_and_lost_counts_are_what_perf_says_of_the_file() {
    // micro-16K-lost: recorded with a one-page buffer, so perf lost most samples; lost.txt is
    // perf's own view of the same file (`perf report --stats`, `# Total Lost Samples`), meta
    // what `uname -r`, `nproc` and `perf version` said at record time.
    let dir = "fixtures/perfdata/micro-16K-lost";
    let mut r = Reader::with_options(
        Box::new(Cursor::new(gunzip(&format!("{dir}/perf.data.gz")))),
        strict(),
    );
    assert!(r.header().is_none(), "nothing read yet");
    let mut n = 0u64;
    while r.next_event().unwrap().is_some() {
        n += 1;
    }
    let h = r.header().unwrap().clone();
    let lost_txt = format!("{dir}/lost.txt");
    let meta = format!("{dir}/meta");
    let samples: u64 = fixture_value(&lost_txt, "SAMPLE events:")
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(n, samples);
    let total_lost: u64 = fixture_value(&lost_txt, "# Total Lost Samples:")
        .parse()
        .unwrap();
    assert!(total_lost > 0);
    assert_eq!(h.lost_samples, total_lost);
    assert_eq!(h.lost_events(), total_lost);
    let chunks: u64 = fixture_value(&lost_txt, "LOST events:")
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(h.lost_records, chunks);
    assert!(h.lost_kernel >= h.lost_records);
    assert!(h.complete);
    assert_eq!(
        h.nr_cpus_online.map(|c| c.to_string()),
        Some(fixture_value(&meta, "nproc="))
    );
    assert_eq!(h.os_release, Some(fixture_value(&meta, "kernel=")));
    assert_eq!(
        h.perf_version.map(|v| format!("perf version {v}")),
        Some(fixture_value(&meta, "perf_version="))
    );
    let cmd = h.cmdline.unwrap().join(" ");
    assert!(cmd.contains("record -q -m 1 "), "{cmd}");
    assert_eq!(
        h.events,
        [
            "lock:contention_begin",
            "lock:contention_end",
            "pagemap:mm_lru_insertion",
            "kmem:mm_page_alloc",
            "kmem:mm_page_free"
        ]
    );
    let notes = r.diagnostics().notes.join("\n");
    assert!(
        notes.contains(&format!(
            "lost {total_lost} event(s) ({chunks} PERF_RECORD_LOST"
        )),
        "{notes}"
    );
    // a recording that lost nothing says nothing about it
    let (_, d) = read_all(replay_bytes(), strict());
    assert!(!d.notes.iter().any(|n| n.contains("lost")), "{:?}", d.notes);
}

/// Bytes `offset..offset + size` of feature `bit`'s section.
fn feature_section(b: &[u8], bit: usize) -> (usize, usize) {
    let entry = feature_entry(b, bit).expect("the feature is present");
    let (o, s) = sect(b, entry as usize);
    (o as usize, s as usize)
}

#[test]
fn a_damaged_cmdline_count_leaves_the_cmdline_out_instead_of_sizing_an_allocation() {
    // what a fuzzed file did (parsers/tests/fuzz_regressions.rs), on a real capture: the
    // CMDLINE feature's string count set to 4 G, which the record reader's own cmdline()
    // would reserve room for before reading a string
    const HEADER_CMDLINE: usize = 11;
    let good = replay_bytes();
    let (o, size) = feature_section(&good, HEADER_CMDLINE);
    let n = u32_at(&good, o).unwrap();
    assert!(
        n > 3 && size > 4 * n as usize,
        "a real command line: {n} strings"
    );
    let mut bad = good.clone();
    bad[o..o + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let header = |bytes: Vec<u8>| {
        let mut r = Reader::with_options(Box::new(Cursor::new(bytes)), strict());
        let mut events = 0;
        while r.next_event().unwrap().is_some() {
            events += 1;
        }
        (events, r.header().unwrap().clone())
    };
    let (n_good, h_good) = header(good);
    let (n_bad, h_bad) = header(bad);
    let cmd = h_good
        .cmdline
        .expect("the intact file has its command line");
    assert_eq!(cmd.len(), n as usize);
    assert_eq!(
        (cmd[0].as_str(), cmd[1].as_str()),
        ("/usr/bin/perf", "record")
    );
    assert_eq!(
        h_bad.cmdline, None,
        "a count past the section is no command line"
    );
    // the rest of the file reads as before
    assert_eq!(n_bad, n_good);
    assert_eq!(h_bad.os_release, h_good.os_release);
}

/// The bundled perf.data recordings' directories under fixtures/perfdata, sorted.
fn fixture_dirs() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/perfdata");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|d| d.unwrap().file_name().into_string().unwrap())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn the_kept_records_read_alike_from_a_copy_from_the_file_and_from_a_copy_given_up() {
    let only: &[&str] = &["contention_begin", "contention_end"];
    let mut copied = 0;
    for d in &fixture_dirs() {
        let bin = gunzip(&format!("fixtures/perfdata/{d}/perf.data.gz"));
        let read = |copy_up_to: usize| {
            let mut r = Reader::with_options(Box::new(Cursor::new(bin.clone())), strict());
            r.copy_up_to = copy_up_to;
            read_all_events(r, Some(only))
        };
        // whole (the default), none, and one given up after its first few records
        let (a, b, c) = (read(compact::COPY_UP_TO), read(0), read(2000));
        assert!(a == b && b == c, "{d}: the lock events differ");
        // what each was shown: the copy is the kept records' bytes, or there is none
        let file = bytes::Bytes::Owned(bin.clone());
        let names: Vec<String> = only.iter().map(|s| s.to_string()).collect();
        let Some(whole) = compact::drop_samples(&file, &names, compact::COPY_UP_TO) else {
            continue;
        };
        let kept: Vec<u8> = whole
            .kept
            .iter()
            .flat_map(|&(x, y)| bin[x..y].to_vec())
            .collect();
        assert!(kept.len() > 2000, "{d}");
        let copy = whole.copy.expect("a copy under the cap");
        assert!(copy.iter().all(|p| p.len() <= compact::COPY_PIECE), "{d}");
        assert_eq!(copy.concat(), kept, "{d}");
        for cap in [0, 2000] {
            let d2 = compact::drop_samples(&file, &names, cap).unwrap();
            assert_eq!((d2.copy, d2.kept), (None, whole.kept.clone()), "{d}");
        }
        copied += 1;
    }
    // three of the bundled recordings have samples to take out when this was written
    assert!(copied >= 3, "only {copied} fixtures had samples taken out");
}

/// `lockcast record`'s recipes that take call chains record the lock events with `-g` and the
/// per-folio events with `/call-graph=no/`, so the attrs' sample layouts differ and perf adds
/// `IDENTIFIER` to each: such a file's unasked samples are taken out too (each record's time
/// read where its own attr's layout has it), and the lock events read from what is left are
/// those of a whole read, numbers (`line`) and call chains included.
#[test]
fn samples_of_attrs_with_different_layouts_are_taken_out_by_their_identifier() {
    let only: &[&str] = &["contention_begin", "contention_end"];
    let bin = gunzip("fixtures/perfdata/fbatch-churn-4K/perf.data.gz");
    let file = bytes::Bytes::Owned(bin.clone());
    let names: Vec<String> = only.iter().map(|s| s.to_string()).collect();
    let dropped = compact::drop_samples(&file, &names, compact::COPY_UP_TO)
        .expect("the samples of the other events taken out");
    let (alone, _) = read_all_events(
        Reader::with_options(Box::new(Cursor::new(bin.clone())), strict()),
        Some(only),
    );
    let (all, _) = read_all_events(
        Reader::with_options(Box::new(Cursor::new(bin)), strict()),
        None,
    );
    let lock: Vec<Event> = all
        .into_iter()
        .filter(|e| only.contains(&e.name.as_str()))
        .collect();
    // 204 contention_end lines in its perf script text, as many begins
    assert_eq!(lock.len(), 408);
    assert_eq!(dropped.lines.len(), lock.len());
    assert!(lock.iter().all(|e| !e.callchain.is_empty()));
    assert_eq!(alone, lock);
}

/// Every event of `r`, only `only`'s samples when asked, and the diagnostics.
fn read_all_events(mut r: Reader, only: Option<&[&str]>) -> (Vec<Event>, Diagnostics) {
    if let Some(o) = only {
        r.only(o);
    }
    let mut out = Vec::new();
    while let Some(e) = r.next_event().unwrap() {
        out.push(e);
    }
    (out, r.diagnostics().clone())
}

/// Read `bytes` as a stream with `opts`, giving only `only`'s samples when asked.
fn read_stream(bytes: Vec<u8>, opts: Options, only: Option<&[&str]>) -> (Vec<Event>, Diagnostics) {
    read_all_events(
        Reader::with_options(Box::new(Cursor::new(bytes)), opts),
        only,
    )
}

#[test]
fn a_stream_read_through_a_temporary_file_gives_what_it_gives_read_into_memory() {
    let dirs = fixture_dirs();
    assert!(dirs.len() >= 10, "{dirs:?}");
    let spilled = |mut o: Options| {
        o.spill_above = Some(4096);
        o
    };
    for d in &dirs {
        let bin = gunzip(&format!("fixtures/perfdata/{d}/perf.data.gz"));
        assert!(bin.len() > 4096 * 16, "{d}: too short to spill");
        let mem = read_stream(bin.clone(), Options::offline(false), None);
        let file = read_stream(bin.clone(), spilled(Options::offline(false)), None);
        assert!(!mem.0.is_empty(), "{d}");
        assert_eq!(mem.0.len(), file.0.len(), "{d}");
        assert!(mem == file, "{d}: events or notes differ");
        // the lock events alone: the compaction's view over the mapped file
        let only: &[&str] = &["contention_begin", "contention_end"];
        let mem = read_stream(bin.clone(), Options::offline(false), Some(only));
        let file = read_stream(bin, spilled(Options::offline(false)), Some(only));
        assert!(mem == file, "{d}: lock events differ");
    }
    // a file cut short, read leniently: the one write into the mapping (its header)
    let whole = replay_bytes();
    let cut = u64_at(&whole, 40).unwrap() as usize + u64_at(&whole, 48).unwrap() as usize / 2 + 3;
    let b = whole[..cut].to_vec();
    let mem = read_stream(b.clone(), Options::offline(true), None);
    let file = read_stream(b, spilled(Options::offline(true)), None);
    assert_eq!(mem.1.skipped, 1);
    assert!(mem == file, "cut short: events or notes differ");
}

/// Payloads left to the caller ([`Reader::defer_payloads`]) and rendered into the events in
/// runs of any length, the events filled into reused ones ([`Reader::next_event_into`]), give
/// the events and notes of a plain read: tracepoint payloads, call chains named from kallsyms,
/// a 4K recording of the fbatch workload.
#[test]
fn deferred_payloads_give_the_events_of_a_plain_read() {
    for path in [
        "fixtures/perfdata/micro-16K-replay/perf.data.gz",
        "fixtures/perfdata/micro-16K-g/perf.data.gz",
        "fixtures/perfdata/fbatch-churn-4K/perf.data.gz",
    ] {
        let bin = gunzip(path);
        let opts = || Options {
            kallsyms: Some(fixture_kallsyms()),
            ..Options::default()
        };
        let (plain, notes) = read_all(bin.clone(), opts());
        let plain = plain.unwrap();
        assert!(plain.iter().any(|e| !e.payload.is_empty()), "{path}");
        for run in [1, 7, 4096] {
            let mut r = Reader::with_options(Box::new(Cursor::new(bin.clone())), opts());
            assert!(r.defer_payloads());
            let (mut got, mut unparsed, mut deferred) = (Vec::new(), 0, 0);
            // one batch of events, refilled each run: what the caller's recycled batches are
            let mut batch: Vec<Event> = Vec::new();
            loop {
                let mut n = 0;
                while n < run {
                    if n == batch.len() {
                        batch.push(Event::empty(Source::PerfData));
                    }
                    if !r.next_event_into(&mut batch[n]).unwrap() {
                        break;
                    }
                    n += 1;
                }
                let events = &mut batch[..n];
                if let Some(d) = r.take_deferred() {
                    deferred += events.iter().filter(|e| e.payload.is_empty()).count();
                    unparsed += d.render_into(events);
                }
                got.extend(events.iter().cloned());
                if n < run {
                    break;
                }
            }
            r.deferred_done(unparsed);
            assert!(deferred > 0, "{path}: nothing was deferred");
            assert_eq!(got.len(), plain.len(), "{path}, runs of {run}");
            assert!(got == plain, "{path}, runs of {run}: the events differ");
            assert_eq!(r.diagnostics(), &notes, "{path}, runs of {run}");
        }
    }
}

/// Payloads left unrendered: the events of a plain read, every field but the payload, which
/// is empty (tracepoint payloads and kallsyms-named call chains).
#[test]
fn left_payloads_give_the_events_of_a_plain_read_without_payloads() {
    for path in [
        "fixtures/perfdata/micro-16K-replay/perf.data.gz",
        "fixtures/perfdata/micro-16K-g/perf.data.gz",
    ] {
        let bin = gunzip(path);
        let opts = || Options {
            kallsyms: Some(fixture_kallsyms()),
            ..Options::default()
        };
        let (plain, _) = read_all(bin.clone(), opts());
        let mut plain = plain.unwrap();
        assert!(plain.iter().any(|e| !e.payload.is_empty()), "{path}");
        let mut r = Reader::with_options(Box::new(Cursor::new(bin)), opts());
        assert!(r.leave_payloads());
        let mut got = Vec::new();
        while let Some(e) = r.next_event().unwrap() {
            got.push(e);
        }
        assert!(got.iter().all(|e| e.payload.is_empty()), "{path}");
        plain.iter_mut().for_each(|e| e.payload.clear());
        assert_eq!(got.len(), plain.len(), "{path}");
        assert!(
            got == plain,
            "{path}: the events differ beyond their payloads"
        );
        // too late once reading began
        assert!(!r.leave_payloads());
    }
}

/// Payloads rendered raw by the caller are said in the notes once every one was rendered,
/// as the reader says those it renders itself.
#[test]
fn deferred_payloads_printed_raw_are_in_the_notes() {
    let mut r = Reader::with_options(Box::new(Cursor::new(replay_bytes())), Options::default());
    assert!(r.defer_payloads());
    while r.next_event().unwrap().is_some() {}
    r.deferred_done(3);
    let notes = &r.diagnostics().notes;
    assert!(
        notes
            .last()
            .is_some_and(|n| n.starts_with("3 tracepoint event(s) printed raw")),
        "{notes:?}"
    );
    // a reader that already gave an event defers nothing
    let mut late = Reader::with_options(Box::new(Cursor::new(replay_bytes())), Options::default());
    assert!(late.next_event().unwrap().is_some());
    assert!(!late.defer_payloads());
    assert!(late.take_deferred().is_none());
}

/// The names of one pass over the COMM and FORK records and the samples' tids are those a
/// plain read gives each tid at its first event; a file the pass cannot take (pipe mode,
/// compressed records) says so and is then read whole from its beginning.
#[test]
fn task_names_are_each_tids_comm_at_its_first_event() {
    let mut walked = 0;
    for dir in [
        "micro-16K-replay",
        "micro-16K-lost",
        "micro-16K-z",
        "micro-16K-pipe",
        "micro-16K-g",
        "fbatch-churn-4K",
        "lazyfree-khugepaged",
        "lazyfree-reclaim",
    ] {
        let path = format!("fixtures/perfdata/{dir}/perf.data.gz");
        let bin = gunzip(&path);
        let (plain, _) = read_all(bin.clone(), Options::default());
        let plain = plain.unwrap();
        let mut want = std::collections::BTreeMap::new();
        for e in &plain {
            want.entry(e.tid).or_insert_with(|| e.comm.clone());
        }
        let mut r = Reader::with_options(Box::new(Cursor::new(bin)), Options::default());
        match r.task_names().unwrap() {
            Some(got) => {
                assert_eq!(got, want, "{path}");
                assert!(r.next_event().unwrap().is_none(), "{path}");
                walked += 1;
            }
            None => {
                let mut n = 0;
                while r.next_event().unwrap().is_some() {
                    n += 1;
                }
                assert_eq!(n, plain.len(), "{path}");
            }
        }
    }
    // the replay, lost-samples and khugepaged recordings (their FORK records name threads by
    // their parents), and the three with call chains; the other two are compressed or in
    // pipe mode
    assert_eq!(walked, 6);
}

//! Regression tests for damaged input found by the mutation test (`tests/it/mutation.rs`) and
//! the fuzz targets (`fuzz/`): each builds its input from a real capture at run time.

use lockcast_parsers::perf_lock::{parse_all, Mode, Options, Parsed};
use lockcast_parsers::{Error, LineError};

fn fixture(p: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/").to_string() + p;
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn lenient() -> Options {
    let mut o = Options::default();
    o.lenient = true;
    o
}

fn callers(p: &Parsed) -> Vec<&str> {
    p.tables[0]
        .rows
        .iter()
        .map(|r| r.caller.as_deref().unwrap_or(""))
        .collect()
}

/// `perf lock contention -v` prints an unresolved user-space return address with a blank
/// symbol (`\t\t\t0x558de20376ab  `, line 25 of the capture). That line used to end the table
/// silently, losing the 16 rows after it.
#[test]
fn verbose_stack_frame_with_blank_symbol_keeps_the_table_going() {
    let text = fixture("captures/micro-16K-r1/contention-v.txt");
    assert!(text.lines().nth(24).unwrap() == "\t\t\t0x558de20376ab  ");
    let rows_in_text = text
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .filter(|l| !l.trim_start().starts_with("0x"))
        .count();
    let p = parse_all(text.as_bytes(), &Options::default()).unwrap();
    assert_eq!(rows_in_text, 18);
    assert_eq!(p.tables[0].rows.len(), 18);
    let r = &p.tables[0].rows[1];
    assert_eq!(r.caller.as_deref(), Some("exc_page_fault+0x1d8"));
    assert_eq!(r.stack.len(), 6);
    assert_eq!(r.stack[5].addr, 0x558de20376ab);
    assert_eq!(r.stack[5].symbol, "");
    assert_eq!(
        p.tables[0].rows[2].caller.as_deref(),
        Some("get_page_from_freelist+0x2fe")
    );
}

/// A line of another program's output inside a table (two tools writing to one terminal)
/// used to end the table, so every row after it was read as prose: lost without a word.
/// Now it is a malformed line: an error in strict mode, skipped and counted in lenient mode.
#[test]
fn foreign_line_inside_a_table_is_malformed_not_the_end_of_the_table() {
    let clean = fixture("captures/micro-16K-r1/contention.txt");
    let foreign = fixture("ftrace/tracefs-6.18.44-default.txt")
        .lines()
        .nth(19)
        .unwrap()
        .to_string();
    assert!(foreign.contains("mm_page_alloc"));
    let mut lines: Vec<&str> = clean.lines().collect();
    // After the `exc_page_fault` row (line 4): the foreign line becomes line 5.
    lines.insert(4, &foreign);
    let text = lines.join("\n") + "\n";

    match parse_all(text.as_bytes(), &Options::default()) {
        Err(Error::Malformed { location, kind, .. }) => {
            assert_eq!(location.line, 5);
            assert!(matches!(kind, LineError::Expected { .. }), "{kind}");
        }
        other => panic!("want a malformed line 5, got {other:?}"),
    }
    let l = parse_all(text.as_bytes(), &lenient()).unwrap();
    let c = parse_all(clean.as_bytes(), &Options::default()).unwrap();
    assert_eq!(l.diagnostics.skipped, 1);
    assert_eq!(l.diagnostics.first[0].location.line, 5);
    assert_eq!(callers(&l), callers(&c));
    assert_eq!(l.tables[0].rows.len(), 18);
    assert_eq!(l.tables[0].rows[2].contended, Some(251));
}

/// The same between the header's blank line and the first row.
#[test]
fn foreign_line_between_header_and_first_row_is_malformed() {
    let clean = fixture("captures/micro-16K-r1/contention.txt");
    let mut lines: Vec<&str> = clean.lines().collect();
    lines.insert(1, "perf: interrupt took too long (2504 > 2500)");
    let text = lines.join("\n") + "\n";
    let err = parse_all(text.as_bytes(), &Options::default()).unwrap_err();
    assert_eq!(err.location().map(|l| l.line), Some(2));
    let l = parse_all(text.as_bytes(), &lenient()).unwrap();
    assert_eq!(l.diagnostics.skipped, 1);
    assert_eq!(l.tables[0].rows[0].contended, Some(14082));
    assert_eq!(l.tables[0].rows.len(), 18);
}

/// A capture cut in the middle of its last row (`     106` of `     10693: :10693`) used to
/// lose that row silently: the stub did not look like a row, so it was read as prose.
#[test]
fn row_cut_short_at_the_end_of_the_input_is_malformed() {
    let clean = fixture("captures/micro-16K-r1/info-t.txt");
    let cut = clean.find("     10694:").unwrap() + 8;
    let text = &clean[..cut];
    assert!(text.ends_with("     106"));
    let err = parse_all(text.as_bytes(), &Options::default()).unwrap_err();
    assert_eq!(err.location().map(|l| l.line), Some(3));
    let l = parse_all(text.as_bytes(), &lenient()).unwrap();
    assert_eq!(l.tables[0].header.mode, Mode::InfoThread);
    assert_eq!(l.tables[0].rows.len(), 1);
    assert_eq!(l.tables[0].rows[0].pid, Some(10693));
    assert_eq!(l.diagnostics.skipped, 1);
}

/// Prose right after a table (no blank line) still ends it without complaint, as in mails.
#[test]
fn prose_paragraph_after_a_table_still_ends_it() {
    let clean = fixture("captures/micro-16K-r1/contention.txt");
    let text = clean.clone() + "The numbers above are from a 2-thread run.\nMore below.\n\n";
    let p = parse_all(text.as_bytes(), &Options::default()).unwrap();
    assert_eq!(p.tables[0].rows.len(), 18);
    assert_eq!(p.diagnostics.skipped, 0);
}

/// A damaged first row of a `-v` table: its stack lines used to keep the table "interrupted"
/// until the window ran out, losing every row; and a damaged later row's stack lines were
/// appended to the row before it. Now the damaged row is skipped with its own frames.
#[test]
fn damaged_row_of_a_verbose_table_takes_its_stack_with_it() {
    let clean = fixture("captures/micro-16K-r1/contention-v.txt");
    let c = parse_all(clean.as_bytes(), &Options::default()).unwrap();
    // The first row (its stack follows it) and the second.
    let targets = [c.tables[0].rows[0].line, c.tables[0].rows[1].line];
    assert_eq!(targets, [10, 19]);
    for damaged_line in targets.map(|l| l as usize) {
        let mut lines: Vec<String> = clean.lines().map(str::to_string).collect();
        lines[damaged_line - 1].insert(0, '\0');
        let text = lines.join("\n") + "\n";
        let err = parse_all(text.as_bytes(), &Options::default()).unwrap_err();
        assert_eq!(err.location().map(|l| l.line), Some(damaged_line as u64));
        let l = parse_all(text.as_bytes(), &lenient()).unwrap();
        assert_eq!(l.diagnostics.skipped, 1, "line {damaged_line}");
        let want: Vec<_> = c.tables[0]
            .rows
            .iter()
            .filter(|r| r.line != damaged_line as u64)
            .collect();
        let got: Vec<_> = l.tables[0].rows.iter().collect();
        assert_eq!(got, want, "line {damaged_line}");
    }
}

/// `perf lock info -m` cut inside an address (`0xffffa0d8e0`) is a malformed row, not a
/// `-v` stack frame of the row before it.
#[test]
fn info_map_row_cut_inside_its_address_is_malformed() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/corpus/perf-lock/info-map-m.txt"
    );
    let clean = std::fs::read_to_string(path).unwrap();
    let cut = clean.find(" 0xffffa0d8e051cc48").unwrap() + 13;
    let text = &clean[..cut];
    assert!(text.ends_with("\n 0xffffa0d8e0"));
    let l = parse_all(text.as_bytes(), &lenient()).unwrap();
    assert_eq!(l.tables[0].header.mode, Mode::InfoMap);
    assert_eq!(l.tables[0].rows.len(), 2);
    assert!(l.tables[0].rows.iter().all(|r| r.stack.is_empty()));
    assert_eq!(l.diagnostics.skipped, 1);
    assert_eq!(l.diagnostics.first[0].location.line, 5);
}

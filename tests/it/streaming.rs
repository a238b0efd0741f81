//! `parse` writes the lock tables a piece at a time (`--chunk-rows`, hidden: the default is
//! 65 536 rows, more than any fixture has). Cutting a real capture into pieces of a few rows
//! must give the very bytes (CSV, JSON) and rows (Parquet) of one piece, and the printed
//! summary must count what the raw capture holds.

use std::path::Path;

use polars::prelude::*;

use crate::common::{lockcast, stderr, stdout};

/// `parse INPUT --table TABLES -o DIR --to FMT [--chunk-rows N]`; the files written, by name.
fn tables(input: &str, tables: &str, fmt: &str, chunk: Option<&str>) -> Vec<(String, Vec<u8>)> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_string_lossy().into_owned();
    let mut args = vec!["parse", input, "--table", tables, "-o", &out, "--to", fmt];
    if let Some(n) = chunk {
        args.extend(["--chunk-rows", n]);
    }
    let o = lockcast(&args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

fn parquet_frame(bytes: &[u8]) -> DataFrame {
    ParquetReader::new(std::io::Cursor::new(bytes.to_vec()))
        .finish()
        .unwrap()
}

/// Row groups of a Parquet file: one per piece handed to the writer.
fn row_groups(bytes: &[u8]) -> usize {
    let mut r = ParquetReader::new(std::io::Cursor::new(bytes.to_vec()));
    r.get_metadata().unwrap().row_groups.len()
}

fn same_text_in_pieces(input: &str, table: &str, chunk: &str) {
    for fmt in ["csv", "json"] {
        let whole = tables(input, table, fmt, None);
        let cut = tables(input, table, fmt, Some(chunk));
        assert_eq!(whole.len(), cut.len(), "{input} {fmt}");
        for ((n, a), (m, b)) in whole.iter().zip(&cut) {
            assert_eq!(n, m);
            assert!(
                a == b,
                "{input} {n}: --chunk-rows {chunk} changed the bytes ({} vs {})",
                a.len(),
                b.len()
            );
        }
    }
}

#[test]
fn streaming_perf_lock_rows_in_pieces_give_the_same_files() {
    // 18 rows with -v stacks (list columns, joined in CSV), cut into pieces of 4
    let v = "fixtures/captures/micro-16K-r1/contention-v.txt";
    same_text_in_pieces(v, "lock_stats", "4");
    // a mail with several labelled tables: block and label change between pieces
    same_text_in_pieces(
        "fixtures/seeds/lru-cache-small-large-folios-rfc-v3.txt",
        "lock_stats",
        "3",
    );
    let whole = tables(v, "lock_stats", "parquet", None);
    let cut = tables(v, "lock_stats", "parquet", Some("4"));
    let (a, b) = (parquet_frame(&whole[0].1), parquet_frame(&cut[0].1));
    assert_eq!(a.height(), 18);
    assert!(a.equals_missing(&b), "{a}\n{b}");
    assert_eq!(row_groups(&whole[0].1), 1);
    // 18 rows in pieces of 4: 4 full row groups and the last 2 rows
    assert_eq!(row_groups(&cut[0].1), 5);
}

#[test]
fn streaming_trace_waits_in_pieces_give_the_same_files() {
    // 95 waits of a raw tracefs capture, in pieces of 7
    let t = "fixtures/ftrace/tracefs-6.18.44-default.txt";
    same_text_in_pieces(t, "contention,lock_stats", "7");
    let whole = tables(t, "contention,lock_stats", "parquet", None);
    let cut = tables(t, "contention,lock_stats", "parquet", Some("7"));
    for ((n, a), (_, b)) in whole.iter().zip(&cut) {
        let (fa, fb) = (parquet_frame(a), parquet_frame(b));
        assert!(fa.equals_missing(&fb), "{n}");
    }
    // the trace's waits, as perf lock contention of the same recording counts them
    let o = lockcast(&["parse", t]);
    assert!(o.status.success(), "{}", stderr(&o));
    let contention = parquet_frame(&whole[0].1);
    let found = stdout(&o);
    assert!(
        found.contains(&format!("contention: {} interval(s)", contention.height())),
        "{found}"
    );
    assert!(row_groups(&cut[0].1) > row_groups(&whole[0].1));
}

#[test]
fn streaming_perf_data_read_once_for_every_table_hands_its_waits_on_in_pieces() {
    // a perf.data read once for its event and lock tables: the waits handed on in pieces of
    // 97, as the lock tables of a file read alone are
    let p = "fixtures/perfdata/micro-16K-replay/perf.data.gz";
    let want = "contention,lock_stats,lru_insertion";
    same_text_in_pieces(p, want, "97");
    let whole = tables(p, want, "parquet", None);
    let cut = tables(p, want, "parquet", Some("97"));
    for ((n, a), (_, b)) in whole.iter().zip(&cut) {
        assert!(parquet_frame(a).equals_missing(&parquet_frame(b)), "{n}");
    }
    let (n, c) = &whole[0];
    assert_eq!(n, "contention.parquet");
    assert!(row_groups(&cut[0].1) > row_groups(c));
    // the waits the reader counts, and the table the lock tables read alone give
    let contention = parquet_frame(c);
    let o = lockcast(&["parse", p]);
    assert!(o.status.success(), "{}", stderr(&o));
    let found = stdout(&o);
    assert!(
        found.contains(&format!("contention: {} interval(s)", contention.height())),
        "{found}"
    );
    assert!(contention.height() > 97, "{}", contention.height());
    let alone = tables(p, "contention,lock_stats", "csv", Some("97"));
    let once = tables(p, want, "csv", Some("97"));
    assert_eq!(alone[0], once[0]);
    assert_eq!(alone[1], once[1]);
}

#[test]
fn streaming_a_named_table_of_a_mail_and_a_missing_one() {
    let seed = "fixtures/seeds/lru-cache-small-large-folios-rfc-v3.txt";
    let two = format!("{seed}#2");
    same_text_in_pieces(&two, "lock_stats", "2");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.csv");
    let o = lockcast(&[
        "parse",
        &format!("{seed}#99"),
        "--table",
        "lock_stats",
        "-o",
        &out.to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("#99: the file has"), "{}", stderr(&o));
    assert!(!out.exists(), "a failed parse left {}", out.display());
    assert!(!Path::new(&out).with_extension("csv.tmp").exists());
}

#[test]
fn streaming_to_standard_output_gives_the_file_written_in_pieces() {
    // `-o -` goes through an unlinked temporary file as a table file does: the same bytes
    // (CSV, JSON) and the same rows in the same row groups (Parquet), in pieces or not
    let t = "fixtures/ftrace/tracefs-6.18.44-default.txt";
    for chunk in [None, Some("7")] {
        for fmt in ["csv", "json", "parquet"] {
            let file = tables(t, "contention", fmt, chunk);
            let mut args = vec!["parse", t, "--table", "contention", "-o", "-", "--to", fmt];
            if let Some(n) = chunk {
                args.extend(["--chunk-rows", n]);
            }
            let o = lockcast(&args);
            assert!(o.status.success(), "{args:?}: {}", stderr(&o));
            let (out, want) = (&o.stdout, &file[0].1);
            if fmt == "parquet" {
                assert!(parquet_frame(out).equals_missing(&parquet_frame(want)));
                assert_eq!(row_groups(out), row_groups(want), "{chunk:?}");
            } else {
                assert!(
                    out == want,
                    "{fmt} {chunk:?}: {} vs {} bytes",
                    out.len(),
                    want.len()
                );
            }
        }
    }
    // a table whose row groups are encoded where they are built (the parser threads): the
    // same bytes on standard output as in the file
    let r = "fixtures/replay/micro-16K-r1/script-ns.txt.gz";
    let file = tables(r, "events", "parquet", None);
    let o = lockcast(&[
        "parse", r, "--table", "events", "-o", "-", "--to", "parquet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        o.stdout == file[0].1,
        "events: stdout differs from the file"
    );
    assert!(row_groups(&o.stdout) > 1);
    // a malformed line (line 361 of 401) after pieces of 7 waits were written: nothing on
    // standard output
    let text = std::fs::read_to_string(t).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines.len() * 9 / 10;
    let bad = [&lines[..cut], &["            bash-14525   [000] .....   53x.588625: contention_begin: lock=0xffff8881 flags=SPIN"], &lines[cut..]]
        .concat()
        .join("\n");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.txt");
    std::fs::write(&p, bad).unwrap();
    let p = p.to_string_lossy().into_owned();
    for fmt in ["csv", "json", "parquet"] {
        let args = [
            "parse",
            &p,
            "--table",
            "contention",
            "-o",
            "-",
            "--to",
            fmt,
            "--chunk-rows",
            "7",
        ];
        let o = lockcast(&args);
        assert_eq!(o.status.code(), Some(3), "{fmt}: {}", stderr(&o));
        assert!(
            o.stdout.is_empty(),
            "{fmt}: {} bytes printed",
            o.stdout.len()
        );
        assert!(stderr(&o).contains("bad.txt:361:"), "{}", stderr(&o));
    }
}

//! perf.data read directly (issue #14) against perf's own output for the same recording
//! (fixtures/perfdata, made by fixtures/capture-perfdata.sh): every table equals the one read
//! from `perf script --ns` of the file, `report` agrees with `perf lock contention -i`, and the
//! what-if gives the same numbers.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Output};

use crate::common::*;

const REPLAY: &str = "fixtures/perfdata/micro-16K-replay";
const G: &str = "fixtures/perfdata/micro-16K-g";

fn buildid_dir() -> PathBuf {
    perfdata_buildid_dir(G)
}

fn run(args: &[&str], cache: &std::path::Path) -> Output {
    lockcast_cached(args, cache)
}

fn tables_equal(dir: &str) -> BTreeMap<String, usize> {
    perfdata_tables_equal(dir, &[])
}

#[test]
fn perfdata_replay_tables_equal_the_perf_script_text() {
    let rows = tables_equal(REPLAY);
    // counted in the raw text (zgrep -c 'lock:contention_begin:' etc.)
    assert_eq!(rows["events.csv"], 66447);
    assert_eq!(rows["contention_begin.csv"], 2270);
    assert_eq!(rows["lru_insertion.csv"], 20520);
    assert_eq!(rows["page_alloc.csv"], 20800);
    assert_eq!(rows["page_free.csv"], 20587);
}

#[test]
fn perfdata_g_tables_equal_the_perf_script_text() {
    let rows = tables_equal(G);
    assert_eq!(rows["samples.csv"], 37239);
    assert_eq!(rows["contention.csv"], 3130);
}

#[test]
fn perfdata_report_agrees_with_perf_lock_contention_of_the_same_file() {
    let cache = buildid_dir();
    let o = run(
        &[
            "report",
            &format!("{G}/perf.data.gz"),
            "--json",
            "--top",
            "100",
        ],
        &cache,
    );
    let ours = report_agrees_with_perf_lock(&o.stdout, &repo().join(G).join("contention.txt"));
    // contention.txt: 3065 at folio_batch_move_lru+0x88
    assert_eq!(
        ours[&("folio_batch_move_lru+0x88".into(), "spinlock".into())].0,
        3065
    );
    // the same report as from the text
    let t = run(
        &[
            "report",
            &format!("{G}/script-ns.txt.gz"),
            "--json",
            "--top",
            "100",
        ],
        &cache,
    );
    assert_eq!(
        stdout(&o).replace("perf.data.gz", "X"),
        stdout(&t).replace("script-ns.txt.gz", "X")
    );
    assert!(
        stderr(&o).contains("kernel frames named from"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn perfdata_whatif_baseline_gives_the_numbers_of_the_text() {
    let cache = buildid_dir();
    for (dir, extra) in [(REPLAY, &["--observation", "paravirt"][..]), (G, &[][..])] {
        let mut a = vec!["whatif", "baseline", "", "--json"];
        a.extend_from_slice(extra);
        let bin = format!("{dir}/perf.data.gz");
        let txt = format!("{dir}/script-ns.txt.gz");
        a[2] = &bin;
        let ob = run(&a, &cache);
        a[2] = &txt;
        let ot = run(&a, &cache);
        assert_eq!(
            stdout(&ob).replace(&bin, "X"),
            stdout(&ot).replace(&txt, "X"),
            "{dir}"
        );
        let v: serde_json::Value = serde_json::from_slice(&ob.stdout).unwrap();
        assert!(v.to_string().contains("\"contended\""), "{dir}");
    }
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn perfdata_damaged_files_exit_3_naming_the_byte() {
    let o = lockcast_stdin(
        &["parse", "-", "--input-format", "perf-data"],
        b"PERFILE3 not a perf.data file at all",
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("byte 0: perf.data: expected the perf.data magic PERFILE2"),
        "{}",
        stderr(&o)
    );
    let mut f = Vec::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(repo().join(REPLAY).join("perf.data.gz")).unwrap(),
    )
    .read_to_end(&mut f)
    .unwrap();
    f.truncate(f.len() / 2);
    let o = lockcast_stdin(&["parse", "-"], &f);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("file cut short"), "{}", stderr(&o));
}

const LOST: &str = "fixtures/perfdata/micro-16K-lost";

/// The value after `key` on the first line of a fixture text file that starts with it.
fn fixture_value(path: &str, key: &str) -> String {
    let text = std::fs::read_to_string(repo().join(path)).unwrap();
    text.lines()
        .find_map(|l| l.trim().strip_prefix(key))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| panic!("{path}: no {key}"))
}

#[test]
fn perfdata_whatif_needs_no_flags_beside_its_meta() {
    // the meta file capture-perfdata.sh writes names the spinlock slowpath
    let o = lockcast(&[
        "whatif",
        "lru-cache",
        &format!("{REPLAY}/perf.data.gz"),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["observation"], "paravirt");
    assert_eq!(v["observation_source"], "meta file");
}

#[test]
fn perfdata_header_context_without_meta_and_lost_events_in_the_whatif_notes() {
    // no meta file beside the copy: what the what-if and parse know comes from the file's header
    let dir = std::env::temp_dir().join(format!("lockcast-it-nometa-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("perf.data.gz");
    std::fs::copy(repo().join(LOST).join("perf.data.gz"), &copy).unwrap();
    let copy = copy.to_string_lossy().into_owned();
    // perf's own count of the samples this recording lost (`perf report`)
    let lost = fixture_value(&format!("{LOST}/lost.txt"), "# Total Lost Samples:");
    assert_ne!(lost, "0");
    let o = lockcast(&["whatif", "baseline", &copy, "--json"]);
    // the capture check refuses it as input it cannot answer from (exit 3), naming the option
    assert_eq!(
        o.status.code(),
        Some(3),
        "no slowpath without meta or call chains: {}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("--observation"), "{}", stderr(&o));
    let o = lockcast(&[
        "whatif",
        "baseline",
        &copy,
        "--json",
        "--observation",
        "paravirt",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with(&format!("{lost} events lost: the replay undercounts"))),
        "{notes:?}"
    );
    // parse names the recording's perf, kernel and CPUs (what `perf version`, `uname -r` and
    // `nproc` printed at record time, in the fixture's meta) and the lost count
    let o = lockcast(&["parse", &copy]);
    assert!(o.status.success(), "{}", stderr(&o));
    let meta = format!("{LOST}/meta");
    let want = format!(
        "recorded by perf {} on {} (x86_64), {n} of {n} CPUs online; command: ",
        fixture_value(&meta, "perf_version=perf version"),
        fixture_value(&meta, "kernel="),
        n = fixture_value(&meta, "nproc=")
    );
    assert!(stderr(&o).contains(&want), "{want}\n{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("the recording lost {lost} event(s)")),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

const PIPE: &str = "fixtures/perfdata/micro-16K-pipe";
const Z: &str = "fixtures/perfdata/micro-16K-z";

fn gunzip_fixture(path: &str) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(repo().join(path)).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[test]
fn perfdata_pipe_mode_tables_equal_the_perf_script_text() {
    // `perf record -o - > perf.data`: header records and the tracing data in the stream
    let bytes = gunzip_fixture(&format!("{PIPE}/perf.data.gz"));
    assert_eq!(&bytes[..8], b"PERFILE2");
    assert_eq!(
        u64::from_le_bytes(bytes[8..16].try_into().unwrap()),
        16,
        "pipe header"
    );
    let rows = tables_equal(PIPE);
    // counted in the raw text (zgrep -c 'lock:contention_begin:' etc.)
    assert_eq!(rows["events.csv"], 13426);
    assert_eq!(rows["contention_begin.csv"], 485);
    assert_eq!(rows["lru_insertion.csv"], 4140);
    // and from standard input, as `perf record -o - ... | lockcast parse -`
    let o = lockcast_stdin(&["parse", "-"], &bytes);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("-: perf-data, 13426 event(s); contention: 485 interval(s)"),
        "{}",
        stdout(&o)
    );
}

/// Every table of `dir`'s perf.data against its perf script text, up to the order of events
/// with the same timestamp: linux-perf-data 0.13 sorts the records it decompresses from
/// PERF_RECORD_COMPRESSED without their position (its sort key's file offset is `None`, and the
/// sort is unstable), so two CPUs' events stamped in the same nanosecond may come out in either
/// order, where perf keeps file order. So: the same rows as multisets (the columns
/// `tables_equal` compares), and the same sequence of timestamps row for row.
fn tables_equal_up_to_ties(dir: &str) -> BTreeMap<String, usize> {
    let cache = buildid_dir();
    let out = std::env::temp_dir().join(format!(
        "lockcast-it-perfdata-ties-{}-{}",
        std::process::id(),
        dir.replace('/', "_")
    ));
    let (bin, txt) = (out.join("bin"), out.join("txt"));
    for (input, to) in [("perf.data.gz", &bin), ("script-ns.txt.gz", &txt)] {
        let t = to.to_string_lossy().into_owned();
        let i = format!("{dir}/{input}");
        run(
            &["parse", "--table", "all", &i, "-o", &t, "--to", "csv"],
            &cache,
        );
    }
    let mut rows = BTreeMap::new();
    for e in std::fs::read_dir(&txt).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        let (hb, rb) = read_csv(&bin.join(&name));
        let (ht, rt) = read_csv(&txt.join(&name));
        assert_eq!(hb, ht, "{name}: columns");
        assert_eq!(rb.len(), rt.len(), "{name}: rows");
        // as in tables_equal: the path, line numbers, the pid perf script does not print, period
        let process = if name == "samples.csv" { "pid" } else { "tgid" };
        let skip = ["source", "line", "begin_line", process, "period"];
        let keep: Vec<usize> = (0..ht.len())
            .filter(|&c| !skip.contains(&ht[c].as_str()))
            .collect();
        let project = |r: &Vec<String>| keep.iter().map(|&c| r[c].clone()).collect::<Vec<_>>();
        let mut pb: Vec<_> = rb.iter().map(project).collect();
        let mut pt: Vec<_> = rt.iter().map(project).collect();
        if let Some(tc) = ht
            .iter()
            .position(|c| c == "timestamp_ns" || c == "time_ns" || c == "begin_ns")
        {
            let tb: Vec<_> = rb.iter().map(|r| &r[tc]).collect();
            let tt: Vec<_> = rt.iter().map(|r| &r[tc]).collect();
            assert_eq!(tb, tt, "{name}: timestamps row for row");
        }
        pb.sort();
        pt.sort();
        assert!(pb == pt, "{name}: the same rows");
        rows.insert(name, rb.len());
    }
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&cache);
    rows
}

#[test]
fn perfdata_zstd_compressed_records_tables_equal_the_perf_script_text() {
    // `perf record -z`: the data section is PERF_RECORD_COMPRESSED records
    let bytes = gunzip_fixture(&format!("{Z}/perf.data.gz"));
    let data_off = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
    let mut pos = data_off;
    let mut compressed = 0;
    while pos + 8 <= bytes.len() && compressed == 0 && pos < data_off + (1 << 20) {
        let ty = u32::from_le_bytes(bytes[pos..pos + 4].try_into().unwrap());
        compressed += usize::from(ty == 81);
        pos += usize::from(u16::from_le_bytes(
            bytes[pos + 6..pos + 8].try_into().unwrap(),
        ));
    }
    assert_eq!(compressed, 1, "a PERF_RECORD_COMPRESSED record");
    let rows = tables_equal_up_to_ties(Z);
    // counted in the raw text (zgrep -c 'lock:contention_begin:' etc.)
    assert_eq!(rows["events.csv"], 13686);
    assert_eq!(rows["contention_begin.csv"], 625);
    assert_eq!(rows["page_free.csv"], 4118);
}

#[test]
fn perfdata_kallsyms_option_names_the_frames_and_refuses_another_boots_table() {
    // no build-id cache: the frames can be named only from --kallsyms (the fixture's kallsyms
    // is the one perf cached for this recording)
    let empty = std::env::temp_dir().join(format!("lockcast-it-nocache-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let ks = format!("{G}/kallsyms.gz");
    let data = format!("{G}/perf.data.gz");
    let o = run(
        &["report", &data, "--json", "--top", "100", "--kallsyms", &ks],
        &empty,
    );
    let ours = report_agrees_with_perf_lock(&o.stdout, &repo().join(G).join("contention.txt"));
    assert_eq!(
        ours[&("folio_batch_move_lru+0x88".into(), "spinlock".into())].0,
        3065
    );
    assert!(
        stderr(&o).contains(&format!(
            "kernel frames named from {ks} (build-id not checked: a kallsyms file has none; its _text is at 0xffffffff81000000, where the recording's kernel map puts it)"
        )),
        "{}",
        stderr(&o)
    );
    // the same table slid by 2 MiB, as the kernel's KASLR places it on another boot: refused,
    // naming the kernel map record it disagrees with
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(repo().join(&ks)).unwrap())
        .read_to_end(&mut text)
        .unwrap();
    let slid: String = String::from_utf8(text)
        .unwrap()
        .lines()
        .map(|l| match l.split_once(' ') {
            Some((a, rest)) => match u64::from_str_radix(a, 16) {
                Ok(x) if x != 0 => format!("{:016x} {rest}\n", x + (2 << 20)),
                _ => format!("{l}\n"),
            },
            None => format!("{l}\n"),
        })
        .collect();
    let other = empty.join("kallsyms-other-boot");
    std::fs::write(&other, slid).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_lockcast"))
        .args(["report", &data, "--kallsyms", &other.to_string_lossy()])
        .current_dir(repo())
        .env("PERF_BUILDID_DIR", &empty)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("perf.data: expected --kallsyms")
            && stderr(&o).contains("the kernel map here puts _text at 0xffffffff81000000")
            && stderr(&o).contains("has it at 0xffffffff81200000 (another kernel or another boot)"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&empty);
}

/// `parse --table contention` of a perf.data reads the lock events alone: the other samples
/// are taken out of the file before its records are sorted (their numbers kept). Its table
/// must still equal the text's in every column but `source`, `begin_line` included: this
/// recording has no call chains, so a sample is one line of `perf script`'s text and its
/// number is its line. The events read still count every sample. With call chains (fbatch,
/// `-g`), where the text's lines are not sample numbers, the table equals the one `--table all`
/// builds from every event (checked against the text row for row above), `begin_line` too.
#[test]
fn perfdata_lock_tables_alone_equal_the_text_begin_lines_included() {
    let out =
        std::env::temp_dir().join(format!("lockcast-it-perfdata-only-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let table = |dir: &str, input: &str, all: bool, cache: &std::path::Path| {
        let ext = if all { "" } else { ".csv" };
        let dest = out.join(format!("{}-{input}-{all}{ext}", dir.replace('/', "_")));
        let d = dest.to_string_lossy().into_owned();
        let which = if all { "all" } else { "contention" };
        let i = format!("{dir}/{input}");
        run(
            &["parse", "--table", which, &i, "-o", &d, "--to", "csv"],
            cache,
        );
        let csv = if all {
            dest.join("contention.csv")
        } else {
            dest.clone()
        };
        read_csv(&csv)
    };
    let equal = |dir: &str, (hb, rb): &CsvTable, (ht, rt): &CsvTable| {
        assert_eq!(hb, ht, "{dir}");
        assert_eq!(rb.len(), rt.len(), "{dir}");
        let source = hb.iter().position(|c| c == "source").unwrap();
        for (i, (b, t)) in rb.iter().zip(rt).enumerate() {
            for c in (0..hb.len()).filter(|c| *c != source) {
                assert_eq!(b[c], t[c], "{dir} row {} column {}", i + 1, hb[c]);
            }
        }
    };
    let cache = perfdata_buildid_dir(REPLAY);
    let (bin, txt) = (
        table(REPLAY, "perf.data.gz", false, &cache),
        table(REPLAY, "script-ns.txt.gz", false, &cache),
    );
    // counted in the raw text: zgrep -c 'contention_end:'
    assert_eq!(bin.1.len(), 2270);
    equal(REPLAY, &bin, &txt);
    // the found line (no -o): every event, as the text's lines (zcat | wc -l)
    let o = run(&["parse", &format!("{REPLAY}/perf.data.gz")], &cache);
    assert!(
        stdout(&o).contains(", 66447 event(s); contention: 2270 interval(s)"),
        "{}",
        stdout(&o)
    );
    let _ = std::fs::remove_dir_all(&cache);

    let fbatch = "fixtures/perfdata/fbatch-churn-4K";
    let cache = perfdata_buildid_dir(fbatch);
    let (alone, all) = (
        table(fbatch, "perf.data.gz", false, &cache),
        table(fbatch, "perf.data.gz", true, &cache),
    );
    // contention_end lines of its text
    assert_eq!(alone.1.len(), 204);
    equal(fbatch, &alone, &all);
    let _ = std::fs::remove_dir_all(&cache);
    let _ = std::fs::remove_dir_all(&out);
}

/// Every output file under `dir` (relative path -> bytes, `from` written as `X`).
fn outputs(dir: &std::path::Path, from: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap().replace(from, "X");
        out.insert(p.file_name().unwrap().to_string_lossy().into_owned(), text);
    }
    out
}

#[test]
fn perfdata_a_plain_file_reads_as_its_compressed_copy() {
    // A plain perf.data is mapped rather than read into memory (compressed files and
    // standard input are streams): the same tables, reports and errors either way, for a
    // file-mode recording, one with call chains, one with lost events, a pipe-mode one and
    // one cut short.
    let tmp = std::env::temp_dir().join(format!("lockcast-it-plain-{}", std::process::id()));
    for dir in [REPLAY, G, LOST, PIPE] {
        let cache = perfdata_buildid_dir(dir);
        let gz = format!("{dir}/perf.data.gz");
        let case = tmp.join(dir.replace('/', "_"));
        std::fs::create_dir_all(&case).unwrap();
        let plain = case.join("perf.data");
        std::fs::write(&plain, gunzip_fixture(&gz)).unwrap();
        let plain = plain.to_string_lossy().into_owned();
        let mut seen = Vec::new();
        for (name, input) in [("plain", plain.as_str()), ("gz", gz.as_str())] {
            let o = case.join(name).to_string_lossy().into_owned();
            let r = run(
                &["parse", "--table", "all", input, "-o", &o, "--to", "csv"],
                &cache,
            );
            assert!(r.status.success(), "{dir} {name}: {}", stderr(&r));
            let rep = run(&["report", input, "--format", "csv"], &cache);
            assert!(rep.status.success(), "{dir} {name}: {}", stderr(&rep));
            seen.push((
                outputs(std::path::Path::new(&o), input),
                stdout(&rep).replace(input, "X"),
            ));
        }
        assert!(!seen[0].0.is_empty(), "{dir}");
        assert_eq!(seen[0].0, seen[1].0, "{dir}: parse --table all");
        assert_eq!(seen[0].1, seen[1].1, "{dir}: report");
    }
    // cut short: the same error from the plain file as from the stream (`--lenient` on such a
    // file needs the running kernel's tracefs for the formats, so it is not tried here)
    let mut half = gunzip_fixture(&format!("{REPLAY}/perf.data.gz"));
    half.truncate(half.len() / 2);
    let cut = tmp.join("cut.data");
    std::fs::write(&cut, &half).unwrap();
    let cut = cut.to_string_lossy().into_owned();
    let (file, stream) = (
        lockcast(&["parse", &cut]),
        lockcast_stdin(&["parse", "-"], &half),
    );
    assert_eq!(file.status.code(), Some(3), "{}", stderr(&file));
    assert!(
        stderr(&file).contains("file cut short"),
        "{}",
        stderr(&file)
    );
    assert_eq!(
        stderr(&file).replace(&cut, "X"),
        stderr(&stream).replacen("-:", "X:", 1)
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

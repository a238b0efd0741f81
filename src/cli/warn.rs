//! Warnings on stderr: what lenient reading skipped.

use std::io::Write;

use lockcast::parsers::Diagnostics;

/// Print the reader's notes on `path` (perf.data: where kernel symbols came from, lost events),
/// then how many malformed lines `--lenient` skipped in it, and the first few.
pub fn skipped(path: &str, d: &Diagnostics) {
    let mut err = std::io::stderr().lock();
    for n in &d.notes {
        let _ = writeln!(err, "lockcast: {path}: {n}");
    }
    if d.skipped == 0 {
        return;
    }
    let _ = writeln!(
        err,
        "lockcast: {path}: skipped {} malformed line(s) (--lenient)",
        d.skipped
    );
    for x in d.first.iter().take(5) {
        let _ = writeln!(err, "  {path}:{x}");
    }
}

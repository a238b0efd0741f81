//! Warnings on stderr: what lenient reading skipped.

use std::io::Write;

use lockcast::parsers::Diagnostics;

/// Say how many malformed lines `--lenient` skipped in `path`, and the first few.
pub fn skipped(path: &str, d: &Diagnostics) {
    if d.skipped == 0 {
        return;
    }
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "lockcast: {path}: skipped {} malformed line(s) (--lenient)",
        d.skipped
    );
    for x in d.first.iter().take(5) {
        let _ = writeln!(err, "  {path}:{x}");
    }
}

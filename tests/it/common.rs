use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture(p: &str) -> PathBuf {
    repo().join("fixtures").join(p)
}

/// The corpus of real tool outputs (`tests/corpus/`, see its SOURCES.md).
pub fn corpus(p: &str) -> PathBuf {
    repo().join("tests/corpus").join(p)
}

pub const SEED: &str = "seeds/lru-cache-small-large-folios-rfc-v3.txt";

pub fn lockcast(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockcast"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run lockcast")
}

pub fn lockcast_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockcast"))
        .args(args)
        .current_dir(repo())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn lockcast");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Run a what-if policy over a capture with `--set` pairs, no bootstrap (the point estimate).
pub fn whatif_run(
    path: &str,
    policy_name: &str,
    set: &[(&str, &str)],
) -> lockcast::whatif::Outcome {
    use lockcast::whatif::{self, policy, trace};
    let t = trace::read(path, false).expect("read capture");
    let ctx = whatif::context(&t);
    let set: std::collections::BTreeMap<String, String> = set
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let p = policy::make(policy_name, &set, &ctx).expect("policy");
    let o = whatif::Options {
        bootstrap: 0,
        ..Default::default()
    };
    whatif::run(&t, p.as_ref(), &ctx, &o).expect("run")
}

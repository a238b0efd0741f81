//! Where tables go: the one rule for `-o` and `--to`, for every command that writes tables.
//!
//! - no `-o`: nothing is written (the command prints what it found);
//! - `-o -`: one table to standard output, in `--to`'s format (CSV when not given); a request
//!   for several tables refuses it, since one stream cannot hold them apart;
//! - `-o x.csv|x.parquet|x.json`: one table into that file (`--to`, if given, must agree);
//! - `-o DIR` (no known extension): `DIR/<table>.<ext>` for each table, Parquet unless `--to`
//!   says otherwise;
//! - `-o DIR --partition-by capture`: a hive-partitioned Parquet dataset under `DIR`.

use std::path::{Path, PathBuf};

pub use super::write::Dest;
use super::write::FileFormat;
use crate::error::{Error, Result};

/// Where a command's tables go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Nothing is written.
    None,
    /// One table: standard output or one file.
    One(Dest, FileFormat),
    /// `DIR/<table>.<ext>`.
    Dir(PathBuf, FileFormat),
    /// `DIR[/<table>]/capture=<name>/part-0.parquet`.
    Partitioned(PathBuf),
}

/// Resolve `-o OUT`, `--to FORMAT` and `--partition-by` for a request of `tables`.
pub fn resolve(
    out: Option<&Path>,
    to: Option<FileFormat>,
    partition: bool,
    tables: &[&str],
) -> Result<Target> {
    let Some(out) = out else {
        if to.is_some() || partition {
            return Err(Error::Usage(
                "--to and --partition-by need -o OUT (a file, a directory, or - for standard output)"
                    .into(),
            ));
        }
        return Ok(Target::None);
    };
    let several = || {
        format!(
            "{} tables ({}) do not fit in one",
            tables.len(),
            tables.join(", ")
        )
    };
    if out.as_os_str() == "-" {
        if partition {
            return Err(Error::Usage(
                "--partition-by writes a directory: give -o DIR, not -".into(),
            ));
        }
        if tables.len() > 1 {
            return Err(Error::Usage(format!(
                "{} stream: give -o DIR, or ask for one with --table",
                several()
            )));
        }
        return Ok(Target::One(Dest::Stdout, to.unwrap_or(FileFormat::Csv)));
    }
    let by_ext = FileFormat::from_path(out);
    if partition {
        if by_ext.is_some() || to.is_some_and(|f| f != FileFormat::Parquet) {
            return Err(Error::Usage(
                "--partition-by writes Parquet under a directory: give -o DIR (and --to parquet or nothing)"
                    .into(),
            ));
        }
        return Ok(Target::Partitioned(out.to_path_buf()));
    }
    let format = match (to, by_ext) {
        (Some(t), Some(e)) if t != e => {
            return Err(Error::Usage(format!(
                "--to {} does not match the extension of {}",
                t.ext(),
                out.display()
            )))
        }
        (Some(t), _) => t,
        (None, Some(e)) => e,
        (None, None) => FileFormat::Parquet,
    };
    // a path that is there and is not a directory (`/dev/null`, a FIFO, a file without an
    // extension) is one file, whatever its name
    let a_file = std::fs::metadata(out).is_ok_and(|m| !m.is_dir());
    if by_ext.is_some() || a_file {
        if tables.len() > 1 {
            return Err(Error::Usage(format!("{} file: give -o DIR", several())));
        }
        return Ok(Target::One(Dest::File(out.to_path_buf()), format));
    }
    Ok(Target::Dir(out.to_path_buf(), format))
}

impl Target {
    /// Where `table` goes (not for partitioned datasets, whose files depend on the input).
    pub fn dest(&self, table: &str) -> Option<(Dest, FileFormat)> {
        match self {
            Target::None | Target::Partitioned(_) => None,
            Target::One(d, f) => Some((d.clone(), *f)),
            Target::Dir(d, f) => Some((Dest::File(d.join(format!("{table}.{}", f.ext()))), *f)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rule_for_every_output() {
        let p = |s: &str| Some(Path::new(s).to_path_buf());
        let r = |out: Option<PathBuf>, to, part, t: &[&str]| resolve(out.as_deref(), to, part, t);
        assert_eq!(
            r(p("-"), Some(FileFormat::Json), false, &["lock_stats"]).unwrap(),
            Target::One(Dest::Stdout, FileFormat::Json)
        );
        assert_eq!(
            r(p("-"), None, false, &["lock_stats"]).unwrap(),
            Target::One(Dest::Stdout, FileFormat::Csv)
        );
        assert!(r(p("-"), None, false, &["lock_stats", "contention"]).is_err());
        assert!(r(p("-"), None, true, &["events"]).is_err());
        assert_eq!(
            r(p("x.csv"), None, false, &["lock_stats"]).unwrap(),
            Target::One(Dest::File("x.csv".into()), FileFormat::Csv)
        );
        assert!(r(p("x.csv"), Some(FileFormat::Json), false, &["lock_stats"]).is_err());
        assert!(r(p("x.csv"), None, false, &["a", "b"]).is_err());
        assert_eq!(
            r(p("out"), None, false, &["a", "b"]).unwrap(),
            Target::Dir("out".into(), FileFormat::Parquet)
        );
        assert!(r(None, Some(FileFormat::Csv), false, &["a"]).is_err());
        assert_eq!(r(None, None, false, &["a"]).unwrap(), Target::None);
    }
}

//! `--set KEY=VALUE` pairs → a policy's typed parameters.
//!
//! Each policy declares its parameters as one `#[derive(Deserialize)]` struct with
//! `#[serde(deny_unknown_fields, default)]` and documented defaults; [`parse`] turns the pairs
//! into it, so a typo is an error naming the known keys, never a silent default. Values are read
//! as JSON scalars where they are numbers or booleans (`31`, `0.5`, `true`) and as strings
//! otherwise (`after-add`, `all`, `a,b,c`).

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Error, Result};

/// The `--set` pairs as given (last one wins for a repeated key).
pub type Set = BTreeMap<String, String>;

/// Split `KEY=VALUE` items.
pub fn pairs(items: &[String]) -> Result<Set> {
    let mut m = Set::new();
    for it in items {
        let (k, v) = it
            .split_once('=')
            .ok_or_else(|| Error::Usage(format!("--set {it}: expected KEY=VALUE")))?;
        m.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(m)
}

fn value(v: &str) -> Value {
    match serde_json::from_str::<Value>(v) {
        Ok(x @ (Value::Number(_) | Value::Bool(_))) => x,
        _ => Value::String(v.to_string()),
    }
}

fn typed<T: DeserializeOwned>(set: &Set) -> std::result::Result<T, serde_json::Error> {
    let obj: serde_json::Map<String, Value> =
        set.iter().map(|(k, v)| (k.clone(), value(v))).collect();
    serde_json::from_value(Value::Object(obj))
}

/// The typed parameters of `policy` from `set`. An error names the pair at fault: an unknown
/// key with the known ones, or a value of the wrong type.
pub fn parse<T: DeserializeOwned>(policy: &str, set: &Set) -> Result<T> {
    let e = match typed(set) {
        Ok(t) => return Ok(t),
        Err(e) => e,
    };
    // serde says which field is unknown but not which value failed: try the pairs one by one
    for (k, v) in set {
        let one: Set = [(k.clone(), v.clone())].into_iter().collect();
        if let Err(e1) = typed::<T>(&one) {
            let msg = e1.to_string();
            if let Some(rest) = msg.strip_prefix("unknown field `") {
                let known: Vec<&str> = rest
                    .split('`')
                    .skip(1)
                    .filter(|s| !s.trim_start_matches([',', ' ']).is_empty())
                    .filter(|s| !s.contains("expected") && !s.starts_with(','))
                    .collect();
                return Err(Error::Usage(format!(
                    "{policy}: unknown parameter '{k}' (known: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )));
            }
            return Err(Error::Usage(format!("{policy}: --set {k}={v}: {msg}")));
        }
    }
    Err(Error::Usage(format!("{policy}: --set: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize, PartialEq)]
    #[serde(deny_unknown_fields, default)]
    struct P {
        n: u32,
        x: f64,
        on: bool,
        name: String,
    }
    impl Default for P {
        fn default() -> Self {
            P {
                n: 31,
                x: 1.0,
                on: false,
                name: "all".into(),
            }
        }
    }

    #[test]
    fn typed_values_defaults_and_unknown_keys() {
        let set = pairs(&["n=4".into(), "on=true".into(), "name=a,b".into()]).unwrap();
        let p: P = parse("t", &set).unwrap();
        assert_eq!(
            p,
            P {
                n: 4,
                x: 1.0,
                on: true,
                name: "a,b".into()
            }
        );
        let e = parse::<P>("t", &pairs(&["nn=4".into()]).unwrap()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "t: unknown parameter 'nn' (known: n, x, on, name)"
        );
        let e = parse::<P>("t", &pairs(&["n=-1".into(), "x=2".into()]).unwrap()).unwrap_err();
        assert!(e.to_string().starts_with("t: --set n=-1: "), "{e}");
        assert!(pairs(&["n".into()]).is_err());
    }
}

//! `lockcast whatif` and `lockcast validate`: options in, the library's answer out, printed in
//! the chosen format.

use std::io::{self, Write};

use anyhow::Result;

use lockcast::output::whatif::render;
use lockcast::whatif::ask::{self, Answer, Ask};
use lockcast::whatif::trace::Observation;
use lockcast::whatif::{self, params};

use super::args::{EngineOpts, ObservationArg, ValidateArgs, WhatifArgs};

/// The library's options from the command line.
pub fn ask_opts(e: &EngineOpts) -> Ask {
    let defaults = whatif::Options::default();
    Ask {
        engine: whatif::Options {
            reconstruct: whatif::reconstruct::Options {
                lock: e.lock.clone(),
                ..Default::default()
            },
            observation: e.observation.map(|o| match o {
                ObservationArg::Paravirt => Observation::Paravirt,
                ObservationArg::BareMetal => Observation::BareMetal,
            }),
            post_quantile: e.window_quantile,
            // `--bootstrap N` runs exactly N; without it, up to the default under the rule
            bootstrap: e.bootstrap.unwrap_or(defaults.bootstrap),
            stop: e.bootstrap.map_or(defaults.stop, |_| None),
            seed: e.seed,
            sample: e.sample,
            progress: true,
        },
        lenient: e.lenient,
        kallsyms: e.kallsyms.clone().map(std::sync::Arc::new),
        time: None,
    }
}

/// Run `lockcast whatif`.
pub fn whatif(a: WhatifArgs) -> Result<()> {
    let set = params::pairs(&a.engine.set)?;
    let ask = Ask {
        time: a.time,
        ..ask_opts(&a.engine)
    };
    let answer = ask::ask(&a.policy, &a.capture, &set, &ask)?;
    let text = render(&answer, None, a.engine.format.resolve(a.engine.json));
    io::stdout().write_all(text.as_bytes())?;
    Ok(())
}

/// Run `lockcast validate`.
pub fn validate(a: ValidateArgs) -> Result<()> {
    let set = params::pairs(&a.engine.set)?;
    let v = ask::validate(&a.policy, &a.base, &a.after, &set, &ask_opts(&a.engine))?;
    let answer = Answer::Replay(Box::new(v.outcome));
    let text = render(
        &answer,
        Some((&v.after, &v.measured)),
        a.engine.format.resolve(a.engine.json),
    );
    io::stdout().write_all(text.as_bytes())?;
    Ok(())
}

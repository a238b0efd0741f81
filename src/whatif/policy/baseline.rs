//! `baseline`: no change. Replaying it checks the whole pipeline against the capture.

use std::collections::BTreeMap;

use super::{Batcher, Context, Policy, Request};
use crate::error::Result;
use crate::whatif::intents::Intents;
use crate::whatif::params::{self, Set};

/// Today's kernel rule (v6.18 mm/swap.c): large folios drain at once, order-0 batch of 31.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Baseline;

/// No parameters.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {}

pub(crate) fn make(set: &Set, _: &Context) -> Result<Box<dyn Policy>> {
    let Params {} = params::parse("baseline", set)?;
    Ok(Box::new(Baseline))
}

impl Policy for Baseline {
    fn name(&self) -> &'static str {
        "baseline"
    }
    fn describe(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn requests(&self, intents: &Intents, _: &Context) -> Result<Vec<Vec<Request>>> {
        Ok(intents
            .streams
            .iter()
            .map(|s| Batcher::TODAY.requests(s, intents))
            .collect())
    }
    fn batching(&self, intents: &Intents) -> Option<Batcher> {
        Some(Batcher::TODAY.on(intents))
    }
}

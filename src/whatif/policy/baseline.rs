//! `baseline`: no change. Replaying it checks the whole pipeline against the capture.

use std::collections::BTreeMap;

use super::{check_keys, Batcher, Context, Policy, Request};
use crate::error::Result;
use crate::whatif::intents::Intents;

/// Today's kernel rule (v6.18 mm/swap.c): large folios drain at once, order-0 batch of 31.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Baseline;

pub(super) fn make(set: &BTreeMap<String, String>, _: &Context) -> Result<Box<dyn Policy>> {
    check_keys(set, "baseline", &[])?;
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
}

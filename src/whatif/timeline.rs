//! A replay kept request by request, for timelines (`lockcast export perfetto --whatif`): the
//! same pipeline as [`super::run`]'s point estimate (calibrate → intents → policy → des),
//! without the bootstrap, returning every request as the replay served it.

use super::des::{self, Grant};
use super::policy::{Context, Policy};
use super::reconstruct::Reconstruction;
use super::trace::Trace;
use super::{calibrate, intents, Options};
use crate::error::{Error, Result};

/// The replay of `policy` over the capture: every request served (CPU numbers of the
/// capture, parallel to `Grant::cpu`'s stream index) and the totals.
pub fn grants(
    t: &Trace,
    rec: &Reconstruction,
    policy: &dyn Policy,
    ctx: &Context,
    o: &Options,
) -> Result<(Vec<u32>, des::Detailed, Vec<Grant>)> {
    // The rule of `run`: the option, else the capture's call chains, else its meta file.
    let observation = o.observation.or_else(|| t.observation()).ok_or_else(|| {
        Error::Usage(format!(
            "{}: cannot tell which spinlock slowpath the kernel runs (no call chains, no meta file); \
             pass --observation paravirt or bare-metal",
            t.path
        ))
    })?;
    let cal = calibrate::fit(&calibrate::samples(t, rec), o.post_quantile);
    let it = intents::build(rec, &cal);
    let streams = policy.requests(&it, ctx)?;
    let (d, g) = des::replay_grants(&streams, &cal, observation);
    Ok((it.cpus, d, g))
}

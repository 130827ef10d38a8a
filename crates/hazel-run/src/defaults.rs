//! What a sampling run does where its caller says nothing: which adaptation learns the metric
//! and where the chains start. `hazel sample`, `Model.sample` and the `init_robustness`
//! benchmark's `--defaults` all decide through these functions, so they run the same thing.
//!
//! The defaults are nutpie's low-rank plus diagonal metric, with every chain started at a draw
//! of a multi-path Pathfinder run. Measured by `bench/src/bin/adaptation_ess.rs` on posteriordb
//! tiers 1–3 and the bundled examples (ESS per gradient, warmup and Pathfinder's gradients
//! included, against Stan's windowed adaptation from Stan's random starts): median 9.1×, least
//! 0.86× on a reference posterior, over 42 posteriors (before the held-out check on fitted
//! directions, `hazel_nuts::adapt`'s `fisher.rs`; of 13 rerun since, 8 unchanged, 4 gained,
//! gp_pois_regr 1.64× → 1.49×); on arma11, whose chains Stan's starts leave stuck at the maximum
//! tree depth for some seeds, R̂ < 1.01 for 20 of 20 seeds (`init_robustness`). The low-rank
//! metric alone, from random starts, is not enough: lotka_volterra's stiff starts reach a
//! second mode. Where the caller fixed the metric's form or nothing is adapted, Stan's windowed
//! adaptation is the one that supports every form, as in CmdStan.

use crate::methods::pathfinder::pathfinder_inits;
use hazel_density::LogDensity;
use hazel_nuts::{AdaptMethod, Algorithm, Init, MetricKind, RunConfig, SamplerConfig};

/// The adaptation when none was asked for and warmup learns the metric freely.
pub const DEFAULT_ADAPTATION: AdaptMethod = AdaptMethod::LowRank;

/// The adaptation for `run` when its caller asked for none: [`DEFAULT_ADAPTATION`], unless
/// `stan_options` (the caller set what only Stan's adaptation serves: the metric's form, a
/// metric to start from, the windows) or the run adapts nothing (adaptation off, no warmup,
/// fixed_param). Then Stan's windowed adaptation, which learns any form and which the files
/// then name: what CmdStan would do. Call it once `run`'s warmup, adaptation switch and
/// algorithm are set.
pub fn default_adaptation(run: &RunConfig, stan_options: bool) -> AdaptMethod {
    let s = &run.sampler;
    let adapting = s.adapt.engaged && s.num_warmup > 0 && s.algorithm == Algorithm::Nuts;
    if adapting && !stan_options {
        DEFAULT_ADAPTATION
    } else {
        AdaptMethod::Stan
    }
}

/// The metric form `sampler`'s warmup ends with when `requested` was asked for (`explicit`:
/// by the caller, rather than by default): Stan's adaptation, or a run that adapts nothing,
/// keeps `requested`; the gradient adaptations learn their own form. `Err` holds what the
/// method learns when the caller asked explicitly for another form, for the caller's message.
pub fn adapted_metric(
    sampler: &SamplerConfig,
    requested: MetricKind,
    explicit: bool,
) -> Result<MetricKind, &'static str> {
    let method = sampler.adapt.method;
    let adapting = sampler.adapt.engaged && sampler.num_warmup > 0;
    if !adapting || method == AdaptMethod::Stan {
        return Ok(requested);
    }
    let learnt = method.metric_kind(requested);
    if explicit && learnt != requested {
        return Err(match method {
            AdaptMethod::LowRank => "its own low-rank plus diagonal metric",
            _ => "a diagonal metric",
        });
    }
    Ok(learnt)
}

/// Whether `run`'s chains start from Pathfinder when its caller gave no initial values: NUTS
/// runs do; fixed_param keeps Stan's random start, the point it then never moves.
pub fn pathfinder_by_default(run: &RunConfig) -> bool {
    run.sampler.algorithm == Algorithm::Nuts
}

/// Starts every chain of `run` at a draw of one multi-path Pathfinder run with a path per
/// chain ([`pathfinder_inits`]: the points depend on the seed and the chain ids only, never on
/// threads, lockstep batching or ranks). A model without parameters has nothing to start.
/// When Pathfinder finds no starting points, `run` is left as it is (its chains then start as
/// Stan's do, each screening random points) and the returned message, a warning for the
/// user, says why.
pub fn start_at_pathfinder<M: LogDensity>(model: &M, run: &mut RunConfig) -> Option<String> {
    if model.dim() == 0 {
        return None;
    }
    let ids = run.info().chain_ids();
    match pathfinder_inits(model, run.seed, &ids, run.threads) {
        Ok(points) => {
            run.sampler.init = Init::Unconstrained(points);
            None
        }
        Err(e) => Some(format!(
            "Pathfinder found no initial values ({e}); the chains start from random points \
             instead, uniformly in (-{radius}, {radius}) on the unconstrained scale",
            radius = match run.sampler.init {
                Init::Radius(r) => r,
                Init::Unconstrained(_) => 2.0,
            }
        )),
    }
}

//! Stan's `fixed_param` sampler: the chain stays at its starting point and every iteration only
//! recomputes the output row, so generated quantities get fresh random draws while parameters
//! (if any) keep their initial values.
//!
//! CmdStan switches to it by itself when a model has no parameters (NUTS in 0 dimensions has
//! nothing to move and its step-size search diverges); `hazel sample` does the same, and
//! `--algorithm fixed_param` asks for it explicitly. It runs no warmup and no adaptation, and
//! its iterations report CmdStan's two statistics, `lp__` and `accept_stat__`, both 0.

use crate::types::{DrawStats, SamplerConfig};

/// Checks the settings the fixed_param sampler needs: no warmup (there is nothing to adapt).
pub fn validate(config: &SamplerConfig) -> Result<(), String> {
    if config.num_warmup != 0 {
        return Err(format!(
            "the fixed_param sampler runs no warmup, but num_warmup is {}",
            config.num_warmup
        ));
    }
    Ok(())
}

/// The statistics of one fixed_param iteration, as CmdStan writes them (`lp__` = 0,
/// `accept_stat__` = 0). The NUTS-only fields are 0 too; sinks get only the first two
/// ([`crate::Algorithm::stat_columns`]).
pub(crate) fn transition_stats() -> DrawStats {
    DrawStats {
        lp: 0.0,
        accept_stat: 0.0,
        stepsize: 0.0,
        treedepth: 0,
        n_leapfrog: 0,
        divergent: false,
        energy: 0.0,
    }
}

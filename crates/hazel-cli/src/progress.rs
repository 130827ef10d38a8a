//! Progress of a sampling run, as a [`hazel_draws::Progress`] observer.
//!
//! On a terminal: one indicatif bar per chain (iteration, Warmup/Sampling, divergences of the
//! current phase).
//! When stderr is not a terminal (logs, CI): a plain line per chain every 10% of its
//! iterations, or every `--refresh N` iterations when given. With `--quiet` or `--refresh 0`:
//! nothing ([`hazel_draws::NoProgress`]). Rejection messages are
//! rate-limited per chain, so a model that rejects every proposal cannot flood the output.
//! None of this influences the draws.

use hazel_draws::{NoProgress, Progress};
use hazel_nuts::RunConfig;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The observer for the run `config`: bars on a terminal, lines otherwise, nothing when
/// `quiet`; chains are shown by their CmdStan ids. `refresh` is `--refresh` (CmdStan's:
/// iterations between progress lines, 0 for none).
pub fn progress_for_run(
    quiet: bool,
    refresh: Option<usize>,
    config: &RunConfig,
) -> Box<dyn Progress> {
    let chain_ids = &config.info().chain_ids();
    let (num_warmup, num_samples) = (config.sampler.num_warmup, config.sampler.num_samples);
    if quiet || refresh == Some(0) {
        Box::new(NoProgress)
    } else if std::io::stderr().is_terminal() {
        Box::new(BarProgress::new(chain_ids, num_warmup, num_samples))
    } else {
        let mut lines = LineProgress::new(
            chain_ids,
            num_warmup,
            num_samples,
            Box::new(|line| eprintln!("{line}")),
        );
        lines.every = refresh;
        Box::new(lines)
    }
}

/// How many rejection messages a chain shows before they are rate-limited.
const MESSAGES_SHOWN_FREELY: usize = 5;
/// After that, at most one message per chain per this interval (with a count of those skipped).
const MESSAGE_INTERVAL: Duration = Duration::from_secs(10);

/// Per-chain rate limiting of rejection messages.
struct MessageLimiter {
    chains: Mutex<Vec<MessageState>>,
}

#[derive(Clone, Default)]
struct MessageState {
    shown: usize,
    suppressed: usize,
    last_shown: Option<Instant>,
}

impl MessageLimiter {
    fn new(chains: usize) -> Self {
        MessageLimiter {
            chains: Mutex::new(vec![MessageState::default(); chains]),
        }
    }

    /// [`Self::admit`] now, for the run's `chain`-th chain, whose id is `chain_ids[chain]`.
    fn admit_now(&self, chain_ids: &[u64], chain: usize, message: &str) -> Option<String> {
        let chain_id = chain_ids.get(chain).copied().unwrap_or(chain as u64 + 1);
        self.admit(chain, chain_id, message, Instant::now())
    }

    /// The text to show for this message, if any.
    fn admit(&self, chain: usize, chain_id: u64, message: &str, now: Instant) -> Option<String> {
        let mut chains = self
            .chains
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let state = chains.get_mut(chain)?;
        let due = state
            .last_shown
            .is_none_or(|last| now.duration_since(last) >= MESSAGE_INTERVAL);
        if state.shown < MESSAGES_SHOWN_FREELY || due {
            let skipped = std::mem::take(&mut state.suppressed);
            state.shown += 1;
            state.last_shown = Some(now);
            let mut text = format!("Chain {chain_id}: rejected proposal: {message}");
            if skipped > 0 {
                text.push_str(&format!(" ({skipped} similar messages not shown)"));
            } else if state.shown == MESSAGES_SHOWN_FREELY {
                text.push_str(" (further messages from this chain are rate-limited)");
            }
            Some(text)
        } else {
            state.suppressed += 1;
            None
        }
    }
}

/// One terminal progress bar per chain.
pub struct BarProgress {
    bars: Vec<ProgressBar>,
    multi: MultiProgress,
    chain_ids: Vec<u64>,
    total: usize,
    messages: MessageLimiter,
}

impl BarProgress {
    pub fn new(chain_ids: &[u64], num_warmup: usize, num_samples: usize) -> Self {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let total = num_warmup + num_samples;
        let style =
            ProgressStyle::with_template("Chain {prefix:>3} [{bar:30}] {pos:>6}/{len:6} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
        let bars = chain_ids
            .iter()
            .map(|id| {
                let bar = multi.add(ProgressBar::new(total as u64));
                bar.set_style(style.clone());
                bar.set_prefix(id.to_string());
                bar.set_message(if num_warmup > 0 { "Warmup" } else { "Sampling" });
                bar
            })
            .collect();
        BarProgress {
            bars,
            multi,
            chain_ids: chain_ids.to_vec(),
            total,
            messages: MessageLimiter::new(chain_ids.len()),
        }
    }
}

impl Progress for BarProgress {
    fn iteration(&self, chain: usize, iteration: usize, warmup: bool, divergences: usize) {
        let Some(bar) = self.bars.get(chain) else {
            return;
        };
        bar.set_position(iteration as u64);
        let phase = if warmup { "Warmup" } else { "Sampling" };
        if divergences > 0 {
            bar.set_message(format!("{phase}, {divergences} divergent"));
        } else {
            bar.set_message(phase);
        }
        if iteration >= self.total {
            bar.finish();
        }
    }

    fn message(&self, chain: usize, message: &str) {
        if let Some(text) = self.messages.admit_now(&self.chain_ids, chain, message) {
            // Printed above the bars; if the terminal went away there is nowhere to report to.
            let _ = self.multi.println(text);
        }
    }
}

/// Plain progress lines, for logs.
pub struct LineProgress {
    chain_ids: Vec<u64>,
    total: usize,
    /// A line every this many iterations (and at the last one); `None`: every tenth of the run.
    pub every: Option<usize>,
    /// Per chain: the last step reported (a tenth, or a multiple of `every`).
    reported_steps: Vec<AtomicUsize>,
    messages: MessageLimiter,
    emit: Box<dyn Fn(&str) + Send + Sync>,
}

impl LineProgress {
    /// `emit` receives each finished line (stderr in the program, a buffer in tests).
    pub fn new(
        chain_ids: &[u64],
        num_warmup: usize,
        num_samples: usize,
        emit: Box<dyn Fn(&str) + Send + Sync>,
    ) -> Self {
        LineProgress {
            chain_ids: chain_ids.to_vec(),
            total: num_warmup + num_samples,
            every: None,
            reported_steps: chain_ids.iter().map(|_| AtomicUsize::new(0)).collect(),
            messages: MessageLimiter::new(chain_ids.len()),
            emit,
        }
    }
}

impl Progress for LineProgress {
    fn iteration(&self, chain: usize, iteration: usize, warmup: bool, divergences: usize) {
        let Some(reported) = self.reported_steps.get(chain) else {
            return;
        };
        if self.total == 0 {
            return;
        }
        let step = match self.every {
            None => iteration * 10 / self.total,
            // The last iteration always gets its line.
            Some(every) if iteration == self.total => self.total / every.max(1) + 1,
            Some(every) => iteration / every.max(1),
        };
        // Only the chain's own thread reports its iterations, so a plain load/store suffices.
        if step > reported.load(Ordering::Relaxed) {
            reported.store(step, Ordering::Relaxed);
            let phase = if warmup { "Warmup" } else { "Sampling" };
            let mut line = format!(
                "Chain {} Iteration: {iteration:>width$} / {} [{:>3}%]  ({phase})",
                self.chain_ids[chain],
                self.total,
                iteration * 100 / self.total,
                width = self.total.to_string().len()
            );
            // The runner counts each phase's divergences apart: warmup's are expected while
            // the step size adapts, only those after warmup are a warning sign.
            if divergences > 0 {
                let when = if warmup { "in warmup" } else { "after warmup" };
                line.push_str(&format!(", {divergences} divergent {when}"));
            }
            (self.emit)(&line);
        }
    }

    fn message(&self, chain: usize, message: &str) {
        if let Some(text) = self.messages.admit_now(&self.chain_ids, chain, message) {
            (self.emit)(&text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    type Emit = Box<dyn Fn(&str) + Send + Sync>;

    fn recording() -> (Arc<Mutex<Vec<String>>>, Emit) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        (
            lines,
            Box::new(move |line: &str| sink.lock().unwrap().push(line.to_string())),
        )
    }

    #[test]
    fn lines_every_tenth_of_each_chain() {
        let (lines, emit) = recording();
        let progress = LineProgress::new(&[1, 2], 100, 100, emit);
        for iteration in 1..=200 {
            progress.iteration(0, iteration, iteration <= 100, usize::from(iteration > 150));
        }
        for iteration in 1..=40 {
            progress.iteration(1, iteration, true, 0);
        }
        let lines = lines.lock().unwrap();
        assert_eq!(
            lines.iter().filter(|l| l.starts_with("Chain 1 ")).count(),
            10
        );
        assert_eq!(
            lines.iter().filter(|l| l.starts_with("Chain 2 ")).count(),
            2
        );
        assert!(
            lines.contains(&"Chain 1 Iteration:  20 / 200 [ 10%]  (Warmup)".to_string()),
            "{lines:?}"
        );
        assert!(lines.contains(
            &"Chain 1 Iteration: 200 / 200 [100%]  (Sampling), 1 divergent after warmup"
                .to_string()
        ));
    }

    /// `--refresh N`: a line every N iterations and at the last.
    #[test]
    fn lines_every_refresh_iterations() {
        let (lines, emit) = recording();
        let mut progress = LineProgress::new(&[1], 10, 15, emit);
        progress.every = Some(7);
        for iteration in 1..=25 {
            progress.iteration(0, iteration, iteration <= 10, 0);
        }
        let lines = lines.lock().unwrap();
        let iterations: Vec<&str> = lines
            .iter()
            .map(|l| l.split_whitespace().nth(3).unwrap())
            .collect();
        assert_eq!(iterations, ["7", "14", "21", "25"], "{lines:?}");
    }

    #[test]
    fn rejection_messages_are_rate_limited_per_chain() {
        let limiter = MessageLimiter::new(2);
        let start = Instant::now();
        let shown = (0..100)
            .filter(|_| limiter.admit(0, 1, "x < 0", start).is_some())
            .count();
        assert_eq!(shown, MESSAGES_SHOWN_FREELY);
        // The other chain has its own allowance.
        assert!(limiter.admit(1, 2, "x < 0", start).is_some());
        // After the interval one more gets through, saying how many were skipped.
        let later = limiter
            .admit(0, 1, "x < 0", start + MESSAGE_INTERVAL)
            .expect("due again");
        assert!(
            later.ends_with("(95 similar messages not shown)"),
            "{later}"
        );
    }
}

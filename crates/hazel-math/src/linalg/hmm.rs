//! Hidden Markov models with discrete states (Stan's `hmm_marginal`, `hmm_hidden_state_prob`,
//! `hmm_latent_rng`): `K` states, `N` observations, `log_omega` (`K × N`, column-major)
//! the log densities of each observation under each state, `gamma` (`K × K`, column-major)
//! the transition matrix with row `i` the distribution of the next state given state `i`,
//! `rho` the distribution of the first state.
//!
//! One scaled forward pass (each column's log densities shifted by their maximum, each
//! forward vector divided by its sum) gives the log marginal density; the backward pass
//! over the same scaling gives the marginal posteriors `γ_n` and the gradient:
//! `∂/∂log_omega[k, n] = γ_n[k]`, `∂/∂rho[k] = ω_1[k] β_1[k] / c_1` and
//! `∂/∂gamma[i, j] = Σ_{n≥2} α̂_{n−1}[i] ω_n[j] β_n[j] / c_n`.

// Negated comparisons are deliberate: a NaN must fail every check.
#![allow(clippy::neg_cmp_op_on_partial_ord, clippy::too_many_arguments)]

use super::densities::check_simplex;
use crate::dist::MathError;
use hazel_rng::StreamRng;

/// Scratch length of [`hmm_marginal`] for `k` states and `n` observations.
pub fn hmm_workspace_len(k: usize, n: usize) -> usize {
    2 * k * n + 2 * n + 2 * k
}

fn check(
    function: &str,
    log_omega: &[f64],
    gamma: &[f64],
    rho: &[f64],
    k: usize,
    n: usize,
) -> Result<(), MathError> {
    let e = |m: String| Err(MathError::new(format!("{function}: {m}")));
    if k == 0 || n == 0 || log_omega.len() != k * n {
        return e(format!(
            "log_omegas has size {} ({k} states × {n} observations), but must have a non-zero size",
            log_omega.len()
        ));
    }
    if gamma.len() != k * k {
        return e(format!(
            "Gamma has {} entries, but must be a square matrix of the number of states ({k}) squared",
            gamma.len()
        ));
    }
    if rho.len() != k {
        return e(format!(
            "rho has size {}, but must have the number of states ({k})",
            rho.len()
        ));
    }
    if let Some(i) = log_omega.iter().position(|x| x.is_nan()) {
        return e(format!(
            "log_omegas[{}, {}] is nan, but must not be nan!",
            i % k + 1,
            i / k + 1
        ));
    }
    for i in 0..k {
        let s: f64 = (0..k).map(|j| gamma[i + j * k]).sum();
        if !((s - 1.0).abs() <= super::TOLERANCE) {
            return e(format!(
                "Gamma[{}, ] is not a valid simplex. sum(Gamma[{}, ]) = {s}, but should be 1",
                i + 1,
                i + 1
            ));
        }
        if let Some(j) = (0..k).position(|j| !(gamma[i + j * k] >= 0.0)) {
            return e(format!(
                "Gamma[{}, ] is not a valid simplex. Gamma[{}, {}] = {}, but should be greater than or equal to 0",
                i + 1,
                i + 1,
                j + 1,
                gamma[i + j * k]
            ));
        }
    }
    check_simplex(function, "rho", rho)
}

/// Fills `ws` by the scaled forward pass and returns the log marginal density. Layout of `ws`:
/// `ω` (`k × n`, the shifted densities), `α̂` (`k × n`), `c` (`n`), `m` (`n`, the shifts),
/// then two vectors of `k`.
fn forward(
    log_omega: &[f64],
    gamma: &[f64],
    rho: &[f64],
    k: usize,
    n: usize,
    ws: &mut [f64],
) -> f64 {
    let (omega, rest) = ws.split_at_mut(k * n);
    let (alpha, rest) = rest.split_at_mut(k * n);
    let (c, rest) = rest.split_at_mut(n);
    let m = &mut rest[..n];
    for t in 0..n {
        let col = &log_omega[t * k..(t + 1) * k];
        let mx = col.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
        m[t] = mx;
        for (o, &l) in omega[t * k..(t + 1) * k].iter_mut().zip(col) {
            *o = if mx == f64::NEG_INFINITY {
                0.0
            } else {
                (l - mx).exp()
            };
        }
    }
    let mut log_p = 0.0;
    let mut shift = 0.0;
    let mut prod = 1.0;
    for t in 0..n {
        let mut s = 0.0;
        for j in 0..k {
            let prior = if t == 0 {
                rho[j]
            } else {
                let prev = &alpha[(t - 1) * k..t * k];
                let mut acc = 0.0;
                for (i, p) in prev.iter().enumerate() {
                    acc += gamma[i + j * k] * p;
                }
                acc
            };
            let a = omega[t * k + j] * prior;
            alpha[t * k + j] = a;
            s += a;
        }
        c[t] = s;
        if s > 0.0 {
            let inv = 1.0 / s;
            alpha[t * k..(t + 1) * k].iter_mut().for_each(|a| *a *= inv);
        }
        // log Π c_t, one logarithm per run of factors that stays well inside the range.
        prod *= s;
        shift += m[t];
        if !(prod > 1e-250 && prod < 1e250) || t + 1 == n {
            log_p += prod.ln();
            prod = 1.0;
        }
    }
    log_p + shift
}

/// Runs the backward pass over the forward pass in `ws`, calling `visit(t, β_t)` for
/// `t = n−1, …, 0` (`β_t[k]`: the scaled probability of the later observations given state k).
fn backward(
    gamma: &[f64],
    k: usize,
    n: usize,
    ws: &mut [f64],
    mut visit: impl FnMut(usize, &[f64], &[f64], &[f64], &[f64]),
) {
    let (omega, rest) = ws.split_at_mut(k * n);
    let (alpha, rest) = rest.split_at_mut(k * n);
    let (c, rest) = rest.split_at_mut(n);
    let rest = &mut rest[n..];
    let (beta, rest) = rest.split_at_mut(k);
    let next = &mut rest[..k];
    beta.iter_mut().for_each(|b| *b = 1.0);
    for t in (0..n).rev() {
        visit(t, beta, omega, alpha, c);
        if t == 0 {
            break;
        }
        // β_{t−1}[i] = Σ_j Γ[i, j] ω_t[j] β_t[j] / c_t
        for (i, nx) in next.iter_mut().enumerate() {
            let mut acc = 0.0;
            for j in 0..k {
                acc += gamma[i + j * k] * omega[t * k + j] * beta[j];
            }
            *nx = acc / c[t];
        }
        beta.copy_from_slice(next);
    }
}

/// `hmm_marginal(log_omega, Gamma, rho)`: the log marginal density of the observations, with
/// its partials *added* to the gradient slices that are `Some`. `ws`:
/// [`hmm_workspace_len`]`(k, n)` values.
pub fn hmm_marginal(
    log_omega: &[f64],
    gamma: &[f64],
    rho: &[f64],
    k: usize,
    n: usize,
    g_log_omega: Option<&mut [f64]>,
    g_gamma: Option<&mut [f64]>,
    g_rho: Option<&mut [f64]>,
    ws: &mut [f64],
) -> Result<f64, MathError> {
    const F: &str = "hmm_marginal";
    check(F, log_omega, gamma, rho, k, n)?;
    let log_p = forward(log_omega, gamma, rho, k, n, ws);
    if g_log_omega.is_none() && g_gamma.is_none() && g_rho.is_none() {
        return Ok(log_p);
    }
    if !log_p.is_finite() {
        // No path has positive probability: the gradient is undefined (Stan's is NaN).
        for g in [g_log_omega, g_gamma, g_rho].into_iter().flatten() {
            g.iter_mut().for_each(|v| *v = f64::NAN);
        }
        return Ok(log_p);
    }
    let (mut glo, mut gg, mut gr) = (g_log_omega, g_gamma, g_rho);
    backward(gamma, k, n, ws, |t, beta, omega, alpha, c| {
        if let Some(g) = glo.as_deref_mut() {
            for j in 0..k {
                g[t * k + j] += alpha[t * k + j] * beta[j];
            }
        }
        if t == 0 {
            if let Some(g) = gr.as_deref_mut() {
                for j in 0..k {
                    g[j] += omega[j] * beta[j] / c[0];
                }
            }
        } else if let Some(g) = gg.as_deref_mut() {
            for j in 0..k {
                let w = omega[t * k + j] * beta[j] / c[t];
                for i in 0..k {
                    g[i + j * k] += alpha[(t - 1) * k + i] * w;
                }
            }
        }
    });
    Ok(log_p)
}

/// `hmm_hidden_state_prob(log_omega, Gamma, rho)`: the `K × N` matrix (column-major, into
/// `out`) of the marginal posterior probability of each state at each observation.
pub fn hmm_hidden_state_prob(
    log_omega: &[f64],
    gamma: &[f64],
    rho: &[f64],
    k: usize,
    n: usize,
    out: &mut [f64],
    ws: &mut [f64],
) -> Result<(), MathError> {
    const F: &str = "hmm_hidden_state_prob";
    check(F, log_omega, gamma, rho, k, n)?;
    let log_p = forward(log_omega, gamma, rho, k, n, ws);
    if !log_p.is_finite() {
        return Err(MathError::new(format!(
            "{F}: the observations have probability zero under every path of hidden states"
        )));
    }
    backward(gamma, k, n, ws, |t, beta, _, alpha, _| {
        for j in 0..k {
            out[t * k + j] = alpha[t * k + j] * beta[j];
        }
    });
    Ok(())
}

/// `hmm_latent_rng(log_omega, Gamma, rho)`: one draw of the hidden states (1-based, into
/// `out`) from their joint posterior, by forward filtering and backward sampling: the last
/// state from `α̂_N`, then each earlier state `z_t` with probabilities `∝ α̂_t[i] Γ[i, z_{t+1}]`.
pub fn hmm_latent_rng(
    log_omega: &[f64],
    gamma: &[f64],
    rho: &[f64],
    k: usize,
    n: usize,
    out: &mut [i64],
    ws: &mut [f64],
    rng: &mut StreamRng,
) -> Result<(), MathError> {
    const F: &str = "hmm_latent_rng";
    check(F, log_omega, gamma, rho, k, n)?;
    let log_p = forward(log_omega, gamma, rho, k, n, ws);
    if !log_p.is_finite() {
        return Err(MathError::new(format!(
            "{F}: the observations have probability zero under every path of hidden states"
        )));
    }
    let alpha = &ws[k * n..2 * k * n];
    let last = &alpha[(n - 1) * k..n * k];
    out[n - 1] = crate::dist::mv_rng::categorical(last.iter().copied(), rng);
    for t in (0..n - 1).rev() {
        let z = (out[t + 1] - 1) as usize;
        let a = &alpha[t * k..(t + 1) * k];
        let total: f64 = (0..k).map(|i| a[i] * gamma[i + z * k]).sum();
        out[t] =
            crate::dist::mv_rng::categorical((0..k).map(|i| a[i] * gamma[i + z * k] / total), rng);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// log p by summing over every path (K^N of them).
    fn brute(log_omega: &[f64], gamma: &[f64], rho: &[f64], k: usize, n: usize) -> f64 {
        let mut total = 0.0;
        let paths = k.pow(n as u32);
        for p in 0..paths {
            let mut z = vec![0; n];
            let mut r = p;
            for zt in z.iter_mut() {
                *zt = r % k;
                r /= k;
            }
            let mut lp = rho[z[0]].ln() + log_omega[z[0]];
            for t in 1..n {
                lp += gamma[z[t - 1] + z[t] * k].ln() + log_omega[t * k + z[t]];
            }
            total += lp.exp();
        }
        total.ln()
    }

    fn example() -> (Vec<f64>, Vec<f64>, Vec<f64>, usize, usize) {
        let k = 3;
        let n = 4;
        let log_omega: Vec<f64> = (0..k * n)
            .map(|i| -0.3 * i as f64 + (i as f64 * 1.7).sin())
            .collect();
        // rows: (0.7, 0.2, 0.1), (0.1, 0.8, 0.1), (0.25, 0.25, 0.5); column-major
        let gamma = vec![0.7, 0.1, 0.25, 0.2, 0.8, 0.25, 0.1, 0.1, 0.5];
        let rho = vec![0.5, 0.3, 0.2];
        (log_omega, gamma, rho, k, n)
    }

    #[test]
    fn marginal_matches_sum_over_paths_and_finite_differences() {
        let (lo, g, r, k, n) = example();
        let mut ws = vec![0.0; hmm_workspace_len(k, n)];
        let (mut glo, mut gg, mut gr) = (vec![0.0; k * n], vec![0.0; k * k], vec![0.0; k]);
        let v = hmm_marginal(
            &lo,
            &g,
            &r,
            k,
            n,
            Some(&mut glo),
            Some(&mut gg),
            Some(&mut gr),
            &mut ws,
        )
        .unwrap();
        assert!((v - brute(&lo, &g, &r, k, n)).abs() < 1e-12);
        let h = 1e-6;
        for i in 0..lo.len() {
            let (mut a, mut b) = (lo.clone(), lo.clone());
            a[i] += h;
            b[i] -= h;
            let fd = (brute(&a, &g, &r, k, n) - brute(&b, &g, &r, k, n)) / (2.0 * h);
            assert!(
                (fd - glo[i]).abs() < 1e-7,
                "log_omega {i}: {fd} vs {}",
                glo[i]
            );
        }
        for i in 0..g.len() {
            let (mut a, mut b) = (g.clone(), g.clone());
            a[i] += h;
            b[i] -= h;
            let fd = (brute(&lo, &a, &r, k, n) - brute(&lo, &b, &r, k, n)) / (2.0 * h);
            assert!((fd - gg[i]).abs() < 1e-7, "Gamma {i}: {fd} vs {}", gg[i]);
        }
        for i in 0..r.len() {
            let (mut a, mut b) = (r.clone(), r.clone());
            a[i] += h;
            b[i] -= h;
            let fd = (brute(&lo, &g, &a, k, n) - brute(&lo, &g, &b, k, n)) / (2.0 * h);
            assert!((fd - gr[i]).abs() < 1e-7, "rho {i}: {fd} vs {}", gr[i]);
        }
    }

    #[test]
    fn hidden_state_probabilities_are_the_log_omega_gradient() {
        let (lo, g, r, k, n) = example();
        let mut ws = vec![0.0; hmm_workspace_len(k, n)];
        let mut glo = vec![0.0; k * n];
        hmm_marginal(&lo, &g, &r, k, n, Some(&mut glo), None, None, &mut ws).unwrap();
        let mut p = vec![0.0; k * n];
        hmm_hidden_state_prob(&lo, &g, &r, k, n, &mut p, &mut ws).unwrap();
        for t in 0..n {
            let s: f64 = p[t * k..(t + 1) * k].iter().sum();
            assert!((s - 1.0).abs() < 1e-12);
        }
        for (a, b) in p.iter().zip(&glo) {
            assert!((a - b).abs() < 1e-14);
        }
    }

    #[test]
    fn large_log_densities_do_not_overflow() {
        let (mut lo, g, r, k, n) = example();
        let base = brute(&lo, &g, &r, k, n);
        lo.iter_mut().for_each(|x| *x -= 2000.0);
        let mut ws = vec![0.0; hmm_workspace_len(k, n)];
        let v = hmm_marginal(&lo, &g, &r, k, n, None, None, None, &mut ws).unwrap();
        assert!((v - (base - 2000.0 * n as f64)).abs() < 1e-9);
    }

    #[test]
    fn invalid_arguments_are_errors() {
        let (lo, mut g, r, k, n) = example();
        let mut ws = vec![0.0; hmm_workspace_len(k, n)];
        g[0] = 0.9;
        let e = hmm_marginal(&lo, &g, &r, k, n, None, None, None, &mut ws).unwrap_err();
        assert!(e.message.contains("Gamma[1, ]"), "{e}");
        let (lo, g, _, k, n) = example();
        let e =
            hmm_marginal(&lo, &g, &[0.5, 0.5, 0.5], k, n, None, None, None, &mut ws).unwrap_err();
        assert!(e.message.contains("rho"), "{e}");
    }

    #[test]
    fn latent_draws_follow_the_joint_posterior() {
        // Frequencies of the states at each time match hmm_hidden_state_prob within 5 standard
        // errors of a proportion, and pairs (z_1, z_2) match the two-slice marginal.
        let (lo, g, r, k, n) = example();
        let mut ws = vec![0.0; hmm_workspace_len(k, n)];
        let mut p = vec![0.0; k * n];
        hmm_hidden_state_prob(&lo, &g, &r, k, n, &mut p, &mut ws).unwrap();
        let mut rng = StreamRng::new(7, 1, hazel_rng::Purpose::GeneratedQuantities);
        let draws = 20_000;
        let mut counts = vec![0usize; k * n];
        let mut pair = vec![0usize; k * k];
        let mut z = vec![0i64; n];
        for _ in 0..draws {
            hmm_latent_rng(&lo, &g, &r, k, n, &mut z, &mut ws, &mut rng).unwrap();
            for t in 0..n {
                counts[t * k + (z[t] - 1) as usize] += 1;
            }
            pair[(z[0] - 1) as usize + (z[1] - 1) as usize * k] += 1;
        }
        for i in 0..k * n {
            let f = counts[i] as f64 / draws as f64;
            let se = (p[i] * (1.0 - p[i]) / draws as f64).sqrt();
            assert!(
                (f - p[i]).abs() < 5.0 * se + 1e-12,
                "state {i}: {f} vs {}",
                p[i]
            );
        }
        // Two-slice marginal by brute force.
        let total = brute(&lo, &g, &r, k, n).exp();
        for a in 0..k {
            for b in 0..k {
                let mut s = 0.0;
                for rest in 0..k.pow((n - 2) as u32) {
                    let mut zz = vec![a, b];
                    let mut q = rest;
                    for _ in 2..n {
                        zz.push(q % k);
                        q /= k;
                    }
                    let mut lp = r[zz[0]].ln() + lo[zz[0]];
                    for t in 1..n {
                        lp += g[zz[t - 1] + zz[t] * k].ln() + lo[t * k + zz[t]];
                    }
                    s += lp.exp();
                }
                let pr = s / total;
                let f = pair[a + b * k] as f64 / draws as f64;
                let se = (pr * (1.0 - pr) / draws as f64).sqrt();
                assert!(
                    (f - pr).abs() < 5.0 * se + 1e-12,
                    "pair ({a}, {b}): {f} vs {pr}"
                );
            }
        }
    }
}

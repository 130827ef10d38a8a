//! Generated data sets the benchmarks share, written as CmdStan JSON.

use hazel_rng::StreamRng;
use std::fmt::Write as _;

/// Appends `[v0,v1,…]` with `decimals` decimals.
pub fn push_row(out: &mut String, row: &[f64], decimals: usize) {
    out.push('[');
    for (j, v) in row.iter().enumerate() {
        if j > 0 {
            out.push(',');
        }
        let _ = write!(out, "{v:.decimals$}");
    }
    out.push(']');
}

/// Appends a row-major matrix as nested arrays.
pub fn push_matrix(out: &mut String, rows: &[Vec<f64>], decimals: usize) {
    out.push('[');
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_row(out, r, decimals);
    }
    out.push(']');
}

/// Appends an integer array.
pub fn push_ints(out: &mut String, v: &[i64]) {
    let text: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    let _ = write!(out, "[{}]", text.join(","));
}

/// `1 / (1 + e^−x)`.
pub fn inv_logit(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Logistic regression data as `examples/logistic_regression/generate_data.py` makes it (not
/// the same draws: this generator is hazel's ChaCha8 stream): X standard normal rounded to 4
/// decimals, alpha = −0.5, beta ~ normal(0, 0.5).
pub fn logistic_data(n: usize, k: usize, rng: &mut StreamRng) -> String {
    let beta: Vec<f64> = (0..k).map(|_| 0.5 * rng.normal()).collect();
    let mut x_rows = Vec::with_capacity(n);
    let mut y = Vec::with_capacity(n);
    for _ in 0..n {
        let row: Vec<f64> = (0..k).map(|_| (rng.normal() * 1e4).round() / 1e4).collect();
        let eta = -0.5 + row.iter().zip(&beta).map(|(a, b)| a * b).sum::<f64>();
        y.push(rng.bernoulli(inv_logit(eta)) as i64);
        x_rows.push(row);
    }
    let mut s = format!("{{\"N\":{n},\"K\":{k},\"X\":");
    push_matrix(&mut s, &x_rows, 4);
    s.push_str(",\"y\":");
    push_ints(&mut s, &y);
    s.push('}');
    s
}

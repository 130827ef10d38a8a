//! The Euclidean metric of the Hamiltonian: kinetic energy `½ pᵀ M⁻¹ p` with momentum
//! `p ~ N(0, M)`.
//!
//! hazel stores the *inverse* metric `M⁻¹` (an estimate of the posterior covariance), as Stan
//! does (`diag_e` / `dense_e`). For the dense metric the Cholesky factor `L` of `M⁻¹ = L Lᵀ`
//! is kept alongside; a momentum is drawn as `p = L⁻ᵀ z` with `z ~ N(0, I)`, whose covariance
//! is `L⁻ᵀ L⁻¹ = (L Lᵀ)⁻¹ = M`, which is Stan's `dense_e_metric::sample_p`.
//!
//! The low-rank plus diagonal metric (`MetricKind::LowRank`, learnt by the low-rank adaptation)
//! is `M⁻¹ = D (I + U (Λ − I) Uᵀ) D` with `D = diag(σ)` and `k` orthonormal columns `U` (at most
//! [`MAX_RANK`]): `M⁻¹ p` costs `O(dk)`, and a momentum is
//! `p = D⁻¹ (z + U (Λ^{-1/2} − I) Uᵀ z)`, whose covariance is
//! `D⁻¹ (I + U (Λ⁻¹ − I) Uᵀ) D⁻¹ = M` since `U` has orthonormal columns.
//!
//! Every operation writes into caller buffers: nothing here allocates after construction, and
//! an adapted covariance is copied into the existing storage by [`Metric::set_diag`] /
//! [`Metric::set_dense`] / [`Metric::set_low_rank`].

use crate::types::{InverseMetric, MetricKind};
use hazel_rng::StreamRng;

/// Number of independent partial sums in reductions (dot products, kinetic energy). A fixed
/// number, so results never depend on the machine; enough to hide floating-point add latency.
pub const LANES: usize = 8;

/// The most eigen-directions a low-rank metric keeps (their coefficients live on the stack in
/// every leapfrog step, so the hot path never allocates).
pub(crate) const MAX_RANK: usize = 128;

/// Sum of the partial sums in a fixed order.
#[inline]
pub(crate) fn sum_lanes(partial: &[f64; LANES]) -> f64 {
    ((partial[0] + partial[1]) + (partial[2] + partial[3]))
        + ((partial[4] + partial[5]) + (partial[6] + partial[7]))
}

/// `Σ a_i b_i` with the lane shape of [`sum_lanes`]: element `i` of the first `n − n mod LANES`
/// goes to lane `i mod LANES`, the tail to lane 0.
#[inline]
fn lane_dot(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len();
    let mut partial = [0.0; LANES];
    let body = n - n % LANES;
    for (x, y) in a[..body]
        .chunks_exact(LANES)
        .zip(b[..body].chunks_exact(LANES))
    {
        for l in 0..LANES {
            partial[l] += x[l] * y[l];
        }
    }
    for i in body..n {
        partial[0] += a[i] * b[i];
    }
    sum_lanes(&partial)
}

/// Why a user-supplied or adapted inverse metric cannot be used.
#[derive(Debug, Clone, PartialEq)]
pub enum MetricError {
    /// The number of values does not match the model's dimension.
    Dimension { expected: usize, found: usize },
    /// An entry is not finite or (diagonal) not strictly positive.
    InvalidEntry { index: usize, value: f64 },
    /// The dense matrix is not symmetric at `(row, col)`.
    NotSymmetric { row: usize, col: usize },
    /// The dense matrix is not positive definite (its Cholesky factorisation failed at `pivot`).
    NotPositiveDefinite { pivot: usize },
    /// The given inverse metric's form cannot be used for this metric kind.
    WrongKind {
        given: &'static str,
        wanted: &'static str,
    },
}

impl std::fmt::Display for MetricError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetricError::Dimension { expected, found } => {
                write!(f, "inverse metric has {found} values, expected {expected}")
            }
            MetricError::InvalidEntry { index, value } => {
                write!(
                    f,
                    "inverse metric entry {index} is {value}; entries must be finite and positive"
                )
            }
            MetricError::NotSymmetric { row, col } => {
                write!(f, "dense inverse metric is not symmetric at ({row}, {col})")
            }
            MetricError::NotPositiveDefinite { pivot } => {
                write!(f, "dense inverse metric is not positive definite (Cholesky failed at pivot {pivot})")
            }
            MetricError::WrongKind { given, wanted } => {
                write!(f, "a {given} inverse metric cannot start a {wanted} metric")
            }
        }
    }
}

impl std::error::Error for MetricError {}

/// Fills `out` with standard normal variates, two per polar-method pair.
fn fill_standard_normal(rng: &mut StreamRng, out: &mut [f64]) {
    let mut pairs = out.chunks_exact_mut(2);
    for pair in &mut pairs {
        let (a, b) = rng.normal_pair();
        pair[0] = a;
        pair[1] = b;
    }
    for x in pairs.into_remainder() {
        *x = rng.normal();
    }
}

/// An inverse metric ready for use in leapfrog steps.
#[derive(Debug, Clone)]
pub struct Metric {
    dim: usize,
    storage: MetricStorage,
}

#[derive(Debug, Clone)]
enum MetricStorage {
    Diag {
        /// `M⁻¹` diagonal (variances).
        inv: Vec<f64>,
        /// `1 / sqrt(M⁻¹_ii)`: the momentum standard deviations.
        momentum_sd: Vec<f64>,
    },
    Dense {
        /// `M⁻¹`, row-major.
        inv: Vec<f64>,
        /// Lower Cholesky factor of `M⁻¹`, row-major.
        chol: Vec<f64>,
    },
    LowRank {
        /// `σ`: the diagonal scale `D`.
        scale: Vec<f64>,
        /// The eigenvalues `λ_j` (the first `rank` entries are in use).
        values: Vec<f64>,
        /// Column `j` of `U` is `vectors[j·dim .. (j+1)·dim]` (the first `rank` columns).
        vectors: Vec<f64>,
        rank: usize,
    },
}

/// The name of an inverse metric's form, for messages.
fn form_name(given: &InverseMetric) -> &'static str {
    match given {
        InverseMetric::Diag(_) => "diagonal",
        InverseMetric::Dense { .. } => "dense",
        InverseMetric::LowRank { .. } => "low-rank",
    }
}

/// The name of a metric kind, for messages.
fn kind_name(kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Unit => "unit",
        MetricKind::Diag => "diagonal",
        MetricKind::Dense => "dense",
        MetricKind::LowRank => "low-rank",
    }
}

impl Metric {
    /// The identity metric of the given kind.
    pub fn identity(kind: MetricKind, dim: usize) -> Self {
        match kind {
            MetricKind::Unit | MetricKind::Diag => Metric {
                dim,
                storage: MetricStorage::Diag {
                    inv: vec![1.0; dim],
                    momentum_sd: vec![1.0; dim],
                },
            },
            MetricKind::Dense => {
                let mut inv = vec![0.0; dim * dim];
                for i in 0..dim {
                    inv[i * dim + i] = 1.0;
                }
                let chol = inv.clone();
                Metric {
                    dim,
                    storage: MetricStorage::Dense { inv, chol },
                }
            }
            MetricKind::LowRank => {
                let capacity = dim.min(MAX_RANK);
                Metric {
                    dim,
                    storage: MetricStorage::LowRank {
                        scale: vec![1.0; dim],
                        values: vec![1.0; capacity],
                        vectors: vec![0.0; capacity * dim],
                        rank: 0,
                    },
                }
            }
        }
    }

    /// A metric of kind `kind` from a user-supplied inverse metric. A diagonal one starts any
    /// kind (a dense metric with that diagonal; a low-rank one with that scale and no
    /// directions; a unit metric only if it is the identity); a low-rank one starts a low-rank
    /// or a dense metric (its matrix); a dense one only a dense metric (a diagonal or low-rank
    /// metric would lose information silently).
    pub fn from_inverse(
        kind: MetricKind,
        dim: usize,
        given: &InverseMetric,
    ) -> Result<Self, MetricError> {
        let mut metric = Metric::identity(kind, dim);
        let wrong = || MetricError::WrongKind {
            given: form_name(given),
            wanted: kind_name(kind),
        };
        if given.dim() != dim {
            let found = match given {
                InverseMetric::Diag(values) | InverseMetric::Dense { values, .. } => values.len(),
                InverseMetric::LowRank { scale, .. } => scale.len(),
            };
            let expected = match given {
                InverseMetric::Dense { .. } => dim * dim,
                _ => dim,
            };
            return Err(MetricError::Dimension { expected, found });
        }
        match (kind, given) {
            (MetricKind::Diag, InverseMetric::Diag(values)) => metric.set_diag(values)?,
            (MetricKind::Unit, InverseMetric::Diag(values)) => {
                if let Some((index, &value)) = values.iter().enumerate().find(|(_, &v)| v != 1.0) {
                    return Err(MetricError::InvalidEntry { index, value });
                }
            }
            (MetricKind::Dense, InverseMetric::Diag(values)) => {
                let mut dense = vec![0.0; dim * dim];
                for (i, &v) in values.iter().enumerate() {
                    dense[i * dim + i] = v;
                }
                metric.set_dense(&dense)?;
            }
            (MetricKind::Dense, InverseMetric::Dense { values, .. }) => {
                if values.len() != dim * dim {
                    return Err(MetricError::Dimension {
                        expected: dim * dim,
                        found: values.len(),
                    });
                }
                metric.set_dense(values)?;
            }
            (MetricKind::Dense, InverseMetric::LowRank { .. }) => {
                if let InverseMetric::Dense { values, .. } = given.to_dense().as_ref() {
                    metric.set_dense(values)?;
                }
            }
            (MetricKind::LowRank, InverseMetric::Diag(values)) => {
                for (index, &value) in values.iter().enumerate() {
                    if !(value.is_finite() && value > 0.0) {
                        return Err(MetricError::InvalidEntry { index, value });
                    }
                }
                let scale: Vec<f64> = values.iter().map(|v| v.sqrt()).collect();
                metric.set_low_rank(&scale, &[], &[])?;
            }
            (
                MetricKind::LowRank,
                InverseMetric::LowRank {
                    scale,
                    values,
                    vectors,
                },
            ) => metric.set_low_rank(scale, values, vectors)?,
            _ => return Err(wrong()),
        }
        Ok(metric)
    }

    /// Dimension of the space.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// How the metric is stored: diagonal (also a unit metric), dense or low-rank.
    pub fn kind(&self) -> MetricKind {
        match self.storage {
            MetricStorage::Diag { .. } => MetricKind::Diag,
            MetricStorage::Dense { .. } => MetricKind::Dense,
            MetricStorage::LowRank { .. } => MetricKind::LowRank,
        }
    }

    /// Replaces a diagonal inverse metric in place (no allocation).
    pub fn set_diag(&mut self, variances: &[f64]) -> Result<(), MetricError> {
        if variances.len() != self.dim {
            return Err(MetricError::Dimension {
                expected: self.dim,
                found: variances.len(),
            });
        }
        for (index, &value) in variances.iter().enumerate() {
            if !(value.is_finite() && value > 0.0) {
                return Err(MetricError::InvalidEntry { index, value });
            }
        }
        match &mut self.storage {
            MetricStorage::Diag { inv, momentum_sd } => {
                inv.copy_from_slice(variances);
                for (sd, &v) in momentum_sd.iter_mut().zip(variances) {
                    *sd = 1.0 / v.sqrt();
                }
                Ok(())
            }
            MetricStorage::Dense { .. } | MetricStorage::LowRank { .. } => {
                Err(MetricError::WrongKind {
                    given: "diagonal",
                    wanted: kind_name(self.kind()),
                })
            }
        }
    }

    /// Replaces a dense inverse metric (row-major `dim × dim`) in place and refactorises it.
    /// On error the metric is left unchanged in meaning only if the caller discards it; the
    /// adaptation treats a failure as fatal for the chain.
    pub fn set_dense(&mut self, covariance: &[f64]) -> Result<(), MetricError> {
        let n = self.dim;
        if covariance.len() != n * n {
            return Err(MetricError::Dimension {
                expected: n * n,
                found: covariance.len(),
            });
        }
        for (index, &value) in covariance.iter().enumerate() {
            if !value.is_finite() {
                return Err(MetricError::InvalidEntry { index, value });
            }
        }
        for row in 0..n {
            for col in 0..row {
                let (a, b) = (covariance[row * n + col], covariance[col * n + row]);
                if (a - b).abs() > 1e-8 * (a.abs() + b.abs()).max(f64::MIN_POSITIVE) {
                    return Err(MetricError::NotSymmetric { row, col });
                }
            }
        }
        match &mut self.storage {
            MetricStorage::Dense { inv, chol } => {
                // Row-major, every term subtracted: the sampler's arithmetic.
                hazel_math::linalg::cholesky_lower_row_major(covariance, n, chol)
                    .map_err(|pivot| MetricError::NotPositiveDefinite { pivot })?;
                inv.copy_from_slice(covariance);
                Ok(())
            }
            MetricStorage::Diag { .. } | MetricStorage::LowRank { .. } => {
                Err(MetricError::WrongKind {
                    given: "dense",
                    wanted: kind_name(self.kind()),
                })
            }
        }
    }

    /// Replaces a low-rank metric in place: `scale` (`dim` entries `σ`), `values` (`k ≤`
    /// [`MAX_RANK`] eigenvalues `λ`) and `vectors` (`k` orthonormal columns of `dim` entries).
    /// Orthonormality is the caller's promise (the adaptation builds the columns so); the
    /// entries are checked to be finite and the scales and eigenvalues positive.
    pub fn set_low_rank(
        &mut self,
        new_scale: &[f64],
        new_values: &[f64],
        new_vectors: &[f64],
    ) -> Result<(), MetricError> {
        let dim = self.dim;
        let k = new_values.len();
        if new_scale.len() != dim {
            return Err(MetricError::Dimension {
                expected: dim,
                found: new_scale.len(),
            });
        }
        if new_vectors.len() != k * dim || k > dim.min(MAX_RANK) {
            return Err(MetricError::Dimension {
                expected: k * dim,
                found: new_vectors.len(),
            });
        }
        for (index, &value) in new_scale.iter().chain(new_values).enumerate() {
            if !(value.is_finite() && value > 0.0) {
                return Err(MetricError::InvalidEntry { index, value });
            }
        }
        if let Some((index, &value)) = new_vectors.iter().enumerate().find(|(_, v)| !v.is_finite())
        {
            return Err(MetricError::InvalidEntry { index, value });
        }
        match &mut self.storage {
            MetricStorage::LowRank {
                scale,
                values,
                vectors,
                rank,
            } => {
                scale.copy_from_slice(new_scale);
                values[..k].copy_from_slice(new_values);
                vectors[..k * dim].copy_from_slice(new_vectors);
                *rank = k;
                Ok(())
            }
            _ => Err(MetricError::WrongKind {
                given: "low-rank",
                wanted: kind_name(self.kind()),
            }),
        }
    }

    /// The inverse metric as the public contract type (allocates; not for the hot path).
    pub fn to_inverse_metric(&self) -> InverseMetric {
        match &self.storage {
            MetricStorage::Diag { inv, .. } => InverseMetric::Diag(inv.clone()),
            MetricStorage::Dense { inv, .. } => InverseMetric::Dense {
                dim: self.dim,
                values: inv.clone(),
            },
            MetricStorage::LowRank {
                scale,
                values,
                vectors,
                rank,
            } => InverseMetric::LowRank {
                scale: scale.clone(),
                values: values[..*rank].to_vec(),
                vectors: vectors[..*rank * self.dim].to_vec(),
            },
        }
    }

    /// Writes the inverse metric into `out` without allocating when `out` already has this
    /// metric's form and size (a diagonal or dense metric always does after the first call; a
    /// low-rank one whenever its rank is unchanged), else replaces `out`.
    pub fn copy_inverse_into(&self, out: &mut InverseMetric) {
        match (&self.storage, &mut *out) {
            (MetricStorage::Diag { inv, .. }, InverseMetric::Diag(values))
            | (MetricStorage::Dense { inv, .. }, InverseMetric::Dense { values, .. })
                if values.len() == inv.len() =>
            {
                values.copy_from_slice(inv)
            }
            (
                MetricStorage::LowRank {
                    scale,
                    values,
                    vectors,
                    rank,
                },
                InverseMetric::LowRank {
                    scale: out_scale,
                    values: out_values,
                    vectors: out_vectors,
                },
            ) if out_values.len() == *rank && out_scale.len() == self.dim => {
                out_scale.copy_from_slice(scale);
                out_values.copy_from_slice(&values[..*rank]);
                out_vectors.copy_from_slice(&vectors[..*rank * self.dim]);
            }
            _ => *out = self.to_inverse_metric(),
        }
    }

    /// `coefficients[j] = factor(λ_j) · (u_jᵀ x)` for the low-rank directions; returns the rank.
    #[inline]
    fn project(
        vectors: &[f64],
        values: &[f64],
        rank: usize,
        x: &[f64],
        factor: impl Fn(f64) -> f64,
        coefficients: &mut [f64; MAX_RANK],
    ) {
        let dim = x.len();
        for j in 0..rank {
            let u = &vectors[j * dim..(j + 1) * dim];
            coefficients[j] = factor(values[j]) * lane_dot(u, x);
        }
    }

    /// `out += Σ_j coefficients[j] u_j`.
    #[inline]
    fn expand(vectors: &[f64], rank: usize, coefficients: &[f64; MAX_RANK], out: &mut [f64]) {
        let dim = out.len();
        for j in 0..rank {
            let c = coefficients[j];
            for (o, &u) in out.iter_mut().zip(&vectors[j * dim..(j + 1) * dim]) {
                *o += c * u;
            }
        }
    }

    /// Draws a momentum `p ~ N(0, M)` into `p`.
    pub fn sample_momentum(&self, rng: &mut StreamRng, p: &mut [f64]) {
        match &self.storage {
            MetricStorage::Diag { momentum_sd, .. } => {
                fill_standard_normal(rng, p);
                for (pi, &sd) in p.iter_mut().zip(momentum_sd) {
                    *pi *= sd;
                }
            }
            MetricStorage::Dense { chol, .. } => {
                let n = self.dim;
                fill_standard_normal(rng, p);
                // Solve Lᵀ p = z by back substitution (Lᵀ is upper triangular; (Lᵀ)_ij = L_ji).
                for i in (0..n).rev() {
                    let mut sum = p[i];
                    for j in i + 1..n {
                        sum -= chol[j * n + i] * p[j];
                    }
                    p[i] = sum / chol[i * n + i];
                }
            }
            MetricStorage::LowRank {
                scale,
                values,
                vectors,
                rank,
            } => {
                fill_standard_normal(rng, p);
                let mut c = [0.0; MAX_RANK];
                Self::project(vectors, values, *rank, p, |l| 1.0 / l.sqrt() - 1.0, &mut c);
                Self::expand(vectors, *rank, &c, p);
                for (pi, &s) in p.iter_mut().zip(scale) {
                    *pi /= s;
                }
            }
        }
    }

    /// `velocity = M⁻¹ p` (Stan's `dtau_dp`, the "sharp" momentum); returns the kinetic energy
    /// `½ pᵀ M⁻¹ p`.
    #[inline]
    pub fn velocity(&self, p: &[f64], velocity: &mut [f64]) -> f64 {
        match &self.storage {
            MetricStorage::Diag { inv, .. } => scaled_velocity(velocity, p, inv, |_, pi| pi),
            MetricStorage::Dense { inv, .. } => {
                let n = self.dim;
                let mut twice_kinetic = 0.0;
                for i in 0..n {
                    let row = &inv[i * n..(i + 1) * n];
                    let vi = lane_dot(row, p);
                    velocity[i] = vi;
                    twice_kinetic += vi * p[i];
                }
                0.5 * twice_kinetic
            }
            MetricStorage::LowRank {
                scale,
                values,
                vectors,
                rank,
            } => {
                // v = D (I + U (Λ − I) Uᵀ) D p.
                for ((v, &pi), &s) in velocity.iter_mut().zip(p).zip(scale) {
                    *v = s * pi;
                }
                let mut c = [0.0; MAX_RANK];
                Self::project(vectors, values, *rank, velocity, |l| l - 1.0, &mut c);
                Self::expand(vectors, *rank, &c, velocity);
                scaled_velocity(velocity, p, scale, |vi, _| vi)
            }
        }
    }

    /// The first half of a leapfrog step: `p += half · grad`, then `q += ε M⁻¹ p` (fused into
    /// one pass for the diagonal metric); `scratch` (length `dim`) is used by the dense metric.
    #[inline]
    pub fn kick_drift(
        &self,
        half: f64,
        epsilon: f64,
        grad: &[f64],
        p: &mut [f64],
        q: &mut [f64],
        scratch: &mut [f64],
    ) {
        match &self.storage {
            MetricStorage::Diag { inv, .. } => {
                for (((qi, pi), &g), &m) in q.iter_mut().zip(p.iter_mut()).zip(grad).zip(inv) {
                    *pi += half * g;
                    *qi += epsilon * (m * *pi);
                }
            }
            MetricStorage::Dense { .. } | MetricStorage::LowRank { .. } => {
                for (pi, &g) in p.iter_mut().zip(grad) {
                    *pi += half * g;
                }
                self.velocity(p, scratch);
                for (qi, &v) in q.iter_mut().zip(scratch.iter()) {
                    *qi += epsilon * v;
                }
            }
        }
    }

    /// The second half of a leapfrog step, `p += half · grad`, followed by `velocity = M⁻¹ p`;
    /// returns the kinetic energy. (The kick is its own pass: one pass over `p`, small beside
    /// the gradient, for one velocity rule per metric.)
    #[inline]
    pub fn kick_velocity(
        &self,
        half: f64,
        grad: &[f64],
        p: &mut [f64],
        velocity: &mut [f64],
    ) -> f64 {
        for (pi, &g) in p.iter_mut().zip(grad) {
            *pi += half * g;
        }
        self.velocity(p, velocity)
    }
}

/// `velocity[i] = scale[i] · from(velocity[i], p[i])` for every `i`; returns the kinetic energy
/// `½ Σ velocityᵢ pᵢ`, summed in `LANES` partial sums (the order of every diagonal pass, which
/// fixes the bits).
#[inline(always)]
fn scaled_velocity(
    velocity: &mut [f64],
    p: &[f64],
    scale: &[f64],
    from: impl Fn(f64, f64) -> f64,
) -> f64 {
    let mut twice_kinetic = [0.0; LANES];
    let n = p.len();
    let body = n - n % LANES;
    for ((v, pc), s) in velocity[..body]
        .chunks_exact_mut(LANES)
        .zip(p[..body].chunks_exact(LANES))
        .zip(scale[..body].chunks_exact(LANES))
    {
        for l in 0..LANES {
            v[l] = s[l] * from(v[l], pc[l]);
            twice_kinetic[l] += v[l] * pc[l];
        }
    }
    for i in body..n {
        velocity[i] = scale[i] * from(velocity[i], p[i]);
        twice_kinetic[0] += velocity[i] * p[i];
    }
    0.5 * sum_lanes(&twice_kinetic)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hazel_rng::Purpose;

    /// The dense momentum has covariance M = (M⁻¹)⁻¹: checked through E[(M⁻¹ p)(M⁻¹ p)ᵀ] = M⁻¹.
    #[test]
    fn dense_momentum_has_metric_covariance() {
        let cov = [2.0, 0.9, 0.9, 0.5];
        let metric = Metric::from_inverse(
            MetricKind::Dense,
            2,
            &InverseMetric::Dense {
                dim: 2,
                values: cov.to_vec(),
            },
        )
        .unwrap();
        let mut rng = StreamRng::new(3, 0, Purpose::Sampler);
        let (mut p, mut v) = ([0.0; 2], [0.0; 2]);
        let mut acc = [0.0; 4];
        let mut kinetic_sum = 0.0;
        let n = 100_000;
        for _ in 0..n {
            metric.sample_momentum(&mut rng, &mut p);
            kinetic_sum += metric.velocity(&p, &mut v);
            acc[0] += v[0] * v[0];
            acc[1] += v[0] * v[1];
            acc[3] += v[1] * v[1];
        }
        let n = n as f64;
        // Entries are sums of n iid products; 5 standard errors with a generous per-entry sd.
        assert!((acc[0] / n - 2.0).abs() < 5.0 * 2.0 * 2f64.sqrt() / n.sqrt());
        assert!((acc[1] / n - 0.9).abs() < 5.0 * 1.5 / n.sqrt());
        assert!((acc[3] / n - 0.5).abs() < 5.0 * 0.5 * 2f64.sqrt() / n.sqrt());
        // Kinetic energy of a 2-d Gaussian momentum is Gamma(1, 1): mean 1, sd 1.
        assert!((kinetic_sum / n - 1.0).abs() < 5.0 / n.sqrt());
    }

    /// A low-rank metric `D (I + U (Λ − I) Uᵀ) D`: its velocity `M⁻¹ p` equals the dense
    /// matrix's product, the kinetic energy is `½ pᵀ M⁻¹ p`, and its momenta have covariance
    /// `M` (checked through `E[(M⁻¹ p)(M⁻¹ p)ᵀ] = M⁻¹`).
    #[test]
    fn low_rank_metric_matches_its_dense_matrix() {
        let d = 3;
        let s = 1.0 / 2f64.sqrt();
        let given = InverseMetric::LowRank {
            scale: vec![0.5, 2.0, 1.5],
            values: vec![0.2, 6.0],
            vectors: vec![s, s, 0.0, 0.0, 0.0, 1.0],
        };
        let metric = Metric::from_inverse(MetricKind::LowRank, d, &given).unwrap();
        let InverseMetric::Dense { values: dense, .. } = given.to_dense().into_owned() else {
            unreachable!()
        };
        let p = [0.3, -1.2, 0.7];
        let mut v = [0.0; 3];
        let kinetic = metric.velocity(&p, &mut v);
        for i in 0..d {
            let expected: f64 = (0..d).map(|j| dense[i * d + j] * p[j]).sum();
            assert!((v[i] - expected).abs() < 1e-12, "{v:?}");
        }
        let twice: f64 = (0..d).map(|i| p[i] * v[i]).sum();
        assert!((kinetic - 0.5 * twice).abs() < 1e-12);

        let mut rng = StreamRng::new(8, 0, Purpose::Sampler);
        let (mut p, mut v) = ([0.0; 3], [0.0; 3]);
        let mut acc = [0.0; 9];
        let n = 200_000;
        for _ in 0..n {
            metric.sample_momentum(&mut rng, &mut p);
            metric.velocity(&p, &mut v);
            for i in 0..d {
                for j in 0..d {
                    acc[i * d + j] += v[i] * v[j];
                }
            }
        }
        for i in 0..d {
            for j in 0..d {
                let m = acc[i * d + j] / n as f64;
                let truth = dense[i * d + j];
                let se = (dense[i * d + i] * dense[j * d + j] + truth * truth).sqrt()
                    / (n as f64).sqrt();
                assert!((m - truth).abs() < 5.0 * se, "({i},{j}): {m} vs {truth}");
            }
        }
        // The contract form round-trips, and a copy into it does not change its values.
        assert_eq!(metric.to_inverse_metric(), given);
        let mut out = InverseMetric::Diag(vec![]);
        metric.copy_inverse_into(&mut out);
        assert_eq!(out, given);
    }

    #[test]
    fn rejects_bad_inverse_metrics() {
        assert!(matches!(
            Metric::from_inverse(MetricKind::Diag, 2, &InverseMetric::Diag(vec![1.0, -1.0])),
            Err(MetricError::InvalidEntry { index: 1, .. })
        ));
        assert!(matches!(
            Metric::from_inverse(MetricKind::Diag, 3, &InverseMetric::Diag(vec![1.0])),
            Err(MetricError::Dimension { .. })
        ));
        assert!(matches!(
            Metric::from_inverse(
                MetricKind::Dense,
                2,
                &InverseMetric::Dense {
                    dim: 2,
                    values: vec![1.0, 0.5, 0.4, 1.0]
                }
            ),
            Err(MetricError::NotSymmetric { .. })
        ));
    }
}

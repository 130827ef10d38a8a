//! Initial value problems `y' = f(t, y)`: an adaptive Dormand–Prince 5(4) integrator with
//! dense output ([`integrate`], Stan's `ode_rk45`), Cash–Karp 5(4) under a controlled stepper
//! ([`integrate_ckrk`], Stan's `ode_ckrk`), a stiff implicit method ([`stiff`]), and forward
//! sensitivities (the derivatives of the solution with respect to the initial state and the
//! parameters) for each ([`solve`]).
//!
//! The step control follows Boost.Odeint's `integrate_times` over
//! `make_dense_output(atol, rtol, runge_kutta_dopri5)`, which is what Stan's `ode_rk45` runs:
//! initial step 0.1, error norm `max_i |err_i| / (atol + rtol (|y_i| + h |y'_i|))` over every
//! component of the integrated system (sensitivities included), step shrink
//! `max(0.9 r^(-1/3), 0.2)` on rejection, growth `0.9 max(r, 5^-5)^(-1/5)` when `r < 0.5`, the
//! requested times read off the dense-output interpolant, and a final step cut to end exactly
//! at the last requested time. Reproducing the step sequence matters because the solution at
//! loose tolerances differs from the exact one by far more than the 1e-8 agreement we check
//! against Stan; with the same steps the two agree to rounding.

use std::fmt;

pub(crate) mod stiff;

/// Why an integration failed.
#[derive(Debug, Clone, PartialEq)]
pub enum OdeError {
    /// The right-hand side failed (its message).
    Rhs(String),
    /// More than `max_num_steps` steps between two requested times.
    MaxSteps { t: f64 },
    /// 500 step-size reductions in a row without an accepted step.
    StepSizeUnderflow { t: f64 },
    /// Invalid sizes, times or tolerances.
    Input(String),
}

impl fmt::Display for OdeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OdeError::Rhs(m) => write!(f, "ode right-hand side: {m}"),
            OdeError::MaxSteps { t } => {
                write!(f, "ode: max_num_steps exceeded before reaching t = {t}")
            }
            OdeError::StepSizeUnderflow { t } => {
                write!(f, "ode: step size adjustment failed at t = {t}")
            }
            OdeError::Input(m) => write!(f, "ode: {m}"),
        }
    }
}

impl std::error::Error for OdeError {}

/// Tolerances and step limit (Stan's `ode_rk45_tol` arguments).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OdeTolerances {
    pub rtol: f64,
    pub atol: f64,
    pub max_num_steps: u64,
}

impl Default for OdeTolerances {
    /// Stan's defaults for `ode_rk45` / `ode_bdf`.
    fn default() -> Self {
        OdeTolerances {
            rtol: 1e-6,
            atol: 1e-6,
            max_num_steps: 1_000_000,
        }
    }
}

/// Boost's consecutive-failure limit in `failed_step_checker`.
const MAX_FAILED_STEPS: usize = 500;
/// Stan's initial step size for the Boost integrators.
const INITIAL_STEP: f64 = 0.1;

// Dormand–Prince 5(4) tableau.
const A2: f64 = 1.0 / 5.0;
const A3: f64 = 3.0 / 10.0;
const A4: f64 = 4.0 / 5.0;
const A5: f64 = 8.0 / 9.0;
const B21: f64 = 1.0 / 5.0;
const B31: f64 = 3.0 / 40.0;
const B32: f64 = 9.0 / 40.0;
const B41: f64 = 44.0 / 45.0;
const B42: f64 = -56.0 / 15.0;
const B43: f64 = 32.0 / 9.0;
const B51: f64 = 19372.0 / 6561.0;
const B52: f64 = -25360.0 / 2187.0;
const B53: f64 = 64448.0 / 6561.0;
const B54: f64 = -212.0 / 729.0;
const B61: f64 = 9017.0 / 3168.0;
const B62: f64 = -355.0 / 33.0;
const B63: f64 = 46732.0 / 5247.0;
const B64: f64 = 49.0 / 176.0;
const B65: f64 = -5103.0 / 18656.0;
const C1: f64 = 35.0 / 384.0;
const C3: f64 = 500.0 / 1113.0;
const C4: f64 = 125.0 / 192.0;
const C5: f64 = -2187.0 / 6784.0;
const C6: f64 = 11.0 / 84.0;
const DC1: f64 = C1 - 5179.0 / 57600.0;
const DC3: f64 = C3 - 7571.0 / 16695.0;
const DC4: f64 = C4 - 393.0 / 640.0;
const DC5: f64 = C5 - (-92097.0 / 339200.0);
const DC6: f64 = C6 - 187.0 / 2100.0;
const DC7: f64 = -1.0 / 40.0;

/// Work arrays of one integration.
struct Dopri5 {
    n: usize,
    x: Vec<f64>,
    dxdt: Vec<f64>,
    x_old: Vec<f64>,
    dxdt_old: Vec<f64>,
    k2: Vec<f64>,
    k3: Vec<f64>,
    k4: Vec<f64>,
    k5: Vec<f64>,
    k6: Vec<f64>,
    tmp: Vec<f64>,
    x_new: Vec<f64>,
    dxdt_new: Vec<f64>,
    err: Vec<f64>,
    t: f64,
    t_old: f64,
    dt: f64,
    deriv_ok: bool,
}

impl Dopri5 {
    fn new(x0: &[f64], t0: f64, dt: f64) -> Self {
        let n = x0.len();
        let z = vec![0.0; n];
        Dopri5 {
            n,
            x: x0.to_vec(),
            dxdt: z.clone(),
            x_old: z.clone(),
            dxdt_old: z.clone(),
            k2: z.clone(),
            k3: z.clone(),
            k4: z.clone(),
            k5: z.clone(),
            k6: z.clone(),
            tmp: z.clone(),
            x_new: z.clone(),
            dxdt_new: z.clone(),
            err: z,
            t: t0,
            t_old: t0,
            dt,
            deriv_ok: false,
        }
    }

    /// One Dormand–Prince step of size `dt` from (`t`, `x`, `dxdt`) into `x_new`, `dxdt_new`,
    /// `err` (the embedded error estimate). Indexed loops: each reads up to seven arrays, all
    /// re-sliced to `n` first so that the loops carry no bounds checks. (`dt * B21 * k1[i]`
    /// is `(dt * B21) * k1[i]`: the products of `dt` and a coefficient are the same numbers
    /// hoisted or not.)
    #[allow(clippy::needless_range_loop)]
    fn attempt<F>(&mut self, f: &mut F, dt: f64) -> Result<(), OdeError>
    where
        F: FnMut(f64, &[f64], &mut [f64]) -> Result<(), String>,
    {
        let n = self.n;
        let t = self.t;
        let (x, k1) = (&self.x[..n], &self.dxdt[..n]);
        let tmp = &mut self.tmp[..n];
        for i in 0..n {
            tmp[i] = x[i] + dt * B21 * k1[i];
        }
        f(t + dt * A2, tmp, &mut self.k2).map_err(OdeError::Rhs)?;
        let k2 = &self.k2[..n];
        for i in 0..n {
            tmp[i] = x[i] + dt * B31 * k1[i] + dt * B32 * k2[i];
        }
        f(t + dt * A3, tmp, &mut self.k3).map_err(OdeError::Rhs)?;
        let k3 = &self.k3[..n];
        for i in 0..n {
            tmp[i] = x[i] + dt * B41 * k1[i] + dt * B42 * k2[i] + dt * B43 * k3[i];
        }
        f(t + dt * A4, tmp, &mut self.k4).map_err(OdeError::Rhs)?;
        let k4 = &self.k4[..n];
        for i in 0..n {
            tmp[i] =
                x[i] + dt * B51 * k1[i] + dt * B52 * k2[i] + dt * B53 * k3[i] + dt * B54 * k4[i];
        }
        f(t + dt * A5, tmp, &mut self.k5).map_err(OdeError::Rhs)?;
        let k5 = &self.k5[..n];
        for i in 0..n {
            tmp[i] = x[i]
                + dt * B61 * k1[i]
                + dt * B62 * k2[i]
                + dt * B63 * k3[i]
                + dt * B64 * k4[i]
                + dt * B65 * k5[i];
        }
        f(t + dt, tmp, &mut self.k6).map_err(OdeError::Rhs)?;
        let k6 = &self.k6[..n];
        let x_new = &mut self.x_new[..n];
        for i in 0..n {
            x_new[i] = x[i]
                + dt * C1 * k1[i]
                + dt * C3 * k3[i]
                + dt * C4 * k4[i]
                + dt * C5 * k5[i]
                + dt * C6 * k6[i];
        }
        f(t + dt, x_new, &mut self.dxdt_new).map_err(OdeError::Rhs)?;
        let (k7, err) = (&self.dxdt_new[..n], &mut self.err[..n]);
        for i in 0..n {
            err[i] = dt * DC1 * k1[i]
                + dt * DC3 * k3[i]
                + dt * DC4 * k4[i]
                + dt * DC5 * k5[i]
                + dt * DC6 * k6[i]
                + dt * DC7 * k7[i];
        }
        Ok(())
    }

    /// One accepted step (retrying with smaller steps as the error control demands).
    fn step<F>(&mut self, f: &mut F, tol: &OdeTolerances) -> Result<(), OdeError>
    where
        F: FnMut(f64, &[f64], &mut [f64]) -> Result<(), String>,
    {
        if !self.deriv_ok {
            f(self.t, &self.x, &mut self.dxdt).map_err(OdeError::Rhs)?;
            self.deriv_ok = true;
        }
        let mut failures = 0;
        loop {
            let dt = self.dt;
            self.attempt(f, dt)?;
            let mut max_rel_err = 0.0f64;
            for i in 0..self.n {
                let scale = tol.atol + tol.rtol * (self.x[i].abs() + dt.abs() * self.dxdt[i].abs());
                let r = self.err[i].abs() / scale;
                // NaN must fail the step (Boost's max norm would carry it through).
                if r.is_nan() {
                    max_rel_err = f64::NAN;
                    break;
                }
                max_rel_err = max_rel_err.max(r);
            }
            if max_rel_err.is_nan() {
                return Err(OdeError::Rhs(format!(
                    "the solution became NaN at t = {}",
                    self.t
                )));
            }
            if max_rel_err > 1.0 {
                self.dt = dt * (0.9 * max_rel_err.powf(-1.0 / 3.0)).max(0.2);
                failures += 1;
                if failures >= MAX_FAILED_STEPS {
                    return Err(OdeError::StepSizeUnderflow { t: self.t });
                }
                continue;
            }
            self.t_old = self.t;
            self.t += dt;
            let mut next = dt;
            if max_rel_err < 0.5 {
                let r = max_rel_err.max(5f64.powi(-5));
                next = dt * 0.9 * r.powf(-1.0 / 5.0);
            }
            self.dt = next;
            std::mem::swap(&mut self.x, &mut self.x_old);
            std::mem::swap(&mut self.dxdt, &mut self.dxdt_old);
            std::mem::swap(&mut self.x, &mut self.x_new);
            std::mem::swap(&mut self.dxdt, &mut self.dxdt_new);
            return Ok(());
        }
    }

    /// The dense-output interpolant of the last step at `t` (Boost's dopri5 `calc_state`).
    #[allow(clippy::needless_range_loop)]
    fn interpolate(&self, t: f64, out: &mut [f64]) {
        let dt = self.t - self.t_old;
        let theta = (t - self.t_old) / dt;
        let x1 = 5.0 * (2558722523.0 - 31403016.0 * theta) / 11282082432.0;
        let x3 = 100.0 * (882725551.0 - 15701508.0 * theta) / 32700410799.0;
        let x4 = 25.0 * (443332067.0 - 31403016.0 * theta) / 1880347072.0;
        let x5 = 32805.0 * (23143187.0 - 3489224.0 * theta) / 199316789632.0;
        let x6 = 55.0 * (29972135.0 - 7076736.0 * theta) / 822651844.0;
        let x7 = 10.0 * (7414447.0 - 829305.0 * theta) / 29380423.0;
        let theta_m_1 = theta - 1.0;
        let theta_sq = theta * theta;
        let a = theta_sq * (3.0 - 2.0 * theta);
        let b = theta_sq * theta_m_1;
        let c = theta_sq * theta_m_1 * theta_m_1;
        let d = theta * theta_m_1 * theta_m_1;
        let b1 = a * C1 - c * x1 + d;
        let b3 = a * C3 + c * x3;
        let b4 = a * C4 - c * x4;
        let b5 = a * C5 + c * x5;
        let b6 = a * C6 - c * x6;
        let b7 = b + c * x7;
        for i in 0..self.n {
            out[i] = self.x_old[i]
                + dt * b1 * self.dxdt_old[i]
                + dt * b3 * self.k3[i]
                + dt * b4 * self.k4[i]
                + dt * b5 * self.k5[i]
                + dt * b6 * self.k6[i]
                + dt * b7 * self.dxdt[i];
        }
    }
}

/// `a - b <= eps` (Boost's `less_eq_with_sign` for forward integration).
fn less_eq(a: f64, b: f64) -> bool {
    a - b <= f64::EPSILON
}

fn check_times(t0: f64, ts: &[f64], tol: &OdeTolerances) -> Result<(), OdeError> {
    if !t0.is_finite() {
        return Err(OdeError::Input(format!("initial time is {t0}")));
    }
    let mut prev = t0;
    for (i, &t) in ts.iter().enumerate() {
        if !t.is_finite() || t < prev || t <= t0 {
            return Err(OdeError::Input(format!(
                "times must be finite, sorted and greater than the initial time; times[{}] = {t}",
                i + 1
            )));
        }
        prev = t;
    }
    if !(tol.rtol > 0.0 && tol.rtol.is_finite() && tol.atol > 0.0 && tol.atol.is_finite()) {
        return Err(OdeError::Input(format!(
            "tolerances must be positive and finite (rtol = {}, atol = {})",
            tol.rtol, tol.atol
        )));
    }
    if tol.max_num_steps == 0 {
        return Err(OdeError::Input("max_num_steps must be positive".into()));
    }
    Ok(())
}

/// Integrates `x' = f(t, x)` from `x(t0) = x0` and returns `x` at each of `ts` (sorted, each
/// greater than `t0`), row after row (`ts.len() × x0.len()`).
pub fn integrate<F>(
    mut f: F,
    x0: &[f64],
    t0: f64,
    ts: &[f64],
    tol: &OdeTolerances,
) -> Result<Vec<f64>, OdeError>
where
    F: FnMut(f64, &[f64], &mut [f64]) -> Result<(), String>,
{
    check_times(t0, ts, tol)?;
    let n = x0.len();
    let mut out = vec![0.0; ts.len() * n];
    if ts.is_empty() {
        return Ok(out);
    }
    let last = ts[ts.len() - 1];
    let mut st = Dopri5::new(x0, t0, INITIAL_STEP);
    let mut next = 0;
    let mut steps: u64 = 0;
    while next < ts.len() {
        while next < ts.len() && less_eq(ts[next], st.t) {
            if st.t_old == st.t {
                // No step taken yet (a time equal to t0 up to rounding).
                out[next * n..(next + 1) * n].copy_from_slice(&st.x);
            } else {
                st.interpolate(ts[next], &mut out[next * n..(next + 1) * n]);
            }
            next += 1;
            steps = 0;
        }
        if next >= ts.len() {
            break;
        }
        if less_eq(st.t + st.dt, last) {
            st.step(&mut f, tol)?;
        } else {
            // The last step ends exactly on the last requested time.
            st.dt = last - st.t;
            st.deriv_ok = false;
            st.step(&mut f, tol)?;
        }
        steps += 1;
        if steps > tol.max_num_steps {
            return Err(OdeError::MaxSteps { t: ts[next] });
        }
    }
    Ok(out)
}

// Cash–Karp 5(4) tableau (Boost.Odeint's `runge_kutta_cash_karp54`).
const CK_A: [[f64; 5]; 5] = [
    [1.0 / 5.0, 0.0, 0.0, 0.0, 0.0],
    [3.0 / 40.0, 9.0 / 40.0, 0.0, 0.0, 0.0],
    [3.0 / 10.0, -9.0 / 10.0, 6.0 / 5.0, 0.0, 0.0],
    [-11.0 / 54.0, 5.0 / 2.0, -70.0 / 27.0, 35.0 / 27.0, 0.0],
    [
        1631.0 / 55296.0,
        175.0 / 512.0,
        575.0 / 13824.0,
        44275.0 / 110592.0,
        253.0 / 4096.0,
    ],
];
const CK_C: [f64; 5] = [1.0 / 5.0, 3.0 / 10.0, 3.0 / 5.0, 1.0, 7.0 / 8.0];
const CK_B: [f64; 6] = [
    37.0 / 378.0,
    0.0,
    250.0 / 621.0,
    125.0 / 594.0,
    0.0,
    512.0 / 1771.0,
];
const CK_DB: [f64; 6] = [
    37.0 / 378.0 - 2825.0 / 27648.0,
    0.0,
    250.0 / 621.0 - 18575.0 / 48384.0,
    125.0 / 594.0 - 13525.0 / 55296.0,
    -277.0 / 14336.0,
    512.0 / 1771.0 - 1.0 / 4.0,
];

/// Integrates `x' = f(t, x)` with Cash–Karp 5(4) under Boost.Odeint's controlled stepper, as
/// Stan's `ode_ckrk` runs it: `integrate_times(make_controlled(atol, rtol,
/// runge_kutta_cash_karp54), ...)` with initial step 0.1. Each step starts from a fresh
/// derivative (Cash–Karp is not first-same-as-last), the error norm is Boost's
/// `max_i |err_i| / (atol + rtol (|x_i| + h |x'_i|))`, rejected steps shrink by
/// `max(0.9 r^(-1/3), 0.2)`, accepted ones with `r < 0.5` grow by `0.9 max(r, 5^-5)^(-1/5)`,
/// and steps are cut to end exactly on each requested time (no interpolation), the
/// uncut step size carried on afterwards.
pub(crate) fn integrate_ckrk<F>(
    mut f: F,
    x0: &[f64],
    t0: f64,
    ts: &[f64],
    tol: &OdeTolerances,
) -> Result<Vec<f64>, OdeError>
where
    F: FnMut(f64, &[f64], &mut [f64]) -> Result<(), String>,
{
    check_times(t0, ts, tol)?;
    let n = x0.len();
    let mut out = vec![0.0; ts.len() * n];
    let mut x = x0.to_vec();
    let mut x_new = vec![0.0; n];
    let mut tmp = vec![0.0; n];
    let mut err = vec![0.0; n];
    let mut k: Vec<Vec<f64>> = (0..6).map(|_| vec![0.0; n]).collect();
    let mut t = t0;
    let mut dt = INITIAL_STEP;
    for (j, &target) in ts.iter().enumerate() {
        let mut steps: u64 = 0;
        let mut failures = 0;
        // Boost's `less_with_sign(t, target, dt)`: `target - t > eps`.
        while target - t > f64::EPSILON {
            let cur = dt.min(target - t);
            f(t, &x, &mut k[0]).map_err(OdeError::Rhs)?;
            for s in 0..5 {
                for i in 0..n {
                    let mut acc = 0.0;
                    for (l, a) in CK_A[s].iter().enumerate().take(s + 1) {
                        acc += a * k[l][i];
                    }
                    tmp[i] = x[i] + cur * acc;
                }
                f(t + CK_C[s] * cur, &tmp, &mut k[s + 1]).map_err(OdeError::Rhs)?;
            }
            let mut r = 0.0f64;
            for i in 0..n {
                let mut acc = 0.0;
                let mut e = 0.0;
                for l in 0..6 {
                    acc += CK_B[l] * k[l][i];
                    e += CK_DB[l] * k[l][i];
                }
                x_new[i] = x[i] + cur * acc;
                err[i] = cur * e;
                let scale = tol.atol + tol.rtol * (x[i].abs() + cur * k[0][i].abs());
                let q = err[i].abs() / scale;
                if q.is_nan() {
                    return Err(OdeError::Rhs(format!("the solution became NaN at t = {t}")));
                }
                r = r.max(q);
            }
            if r > 1.0 {
                dt = cur * (0.9 * r.powf(-1.0 / 3.0)).max(0.2);
                failures += 1;
                if failures >= MAX_FAILED_STEPS {
                    return Err(OdeError::StepSizeUnderflow { t });
                }
                continue;
            }
            failures = 0;
            t += cur;
            std::mem::swap(&mut x, &mut x_new);
            let mut next = cur;
            if r < 0.5 {
                next = cur * 0.9 * r.max(5f64.powi(-5)).powf(-1.0 / 5.0);
            }
            // Continue with the original step size if the step was cut for the observation.
            dt = dt.max(next);
            steps += 1;
            if steps > tol.max_num_steps {
                return Err(OdeError::MaxSteps { t: target });
            }
        }
        out[j * n..(j + 1) * n].copy_from_slice(&x);
    }
    Ok(out)
}

/// A right-hand side behind a reference, as the explicit integrators take it.
type DynRhs<'a> = dyn FnMut(f64, &[f64], &mut [f64]) -> Result<(), String> + 'a;

/// Which integrator runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OdeMethod {
    /// Dormand–Prince 5(4) with dense output ([`integrate`]): Stan's `ode_rk45`.
    Rk45,
    /// Cash–Karp 5(4), controlled stepper ([`integrate_ckrk`]): Stan's `ode_ckrk`.
    CashKarp,
    /// The L-stable implicit SDIRK 4(3) of [`stiff`] with Newton iterations on the exact
    /// Jacobian: hazel's `ode_bdf`.
    Stiff,
}

/// An ODE right-hand side `f(t, y; p)` with its Jacobians.
pub trait OdeRhs {
    /// Number of states.
    fn n_states(&self) -> usize;
    /// Number of parameters the sensitivities are taken with respect to.
    fn n_params(&self) -> usize;
    /// `f(t, y)`.
    fn eval(&mut self, t: f64, y: &[f64], dydt: &mut [f64]) -> Result<(), String>;
    /// `f(t, y)`, `∂f/∂y` (`n × n`, row-major: `jy[i*n + k] = ∂f_i/∂y_k`) and `∂f/∂p`
    /// (`n × m`, row-major).
    fn eval_jac(
        &mut self,
        t: f64,
        y: &[f64],
        dydt: &mut [f64],
        jy: &mut [f64],
        jp: &mut [f64],
    ) -> Result<(), String>;
}

/// Solution and sensitivities at the requested times.
#[derive(Debug, Clone, PartialEq)]
pub struct OdeSolution {
    pub n_states: usize,
    /// Number of sensitivity columns: the initial states (when requested) then the parameters.
    pub n_sens: usize,
    /// `y(t_j)` at `values[j*n + i]`.
    pub values: Vec<f64>,
    /// `∂y_i(t_j)/∂v_k` at `sens[(j*n_sens + k)*n + i]`, with `v` the initial states (when
    /// requested) followed by the parameters.
    pub sens: Vec<f64>,
}

/// Solves `y' = f(t, y; p)`, `y(t0) = y0` at `ts`, with forward sensitivities with respect to
/// `y0` (when `y0_sens`) and the parameters of `rhs`, integrating the coupled system
/// `S' = ∂f/∂y S + ∂f/∂p` in Stan's layout (states, then one column of `n` per variable), so
/// the step control sees the same components as Stan's.
pub fn solve_sensitivities<R: OdeRhs>(
    rhs: &mut R,
    y0: &[f64],
    y0_sens: bool,
    t0: f64,
    ts: &[f64],
    tol: &OdeTolerances,
) -> Result<OdeSolution, OdeError> {
    solve(OdeMethod::Rk45, rhs, y0, y0_sens, t0, ts, tol)
}

/// `(n, n_y0, m)`: the states of `rhs` (which `y0` must match), the sensitivity columns for
/// the initial state (`n` when `y0_sens`, else 0) and those for the parameters.
fn sens_dims<R: OdeRhs + ?Sized>(
    rhs: &R,
    y0: &[f64],
    y0_sens: bool,
) -> Result<(usize, usize, usize), OdeError> {
    let n = rhs.n_states();
    if y0.len() != n {
        return Err(OdeError::Input(format!(
            "initial state has {} elements, the right-hand side {n}",
            y0.len()
        )));
    }
    Ok((n, if y0_sens { n } else { 0 }, rhs.n_params()))
}

/// `S' = ∂f/∂y S + ∂f/∂p` into `ds` (`n` rows, column-major like `s`): column `k` (the
/// first `n_y0` for the initial state, then one per parameter), row `i` from row `i` of
/// `∂f/∂y` (`jy`, `n × n` row-major) and of `∂f/∂p` (`jp`, `n × m`).
#[inline(always)]
#[allow(clippy::needless_range_loop)]
fn sensitivity_rhs(
    n: usize,
    n_y0: usize,
    m: usize,
    jy: &[f64],
    jp: &[f64],
    s: &[f64],
    ds: &mut [f64],
) {
    // Indexed loops over re-sliced rows and columns (no bounds checks in the inner loop).
    let jy = &jy[..n * n];
    for (k, (col, dcol)) in s.chunks_exact(n).zip(ds.chunks_exact_mut(n)).enumerate() {
        let p_col = k.checked_sub(n_y0);
        for i in 0..n {
            let row = &jy[i * n..(i + 1) * n];
            // Stan's summation order: the parameter term first, then the state terms.
            let mut acc = match p_col {
                Some(c) => jp[i * m + c],
                None => 0.0,
            };
            for l in 0..n {
                acc += col[l] * row[l];
            }
            dcol[i] = acc;
        }
    }
}

/// [`solve_sensitivities`] with the integrator `method`. The explicit methods integrate the
/// coupled system (so their step control sees the sensitivities, as Stan's does); the stiff
/// method propagates the sensitivities of its own discrete steps ([`stiff::solve_stiff`]).
pub fn solve<R: OdeRhs>(
    method: OdeMethod,
    rhs: &mut R,
    y0: &[f64],
    y0_sens: bool,
    t0: f64,
    ts: &[f64],
    tol: &OdeTolerances,
) -> Result<OdeSolution, OdeError> {
    if method == OdeMethod::Stiff {
        return stiff::solve_stiff(rhs, y0, y0_sens, t0, ts, tol);
    }
    let explicit = |f: &mut DynRhs, x0: &[f64]| match method {
        OdeMethod::CashKarp => integrate_ckrk(f, x0, t0, ts, tol),
        _ => integrate(f, x0, t0, ts, tol),
    };
    let (n, n_y0, m) = sens_dims(rhs, y0, y0_sens)?;
    let n_sens = n_y0 + m;
    let mut x0 = vec![0.0; n * (1 + n_sens)];
    x0[..n].copy_from_slice(y0);
    for i in 0..n_y0 {
        x0[n + i * n + i] = 1.0;
    }
    if n_sens == 0 {
        let values = explicit(&mut |t, y, d| rhs.eval(t, y, d), y0)?;
        return Ok(OdeSolution {
            n_states: n,
            n_sens: 0,
            values,
            sens: Vec::new(),
        });
    }
    let mut jy = vec![0.0; n * n];
    let mut jp = vec![0.0; n * m];
    let mut coupled = |t: f64, x: &[f64], dx: &mut [f64]| -> Result<(), String> {
        let (y, s) = x.split_at(n);
        let (dy, ds) = dx.split_at_mut(n);
        rhs.eval_jac(t, y, dy, &mut jy, &mut jp)?;
        // The common small systems with `n` a constant, so the loops unroll (the same
        // operations in the same order).
        match n {
            1 => sensitivity_rhs(1, n_y0, m, &jy, &jp, s, ds),
            2 => sensitivity_rhs(2, n_y0, m, &jy, &jp, s, ds),
            3 => sensitivity_rhs(3, n_y0, m, &jy, &jp, s, ds),
            4 => sensitivity_rhs(4, n_y0, m, &jy, &jp, s, ds),
            _ => sensitivity_rhs(n, n_y0, m, &jy, &jp, s, ds),
        }
        Ok(())
    };
    let all = explicit(&mut coupled, &x0)?;
    let width = n * (1 + n_sens);
    let mut values = Vec::with_capacity(ts.len() * n);
    let mut sens = Vec::with_capacity(ts.len() * n * n_sens);
    for row in all.chunks(width) {
        values.extend_from_slice(&row[..n]);
        sens.extend_from_slice(&row[n..]);
    }
    Ok(OdeSolution {
        n_states: n,
        n_sens,
        values,
        sens,
    })
}

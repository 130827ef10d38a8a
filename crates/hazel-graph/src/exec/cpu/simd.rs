//! Runtime CPU-feature dispatch of the hot kernels, through `pulp`.
//!
//! Every kernel is written once, in plain Rust with a *fixed reduction shape* (eight
//! interleaved partial sums per [`crate::kernels::CHUNK`]-element chunk, combined in one fixed
//! tree; chunk results added in chunk order; no `mul_add`). [`dispatch!`] runs that same source
//! inside a function compiled for the chosen instruction set (`pulp`'s `V3`/`V4` tokens apply
//! `#[target_feature]` to an inlined closure), so the compiler vectorises it for SSE2, AVX2 or
//! AVX-512, holding the eight partial sums in four, two or one register. IEEE `+ − × ÷ sqrt`
//! round identically whatever the register width, and Rust never contracts `a * b + c` into an
//! FMA on its own, so **every level gives the same bits**. Transcendentals inside kernels stay
//! calls of the one scalar implementation per element.
//!
//! The level is chosen per compiled model by [`crate::CompileOptions::simd`] (never a global),
//! resolved once to an [`Isa`] stored in the workspace's buffers.

/// Which instruction set the kernels use (a field of [`crate::CompileOptions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SimdLevel {
    /// The best level this CPU supports.
    #[default]
    Auto,
    /// The target's baseline (x86-64: SSE2), what the build targets without dispatch.
    Sse2,
    /// x86-64-v3 (AVX2, FMA, BMI; FMA is never used by the kernels).
    Avx2,
    /// x86-64-v4 (AVX-512 F/VL/DQ/BW/CD).
    Avx512,
}

impl SimdLevel {
    /// Every explicit level (not `Auto`) this CPU can run, lowest first.
    pub fn available() -> Vec<SimdLevel> {
        [SimdLevel::Sse2, SimdLevel::Avx2, SimdLevel::Avx512]
            .into_iter()
            .filter(|l| l.resolve().is_ok())
            .collect()
    }

    /// The concrete instruction set, or why this CPU cannot run the level.
    pub fn resolve(self) -> Result<Isa, String> {
        match self {
            SimdLevel::Auto => Ok(Isa::detect()),
            SimdLevel::Sse2 => Ok(Isa::Baseline),
            SimdLevel::Avx2 => {
                if Isa::has_v3() {
                    Ok(Isa::Avx2)
                } else {
                    Err("simd level avx2 (x86-64-v3) is not available on this CPU".into())
                }
            }
            SimdLevel::Avx512 => {
                if Isa::has_v4() {
                    Ok(Isa::Avx512)
                } else {
                    Err("simd level avx512 (x86-64-v4) is not available on this CPU".into())
                }
            }
        }
    }

    /// Parses `auto`, `sse2`, `avx2`, `avx512` (the CLI's spelling).
    pub fn parse(s: &str) -> Option<SimdLevel> {
        match s {
            "auto" => Some(SimdLevel::Auto),
            "sse2" | "baseline" | "scalar" => Some(SimdLevel::Sse2),
            "avx2" => Some(SimdLevel::Avx2),
            "avx512" => Some(SimdLevel::Avx512),
            _ => None,
        }
    }
}

/// A resolved instruction set: the kernels' dispatch target. `Baseline` is what a buffer
/// made without a model (`Buffers::default()`) uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isa {
    #[default]
    Baseline,
    Avx2,
    Avx512,
}

impl Isa {
    /// The best instruction set of this CPU.
    pub fn detect() -> Isa {
        if Isa::has_v4() {
            Isa::Avx512
        } else if Isa::has_v3() {
            Isa::Avx2
        } else {
            Isa::Baseline
        }
    }

    fn has_v3() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            pulp::x86::V3::is_available()
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    fn has_v4() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            pulp::x86::V4::is_available()
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }
}

/// Calls `f` in a function of its own: each [`dispatch!`] site (three compiled copies of its
/// kernel) stays out of the op interpreters' `forward`/`backward`, whose size would otherwise
/// slow the small ops of scalar-heavy models.
#[inline(never)]
pub(crate) fn out_of_line<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Runs `$body` (an expression calling `#[inline(always)]` kernels) compiled for `$isa`, out
/// of line. A level whose token cannot be had (never after [`SimdLevel::resolve`]) runs the
/// baseline.
///
/// The body only gets the level's instructions if LLVM inlines all of it into pulp's
/// `#[target_feature]` function, and LLVM refuses ("conflicting attributes") when the body
/// still calls a function (not inlined) that takes or returns an aggregate or vector, e.g. an
/// iterator adaptor's `nth` behind `.skip(n)` (`Option<(usize, &mut f64)>`). Kernels run here
/// therefore use index loops rather than `skip`/`step_by`, and each dispatch site is checked
/// with `cargo rustc -p hazel-graph --release --lib -- -C
/// llvm-args=-pass-remarks-missed=inline 2>&1 | grep 'vectorize3imp.*conflicting'` (no output
/// expected for `call_once` into `imp`).
macro_rules! dispatch {
    ($isa:expr, $body:expr) => {{
        let isa = $isa;
        $crate::simd::out_of_line(
            #[inline(always)]
            || match isa {
                #[cfg(target_arch = "x86_64")]
                $crate::simd::Isa::Avx512 => match pulp::x86::V4::try_new() {
                    Some(s) => s.vectorize(
                        #[inline(always)]
                        || $body,
                    ),
                    None => $body,
                },
                #[cfg(target_arch = "x86_64")]
                $crate::simd::Isa::Avx2 => match pulp::x86::V3::try_new() {
                    Some(s) => s.vectorize(
                        #[inline(always)]
                        || $body,
                    ),
                    None => $body,
                },
                _ => $body,
            },
        )
    }};
}
pub(crate) use dispatch;

/// Runs a [`pulp::WithSimd`] op with `isa`'s token (pulp's `Scalar` at the baseline). Used
/// for the fixed-shape reductions below, which are written with pulp's vector types rather
/// than left to the auto-vectoriser: LLVM vectorises an eight-lane accumulation only
/// sometimes, depending on what is inlined around it. Inside a [`dispatch!`] copy of the same
/// level the op's `#[target_feature]` function inlines.
#[inline(always)]
pub(crate) fn with_isa<Op: pulp::WithSimd>(isa: Isa, op: Op) -> Op::Output {
    use pulp::Simd;
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => match pulp::x86::V4::try_new() {
            Some(s) => Simd::vectorize(s, op),
            None => Simd::vectorize(pulp::Scalar::new(), op),
        },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => match pulp::x86::V3::try_new() {
            Some(s) => Simd::vectorize(s, op),
            None => Simd::vectorize(pulp::Scalar::new(), op),
        },
        _ => Simd::vectorize(pulp::Scalar::new(), op),
    }
}

/// The eight lane sums of a fixed-shape reduction: lane `k` = the terms `i ≡ k (mod 8)` in
/// order. `8 / S::F64_LANES` vector accumulators hold them (one AVX-512 register, two AVX2,
/// eight scalars), so every level adds the same numbers in the same order.
struct Lanes<'a> {
    a: &'a [f64],
    /// `None`: sum `a`; `Some(b)`: sum `a[i] · b[i]`.
    b: Option<&'a [f64]>,
    lanes: [f64; 8],
}

impl pulp::WithSimd for Lanes<'_> {
    type Output = [f64; 8];

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, s: S) -> [f64; 8] {
        let per = 8 / S::F64_LANES;
        let n8 = self.a.len() / 8 * 8;
        let mut acc = [s.splat_f64s(0.0); 8];
        let mut out = self.lanes;
        {
            let (start, _) = S::as_simd_f64s(&out);
            acc[..per].copy_from_slice(&start[..per]);
        }
        let (av, _) = S::as_simd_f64s(&self.a[..n8]);
        match self.b {
            None => {
                for block in av.chunks_exact(per) {
                    for v in 0..per {
                        acc[v] = s.add_f64s(acc[v], block[v]);
                    }
                }
            }
            Some(b) => {
                let (bv, _) = S::as_simd_f64s(&b[..n8]);
                for (xa, xb) in av.chunks_exact(per).zip(bv.chunks_exact(per)) {
                    for v in 0..per {
                        acc[v] = s.add_f64s(acc[v], s.mul_f64s(xa[v], xb[v]));
                    }
                }
            }
        }
        let (dst, _) = S::as_mut_simd_f64s(&mut out);
        dst[..per].copy_from_slice(&acc[..per]);
        out
    }
}

/// [`Lanes`] of four products `a[t][i] · b[i]` at once (`b` at least as long as each `a[t]`,
/// all of one length): four accumulations side by side, so their additions overlap instead
/// of each waiting for the one before; each lane's terms and order are [`Lanes`]'.
struct Lanes4<'a> {
    a: [&'a [f64]; 4],
    b: &'a [f64],
}

impl pulp::WithSimd for Lanes4<'_> {
    type Output = [[f64; 8]; 4];

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, s: S) -> [[f64; 8]; 4] {
        let per = 8 / S::F64_LANES;
        let n8 = self.a[0].len() / 8 * 8;
        let mut acc = [[s.splat_f64s(0.0); 8]; 4];
        let (bv, _) = S::as_simd_f64s(&self.b[..n8]);
        let av = self.a.map(|a| S::as_simd_f64s(&a[..n8]).0);
        for (i, xb) in bv.chunks_exact(per).enumerate() {
            for t in 0..4 {
                let xa = &av[t][i * per..(i + 1) * per];
                for v in 0..per {
                    acc[t][v] = s.add_f64s(acc[t][v], s.mul_f64s(xa[v], xb[v]));
                }
            }
        }
        let mut out = [[0.0; 8]; 4];
        for t in 0..4 {
            let (dst, _) = S::as_mut_simd_f64s(&mut out[t]);
            dst[..per].copy_from_slice(&acc[t][..per]);
        }
        out
    }
}

/// [`dot_lanes`] of four vectors `a[t]` (of one length) with `b`, computed side by side.
#[inline(always)]
pub(crate) fn dot_lanes4(isa: Isa, a: [&[f64]; 4], b: &[f64]) -> [[f64; 8]; 4] {
    with_isa(isa, Lanes4 { a, b })
}

/// `lanes` plus the lane sums of `a` (its first `len − len mod 8` values).
#[inline(always)]
pub(crate) fn add_lanes(isa: Isa, lanes: [f64; 8], a: &[f64]) -> [f64; 8] {
    with_isa(isa, Lanes { a, b: None, lanes })
}

/// The lane sums of `a[i] · b[i]` over the first `len − len mod 8` values (`b` at least as
/// long as `a`).
#[inline(always)]
pub(crate) fn dot_lanes(isa: Isa, a: &[f64], b: &[f64]) -> [f64; 8] {
    with_isa(
        isa,
        Lanes {
            a,
            b: Some(&b[..a.len()]),
            lanes: [0.0; 8],
        },
    )
}

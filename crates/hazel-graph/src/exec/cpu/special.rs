//! The scalar special functions the kernels use, from `hazel_math::special` (reference-tested
//! there), under the names the kernels call.

pub use hazel_math::special::{digamma, erf, erfc, lbeta, lchoose, lgamma, trigamma, Phi as phi};

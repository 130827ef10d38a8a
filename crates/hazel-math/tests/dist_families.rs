//! The kernel families (`hazel_math::univariate_kernels!`, the one list) and the distribution
//! table agree: every kernel family has a table entry of its name, arity and kind whose `lpdf`
//! is that kernel's (`lpdf_via::<K>`), so a kernel added to the list without its entry, or an
//! entry pointing at another family's kernel, fails here by name.

use hazel_math::dist::kernel::{self, UnivariateKernel};
use hazel_math::dist::{distribution, Kind, Terms};

/// Argument points, some valid for each kind of family (integer variates and counts, a variate
/// in (0, 1), positive scales) and some not, so that both values and messages are compared.
const POINTS: [[f64; 4]; 5] = [
    [0.3, 0.4, 1.5, 2.0],
    [1.0, 0.2, 2.5, 0.7],
    [2.0, 5.0, 0.3, 3.0],
    [0.0, -0.6, 0.8, 4.0],
    [-1.5, 1.0, -1.0, 0.5],
];

/// One kernel family's disagreement with its table entry, if any.
fn check<K: UnivariateKernel>() -> Option<String> {
    let name = kernel::family::<K>();
    let Some(d) = distribution(name) else {
        return Some(format!("{name}: kernel without a distribution table entry"));
    };
    if d.arity != K::ARITY {
        return Some(format!(
            "{name}: arity {} in the table, {} in the kernel",
            d.arity,
            K::ARITY
        ));
    }
    if (d.kind == Kind::Discrete) != kernel::is_discrete::<K>() {
        return Some(format!(
            "{name}: table kind {:?} but kernel {}",
            d.kind,
            K::FUNCTION
        ));
    }
    for x in &POINTS {
        for terms in [Terms::FULL, Terms::propto(0b0110)] {
            let (mut g_table, mut g_kernel) = ([0.0; 4], [0.0; 4]);
            let n = K::ARITY;
            let table = (d.lpdf)(&x[..n], terms, &mut g_table[..n]);
            let direct = kernel::lpdf_via::<K>(&x[..n], terms, &mut g_kernel[..n]);
            let same = match (&table, &direct) {
                (Ok(a), Ok(b)) => a.to_bits() == b.to_bits() && g_table == g_kernel,
                (Err(a), Err(b)) => a == b,
                _ => false,
            };
            if !same {
                return Some(format!(
                    "{name}: the table's lpdf at {x:?} gives {table:?}, the kernel {direct:?}"
                ));
            }
        }
    }
    None
}

macro_rules! check_all {
    (() $($F:ident)*) => {
        vec![$((stringify!($F), check::<kernel::$F>())),*]
    };
}

#[test]
fn every_kernel_family_is_its_table_entry() {
    let results = hazel_math::univariate_kernels!(check_all!());
    assert!(
        results.len() >= 22,
        "only {} kernel families",
        results.len()
    );
    let failures: Vec<String> = results
        .into_iter()
        .filter_map(|(kernel, failure)| failure.map(|f| format!("{kernel}: {f}")))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

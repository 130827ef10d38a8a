//! The distribution families as three tables name them agree: hazel-math's distribution table
//! (which the kernel families' list, `hazel_math::univariate_kernels!`, is checked against in
//! hazel-math's `dist_families`), the graph's `DistKind` (generated from that list), and the
//! checker's text table `hazel-check/src/signatures.txt`, which is data and so cannot be
//! generated: a family or form added to one of them without the others fails here by name.

use hazel_check::SignatureTable;
use hazel_graph::ir::DistKind;
use hazel_math::dist::{distribution_table, Kind};

#[test]
fn every_table_family_is_declared_to_the_checker_with_its_forms() {
    let sigs = SignatureTable::builtin();
    let mut failures = Vec::new();
    for d in distribution_table() {
        let density = match d.kind {
            Kind::Continuous => format!("{}_lpdf", d.name),
            Kind::Discrete => format!("{}_lpmf", d.name),
        };
        let arities: Vec<usize> = sigs
            .candidates(&density)
            .iter()
            .map(|&i| sigs.signatures[i].args.len())
            .collect();
        if !arities.contains(&d.arity) {
            failures.push(format!(
                "{density}: {} arguments in hazel-math, the checker has {arities:?}",
                d.arity
            ));
        }
        // Both ways: a form hazel-math has is declared, and a declared form has its rule. The
        // `_cdf` is the exponential of the lcdf, so either cdf name needs (and is served by)
        // the lcdf (Stan has `loglogistic_cdf` without `loglogistic_lcdf`).
        let declared = |suffix: &str| sigs.contains(&format!("{}{suffix}", d.name));
        let forms = [
            (
                "_lcdf or _cdf",
                d.lcdf.is_some(),
                declared("_lcdf") || declared("_cdf"),
            ),
            ("_lccdf", d.lccdf.is_some(), declared("_lccdf")),
            ("_rng", d.rng.is_some(), declared("_rng")),
        ];
        for (suffix, in_math, in_checker) in forms {
            if in_math != in_checker {
                failures.push(format!(
                    "{}{suffix}: in hazel-math {in_math}, declared to the checker {in_checker}",
                    d.name
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_kernel_kind_is_its_table_family() {
    assert!(DistKind::KERNELS.len() >= 22);
    let mut failures = Vec::new();
    for &k in DistKind::KERNELS {
        let name = k.name();
        let Some(d) = hazel_math::dist::distribution(name) else {
            failures.push(format!("{k:?}: no hazel-math table family `{name}`"));
            continue;
        };
        let looked_up = DistKind::lookup(name).map(|l| format!("{l:?}"));
        if looked_up != Some(format!("{k:?}")) {
            failures.push(format!("{k:?}: `{name}` looks up {looked_up:?}"));
        }
        if k.nargs() != d.arity || k.discrete() != (d.kind == Kind::Discrete) {
            failures.push(format!(
                "{k:?}: {} arguments, discrete {} (table: {}, {:?})",
                k.nargs(),
                k.discrete(),
                d.arity,
                d.kind
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

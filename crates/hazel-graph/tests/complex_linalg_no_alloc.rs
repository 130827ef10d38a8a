//! Steady-state gradient evaluation of the complex linear algebra of parameters
//! (`eigenvalues`/`eigenvectors` of real and complex matrices, Hermitian eigenvalues and
//! eigenvectors, complex Schur factors, complex singular values through the real embedding,
//! complex products) allocates nothing:
//! the decompositions and workspaces live in the ops' scratch.
//!
//! A counting global allocator sees every allocation in this test binary, so it holds a
//! single test.

use hazel_density::LogDensity;
use hazel_graph::{CompileOptions, CompiledModel};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

struct CountingAlloc;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// The one place this file calls `compile`.
fn compile_program(src: &str, data_json: &str) -> CompiledModel {
    let parsed = hazel_check::check_source("model.stan", src);
    let program = parsed.checked.as_ref().expect("program parses");
    let data = hazel_data::DataFile::parse(data_json).expect("data parses");
    hazel_graph::compile(program, &data, &CompileOptions::default()).expect("compiles")
}

#[test]
fn complex_linear_algebra_evaluation_does_not_allocate() {
    let src = "parameters { matrix[3, 3] A; matrix[3, 3] B; }
        model {
          complex_matrix[3, 3] Z = to_complex(A, B);
          complex_vector[3] l = eigenvalues(A);
          complex_matrix[3, 3] V = eigenvectors(Z);
          target += sum(get_real(l)) + sum(get_imag(V)) + sum(get_real(eigenvalues(Z)))
                    + sum(get_real(eigenvalues_sym(to_complex(A + A', B - B'))))
                    + sum(singular_values(Z)) + get_real(dot_product(col(Z, 1), col(Z, 2)))
                    + get_imag(sum(tcrossprod(Z)))
                    + sum(get_imag(eigenvectors_sym(to_complex(A + A', B - B'))))
                    + sum(get_real(complex_schur_decompose_u(Z)))
                    + sum(get_imag(complex_schur_decompose_t(A)));
        }";
    let model = compile_program(src, "{}");
    assert!(!model.is_dynamic());
    let q = [
        1.0, 3.0, 0.5, -2.0, 0.25, 1.5, 0.5, -1.0, 2.0, 0.2, -0.5, 0.1, 0.7, 0.0, -0.3, 0.4, 0.25,
        -0.8,
    ];
    let mut grad = vec![0.0; model.dim()];
    let mut ws = model.new_workspace();
    let warm = model.log_density_gradient(&mut ws, &q, &mut grad).unwrap();
    ALLOCATIONS.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    let mut all_equal = true;
    for _ in 0..20 {
        let lp = model.log_density_gradient(&mut ws, &q, &mut grad).unwrap();
        all_equal &= lp.to_bits() == warm.to_bits();
    }
    COUNTING.store(false, Ordering::SeqCst);
    assert!(all_equal, "evaluations are deterministic");
    let n = ALLOCATIONS.load(Ordering::SeqCst);
    assert_eq!(n, 0, "{n} allocations in 20 evaluations");
}

//! Steady-state gradient evaluation of the complex linear algebra of parameters
//! (`eigenvalues`/`eigenvectors` of real and complex matrices, Hermitian eigenvalues and
//! eigenvectors, complex Schur factors, complex singular values through the real embedding,
//! complex products) allocates nothing:
//! the decompositions and workspaces live in the ops' scratch.
//!
//! Allocations are counted on the evaluating thread only (`counting_alloc`).

mod common;
mod counting_alloc;

use common::build;

#[global_allocator]
static GLOBAL: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;

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
    let model = build(src, "{}").expect("compiles");
    assert!(!model.is_dynamic());
    let q = [
        1.0, 3.0, 0.5, -2.0, 0.25, 1.5, 0.5, -1.0, 2.0, 0.2, -0.5, 0.1, 0.7, 0.0, -0.3, 0.4, 0.25,
        -0.8,
    ];
    counting_alloc::assert_evaluations_do_not_allocate("complex linear algebra", &model, &q);
}

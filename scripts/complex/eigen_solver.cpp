// Eigenvalues of real matrices as Stan Math computes them: Eigen's EigenSolver (real Schur
// form), `EigenSolver<MatrixXd> solver(m, false); solver.eigenvalues()`. Reads a count, then
// per matrix its size n and n*n entries in column-major order; prints per matrix the real and
// imaginary parts of each eigenvalue. Used by make_eigen_order_fixture.py (needs Eigen's
// headers, e.g. Debian's libeigen3-dev 3.4.0, the Eigen version Stan Math 5 bundles).
#include <Eigen/Dense>
#include <iomanip>
#include <iostream>

int main() {
  int count;
  std::cin >> count;
  std::cout << std::setprecision(17);
  for (int c = 0; c < count; ++c) {
    int n;
    std::cin >> n;
    Eigen::MatrixXd m(n, n);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) std::cin >> m(i, j);
    Eigen::EigenSolver<Eigen::MatrixXd> solver(m, false);
    Eigen::VectorXcd ev = solver.eigenvalues();
    for (int k = 0; k < n; ++k) std::cout << ev(k).real() << " " << ev(k).imag() << " ";
    std::cout << "\n";
  }
  return 0;
}

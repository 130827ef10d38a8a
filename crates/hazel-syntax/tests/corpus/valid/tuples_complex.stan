functions {
  tuple(real, int) split_num(real x) {
    return (x - floor(x), to_int(floor(x)));
  }
  complex_vector twist(complex_vector v, data array[] int idx) {
    complex_vector[size(idx)] out = v[idx];
    return out * 2i;
  }
  void say_lp(tuple(array[] real, vector) t) {
    print("first: ", t.1, " second: ", t.2);
  }
}
data {
  int N;
  tuple(array[N] real, vector[N]) obs;
  array[2] tuple(int, tuple(real, complex)) nested;
}
transformed data {
  tuple(real, int) parts = split_num(3.75);
  real frac = parts.1;
  int whole;
  complex z = to_complex(1, -2) + 0.5i;
  complex_matrix[2, 2] cm = [[1, 2i], [3.5i, 4]];
  complex_row_vector[2] crv = cm[1];
  real inner = nested[1].2.1;
  (frac, whole) = split_num(2.5);
  parts.2 = 7;
  print(parts, z, get_real(z), get_imag(z), cm', crv);
}
parameters {
  real mu;
}
model {
  say_lp(obs);
  obs.1 ~ normal(mu, 1);
}

data { int N; }
parameters { real mu; }
model { mu ~ normal(0, 1); }
generated quantities {
  int k = N + 1;
  vector[k] draws;
}

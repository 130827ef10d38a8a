parameters { real<lower=0> s; }
transformed parameters {
  array[3] int k = {1, 2, 3};
  vector[k[1]] v;
}
model { }

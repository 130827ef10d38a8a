functions {
  void add_prior_lp(real x) { x ~ normal(0, 1); }
}
parameters { real mu; }
model { add_prior_lp(mu); }
generated quantities { add_prior_lp(mu); }

parameters { real mu; }
transformed parameters { real t = mu; target += 1; }
model { mu ~ normal(0, 1); }

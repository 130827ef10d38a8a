parameters { real mu; }
transformed parameters { real t = mu; }
model { mu ~ normal(0, 1); }
generated quantities { t = 2; }

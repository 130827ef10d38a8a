parameters { real mu; }
model { real<lower=0> s = 1; mu ~ normal(0, s); }
generated quantities { real t; { simplex[3] p; } }

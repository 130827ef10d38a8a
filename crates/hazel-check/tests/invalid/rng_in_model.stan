parameters { real mu; }
model { real z = normal_rng(0, 1); mu ~ normal(z, 1); }
